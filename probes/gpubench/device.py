"""Which device the probe runs on, and where (node, pod) it runs.

Two facts decide how the suite runs:

- whether a GPU is there (``torch.cuda.is_available()``, true on CUDA and ROCm builds). Without
  one, Triton must run its interpreter, and ``TRITON_INTERPRET=1`` only takes effect for
  kernels defined *after* it is set (reference §6, caveat 1), so ``use_interpreter_if_no_gpu``
  runs before ``kernels`` is imported. Proton cannot start without a GPU driver and a failed
  start leaves scopes broken (§1.2), so ``TRITON_PROTON_DISABLE=1`` goes with it;
- which GPU it is: model, UUID (the key that joins a record to DCGM's ``UUID`` label and to
  the inventory), memory, compute capability, driver version.

The placement (node, pod, namespace, job) comes from the downward API environment variables
that ``manifest.py`` sets; the cluster name from ``ANNEX_CLUSTER``. Off Kubernetes they are
missing and the records carry nulls.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

INTERPRETER_UUID = "CPU-interpreter"
"""``gpu_uuid`` of records measured under Triton's interpreter (test-only records)."""


@dataclass(frozen=True)
class Device:
    """One device the suite runs on: a GPU, or the CPU under Triton's interpreter."""

    backend: str
    """"cuda", "hip" or "interpreter" (the record's ``backend``)."""
    index: int
    """The device's index as this process sees it (``cuda:<index>``); 0 for the interpreter.
    Inside a pod this is the index among the GPUs the device plugin gave the container, not
    necessarily the host's: records join to telemetry on ``uuid``, never on the index."""
    uuid: str
    """"GPU-<8-4-4-4-12 hex>" as nvidia-smi and DCGM spell it; ``INTERPRETER_UUID`` on CPU."""
    model: str
    memory_mib: int | None
    capability: tuple[int, int] | None
    """CUDA compute capability (major, minor); None for the interpreter."""
    driver_version: str | None
    torch_device: str
    """Where tensors go: "cuda:<index>" or "cpu"."""

    @property
    def interpreter(self) -> bool:
        return self.backend == "interpreter"


@dataclass(frozen=True)
class Placement:
    """Where the probe pod runs, from the downward API (None off Kubernetes)."""

    cluster: str | None
    namespace: str | None
    job: str | None
    pod: str | None
    node: str | None
    completion_index: int | None


def gpu_present() -> bool:
    """Whether torch sees a GPU (CUDA or ROCm). Imports torch (~2 s), never triton kernels."""
    import torch

    return bool(torch.cuda.is_available())


def interpreting(env: Mapping[str, str] | None = None) -> bool:
    """Whether Triton runs kernels in its interpreter (``TRITON_INTERPRET=1``)."""
    return (os.environ if env is None else env).get("TRITON_INTERPRET", "0") == "1"


def use_interpreter_if_no_gpu() -> bool:
    """Switch Triton to its interpreter when there is no GPU; returns whether it interprets.

    Must run before ``probes.gpubench.kernels`` (or any other ``@triton.jit`` module) is
    imported: a kernel defined before the switch stays compiled-mode and fails with
    "0 active drivers". ``TRITON_INTERPRET=1`` set by the caller is kept even on a GPU machine.
    """
    if not interpreting() and not gpu_present():
        os.environ["TRITON_INTERPRET"] = "1"
    if interpreting():
        # Proton needs a GPU driver; disabled, its start() returns None and scopes are no-ops.
        os.environ["TRITON_PROTON_DISABLE"] = "1"
        return True
    return False


def placement(env: Mapping[str, str] | None = None) -> Placement:
    """The pod's placement from the downward API variables the probe manifest sets."""
    env = os.environ if env is None else env

    def text(name: str) -> str | None:
        value = env.get(name, "").strip()
        return value or None

    index = text("JOB_COMPLETION_INDEX")
    return Placement(
        cluster=text("ANNEX_CLUSTER"),
        namespace=text("POD_NAMESPACE"),
        job=text("JOB_NAME"),
        pod=text("POD_NAME"),
        node=text("NODE_NAME"),
        completion_index=int(index) if index is not None and index.isdigit() else None,
    )


def versions() -> tuple[str, str]:
    """``(triton_version, torch_version)``."""
    import torch
    import triton

    return str(triton.__version__), str(torch.__version__)


def devices(selection: str = "all") -> list[Device]:
    """The devices to run on: every visible GPU ("all") or a comma list of indices ("0,2").

    Under the interpreter the one CPU "device". Raises ``ValueError`` for an index that is not
    there, naming what is.
    """
    if interpreting():
        return [interpreter_device()]
    import torch

    count = torch.cuda.device_count()
    if selection.strip() == "all":
        wanted = list(range(count))
    else:
        try:
            wanted = [int(part) for part in selection.split(",") if part.strip()]
        except ValueError:
            raise ValueError(f"--gpus {selection!r}: expected 'all' or indices like 0,1") from None
        missing = [i for i in wanted if not 0 <= i < count]
        if missing:
            raise ValueError(f"--gpus {selection!r}: no GPU {missing}; this process sees {count}")
    return [gpu_device(i) for i in wanted]


def gpu_device(index: int) -> Device:
    """Describe GPU ``index`` (torch's numbering) without running anything on it."""
    import torch

    props = torch.cuda.get_device_properties(index)
    hip = getattr(torch.version, "hip", None) is not None
    return Device(
        backend="hip" if hip else "cuda",
        index=index,
        uuid=format_uuid(getattr(props, "uuid", None)),
        model=str(props.name),
        memory_mib=int(props.total_memory) // 2**20,
        capability=(int(props.major), int(props.minor)),
        driver_version=driver_version(index),
        torch_device=f"cuda:{index}",
    )


def interpreter_device() -> Device:
    """The CPU as the interpreter's "device": a test-only record source, never a GPU."""
    return Device(
        backend="interpreter",
        index=0,
        uuid=INTERPRETER_UUID,
        model=f"Triton interpreter on {cpu_model()}",
        memory_mib=None,
        capability=None,
        driver_version=None,
        torch_device="cpu",
    )


def format_uuid(raw: object) -> str:
    """torch's ``_CUuuid`` prints the bare 8-4-4-4-12 hex; DCGM and nvidia-smi prefix "GPU-"."""
    if raw is None:
        return "GPU-unknown"
    text = str(raw).strip()
    if text.upper().startswith(("GPU-", "MIG-")):
        return text
    return f"GPU-{text}"


def driver_version(index: int = 0) -> str | None:
    """The kernel driver's version ("550.54.15"): NVML when pynvml is installed, else procfs.

    torch only knows the CUDA driver API version (12040), which does not identify the driver
    build DCGM reports; None when neither source answers (ROCm, a container without procfs).
    """
    try:
        import pynvml  # type: ignore[import-not-found]

        pynvml.nvmlInit()
        try:
            version = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
        return version.decode() if isinstance(version, bytes) else str(version)
    except Exception:  # not installed, no NVML library, or NVML refused: try procfs
        pass
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        return None
    return parse_nvrm_version(text)


def parse_nvrm_version(text: str) -> str | None:
    """The version from ``/proc/driver/nvidia/version``'s first line.

    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 ..." -> "550.54.15";
    open kernel modules say "NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release ...".
    """
    first = text.splitlines()[0] if text else ""
    for token in first.split():
        parts = token.split(".")
        if len(parts) >= 2 and all(part.isdigit() for part in parts):
            return token
    return None


def cpu_model() -> str:
    """The CPU's model name (what the interpreter's records name as their device)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"
