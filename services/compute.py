"""Training compute, time and energy per model, and the Article 51 thresholds: the refresh
that the CLI (``annex compute``, in ``annex.cli.compute``) and the Dagster assets share, and
the model's report as the marts hold it.

The figures are computed once, by ``warehouse.models.compute.refresh_compute`` into ``marts``;
``annex compute --model NAME`` refreshes them (unless ``--no-refresh``), publishes the analysts'
copy and prints that copy's rows, so what it prints is what analysts read.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from annex.errors import ConfigError
from annex.settings import Settings

if TYPE_CHECKING:
    from warehouse import Warehouse
    from warehouse.connection import OnWait


class PeakTable:
    """annex's built-in dense peaks (probes/gpubench/peaks.py) as the refresh's catalogue."""

    def sku_for(self, product: str | None) -> str | None:
        from probes.gpubench.peaks import sku_for

        return sku_for(product)

    def peak(self, sku: str, dtype: str) -> tuple[float | None, float | None]:
        from probes.gpubench.peaks import PEAKS

        for peak in PEAKS:
            if peak.gpu_sku == sku:
                return peak.tflops_dense.get(dtype), peak.tdp_watts
        return None, None


def refresh_compute_marts(
    settings: Settings,
    *,
    wh: Warehouse | None = None,
    on_wait: OnWait | None = None,
    now: datetime | None = None,
    publish: bool = True,
    full: bool = False,
) -> dict[str, int]:
    """Validate the model registry, refresh the compute marts in one transaction (the runs whose
    evidence changed, or with ``full`` every run), publish."""
    from annex.model_registry import load_registry, registry_rows
    from warehouse import Warehouse
    from warehouse.models.compute import refresh_compute

    registry = load_registry(settings.models.dir)
    wh = wh or Warehouse(settings.warehouse)
    with wh.writer(on_wait) as con:
        counts = refresh_compute(
            con,
            settings.compute,
            registry_rows(registry),
            PeakTable(),
            now=now or settings.compute.as_of,
            full=full,
        )
    if publish:
        wh.publish(on_wait)
    return counts


def model_report(con: Any, model: str) -> dict[str, Any]:
    """Everything the marts say about ``model``: its row of ``marts.model_compute``, its
    thresholds, runs and GPU-hours by GPU model. ``ConfigError`` when it has no row."""
    found = _rows(con, "SELECT * FROM marts.model_compute WHERE model_name = ?", [model])
    if not found:
        names = con.execute("SELECT model_name FROM marts.model_compute ORDER BY 1").fetchall()
        known = [name for (name,) in names]
        raise ConfigError(
            f"no compute figures for model {model!r} (models: {', '.join(known) or 'none'})",
            hint="check the name (annex_trainingRun.modelName or the registry file's name), "
            "or run `annex compute` without --no-refresh after new collections",
        )
    return {
        "model": found[0],
        "thresholds": _rows(
            con,
            "SELECT * FROM marts.model_compute_thresholds WHERE model_name = ? "
            "ORDER BY threshold_flop",
            [model],
        ),
        "gpu_hours_by_model": _rows(
            con,
            "SELECT * FROM marts.model_gpu_hours WHERE model_name = ? ORDER BY gfd_product",
            [model],
        ),
        "runs": _rows(
            con,
            "SELECT * FROM marts.training_run_compute WHERE model_name = ? "
            "ORDER BY started_at, run_id",
            [model],
        ),
    }


def compute_overview(settings: Settings) -> list[tuple[Any, ...]]:
    """One row per model, the largest cumulative compute first: its name, cumulative FLOP, the
    compute methods, MWh (rounded) and its Article 51 standing as one line (``annex demo``)."""
    from warehouse import Warehouse

    with Warehouse(settings.warehouse).reader() as con:
        rows = con.execute(
            """
            SELECT m.model_name, m.cumulative_compute_flop,
                   array_to_string(m.compute_methods, ' + '), m.energy_mwh_rounded,
                   string_agg(
                       CASE t.threshold WHEN 'gpai' THEN '10^23' WHEN 'systemic_risk' THEN '10^25'
                            ELSE 'modification' END
                       || ' ' || t.status
                       || coalesce(' ' || strftime(t.crossed_at, '%Y-%m-%d'), '')
                       || coalesce(' (projected ' || strftime(t.projected_crossing_at, '%Y-%m-%d')
                                   || ')', '')
                       || coalesce(', notify by ' || strftime(t.notification_due, '%Y-%m-%d'), ''),
                       '; ' ORDER BY t.threshold_flop)
                       FILTER (WHERE t.applies)
            FROM marts.model_compute AS m
            LEFT JOIN marts.model_compute_thresholds AS t USING (model_name)
            GROUP BY ALL
            ORDER BY m.cumulative_compute_flop DESC NULLS LAST, m.model_name
            """
        ).fetchall()
    return rows


def _rows(con: Any, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    cursor = con.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
