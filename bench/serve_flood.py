"""``annex serve`` under unauthenticated floods (issue 35): latency and success of valid,
authenticated requests with and without the flood, side by side.

The server is the real command (``python -m annex serve``) in a child process with its default
limits. Valid requests POST one gzip OpenLineage event each (a new connection per request, as
a producer without a pool does) from 127.0.0.1; the flood comes from other loopback addresses
(Linux routes all of 127.0.0.0/8 to ``lo`` without setup), so the server sees distinct clients:

* ``idle``: the anchor, the same requests against the idle server;
* ``slowloris, one client``: ``--slow`` connections from 127.0.0.2, each sending its request
  head one byte every ``--interval`` seconds and reconnecting one second after being cut;
* ``slowloris, many clients``: the same spread over ``--clients`` addresses 127.0.1.x (each
  within the per-client share, together beyond the pending pool);
* ``header flood``: ``--header-conns`` connections from distinct addresses each sending
  ``--header-mb`` MB of 63 KiB header fields, never ending the head; the server's peak
  resident memory (VmHWM) is read from /proc.

Before issue 35 the server (one thread per connection, 512 at most, a 30 s timeout per read)
answered 0 of 298 valid requests under 520 slow connections. ``python -m bench.serve_flood``
prints a table and appends it to bench/RESULTS.md (``--no-record``: don't).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import http.client
import json
import os
import platform
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "RESULTS.md"
TOKEN = "serve-flood-bench-token-0123456789"
VALID_SOURCE = "127.0.0.1"


# --- the server ------------------------------------------------------------------------------


@contextlib.contextmanager
def annex_serve(folder: Path, serve: dict[str, object] | None = None) -> Iterator[ServeChild]:
    """``annex serve`` in a child process on a free loopback port; ``serve`` adds [serve] keys."""
    extra = "".join(f"{key} = {json.dumps(value)}\n" for key, value in (serve or {}).items())
    config = folder / "annex.toml"
    config.write_text(
        f'[serve]\nhost = "127.0.0.1"\nport = 0\n{extra}\n'
        f'[lineage]\nspool_dir = "{folder / "lineage"}"\nintake_workers = 0\n'
        f'[attestation]\nspool_dir = "{folder / "attestations"}"\n',
        encoding="utf-8",
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "annex", "--config", str(config), "serve", "--port", "0", "--quiet"],
        cwd=REPO,
        env={**os.environ, "ANNEX_INTAKE_TOKEN": TOKEN},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        if not first.startswith("annex intake serving "):
            raise SystemExit(f"annex serve did not start: {first!r}")
        host, port = first.split()[-1].rsplit("//", 1)[1].rsplit(":", 1)
        yield ServeChild(process, host, int(port))
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class ServeChild:
    process: subprocess.Popen[str]
    host: str
    port: int

    def memory(self) -> dict[str, int]:
        """VmRSS and VmHWM (peak) in KiB, from /proc."""
        found = {}
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0])
        return found


# --- valid requests --------------------------------------------------------------------------


def event_body(index: int) -> bytes:
    """A small valid RunEvent (gzip), distinct per index."""
    event = {
        "eventTime": "2026-11-02T08:00:00.000Z",
        "producer": "https://github.com/OpenLineage/OpenLineage/tree/1.26.0/integration/spark",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "eventType": "COMPLETE",
        "run": {"runId": f"0193a1f2-6c2e-7d41-9a57-{index:012x}"},
        "job": {"namespace": "bench", "name": f"job_{index}"},
        "inputs": [],
        "outputs": [],
    }
    return gzip.compress(json.dumps(event).encode(), mtime=0)


def valid_request(host: str, port: int, index: int, timeout: float) -> tuple[bool, float]:
    """POST one event on a new connection; (answered 200, seconds)."""
    body = event_body(index)
    started = time.perf_counter()
    try:
        connection = http.client.HTTPConnection(
            host, port, timeout=timeout, source_address=(VALID_SOURCE, 0)
        )
        connection.request(
            "POST",
            "/api/v1/lineage",
            body=body,
            headers={
                "Authorization": f"Bearer {TOKEN}",
                "Content-Type": "application/json",
                "Content-Encoding": "gzip",
            },
        )
        response = connection.getresponse()
        response.read()
        connection.close()
        ok = response.status == 200
    except (OSError, http.client.HTTPException):
        ok = False
    return ok, time.perf_counter() - started


@dataclass
class Outcome:
    succeeded: int
    attempted: int
    latencies: list[float]

    def row(self, label: str) -> str:
        lat = sorted(self.latencies) or [0.0]
        p95 = lat[min(len(lat) - 1, int(0.95 * len(lat)))]
        return (
            f"| {label} | {self.succeeded}/{self.attempted} | {statistics.median(lat) * 1000:.1f} "
            f"| {p95 * 1000:.1f} | {max(lat) * 1000:.1f} |"
        )


def run_valid(
    host: str, port: int, count: int, workers: int, timeout: float, seconds: float = 0.0
) -> Outcome:
    """``count`` requests, the i-th started at ``i * seconds / count`` (as soon as a worker is
    free), so that a phase spans the flood's deadlines and reconnections."""
    started = time.monotonic()

    def one(index: int) -> tuple[bool, float]:
        time.sleep(max(0.0, started + index * seconds / count - time.monotonic()))
        return valid_request(host, port, index, timeout)

    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(one, range(count)))
    return Outcome(sum(ok for ok, _ in results), count, [s for ok, s in results if ok])


