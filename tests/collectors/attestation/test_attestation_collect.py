"""collect_attestations: verifications become batches of the declared schemas, and the files
used are listed for archiving (never moved by the collector itself)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from annex.settings import AttestationSettings, Settings
from collectors.attestation import collect as collect_module
from collectors.attestation import schema
from collectors.attestation.collect import CollectStats, collect_attestations
from collectors.attestation.intake import spool_name, spool_wrapper

NOW = datetime(2026, 11, 2, 9, 0, 0)
RECEIVED = datetime(2026, 11, 2, 8, 10, 1)


@dataclass
class Verdicts:
    """The verifier's answer shape (helper A's ``Verification``)."""

    submission: dict | None
    records: list[dict] = field(default_factory=list)
    rejection: dict | None = None


class ScriptedVerifier:
    """Answers by node name in the body: 'bad' -> a rejection, 'boom' -> raises, else rows."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def verify(self, submission: Any) -> Verdicts:
        self.seen.append(submission)
        if b'"boom"' in submission.body:
            raise RuntimeError("a verifier bug")
        if b'"bad"' in submission.body:
            row = {
                "locator": submission.source_locator,
                "reason_code": "malformed",
                "message": "not a submission",
                "raw": submission.body,
            }
            return Verdicts(None, [], row)
        sub_row = {
            "submission_id": submission.submission_id,
            "source_locator": submission.source_locator,
            "source_kind": submission.source_kind,
            "node_name": "n",
            "received_at": submission.received_at,
            "gpu_index_map": {"GPU-0": "GPU-uuid-0"},
            "evidence_count": 2,
            "token_count": 2,
            "body_bytes": len(submission.body),
            "archive_uri": submission.archive_uri,
        }
        records = [
            {
                "record_id": f"{submission.submission_id[:8]}-{role}",
                "submission_id": submission.submission_id,
                "received_at": submission.received_at,
                "token_role": role,
                "verdict": verdict,
                "reasons": reasons,
                "raw_token_uri": f"{submission.archive_uri}#{role}",
            }
            for role, verdict, reasons in (
                ("overall", "pass", []),
                ("single", "fail", ["expired", "nonce_mismatch"]),
            )
        ]
        return Verdicts(sub_row, records)


def settings_for(tmp_path: Path) -> Settings:
    attestation = AttestationSettings(
        spool_dir=tmp_path / "spool", watch_dirs=(tmp_path / "watch",), max_submission_bytes=4096
    )
    return Settings(attestation=attestation)


def spool(settings: Settings, node: str, offset: int = 0) -> Path:
    body = b'{"schema": "annex.attestation/v1", "node_name": "%s"}' % node.encode()
    received = RECEIVED + timedelta(seconds=offset)
    folder = settings.attestation.spool_dir / "incoming"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / spool_name(received, hashlib.sha256(body).hexdigest())
    path.write_bytes(spool_wrapper(body, received_at=received, remote="10.1.2.3"))
    return path


def run(settings: Settings, verifier: Any, **options: Any):
    stats = CollectStats()
    batches = list(
        collect_attestations(settings, verifier=verifier, stats=stats, now=NOW, **options)
    )
    return batches, stats


def rows(batches: list[tuple[str, pa.RecordBatch]], table: str) -> list[dict]:
    return [row for name, batch in batches if name == table for row in batch.to_pylist()]


