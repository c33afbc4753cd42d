"""Croissant 1.0/1.1 JSON-LD, with its RAI extension, -> one OpenLineage DatasetEvent.

``import_croissant(document, namespace=..., name=..., producer=..., event_time=...)`` returns
``Imported(event, findings)``. ``croissant_event(...)`` returns only the event. The event is a
2-0-2 ``DatasetEvent`` for the dataset ``namespace`` + ``name``, which the caller chooses
(reference §1.4). It carries these facets:

* ``annex_licensing``: from ``license``, which may be URL(s), SPDX ids or CreativeWork
  objects. SPDX, Creative Commons, Open Data Commons, OSI, Apache and choosealicense URLs
  map to SPDX ids. HF hub ids map as in ``collectors.lineage.hf_card``. Anything else becomes
  ``NOASSERTION`` and is flagged.
* ``annex_source``: ``sourceCategory`` as the caller declares it (default
  ``PUBLIC_DATASET``, because a Croissant record describes a published dataset).
  ``publiclyAvailable`` comes from ``isAccessibleForFree`` and ``description`` from
  ``rai:dataCollectionRawData``.
* ``annex_content``:
  - ``modality``: the record-set fields' ``dataType`` (``sc:ImageObject``, ``sc:AudioObject``,
    ``sc:VideoObject``, ``sc:Text``), or failing that the file sets' ``encodingFormat``;
  - ``languages``: ``inLanguage``;
  - ``size.bytes``: the sum of ``contentSize`` over the top-level FileObjects, only if all of
    them state a size in an unambiguous unit;
  - ``latestCollectionDate``: the end of the RAI collection timeframe.
* ``annex_personalData``: from ``rai:personalSensitiveInformation``. An explicit "none" gives
  ``present: no``. Any other text gives ``present: yes`` and ``sensitive: noAssertion``, and is
  flagged for review.
* ``annex_crawl``: only when ``rai:dataCollectionType`` says web scraping. The facet schema
  requires the crawler's name and its opt-out behaviour, and Croissant records neither, so the
  caller supplies them in ``crawl=`` (``crawlerName``, ``optOut``, and optionally ``purpose``
  and ``paywallPolicy``). The Croissant timeframe gives ``collectionPeriod``. Both
  ``rai:dataCollectionTimeframe`` (a start and an end, or an ISO interval) and
  ``rai:dataCollectionTimeFrameStart``/``End`` are read. Without ``crawl=`` the facet is left
  out and a finding says why.
* standard facets:
  - ``documentation``: from ``description``;
  - ``symlinks``: the Croissant ``@id`` (if absolute), ``url`` and ``sameAs``;
  - ``version``: from ``version``.

Facts that are missing are left out, never guessed. Findings report what was dropped, flagged
or not representable, for example ``prov:wasDerivedFrom`` (lineage needs a run event).

Validation is minimal. The document must be a JSON object with ``@context``, an ``@type``
that includes ``sc:Dataset``, a ``conformsTo`` naming Croissant 1.0 or 1.1, and ``name``,
``description``, ``license`` and ``url``. 1.1 also requires ``creator`` and ``datePublished``.
If any is missing, ``CroissantError`` names the field. Keys are read as JSON-LD: compact IRIs
through the document's ``@context`` prefixes and term aliases, with ``@vocab`` schema.org.
http and https schema.org IRIs are treated as the same.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any
from urllib.parse import urlsplit

import orjson

from annex.spdx_licences import spdx_license_id
from collectors.lineage.hf_card import (
    NOASSERTION,
    Imported,
    ImportFinding,
    LicenceMapping,
    check_common,
    check_source_category,
    copyright_status,
    dataset_event,
    facet,
    join_licences,
    languages,
    map_hf_license,
    modality_of,
    truncate,
)

__all__ = [
    "CROISSANT_VERSIONS",
    "MAX_DOCUMENT_BYTES",
    "CroissantError",
    "croissant_event",
    "import_croissant",
    "licence_from_text",
]

SC = "http://schema.org/"
CR = "http://mlcommons.org/croissant/"
RAI = "http://mlcommons.org/croissant/RAI/"
DCT = "http://purl.org/dc/terms/"
PROV = "http://www.w3.org/ns/prov#"
DEFAULT_PREFIXES = {
    "sc": SC,
    "schema": SC,
    "cr": CR,
    "rai": RAI,
    "dct": DCT,
    "prov": PROV,
}
CROISSANT_VERSIONS = ("1.0", "1.1")
REQUIRED = {
    "1.0": ("name", "description", "license", "url"),
    "1.1": ("name", "description", "license", "url", "creator", "datePublished"),
}
MAX_DOCUMENT_BYTES = 32 * 1024 * 1024
MAX_DESCRIPTION_CHARS = 64 * 1024
OPT_OUT_KEYS = ("robotsTxt", "tdmrep", "ietfAipref", "aiTxt", "checkedAt")
WEB_SCRAPING = frozenset({"web scraping", "webscraping", "web crawling", "web crawl"})
NEGATIVE = frozenset(
    {"none", "no", "n/a", "na", "not applicable", "no personal information", "nothing"}
)


class CroissantError(ValueError):
    """The document is not a Croissant dataset description; ``field`` names what is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


