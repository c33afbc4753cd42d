"""annex's lineage code in C: built on first use, loaded through ctypes.

Two hot loops over JSON text are C: the collector's graph reader (``graph.c``) and the intake's
canonical number spellings (``canonical.c``). Each is built with the system's C compiler
(``CC``, else ``cc``) into ``ANNEX_NATIVE_DIR`` or else the user's cache folder, once per source
version (the file name holds a hash of the source), atomically, so concurrent processes may
race to build it; the container image builds both at image build time (deploy/Dockerfile).
ctypes releases the GIL around each call.

Where a library cannot be built or loaded (no compiler, no writable folder), ``library`` raises
``NativeCodeUnavailable`` with the fix in its message, and each caller takes its Python or SQL
path instead: the same results, slower.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path


class NativeCodeUnavailable(RuntimeError):
    """A C part of annex cannot be built or loaded here (no C compiler, no writable folder)."""


_libraries: dict[Path, ctypes.CDLL] = {}
_libraries_lock = threading.Lock()


def native_folder() -> Path:
    """Where the built libraries are kept: ``ANNEX_NATIVE_DIR``, else the user's cache folder."""
    if os.environ.get("ANNEX_NATIVE_DIR"):
        return Path(os.environ["ANNEX_NATIVE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "annex"


def build(source: Path, target: Path, part: str) -> None:
    """Compile ``source`` into the shared library ``target``; ``part`` names it in errors."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise NativeCodeUnavailable(
            f"no C compiler to build {part}: install one (apt-get install gcc) or set CC; "
            "until then annex takes its slower path"
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = tempfile.TemporaryDirectory(dir=target.parent)
    except OSError as exc:
        raise NativeCodeUnavailable(
            f"cannot build {part} in {target.parent} ({exc}): set ANNEX_NATIVE_DIR to a "
            "writable folder"
        ) from exc
    with staging as folder:
        built = Path(folder) / target.name
        command = [compiler, "-O2", "-shared", "-fPIC", "-o", str(built), str(source)]
        try:
            result = subprocess.run(command, capture_output=True, text=True, check=False)
        except OSError as exc:
            raise NativeCodeUnavailable(
                f"building {part} failed ({' '.join(command)}): {exc}"
            ) from exc
        if result.returncode != 0:
            raise NativeCodeUnavailable(
                f"building {part} failed ({' '.join(command)}): {result.stderr.strip()[:500]}"
            )
        os.replace(built, target)  # atomic: a concurrent build writes the same file


def library(source: Path, part: str) -> ctypes.CDLL:
    """The loaded library of the C file ``source`` (built first if this version is not built
    yet); one load per process. ``part`` names it in errors ("annex's lineage graph reader")."""
    with _libraries_lock:
        loaded = _libraries.get(source)
        if loaded is None:
            text = source.read_bytes()
            digest = hashlib.sha256(text).hexdigest()[:16]
            target = native_folder() / f"lineage-{source.stem}-{digest}.so"
            if not target.exists():
                build(source, target, part)
            try:
                loaded = _libraries[source] = ctypes.CDLL(str(target))
            except OSError as exc:
                raise NativeCodeUnavailable(f"cannot load {target}: {exc}") from exc
        return loaded
