"""What a report is: its parameters, the evidence queries it reads, and its template.

Adding a report is one module that builds a ``ReportDefinition`` plus one template: the
definition lists the ``EvidenceQuery``s (each a SQL text over ``marts``, run with named
parameters such as ``$start``; its result is shown and attached as ``<name>.csv``), and
``build`` turns their results into the template's context (figures, findings, charts, gaps).
Everything a report shows comes from those queries, so the attachments and the manifest are
exactly the evidence the pages rest on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from reports.period import Period

if TYPE_CHECKING:
    import pyarrow as pa

    from annex.model_registry import ModelEntry

_PARAMETER = re.compile(r"\$([a-z_]+)")


@dataclass(frozen=True)
class EvidenceQuery:
    """One query of a report; its result is attached to the PDF as ``<name>.csv``."""

    name: str
    description: str
    sql: str
    editions: tuple[str, ...] = ()
    """The editions of an edition report that read and attach it; empty: every edition (a
    downstream edition must not carry compute or energy, so those queries name the others)."""
    public_attachment: bool = False
    """A public report (``ReportDefinition.public``) attaches this query's CSV to its PDF: its
    columns are only what the public may read (e.g. the full top-domain list of the training
    summary, template 2.3). Every query, public or not, is in the report's evidence bundle."""

    def parameter_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(_PARAMETER.findall(self.sql)))


@dataclass(frozen=True)
class Section:
    """A numbered section: the table of contents lists it with its page number."""

    anchor: str
    title: str


@dataclass(frozen=True)
class ReportRequest:
    """What a report is asked for. Period reports need ``period``; the EU AI Act reports
    will name a ``model`` (and an edition)."""

    period: Period | None = None
    model: str | None = None
    edition: str | None = None
    """For a report with editions (``ReportDefinition.editions``): which audience it is for."""

    def parameters(self) -> dict[str, str]:
        """The parameters as the manifest records them."""
        out: dict[str, str] = {}
        if self.period is not None:
            out |= {
                "period": self.period.label,
                "from": self.period.start.isoformat(),
                "to": self.period.last_day.isoformat(),
            }
        if self.model is not None:
            out["model"] = self.model
        if self.edition is not None:
            out["edition"] = self.edition
        return out


@dataclass(frozen=True)
class QueryResult:
    """An evidence query's result: the Arrow table, its CSV bytes, and the parameters used."""

    query: EvidenceQuery
    parameters: Mapping[str, Any]
    table: pa.Table
    csv: bytes
    sha256: str

    @property
    def file_name(self) -> str:
        return f"{self.query.name}.csv"

    @property
    def rows(self) -> int:
        return self.table.num_rows

    def records(self) -> list[dict[str, Any]]:
        return self.table.to_pylist()


@dataclass(frozen=True)
class Evidence:
    """Everything one report run read: results by query name, the cut-off, the period."""

    results: Mapping[str, QueryResult]
    request: ReportRequest
    cutoff: datetime | None
    """The end of the latest collection the report could use (UTC); None when there is none."""
    model: ModelEntry | None = None
    """The requested model's metadata file (human-authored fields); None when the registry has
    no file for it (a per-model report then shows those fields as gaps)."""

    def records(self, name: str) -> list[dict[str, Any]]:
        return self.results[name].records()

    def result(self, name: str) -> QueryResult:
        return self.results[name]


Build = Callable[[Evidence], dict[str, Any]]


@dataclass(frozen=True)
class ReportDefinition:
    name: str
    title: str
    template: str
    summary: str
    """One sentence for the CLI's help and the cover."""
    queries: tuple[EvidenceQuery, ...]
    sections: tuple[Section, ...]
    build: Build
    needs_period: bool = True
    needs_model: bool = False
    """A per-model report: the request names a model (``--model``), whose metadata file (the
    model registry) is read with the evidence."""
    collection_sources: tuple[str, ...] = field(default=())
    """Sources whose collections the report rests on (listed in the manifest)."""
    editions: tuple[str, ...] = field(default=())
    """Audiences one fact base is rendered for (``--edition``), the default first; empty: one
    edition. Each edition reads only the queries meant for it (``EvidenceQuery.editions``)."""

    edition_titles: Mapping[str, str] = field(default_factory=dict)
    """Each edition's name for a reader (the cover's "Edition"); the code where none is given."""

    metadata_file_editions: tuple[str, ...] = field(default=())
    """Editions that attach the model's metadata file (empty: every edition). The file also
    holds compute, plan and alert settings, which a downstream edition must not carry."""

    public: bool = False
    """A public document (the training-content summary, Art 53(1)(d)): its PDF attaches only
    the queries marked ``public_attachment``; the manifest, every query's CSV with its SQL and
    hash, and the model's metadata file go into a separate, non-public evidence bundle, whose
    SHA-256 the document names (reference eu-ai-act.md §3, "what the public summary must not
    carry"; Explanatory Notice paras 19 and 22)."""

    def public_queries(self, edition: str | None) -> tuple[EvidenceQuery, ...]:
        """The queries whose CSV a public edition may attach."""
        return tuple(q for q in self.queries_for(edition) if q.public_attachment)

    def queries_for(self, edition: str | None) -> tuple[EvidenceQuery, ...]:
        """The queries an edition reads (all of them for a report without editions)."""
        return tuple(q for q in self.queries if not q.editions or edition in q.editions)


def period_parameters(period: Period, today: date) -> dict[str, Any]:
    """Named SQL parameters of a period report.

    ``coverage_end`` is the end of the period, or the day after ``today`` for a period still
    running: coverage is judged up to now, not on days that have not happened yet. A closed
    period is judged to its end, so collections that stopped early show as missing days.
    """
    previous = period.previous()
    return {
        "start": period.start,
        "end": period.end,
        "previous_start": previous.start,
        "start_ts": period.start_time(),
        "end_ts": period.end_time(),
        "coverage_end": max(period.start, min(period.end, today + timedelta(days=1))),
    }


def json_value(value: Any) -> Any:
    """A query parameter as the manifest writes it."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value
