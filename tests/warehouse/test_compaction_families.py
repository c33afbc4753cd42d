"""Compaction of the families whose rows stay (issue 39 item 2): lineage payloads and
attestation claims move to Parquet past their retention while the events and the verdicts stay;
the lineage and attestation marts keep every figure, the archive views every row, and the audit
records are never compacted.

Three days of lineage (a training run a day, each reading a licensed dataset and writing a
checkpoint) and of attestation evidence (one node, a GPU and a CVM token a day) are loaded and
refreshed; a one-day retention with the cut-off on the third day compacts the first day.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from annex.errors import WarehouseError
from annex.settings import RetentionSettings
from collectors.attestation.schema import ATTESTATION_RECORDS, ATTESTATION_SUBMISSIONS
from tests.helpers import lineage_warehouse as lw
from warehouse import Warehouse, compaction, load_collection
from warehouse.compaction import NEVER_COMPACTED, compact_warehouse, compactable_tables
from warehouse.export import export_warehouse
from warehouse.models.attestation import ATTESTATION_MODEL
from warehouse.models.attestation_coverage import refresh_attestation_coverage
from warehouse.models.lineage import refresh_lineage

CLUSTER = "c1"
DAY_ONE = lw.T0.replace(tzinfo=None, hour=0)
DAYS = 3
CUTOFF = DAY_ONE + timedelta(days=DAYS - 1, hours=12)
"""With one day of retention, the first day is past it; the other two are kept."""
RETENTION = RetentionSettings(lineage_days=1, attestation_days=1)


def day(n: int, hours: int = 8) -> datetime:
    return DAY_ONE + timedelta(days=n, hours=hours)


def lineage_day(n: int) -> list[dict]:
    """Day ``n``: a pretraining run reads a licensed corpus version and writes a checkpoint."""
    run = lw.run_id(f"train-{n}")
    corpus = lw.dataset(
        "s3://corpora",
        "web",
        f"v{n}",
        annex_licensing=lw.facet("AnnexLicensingDatasetFacet", license="CC-BY-4.0"),
    )
    model = lw.dataset("s3://models", "llm", f"ckpt-{n}", datasetType=lw.model_facet())
    facets = {"annex_trainingRun": lw.training_facet("llm")}
    start, end = day(n).replace(tzinfo=lw.T0.tzinfo), day(n, 10).replace(tzinfo=lw.T0.tzinfo)
    return [
        lw.run_event(run, "START", start, job="pretrain", inputs=[corpus], run_facets=facets),
        lw.run_event(run, "COMPLETE", end, job="pretrain", inputs=[corpus], outputs=[model]),
    ]


def row(schema: pa.Schema, **values: object) -> dict:
    out: dict = dict.fromkeys(schema.names)
    out.update(values)
    return out


def attestation_day(n: int, spool: Path) -> list[tuple[str, pa.RecordBatch]]:
    """Day ``n``: one submission from node n1 with a passing NRAS result and CVM token, its
    body archived under ``spool`` as the collector leaves it."""
    sub = f"sub-{n}"
    when = day(n)
    archived = spool / "archive" / f"{when:%Y-%m-%d}" / f"{sub}.json"
    archived.parent.mkdir(parents=True, exist_ok=True)
    archived.write_bytes(json.dumps({"submission": sub, "tokens": ["eyJ..."]}).encode())
    uri = archived.absolute().as_uri()
    common = {
        "submission_id": sub,
        "node_name": "n1",
        "boot_id": "boot-1",
        "received_at": when,
        "issued_at": when,
        "valid_from": when,
        "valid_until": when + timedelta(hours=6),
        "verdict": "pass",
        "assurance_tier": "verified",
        "reasons": [],
        "raw_token_uri": uri + "#0",
    }
    records = [
        row(
            ATTESTATION_RECORDS,
            **common,
            record_id=f"{sub}/overall",
            token_sha256=f"sha-{n}-overall",
            jti=f"{sub}/overall",
            subject_kind="gpu",
            provider="nvidia-nras",
            token_role="overall",
            claims=json.dumps({"iss": "nras", "n": n}),
        ),
        row(
            ATTESTATION_RECORDS,
            **common,
            record_id=f"{sub}/GPU-0",
            token_sha256=f"sha-{n}-gpu0",
            jti=f"{sub}/GPU-0",
            subject_kind="gpu",
            provider="nvidia-nras",
            token_role="detached",
            parent_record_id=f"{sub}/overall",
            submod_key="GPU-0",
            gpu_uuid="GPU-aaaa",
            device_ueid="ueid-0",
            claims=json.dumps({"ueid": "ueid-0", "n": n}),
        ),
        row(
            ATTESTATION_RECORDS,
            **common,
            record_id=f"{sub}/maa",
            token_sha256=f"sha-{n}-maa",
            jti=f"{sub}/maa",
            subject_kind="cpu_tee",
            provider="azure-maa",
            token_role="single",
            tee_type="sevsnpvm",
            claims=json.dumps({"x-ms-attestation-type": "sevsnpvm", "n": n}),
        ),
    ]
    submission = row(
        ATTESTATION_SUBMISSIONS,
        submission_id=sub,
        node_name="n1",
        boot_id="boot-1",
        received_at=when,
        gpu_index_map=[("GPU-0", "GPU-aaaa")],
        archive_uri=uri,
    )
    return [
        (
            "attestation_submissions",
            pa.RecordBatch.from_pylist([submission], ATTESTATION_SUBMISSIONS),
        ),
        ("attestation_records", pa.RecordBatch.from_pylist(records, schema=ATTESTATION_RECORDS)),
    ]


def inventory(wh: Warehouse) -> None:
    """One node with one GPU for the whole period, allocated, and a kubernetes collection at the
    cut-off (the kubernetes model's own tests cover how such rows get there)."""
    with wh.writer() as con:
        con.execute(
            "INSERT INTO audit.collections (collection_id, source, cluster, started_at, "
            "finished_at, status) VALUES ('k8s-1', 'kubernetes', ?, ?, ?, 'succeeded')",
            [CLUSTER, CUTOFF, CUTOFF],
        )
        con.execute(
            "INSERT INTO core.nodes (cluster, node_uid, node_name, gpu_capacity, "
            "gpu_allocatable, boot_id, creation_timestamp, content_hash, valid_from, valid_to, "
            "collection_id) VALUES (?, 'uid-n1', 'n1', 1, 1, 'boot-1', ?, 0, ?, NULL, 'k8s-1')",
            [CLUSTER, DAY_ONE, DAY_ONE],
        )
        con.execute(
            "INSERT INTO core.gpu_allocations (cluster, pod_uid, namespace, pod_name, node_name, "
            "resource_name, gpus, category, valid_from, valid_from_source, valid_to, "
            "opened_collection_id) VALUES (?, 'uid-p', 'team-a', 'p', 'n1', 'nvidia.com/gpu', 1, "
            "'workload', ?, 'scheduled', NULL, 'k8s-1')",
            [CLUSTER, DAY_ONE],
        )


@pytest.fixture
def loaded(wh: Warehouse) -> Warehouse:
    for n in range(DAYS):
        lw.load(wh, lineage_day(n))
        result = load_collection(
            wh,
            ATTESTATION_MODEL,
            cluster=CLUSTER,
            batches=attestation_day(n, spool(wh)),
            publish=False,
        )
        assert result.rejected_count == 0
    inventory(wh)
    with wh.writer() as con:
        refresh_attestation_coverage(con)
    return wh


def spool(wh: Warehouse) -> Path:
    return Path(wh.path).parent / "attestations"


def retention(wh: Warehouse) -> RetentionSettings:
    return replace(RETENTION, dir=Path(wh.path).parent / "archive")


LOAD_COLUMNS = ("refreshed_at", "collection_id", "loaded_at", "raw_token_uri", "received_at")
"""What differs between two warehouses that loaded the same evidence: when and by which
collection, and where the spool was (lineage events are received at the loading clock)."""


def rows(
    con: duckdb.DuckDBPyConnection, relation: str, skip: tuple[str, ...] = ("refreshed_at",)
) -> list[str]:
    """Its rows as sorted text, less the ``skip`` columns (by default when a refresh wrote
    them)."""
    skipped = ", ".join(f"'{c}'" for c in skip)
    query = f"SELECT COLUMNS(lambda c: c NOT IN ({skipped})) FROM {relation}"
    return sorted(repr(r) for r in con.execute(query).fetchall())


def figures(wh: Warehouse, skip: tuple[str, ...] = ("refreshed_at",)) -> dict[str, list[str]]:
    """Every lineage and attestation mart, and the archive views of the two tables."""
    with wh.writer() as con:
        marts = [
            f"marts.{name}"
            for (name,) in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'marts' UNION ALL "
                "SELECT view_name FROM duckdb_views() WHERE schema_name = 'marts' "
                "AND NOT internal"
            ).fetchall()
            if name.startswith(("lineage_", "attestation_"))
        ]
        relations = [
            *sorted(marts),
            "core.lineage_current_facets",
            "core.lineage_runs",
            "archive.lineage_events",
            "archive.attestation_records",
        ]
        return {relation: rows(con, relation, skip) for relation in relations}


