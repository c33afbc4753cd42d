"""Evidence about annex's own runs, written beside the data they judge."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import duckdb

from warehouse.migrate import utc_now


def record_check_result(
    con: duckdb.DuckDBPyConnection,
    *,
    check_name: str,
    asset: str,
    cluster: str | None,
    passed: bool,
    severity: str,
    blocking: bool,
    run_id: str | None,
    details: Mapping[str, Any],
) -> None:
    """Append one check evaluation to ``audit.check_results``, tied to the collection it saw."""
    con.execute(
        """
        INSERT INTO audit.check_results
        SELECT $checked_at, $check_name, $asset, $cluster,
               (SELECT collection_id FROM audit.collections
                WHERE $cluster IS NOT NULL AND cluster = $cluster AND status = 'succeeded'
                ORDER BY finished_at DESC LIMIT 1),
               $passed, $severity, $blocking, $run_id, CAST($details AS JSON)
        """,
        {
            "checked_at": utc_now(),
            "check_name": check_name,
            "asset": asset,
            "cluster": cluster,
            "passed": passed,
            "severity": severity,
            "blocking": blocking,
            "run_id": run_id,
            "details": json.dumps(dict(details), default=str, sort_keys=True),
        },
    )