# ---------------------------------------------------------------------------------------------
# JSON-LD, as much as a top-level Croissant description needs


def _https_to_http(iri: str) -> str:
    if iri.startswith("https://schema.org/"):
        return SC + iri[len("https://schema.org/") :]
    if iri.startswith("schema.org/"):  # "@type": "schema.org/Dataset" in the RAI spec examples
        return SC + iri[len("schema.org/") :]
    return iri


class _Context:
    def __init__(self, context: Any) -> None:
        self.prefixes = dict(DEFAULT_PREFIXES)
        self.terms: dict[str, str] = {}
        self.vocab = SC
        for ctx in context if isinstance(context, list) else [context]:
            if not isinstance(ctx, dict):
                continue  # a remote context (a URL string) is not fetched
            for key, value in ctx.items():
                target = value.get("@id") if isinstance(value, dict) else value
                if key == "@vocab" and isinstance(value, str):
                    self.vocab = _https_to_http(value)
                elif key.startswith("@") or not isinstance(target, str):
                    continue
                elif target.endswith(("/", "#")) and ":" not in key:
                    self.prefixes[key] = _https_to_http(target)
                else:
                    self.terms[key] = target

    def expand(self, key: str, *, vocab: bool = True) -> str:
        if key.startswith("@"):
            return key
        if key in self.terms:
            key = self.terms[key]
        if ":" in key:
            prefix, local = key.split(":", 1)
            if local.startswith("//"):
                return _https_to_http(key)
            if prefix in self.prefixes:
                return _https_to_http(self.prefixes[prefix] + local)
            return _https_to_http(key)
        if key.startswith("schema.org/"):
            return _https_to_http(key)
        return self.vocab + key if vocab else key

    def node(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in obj.items():
            iri = self.expand(key)
            out.setdefault(iri, value)
        return out


def _values(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list):
        return [v for v in value if v is not None]
    return [value]


def _texts(value: Any) -> list[str]:
    out: list[str] = []
    for v in _values(value):
        if isinstance(v, dict):
            if "@value" in v:
                out.append(str(v["@value"]))
            elif "@id" in v and len(v) == 1:
                out.append(str(v["@id"]))
        elif isinstance(v, bool):
            out.append("true" if v else "false")
        elif isinstance(v, str | int | float):
            out.append(str(v))
    return [t.strip() for t in out if str(t).strip()]


def _present(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, list | dict):
        return bool(value)
    return True


# ---------------------------------------------------------------------------------------------
# licences

_CC = re.compile(
    r"^(?:https?://)?(?:www\.)?creativecommons\.org/licenses/"
    r"(by|by-sa|by-nc|by-nd|by-nc-sa|by-nc-nd)/(\d\.\d)/?(?:legalcode(?:\.[a-z]+)?|deed\.[a-z-]+)?$",
    re.IGNORECASE,
)
_CC0 = re.compile(
    r"^(?:https?://)?(?:www\.)?creativecommons\.org/publicdomain/zero/1\.0/?"
    r"(?:legalcode(?:\.[a-z]+)?|deed\.[a-z-]+)?$",
    re.IGNORECASE,
)
_SPDX_URL = re.compile(
    r"^(?:https?://)?(?:www\.)?spdx\.org/licenses/([A-Za-z0-9.+-]+?)(?:\.html|\.json)?/?$",
    re.IGNORECASE,
)
_OSI_URL = re.compile(
    r"^(?:https?://)?(?:www\.)?opensource\.org/licenses?/([A-Za-z0-9.+-]+?)(?:\.php|\.html)?/?$",
    re.IGNORECASE,
)
_CHOOSE_URL = re.compile(
    r"^(?:https?://)?(?:www\.)?choosealicense\.com/licenses/([A-Za-z0-9.+-]+)/?$", re.IGNORECASE
)
_APACHE_URL = re.compile(
    r"^(?:https?://)?(?:www\.)?apache\.org/licenses/LICENSE-2\.0(?:\.html|\.txt)?/?$",
    re.IGNORECASE,
)
_ODC_URL = re.compile(
    r"^(?:https?://)?(?:www\.)?opendatacommons\.org/licenses/(by|odbl|pddl)/(?:1[-.]0)/?"
    r"(?:index\.html)?$",
    re.IGNORECASE,
)
_ODC = {"by": "ODC-By-1.0", "odbl": "ODbL-1.0", "pddl": "PDDL-1.0"}


def _spdx_or_none(text: str, path: str) -> LicenceMapping | None:
    match = spdx_license_id(text)
    if match is None:
        return None
    lid, deprecated = match
    if deprecated:
        return LicenceMapping(
            lid,
            (
                ImportFinding(
                    "licence_deprecated",
                    path,
                    f"licence {text!r} is the deprecated SPDX id {lid}; review",
                ),
            ),
        )
    return LicenceMapping(lid)


def licence_from_text(text: str, path: str = "license") -> LicenceMapping:
    """One Croissant ``license`` value (URL, SPDX id or HF id) -> SPDX; see the module doc."""
    text = text.strip()
    if m := _CC.match(text):
        found = _spdx_or_none(f"CC-{m.group(1).upper()}-{m.group(2)}", path)
        if found is not None:
            return found
    if _CC0.match(text):
        return LicenceMapping("CC0-1.0")
    if _APACHE_URL.match(text):
        return LicenceMapping("Apache-2.0")
    if m := _ODC_URL.match(text):
        return LicenceMapping(_ODC[m.group(1).lower()])
    for pattern in (_SPDX_URL, _OSI_URL):
        if (m := pattern.match(text)) and (found := _spdx_or_none(m.group(1), path)):
            return found
    if m := _CHOOSE_URL.match(text):
        return map_hf_license(m.group(1), None, path)
    if "/" not in text and " " not in text.strip():
        found = _spdx_or_none(text, path)
        if found is not None:
            return found
        return map_hf_license(text, None, path)  # a hub id such as "cc-by-4.0" or "llama2"
    return LicenceMapping(
        NOASSERTION,
        (
            ImportFinding(
                "licence_not_spdx",
                path,
                f"licence {text!r} does not map to an SPDX id: NOASSERTION; review",
            ),
        ),
    )


def _licence(ctx: _Context, value: Any) -> LicenceMapping:
    mappings: list[LicenceMapping] = []
    items = _values(value)
    for i, item in enumerate(items):
        path = "license" if len(items) == 1 else f"license[{i}]"
        if (
            isinstance(item, dict)
            and "@value" not in item
            and not ("@id" in item and len(item) == 1)
        ):
            node = ctx.node(item)
            texts = (
                _texts(node.get(SC + "url"))
                or _texts(node.get("@id"))
                or _texts(node.get(SC + "identifier"))
                or _texts(node.get(SC + "name"))
            )
        else:
            texts = _texts(item)
        if not texts:
            mappings.append(
                LicenceMapping(
                    NOASSERTION,
                    (
                        ImportFinding(
                            "licence_not_spdx", path, "licence without a URL or name: NOASSERTION"
                        ),
                    ),
                )
            )
            continue
        mappings.append(licence_from_text(texts[0], path))
    return join_licences(mappings, "license")


# ---------------------------------------------------------------------------------------------
# RAI and content

_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:$|[T ])")