def ledger(wh: Warehouse) -> list[tuple]:
    with wh.writer() as con:
        return con.execute(
            "SELECT table_name, family, cluster, day, rows, file FROM audit.compactions "
            "ORDER BY ALL"
        ).fetchall()


def test_payloads_and_claims_move_while_rows_verdicts_and_figures_stay(loaded: Warehouse):
    wh = loaded
    before = figures(wh)
    assert before["marts.lineage_models"] and before["marts.attestation_gpu_hours"]
    first_file = next((spool(wh) / "archive" / f"{day(0):%Y-%m-%d}").iterdir())
    first_body = first_file.read_bytes()
    with wh.writer() as con:
        history = rows(con, "core.lineage_facets")
        events = con.execute("SELECT count(*) FROM core.lineage_events").fetchone()

    result = compact_warehouse(wh, retention(wh), now=CUTOFF)

    moved = {(p.table, p.cluster, p.day, p.rows) for p in result.partitions}
    assert moved == {
        ("core.lineage_events", None, DAY_ONE.date(), 2),
        ("core.attestation_records", CLUSTER, DAY_ONE.date(), 3),
        ("core.attestation_submissions", CLUSTER, DAY_ONE.date(), 1),  # its archived file
    }
    assert figures(wh) == before
    assert not first_file.exists()  # the first day's archived submission left the spool
    assert len(list((spool(wh) / "archive").rglob("*.json"))) == DAYS - 1
    with wh.writer() as con:
        # the rows stay; only the first day's payloads and claims left DuckDB
        assert con.execute("SELECT count(*) FROM core.lineage_events").fetchone() == events
        assert con.execute(
            "SELECT day, count(*) FILTER (WHERE payload IS NULL), count(*) "
            "FROM core.lineage_events GROUP BY ALL ORDER BY ALL"
        ).fetchall() == [
            (DAY_ONE.date() + timedelta(days=n), 2 if n == 0 else 0, 2) for n in range(DAYS)
        ]
        assert con.execute(
            "SELECT count(*) FROM core.attestation_records WHERE claims IS NULL"
        ).fetchone() == (3,)
        # the facet history reaches the compacted payloads through archive.lineage_facets
        assert rows(con, "archive.lineage_facets") == history
        assert len(rows(con, "core.lineage_facets")) < len(history)
        # a report citing a token's hash still finds the token's claims
        cited = con.execute(
            "SELECT verdict, claims ->> '$.n' FROM archive.attestation_records "
            "WHERE token_sha256 = 'sha-0-maa'"
        ).fetchall()
        assert cited == [("pass", "0")]
        # and the token as received: the archived submission moved into Parquet, byte for byte
        kept = con.execute(
            "SELECT f.body, f.file_sha256 FROM archive.attestation_records AS r "
            "JOIN archive.attestation_submission_files AS f "
            "ON f.archive_uri = split_part(r.raw_token_uri, '#', 1) "
            "WHERE r.token_sha256 = 'sha-0-maa'"
        ).fetchall()
        assert kept == [(first_body, hashlib.sha256(first_body).hexdigest())]
        # the lineage marts rebuilt whole from what stays give the same figures
        refresh_lineage(con, full=True)
    assert figures(wh) == before
    # the analysts' copy was published and reaches the files too
    with wh.reader() as con:
        assert rows(con, "archive.lineage_events") == before["archive.lineage_events"]
        assert rows(con, "archive.attestation_records") == before["archive.attestation_records"]


