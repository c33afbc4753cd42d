"""The lineage source model: OpenLineage events from ``collectors/lineage``.

The collector validates each event (``collectors.lineage.events.parse_events``) and yields one
``lineage_events`` row per accepted event with the event JSON in ``payload``
(``collectors/lineage/schema.py``). The merge (``lineage_merge.sql``) stores each event once by
its content hash and normalises the new ones in set-based SQL (JSON extraction and unnest of
inputs, outputs and facets; no Python row loop) into ``core.lineage_jobs``, ``lineage_runs``,
``lineage_datasets``, ``lineage_dataset_versions``, ``lineage_run_io`` and
``lineage_facet_heads`` (the latest facet per entity; every event's facets are read from the
stored payloads by the ``core.lineage_facets`` view, migration ``0016``; the migrations
document every column). Only what the collection touched is recomputed: the runs it brought
events for (their state from all of their stored events, by event time) and the facets it
brought (heads replaced only by a newer eventTime), so a year of events stays cheap to add to.
The merge and the refresh never read a stored payload (only the batch's staged ones): past
``[retention] lineage_days`` compaction sets old payloads to NULL (``warehouse.compaction``;
``archive.lineage_events`` reads them back), which must stay so.

Dataset versions (reference openlineage.md §3.1): the ``version`` facet's ``datasetVersion``;
else, for a run's output, the producing ``runId`` (as Marquez: each write by a run is a
version); else NULL, the dataset's unversioned node. An input without a version facet (what
dbt, Spark, Airflow and Marquez's seed data send) is read as the version of the dataset
current when its run started: the latest one written at or before that time by a run that
COMPLETEd (merge step 7; re-resolved when a later collection brings an earlier write), else the
unversioned node, a leaf. Dataset facets sent without a version (on such inputs, dataset
events, Croissant and Hugging Face card imports) apply to every version that has no facet of
that name (``core.lineage_version_facets``).

Rules of reference §4: duplicates are idempotent (same content, any key order: one row); run
state comes from the terminal event with the latest eventTime, else the latest START or
RUNNING (OTHER carries metadata only; ties in eventTime: the larger event_id, never arrival
order); ``started_at`` is the earliest START; a
COMPLETE without a START still makes the run; facets merge by eventTime, ``_deleted`` removes;
an event whose run reads and writes the same version is rejected (``reads_own_output`` in
``audit.rejected``); cycles across events are reported by ``refresh_lineage``
(``marts.lineage_cycles``), never looped on.

After a load, call ``refresh_lineage(con)`` (``warehouse.models.lineage_refresh``) to bring
the model closures, the cycle findings and so the EU summary views up to date (incrementally:
only what the new collections can change).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from warehouse.load import SourceModel
from warehouse.models.lineage_refresh import refresh_lineage

_HERE = Path(__file__).parent

LINEAGE_MODEL = SourceModel(
    source="lineage",
    staging_sql=(_HERE / "lineage_staging.sql").read_text(encoding="utf-8"),
    merge_sql=(_HERE / "lineage_merge.sql").read_text(encoding="utf-8"),
    # The collector's own threads (reading spool files, reading graphs) keep the cores busy
    # while its batches are staged, and the stage inserts of a gigabyte of payload text run
    # no faster on two DuckDB threads: 200,000 events staged in 4.8-4.9 s with one, against
    # 5.8-6.3 s with two, on 2 cores (alternating runs; the collection: 20.0-21.6 against
    # 20.1-22.8 s, the same rows).
    staging_threads=1,
)

__all__ = ["LINEAGE_MODEL", "dataset_id", "dataset_version_id", "job_id", "refresh_lineage"]


def _md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()


def dataset_version_id(namespace: str, name: str, version: str | None) -> str:
    """The warehouse's id of a dataset version (as ``lineage_merge.sql`` computes it)."""
    return _md5(f"{namespace}\x1f{name}\x1f{version if version is not None else chr(30)}")


def dataset_id(namespace: str, name: str) -> str:
    """The warehouse's id of a dataset."""
    return _md5(f"{namespace}\x1f{name}")


def job_id(namespace: str, name: str) -> str:
    """The warehouse's id of a job."""
    return _md5(f"{namespace}\x1f{name}")
