"""The attestation model: rows as the verifier writes them (collectors/attestation/schema.py),
stored once per presentation; what only the warehouse knows (replays across collections, GPU
identity bindings, the Azure VM id against the inventory) turns a verdict into fail with the
reason appended; bad rows and rejected submissions are kept, never dropped."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

import duckdb
import pyarrow as pa

from collectors.attestation.schema import (
    ATTESTATION_RECORDS,
    ATTESTATION_SUBMISSIONS,
    REJECTED,
    TABLES,
)
from warehouse import Warehouse, load_collection
from warehouse.models.attestation import ATTESTATION_MODEL

CLUSTER = "c"
T0 = datetime(2025, 3, 10, 8, 0)


def row(schema: pa.Schema, **values: object) -> dict:
    out: dict = dict.fromkeys(schema.names)
    out.update(values)
    return out


def nras(
    node: str,
    boot: str,
    when: datetime,
    gpus: list[tuple[str, str]],
    *,
    submission: str,
    token_prefix: str | None = None,
    issued: datetime | None = None,
) -> list[dict]:
    """A passing NRAS result received at ``when``: the overall row and one detached row per
    (GPU UUID, ueid). Token bytes (token_sha256, jti) derive from ``token_prefix``: the same
    prefix in another submission, ``issued`` at the same time, is the same tokens again."""
    prefix = token_prefix or f"{node}/{when:%H%M}"
    issued = issued or when
    common = {
        "submission_id": submission,
        "source_locator": f"spool/{submission}.json",
        "node_name": node,
        "boot_id": boot,
        "received_at": when,
        "issued_at": issued,
        "valid_from": issued,
        "valid_until": issued + timedelta(hours=1),
        "subject_kind": "gpu",
        "provider": "nvidia-nras",
        "issuer": "https://nras.attestation.simulated.annex.invalid",
        "verdict": "pass",
        "assurance_tier": "verified",
        "reasons": [],
    }
    overall = f"rec:{prefix}/overall"
    rows = [
        row(
            ATTESTATION_RECORDS,
            **common,
            record_id=overall,
            token_role="overall",
            token_sha256=f"sha:{prefix}/overall",
            jti=f"jti:{prefix}/overall",
            claims='{"x-nvidia-overall-att-result": true}',
        )
    ]
    for index, (uuid, ueid) in enumerate(gpus):
        key = f"GPU-{index}"
        rows.append(
            row(
                ATTESTATION_RECORDS,
                **common,
                record_id=f"rec:{prefix}/{key}",
                token_role="detached",
                parent_record_id=overall,
                submod_key=key,
                gpu_uuid=uuid,
                device_ueid=ueid,
                token_sha256=f"sha:{prefix}/{key}",
                jti=f"jti:{prefix}/{key}",
            )
        )
    return rows


def maa(node: str, boot: str, when: datetime, vm_id: str, *, submission: str) -> dict:
    return row(
        ATTESTATION_RECORDS,
        record_id=f"rec:{node}/{when:%H%M}/maa",
        submission_id=submission,
        node_name=node,
        boot_id=boot,
        received_at=when,
        issued_at=when,
        valid_from=when,
        valid_until=when + timedelta(hours=1),
        subject_kind="cpu_tee",
        provider="azure-maa",
        token_role="single",
        vm_id=vm_id,
        tee_type="sevsnpvm",
        issuer="https://maa.attestation.simulated.annex.invalid",
        token_sha256=f"sha:{node}/{when:%H%M}/maa",
        jti=f"jti:{node}/{when:%H%M}/maa",
        verdict="pass",
        assurance_tier="verified",
        reasons=[],
    )


def submission(submission_id: str, node: str, boot: str, when: datetime) -> dict:
    return row(
        ATTESTATION_SUBMISSIONS,
        submission_id=submission_id,
        source_locator=f"spool/{submission_id}.json",
        source_kind="file",
        node_name=node,
        boot_id=boot,
        received_at=when,
        gpu_index_map=[("GPU-0", "GPU-a")],
        evidence_count=2,
        token_count=3,
        body_bytes=4096,
    )


def batches(
    records: list[dict], submissions: list[dict], rejected: list[dict] | None = None
) -> Iterator[tuple[str, pa.RecordBatch]]:
    yield (
        "attestation_submissions",
        pa.RecordBatch.from_pylist(submissions, schema=ATTESTATION_SUBMISSIONS),
    )
    yield "attestation_records", pa.RecordBatch.from_pylist(records, schema=ATTESTATION_RECORDS)
    if rejected:
        yield "rejected", pa.RecordBatch.from_pylist(rejected, schema=REJECTED)


def load(wh: Warehouse, records: list[dict], submissions: list[dict], **kwargs: object):
    return load_collection(
        wh,
        ATTESTATION_MODEL,
        cluster=CLUSTER,
        batches=batches(records, submissions, **kwargs),  # type: ignore[arg-type]
        publish=False,
    )


def query(wh: Warehouse, sql: str, params: list | None = None) -> list[tuple]:
    with duckdb.connect(str(wh.path), read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def verdicts(wh: Warehouse, node: str) -> dict[str, tuple]:
    """token role / submod key -> (verdict, reasons, collector_verdict) of the node's rows."""
    rows = query(
        wh,
        "SELECT coalesce(submod_key, token_role), verdict, reasons, collector_verdict "
        "FROM core.attestation_records WHERE node_name = ?",
        [node],
    )
    return {key: tuple(values) for key, *values in rows}