def test_a_rerun_is_a_no_op_and_a_late_event_goes_to_a_second_file(loaded: Warehouse) -> None:
    wh = loaded
    compact_warehouse(wh, retention(wh), now=CUTOFF)
    first = ledger(wh)
    again = compact_warehouse(wh, retention(wh), now=CUTOFF)
    assert again.partitions == () and ledger(wh) == first

    late = lw.run_event(
        lw.run_id("train-0"),
        "RUNNING",
        day(0, 9).replace(tzinfo=lw.T0.tzinfo),
        job="pretrain",
    )
    lw.load(wh, [late])
    before = figures(wh)
    result = compact_warehouse(wh, retention(wh), now=CUTOFF)
    assert [(p.table, p.rows, p.file.name if p.file else None) for p in result.partitions] == [
        ("core.lineage_events", 1, "data_1.parquet")
    ]
    assert figures(wh) == before


def test_nothing_moves_before_the_refreshes_took_it_in(wh: Warehouse) -> None:
    for n in range(DAYS):
        lw.load(wh, lineage_day(n), refresh=False)
        load_collection(
            wh,
            ATTESTATION_MODEL,
            cluster=CLUSTER,
            batches=attestation_day(n, spool(wh)),
            publish=False,
        )
    assert compact_warehouse(wh, retention(wh), now=CUTOFF).partitions == ()
    with wh.writer() as con:
        refresh_lineage(con)
    moved = compact_warehouse(wh, retention(wh), now=CUTOFF).partitions
    assert [p.table for p in moved] == ["core.lineage_events"]  # coverage not refreshed yet


