"""Shared builders for the lineage warehouse tests: OpenLineage events as dicts, turned into
LINEAGE_EVENTS batches (with their graphs: LINEAGE_ITEMS, LINEAGE_FACETS) the way the collector
yields them, and loaded with LINEAGE_MODEL."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from collectors.lineage.events import event_id, parse_event_time
from collectors.lineage.graph import graph_tables
from collectors.lineage.schema import LINEAGE_EVENTS
from warehouse import Warehouse, load_collection
from warehouse.models.lineage import LINEAGE_MODEL, dataset_version_id, refresh_lineage

PRODUCER = "https://annex.dev/tests/lineage"
RUN_EVENT = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
DATASET_EVENT = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent"
T0 = datetime(2025, 6, 1, 8, 0, tzinfo=UTC)


def facet(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "_producer": PRODUCER,
        "_schemaURL": f"https://annex.dev/spec/facets/1-0-0/{name}.json#/$defs/{name}",
        **fields,
    }


def version_facet(version: str) -> dict[str, Any]:
    return facet("DatasetVersionDatasetFacet", datasetVersion=version)


def model_facet() -> dict[str, Any]:
    return facet("DatasetTypeDatasetFacet", datasetType="MODEL")


def dataset(
    namespace: str, name: str, version: str | None = None, **facets: dict[str, Any]
) -> dict[str, Any]:
    all_facets = dict(facets)
    if version is not None:
        all_facets["version"] = version_facet(version)
    return {"namespace": namespace, "name": name, "facets": all_facets}


def run_id(key: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"annex-test-run/{key}"))


def run_event(
    run: str,
    event_type: str | None,
    when: datetime,
    *,
    job: str = "job",
    inputs: list[dict] | None = None,
    outputs: list[dict] | None = None,
    run_facets: dict[str, Any] | None = None,
    namespace: str = "test-ns",
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "eventTime": when.isoformat().replace("+00:00", "Z"),
        "producer": PRODUCER,
        "schemaURL": RUN_EVENT,
        "run": {"runId": run, "facets": run_facets or {}},
        "job": {"namespace": namespace, "name": job, "facets": {}},
        "inputs": inputs or [],
        "outputs": outputs or [],
    }
    if event_type is not None:
        event["eventType"] = event_type
    return event


def dataset_event(item: dict[str, Any], when: datetime) -> dict[str, Any]:
    return {
        "eventTime": when.isoformat().replace("+00:00", "Z"),
        "producer": PRODUCER,
        "schemaURL": DATASET_EVENT,
        "dataset": item,
    }


def training_facet(model: str, stage: str = "PRETRAINING", k8s: tuple | None = None) -> dict:
    fields: dict[str, Any] = {"stage": stage, "modelName": model}
    if k8s is not None:
        cluster, namespace, job_name = k8s
        fields["kubernetes"] = {"cluster": cluster, "namespace": namespace, "jobName": job_name}
    return facet("AnnexTrainingRunRunFacet", **fields)


def event_row(event: dict[str, Any], *, received: datetime | None = None, text: str | None = None):
    """One LINEAGE_EVENTS row, as the collector makes it (``text``: the payload as sent)."""
    moment = parse_event_time(event["eventTime"])
    assert moment is not None
    kind = event["schemaURL"].rsplit("/", 1)[-1]
    job = event.get("job") or {}
    run = event.get("run") or {}
    payload = text if text is not None else json.dumps(event)
    return {
        "event_id": event_id(event),
        "received_at": (received or datetime.now(UTC)).astimezone(UTC).replace(tzinfo=None),
        "event_time": moment.astimezone(UTC).replace(tzinfo=None),
        "event_time_offset_minutes": int(moment.utcoffset().total_seconds() // 60),  # type: ignore[union-attr]
        "event_kind": kind,
        "event_type": event.get("eventType"),
        "run_id": run.get("runId"),
        "job_namespace": job.get("namespace"),
        "job_name": job.get("name"),
        "producer": event["producer"],
        "schema_url": event["schemaURL"],
        "payload": payload,
        "findings": [],
        "source_locator": "test",
    }


GRAPHS = True
"""Whether the batches carry the events' graphs as the collector reads them; a test that sets
it False (monkeypatch) has the warehouse parse every payload, as where no C compiler built the
reader."""


def row_batches(rows: list[dict], first_index: int = 0) -> list[tuple[str, pa.RecordBatch]]:
    """LINEAGE_EVENTS rows as the collector yields them: numbered, with their graphs."""
    table = pa.Table.from_pylist(rows, schema=LINEAGE_EVENTS)
    if not GRAPHS:
        index = pa.array(range(first_index, first_index + len(rows)), pa.int64())
        table = table.set_column(table.schema.get_field_index("event_index"), "event_index", index)
        return [("lineage_events", b) for b in table.to_batches()]
    events, items, facets = graph_tables(table, first_index)
    return [
        (name, batch)
        for name, part in (
            ("lineage_events", events),
            ("lineage_items", items),
            ("lineage_facets", facets),
        )
        for batch in part.to_batches()
    ]


def batches(
    events: Iterable[dict[str, Any]], *, batch_size: int = 1000
) -> Iterator[tuple[str, pa.RecordBatch]]:
    rows: list[dict] = []
    numbered = 0
    for event in events:
        rows.append(event_row(event))
        if len(rows) >= batch_size:
            yield from row_batches(rows, numbered)
            numbered += len(rows)
            rows = []
    if rows:
        yield from row_batches(rows, numbered)


def load_rows(wh: Warehouse, rows: list[dict]):
    return load_collection(wh, LINEAGE_MODEL, cluster="*", batches=row_batches(rows), publish=False)


def load(wh: Warehouse, events: Iterable[dict[str, Any]], *, refresh: bool = True, **kw: Any):
    result = load_collection(
        wh, LINEAGE_MODEL, cluster="*", batches=batches(events, **kw), publish=False
    )
    if refresh:
        with wh.writer() as con:
            refresh_lineage(con)
    return result


def query(wh: Warehouse, sql: str, params: list | None = None) -> list[tuple]:
    with duckdb.connect(str(wh.path), read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def dv(namespace: str, name: str, version: str | None) -> str:
    return dataset_version_id(namespace, name, version)


def minutes(n: float) -> timedelta:
    return timedelta(minutes=n)


def path_of(wh: Warehouse) -> Path:
    return Path(wh.path)
