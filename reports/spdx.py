"""SPDX 3.0.1 JSON-LD for a model and the datasets it was trained on (AI and Dataset profiles).

``spdx_document(model, datasets, created=..., namespace=...)`` builds the document as a dict.
``spdx_json(document)`` serialises it. ``export_spdx(con, model_name)`` reads a model
checkpoint and its leaf sources from the lineage marts and builds the document from them.

The ``@graph`` holds:

* ``CreationInfo`` ``_:creationinfo`` (specVersion 3.0.1, created, createdBy annex's
  ``SoftwareAgent``, createdUsing annex's ``Tool``);
* the ``SpdxDocument``, with profileConformance ``core``, ``software``, ``simpleLicensing``,
  ``ai`` and ``dataset`` (and ``expandedLicensing`` when ``NoAssertionLicense`` is used),
  rootElement the model, and dataLicense CC0-1.0;
* one ``ai_AIPackage`` for the model (primaryPurpose ``model``);
* one ``dataset_DatasetPackage`` per dataset (primaryPurpose ``data``). Its fields come from
  the dataset's annex facets:
  - ``datasetType`` from ``annex_content.modality`` (``noAssertion`` when unknown);
  - ``dataCollectionProcess`` from ``annex_source`` and ``annex_crawl``: the EU template
    category, the crawler, its period and its opt-out behaviour;
  - ``hasSensitivePersonalInformation`` from ``annex_personalData``;
  - ``anonymizationMethodUsed`` from its ``measures``;
  - ``datasetSize`` from ``annex_content.size.bytes``;
  - ``originatedBy`` from ``annex_licensing.licensor``;
  - ``downloadLocation`` from the dataset's OpenLineage identity (``hf://datasets`` +
    ``org/repo`` becomes ``https://huggingface.co/datasets/org/repo``);
  - ``builtTime`` and ``releaseTime`` when the caller knows them.

  The Dataset profile requires ``builtTime``, ``releaseTime``, ``originatedBy`` and
  ``downloadLocation`` (SHACL ``minCount 1``), but they are never invented. When one is
  unknown the element's ``comment`` says so (``annex: unknown: builtTime, ...``).
* ``simplelicensing_LicenseExpression`` elements, one per distinct licence expression
  (``annex_licensing.spdxExpression``). Each package has a ``hasDeclaredLicense``
  ``Relationship`` to its expression. When the licence is NOASSERTION or missing, the
  relationship goes to the ``expandedlicensing_NoAssertionLicense`` individual;
* one ``trainedOn`` ``Relationship`` from the model to every dataset.

Deterministic: the same input gives the same bytes from ``spdx_json``. Element ids derive from
names (``{namespace}/dataset/{slug}-{sha256[:12]}``). The graph is sorted, and datasets are
sorted by their identity whatever order they come in.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from annex.spdx_licences import spdx_license_list_version

__all__ = [
    "ANNEX_AGENT_NAME",
    "NO_ASSERTION_LICENSE",
    "SPDX_CONTEXT",
    "SPDX_VERSION",
    "element_references",
    "export_spdx",
    "spdx_document",
    "spdx_json",
    "unresolved_references",
]

SPDX_VERSION = "3.0.1"
SPDX_CONTEXT = "https://spdx.org/rdf/3.0.1/spdx-context.jsonld"
CREATION_INFO_ID = "_:creationinfo"
NO_ASSERTION_LICENSE = "expandedlicensing_NoAssertionLicense"
ANNEX_AGENT_NAME = "annex"
# named individuals of the SPDX 3.0.1 vocabulary a reference may name (not defined in a graph)
INDIVIDUALS = frozenset(
    {
        NO_ASSERTION_LICENSE,
        "expandedlicensing_NoneLicense",
        "NoAssertionElement",
        "NoneElement",
        "SpdxOrganization",
    }
)
MODALITY_TYPES = {
    "TEXT": "text",
    "IMAGE": "image",
    "AUDIO": "audio",
    "VIDEO": "video",
    "OTHER": "other",
}
EU_SECTIONS = {
    "PUBLIC_DATASET": "2.1 publicly available datasets",
    "PRIVATE_LICENSED": "2.2.1 data licensed from rightsholders",
    "PRIVATE_THIRD_PARTY": "2.2.2 other private third-party data",
    "CRAWLED": "2.3 data crawled and scraped by or for the provider",
    "USER_DATA": "2.4 user data",
    "SYNTHETIC": "2.5 synthetic data",
    "OTHER": "2.6 other sources",
    "DERIVED": "internal intermediate",
}
PRESENCE = frozenset({"yes", "no", "noAssertion"})
# keys whose values name elements (spdxId) or the CreationInfo blank node
REFERENCE_KEYS = frozenset(
    {
        "creationInfo",
        "createdBy",
        "createdUsing",
        "from",
        "to",
        "originatedBy",
        "suppliedBy",
        "rootElement",
        "element",
        "dataLicense",
    }
)
_IRI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s]+$")
_SLUG_BAD = re.compile(r"[^A-Za-z0-9._-]+")


def _slug(text: str) -> str:
    readable = _SLUG_BAD.sub("-", text).strip("-.")[:80] or "x"
    return f"{readable}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:12]}"


def _time(value: datetime | str | None, what: str) -> str | None:
    """SPDX DateTime: UTC, ``YYYY-MM-DDTHH:MM:SSZ`` (no fraction, no offset)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{what}: not an ISO 8601 date-time: {value!r}") from None
    if not isinstance(value, datetime):
        raise ValueError(f"{what}: expected a datetime, got {type(value).__name__}")
    if value.tzinfo is None:
        raise ValueError(f"{what}: datetime must be timezone-aware")
    return value.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def download_location(namespace: str, name: str) -> str:
    """Where a dataset of OpenLineage identity ``namespace`` + ``name`` lives, as a URI."""
    if namespace.rstrip("/") == "hf://datasets":
        return f"https://huggingface.co/datasets/{name.strip('/')}"
    return f"{namespace.rstrip('/')}/{name.lstrip('/')}"


