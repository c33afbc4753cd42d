"""What the Dagster catalog says about every asset, applied in one place.

Each asset gets its owner, its ``source`` and ``layer`` tags, its freshness where a check
implies one, and (for an asset that writes a warehouse table) the column schema of that table;
every relation of the warehouse (``raw``, ``core``, ``marts``, ``audit`` tables and views) is
also in the catalog as an external asset ``<schema>/<name>`` (group ``warehouse_<schema>``)
with its columns, its comments as descriptions, and a dependency on the asset that writes it.
The sources' modules declare only what they compute; ``pipelines.definitions`` maps these
specs over them.

The column schemas come from the warehouse's own ``COMMENT ON`` statements: a temp warehouse
is migrated once per process when the definitions load (about a second), the same way
``warehouse.dictionary`` builds ``docs/data-dictionary.md``, so the catalog can never describe
another schema than the migrations and ``warehouse/marts`` files build.

No ``from __future__ import annotations`` in the Dagster modules (see cluster_state/assets.py).
"""

import functools
import os
import re
import tempfile
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path

import dagster as dg

from annex.settings import WarehouseSettings
from warehouse.connection import Warehouse
from warehouse.dictionary import Relation, describe

OWNER_ENV = "ANNEX_DAGSTER_OWNER"
DEFAULT_OWNER = "team:platform"
"""Who answers for annex's assets in the catalog; a deployment names its own team (or an
e-mail address) in ``ANNEX_DAGSTER_OWNER``."""

WAREHOUSE_GROUP = "warehouse_{schema}"
"""The asset group of a warehouse relation (its key is ``<schema>/<name>``: ``core/nodes``)."""

CATALOGUED_SCHEMAS = ("raw", "core", "marts", "audit")
"""Schemas whose tables and views are external assets (``meta`` is annex's bookkeeping)."""


# -- what each asset is ------------------------------------------------------------------------

SOURCE_AND_LAYER: Mapping[str, tuple[str, str]] = {
    "warehouse_schema": ("warehouse", "core"),
    "cluster_inventory": ("kubernetes", "core"),
    "fleet_marts": ("kubernetes", "marts"),
    "published_warehouse": ("kubernetes", "marts"),
    "watched_gpu_allocations": ("kubernetes", "core"),
    "gpu_telemetry": ("telemetry", "core"),
    "gpu_utilisation": ("telemetry", "marts"),
    "gpu_benchmarks": ("gpubench", "core"),
    "attestation_records": ("attestation", "core"),
    "attestation_coverage": ("attestation", "marts"),
    "lineage_events": ("lineage", "core"),
    "lineage_models": ("lineage", "marts"),
    "training_compute": ("compute", "marts"),
    "parquet_export": ("warehouse", "export"),
    "warehouse_compaction": ("warehouse", "audit"),
}
"""The ``source`` (evidence source) and ``layer`` (raw, core, marts, report, export) tags of each
asset; a report asset (``*_report``) is ``reports``/``report``."""

PRIMARY_TABLE: Mapping[str, str] = {
    "cluster_inventory": "core.nodes",
    "fleet_marts": "marts.fleet_summary",
    "published_warehouse": "marts.collections",
    "watched_gpu_allocations": "core.watched_gpu_allocations",
    "gpu_telemetry": "core.gpu_telemetry_samples",
    "gpu_utilisation": "marts.gpu_hourly",
    "gpu_benchmarks": "core.gpu_benchmarks",
    "attestation_records": "core.attestation_records",
    "attestation_coverage": "marts.attestation_gpu_hours",
    "lineage_events": "core.lineage_events",
    "lineage_models": "marts.lineage_models",
    "training_compute": "marts.model_compute",
    "warehouse_compaction": "audit.compactions",
}
"""The table whose columns an asset's catalog entry shows (the others it writes are listed in
its ``annex/tables`` metadata and are assets of their own)."""

WRITERS: tuple[tuple[str, str], ...] = (
    # (pattern over "schema.name", the asset that writes or refreshes it), first match wins
    (r"core\.(watch_cursors|watched_.*)|marts\.watched_.*", "watched_gpu_allocations"),
    (r"raw\.kubernetes_.*|audit\.kubernetes_.*", "cluster_inventory"),
    (r"core\.(nodes|pods|jobs|events|priority_classes|gpu_allocation.*)", "cluster_inventory"),
    (r"core\.node_gpu_resources", "cluster_inventory"),
    (r"marts\.(fleet_.*|node_gpu_.*|namespace_gpu_hours|kubernetes_api_latency)", "fleet_marts"),
    (r"(core|marts)\.gpu_benchmark.*|core\.gpu_peak_reference", "gpu_benchmarks"),
    (r"core\.gpu_telemetry_.*|audit\.telemetry_.*", "gpu_telemetry"),
    (r"marts\.(gpu_.*|gpus)|audit\.utilisation_.*", "gpu_utilisation"),
    (r"core\.(attestation_.*|gpu_attested_.*)", "attestation_records"),
    (r"(marts|audit)\.attestation_.*", "attestation_coverage"),
    (r"core\.lineage_.*", "lineage_events"),
    (r"(marts|audit)\.lineage_.*", "lineage_models"),
    (r"core\.model_registry|marts\.(model_.*|training_.*|compute_.*)", "training_compute"),
    (r"audit\.compute_.*", "training_compute"),
    (r"(audit|marts)\.(collections|rejected.*|check_results)", "published_warehouse"),
    (r"audit\.(report_versions|documents)", "fleet_report"),
    (r"audit\.compactions", "warehouse_compaction"),
)
"""Which asset writes each warehouse relation. A relation no pattern names (a new table) is
shown downstream of ``warehouse_schema``, whose migrations create it."""

