"""Running a report's queries and describing what they read: CSV bytes, hashes, the manifest.

The CSV of each query result is what the PDF embeds, so its SHA-256 in the manifest proves the
attachment unchanged; the query text and its parameters let anyone rerun it against the same
warehouse and get the same bytes (``encode_csv`` of the result). The manifest records the
collections the report rests on, the annex version and when the report was made.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.csv as pa_csv

from annex import __version__
from reports.definition import (
    Evidence,
    EvidenceQuery,
    QueryResult,
    ReportDefinition,
    json_value,
)
from reports.errors import ReportError

COLLECTIONS = EvidenceQuery(
    name="collections",
    description="The collections (marts.collections) of the report's sources that ran in the "
    "period: the evidence the report rests on, failed ones included.",
    sql="""
        SELECT collection_id, source, cluster, status, started_at, finished_at,
               rejected_count, error, annex_version
        FROM marts.collections
        WHERE list_contains($sources, source)
          AND started_at < $end_ts
          AND coalesce(finished_at, started_at) >= $start_ts
        ORDER BY started_at, collection_id
    """,
)


COVERAGE_SOURCES = EvidenceQuery(
    "coverage_sources",
    "Per evidence source: collections in the period, succeeded and failed, the last "
    "success, the records rejected and the first error (marts.collections).",
    """
    SELECT s.source,
           count(c.collection_id) AS collections,
           count(c.collection_id) FILTER (WHERE c.status = 'succeeded') AS succeeded,
           count(c.collection_id) FILTER (WHERE c.status <> 'succeeded') AS failed,
           max(c.finished_at) FILTER (WHERE c.status = 'succeeded') AS last_succeeded_at,
           CAST(coalesce(sum(c.rejected_count), 0) AS BIGINT) AS rejected_records,
           min(c.error) FILTER (WHERE c.status <> 'succeeded') AS first_error
    FROM (SELECT unnest($sources) AS source) s
    LEFT JOIN marts.collections c
      ON c.source = s.source AND c.started_at < $end_ts
     AND coalesce(c.finished_at, c.started_at) >= $start_ts
    GROUP BY s.source
    ORDER BY s.source
    """,
)
"""A period report's first evidence: which sources were collected, how often, how well (the
report's ``$sources`` parameter names them). What was not collected is shown, never read as
clean."""


CUTOFF_SQL = """
    SELECT max(finished_at) FROM marts.collections
    WHERE status = 'succeeded' AND finished_at < ? AND list_contains(?, source)
"""


QUERY_SETTINGS = {"threads": 1}
"""DuckDB settings the queries run under: one thread, so floating-point sums add in one order
and the same warehouse gives the same bytes (parallel aggregation does not)."""


def prepare_connection(con: duckdb.DuckDBPyConnection) -> None:
    """Apply ``QUERY_SETTINGS`` (to rerun a manifest's query, do the same)."""
    for name, value in QUERY_SETTINGS.items():
        con.execute(f"SET {name} = {int(value)}")


def encode_csv(table: pa.Table) -> bytes:
    """A query result as CSV (header, RFC 4180 quoting, ISO timestamps): the attachment."""
    sink = io.BytesIO()
    pa_csv.write_csv(table, sink, pa_csv.WriteOptions(include_header=True))
    return sink.getvalue()


def run_query(
    con: duckdb.DuckDBPyConnection, query: EvidenceQuery, parameters: Mapping[str, Any]
) -> QueryResult:
    """Run one evidence query with the named parameters its text uses."""
    used = {name: parameters[name] for name in query.parameter_names()}
    try:
        table = con.sql(query.sql, params=used).to_arrow_table()
    except duckdb.Error as exc:
        raise ReportError(
            f"report query {query.name!r} failed: {exc}",
            hint="if the warehouse predates this annex version, run `annex warehouse migrate` and "
            "`annex warehouse publish`; otherwise rerun with --debug and report it",
        ) from exc
    csv = encode_csv(table)
    return QueryResult(query, used, table, csv, hashlib.sha256(csv).hexdigest())


def data_cutoff(
    con: duckdb.DuckDBPyConnection, sources: Sequence[str], before: datetime
) -> datetime | None:
    """The end of the latest successful collection of ``sources`` before ``before``."""
    rows = con.execute(CUTOFF_SQL, [before, list(sources)]).fetchall()
    return rows[0][0] if rows else None


def evidence_digest(evidence: Evidence) -> str:
    """SHA-256 over the parameters and every attached table's hash: the report's identity.

    Deterministic (no generation time in it): the same warehouse and parameters give the same
    digest, which the cover shows and which becomes the PDF's identifier.
    """
    body = {
        "parameters": evidence.request.parameters(),
        "tables": {name: result.sha256 for name, result in sorted(evidence.results.items())},
    }
    if evidence.model is not None:  # the human-authored fields a per-model report shows
        body["model_metadata"] = hashlib.sha256(evidence.model.path.read_bytes()).hexdigest()
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def build_manifest(
    definition: ReportDefinition,
    evidence: Evidence,
    *,
    generated_at: datetime,
    renderer: str,
) -> dict[str, Any]:
    """The ``manifest.json`` attachment: what the report read and how to check it."""
    collections = [
        {key: json_value(value) for key, value in row.items()}
        for row in evidence.records(COLLECTIONS.name)
    ]
    return {
        "report": definition.name,
        "title": definition.title,
        "parameters": evidence.request.parameters(),
        "annex_version": __version__,
        "renderer": renderer,
        "generated_at": generated_at.isoformat(),
        "data_cutoff": json_value(evidence.cutoff),
        "evidence_digest": evidence_digest(evidence),
        "collections": collections,
        "tables": [
            {
                "file": result.file_name,
                "media_type": "text/csv",
                "description": result.query.description,
                "rows": result.rows,
                "sha256": result.sha256,
                "query": _dedent(result.query.sql),
                "query_parameters": {k: json_value(v) for k, v in result.parameters.items()},
            }
            for result in evidence.results.values()
        ],
        "duckdb_settings": QUERY_SETTINGS,
        "varies_between_runs": ["generated_at"],
    }


def manifest_bytes(manifest: Mapping[str, Any]) -> bytes:
    return (json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


BUNDLE_SUFFIX = ".evidence.zip"
VARIES_BETWEEN_RUNS = ("generated_at", "varies_between_runs")
"""The manifest's keys that change between runs on the same evidence: left out of the evidence
bundle, so the same evidence gives the same bundle and the hash a document names stays true."""
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def bundle_manifest(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest as the evidence bundle holds it: without the generation time."""
    return {key: value for key, value in manifest.items() if key not in VARIES_BETWEEN_RUNS}


def evidence_bundle(files: Sequence[tuple[str, bytes]]) -> bytes:
    """A report's non-public evidence (manifest, every query's CSV, the model metadata file) as
    one zip file: names sorted, fixed dates and permissions, so the same files give the same
    bytes and a public document can name the bundle by its SHA-256."""
    sink = io.BytesIO()
    with zipfile.ZipFile(sink, "w") as bundle:
        for name, data in sorted(files):
            info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            bundle.writestr(info, data)
    return sink.getvalue()


def _dedent(sql: str) -> str:
    lines = [line for line in sql.strip("\n").splitlines()]
    indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return "\n".join(line[indent:] for line in lines)
