"""Read the submissions waiting to be verified: the intake's spool and the watched folders.

Two places hold them:

* ``<spool_dir>/incoming/*.json``: written by the intake (``intake.py``), each the body wrapped
  with its arrival time and peer. ``received_at`` is the wrapper's.
* every ``attestation.watch_dirs`` folder, recursively: bare submission files a DaemonSet wrote
  to a shared volume (the agent's fallback when it cannot reach the intake). ``received_at`` is
  the file's modification time, capped at now (a node's clock may run ahead). Whoever wrote
  the file set that time, so it never decides which of two nodes presented a token first
  (replays: ``verify.py``, ``warehouse/models/attestation_merge.sql``). A file modified
  in the last ``SETTLE_SECONDS`` is left for the next collection: it may still be being written
  by an agent that does not write atomically.

A file in ``incoming/`` that is not a wrapper but still JSON is read as a bare submission (an
operator pointed an agent at the spool): nothing that arrives is dropped.

Files are read one at a time, in name order (the intake's names sort by arrival), never more
than the limit: a file larger than ``attestation.max_submission_bytes`` (a wrapper: twice that,
for JSON escaping) is not read whole but becomes a ``too_large`` rejection with its first
``RAW_CAP_BYTES``. A file that cannot be opened (permissions, a symbolic link: links are never
followed, so a planted link cannot pull another file into the warehouse) is an ``unreadable``
rejection and stays where it is, to be tried again once fixed; a file that vanished meanwhile
(another collection archived it) is skipped. Nothing here raises for a file's content.

Each ``SpooledFile`` names where the file goes once its collection has committed
(``<spool_dir>/archive/<received day>/<name>``); ``archive_files`` moves it there. The
submission carries that place as ``archive_uri`` before it is verified, so the rows point at
where the exact tokens will be kept.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from annex.settings import AttestationSettings
from collectors import spool
from collectors.attestation.intake import ARCHIVE, INCOMING, SPOOL_SUFFIX, spool_name
from collectors.attestation.verify import Submission
from collectors.spool import compact_time

log = logging.getLogger(__name__)

SETTLE_SECONDS = 5.0
"""A watched file modified more recently than this is read by the next collection."""
RAW_CAP_BYTES = 64 * 1024
"""A rejected file keeps at most this many of its first bytes."""
WRAPPER_OVERHEAD_BYTES = 64 * 1024


@dataclass(frozen=True)
class SpooledFile:
    """One file read: a submission to verify, or the rejection row of a file that is none."""

    path: Path
    archive_path: Path
    """Where the file goes after its collection commits."""
    submission: Submission | None
    rejection: dict[str, Any] | None = None
    """A ``schema.REJECTED`` row, when ``submission`` is None."""
    keep: bool = False
    """Leave the file in place after the commit (a read error that may go away)."""


def read_spool(
    settings: AttestationSettings,
    *,
    now: datetime | None = None,
    max_files: int | None = None,
) -> Iterator[SpooledFile]:
    """Every waiting file, ``incoming/`` first then the watched folders, each in name order.

    ``now`` (naive UTC, default the clock) caps modification times and decides which watched
    files have settled; ``max_files`` stops after that many (the rest wait for the next call).
    """
    now = now or datetime.now(UTC).replace(tzinfo=None)
    count = 0
    for path, kind in waiting_files(settings):
        if max_files is not None and count >= max_files:
            return
        spooled = _read_one(settings, path, kind, now)
        if spooled is not None:
            count += 1
            yield spooled


def read_submissions(
    settings: AttestationSettings, *, now: datetime | None = None
) -> Iterator[Submission]:
    """The submissions of ``read_spool`` (files that are none are left out: see ``read_spool``)."""
    for spooled in read_spool(settings, now=now):
        if spooled.submission is not None:
            yield spooled.submission


def waiting_files(settings: AttestationSettings) -> Iterator[tuple[Path, str]]:
    """``(path, 'intake' | 'file')`` of every candidate file (``*.json``), without opening
    any."""
    return spool.waiting_files(
        settings.spool_dir / INCOMING, SPOOL_SUFFIX, settings.watch_dirs, (SPOOL_SUFFIX,)
    )


def count_waiting(settings: AttestationSettings) -> int:
    """How many files wait (a directory listing only: the sensor's cheap check)."""
    return sum(1 for _ in waiting_files(settings))


# --- one file ---------------------------------------------------------------------------------


def _read_one(
    settings: AttestationSettings, path: Path, kind: str, now: datetime
) -> SpooledFile | None:
    limit = settings.max_submission_bytes
    if kind == "intake":
        limit = 2 * limit + WRAPPER_OVERHEAD_BYTES
    try:
        data, mtime, size = _read_capped(path, limit)
    except FileNotFoundError:
        log.debug("%s vanished before it was read", path)
        return None
    except spool.UnreadableFile as exc:
        return _rejected(settings, path, now, "unreadable", str(exc), None, keep=exc.keep)
    received = min(mtime, now)
    if kind == "file" and 0 <= (now - mtime).total_seconds() < SETTLE_SECONDS:
        log.debug("%s changed in the last %s s: left for the next collection", path, SETTLE_SECONDS)
        return None
    if size > limit:
        rule = "attestation.max_submission_bytes"
        if kind == "intake":
            rule += " x 2 + 64 KiB for the intake's wrapper"
        message = f"{path} holds {size:,} bytes, more than the limit of {limit:,} ({rule})"
        return _rejected(settings, path, received, "too_large", message, data)
    if kind == "intake":
        unwrapped = _unwrap(data)
        if isinstance(unwrapped, str):
            if not _is_json_object(data):
                return _rejected(settings, path, received, "malformed", unwrapped, data)
            log.info("%s is a bare submission in the intake's folder: read as a file", path)
            kind = "file"
        else:
            data, wrapped_at = unwrapped
            received = wrapped_at or received
    submission_id = _sha256(data)
    if kind == "intake":
        archive = _archive_dir(settings, received) / path.name
    else:
        archive = _archive_dir(settings, received) / spool_name(received, submission_id)
    submission = Submission(
        submission_id=submission_id,
        source_locator=str(path),
        source_kind=kind,
        received_at=received,
        body=data,
        archive_uri=archive.absolute().as_uri(),
    )
    return SpooledFile(path=path, archive_path=archive, submission=submission)


def _read_capped(path: Path, limit: int) -> tuple[bytes, datetime, int]:
    """(at most ``limit`` + 1 bytes, mtime naive UTC, size); FileNotFoundError if gone."""
    with spool.open_waiting_file(
        path, link_advice="the agent must write the file itself"
    ) as handle:
        info = os.fstat(handle.fileno())
        mtime = datetime.fromtimestamp(info.st_mtime, UTC).replace(tzinfo=None)
        try:
            if info.st_size > limit:
                return handle.read(RAW_CAP_BYTES), mtime, info.st_size
            data = handle.read(limit + 1)
        except OSError as exc:
            raise spool.UnreadableFile(
                f"{path} cannot be read ({exc.strerror or exc})", keep=True
            ) from None
    return data, mtime, len(data)


def _unwrap(data: bytes) -> tuple[bytes, datetime | None] | str:
    """(the submission's exact bytes, the wrapper's received_at) or why it is no wrapper."""
    try:
        wrapper = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return f"the spool file is not JSON ({str(exc).split(':', 1)[0]})"
    if not isinstance(wrapper, dict) or not isinstance(wrapper.get("submission"), str):
        return "the spool file is not an intake wrapper (no 'submission' string)"
    try:
        body = wrapper["submission"].encode("utf-8")
    except UnicodeEncodeError:
        return "the wrapped submission is not valid Unicode text"
    return body, _parse_time(wrapper.get("received_at"))


def _is_json_object(data: bytes) -> bool:
    try:
        return isinstance(orjson.loads(data), dict)
    except orjson.JSONDecodeError:
        return False


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _archive_dir(settings: AttestationSettings, received: datetime) -> Path:
    return settings.spool_dir / ARCHIVE / f"{received:%Y-%m-%d}"


def _rejected(
    settings: AttestationSettings,
    path: Path,
    received: datetime,
    reason: str,
    message: str,
    raw: bytes | None,
    *,
    keep: bool = False,
) -> SpooledFile:
    archive = _archive_dir(settings, received) / f"{compact_time(received)}-{path.name}"
    row = {
        "locator": str(path),
        "reason_code": reason,
        "message": message,
        "raw": raw[:RAW_CAP_BYTES] if raw is not None else None,
    }
    return SpooledFile(path=path, archive_path=archive, submission=None, rejection=row, keep=keep)
