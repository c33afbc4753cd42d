"""Reading the lineage intake's spool in tests, and writing it as an earlier annex did.

The intake writes one Arrow IPC file per request (``collectors.lineage.intake.SPOOL_TABLE``);
annex versions before it wrote JSON lines (``LEGACY_SPOOL_SCHEMA``), which the collection still
reads. ``to_legacy_jsonl`` turns a file of today's intake into the file an earlier one wrote for
the same request, so tests can check both are read alike.
"""

from __future__ import annotations

import base64
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa

from collectors.lineage.intake import LEGACY_SPOOL_SUFFIX, SPOOL_SUFFIX, utc_naive


def spool_rows(incoming: Path) -> list[dict[str, Any]]:
    """Every row of the intake's Arrow spool files in ``incoming``, in file-name order."""
    rows: list[dict[str, Any]] = []
    for path in sorted(incoming.glob(f"*{SPOOL_SUFFIX}")):
        rows += pa.ipc.open_file(pa.BufferReader(path.read_bytes())).read_all().to_pylist()
    return rows


def spool_time(moment: datetime) -> str:
    """``2026-11-02 08:10:01.123456``: naive UTC, as earlier intakes spelled times (and Arrow's
    JSON reader parses them)."""
    return utc_naive(moment).strftime("%Y-%m-%d %H:%M:%S.%f")


def legacy_line(row: dict[str, Any]) -> dict[str, Any]:
    """A spool row as an earlier intake wrote it on a JSON line (times as text, ``raw`` as
    text or ``raw_b64``, only the fields of its kind)."""
    line = {k: v for k, v in row.items() if v is not None and k != "raw"}
    for key in ("received_at", "event_time"):
        if key in line:
            line[key] = spool_time(line[key])
    if row["kind"] == "rejected" and row.get("raw") is not None:
        try:
            line["raw"] = row["raw"].decode("utf-8")
        except UnicodeDecodeError:
            line["raw_b64"] = base64.b64encode(row["raw"]).decode("ascii")
    return line


def to_legacy_jsonl(path: Path) -> Path:
    """Replace an intake Arrow spool file by the JSON-lines file an earlier intake wrote."""
    table = pa.ipc.open_file(pa.BufferReader(path.read_bytes())).read_all()
    legacy = path.with_suffix(LEGACY_SPOOL_SUFFIX)
    legacy.write_bytes(b"".join(orjson.dumps(legacy_line(r)) + b"\n" for r in table.to_pylist()))
    path.unlink()
    return legacy
