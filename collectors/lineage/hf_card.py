"""Hugging Face dataset card (README.md YAML front matter) -> one OpenLineage DatasetEvent.

``import_hf_card(readme, repo_id=..., revision=..., producer=..., event_time=...)`` returns
``Imported(event, findings)``. ``hf_card_event(...)`` returns only the event. The event is a
2-0-2 ``DatasetEvent`` for the dataset ``hf://datasets`` + ``{org}/{repo}`` (reference §1.4).
Its facets:

* ``annex_licensing``: the card's ``license``, mapped as described below. ``hfLicenseId``
  keeps the card's own id.
* ``annex_source``: ``sourceCategory`` as the caller declares it (default ``PUBLIC_DATASET``,
  EU template 2.1). ``description`` records the card's ``source_datasets``.
* ``annex_content``: ``modality``, taken from the ``dataset_info`` feature dtypes (image,
  audio, video or text). ``languages`` from ``language``. ``size`` from ``dataset_info``:
  ``dataset_size`` gives bytes and the splits' ``num_examples`` give items. The facet is left
  out, with a finding, when the modality is unknown, because the schema requires it.
* ``version``: ``datasetVersion`` is the revision (a commit sha), when given.
* ``documentation``: the card's Markdown body, or its ``pretty_name``.

Facts that are missing are left out, never guessed. ``size_categories`` is a range such as
``10K<n<100K``, not a count, so it becomes a finding (it is reported, not stored).

Licence mapping (reference §2.4), shared with ``collectors.lineage.croissant``:

* A case-insensitive match against the SPDX License List gives the canonical SPDX id:
  ``apache-2.0`` -> ``Apache-2.0``, ``cc-by-4.0`` -> ``CC-BY-4.0``. If the id is deprecated
  in SPDX (``gpl-3.0``, ``agpl-3.0``, ...), the mapping keeps it and adds a finding, because
  these ids do not say ``-only`` or ``-or-later``.
* Hub ids that name a licence family (``bsd``, ``cc``, ``gpl``, ``lgpl``, ``gfdl``,
  ``openrail``, ``odc-by``, ``odbl``) and ``unknown`` map to ``NOASSERTION`` and are flagged.
* Other hub ids that are not SPDX ids (``llama2``, ``gemma``, ``bigscience-openrail-m``,
  ``pddl``, ...) map to ``LicenseRef-hf-{id}`` and are flagged for review. The finding names
  the SPDX id when there is an obvious one (``pddl`` -> ``PDDL-1.0``).
* ``other`` needs ``license_name``, which gives ``LicenseRef-hf-{license_name}``. Without it
  the licence is ``NOASSERTION``.
* A list of licences is joined with ``AND`` and flagged. If any of them is ``NOASSERTION``,
  the whole expression is ``NOASSERTION``.

YAML: the front matter is parsed by PyYAML's safe loader. Anchors and aliases are refused,
as is front matter larger than ``MAX_FRONT_MATTER_BYTES``. Anything else (a Python tag, a
non-mapping document) is a ``CardError``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

import yaml

from annex.spdx_licences import spdx_license_id, spdx_license_list_version
from collectors.lineage.validate import ANNEX_FACET_BASE, is_uri

__all__ = [
    "DATASET_EVENT_SCHEMA",
    "HF_NAMESPACE",
    "MAX_FRONT_MATTER_BYTES",
    "NOASSERTION",
    "SOURCE_CATEGORIES",
    "CardError",
    "ImportFinding",
    "Imported",
    "LicenceMapping",
    "copyright_status",
    "hf_card_event",
    "import_hf_card",
    "join_licences",
    "map_hf_license",
    "parse_front_matter",
    "spdx_license_id",
    "spdx_license_list_version",
]

HF_NAMESPACE = "hf://datasets"
DATASET_EVENT_SCHEMA = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent"
OL_FACET_SCHEMAS = {
    "documentation": "https://openlineage.io/spec/facets/1-1-0/DocumentationDatasetFacet.json"
    "#/$defs/DocumentationDatasetFacet",
    "symlinks": "https://openlineage.io/spec/facets/1-0-1/SymlinksDatasetFacet.json"
    "#/$defs/SymlinksDatasetFacet",
    "version": "https://openlineage.io/spec/facets/1-0-1/DatasetVersionDatasetFacet.json"
    "#/$defs/DatasetVersionDatasetFacet",
}
ANNEX_FACET_CLASSES = {
    "annex_source": "AnnexSourceDatasetFacet",
    "annex_licensing": "AnnexLicensingDatasetFacet",
    "annex_crawl": "AnnexCrawlDatasetFacet",
    "annex_content": "AnnexContentDatasetFacet",
    "annex_personalData": "AnnexPersonalDataDatasetFacet",
}
SOURCE_CATEGORIES = (
    "PUBLIC_DATASET",
    "PRIVATE_LICENSED",
    "PRIVATE_THIRD_PARTY",
    "CRAWLED",
    "USER_DATA",
    "SYNTHETIC",
    "OTHER",
    "DERIVED",
)
MAX_FRONT_MATTER_BYTES = 2 * 1024 * 1024
MAX_DOCUMENTATION_CHARS = 64 * 1024
NOASSERTION = "NOASSERTION"

# HF hub licence ids that name a family of licences, not one licence (hub-docs
# repositories-licenses.md: "... family"), and "unknown": nothing to assert.
HF_FAMILIES = frozenset({"bsd", "cc", "gpl", "lgpl", "gfdl", "openrail", "odc-by", "odbl"})
# hub ids whose SPDX id is obvious to a reader but not a case-insensitive match: only named in
# the finding, never applied (the rule is the exact match)
HF_SUGGESTIONS = {
    "pddl": "PDDL-1.0",
    "c-uda": "C-UDA-1.0",
    "lgpl-lr": "LGPLLR",
    "odc-by": "ODC-By-1.0",
    "odbl": "ODbL-1.0",
}
PUBLIC_DOMAIN_IDS = frozenset({"CC0-1.0", "PDDL-1.0", "Unlicense"})
_BCP47 = re.compile(r"^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*$")
_REPO_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,95})"
_REPO_ID = re.compile(rf"^{_REPO_PART}/{_REPO_PART}$")
_LICENSEREF_BAD = re.compile(r"[^A-Za-z0-9.-]+")


class CardError(ValueError):
    """The card cannot be read: no front matter, bad YAML, a bad repo id."""


@dataclass(frozen=True, slots=True)
class ImportFinding:
    """Something an importer noticed and a person should review. It does not stop the import."""

    code: str  # licence_not_spdx, licence_family, licence_deprecated, modality_unknown, ...
    path: str  # where in the input: "license", "rai:dataCollectionType", "dataset_info"
    message: str


class Imported(NamedTuple):
    event: dict[str, Any]
    findings: tuple[ImportFinding, ...]


@dataclass(frozen=True, slots=True)
class LicenceMapping:
    spdx: str  # SPDX id or expression, LicenseRef-..., or NOASSERTION
    findings: tuple[ImportFinding, ...] = ()


# ---------------------------------------------------------------------------------------------
# SPDX licence ids (the list and its version: annex.spdx_licences, shared with reports.spdx)


def _license_ref(prefix: str, text: str) -> str:
    idstring = _LICENSEREF_BAD.sub("-", text.strip()).strip("-") or "unnamed"
    return f"LicenseRef-{prefix}-{idstring}"


def map_hf_license(
    value: str, license_name: str | None = None, path: str = "license"
) -> LicenceMapping:
    """Map one HF hub licence id to SPDX. See the module docstring for the rules."""
    raw = value.strip()
    key = raw.lower()
    if key == "other":
        if license_name and license_name.strip():
            ref = _license_ref("hf", license_name)
            return LicenceMapping(
                ref,
                (
                    ImportFinding(
                        "licence_not_spdx",
                        path,
                        f"license 'other' named {license_name!r}: "
                        f"{ref}, not an SPDX licence; review its LICENSE file",
                    ),
                ),
            )
        return LicenceMapping(
            NOASSERTION,
            (
                ImportFinding(
                    "licence_unknown", path, "license 'other' without license_name: NOASSERTION"
                ),
            ),
        )
    if key == "unknown" or not key:
        return LicenceMapping(
            NOASSERTION,
            (ImportFinding("licence_unknown", path, f"license {raw!r}: NOASSERTION"),),
        )
    match = spdx_license_id(raw)
    if match is not None:
        lid, deprecated = match
        if deprecated:
            return LicenceMapping(
                lid,
                (
                    ImportFinding(
                        "licence_deprecated",
                        path,
                        f"license {raw!r} is the deprecated "
                        f"SPDX id {lid} (-only or -or-later is not said); review",
                    ),
                ),
            )
        return LicenceMapping(lid)
    hint = HF_SUGGESTIONS.get(key)
    hint_text = f" (the SPDX licence may be {hint})" if hint else ""
    if key in HF_FAMILIES:
        return LicenceMapping(
            NOASSERTION,
            (
                ImportFinding(
                    "licence_family",
                    path,
                    f"license {raw!r} names a licence family, not "
                    f"a licence: NOASSERTION{hint_text}; review",
                ),
            ),
        )
    ref = _license_ref("hf", raw)
    return LicenceMapping(
        ref,
        (
            ImportFinding(
                "licence_not_spdx",
                path,
                f"license {raw!r} is not an SPDX id: {ref}{hint_text}; review",
            ),
        ),
    )


def join_licences(mappings: list[LicenceMapping], path: str) -> LicenceMapping:
    """Several licences on one dataset: ``A AND B`` (each part under its own), flagged."""
    if not mappings:
        return LicenceMapping(
            NOASSERTION, (ImportFinding("licence_missing", path, "no licence: NOASSERTION"),)
        )
    findings = tuple(f for m in mappings for f in m.findings)
    if len(mappings) == 1:
        return mappings[0]
    ids: list[str] = []
    for m in mappings:
        if m.spdx not in ids:
            ids.append(m.spdx)
    if NOASSERTION in ids:
        spdx = NOASSERTION
    elif len(ids) == 1:
        spdx = ids[0]
    else:
        spdx = " AND ".join(ids)
    note = ImportFinding(
        "licence_multiple",
        path,
        f"{len(mappings)} licences given: {spdx}; "
        "review whether they apply together (AND) or as a choice (OR)",
    )
    return LicenceMapping(spdx, (*findings, note))


def copyright_status(spdx: str) -> str:
    """annex_licensing.copyrightStatus implied by a mapped licence.

    NOASSERTION, or any LicenseRef, gives UNKNOWN. A public-domain dedication (CC0-1.0,
    PDDL-1.0, Unlicense), alone, gives PUBLIC_DOMAIN. Any other SPDX licence gives
    OPEN_LICENSED: a public licence.
    """
    if spdx == NOASSERTION or "LicenseRef-" in spdx:
        return "UNKNOWN"
    if spdx in PUBLIC_DOMAIN_IDS:
        return "PUBLIC_DOMAIN"
    return "OPEN_LICENSED"


# ---------------------------------------------------------------------------------------------
# event building (shared with croissant.py)


def check_common(*, namespace: str, name: str, producer: str, event_time: datetime) -> None:
    if not isinstance(namespace, str) or not namespace:
        raise ValueError("namespace must be a non-empty string")
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string")
    if not isinstance(producer, str) or not is_uri(producer) or producer != producer.strip():
        raise ValueError(f"producer must be a URI, got {producer!r}")
    if not isinstance(event_time, datetime) or event_time.tzinfo is None:
        raise ValueError("event_time must be a timezone-aware datetime")


def facet(key: str, producer: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """A facet with ``_producer`` and ``_schemaURL`` (annex_ facets or the standard ones)."""
    if key in ANNEX_FACET_CLASSES:
        cls = ANNEX_FACET_CLASSES[key]
        schema = f"{ANNEX_FACET_BASE}{cls}.json#/$defs/{cls}"
    else:
        schema = OL_FACET_SCHEMAS[key]
    return {"_producer": producer, "_schemaURL": schema, **fields}


def dataset_event(
    *, namespace: str, name: str, facets: Mapping[str, Any], producer: str, event_time: datetime
) -> dict[str, Any]:
    dataset: dict[str, Any] = {"namespace": namespace, "name": name}
    if facets:
        dataset["facets"] = dict(facets)
    return {
        "eventTime": event_time.isoformat(),
        "producer": producer,
        "schemaURL": DATASET_EVENT_SCHEMA,
        "dataset": dataset,
    }


def check_source_category(source_category: str) -> None:
    if source_category not in SOURCE_CATEGORIES:
        raise ValueError(
            f"source_category must be one of {', '.join(SOURCE_CATEGORIES)}, "
            f"got {source_category!r}"
        )


def languages(values: Iterable[Any], path: str) -> tuple[list[str], list[ImportFinding]]:
    """Keep BCP-47-looking tags (2-3 letter primary subtag), report the rest."""
    kept: list[str] = []
    findings: list[ImportFinding] = []
    for v in values:
        text = str(v).strip()
        if _BCP47.fullmatch(text):
            if text not in kept:
                kept.append(text)
        else:
            findings.append(
                ImportFinding("language_dropped", path, f"{text!r} is not a BCP-47 language tag")
            )
    return kept, findings


def truncate(text: str, limit: int, path: str, findings: list[ImportFinding]) -> str:
    if len(text) <= limit:
        return text
    findings.append(
        ImportFinding("documentation_truncated", path, f"{len(text)} characters, kept {limit}")
    )
    return text[:limit]


# ---------------------------------------------------------------------------------------------
# the card


class _StrictSafeLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader that also refuses anchors and aliases (no alias expansion bombs)."""

    def compose_node(self, parent: Any, index: Any) -> Any:  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, "YAML aliases are not accepted", event.start_mark
            )
        event = self.peek_event()
        if getattr(event, "anchor", None) is not None:
            raise yaml.composer.ComposerError(
                None, None, "YAML anchors are not accepted", event.start_mark
            )
        return super().compose_node(parent, index)