# --- the slowloris flood ---------------------------------------------------------------------


class SlowFlood:
    """``count`` connections from ``sources`` (round robin) that each send a request head one
    byte every ``interval`` seconds and never finish it; a connection the server cuts (closes,
    or answers) is reopened ``reconnect`` seconds later. One thread, non-blocking sockets."""

    HEAD = b"POST /api/v1/lineage HTTP/1.1\r\nHost: annex\r\nX-Slow: "

    def __init__(
        self,
        host: str,
        port: int,
        count: int,
        sources: list[str],
        interval: float,
        reconnect: float = 1.0,
    ) -> None:
        self.address = (host, port)
        self.sources = [sources[i % len(sources)] for i in range(count)]
        self.interval = interval
        self.reconnect = reconnect
        self.selector = selectors.DefaultSelector()
        self.socks: list[socket.socket | None] = [None] * count
        self.due = [0.0] * count
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, name="slow-flood", daemon=True)
        self.opened = self.cut = 0
        self.open_now = 0
        self.open_samples: list[int] = []

    def __enter__(self) -> SlowFlood:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_event.set()
        self.thread.join()
        for index in range(len(self.socks)):
            self._close(index)
        self.selector.close()

    def wait_open(self, at_least: int, timeout: float) -> None:
        """Until ``at_least`` connections have been opened (or ``timeout``)."""
        until = time.monotonic() + timeout
        while self.opened < at_least and time.monotonic() < until:
            time.sleep(0.05)

    def _open(self, index: int, now: float) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind((self.sources[index], 0))
            sock.settimeout(2)
            sock.connect(self.address)
            sock.setblocking(False)
            sock.send(self.HEAD)
        except OSError:
            sock.close()
            self.due[index] = now + self.reconnect
            return
        self.socks[index] = sock
        self.selector.register(sock, selectors.EVENT_READ, index)
        self.opened += 1
        self.due[index] = now + self.interval

    def _close(self, index: int) -> None:
        sock = self.socks[index]
        if sock is not None:
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(sock)
            sock.close()
            self.socks[index] = None

    def _run(self) -> None:
        while not self.stop_event.is_set():
            now = time.monotonic()
            for index, sock in enumerate(self.socks):
                if self.due[index] > now:
                    continue
                if sock is None:
                    self._open(index, now)
                    continue
                try:
                    sock.send(b"a")
                    self.due[index] = now + self.interval
                except OSError:
                    self._cut(index, now)
            for key, _ in self.selector.select(timeout=0.1):
                index = key.data
                try:
                    key.fileobj.recv(65536)  # type: ignore[union-attr]
                except BlockingIOError:
                    continue
                except OSError:
                    pass
                self._cut(index, time.monotonic())  # closed or answered (408): reconnect
            self.open_now = sum(s is not None for s in self.socks)
            self.open_samples.append(self.open_now)

    def _cut(self, index: int, now: float) -> None:
        self._close(index)
        self.cut += 1
        self.due[index] = now + self.reconnect


def many_sources(count: int) -> list[str]:
    return [f"127.0.1.{i + 1}" for i in range(count)]


# --- the header flood ------------------------------------------------------------------------


def header_flood(
    host: str, port: int, connections: int, megabytes: int, until: threading.Event
) -> int:
    """Rounds of ``connections`` clients (127.0.2.x, 127.0.3.x...) each sending a
    ``megabytes`` MB header at once, until ``until`` is set; how many rounds."""
    pad = header_lines(megabytes << 20)
    rounds = 0
    while not until.is_set():
        header_round(host, port, connections, pad)
        rounds += 1
    return rounds