def add_nodes(wh: Warehouse, nodes: list[dict]) -> None:
    with wh.writer() as con:
        for n in nodes:
            con.execute(
                "INSERT INTO core.nodes (cluster, node_uid, node_name, system_uuid, "
                "content_hash, valid_from, valid_to, collection_id) VALUES (?, ?, ?, ?, 0, ?, ?, "
                "'k8s')",
                [
                    CLUSTER,
                    "uid-" + n["name"],
                    n["name"],
                    n.get("system_uuid"),
                    n.get("valid_from", T0 - timedelta(days=1)),
                    n.get("valid_to"),
                ],
            )


def test_staging_tables_match_the_collector_schemas() -> None:
    con = duckdb.connect()
    for statement in con.extract_statements(ATTESTATION_MODEL.staging_sql):
        con.execute(statement)
    for table, schema in TABLES.items():
        if table == "rejected":
            continue  # the engine's own stage_rejected (warehouse/load.py)
        described = con.execute(f"DESCRIBE stage_{table}").fetchall()
        assert [name for name, *_ in described] == schema.names, table
        # the collector's Arrow types insert as they are
        con.register("empty", pa.Table.from_batches([], schema=schema))
        con.execute(f"INSERT INTO stage_{table} BY NAME SELECT * FROM empty")


def test_reloading_the_same_collection_changes_nothing(wh: Warehouse) -> None:
    records = nras("node-a", "a1", T0, [("GPU-a", "ueid-a")], submission="s1")
    records.append(maa("node-a", "a1", T0, "vm-a", submission="s1"))
    subs = [submission("s1", "node-a", "a1", T0)]
    load(wh, records, subs)
    tables = (
        "core.attestation_records",
        "core.attestation_submissions",
        "core.gpu_attested_devices",
    )
    first = {t: query(wh, f"SELECT * FROM {t} ORDER BY ALL") for t in tables}
    assert len(first["core.attestation_records"]) == 3
    assert first["core.gpu_attested_devices"] == [
        (
            CLUSTER,
            "node-a",
            "GPU-a",
            "ueid-a",
            T0,
            T0,
            "rec:node-a/0800/GPU-0",
            "rec:node-a/0800/GPU-0",
        )
    ]
    # the same tokens again (twice in one collection, then in another): nothing new
    load(wh, records + records, subs + subs)
    for table in tables:
        assert query(wh, f"SELECT count(*) FROM {table}") == [(len(first[table]),)], table
    assert verdicts(wh, "node-a") == {
        "overall": ("pass", [], "pass"),
        "GPU-0": ("pass", [], "pass"),
        "single": ("pass", [], "pass"),
    }
    (claims,) = query(
        wh,
        "SELECT claims->>'$.\"x-nvidia-overall-att-result\"' FROM core.attestation_records "
        "WHERE token_role = 'overall'",
    )
    assert claims == ("true",)