def _date(text: str) -> str | None:
    m = _DATE.match(text.strip())
    if not m:
        return None
    try:
        return date.fromisoformat(m.group(1)).isoformat()
    except ValueError:
        return None


def _timeframe(props: Mapping[str, Any], findings: list[ImportFinding]) -> tuple[str, str] | None:
    start = _texts(props.get(RAI + "dataCollectionTimeFrameStart"))
    end = _texts(props.get(RAI + "dataCollectionTimeFrameEnd"))
    frame = _texts(props.get(RAI + "dataCollectionTimeframe")) or _texts(
        props.get(RAI + "dataCollectionTimeFrame")
    )
    path = "rai:dataCollectionTimeFrameStart/End"
    if not (start and end) and frame:
        path = "rai:dataCollectionTimeframe"
        if len(frame) == 1 and "/" in frame[0]:
            frame = frame[0].split("/", 1)
        if len(frame) == 2:
            start, end = [frame[0]], [frame[1]]
        else:
            findings.append(
                ImportFinding(
                    "timeframe_unreadable",
                    path,
                    f"{len(frame)} values; a start and an end are needed",
                )
            )
            return None
    if not (start or end):
        return None
    s, e = (_date(start[0]) if start else None), (_date(end[0]) if end else None)
    if s is None or e is None or e < s:
        findings.append(
            ImportFinding(
                "timeframe_unreadable", path, f"start {start[:1]} end {end[:1]}: not a date range"
            )
        )
        return None
    return s, e