def test_audit_records_are_never_compacted_only_the_request_logs(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    wh.migrate()
    with wh.writer() as con:
        tables = compactable_tables(con)
        audit = {t.name for t in tables if t.schema == "audit"}
        present = {
            f"audit.{name}"
            for (name,) in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'audit'"
            ).fetchall()
        }
    assert audit == {"audit.kubernetes_requests", "audit.telemetry_targets"}
    assert {t.family for t in tables if t.schema == "audit"} == {"audit"}
    assert not NEVER_COMPACTED & {t.name for t in tables}
    assert {"audit.collections", "audit.rejected", "audit.report_versions"} <= present
    assert {"audit.documents", "audit.document_handovers"} <= NEVER_COMPACTED

    monkeypatch.setattr(
        compaction,
        "FIXED_TABLES",
        (*compaction.FIXED_TABLES, ("audit", "audit", "rejected", "rejected_at", (), ())),
    )
    with wh.writer() as con, pytest.raises(WarehouseError, match=r"audit\.rejected"):
        compactable_tables(con)


def test_a_failure_before_the_commit_keeps_the_archived_submission(loaded: Warehouse) -> None:
    wh = loaded
    archived = next((spool(wh) / "archive" / f"{day(0):%Y-%m-%d}").iterdir())
    commits: list[str] = []

    def fail_at_the_third_commit(step: str) -> None:  # the archived submissions come last
        if step == "committing":
            commits.append(step)
            if len(commits) == 3:
                raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        compact_warehouse(wh, retention(wh), now=CUTOFF, on_step=fail_at_the_third_commit)
    assert archived.is_file()
    assert [t for t, *_ in ledger(wh)] == ["core.attestation_records", "core.lineage_events"]
    with wh.writer() as con:
        assert rows(con, "archive.attestation_submission_files") == []

    result = compact_warehouse(wh, retention(wh), now=CUTOFF)
    assert [(p.table, p.rows) for p in result.partitions] == [("core.attestation_submissions", 1)]
    assert not archived.exists()
    with wh.writer() as con:
        assert con.execute("SELECT body FROM archive.attestation_submission_files").fetchall() == [
            (json.dumps({"submission": "sub-0", "tokens": ["eyJ..."]}).encode(),)
        ]