def test_the_same_tokens_from_another_node_in_a_later_collection_are_a_replay(
    wh: Warehouse,
) -> None:
    gpus = [("GPU-a", "ueid-a")]
    load(
        wh,
        nras("node-a", "a1", T0, gpus, submission="s1", token_prefix="t"),
        [submission("s1", "node-a", "a1", T0)],
    )
    later = T0 + timedelta(minutes=5)
    load(
        wh,
        nras("node-b", "b1", later, gpus, submission="s2", token_prefix="t", issued=T0),
        [submission("s2", "node-b", "b1", later)],
    )
    assert verdicts(wh, "node-a") == {
        "overall": ("pass", [], "pass"),
        "GPU-0": ("pass", [], "pass"),
    }
    assert verdicts(wh, "node-b") == {
        "overall": ("fail", ["replay"], "pass"),
        "GPU-0": ("fail", ["replay"], "pass"),
    }
    replayed = query(
        wh,
        "SELECT r.record_id, r.parent_record_id, r.replay_of_record_id, r.assurance_tier, "
        "r.detail, p.node_name FROM core.attestation_records AS r "
        "LEFT JOIN core.attestation_records AS p ON p.record_id = r.parent_record_id "
        "WHERE r.node_name = 'node-b' AND r.token_role = 'detached'",
    )
    ((record_id, _, replay_of, tier, detail, parent_node),) = replayed
    assert record_id != "rec:t/GPU-0" and replay_of == "rec:t/GPU-0"
    assert parent_node == "node-b"  # the replayed overall row, not node-a's
    assert tier == "none"
    assert "node-a" in detail and "s1" in detail
    assert query(
        wh, "SELECT count(DISTINCT record_id), count(*) FROM core.attestation_records"
    ) == [(4, 4)]
    # a replayed GPU binds nothing
    assert query(wh, "SELECT node_name FROM core.gpu_attested_devices") == [("node-a",)]
    # and reloading the replay changes nothing either
    load(
        wh,
        nras("node-b", "b1", later, gpus, submission="s2", token_prefix="t", issued=T0),
        [submission("s2", "node-b", "b1", later)],
    )
    assert query(wh, "SELECT count(*) FROM core.attestation_records") == [(4,)]


def test_a_replay_after_a_reboot_and_a_reused_jti_are_replays_a_resend_is_not(
    wh: Warehouse,
) -> None:
    gpus = [("GPU-a", "ueid-a")]
    first = nras("node-a", "a1", T0, gpus, submission="s1", token_prefix="t")
    later = T0 + timedelta(minutes=10)
    # the same node sends the same tokens again in another body (an agent's retry): a resend
    resend = nras("node-a", "a1", later, gpus, submission="s2", token_prefix="t", issued=T0)
    # ... after a reboot: a replay (evidence never spans boots)
    rebooted = nras("node-a", "a2", later, gpus, submission="s3", token_prefix="t", issued=T0)
    # another node's token with node-a's jti but other bytes (a re-encoded signature)
    reencoded = nras("node-b", "b1", later, [("GPU-b", "ueid-b")], submission="s4")
    reencoded[0]["jti"] = first[0]["jti"]
    load(wh, first, [submission("s1", "node-a", "a1", T0)])
    load(
        wh,
        resend + rebooted + reencoded,
        [
            submission("s2", "node-a", "a1", later),
            submission("s3", "node-a", "a2", later),
            submission("s4", "node-b", "b1", later),
        ],
    )
    rows = query(
        wh,
        "SELECT submission_id, coalesce(submod_key, token_role), verdict, reasons "
        "FROM core.attestation_records ORDER BY ALL",
    )
    assert rows == [
        ("s1", "GPU-0", "pass", []),
        ("s1", "overall", "pass", []),
        ("s3", "GPU-0", "fail", ["replay"]),
        ("s3", "overall", "fail", ["replay"]),
        ("s4", "GPU-0", "pass", []),
        ("s4", "overall", "fail", ["replay"]),
    ]
    assert query(wh, "SELECT count(*) FROM core.attestation_submissions") == [(4,)]


