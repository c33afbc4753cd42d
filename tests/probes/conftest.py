"""The probe tests run the real Triton kernels: on a GPU when there is one, else interpreted.

``TRITON_INTERPRET=1`` only affects kernels defined after it is set (reference §6, caveat 1),
so it is decided here, before any test module imports ``probes.gpubench.kernels``. Proton
cannot start without a GPU driver (§1.2): ``TRITON_PROTON_DISABLE=1`` goes with it.
(``kernels`` makes the same decision itself on import; this keeps the order explicit.)
"""

from __future__ import annotations

import os

import pytest


def _gpu_present() -> bool:
    if os.environ.get("TRITON_INTERPRET") == "1":
        return False
    import torch

    return bool(torch.cuda.is_available())


HAS_GPU = _gpu_present()
if not HAS_GPU:
    os.environ["TRITON_INTERPRET"] = "1"
    os.environ["TRITON_PROTON_DISABLE"] = "1"


@pytest.fixture(scope="session")
def device() -> str:
    """Where test tensors live: "cuda" on a GPU machine, "cpu" for the interpreter."""
    return "cuda" if HAS_GPU else "cpu"