def test_verifications_become_batches_of_the_declared_schemas(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    paths = [spool(settings, f"node-{i}", i) for i in range(3)]
    verifier = ScriptedVerifier()
    batches, stats = run(settings, verifier)
    for name, batch in batches:
        assert batch.schema == schema.TABLES[name]
    submissions = rows(batches, "attestation_submissions")
    records = rows(batches, "attestation_records")
    assert [s["source_locator"] for s in submissions] == [str(p) for p in paths]
    assert submissions[0]["gpu_index_map"] == [("GPU-0", "GPU-uuid-0")]
    assert submissions[0]["received_at"] == RECEIVED
    assert len(records) == 6 and rows(batches, "rejected") == []
    first = records[1]
    assert first["reasons"] == ["expired", "nonce_mismatch"]
    assert (
        first["raw_token_uri"].startswith("file://")
        and "/archive/2026-11-02/" in (first["raw_token_uri"])
    )
    # the verifier saw each submission with the archive place already set
    assert all(s.archive_uri and "/archive/" in s.archive_uri for s in verifier.seen)
    assert stats.files_read == 3 and stats.submissions == 3 and stats.records == 6
    assert stats.verdicts == {"pass": 3, "fail": 3}
    assert stats.reasons == {"expired": 3, "nonce_mismatch": 3}


def test_files_used_are_listed_for_archiving_but_not_moved(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    good = spool(settings, "good")
    bad = spool(settings, "bad", 1)
    garbage = settings.attestation.spool_dir / "incoming" / "zz.json"
    garbage.write_bytes(b"garbage")
    (tmp_path / "watch").mkdir()
    pipe = tmp_path / "watch" / "pipe.json"
    os.mkfifo(pipe)
    _, stats = run(settings, ScriptedVerifier())
    consumed = dict(stats.consumed)
    assert set(consumed) == {good, bad, garbage}
    archive = settings.attestation.spool_dir / "archive" / "2026-11-02"
    assert consumed[good] == archive / good.name
    assert stats.kept == [pipe]
    assert all(path.exists() for path in (good, bad, garbage, pipe))  # nothing moved yet


def test_rejections_from_reader_and_verifier_are_rows(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    bad = spool(settings, "bad")
    garbage = settings.attestation.spool_dir / "incoming" / "zz.json"
    garbage.write_bytes(b"garbage")
    batches, stats = run(settings, ScriptedVerifier())
    rejected = rows(batches, "rejected")
    assert [(r["locator"], r["reason_code"]) for r in rejected] == [
        (str(bad), "malformed"),
        (str(garbage), "malformed"),
    ]
    assert rejected[1]["raw"] == b"garbage"
    assert stats.rejected == 2 and stats.submissions == 0


def test_a_verifier_that_raises_keeps_the_file_and_the_others_go_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = settings_for(tmp_path)
    boom = spool(settings, "boom")
    fine = spool(settings, "fine", 1)
    batches, stats = run(settings, ScriptedVerifier())
    [rejected] = rows(batches, "rejected")
    assert rejected["reason_code"] == "verifier_error" and rejected["locator"] == str(boom)
    assert "bug" in rejected["message"]
    assert stats.kept == [boom] and [p for p, _ in stats.consumed] == [fine]
    assert len(rows(batches, "attestation_records")) == 2
    assert "RuntimeError" in caplog.text


def test_batches_are_cut_at_batch_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collect_module, "BATCH_ROWS", 4)
    settings = settings_for(tmp_path)
    for i in range(5):
        spool(settings, f"node-{i}", i)
    batches, _ = run(settings, ScriptedVerifier())
    sizes = [(name, batch.num_rows) for name, batch in batches]
    assert all(count <= 4 for _, count in sizes)
    assert sum(c for n, c in sizes if n == "attestation_records") == 10
    assert sum(c for n, c in sizes if n == "attestation_submissions") == 5
    # records were yielded before the reading finished (streaming, not one batch at the end)
    assert sizes[0] == ("attestation_records", 4)


def test_progress_is_reported_per_file_and_max_files_leaves_the_rest(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    for i in range(4):
        spool(settings, f"node-{i}", i)
    seen: list[int] = []
    _, stats = run(
        settings, ScriptedVerifier(), on_progress=lambda s: seen.append(s.files_read), max_files=3
    )
    assert seen == [1, 2, 3] and len(stats.consumed) == 3


def test_nothing_waiting_yields_nothing(tmp_path: Path) -> None:
    batches, stats = run(settings_for(tmp_path), ScriptedVerifier())
    assert batches == [] and stats.files_read == 0