FRESHNESS: Mapping[str, dg.FreshnessPolicy] = {
    # cluster_state.checks.MAX_COLLECTION_AGE and gpu_evidence.checks.MAX_SAMPLE_AGE: the
    # hourly schedules keep both well inside two hours; the checks warn past it
    "cluster_inventory": dg.FreshnessPolicy.time_window(
        fail_window=timedelta(hours=2), warn_window=timedelta(minutes=90)
    ),
    "gpu_telemetry": dg.FreshnessPolicy.time_window(
        fail_window=timedelta(hours=2), warn_window=timedelta(minutes=90)
    ),
}
"""Freshness the checks imply; the report assets' is their monthly schedule's."""

REPORT_FRESHNESS = dg.FreshnessPolicy.cron(
    deadline_cron="0 12 1 * *", lower_bound_delta=timedelta(hours=6)
)
"""A month's reports are rendered on the 1st at 06:00 UTC (``monthly_reports``): late at noon."""


def owner() -> str:
    return os.environ.get(OWNER_ENV, "").strip() or DEFAULT_OWNER


def source_and_layer(asset_name: str) -> tuple[str, str]:
    """The ``source`` and ``layer`` tags of an asset of this code location."""
    if asset_name.endswith("_report"):
        return "reports", "report"
    return SOURCE_AND_LAYER[asset_name]


def writer_of(relation: str) -> str:
    """The asset that writes ``schema.name`` (``warehouse_schema`` when none is named)."""
    for pattern, asset in WRITERS:
        if re.fullmatch(pattern, relation):
            return asset
    return "warehouse_schema"


# -- the warehouse's own description -----------------------------------------------------------


@functools.cache
def warehouse_relations() -> tuple[Relation, ...]:
    """Every table and view of the catalogued schemas, with comments, from a migrated temp
    warehouse (once per process)."""
    with tempfile.TemporaryDirectory(prefix="annex-catalog-") as tmp:
        wh = Warehouse(WarehouseSettings(path=Path(tmp) / "catalog.duckdb"))
        with wh.writer() as con:
            relations = describe(con)
    return tuple(
        r for r in relations if r.schema in CATALOGUED_SCHEMAS and r.kind in ("table", "view")
    )


def column_schema(relation: Relation) -> dg.TableSchema:
    return dg.TableSchema(
        columns=[
            dg.TableColumn(name=c.name, type=c.type, description=_text(c.comment))
            for c in relation.columns
        ]
    )


def relation_key(relation: Relation) -> dg.AssetKey:
    return dg.AssetKey([relation.schema, relation.name])


def _text(comment: str | None) -> str | None:
    text = " ".join((comment or "").split())
    return text or None


def _qualified(relation: Relation) -> str:
    return f"{relation.schema}.{relation.name}"


# -- the specs ---------------------------------------------------------------------------------


def relation_specs() -> list[dg.AssetSpec]:
    """One external asset per warehouse table or view, downstream of the asset writing it."""
    specs = []
    for relation in warehouse_relations():
        qualified = _qualified(relation)
        writer = writer_of(qualified)
        source = source_and_layer(writer)[0]
        specs.append(
            dg.AssetSpec(
                relation_key(relation),
                deps=[dg.AssetKey(writer)],
                description=_text(relation.comment) or f"{relation.kind} {qualified}",
                group_name=WAREHOUSE_GROUP.format(schema=relation.schema),
                kinds={"duckdb", relation.kind},
                owners=[owner()],
                tags={"source": source, "layer": relation.schema},
                metadata={
                    "dagster/column_schema": column_schema(relation),
                    "dagster/table_name": f"annex.{qualified}",
                    "annex/written_by": writer,
                },
            )
        )
    return specs


def describe_asset(spec: dg.AssetSpec) -> dg.AssetSpec:
    """``spec`` with its owner, tags, freshness and (for a table asset) column schema."""
    name = spec.key.to_user_string()
    source, layer = source_and_layer(name)
    metadata: dict[str, object] = {}
    primary = PRIMARY_TABLE.get(name)
    if primary is not None:
        by_name = {_qualified(r): r for r in warehouse_relations()}
        metadata["dagster/column_schema"] = column_schema(by_name[primary])
        metadata["dagster/table_name"] = f"annex.{primary}"
        written = sorted(q for q in by_name if writer_of(q) == name)
        metadata["annex/tables"] = dg.MetadataValue.md(
            "\n".join(f"- `{q}`: {_text(by_name[q].comment) or ''}" for q in written)
        )
    freshness = REPORT_FRESHNESS if layer == "report" else FRESHNESS.get(name)
    spec = spec.replace_attributes(owners=[owner()], freshness_policy=freshness)
    return spec.merge_attributes(tags={"source": source, "layer": layer}, metadata=metadata)


def catalogued(defs: dg.Definitions) -> dg.Definitions:
    """``defs`` with every asset described (``describe_asset``) and the warehouse's relations
    added as external assets."""
    assets = dg.map_asset_specs(describe_asset, list(defs.assets or []))
    return dg.Definitions(
        assets=[*assets, *relation_specs()],
        asset_checks=defs.asset_checks,
        jobs=defs.jobs,
        schedules=defs.schedules,
        sensors=defs.sensors,
        resources=defs.resources,
    )