def test_a_replay_within_one_collection_keeps_the_first_presentation(wh: Warehouse) -> None:
    gpus = [("GPU-a", "ueid-a")]
    later = T0 + timedelta(minutes=1)
    # the replay is listed first: order of receipt decides, not order in the batch (both came
    # through the intake, whose clock stamped them: a watched file's mtime would decide nothing)
    load(
        wh,
        nras("node-b", "b1", later, gpus, submission="s2", token_prefix="t", issued=T0)
        + nras("node-a", "a1", T0, gpus, submission="s1", token_prefix="t"),
        [
            {**submission("s2", "node-b", "b1", later), "source_kind": "intake"},
            {**submission("s1", "node-a", "a1", T0), "source_kind": "intake"},
        ],
    )
    assert verdicts(wh, "node-a")["GPU-0"] == ("pass", [], "pass")
    assert verdicts(wh, "node-b")["GPU-0"] == ("fail", ["replay"], "pass")


def test_a_verified_gpu_binds_its_ueid_and_contradictions_fail_with_device_mismatch(
    wh: Warehouse,
) -> None:
    add_nodes(wh, [{"name": "node-a"}, {"name": "node-b"}, {"name": "node-c"}])
    load(
        wh,
        nras("node-a", "a1", T0, [("GPU-a", "ueid-a"), ("GPU-b", "ueid-b")], submission="s1"),
        [submission("s1", "node-a", "a1", T0)],
    )
    later = T0 + timedelta(minutes=50)
    load(
        wh,
        # node-a again: ueid-a now claims GPU UUID GPU-x (the UUID is the agent's word)
        nras("node-a", "a1", later, [("GPU-x", "ueid-a"), ("GPU-b", "ueid-b")], submission="s2")
        # node-b presents ueid-b, bound to node-a, which is still in the inventory
        + nras("node-b", "b1", later, [("GPU-b", "ueid-b")], submission="s3")
        # node-c claims GPU-a's UUID with another ueid
        + nras("node-c", "c1", later, [("GPU-a", "ueid-z")], submission="s4"),
        [
            submission("s2", "node-a", "a1", later),
            submission("s3", "node-b", "b1", later),
            submission("s4", "node-c", "c1", later),
        ],
    )
    rows = query(
        wh,
        "SELECT submission_id, submod_key, verdict, reasons, collector_verdict, detail "
        "FROM core.attestation_records WHERE token_role = 'detached' AND submission_id <> 's1' "
        "ORDER BY ALL",
    )
    assert [r[:5] for r in rows] == [
        ("s2", "GPU-0", "fail", ["device_mismatch"], "pass"),
        ("s2", "GPU-1", "pass", [], "pass"),
        ("s3", "GPU-0", "fail", ["device_mismatch"], "pass"),
        ("s4", "GPU-0", "fail", ["device_mismatch"], "pass"),
    ]
    assert "bound to GPU UUID GPU-a" in rows[0][5]
    assert "bound to node node-a" in rows[2][5]
    assert "GPU UUID GPU-a is bound to ueid ueid-a" in rows[3][5]
    assert query(
        wh,
        "SELECT node_name, gpu_uuid, device_ueid, first_seen_at, last_seen_at "
        "FROM core.gpu_attested_devices ORDER BY ALL",
    ) == [
        ("node-a", "GPU-a", "ueid-a", T0, T0),
        ("node-a", "GPU-b", "ueid-b", T0, later),
    ]