def _facet(facets: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = facets.get(key)
    if isinstance(value, str):  # a JSON column read as text
        value = json.loads(value)
    return value if isinstance(value, Mapping) and not value.get("_deleted") else {}


def _collection_process(facets: Mapping[str, Any]) -> str | None:
    parts: list[str] = []
    source = _facet(facets, "annex_source")
    category = source.get("sourceCategory")
    if isinstance(category, str):
        section = EU_SECTIONS.get(category, "")
        parts.append(
            f"Source category {category}" + (f" (EU template {section})" if section else "")
        )
        if source.get("publiclyAvailable") is not None:
            parts.append(
                "Publicly available" if source["publiclyAvailable"] else "Not publicly available"
            )
        generators = source.get("generatorModels")
        if generators:
            parts.append("generated by " + ", ".join(map(str, generators)))
        if source.get("description"):
            parts.append(str(source["description"]))
    crawl = _facet(facets, "annex_crawl")
    if crawl.get("crawlerName"):
        text = f"Crawled by {crawl['crawlerName']}"
        if crawl.get("purpose"):
            text += f" for {crawl['purpose']}"
        period = crawl.get("collectionPeriod") or {}
        if period.get("start") and period.get("end"):
            text += f" from {period['start']} to {period['end']}"
        parts.append(text)
        opt = crawl.get("optOut") or {}
        if opt:
            signals = ", ".join(
                f"{label} {opt[key]}"
                for key, label in (
                    ("robotsTxt", "robots.txt"),
                    ("tdmrep", "TDMRep"),
                    ("ietfAipref", "IETF AIPREF"),
                    ("aiTxt", "ai.txt"),
                )
                if key in opt
            )
            text = f"Opt-outs: {signals}"
            if opt.get("checkedAt"):
                text += f" (checked at {opt['checkedAt']})"
            if opt.get("documentsExcluded") is not None:
                text += f"; {opt['documentsExcluded']} documents excluded"
            parts.append(text)
        if crawl.get("paywallPolicy"):
            parts.append(f"Paywalls: {crawl['paywallPolicy']}")
    parts = [p.strip().rstrip(".") for p in parts if p.strip().rstrip(".")]
    return ". ".join(parts) + "." if parts else None


def _sensitive(facets: Mapping[str, Any]) -> str:
    personal = _facet(facets, "annex_personalData")
    sensitive = personal.get("sensitive")
    if sensitive in PRESENCE:
        return str(sensitive)
    if personal.get("present") == "no":
        return "no"
    return "noAssertion"


class _Graph:
    def __init__(self, namespace: str) -> None:
        self.ns = namespace
        self.elements: dict[str, dict[str, Any]] = {}
        self.uses_no_assertion = False

    def add(self, element: dict[str, Any]) -> str:
        sid = element["spdxId"]
        if sid in self.elements and self.elements[sid] != element:
            raise ValueError(f"two different elements would get the id {sid}")
        self.elements[sid] = element
        return sid

    def agent(self, name: str) -> str:
        return self.add(
            {
                "type": "Organization",
                "spdxId": f"{self.ns}/agent/{_slug(name)}",
                "creationInfo": CREATION_INFO_ID,
                "name": name,
            }
        )

    def licence(self, expression: str | None) -> str:
        if expression is None or expression.strip().upper() in {"NOASSERTION", ""}:
            self.uses_no_assertion = True
            return NO_ASSERTION_LICENSE
        expression = expression.strip()
        return self.add(
            {
                "type": "simplelicensing_LicenseExpression",
                "spdxId": f"{self.ns}/license/{_slug(expression)}",
                "creationInfo": CREATION_INFO_ID,
                "simplelicensing_licenseExpression": expression,
                "simplelicensing_licenseListVersion": spdx_license_list_version(),
            }
        )

    def relationship(self, source: str, kind: str, targets: Sequence[str]) -> str:
        targets = sorted(set(targets))
        key = "\x1f".join([source, kind, *targets])
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        return self.add(
            {
                "type": "Relationship",
                "spdxId": f"{self.ns}/relationship/{kind}-{digest}",
                "creationInfo": CREATION_INFO_ID,
                "from": source,
                "relationshipType": kind,
                "to": targets,
            }
        )


def _unknown_comment(element: dict[str, Any], required: Iterable[str]) -> None:
    missing = [key for key in required if key not in element]
    if missing:
        element["comment"] = "annex: unknown: " + ", ".join(missing)


_PACKAGE_REQUIRED = ("builtTime", "releaseTime", "originatedBy", "software_downloadLocation")


def _dataset_identity(item: Mapping[str, Any]) -> tuple[str, str, str]:
    namespace, name = item.get("namespace"), item.get("name")
    if not isinstance(namespace, str) or not namespace or not isinstance(name, str) or not name:
        raise ValueError("every dataset needs a non-empty namespace and name")
    version = item.get("version")
    return namespace, name, "" if version is None else str(version)


def spdx_document(
    model: Mapping[str, Any],
    datasets: list[Mapping[str, Any]],
    *,
    created: datetime,
    namespace: str,
) -> dict[str, Any]:
    """Build the SPDX 3.0.1 JSON-LD document (see the module docstring).

    ``model`` has a required ``name`` and these optional keys: ``version``,
    ``downloadLocation``, ``builtTime``, ``releaseTime`` (datetimes or ISO strings),
    ``originatedBy`` (an organisation name), ``license`` (an SPDX expression), ``typeOfModel``
    (a list of strings), ``informationAboutTraining``, ``useSensitivePersonalInformation``
    (yes, no or noAssertion; by default derived from the datasets) and ``description``.

    Each dataset has ``namespace``, ``name``, an optional ``version``, and ``facets``: its
    current OpenLineage facets by key, dicts or JSON text. It may also have ``builtTime``,
    ``releaseTime``, ``originatedBy`` and ``downloadLocation``, which take precedence over
    what the facets say.
    """
    if not isinstance(namespace, str) or not _IRI.match(namespace) or namespace.startswith("_:"):
        raise ValueError(f"namespace must be an absolute IRI, got {namespace!r}")
    ns = namespace.rstrip("/")
    created_text = _time(created, "created")
    if not isinstance(model.get("name"), str) or not model["name"].strip():
        raise ValueError("model needs a non-empty name")
    g = _Graph(ns)

    agent = g.add(
        {
            "type": "SoftwareAgent",
            "spdxId": f"{ns}/agent/annex",
            "creationInfo": CREATION_INFO_ID,
            "name": ANNEX_AGENT_NAME,
        }
    )
    tool = g.add(
        {
            "type": "Tool",
            "spdxId": f"{ns}/tool/annex",
            "creationInfo": CREATION_INFO_ID,
            "name": ANNEX_AGENT_NAME,
        }
    )

    # datasets, in a fixed order whatever order they came in
    seen: dict[tuple[str, str, str], Mapping[str, Any]] = {}
    for item in datasets:
        ident = _dataset_identity(item)
        if ident in seen:
            raise ValueError(f"dataset {ident[0]} {ident[1]} version {ident[2]!r} given twice")
        seen[ident] = item
    dataset_ids: list[str] = []
    sensitive_values: list[str] = []
    for ident in sorted(seen):
        item = seen[ident]
        ds_ns, ds_name, ds_version = ident
        facets = item.get("facets") or {}
        content = _facet(facets, "annex_content")
        licensing = _facet(facets, "annex_licensing")
        personal = _facet(facets, "annex_personalData")
        element: dict[str, Any] = {
            "type": "dataset_DatasetPackage",
            "spdxId": f"{ns}/dataset/{_slug(chr(31).join(ident))}",
            "creationInfo": CREATION_INFO_ID,
            "name": f"{ds_ns.rstrip('/')}/{ds_name.lstrip('/')}",
        }
        if ds_version:
            element["software_packageVersion"] = ds_version
        element["software_primaryPurpose"] = "data"
        element["software_downloadLocation"] = str(
            item.get("downloadLocation") or download_location(ds_ns, ds_name)
        )
        for key in ("builtTime", "releaseTime"):
            value = _time(item.get(key), f"dataset {ds_name} {key}")
            if value is not None:
                element[key] = value
        originator = item.get("originatedBy") or licensing.get("licensor")
        if isinstance(originator, str) and originator.strip():
            element["originatedBy"] = [g.agent(originator.strip())]
        modality = content.get("modality")
        element["dataset_datasetType"] = [MODALITY_TYPES.get(str(modality), "noAssertion")]
        process = _collection_process(facets)
        if process:
            element["dataset_dataCollectionProcess"] = process
        sensitive = _sensitive(facets)
        sensitive_values.append(sensitive)
        element["dataset_hasSensitivePersonalInformation"] = sensitive
        measures = [str(m) for m in personal.get("measures") or [] if str(m).strip()]
        if measures:
            element["dataset_anonymizationMethodUsed"] = measures
        size = (content.get("size") or {}).get("bytes")
        if isinstance(size, int) and not isinstance(size, bool) and size >= 0:
            element["dataset_datasetSize"] = size
        doc = _facet(facets, "documentation").get("description")
        if isinstance(doc, str) and doc.strip():
            element["description"] = doc.strip()[:4000]
        _unknown_comment(element, _PACKAGE_REQUIRED)
        sid = g.add(element)
        dataset_ids.append(sid)
        expression = licensing.get("spdxExpression") if licensing else None
        g.relationship(sid, "hasDeclaredLicense", [g.licence(expression)])

    # the model
    name = model["name"].strip()
    version = model.get("version")
    model_el: dict[str, Any] = {
        "type": "ai_AIPackage",
        "spdxId": f"{ns}/model/{_slug(name + chr(31) + ('' if version is None else str(version)))}",
        "creationInfo": CREATION_INFO_ID,
        "name": name,
    }
    if version is not None:
        model_el["software_packageVersion"] = str(version)
    model_el["software_primaryPurpose"] = "model"
    if model.get("downloadLocation"):
        model_el["software_downloadLocation"] = str(model["downloadLocation"])
    for key in ("builtTime", "releaseTime"):
        value = _time(model.get(key), f"model {key}")
        if value is not None:
            model_el[key] = value
    if isinstance(model.get("originatedBy"), str) and model["originatedBy"].strip():
        model_el["originatedBy"] = [g.agent(model["originatedBy"].strip())]
    if model.get("description"):
        model_el["description"] = str(model["description"])
    types = [str(t) for t in model.get("typeOfModel") or []]
    if types:
        model_el["ai_typeOfModel"] = types
    info = model.get("informationAboutTraining")
    if not info:
        info = f"Trained on {len(dataset_ids)} source dataset(s) recorded in annex's lineage."
    model_el["ai_informationAboutTraining"] = str(info)
    use = model.get("useSensitivePersonalInformation")
    if use is None:
        if "yes" in sensitive_values:
            use = "yes"
        elif sensitive_values and all(v == "no" for v in sensitive_values):
            use = "no"
        else:
            use = "noAssertion"
    if use not in PRESENCE:
        raise ValueError(f"useSensitivePersonalInformation must be yes, no or noAssertion: {use!r}")
    model_el["ai_useSensitivePersonalInformation"] = use
    _unknown_comment(model_el, _PACKAGE_REQUIRED)
    model_id = g.add(model_el)
    g.relationship(model_id, "hasDeclaredLicense", [g.licence(model.get("license"))])
    if dataset_ids:
        g.relationship(model_id, "trainedOn", dataset_ids)

    data_licence = g.licence("CC0-1.0")
    profiles = ["core", "software", "simpleLicensing", "ai", "dataset"]
    if g.uses_no_assertion:
        profiles.append("expandedLicensing")
    document_id = f"{ns}/document"
    document = {
        "type": "SpdxDocument",
        "spdxId": document_id,
        "creationInfo": CREATION_INFO_ID,
        "name": f"{name} training data",
        "profileConformance": profiles,
        "dataLicense": data_licence,
        "rootElement": [model_id],
        "element": sorted(g.elements),
    }
    creation = {
        "type": "CreationInfo",
        "@id": CREATION_INFO_ID,
        "specVersion": SPDX_VERSION,
        "created": created_text,
        "createdBy": [agent],
        "createdUsing": [tool],
    }
    order = {
        "SoftwareAgent": 0,
        "Tool": 1,
        "Organization": 2,
        "ai_AIPackage": 3,
        "dataset_DatasetPackage": 4,
        "simplelicensing_LicenseExpression": 5,
        "Relationship": 6,
    }
    graph = sorted(g.elements.values(), key=lambda e: (order.get(e["type"], 9), e["spdxId"]))
    return {"@context": SPDX_CONTEXT, "@graph": [creation, document, *graph]}


def spdx_json(document: Mapping[str, Any]) -> bytes:
    """The document as UTF-8 JSON: keys sorted, two-space indent, a final newline."""
    return (json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def element_references(document: Mapping[str, Any]) -> list[str]:
    """Every id the graph refers to (creationInfo, from, to, rootElement, element, ...)."""
    refs: list[str] = []
    for node in document.get("@graph", []):
        for key, value in node.items():
            if key in REFERENCE_KEYS:
                refs.extend(
                    v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)
                )
    return refs


def unresolved_references(document: Mapping[str, Any]) -> list[str]:
    """Referenced ids that no node of the graph defines (``spdxId`` or ``@id``) and that are
    not SPDX named individuals; empty when every reference resolves."""
    defined = {n.get("spdxId") or n.get("@id") for n in document.get("@graph", [])}
    return sorted(
        {r for r in element_references(document) if r not in defined and r not in INDIVIDUALS}
    )


# ---------------------------------------------------------------------------------------------
# from the warehouse


def export_spdx(
    con: Any,
    model_name: str,
    *,
    model_version_id: str | None = None,
    created: datetime | None = None,
    namespace: str | None = None,
) -> dict[str, Any]:
    """The SPDX document of a model checkpoint and the leaf sources of its training content.

    The checkpoint is ``model_version_id``, or else the latest one of ``model_name`` in
    ``marts.lineage_models`` (by ``created_at``, then by id). The datasets are the rows of
    ``marts.lineage_model_inputs`` for that checkpoint that are leaves (no run produced them),
    in EU scope and of kind DATASET. Their facets are the current effective facets
    (``core.lineage_version_facets``, which includes what Croissant and HF card imports say
    about the dataset as a whole). The model's ``builtTime`` is the time the run wrote the
    checkpoint (``core.lineage_dataset_versions.produced_at``). ``con`` is a DuckDB
    connection to a warehouse that ``refresh_lineage`` has run on. Raises ``LookupError``
    when the model has no checkpoint.
    """
    params: list[Any] = [model_name]
    where = "m.model_name = ?"
    if model_version_id is not None:
        where += " AND m.model_version_id = ?"
        params.append(model_version_id)
    row = con.execute(
        f"""
        SELECT m.model_version_id, m.model_name, m.namespace, m.name, m.version,
               v.produced_at
        FROM marts.lineage_models AS m
        LEFT JOIN core.lineage_dataset_versions AS v
            ON v.dataset_version_id = m.model_version_id
        WHERE {where}
        ORDER BY m.created_at DESC NULLS LAST, m.model_version_id DESC
        LIMIT 1
        """,
        params,
    ).fetchone()
    if row is None:
        raise LookupError(f"no checkpoint of model {model_name!r} in marts.lineage_models")
    version_id, name, ck_ns, ck_name, ck_version, produced_at = row
    inputs = con.execute(
        """
        SELECT dataset_version_id, namespace, name, version
        FROM marts.lineage_model_inputs
        WHERE model_version_id = ? AND is_leaf AND in_eu_scope AND kind = 'DATASET'
        ORDER BY namespace, name, version
        """,
        [version_id],
    ).fetchall()
    ids = [r[0] for r in inputs] + [version_id]
    facets: dict[str, dict[str, Any]] = {i: {} for i in ids}
    if ids:
        placeholders = ", ".join("?" for _ in ids)
        for dvid, facet_name, facet in con.execute(
            f"""
            SELECT dataset_version_id, facet_name, facet
            FROM core.lineage_version_facets
            WHERE dataset_version_id IN ({placeholders})
            ORDER BY dataset_version_id, facet_name
            """,
            ids,
        ).fetchall():
            facets[dvid][facet_name] = json.loads(facet) if isinstance(facet, str) else facet
    datasets = [
        {"namespace": ns, "name": nm, "version": ver, "facets": facets[dvid]}
        for dvid, ns, nm, ver in inputs
    ]
    ck_facets = facets[version_id]
    model: dict[str, Any] = {
        "name": name,
        "version": ck_version,
        "downloadLocation": download_location(ck_ns, ck_name),
    }
    if produced_at is not None:
        model["builtTime"] = (
            produced_at.replace(tzinfo=UTC) if produced_at.tzinfo is None else produced_at
        )
    licence = _facet(ck_facets, "annex_licensing").get("spdxExpression")
    if licence:
        model["license"] = licence
    doc = _facet(ck_facets, "documentation").get("description")
    if doc:
        model["description"] = doc
    return spdx_document(
        model,
        datasets,
        created=created or datetime.now(UTC),
        namespace=namespace or f"https://annex.dev/spdx/{version_id}",
    )
