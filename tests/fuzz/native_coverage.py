"""graph.c and canonical.c built for their fuzz targets: with gcc's edge callbacks
(``-fsanitize-coverage=trace-pc``, caught by ``edges.c``), loaded in place of annex's own
builds, so that each edge the C takes on an input is reported to atheris as a branch.

``install()`` builds and loads them (into ``ANNEX_FUZZ_NATIVE_DIR``, else a temporary folder)
and reserves atheris counters; ``traced()`` wraps each call of the C. Where the instrumented
build fails (no gcc), the targets run on annex's own build, guided by the Python's coverage.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from collectors.lineage import events, graph, native

EDGES = 8192
_SHIM = Path(__file__).with_name("edges.c")
_counters: list[int] = []
_takers: list = []  # each library's annex_edges_take
_buffer = (ctypes.c_uint32 * EDGES)()


def _build(source: Path, folder: Path) -> Path:
    """``source`` linked with the edge recorder, instrumented; cached by both files' hash."""
    digest = hashlib.sha256(source.read_bytes() + _SHIM.read_bytes()).hexdigest()[:16]
    target = folder / f"fuzz-{source.stem}-{digest}.so"
    if target.exists():
        return target
    compiler = os.environ.get("CC") or "gcc"
    traced = ("-fsanitize-coverage=trace-pc",)  # the reader only, not the recorder
    with tempfile.TemporaryDirectory(dir=folder) as staging:
        shim, built = Path(staging) / "edges.o", Path(staging) / target.name
        for command in (
            [compiler, "-O2", "-fPIC", "-c", "-o", str(shim), str(_SHIM)],
            [
                compiler,
                "-O2",
                "-shared",
                "-fPIC",
                *traced,
                "-o",
                str(built),
                str(source),
                str(shim),
            ],
        ):
            subprocess.run(command, check=True, capture_output=True)
        os.replace(built, target)
    return target


def install() -> bool:
    """Load the instrumented builds in place of annex's (before any call of the C); whether
    they could be built."""
    import atheris

    folder = Path(os.environ.get("ANNEX_FUZZ_NATIVE_DIR") or tempfile.gettempdir())
    folder.mkdir(parents=True, exist_ok=True)
    try:
        libraries = {source: ctypes.CDLL(str(_build(source, folder))) for source in _sources()}
    except (OSError, subprocess.CalledProcessError):
        return False
    native._libraries.update(libraries)
    graph._library = None  # graph.py and events.py load them on their next call
    events._respell, events._respell_loaded = None, False
    _counters.extend(atheris._reserve_counter() for _ in range(EDGES))
    for library in libraries.values():
        take = library.annex_edges_take
        take.argtypes, take.restype = [ctypes.c_void_p], ctypes.c_int32
        _takers.append(take)
    return True


def _sources() -> list[Path]:
    return [graph.SOURCE, events._CANONICAL_SOURCE]


@contextlib.contextmanager
def traced() -> Iterator[None]:
    """Report the C's edges taken inside the block to atheris (nothing where not installed)."""
    try:
        yield
    finally:
        if _takers:
            import atheris

            for take in _takers:
                for k in range(take(_buffer)):
                    atheris._trace_branch(_counters[_buffer[k]])
