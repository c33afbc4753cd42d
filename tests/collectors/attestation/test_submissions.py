"""Reading the spool and the watched folders: wrapped vs bare files, arrival times, limits, and
files that are no submission at all (never a crash, never a silent drop)."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from annex.settings import AttestationSettings
from collectors.attestation.intake import spool_name, spool_wrapper
from collectors.attestation.submissions import (
    RAW_CAP_BYTES,
    SETTLE_SECONDS,
    count_waiting,
    read_spool,
    read_submissions,
)
from collectors.spool import archive_files

NOW = datetime(2026, 11, 2, 9, 0, 0)
RECEIVED = datetime(2026, 11, 2, 8, 10, 1, 123456)
BODY = b'{"schema": "annex.attestation/v1", "node_name": "n1", "evidence": []}'


def settings_for(tmp_path: Path, **overrides) -> AttestationSettings:
    values = {
        "spool_dir": tmp_path / "spool",
        "watch_dirs": (tmp_path / "watch",),
        "max_submission_bytes": 4096,
    }
    values.update(overrides)
    return AttestationSettings(**values)


def incoming(settings: AttestationSettings) -> Path:
    folder = settings.spool_dir / "incoming"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def spool(settings: AttestationSettings, body: bytes, received: datetime = RECEIVED) -> Path:
    digest = hashlib.sha256(body).hexdigest()
    path = incoming(settings) / spool_name(received, digest)
    path.write_bytes(spool_wrapper(body, received_at=received, remote="10.0.0.7"))
    return path


def bare(folder: Path, name: str, data: bytes, mtime: datetime) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    stamp = mtime.replace(tzinfo=UTC).timestamp()
    os.utime(path, (stamp, stamp))
    return path


def test_a_wrapped_file_gives_the_exact_body_and_the_wrappers_arrival(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    body = BODY.replace(b"n1", "nœud-ü".encode())
    path = spool(settings, body)
    [spooled] = read_spool(settings, now=NOW)
    submission = spooled.submission
    assert submission is not None and spooled.rejection is None and not spooled.keep
    assert submission.body == body
    assert submission.submission_id == hashlib.sha256(body).hexdigest()
    assert submission.received_at == RECEIVED and submission.received_at.tzinfo is None
    assert submission.source_kind == "intake"
    assert submission.source_locator == str(path)
    assert spooled.archive_path == settings.spool_dir / "archive" / "2026-11-02" / path.name
    assert submission.archive_uri == spooled.archive_path.absolute().as_uri()


def test_a_bare_file_arrives_at_its_mtime_and_is_archived_under_an_intake_style_name(
    tmp_path: Path,
) -> None:
    settings = settings_for(tmp_path)
    mtime = datetime(2026, 11, 1, 23, 59, 58, 500000)
    path = bare(tmp_path / "watch" / "node-a", "x.json", BODY, mtime)
    [submission] = read_submissions(settings, now=NOW)
    assert submission.source_kind == "file"
    assert submission.source_locator == str(path)
    assert submission.received_at == mtime
    assert submission.body == BODY
    digest = hashlib.sha256(BODY).hexdigest()
    expected = settings.spool_dir / "archive" / "2026-11-01" / spool_name(mtime, digest)
    assert submission.archive_uri == expected.absolute().as_uri()


def test_a_future_mtime_is_capped_at_now(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    bare(tmp_path / "watch", "ahead.json", BODY, NOW + timedelta(hours=3))
    [submission] = read_submissions(settings, now=NOW)
    assert submission.received_at == NOW


def test_a_bare_file_still_being_written_waits_for_the_next_collection(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    bare(tmp_path / "watch", "fresh.json", BODY[:20], NOW - timedelta(seconds=SETTLE_SECONDS / 2))
    assert list(read_spool(settings, now=NOW)) == []
    later = NOW + timedelta(seconds=SETTLE_SECONDS)
    [spooled] = read_spool(settings, now=later)
    assert spooled.submission is not None


def test_an_oversize_file_is_a_too_large_rejection_without_being_read_whole(
    tmp_path: Path,
) -> None:
    settings = settings_for(tmp_path)
    path = bare(tmp_path / "watch", "huge.json", b"{" + b" " * 100, NOW - timedelta(hours=1))
    with open(path, "r+b") as handle:  # 8 GiB, sparse: reading it whole would not fit
        handle.truncate(8 << 30)
    os.utime(path, (NOW.replace(tzinfo=UTC).timestamp() - 3600,) * 2)
    [spooled] = read_spool(settings, now=NOW)
    assert spooled.submission is None and not spooled.keep
    row = spooled.rejection
    assert row["reason_code"] == "too_large" and row["locator"] == str(path)
    assert "8,589,934,592 bytes" in row["message"] and "4,096" in row["message"]
    assert len(row["raw"]) == RAW_CAP_BYTES and row["raw"].startswith(b"{ ")


def test_a_wrapped_file_may_be_larger_than_the_body_limit_by_its_escaping(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    body = b'{"schema": "annex.attestation/v1", "pad": "' + b'\\"' * 1800 + b'"}'
    assert len(body) <= 4096 < len(spool_wrapper(body, received_at=RECEIVED, remote="x"))
    spool(settings, body)
    [submission] = read_submissions(settings, now=NOW)
    assert submission.body == body


def test_symbolic_links_are_never_followed(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    secret = tmp_path / "secret.json"
    secret.write_bytes(b'{"password": "hunter2"}')
    (tmp_path / "watch").mkdir()
    (tmp_path / "watch" / "link.json").symlink_to(secret)
    [spooled] = read_spool(settings, now=NOW)
    assert spooled.submission is None
    assert spooled.rejection["reason_code"] == "unreadable"
    assert "symbolic link" in spooled.rejection["message"]
    assert spooled.rejection["raw"] is None


def test_a_file_that_cannot_be_read_is_rejected_and_kept_for_the_next_collection(
    tmp_path: Path,
) -> None:
    settings = settings_for(tmp_path)
    (tmp_path / "watch").mkdir()
    os.mkfifo(tmp_path / "watch" / "pipe.json")  # opens fine, but is no regular file
    [spooled] = read_spool(settings, now=NOW)
    assert spooled.rejection["reason_code"] == "unreadable" and spooled.keep
    assert "not a regular file" in spooled.rejection["message"]


def test_non_json_in_the_spool_is_malformed_but_a_bare_non_json_file_goes_to_the_verifier(
    tmp_path: Path,
) -> None:
    settings = settings_for(tmp_path)
    (incoming(settings) / "a.json").write_bytes(b"\x00garbage")
    bare(tmp_path / "watch", "b.json", b"not json at all", NOW - timedelta(hours=1))
    first, second = read_spool(settings, now=NOW)
    assert first.submission is None
    assert first.rejection["reason_code"] == "malformed"
    assert first.rejection["raw"] == b"\x00garbage"
    # A bare file's bytes are the submission: the verifier rejects them (it owns that rule).
    assert second.submission is not None and second.submission.body == b"not json at all"


def test_a_bare_submission_dropped_in_the_spool_is_read_as_a_file(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    path = incoming(settings) / "dropped.json"
    path.write_bytes(BODY)
    os.utime(path, (RECEIVED.replace(tzinfo=UTC).timestamp(),) * 2)
    [submission] = read_submissions(settings, now=NOW)
    assert submission.source_kind == "file" and submission.body == BODY
    assert submission.received_at == RECEIVED


def test_a_wrapper_without_a_readable_time_falls_back_to_the_mtime(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    path = spool(settings, BODY)
    path.write_bytes(path.read_bytes().replace(b"2026-11-02T08:10:01.123456Z", b"yesterday"))
    os.utime(path, (RECEIVED.replace(tzinfo=UTC).timestamp() + 1,) * 2)
    [submission] = read_submissions(settings, now=NOW)
    assert submission.received_at == RECEIVED + timedelta(seconds=1)


def test_order_limits_and_what_is_not_a_candidate(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, watch_dirs=(tmp_path / "w1", tmp_path / "w2"))
    old = NOW - timedelta(hours=1)
    late = spool(settings, BODY.replace(b"n1", b"n3"), RECEIVED + timedelta(seconds=9))
    early = spool(settings, BODY.replace(b"n1", b"n2"), RECEIVED)
    (incoming(settings) / ".20261102T000000000000Z-abcd.json.1.2.tmp").write_bytes(b"{")
    (incoming(settings) / "notes.txt").write_bytes(b"x")
    w2 = bare(tmp_path / "w2", "a.json", BODY.replace(b"n1", b"n5"), old)
    w1b = bare(tmp_path / "w1", "b.json", BODY.replace(b"n1", b"n4"), old)
    w1a = bare(tmp_path / "w1" / "a", "z.json", BODY.replace(b"n1", b"n6"), old)
    bare(tmp_path / "w1" / ".hidden", "h.json", BODY, old)
    paths = [s.path for s in read_spool(settings, now=NOW)]
    assert paths == [early, late, w1a, w1b, w2]
    assert count_waiting(settings) == 5
    assert [s.path for s in read_spool(settings, now=NOW, max_files=3)] == paths[:3]


def test_missing_folders_mean_nothing_waits(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    assert list(read_spool(settings, now=NOW)) == [] and count_waiting(settings) == 0


def test_archive_moves_files_and_lists_what_it_could_not_move(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    spool(settings, BODY)
    bare(tmp_path / "watch", "b.json", BODY.replace(b"n1", b"n2"), NOW - timedelta(hours=1))
    spooled = list(read_spool(settings, now=NOW))
    moves = [(s.path, s.archive_path) for s in spooled]
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where a folder should be")
    extra = bare(tmp_path / "watch", "c.json", BODY, NOW - timedelta(hours=1))
    moves.append((extra, blocked / "c.json"))
    outcome = archive_files(moves)
    assert outcome.archived == 2
    assert [path for path, _ in outcome.failed] == [extra]
    for source, destination in moves[:2]:
        assert not source.exists() and destination.exists()
    assert spooled[0].archive_path.read_bytes().startswith(b'{"received_at"')
    assert spooled[1].archive_path.read_bytes() == BODY.replace(b"n1", b"n2")
    # moving again (a second collection after a crash): already there counts as archived
    assert archive_files(moves[:2]).archived == 2
    assert count_waiting(settings) == 1  # only the file that could not be moved


@pytest.mark.parametrize("size", [4096, 4097])
def test_the_limit_is_inclusive(tmp_path: Path, size: int) -> None:
    settings = settings_for(tmp_path)
    data = b"{" + b" " * (size - 2) + b"}"
    bare(tmp_path / "watch", "s.json", data, NOW - timedelta(hours=1))
    [spooled] = read_spool(settings, now=NOW)
    assert (spooled.submission is not None) == (size <= 4096)


_WRAPPER_LIKE = st.builds(
    lambda received, submission, extra: json.dumps(
        {"received_at": received, "submission": submission, **extra}
    ).encode(),
    st.one_of(st.text(max_size=40), st.integers(), st.none()),
    st.one_of(st.text(max_size=200), st.binary(max_size=50).map(repr), st.integers()),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
)


@hypothesis_settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    contents=st.lists(
        st.one_of(st.binary(max_size=300), _WRAPPER_LIKE, st.just(b"\xef\xbb\xbf{}")),
        min_size=1,
        max_size=4,
    )
)
def test_any_bytes_in_any_place_give_one_answer_per_file_and_never_raise(
    contents: list[bytes],
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        settings = settings_for(root, max_submission_bytes=256)
        old = NOW - timedelta(hours=1)
        for index, data in enumerate(contents):
            (incoming(settings) / f"{index:03d}.json").write_bytes(data)
            bare(root / "watch", f"{index:03d}.json", data, old)
        spooled = list(read_spool(settings, now=NOW))
        assert len(spooled) == 2 * len(contents)
        for item in spooled:
            assert (item.submission is None) != (item.rejection is None)
            if item.submission is not None:
                assert len(item.submission.body) <= 2 * 256 + 64 * 1024
                assert item.submission.received_at <= NOW
            else:
                assert item.rejection["reason_code"] in {"too_large", "malformed", "unreadable"}