def _media_kind(iri: str) -> str | None:
    return {
        SC + "ImageObject": "IMAGE",
        SC + "AudioObject": "AUDIO",
        SC + "VideoObject": "VIDEO",
        SC + "Text": "TEXT",
    }.get(iri)


def _field_kinds(ctx: _Context, fields: Any, out: set[str]) -> None:
    for f in _values(fields):
        if not isinstance(f, dict):
            continue
        node = ctx.node(f)
        for t in _texts(node.get(CR + "dataType")):
            kind = _media_kind(ctx.expand(t))
            if kind:
                out.add(kind)
        _field_kinds(ctx, node.get(CR + "subField"), out)


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|bytes?|kB|MB|GB|TB|KiB|MiB|GiB|TiB)?\s*$")
_UNITS = {
    None: 1,
    "B": 1,
    "byte": 1,
    "bytes": 1,
    "kB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
}


def _content_size(text: str) -> int | None:
    m = _SIZE.match(text)
    if not m:
        return None
    value = float(m.group(1)) * _UNITS[m.group(2)]
    return int(value) if value.is_integer() or value >= 1 else None


def _is_a(ctx: _Context, node: Mapping[str, Any], iri: str) -> bool:
    return iri in {ctx.expand(t) for t in _texts(node.get("@type"))}


def _content(
    ctx: _Context, props: Mapping[str, Any], end: str | None, findings: list[ImportFinding]
) -> dict[str, Any]:
    kinds: set[str] = set()
    for rs in _values(props.get(CR + "recordSet")):
        if isinstance(rs, dict):
            _field_kinds(ctx, ctx.node(rs).get(CR + "field"), kinds)
    resources = [
        ctx.node(d) for d in _values(props.get(SC + "distribution")) if isinstance(d, dict)
    ]
    if not kinds:
        for res in resources:
            if not _is_a(ctx, res, CR + "FileSet"):
                continue
            for fmt in _texts(res.get(SC + "encodingFormat")):
                major = fmt.split("/", 1)[0].lower()
                kinds |= {"image": {"IMAGE"}, "audio": {"AUDIO"}, "video": {"VIDEO"}}.get(
                    major, {"TEXT"} if fmt.lower().startswith("text/plain") else set()
                )
    content: dict[str, Any] = {}
    modality = modality_of(kinds)
    if modality is not None:
        content["modality"] = modality
    langs: list[str] = []
    raw_langs: list[Any] = []
    for lang in _values(props.get(SC + "inLanguage")):
        if isinstance(lang, dict):
            node = ctx.node(lang)
            raw_langs.extend(
                _texts(node.get(SC + "alternateName"))[:1] or _texts(node.get(SC + "name"))[:1]
            )
        else:
            raw_langs.extend(_texts(lang))
    langs, lang_findings = languages(raw_langs, "inLanguage")
    findings.extend(lang_findings)
    if langs:
        content["languages"] = langs
    top = [
        r
        for r in resources
        if _is_a(ctx, r, CR + "FileObject") and not _present(r.get(CR + "containedIn"))
    ]
    if top:
        sizes = [_content_size(t) for r in top for t in _texts(r.get(SC + "contentSize"))[:1]]
        if len(sizes) == len(top) and all(s is not None for s in sizes):
            content["size"] = {"bytes": sum(sizes)}  # type: ignore[arg-type]
        else:
            findings.append(
                ImportFinding(
                    "size_unknown",
                    "distribution.contentSize",
                    "not every top-level FileObject states its contentSize in bytes or an SI/IEC "
                    "unit: size left out",
                )
            )
    if end is not None:
        content["latestCollectionDate"] = end
    if "modality" not in content:
        if content:
            findings.append(
                ImportFinding(
                    "modality_unknown",
                    "recordSet.field.dataType",
                    "modality unknown (no ImageObject/AudioObject/VideoObject/Text field): "
                    f"annex_content left out with {', '.join(sorted(content))}",
                )
            )
        return {}
    return content


