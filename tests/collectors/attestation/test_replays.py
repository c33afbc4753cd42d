"""Replays are decided only on authenticated presentations (issue 35).

A copy of a genuine token placed by another node in the shared fallback folder, or only its
``jti`` under a bad signature, must not turn the genuine presentation into a replay; file
modification times are not evidence of who came first. The genuine presentation is the one
whose token carries the nonce annex issued to the presenting node; a copy presented by another
node is itself the replay (and fails its nonce).
"""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from annex.settings import Settings
from collectors.attestation.nonce import issue_nonce
from collectors.attestation.verify import Submission, Verifier
from services.attestation import collect_attestation_evidence
from tests.helpers.attestation_trust import (
    ISSUED,
    NONCE,
    NONCE_KEY,
    RECEIVED,
    Trust,
    body,
    maa_evidence,
    make_trust,
    nras_evidence,
    segments,
    submit,
    unsigned,
)
from warehouse import Warehouse, load_collection
from warehouse.models.attestation import ATTESTATION_MODEL

NODE_A, NODE_B = "gpu-node-a", "gpu-node-b"
VM_ID = "5F2E6A1B-0C3D-4E5F-8A9B-0C1D2E3F4A5B"


@pytest.fixture(scope="module")
def trust(tmp_path_factory: pytest.TempPathFactory) -> Trust:
    return make_trust(tmp_path_factory.mktemp("trust"))


def annex_nonce(node: str) -> str:
    nonce, _ = issue_nonce(NONCE_KEY, node, now=ISSUED, ttl_seconds=600)
    return nonce


def genuine(trust: Trust) -> tuple[dict, str]:
    """Node A's Azure token, bound by the nonce annex issued to node A."""
    nonce = annex_nonce(NODE_A)
    return maa_evidence(trust, nonce=nonce), nonce


def as_file(raw: bytes, received_at: datetime = RECEIVED) -> Submission:
    return replace(submit(raw, received_at=received_at), source_kind="file")


def verdict(result) -> tuple[str, list[str]]:
    (record,) = result.records
    return record["verdict"], record["reasons"]


# -- the verifier --------------------------------------------------------------------------------


@pytest.mark.parametrize("copy_nonce", ["own", "genuine"])
def test_a_copy_by_another_node_read_first_does_not_make_the_genuine_a_replay(
    trust: Trust, copy_nonce: str
) -> None:
    evidence, nonce = genuine(trust)
    verifier = trust.verifier(nonce_key=NONCE_KEY)
    # node B copies node A's token into its own submission (with its own nonce, or A's)
    copy_with = annex_nonce(NODE_B) if copy_nonce == "own" else nonce
    copy = verifier.verify(as_file(body([evidence], node=NODE_B, nonce=copy_with)))
    assert verdict(copy) == ("fail", ["nonce_mismatch"])
    original = verifier.verify(as_file(body([evidence], node=NODE_A, nonce=nonce)))
    assert verdict(original) == ("pass", [])


def test_a_copy_read_after_the_genuine_is_itself_the_replay(trust: Trust) -> None:
    evidence, nonce = genuine(trust)
    verifier = trust.verifier(nonce_key=NONCE_KEY)
    original = verifier.verify(as_file(body([evidence], node=NODE_A, nonce=nonce)))
    assert verdict(original) == ("pass", [])
    copy = verifier.verify(as_file(body([evidence], node=NODE_B, nonce=annex_nonce(NODE_B))))
    assert verdict(copy) == ("fail", ["nonce_mismatch", "replay"])


def test_a_jti_under_a_bad_signature_never_registers(trust: Trust) -> None:
    evidence, nonce = genuine(trust)
    header, payload, _signature = segments(evidence["token"])
    forged = unsigned(header, {**payload, "x-ms-azurevm-vmid": "attacker"}, b"\x00" * 256)
    verifier = trust.verifier(nonce_key=NONCE_KEY)
    bad = verifier.verify(
        as_file(body([{"provider": "azure-maa", "token": forged}], node=NODE_B, nonce=nonce))
    )
    assert verdict(bad)[0] == "fail" and "bad_signature" in verdict(bad)[1]
    assert "replay" not in verdict(bad)[1]
    original = verifier.verify(as_file(body([evidence], node=NODE_A, nonce=nonce)))
    assert verdict(original) == ("pass", [])