_FENCE = re.compile(r"^(---|\.\.\.)[ \t]*$")


def parse_front_matter(readme: str | bytes) -> tuple[dict[str, Any], str]:
    """Split a card into its YAML front matter (a mapping) and its Markdown body."""
    if isinstance(readme, bytes | bytearray):
        try:
            text = bytes(readme).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CardError(f"card is not UTF-8: {exc}") from None
    elif isinstance(readme, str):
        text = readme
    else:
        raise CardError(f"card must be str or bytes, got {type(readme).__name__}")
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n").rstrip() != "---":
        raise CardError("card has no YAML front matter (the first line must be '---')")
    end = None
    for i in range(1, len(lines)):
        if _FENCE.match(lines[i].rstrip("\r\n")):
            end = i
            break
    if end is None:
        raise CardError("card's YAML front matter is not closed by a '---' line")
    yaml_text = "".join(lines[1:end])
    if len(yaml_text.encode("utf-8")) > MAX_FRONT_MATTER_BYTES:
        raise CardError(f"card's front matter is over {MAX_FRONT_MATTER_BYTES} bytes")
    try:
        meta = yaml.load(yaml_text, Loader=_StrictSafeLoader)
    except yaml.YAMLError as exc:
        raise CardError(f"card's front matter is not safe YAML: {exc}") from None
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise CardError(f"card's front matter must be a mapping, got {type(meta).__name__}")
    return meta, "".join(lines[end + 1 :])


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [v for v in value if v is not None]
    return [value]