def _personal(props: Mapping[str, Any], findings: list[ImportFinding]) -> dict[str, Any] | None:
    texts = _texts(props.get(RAI + "personalSensitiveInformation"))
    if not texts:
        return None
    if all(t.strip().strip(".").lower() in NEGATIVE for t in texts):
        return {"present": "no", "sensitive": "no"}
    summary = "; ".join(texts)
    findings.append(
        ImportFinding(
            "personal_data_review",
            "rai:personalSensitiveInformation",
            "personal or sensitive information described: present yes, sensitive noAssertion; "
            f"review: {summary[:300]}",
        )
    )
    return {"present": "yes", "sensitive": "noAssertion"}


def _crawl(
    props: Mapping[str, Any],
    period: tuple[str, str] | None,
    crawl: Mapping[str, Any] | None,
    findings: list[ImportFinding],
) -> dict[str, Any] | None:
    types = [
        t.lower().replace("-", " ").replace("_", " ")
        for t in _texts(props.get(RAI + "dataCollectionType"))
    ]
    scraped = any(" ".join(t.split()) in WEB_SCRAPING for t in types)
    path = "rai:dataCollectionType"
    if not scraped:
        if crawl is not None:
            findings.append(
                ImportFinding(
                    "crawl_ignored", path, "crawl= given but the document does not say Web Scraping"
                )
            )
        return None
    if period is None:
        findings.append(
            ImportFinding(
                "crawl_period_unknown",
                path,
                "Web Scraping without a collection timeframe: annex_crawl left out",
            )
        )
        return None
    if crawl is None:
        findings.append(
            ImportFinding(
                "crawl_facts_missing",
                path,
                f"Web Scraping from {period[0]} to {period[1]}, but Croissant does not record the "
                "crawler's name or opt-out behaviour that annex_crawl requires: pass crawl=",
            )
        )
        return None
    name = crawl.get("crawlerName")
    opt_out = crawl.get("optOut")
    if not isinstance(name, str) or not name.strip():
        raise ValueError("crawl['crawlerName'] must be a non-empty string")
    if not isinstance(opt_out, Mapping) or any(k not in opt_out for k in OPT_OUT_KEYS):
        raise ValueError(f"crawl['optOut'] must state {', '.join(OPT_OUT_KEYS)}")
    out: dict[str, Any] = {"crawlerName": name}
    if crawl.get("purpose") is not None:
        out["purpose"] = crawl["purpose"]
    out["collectionPeriod"] = {"start": period[0], "end": period[1]}
    out["optOut"] = dict(opt_out)
    if crawl.get("paywallPolicy") is not None:
        out["paywallPolicy"] = crawl["paywallPolicy"]
    return out


def _symlink(url: str, kind: str) -> dict[str, str] | None:
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return None
    name = parts.path.lstrip("/") or "/"
    if parts.query:
        name += "?" + parts.query
    return {"namespace": f"{parts.scheme}://{parts.netloc}", "name": name, "type": kind}


# ---------------------------------------------------------------------------------------------