def test_attester_nonces_keep_the_first_presentation(trust: Trust) -> None:
    """Without annex's nonces neither presentation proves its node: the first seen stands in
    the verifier (the warehouse flags both when a watched file is involved: below)."""
    evidence = nras_evidence(trust, count=1, prefix="u")
    verifier: Verifier = trust.verifier()
    first = verifier.verify(submit(body([evidence], node=NODE_A, nonce=NONCE)))
    second = verifier.verify(submit(body([evidence], node=NODE_B, nonce=NONCE)))
    assert {r["verdict"] for r in first.records} == {"pass"}
    assert {"replay"} <= {reason for r in second.records for reason in r["reasons"]}


# -- through the fallback folder into the warehouse ---------------------------------------------


def _settings(trust: Trust, folder: Path) -> Settings:
    attestation = replace(trust.settings, spool_dir=folder / "spool", watch_dirs=(folder / "w",))
    return Settings(attestation=attestation)


def _write(folder: Path, name: str, raw: bytes, mtime: datetime) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(raw)
    stamp = mtime.replace(tzinfo=UTC).timestamp()
    os.utime(path, (stamp, stamp))


def _rows(wh: Warehouse) -> dict[str, tuple]:
    import duckdb

    with duckdb.connect(str(wh.path), read_only=True) as con:
        rows = con.execute(
            "SELECT node_name, verdict, reasons FROM core.attestation_records"
        ).fetchall()
    return {node: (verdict, sorted(reasons)) for node, verdict, reasons in rows}


def test_a_copy_with_an_earlier_mtime_in_the_fallback_folder_does_not_win(
    trust: Trust, tmp_path: Path, wh: Warehouse
) -> None:
    evidence, nonce = genuine(trust)
    settings = _settings(trust, tmp_path)
    watch = settings.attestation.watch_dirs[0]
    now = RECEIVED + timedelta(minutes=5)
    # node B's copy sorts first and claims (by its mtime) to have been written first
    _write(watch, "a-copy.json", body([evidence], node=NODE_B, nonce=nonce), ISSUED)
    _write(watch, "z-genuine.json", body([evidence], node=NODE_A, nonce=nonce), RECEIVED)
    verifier = trust.verifier(nonce_key=NONCE_KEY)
    collect_attestation_evidence(
        settings, "c", wh=wh, verifier=verifier, publish=False, refresh_coverage=False, now=now
    )
    assert _rows(wh) == {
        NODE_A: ("pass", []),
        NODE_B: ("fail", ["nonce_mismatch", "replay"]),
    }


def test_a_copy_stored_by_an_earlier_collection_does_not_make_the_genuine_a_replay(
    trust: Trust, tmp_path: Path, wh: Warehouse
) -> None:
    evidence, nonce = genuine(trust)
    settings = _settings(trust, tmp_path)
    watch = settings.attestation.watch_dirs[0]
    verifier = trust.verifier(nonce_key=NONCE_KEY)
    _write(watch, "copy.json", body([evidence], node=NODE_B, nonce=nonce), ISSUED)
    collect_attestation_evidence(
        settings, "c", wh=wh, verifier=verifier, publish=False, refresh_coverage=False,
        now=RECEIVED + timedelta(minutes=1),
    )  # fmt: skip
    _write(watch, "genuine.json", body([evidence], node=NODE_A, nonce=nonce), RECEIVED)
    collect_attestation_evidence(
        settings, "c", wh=wh, verifier=trust.verifier(nonce_key=NONCE_KEY), publish=False,
        refresh_coverage=False, now=RECEIVED + timedelta(minutes=2),
    )  # fmt: skip
    assert _rows(wh) == {NODE_A: ("pass", []), NODE_B: ("fail", ["nonce_mismatch"])}


# -- the warehouse's rule, on rows ----------------------------------------------------------------

CLUSTER = "c"
T0 = datetime(2025, 3, 10, 8, 0)