_MEDIA_DTYPES = {"image": "IMAGE", "audio": "AUDIO", "video": "VIDEO"}
_TEXT_DTYPES = frozenset({"string", "large_string"})


def _dtypes(node: Any, out: set[str]) -> None:
    if isinstance(node, list):
        for item in node:
            _dtypes(item, out)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in {"dtype", "_type"} and isinstance(value, str):
                out.add(value.lower())
            elif key in {"dtype", "sequence", "list", "struct", "feature", "features"}:
                _dtypes(value, out)
    elif isinstance(node, str):
        out.add(node.lower())


def modality_of(kinds: set[str]) -> str | None:
    """One media kind wins over text (captions, labels); two media kinds are OTHER."""
    media = {k for k in kinds if k in {"IMAGE", "AUDIO", "VIDEO"}}
    if len(media) == 1:
        return media.pop()
    if len(media) > 1:
        return "OTHER"
    if "TEXT" in kinds:
        return "TEXT"
    return None


def _card_content(meta: Mapping[str, Any], findings: list[ImportFinding]) -> dict[str, Any]:
    infos = [i for i in _as_list(meta.get("dataset_info")) if isinstance(i, dict)]
    kinds: set[str] = set()
    for info in infos:
        dtypes: set[str] = set()
        _dtypes(info.get("features"), dtypes)
        for d in dtypes:
            if d in _MEDIA_DTYPES:
                kinds.add(_MEDIA_DTYPES[d])
            elif d in _TEXT_DTYPES:
                kinds.add("TEXT")
    content: dict[str, Any] = {}
    modality = modality_of(kinds)
    if modality is not None:
        content["modality"] = modality
    langs, lang_findings = languages(_as_list(meta.get("language")), "language")
    findings.extend(lang_findings)
    if langs:
        content["languages"] = langs
    size: dict[str, int] = {}
    if infos:
        sizes = [i.get("dataset_size") for i in infos]
        if all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in sizes):
            size["bytes"] = sum(sizes)  # type: ignore[arg-type]
        counts: list[Any] = []
        for info in infos:
            splits = [s for s in _as_list(info.get("splits")) if isinstance(s, dict)]
            counts.extend(s.get("num_examples") for s in splits)
            if not splits:
                counts.append(None)
        if counts and all(
            isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts
        ):
            size["items"] = sum(counts)
    if size:
        content["size"] = size
    categories = [str(c) for c in _as_list(meta.get("size_categories"))]
    if categories:
        findings.append(
            ImportFinding(
                "size_category",
                "size_categories",
                f"size_categories {', '.join(categories)} is a range, not a count; "
                + ("size taken from dataset_info" if size else "no exact size in the card"),
            )
        )
    if "modality" not in content:
        if content:
            findings.append(
                ImportFinding(
                    "modality_unknown",
                    "dataset_info.features",
                    "modality unknown (no image/audio/video/string feature): annex_content left "
                    f"out with {', '.join(sorted(content))}",
                )
            )
        return {}
    return content