def test_a_gpu_may_move_to_a_replacement_node_once_the_old_one_left_the_inventory(
    wh: Warehouse,
) -> None:
    add_nodes(wh, [{"name": "node-a", "valid_to": T0 + timedelta(minutes=30)}, {"name": "node-b"}])
    load(
        wh,
        nras("node-a", "a1", T0, [("GPU-a", "ueid-a")], submission="s1"),
        [submission("s1", "node-a", "a1", T0)],
    )
    later = T0 + timedelta(hours=2)
    load(
        wh,
        nras("node-b", "b1", later, [("GPU-a", "ueid-a")], submission="s2"),
        [submission("s2", "node-b", "b1", later)],
    )
    assert verdicts(wh, "node-b")["GPU-0"] == ("pass", [], "pass")
    assert query(wh, "SELECT node_name FROM core.gpu_attested_devices ORDER BY first_seen_at") == [
        ("node-a",),
        ("node-b",),
    ]


def test_the_same_ueid_on_two_nodes_in_one_collection_fails_the_later_one(
    wh: Warehouse,
) -> None:
    later = T0 + timedelta(minutes=1)
    load(
        wh,
        nras("node-a", "a1", T0, [("GPU-a", "ueid-a")], submission="s1")
        + nras("node-b", "b1", later, [("GPU-b", "ueid-a")], submission="s2"),
        [submission("s1", "node-a", "a1", T0), submission("s2", "node-b", "b1", later)],
    )
    assert verdicts(wh, "node-a")["GPU-0"] == ("pass", [], "pass")
    assert verdicts(wh, "node-b")["GPU-0"] == ("fail", ["device_mismatch"], "pass")


def test_azure_vm_id_must_be_the_nodes_system_uuid(wh: Warehouse) -> None:
    system_uuid = "12345678-9ABC-DEF0-1122-334455667788"
    add_nodes(
        wh,
        [
            {"name": "plain", "system_uuid": system_uuid},
            {"name": "swapped", "system_uuid": system_uuid},
            {"name": "other", "system_uuid": system_uuid},
            # the version valid at issued_at decides, not a later one
            {"name": "recreated", "system_uuid": system_uuid, "valid_to": T0 + timedelta(hours=1)},
            {
                "name": "recreated",
                "system_uuid": "aaaaaaaa-0000-0000-0000-000000000000",
                "valid_from": T0 + timedelta(hours=1),
            },
        ],
    )
    records = [
        maa("plain", "p1", T0, system_uuid.lower(), submission="s1"),
        # Azure's VM id with the first three fields byte-swapped (SMBIOS order)
        maa("swapped", "w1", T0, "78563412-bc9a-f0de-1122-334455667788", submission="s2"),
        maa("other", "o1", T0, "ffffffff-9abc-def0-1122-334455667788", submission="s3"),
        maa("recreated", "r1", T0, system_uuid, submission="s4"),
        maa("unknown", "u1", T0, "ffffffff-9abc-def0-1122-334455667788", submission="s5"),
    ]
    subs = [
        submission(f"s{i}", r["node_name"], r["boot_id"], T0)
        for i, r in enumerate(records, start=1)
    ]
    load(wh, records, subs)
    rows = dict(
        query(
            wh,
            "SELECT node_name, (verdict, reasons, assurance_tier) FROM core.attestation_records",
        )
    )
    assert rows["plain"] == ("pass", [], "verified")
    assert rows["swapped"] == ("pass", [], "verified")
    assert rows["other"] == ("fail", ["device_mismatch"], "none")
    assert rows["recreated"] == ("pass", [], "verified")
    assert rows["unknown"] == ("pass", [], "verified")  # not in the inventory: a check reports it
    ((detail,),) = query(
        wh, "SELECT detail FROM core.attestation_records WHERE node_name = 'other'"
    )
    assert "x-ms-azurevm-vmid" in detail and system_uuid in detail