def _record(node: str, when: datetime, *, submission: str, **values: object) -> dict:
    from collectors.attestation.schema import ATTESTATION_RECORDS

    row: dict = dict.fromkeys(ATTESTATION_RECORDS.names)
    row.update(
        record_id=f"rec:{submission}",
        submission_id=submission,
        node_name=node,
        boot_id="b",
        received_at=when,
        issued_at=T0,
        valid_from=T0,
        valid_until=T0 + timedelta(hours=1),
        subject_kind="cpu_tee",
        provider="azure-maa",
        token_role="single",
        issuer="https://maa.example",
        token_sha256="sha:genuine",
        jti="jti:genuine",
        signature_valid=True,
        nonce_matched=True,
        nonce_source="attester",
        verdict="pass",
        assurance_tier="verified",
        reasons=[],
    )
    row.update(values)
    return row


def _submission(submission: str, node: str, when: datetime, kind: str) -> dict:
    from collectors.attestation.schema import ATTESTATION_SUBMISSIONS

    row: dict = dict.fromkeys(ATTESTATION_SUBMISSIONS.names)
    row.update(
        submission_id=submission,
        source_locator=f"w/{submission}.json",
        source_kind=kind,
        node_name=node,
        boot_id="b",
        received_at=when,
        evidence_count=1,
        token_count=1,
        body_bytes=100,
    )
    return row


def _load(wh: Warehouse, records: list[dict], submissions: list[dict]) -> None:
    import pyarrow as pa

    from collectors.attestation.schema import ATTESTATION_RECORDS, ATTESTATION_SUBMISSIONS

    def batches():
        yield (
            "attestation_submissions",
            pa.RecordBatch.from_pylist(submissions, schema=ATTESTATION_SUBMISSIONS),
        )
        yield "attestation_records", pa.RecordBatch.from_pylist(records, schema=ATTESTATION_RECORDS)

    load_collection(wh, ATTESTATION_MODEL, cluster=CLUSTER, batches=batches(), publish=False)


def test_warehouse_bad_signature_jti_stored_earlier_claims_nothing(wh: Warehouse) -> None:
    bad = _record(
        NODE_B, T0, submission="s-bad", token_sha256="sha:forged", signature_valid=False,
        verdict="fail", assurance_tier="none", reasons=["bad_signature"],
    )  # fmt: skip
    _load(wh, [bad], [_submission("s-bad", NODE_B, T0, "file")])
    later = T0 + timedelta(minutes=5)
    _load(
        wh,
        [_record(NODE_A, later, submission="s-a")],
        [_submission("s-a", NODE_A, later, "intake")],
    )
    assert _rows(wh)[NODE_A] == ("pass", [])


def test_warehouse_annex_bound_presentation_outranks_an_earlier_unbound_copy(
    wh: Warehouse,
) -> None:
    copy = _record(NODE_B, T0, submission="s-copy", nonce_matched=False, verdict="fail",
                   assurance_tier="none", reasons=["nonce_mismatch"])  # fmt: skip
    genuine_row = _record(
        NODE_A, T0 + timedelta(minutes=1), submission="s-a", nonce_source="collector"
    )
    _load(
        wh,
        [copy, genuine_row],
        [
            _submission("s-copy", NODE_B, T0, "file"),
            _submission("s-a", NODE_A, T0 + timedelta(minutes=1), "file"),
        ],
    )
    assert _rows(wh) == {
        NODE_A: ("pass", []),
        NODE_B: ("fail", ["nonce_mismatch", "replay"]),
    }


def test_warehouse_mtime_orders_no_watched_files_both_unbound_are_replays(wh: Warehouse) -> None:
    first = _record(NODE_A, T0, submission="s-a")
    second = _record(NODE_B, T0 + timedelta(minutes=1), submission="s-b")
    _load(
        wh,
        [first, second],
        [
            _submission("s-a", NODE_A, T0, "file"),
            _submission("s-b", NODE_B, T0 + timedelta(minutes=1), "file"),
        ],
    )
    assert _rows(wh) == {NODE_A: ("fail", ["replay"]), NODE_B: ("fail", ["replay"])}


def test_warehouse_intake_receipt_order_decides_between_unbound(wh: Warehouse) -> None:
    first = _record(NODE_A, T0, submission="s-a")
    second = _record(NODE_B, T0 + timedelta(minutes=1), submission="s-b")
    _load(
        wh,
        [second, first],
        [
            _submission("s-b", NODE_B, T0 + timedelta(minutes=1), "intake"),
            _submission("s-a", NODE_A, T0, "intake"),
        ],
    )
    assert _rows(wh) == {NODE_A: ("pass", []), NODE_B: ("fail", ["replay"])}
