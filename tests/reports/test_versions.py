"""Document versions (issue 40, build 8): the same content is the same version, byte for byte;
new content is the next version, kept content-addressed and read-only, recorded in
audit.report_versions, and says what changed since the version before it."""

from __future__ import annotations

import stat
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pytest

from annex.settings import WarehouseSettings
from reports.definition import Evidence, EvidenceQuery, QueryResult, ReportRequest
from reports.evidence import COLLECTIONS, encode_csv
from reports.generate import generate_report
from reports.period import month_period
from reports.versions import changes, content_fields, history, render_versioned
from tests.helpers.report_pdf import pdf_text
from tests.helpers.report_scenario import build_scenario
from warehouse import Warehouse
from warehouse.models.attestation_coverage import refresh_attestation_coverage

WHEN = datetime(2026, 11, 28, 12, 0)


def result(name: str, rows: list[dict]) -> QueryResult:
    table = pa.Table.from_pylist(rows)
    csv = encode_csv(table)
    return QueryResult(EvidenceQuery(name, name, "SELECT 1"), {}, table, csv, f"sha-{name}")


def evidence(compute: float, collections: int = 1) -> Evidence:
    results = {
        "collections": result(
            COLLECTIONS.name, [{"collection_id": f"c{i}"} for i in range(collections)]
        ),
        "model": result("model", [{"model_name": "lm", "compute_flop": compute}]),
    }
    return Evidence(results, ReportRequest(model="lm"), datetime(2026, 11, 27, 9))


class Renderer:
    def __init__(self) -> None:
        self.contexts: list[dict] = []

    def __call__(self, context: dict) -> bytes:
        self.contexts.append(context)
        return f"%PDF version {context['number']} rendered {len(self.contexts)}".encode()


@pytest.fixture
def wh(tmp_path: Path) -> Warehouse:
    return Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb", lock_timeout_seconds=5))


def test_fields_leave_out_the_collections_and_key_rows_by_their_first_column() -> None:
    fields = content_fields(evidence(7.2e24, collections=3))
    assert fields == {"model / lm / compute_flop": "7.2e+24", "model / rows": "1"}
    (change,) = changes(fields, content_fields(evidence(7.3e24)))
    assert (change.field, change.before, change.after) == (
        "model / lm / compute_flop",
        "7.2e+24",
        "7.3e+24",
    )


def test_unchanged_content_is_the_same_version_and_new_content_the_next(
    wh: Warehouse, tmp_path: Path
) -> None:
    reports = tmp_path / "reports"
    render = Renderer()
    first, v1 = render_versioned(
        wh, reports, "training_compute/lm", evidence(7.2e24), render, rendered_at=WHEN
    )
    assert v1.version == 1 and render.contexts[0]["earlier"] == []
    # more collections, same figures: the same version, the stored bytes, no new rendering
    again, same = render_versioned(
        wh, reports, "training_compute/lm", evidence(7.2e24, 5), render, rendered_at=WHEN
    )
    assert again == first and same == v1 and len(render.contexts) == 1
    kept = reports / v1.stored_path
    assert kept.read_bytes() == first and not kept.stat().st_mode & stat.S_IWUSR
    assert v1.stored_path.startswith("versions/training_compute/lm/")
    # a changed figure: version 2, which lists version 1 with its hash and what changed
    second, v2 = render_versioned(
        wh, reports, "training_compute/lm", evidence(7.3e24), render, rendered_at=WHEN
    )
    assert v2.version == 2 and second != first
    context = render.contexts[-1]
    assert context["previous"] == 1
    assert context["earlier"] == [{"number": 1, "updated": "2026-11-27", "sha256": v1.pdf_sha256}]
    assert context["changes"] == [
        {"field": "model · lm · compute (FLOP)", "before": "7.2e+24", "after": "7.3e+24"}
    ]
    with wh.writer() as con:
        assert [v.version for v in history(con, "training_compute/lm")] == [1, 2]
    assert (reports / v1.stored_path).read_bytes() == first  # the old version is kept


def test_content_that_returns_to_an_earlier_state_is_a_new_version(
    wh: Warehouse, tmp_path: Path
) -> None:
    render = Renderer()
    for compute in (1.0, 2.0, 1.0):
        _, version = render_versioned(
            wh, tmp_path, "d/x", evidence(compute), render, rendered_at=WHEN
        )
    assert version.version == 3


@pytest.mark.slow
def test_a_rendered_report_is_kept_and_a_new_one_says_what_changed(tmp_path: Path) -> None:
    """Through generate_report: the same warehouse renders the same version byte for byte;
    changed evidence renders version 2, whose first page after the cover lists the change and
    whose appendix lists version 1 with its hash."""
    wh = build_scenario(tmp_path / "scenario")
    october = ReportRequest(period=month_period("2026-10"))
    out = tmp_path / "reports"
    first = generate_report(wh, "attestation", october, out, generated_at=WHEN)
    v1_bytes = first.path.read_bytes()
    assert first.version is not None and first.version.version == 1
    assert "Version 1, last updated" in pdf_text(first.path)
    again = generate_report(wh, "attestation", october, out, generated_at=datetime(2027, 1, 1))
    assert again.version == first.version and again.path.read_bytes() == v1_bytes
    with wh.writer() as con:
        con.execute("DELETE FROM core.attestation_records WHERE rowid = (SELECT min(rowid) "
                    "FROM core.attestation_records)")  # fmt: skip
        refresh_attestation_coverage(con, since=datetime(2026, 10, 1))
    wh.publish()
    second = generate_report(wh, "attestation", october, out, generated_at=WHEN)
    assert second.version is not None and second.version.version == 2
    text = pdf_text(second.path)
    assert "What changed since version 1" in text and "Version 2, last updated" in text
    assert first.version.pdf_sha256 in text.replace(" ", "")
    kept = sorted((out / "versions" / "attestation").rglob("*.pdf"))
    assert len(kept) == 2 and (out / first.version.stored_path).read_bytes() == v1_bytes
