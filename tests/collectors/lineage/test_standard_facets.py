"""Standard OpenLineage facets checked against their own official schemas: a violation is a
finding on the accepted event, never a rejection."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from collectors.lineage.events import parse_events
from collectors.lineage.standard_facets import facet_violations, standard_facets

PRODUCER = "https://github.com/OpenLineage/OpenLineage/tree/1.23.0/integration/spark"
NOW = datetime(2026, 11, 28, tzinfo=UTC)


def facet(cls: str, version: str = "1-0-1", **fields: Any) -> dict[str, Any]:
    url = f"https://openlineage.io/spec/facets/{version}/{cls}.json#/$defs/{cls}"
    return {"_producer": PRODUCER, "_schemaURL": url, **fields}


def event(**parts: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "eventType": "COMPLETE",
        "eventTime": "2026-11-01T02:31:12Z",
        "producer": PRODUCER,
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "run": {"runId": "0192e4b0-1a3c-7f10-b2c4-6d7e8f9a0b12"},
        "job": {"namespace": "spark-prod", "name": "features"},
    }
    out.update(parts)
    return out


def violations(e: dict[str, Any]) -> dict[str, str]:
    return {v.path: v.reason for v in facet_violations(e, "RunEvent")}


def test_every_vendored_standard_facet_has_a_place_and_key():
    known = standard_facets()
    for place, key in [
        ("dataset", "dataSource"),
        ("dataset", "schema"),
        ("dataset", "columnLineage"),
        ("dataset", "symlinks"),
        ("dataset", "ownership"),
        ("dataset", "documentation"),
        ("dataset", "lifecycleStateChange"),
        ("job", "sql"),
        ("job", "jobType"),
        ("job", "sourceCode"),
        ("job", "sourceCodeLocation"),
        ("job", "documentation"),
        ("job", "ownership"),
        ("run", "parent"),
        ("run", "errorMessage"),
        ("run", "processing_engine"),
        ("run", "nominalTime"),
        ("input", "inputStatistics"),
        ("input", "dataQualityMetrics"),
        ("output", "outputStatistics"),
    ]:
        assert (place, key) in known, (place, key)
    assert known[("dataset", "schema")].facet_class == "SchemaDatasetFacet"
    assert known[("input", "dataQualityMetrics")].facet_class == (
        "DataQualityMetricsInputDatasetFacet"
    )


def test_valid_standard_facets_give_no_violation():
    e = event(
        run={
            "runId": "0192e4b0-1a3c-7f10-b2c4-6d7e8f9a0b12",
            "facets": {
                "parent": facet(
                    "ParentRunFacet",
                    "1-1-0",
                    run={"runId": "0192e4b0-1a00-7c44-a1d2-3e4f5a6b0002"},
                    job={"namespace": "spark-prod", "name": "app"},
                ),
                "errorMessage": facet(
                    "ErrorMessageRunFacet", message="boom", programmingLanguage="JAVA"
                ),
            },
        },
        outputs=[
            {
                "namespace": "s3://b",
                "name": "t",
                "facets": {"schema": facet("SchemaDatasetFacet", "1-1-1", fields=[{"name": "a"}])},
                "outputFacets": {
                    "outputStatistics": facet("OutputStatisticsOutputDatasetFacet", rowCount=3)
                },
            }
        ],
    )
    assert violations(e) == {}


def test_each_broken_facet_is_named_with_its_reason():
    e = event(
        run={
            "runId": "0192e4b0-1a3c-7f10-b2c4-6d7e8f9a0b12",
            "facets": {
                "errorMessage": facet("ErrorMessageRunFacet", message="boom"),
                "spark_properties": {"_producer": PRODUCER, "_schemaURL": "https://x.y/z", "a": 1},
            },
        },
        job={
            "namespace": "spark-prod",
            "name": "features",
            "facets": {"sql": facet("SQLJobFacet", "1-1-0", query=42)},
        },
        inputs=[
            {
                "namespace": "s3://b",
                "name": "t",
                "facets": {"dataSource": facet("DatasourceDatasetFacet", uri="not a uri")},
                "inputFacets": {
                    "inputStatistics": facet("InputStatisticsInputDatasetFacet", rowCount="3")
                },
            }
        ],
    )
    found = violations(e)
    assert set(found) == {
        "run.facets.errorMessage",
        "job.facets.sql",
        "inputs[0].facets.dataSource",
        "inputs[0].inputFacets.inputStatistics",
    }  # spark_properties has no official schema: not checked
    assert "programmingLanguage" in found["run.facets.errorMessage"]
    assert found["job.facets.sql"].startswith("not a valid SQLJobFacet 1-1-0: query: 42")
    assert '"uri"' in found["inputs[0].facets.dataSource"]


def test_a_facet_claiming_another_model_version_is_not_checked():
    e = event(
        job={
            "namespace": "spark-prod",
            "name": "features",
            "facets": {"jobType": facet("JobTypeJobFacet", "1-0-0", processingType="BATCH")},
        }
    )
    assert violations(e) == {}  # JobTypeJobFacet 2-x requires integration and processingType
    e["job"]["facets"]["jobType"] = facet("JobTypeJobFacet", "2-0-2", processingType="BATCH")
    assert set(violations(e)) == {"job.facets.jobType"}


def test_the_event_is_accepted_whole_with_a_finding():
    e = event(
        run={
            "runId": "0192e4b0-1a3c-7f10-b2c4-6d7e8f9a0b12",
            "facets": {"nominalTime": facet("NominalTimeRunFacet", nominalStartTime="yesterday")},
        }
    )
    parsed = parse_events(json.dumps([e]).encode(), content_encoding=None, now=NOW)
    assert not parsed.rejected
    (accepted,) = parsed.accepted
    assert accepted.event == e  # stored as sent
    (finding,) = accepted.findings
    assert finding.code == "facet_schema_violation"
    assert finding.path == "run.facets.nominalTime"
    assert finding.record.startswith(
        "facet_schema_violation: run.facets.nominalTime: not a valid NominalTimeRunFacet 1-0-1: "
    )
    assert "date-time" in finding.record