def import_hf_card(
    readme: str | bytes,
    *,
    repo_id: str,
    revision: str | None,
    producer: str,
    event_time: datetime,
    source_category: str = "PUBLIC_DATASET",
) -> Imported:
    """Read a dataset card into one DatasetEvent; see the module docstring."""
    if not isinstance(repo_id, str) or not _REPO_ID.fullmatch(repo_id) or ".." in repo_id:
        raise CardError(f"repo_id must be '{{org}}/{{repo}}', got {repo_id!r}")
    if revision is not None and (not isinstance(revision, str) or not revision.strip()):
        raise CardError("revision must be a non-empty string or None")
    check_common(namespace=HF_NAMESPACE, name=repo_id, producer=producer, event_time=event_time)
    check_source_category(source_category)
    meta, body = parse_front_matter(readme)
    findings: list[ImportFinding] = []
    facets: dict[str, Any] = {}

    # licence
    license_name = meta.get("license_name")
    license_name = str(license_name) if license_name is not None else None
    raw_licences = [str(v) for v in _as_list(meta.get("license"))]
    mappings = [
        map_hf_license(v, license_name, "license" if len(raw_licences) == 1 else f"license[{i}]")
        for i, v in enumerate(raw_licences)
    ]
    licence = join_licences(mappings, "license")
    findings.extend(licence.findings)
    licensing: dict[str, Any] = {
        "spdxExpression": licence.spdx,
        "hfLicenseId": ", ".join(raw_licences) if raw_licences else None,
        "copyrightStatus": copyright_status(licence.spdx),
    }
    facets["annex_licensing"] = facet("annex_licensing", producer, licensing)

    # source
    source: dict[str, Any] = {"sourceCategory": source_category}
    sources = [str(s) for s in _as_list(meta.get("source_datasets"))]
    if sources:
        source["description"] = "source_datasets: " + "; ".join(sources)
        upstream = [s.split("|", 1)[1] for s in sources if s.startswith("extended|")]
        if upstream:
            findings.append(
                ImportFinding(
                    "derived_from",
                    "source_datasets",
                    f"extends {', '.join(upstream)}: record that lineage with a run event",
                )
            )
    if "machine-generated" in {str(c) for c in _as_list(meta.get("language_creators"))}:
        findings.append(
            ImportFinding(
                "machine_generated",
                "language_creators",
                "language_creators includes machine-generated: review the source category "
                "(SYNTHETIC, with its generator models)",
            )
        )
    facets["annex_source"] = facet("annex_source", producer, source)

    content = _card_content(meta, findings)
    if content:
        facets["annex_content"] = facet("annex_content", producer, content)

    if revision is not None:
        facets["version"] = facet("version", producer, {"datasetVersion": revision})

    text = body.strip()
    pretty = meta.get("pretty_name")
    if text:
        doc = {
            "description": truncate(text, MAX_DOCUMENTATION_CHARS, "(body)", findings),
            "contentType": "text/markdown",
        }
        facets["documentation"] = facet("documentation", producer, doc)
    elif isinstance(pretty, str) and pretty.strip():
        facets["documentation"] = facet("documentation", producer, {"description": pretty.strip()})

    event = dataset_event(
        namespace=HF_NAMESPACE,
        name=repo_id,
        facets=facets,
        producer=producer,
        event_time=event_time,
    )
    return Imported(event, tuple(findings))


def hf_card_event(
    readme: str | bytes,
    *,
    repo_id: str,
    revision: str | None,
    producer: str,
    event_time: datetime,
    source_category: str = "PUBLIC_DATASET",
) -> dict[str, Any]:
    """The DatasetEvent of ``import_hf_card`` (its findings dropped)."""
    return import_hf_card(
        readme,
        repo_id=repo_id,
        revision=revision,
        producer=producer,
        event_time=event_time,
        source_category=source_category,
    ).event