def _load(document: dict[str, Any] | bytes | str) -> dict[str, Any]:
    if isinstance(document, bytes | bytearray | str):
        raw = document.encode("utf-8") if isinstance(document, str) else bytes(document)
        if len(raw) > MAX_DOCUMENT_BYTES:
            raise CroissantError("(document)", f"over {MAX_DOCUMENT_BYTES} bytes")
        try:
            document = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise CroissantError("(document)", f"not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise CroissantError("(document)", "a Croissant description is a JSON object")
    return document


def _check(ctx: _Context, doc: Mapping[str, Any], props: Mapping[str, Any]) -> str:
    if not _present(doc.get("@context")):
        raise CroissantError("@context", "missing")
    types = [ctx.expand(t) for t in _texts(props.get("@type"))]
    if not types:
        raise CroissantError("@type", "missing (must be sc:Dataset)")
    if SC + "Dataset" not in types:
        raise CroissantError("@type", f"{types} does not include sc:Dataset")
    conforms = [
        c.rstrip("/").replace("https://", "http://", 1)
        for c in _texts(props.get(DCT + "conformsTo"))
    ]
    if not conforms:
        raise CroissantError(
            "conformsTo", "missing (dct:conformsTo http://mlcommons.org/croissant/1.1)"
        )
    versions = [
        c.rsplit("/", 1)[1]
        for c in conforms
        if re.fullmatch(r"http://mlcommons\.org/croissant/\d+\.\d+", c)
    ]
    known = [v for v in versions if v in CROISSANT_VERSIONS]
    if not known:
        raise CroissantError(
            "conformsTo", f"{conforms} names no Croissant version {' or '.join(CROISSANT_VERSIONS)}"
        )
    version = max(known)
    for key in REQUIRED[version]:
        if not _present(props.get(SC + key)):
            raise CroissantError(key, f"missing (required by Croissant {version})")
    return version


def import_croissant(
    document: dict[str, Any] | bytes,
    *,
    namespace: str,
    name: str,
    producer: str,
    event_time: datetime,
    source_category: str = "PUBLIC_DATASET",
    crawl: Mapping[str, Any] | None = None,
) -> Imported:
    """Read a Croissant (+RAI) description into one DatasetEvent; see the module docstring."""
    check_common(namespace=namespace, name=name, producer=producer, event_time=event_time)
    check_source_category(source_category)
    doc = _load(document)
    ctx = _Context(doc.get("@context"))
    props = ctx.node(doc)
    _check(ctx, doc, props)
    findings: list[ImportFinding] = []
    facets: dict[str, Any] = {}

    licence = _licence(ctx, props.get(SC + "license"))
    findings.extend(licence.findings)
    facets["annex_licensing"] = facet(
        "annex_licensing",
        producer,
        {
            "spdxExpression": licence.spdx,
            "copyrightStatus": copyright_status(licence.spdx),
        },
    )

    source: dict[str, Any] = {"sourceCategory": source_category}
    free = props.get(SC + "isAccessibleForFree")
    if isinstance(free, dict):
        free = free.get("@value")
    if isinstance(free, bool):
        source["publiclyAvailable"] = free
    raw = _texts(props.get(RAI + "dataCollectionRawData")) or _texts(
        props.get(RAI + "dataCollectionRaw")
    )
    if raw:
        source["description"] = truncate(" ".join(raw), 4000, "rai:dataCollectionRawData", findings)
    facets["annex_source"] = facet("annex_source", producer, source)
    derived = _texts(props.get(PROV + "wasDerivedFrom"))
    for item in _values(props.get(PROV + "wasDerivedFrom")):
        if isinstance(item, dict) and "@id" in item and len(item) > 1:
            derived.append(str(item["@id"]))
    if derived:
        findings.append(
            ImportFinding(
                "derived_from",
                "prov:wasDerivedFrom",
                f"derived from {', '.join(derived)}: record that lineage with a run event",
            )
        )

    period = _timeframe(props, findings)
    content = _content(ctx, props, period[1] if period else None, findings)
    if content:
        facets["annex_content"] = facet("annex_content", producer, content)
    personal = _personal(props, findings)
    if personal is not None:
        facets["annex_personalData"] = facet("annex_personalData", producer, personal)
    crawl_facet = _crawl(props, period, crawl, findings)
    if crawl_facet is not None:
        facets["annex_crawl"] = facet("annex_crawl", producer, crawl_facet)

    description = " ".join(_texts(props.get(SC + "description")))
    if description:
        facets["documentation"] = facet(
            "documentation",
            producer,
            {"description": truncate(description, MAX_DESCRIPTION_CHARS, "description", findings)},
        )
    links: list[dict[str, str]] = []
    doc_id = doc.get("@id")
    if isinstance(doc_id, str) and (link := _symlink(doc_id, "CROISSANT_ID")):
        links.append(link)
    for key, kind in ((SC + "url", "URL"), (SC + "sameAs", "URL")):
        for url in _texts(props.get(key)):
            link = _symlink(url, kind)
            if (
                link
                and link not in links
                and (link["namespace"], link["name"]) != (namespace, name)
            ):
                links.append(link)
    if links:
        facets["symlinks"] = facet("symlinks", producer, {"identifiers": links})
    version = _texts(props.get(SC + "version"))
    if version:
        facets["version"] = facet("version", producer, {"datasetVersion": version[0]})

    event = dataset_event(
        namespace=namespace, name=name, facets=facets, producer=producer, event_time=event_time
    )
    return Imported(event, tuple(findings))


def croissant_event(
    document: dict[str, Any] | bytes,
    *,
    namespace: str,
    name: str,
    producer: str,
    event_time: datetime,
    source_category: str = "PUBLIC_DATASET",
    crawl: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The DatasetEvent of ``import_croissant`` (its findings dropped)."""
    return import_croissant(
        document,
        namespace=namespace,
        name=name,
        producer=producer,
        event_time=event_time,
        source_category=source_category,
        crawl=crawl,
    ).event