def header_lines(size: int, line: int = 63 << 10) -> bytes:
    """About ``size`` bytes of header fields of ``line`` bytes each, with no empty line
    ending the head: 97 fields of 63 KiB for 6 MiB, each under ``http.server``'s 64 KiB line
    limit and together under its 100 fields, so a lenient server keeps holding them all."""
    one = b"X-Pad-%06d: " + b"a" * (line - 17) + b"\r\n"
    return b"".join(one % index for index in range(size // line))


def header_round(host: str, port: int, connections: int, pad: bytes) -> None:

    def one(index: int) -> None:
        source = f"127.0.{2 + index // 250}.{1 + index % 250}"
        with (
            contextlib.suppress(OSError),
            socket.create_connection((host, port), timeout=20, source_address=(source, 0)) as sock,
        ):
            sock.sendall(b"POST /api/v1/lineage HTTP/1.1\r\nHost: annex\r\n" + pad)
            sock.recv(4096)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


# --- main ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.serve_flood", description=__doc__)
    parser.add_argument("--slow", type=int, default=520, help="slow connections")
    parser.add_argument(
        "--clients", type=int, default=65, help="addresses for the many-client flood"
    )
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between slow bytes")
    parser.add_argument("--requests", type=int, default=300, help="valid requests per phase")
    parser.add_argument("--workers", type=int, default=4, help="concurrent valid requests")
    parser.add_argument("--timeout", type=float, default=10.0, help="a valid request's timeout")
    parser.add_argument(
        "--seconds",
        type=float,
        default=20.0,
        help="each phase's valid requests are spread over this long (beyond the 10 s head "
        "deadline, so slow connections are cut and reconnect during it)",
    )
    parser.add_argument("--header-conns", type=int, default=150)
    parser.add_argument("--header-mb", type=int, default=6)
    parser.add_argument("--no-record", action="store_true", help="don't append to RESULTS.md")
    args = parser.parse_args(argv)

    rows = []
    notes = []
    started = time.perf_counter()
    with (
        tempfile.TemporaryDirectory(prefix="annex-serve-flood-") as tmp,
        annex_serve(Path(tmp)) as server,
    ):
        host, port = server.host, server.port
        run_valid(host, port, 20, args.workers, args.timeout)  # warm-up, not counted
        idle = run_valid(host, port, args.requests, args.workers, args.timeout, args.seconds)
        rows.append(idle.row("idle server (anchor)"))
        print(rows[-1], file=sys.stderr)
        phases = (
            ("slowloris, one client (127.0.0.2)", ["127.0.0.2"]),
            (f"slowloris, {args.clients} clients (127.0.1.x)", many_sources(args.clients)),
        )
        for label, sources in phases:
            with SlowFlood(host, port, args.slow, sources, args.interval) as flood:
                flood.wait_open(args.slow if len(sources) > 1 else 1, timeout=20)
                time.sleep(1.0)
                outcome = run_valid(
                    host, port, args.requests, args.workers, args.timeout, args.seconds
                )
                held = statistics.median(flood.open_samples[-100:] or [0])
                opened, cut = flood.opened, flood.cut
            rows.append(outcome.row(f"{label}: {args.slow} slow connections"))
            notes.append(
                f"{label}: {opened:,} slow connections opened, {cut:,} cut by the server "
                f"(refused at accept, evicted or past the head deadline); {held:.0f} held open "
                "(median over the phase's last 10 s)"
            )
            print(rows[-1], "\n  ", notes[-1], file=sys.stderr)
        before = server.memory()
        done = threading.Event()
        rounds: list[int] = []
        flood_thread = threading.Thread(
            target=lambda: rounds.append(
                header_flood(host, port, args.header_conns, args.header_mb, done)
            )
        )
        flood_thread.start()
        during = run_valid(host, port, args.requests, args.workers, args.timeout, args.seconds)
        done.set()
        flood_thread.join()
        after = server.memory()
        rows.append(
            during.row(f"header flood: rounds of {args.header_conns} x {args.header_mb} MB headers")
        )
        growth = (after["VmHWM"] - before["VmRSS"]) / 1024
        offered = rounds[0] * args.header_conns * args.header_mb
        notes.append(
            f"header flood: {rounds[0]} rounds of {args.header_conns} concurrent connections "
            f"({offered:,} MB offered); server resident memory {before['VmRSS'] / 1024:.0f} MiB "
            f"before, peak {after['VmHWM'] / 1024:.0f} MiB (growth {growth:.0f} MiB)"
        )
        print(rows[-1], "\n  ", notes[-1], file=sys.stderr)
    elapsed = time.perf_counter() - started

    cores = len(os.sched_getaffinity(0))
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    text = "\n".join(
        [
            f"## serve_flood: valid requests beside {args.slow} slow connections and "
            f"{args.header_conns} x {args.header_mb} MB headers ({when})",
            "",
            f"Machine: {platform.processor() or platform.machine()}, {cores} cores, Python "
            f"{platform.python_version()}; load average {os.getloadavg()[0]:.1f} at the end. "
            "`annex serve` with its default [serve] limits in a child process "
            "(lineage.intake_workers = 0: events are validated in the request's thread); "
            "each valid request is "
            f"a new connection from 127.0.0.1 POSTing one gzip event, {args.requests} per phase "
            f"spread over {args.seconds:g} s ({args.workers} at most at once, {args.timeout:g} s "
            "timeout); slow connections send a head byte every "
            f"{args.interval:g} s and reconnect 1 s after being cut. Run took {elapsed:.0f} s "
            "(`python -m bench.serve_flood`).",
            "",
            "| phase | valid requests answered 200 | p50 ms | p95 ms | max ms |",
            "|---|---:|---:|---:|---:|",
            *rows,
            "",
            *(f"- {note}" for note in notes),
            "",
            "Before issue 35: 0 of 298 valid requests answered under 520 slow connections "
            "(one thread per connection, 512 at most, 30 s per read, no head deadline).",
            "",
        ]
    )
    print(text)
    if not args.no_record:
        with RESULTS.open("a", encoding="utf-8") as out:
            out.write("\n" + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