def test_later_collections_give_the_same_figures_as_without_compacting(
    loaded: Warehouse, tmp_path: Path
) -> None:
    """The guard on the merges: after compacting, a collection that resends an old event,
    reuses the first day's checkpoint and replays a first-day token gives a warehouse whose
    marts and archive views equal those of a twin never compacted."""
    twin = Warehouse(replace(loaded.settings, path=tmp_path / "twin" / "w.duckdb"))
    Path(twin.path).parent.mkdir()
    for n in range(DAYS):
        lw.load(twin, lineage_day(n))
        load_collection(
            twin,
            ATTESTATION_MODEL,
            cluster=CLUSTER,
            batches=attestation_day(n, spool(twin)),
            publish=False,
        )
    inventory(twin)
    with twin.writer() as con:
        refresh_attestation_coverage(con)
    assert compact_warehouse(loaded, retention(loaded), now=CUTOFF).partitions

    reuse = lw.run_event(
        lw.run_id("finetune"),
        "COMPLETE",
        day(DAYS - 1, 11).replace(tzinfo=lw.T0.tzinfo),
        job="finetune",
        inputs=[lw.dataset("s3://models", "llm", "ckpt-0")],
        outputs=[lw.dataset("s3://models", "llm-ft", "ft-1", datasetType=lw.model_facet())],
        run_facets={"annex_trainingRun": lw.training_facet("llm-ft", stage="FINE_TUNING")},
    )
    for wh in (loaded, twin):
        lw.load(wh, [*lineage_day(0), reuse])  # day 0 again: stored once, changes nothing
        replayed = attestation_day(0, spool(wh))
        records = replayed[1][1].to_pylist()
        for record in records:  # the same tokens from another boot, on the last day
            record.update(boot_id="boot-2", received_at=day(DAYS - 1, 11))
        submission = replayed[0][1].to_pylist()[0]
        submission.update(submission_id="sub-replay", boot_id="boot-2", received_at=day(2, 11))
        for record in records:
            record["submission_id"] = "sub-replay"
        load_collection(
            wh,
            ATTESTATION_MODEL,
            cluster=CLUSTER,
            batches=[
                (
                    "attestation_submissions",
                    pa.RecordBatch.from_pylist([submission], ATTESTATION_SUBMISSIONS),
                ),
                (
                    "attestation_records",
                    pa.RecordBatch.from_pylist(records, schema=ATTESTATION_RECORDS),
                ),
            ],
            publish=False,
        )
        with wh.writer() as con:
            refresh_attestation_coverage(con)
    after = figures(loaded, LOAD_COLUMNS)
    assert after == figures(twin, LOAD_COLUMNS)
    assert any("llm-ft" in r for r in after["marts.lineage_models"])
    with loaded.writer() as con:
        assert (
            con.execute(
                "SELECT count(*) FROM core.attestation_records WHERE 'replay' = ANY(reasons)"
            ).fetchone()[0]
            > 0
        )  # type: ignore[index]


def test_an_export_after_compacting_still_holds_every_payload_and_claim(
    loaded: Warehouse, tmp_path: Path
) -> None:
    wh = loaded
    wh.publish()
    before = export_warehouse(wh, tmp_path / "before")
    compact_warehouse(wh, retention(wh), now=CUTOFF)
    after = export_warehouse(wh, tmp_path / "after")

    def exported(root: Path, table: str) -> list[tuple]:
        files = sorted(str(p) for p in (root / "core" / table).rglob("*.parquet"))
        return duckdb.sql(
            f"SELECT * FROM read_parquet({files}, union_by_name = true, "
            "hive_partitioning = true) ORDER BY ALL"
        ).fetchall()

    for table in ("lineage_events", "attestation_records"):
        assert exported(after.dest, table) == exported(before.dest, table)
    assert {t.name: t.rows for t in after.tables} == {t.name: t.rows for t in before.tables}
