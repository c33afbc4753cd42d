"""``python -m probes.gpubench``: run the probe suite, print one JSON record per measurement.

    python -m probes.gpubench [--size small|full] [--benchmarks gemm,copy,...] [--output -]
                              [--gpus all|0,1] [--proton PATH [--proton-hook]]

On a GPU the suite runs at full size on every visible GPU, one after the other (the probe pod
holds all of its node's GPUs); without one, Triton's interpreter runs it at small size (test
records, ``backend: "interpreter"``). Records go to stdout (or ``--output``), one JSON object
per line; progress, skips and failures go to stderr. When writing records to stdout, anything
else that would reach file descriptor 1 (a library's print, a native message) is sent to
stderr instead, so stdout stays parseable.

Exit status: 0 when every measured kernel matched its torch reference, 1 when any did not (its
record says ``correct: false``), 2 for a usage error (unknown benchmark, full size under the
interpreter, Proton without a GPU, no GPU selected).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, TextIO

from probes.gpubench.device import use_interpreter_if_no_gpu

EXIT_OK, EXIT_INCORRECT, EXIT_USAGE = 0, 1, 2


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m probes.gpubench",
        description="Triton GPU benchmark probes: one JSON record per measurement on stdout.",
    )
    p.add_argument(
        "--size",
        choices=("small", "full"),
        help="problem sizes (default: full on a GPU, small under the interpreter)",
    )
    p.add_argument(
        "--benchmarks",
        default="",
        help="comma list of gemm, copy, triad, softmax, layernorm, or name:dtype "
        "(e.g. gemm:fp8); default: the whole suite",
    )
    p.add_argument("--output", default="-", help="file for the records ('-': stdout)")
    p.add_argument("--gpus", default="all", help="'all' or comma list of GPU indices")
    p.add_argument(
        "--proton",
        metavar="PATH",
        help="profile with Proton (GPU only) and write PATH.hatchet",
    )
    p.add_argument(
        "--proton-hook",
        action="store_true",
        help="with --proton: attribute FLOPs/bytes per kernel launch (launch_metadata) "
        "instead of per scope",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    return p


def write_record(out: TextIO, record: dict[str, Any]) -> None:
    """One record, one line, flushed: a pod killed at its deadline keeps what it printed."""
    out.write(json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n")
    out.flush()


def main(argv: list[str] | None = None, *, out: TextIO | None = None) -> int:
    args = parser().parse_args(argv)

    def fail(message: str) -> int:
        print(f"gpubench: {message}", file=sys.stderr)
        return EXIT_USAGE

    interpreter = use_interpreter_if_no_gpu()  # before the kernels are imported
    size = args.size or ("small" if interpreter else "full")
    if interpreter and size == "full":
        return fail(
            "no GPU: the interpreter runs the small size only (full size would take hours); "
            "drop --size full or run on a GPU node"
        )
    if args.proton and interpreter:
        return fail("--proton needs a GPU driver (Proton cannot profile the interpreter)")

    from probes.gpubench import device as device_info
    from probes.gpubench import harness

    selection = [item for item in args.benchmarks.split(",") if item.strip()]
    try:
        entries = harness.suite(size, selection)
        devices = device_info.devices(args.gpus)
    except ValueError as error:
        return fail(str(error))
    if not devices:
        return fail("no GPU selected (--gpus)")

    placement = device_info.placement()
    versions = device_info.versions()
    records: list[dict[str, Any]] = []
    stream = out
    opened = None
    if stream is None and args.output == "-":
        stream = sys.stdout
    elif stream is None:
        try:
            stream = opened = open(args.output, "w")  # noqa: SIM115 (closed below)
        except OSError as error:
            return fail(f"cannot write the records to {args.output}: {error}")
    proton_mode = None
    if args.proton:
        import triton.profiler as proton

        name = args.proton.removesuffix(".hatchet")  # Proton appends the suffix itself
        proton.start(name, hook="triton" if args.proton_hook else None)
        proton_mode = harness.ProtonMode(scope_metrics=not args.proton_hook)

    try:
        for device in devices:
            harness.log_stderr(
                f"{device.model} ({device.uuid}, {device.backend}), size {size}, "
                f"{len(entries)} benchmark(s)"
            )
            records += harness.run_suite(
                entries,
                device,
                placement=placement,
                versions=versions,
                emit=lambda record: write_record(stream, record),
                proton=proton_mode,
                seed=args.seed,
            )
    finally:
        if args.proton:
            proton.finalize()
            harness.log_stderr(f"Proton profile written to {name}.hatchet")
        if opened is not None:
            opened.close()

    failed = [r for r in records if not r["correct"]]
    harness.log_stderr(
        f"{len(records)} record(s), {len(failed)} incorrect"
        + (": " + ", ".join(f"{r['kernel']} {r['dtype']}" for r in failed) if failed else "")
    )
    return EXIT_INCORRECT if failed else EXIT_OK


def _records_to_stdout_only() -> TextIO:
    """A stream on the real stdout for the records; fd 1 itself then points at stderr."""
    sys.stdout.flush()
    records_fd = os.dup(1)
    os.dup2(2, 1)
    return os.fdopen(records_fd, "w", buffering=1)


def cli(argv: list[str] | None = None) -> int:
    """The command line: records on the real stdout, everything else on stderr."""
    argv = sys.argv[1:] if argv is None else argv
    known, _ = parser().parse_known_args(argv)
    return main(argv, out=_records_to_stdout_only() if known.output == "-" else None)


if __name__ == "__main__":
    sys.exit(cli())