def test_a_failed_token_keeps_its_reasons_and_gains_the_warehouse_ones(wh: Warehouse) -> None:
    add_nodes(wh, [{"name": "node-a", "system_uuid": "12345678-9abc-def0-1122-334455667788"}])
    record = maa("node-a", "a1", T0, "ffffffff-9abc-def0-1122-334455667788", submission="s1")
    record.update(verdict="fail", assurance_tier="none", reasons=["expired"], detail="too old")
    load(wh, [record], [submission("s1", "node-a", "a1", T0)])
    ((verdict, reasons, detail, collector),) = query(
        wh, "SELECT verdict, reasons, detail, collector_verdict FROM core.attestation_records"
    )
    assert (verdict, reasons, collector) == ("fail", ["expired", "device_mismatch"], "fail")
    assert detail.startswith("too old; device_mismatch: ")


def test_rejected_submissions_and_rows_breaking_the_contract_are_kept_not_loaded(
    wh: Warehouse,
) -> None:
    good = nras("node-a", "a1", T0, [("GPU-a", "ueid-a")], submission="s1")
    no_hash = dict(good[1], record_id="rec:bad", token_sha256=None)
    bad_verdict = dict(good[1], record_id="rec:odd", token_sha256="sha:odd", verdict="maybe")
    result = load(
        wh,
        [*good, no_hash, bad_verdict],
        [submission("s1", "node-a", "a1", T0), submission(None, "node-a", "a1", T0)],  # type: ignore[arg-type]
        rejected=[
            {
                "locator": "spool/x.json",
                "reason_code": "malformed",
                "message": "not JSON",
                "raw": b"{nope",
            },
        ],
    )
    assert result.status == "succeeded"
    assert result.rejected_count == 4
    assert query(wh, "SELECT reason_code, locator FROM audit.rejected ORDER BY ALL") == [
        ("invalid_attestation_record", "spool/s1.json"),
        ("invalid_attestation_record", "spool/s1.json"),
        ("invalid_attestation_submission", "spool/None.json"),
        ("malformed", "spool/x.json"),
    ]
    messages = [m for (m,) in query(wh, "SELECT message FROM audit.rejected ORDER BY ALL")]
    assert any("token_sha256 is missing" in m for m in messages)
    assert any("verdict maybe" in m for m in messages)
    assert query(wh, "SELECT count(*) FROM core.attestation_records") == [(2,)]
    assert query(wh, "SELECT count(*) FROM core.attestation_submissions") == [(1,)]


def test_one_gpu_under_two_submodule_keys_of_a_result_fails_the_second(wh: Warehouse) -> None:
    records = nras(
        "node-a",
        "a1",
        T0,
        [("GPU-a", "ueid-a"), ("GPU-b", "ueid-b"), ("GPU-a", "ueid-a")],
        submission="s1",
    )
    load(wh, records, [submission("s1", "node-a", "a1", T0)])
    # issue 35: a device failing its binding fails its result's overall row too (coverage)
    assert verdicts(wh, "node-a") == {
        "overall": ("fail", ["device_mismatch"], "pass"),
        "GPU-0": ("pass", [], "pass"),
        "GPU-1": ("pass", [], "pass"),
        "GPU-2": ("fail", ["device_mismatch"], "pass"),
    }
    ((detail,),) = query(
        wh, "SELECT detail FROM core.attestation_records WHERE submod_key = 'GPU-2'"
    )
    assert "GPU-0 and GPU-2" in detail
