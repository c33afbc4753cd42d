"""Conformance: annex's two validators give jsonschema's verdict on every event.

The two: the Python validator (``check_event``, which names the reason) and the fast path the
ingest runs first (``screen_event``: the same documents and rules compiled by jsonschema_rs).

The oracle is jsonschema's Draft202012Validator with a FormatChecker over a ``referencing``
registry of the vendored OpenLineage 2-0-2 schema and annex's facet schemas (their ``$ref``s to
``https://openlineage.io/...`` resolve locally). An event is valid for the oracle when it is
valid against the ``$defs`` kind its ``schemaURL`` fragment names (else against the document
root, oneOf the three kinds) and every ``annex_`` facet at a facets place of that kind is one
annex defines there and is valid against its schema.

jsonschema asserts ``date-time`` and ``uri`` only when rfc3339-validator and
rfc3986-validator are importable (its "format-nongpl" extra); without them the oracle would not
check those formats, so this module is skipped. Run it with
``uv run --with rfc3339-validator --with rfc3986-validator pytest <this file>``
until they are in the dev dependency group.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

# jsonschema asserts date-time and uri only with these two installed (dev group of the lock):
# without them the oracle would accept what annex rightly rejects, so the module must not run.
import rfc3339_validator  # noqa: F401
import rfc3986_validator  # noqa: F401
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from collectors.lineage import validate as V
from collectors.lineage.validate import check_event, screen_event, validate_event

OL = "https://openlineage.io/spec/2-0-2/OpenLineage.json"
ANNEX = "https://annex.dev/spec/facets/1-0-0/"
P = "https://github.com/acme/trainer/tree/3f2a9c1"
RUN_URL = f"{OL}#/$defs/RunEvent"
JOB_URL = f"{OL}#/$defs/JobEvent"
DS_URL = f"{OL}#/$defs/DatasetEvent"
RUN_ID = "0197c1a2-7b3e-7c11-9a2e-5d1f0b9e4a10"

# ------------------------------------------------------------------------------------------
# the oracle

_DOCS = V.load_schemas()
REGISTRY = Registry().with_resources(
    (uri, Resource.from_contents(doc, default_specification=DRAFT202012))
    for uri, doc in _DOCS.items()
)
FORMATS = FormatChecker()
assert {"uuid", "date-time", "uri", "date"} <= set(FORMATS.checkers)


def _validator(ref: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": ref}, registry=REGISTRY, format_checker=FORMATS)


ROOT = _validator(OL)
KIND = {k: _validator(f"{OL}#/$defs/{k}") for k in ("RunEvent", "JobEvent", "DatasetEvent")}
FACET_PLACES = {  # place -> {key: class}; independent of validate.ANNEX_FACETS on purpose
    "dataset": {
        "annex_source": "AnnexSourceDatasetFacet",
        "annex_licensing": "AnnexLicensingDatasetFacet",
        "annex_crawl": "AnnexCrawlDatasetFacet",
        "annex_content": "AnnexContentDatasetFacet",
        "annex_personalData": "AnnexPersonalDataDatasetFacet",
        "annex_illegalContent": "AnnexIllegalContentDatasetFacet",
    },
    "input": {"annex_trainingUsage": "AnnexTrainingUsageInputDatasetFacet"},
    "output": {},
    "run": {"annex_trainingRun": "AnnexTrainingRunRunFacet"},
    "job": {},
}
FACET = {
    cls: _validator(f"{ANNEX}{cls}.json#/$defs/{cls}")
    for by_key in FACET_PLACES.values()
    for cls in by_key.values()
}


def _fragment_kind(event: Any) -> str | None:
    if not isinstance(event, dict) or not isinstance(event.get("schemaURL"), str):
        return None
    url = event["schemaURL"]
    if "#" not in url:
        return None
    last = url.split("#")[-1].split("/")[-1]
    return last if last in KIND else None


def _places(event: dict[str, Any], kind: str):
    if kind == "DatasetEvent":
        yield "dataset", event["dataset"].get("facets", {})
        return
    if kind == "RunEvent":
        yield "run", event["run"].get("facets", {})
    yield "job", event["job"].get("facets", {})
    for side, place in (("inputs", "input"), ("outputs", "output")):
        for ds in event.get(side, []):
            yield "dataset", ds.get("facets", {})
            yield place, ds.get(f"{place}Facets", {})


def oracle(event: Any) -> bool:
    kind = _fragment_kind(event)
    if kind is not None:
        if not KIND[kind].is_valid(event):
            return False
    else:
        if not ROOT.is_valid(event):
            return False
        kind = next(k for k, v in KIND.items() if v.is_valid(event))
    for place, facets in _places(event, kind):  # the schema made these dicts
        for key, facet in facets.items():
            if key.startswith("annex_"):
                cls = FACET_PLACES[place].get(key)
                if cls is None or not FACET[cls].is_valid(facet):
                    return False
    return True


# ------------------------------------------------------------------------------------------
# the corpus of valid events


def base(schema_url: str = RUN_URL, **extra: Any) -> dict[str, Any]:
    event = {"eventTime": "2025-06-30T18:00:00Z", "producer": P, "schemaURL": schema_url}
    event.update(extra)
    return event


def fac(url: str = "https://annex.dev/spec/facets/1-0-0/X.json#/$defs/X", **fields: Any):
    return {"_producer": P, "_schemaURL": url, **fields}


ANNEX_DATASET_FACETS = {
    "annex_source": fac(sourceCategory="CRAWLED", publiclyAvailable=False, description="cc"),
    "annex_licensing": fac(
        spdxExpression="NOASSERTION",
        hfLicenseId=None,
        copyrightStatus="MIXED_THIRD_PARTY",
        tdmExceptionReliedOn="EU_DSM_ART4",
        licensor=None,
    ),
    "annex_crawl": fac(
        crawlerName="AcmeBot/2.1",
        purpose="AI_TRAINING",
        collectionPeriod={"start": "2024-10-01", "end": "2024-12-31"},
        optOut={
            "robotsTxt": "RESPECTED",
            "tdmrep": "RESPECTED",
            "ietfAipref": "RESPECTED",
            "aiTxt": "NOT_CHECKED",
            "checkedAt": "FETCH_TIME",
            "documentsExcluded": 18234411,
        },
        paywallPolicy="NO_CIRCUMVENTION",
    ),
    "annex_content": fac(
        modality="TEXT",
        contentTypes=["NON_FICTION", "NEWS"],
        languages=["en", "de", "zh-Hant"],
        size={"tokens": 612000000000, "bytes": 2450000000000, "items": 410000000},
        latestCollectionDate="2024-12-31",
        domainStats={
            "topN": [{"domain": "en.wikipedia.org", "tokens": 9100000000}],
            "fullStatsUri": "s3://corpora/stats/cc-2024q4-domains.parquet",
        },
    ),
    "annex_personalData": fac(
        present="yes", sensitive="noAssertion", measures=["PII_REGEX_REDACTION"]
    ),
    "annex_illegalContent": fac(measures=["CSAM_HASH_MATCH"], removedItems=12),
    "version": fac(
        "https://openlineage.io/spec/facets/1-0-1/DatasetVersionDatasetFacet.json"
        "#/$defs/DatasetVersionDatasetFacet",
        datasetVersion="lakefs:9c1e",
    ),
}

FULL = base(
    eventType="COMPLETE",
    run={
        "runId": RUN_ID,
        "facets": {
            "parent": fac(
                "https://openlineage.io/spec/facets/1-2-0/ParentRunFacet.json#/$defs/P",
                run={"runId": "0197c19f-0000-7000-8000-000000000001"},
                job={"namespace": "cluster-eu1", "name": "llm7b.campaign"},
            ),
            "annex_trainingRun": fac(
                stage="PRETRAINING",
                modelName="acme-7b",
                kubernetes={"cluster": "eu1", "namespace": "train", "jobName": "pretrain-7b"},
            ),
        },
    },
    job={
        "namespace": "cluster-eu1",
        "name": "llm7b.pretrain",
        "facets": {"jobType": fac(processingType="BATCH", integration="PYTORCH", jobType="JOB")},
    },
    inputs=[
        {
            "namespace": "crawl://acmebot",
            "name": "2024q4",
            "facets": ANNEX_DATASET_FACETS,
            "inputFacets": {
                "annex_trainingUsage": fac(
                    tokensConsumed=540000000000, epochs=0.88, samplingWeight=0.62
                )
            },
        },
        {
            "namespace": "hf://datasets",
            "name": "allenai/c4",
            "facets": {
                "annex_source": fac(sourceCategory="PUBLIC_DATASET", publiclyAvailable=True),
                "annex_licensing": fac(
                    spdxExpression="ODC-By-1.0",
                    hfLicenseId="odc-by",
                    copyrightStatus="OPEN_LICENSED",
                ),
            },
        },
    ],
    outputs=[
        {
            "namespace": "s3://ckpt",
            "name": "acme-7b/step-100000",
            "facets": {"datasetType": fac(datasetType="MODEL")},
            "outputFacets": {"outputStatistics": fac(rowCount=1, size=14000000000)},
        }
    ],
)


def hand_written() -> list[dict[str, Any]]:
    synthetic = copy.deepcopy(FULL)
    synthetic["inputs"][0]["facets"]["annex_source"] = fac(
        sourceCategory="SYNTHETIC", generatorModels=["acme-70b"]
    )
    deleted = copy.deepcopy(FULL)
    deleted["inputs"][1]["facets"]["annex_licensing"] = fac(_deleted=True)
    return [
        FULL,
        synthetic,
        deleted,
        base(run={"runId": RUN_ID}, job={"namespace": "n", "name": "j"}),  # no eventType
        base(
            eventType="START",
            eventTime="2025-06-30T18:00:00.123456+02:00",
            run={"runId": RUN_ID.upper()},
            job={"namespace": "n", "name": "j"},
        ),
        base(
            JOB_URL,
            job={"namespace": "n", "name": "j", "facets": {"custom_x": fac(a=1)}},
            inputs=[{"namespace": "s3://b", "name": "k"}],
            outputs=[],
        ),
        base(
            DS_URL,
            dataset={
                "namespace": "hf://datasets",
                "name": "org/repo",
                "facets": ANNEX_DATASET_FACETS,
            },
        ),
        base(
            "https://openlineage.io/spec/2-0-2/OpenLineage.json",  # no fragment: the root
            run={"runId": RUN_ID},
            job={"namespace": "n", "name": "j"},
        ),
        base("urn:x", dataset={"namespace": "n", "name": "d"}),
    ]


def from_client() -> list[dict[str, Any]]:
    from openlineage.client.event_v2 import (
        DatasetEvent,
        InputDataset,
        Job,
        JobEvent,
        OutputDataset,
        Run,
        RunEvent,
        RunState,
        StaticDataset,
    )
    from openlineage.client.facet_v2 import (
        dataset_type_dataset,
        documentation_dataset,
        error_message_run,
        job_type_job,
        parent_run,
        schema_dataset,
    )
    from openlineage.client.serde import Serde

    parent = parent_run.ParentRunFacet(
        run=parent_run.Run(runId="0197c19f-0000-7000-8000-000000000001"),
        job=parent_run.Job(namespace="cluster-eu1", name="campaign"),
    )
    schema = schema_dataset.SchemaDatasetFacet(
        fields=[schema_dataset.SchemaDatasetFacetFields(name="text", type="string")]
    )
    events: list[Any] = []
    for state in RunState:
        events.append(
            RunEvent(
                eventType=state,
                eventTime="2025-06-30T18:00:00.5+00:00",
                run=Run(runId=RUN_ID, facets={"parent": parent}),
                job=Job(
                    namespace="n",
                    name="j",
                    facets={
                        "jobType": job_type_job.JobTypeJobFacet(
                            processingType="BATCH", integration="PYTORCH"
                        )
                    },
                ),
                inputs=[InputDataset(namespace="s3://c", name="a", facets={"schema": schema})],
                outputs=[
                    OutputDataset(
                        namespace="s3://ckpt",
                        name="m",
                        facets={
                            "datasetType": dataset_type_dataset.DatasetTypeDatasetFacet(
                                datasetType="MODEL"
                            )
                        },
                    )
                ],
                producer=P,
            )
        )
    events.append(
        RunEvent(
            eventType=RunState.FAIL,
            eventTime="2025-06-30T18:00:00Z",
            run=Run(
                runId=RUN_ID,
                facets={
                    "errorMessage": error_message_run.ErrorMessageRunFacet(
                        message="oom", programmingLanguage="python"
                    )
                },
            ),
            job=Job(namespace="n", name="j"),
            producer=P,
        )
    )
    events.append(
        JobEvent(eventTime="2025-06-30T18:00:00Z", producer=P, job=Job(namespace="n", name="j"))
    )
    events.append(
        DatasetEvent(
            eventTime="2025-06-30T18:00:00Z",
            producer=P,
            dataset=StaticDataset(
                namespace="s3://c",
                name="a",
                facets={
                    "documentation": documentation_dataset.DocumentationDatasetFacet(
                        description="d"
                    )
                },
            ),
        )
    )
    return [json.loads(Serde.to_json(e)) for e in events]


CORPUS = hand_written() + from_client()


@pytest.mark.parametrize("event", CORPUS, ids=lambda e: e.get("schemaURL", "")[-12:])
def test_corpus_is_valid_for_both(event: dict[str, Any]) -> None:
    assert oracle(event), "the corpus event must be valid"
    assert validate_event(event) == []
    assert screen_event(event) == check_event(event)[0]


def test_kind_follows_fragment_then_keys() -> None:
    assert check_event(CORPUS[0])[0] == "RunEvent"
    assert check_event(base(JOB_URL, job={"namespace": "n", "name": "j"}))[0] == "JobEvent"
    root = base("urn:x", job={"namespace": "n", "name": "j"})
    assert check_event(root) == ("JobEvent", [])
    both = base(
        "urn:x", job={"namespace": "n", "name": "j"}, dataset={"namespace": "n", "name": "d"}
    )
    _kind, violations = check_event(both)  # JobEvent and DatasetEvent both match: oneOf fails
    assert violations and violations[0].keyword == "oneOf"
    assert not oracle(both)


# ------------------------------------------------------------------------------------------
# mutations

VALUES = [
    None,
    True,
    False,
    0,
    1,
    -1,
    1.5,
    2.0,
    "",
    "x",
    "START",
    "BOGUS",
    "COMPLETE",
    "2025-06-30T18:00:00",
    "2025-06-30T18:00:00z",
    "2025-06-30t18:00:00+01:00",
    "2025-02-29T00:00:00Z",
    "2024-02-29T00:00:00Z",
    "0000-01-01T00:00:00Z",
    "2025-06-30T24:00:00Z",
    "2025-06-30T18:00:60Z",
    "2025-06-30T18:00:00Z\n",
    "2025-06-30 18:00:00Z",
    "2024-02-29",
    "2024-02-30",
    "2024-1-01",
    RUN_ID,
    RUN_ID.upper(),
    "{" + RUN_ID + "}",
    "urn:uuid:" + RUN_ID,
    RUN_ID.replace("-", ""),
    RUN_ID[:-1],
    RUN_ID + "0",
    "+" + RUN_ID[1:],
    RUN_ID[:9] + "_" + RUN_ID[10:],
    "https://x/y",
    "https://x y",
    "urn:x",
    "s3://bucket/key",
    "http://[::1]:80/a?b#c",
    "relative/path",
    "http://%zz",
    "mailto:a@b",
    "https://x\n",
    "PRETRAINING",
    "MODEL",
    "TEXT",
    "yes",
    "NOASSERTION",
    "CRAWLED",
    "SYNTHETIC",
    "en",
    "en-",
    "RESPECTED",
    "FETCH_TIME",
    "MIXED_THIRD_PARTY",
    [],
    ["x"],
    [1],
    {},
    {"a": 1},
    fac(),
    {"_producer": "x y", "_schemaURL": "https://y"},
    {"_producer": P},
    {"namespace": "n", "name": "d"},
    {"runId": RUN_ID},
    RUN_URL,
    JOB_URL,
    DS_URL,
    f"{OL}#/$defs/Bogus",
]
KEYS = [
    "eventType",
    "run",
    "job",
    "dataset",
    "inputs",
    "outputs",
    "facets",
    "inputFacets",
    "outputFacets",
    "runId",
    "namespace",
    "name",
    "_deleted",
    "_producer",
    "annex_source",
    "annex_trainingRun",
    "annex_trainingUsage",
    "annex_bogus",
    "generatorModels",
    "x",
]


def _paths(node: Any, path: tuple = ()) -> list[tuple]:
    out = [path]
    if isinstance(node, dict):
        for k, v in node.items():
            out.extend(_paths(v, (*path, k)))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.extend(_paths(v, (*path, i)))
    return out


def _get(node: Any, path: tuple) -> Any:
    for p in path:
        node = node[p]
    return node


def _set(root: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    _get(root, path[:-1])[path[-1]] = value
    return root


def _in_annex_facet(path: tuple) -> bool:
    return any(isinstance(p, str) and p.startswith("annex_") for p in path)


@st.composite
def mutated(draw: st.DrawFn, annex_only: bool = False) -> Any:
    event: Any = copy.deepcopy(draw(st.sampled_from(CORPUS[:3] if annex_only else CORPUS)))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(event)
        if annex_only:
            paths = [p for p in paths if _in_annex_facet(p)] or paths
        path = draw(st.sampled_from(paths))
        node = _get(event, path)
        op = draw(st.sampled_from(["delete", "replace", "add", "string", "number"]))
        if op == "delete" and path:
            parent = _get(event, path[:-1])
            del parent[path[-1]]
        elif op == "replace":
            event = _set(event, path, copy.deepcopy(draw(st.sampled_from(VALUES))))
        elif op == "add" and isinstance(node, dict):
            node[draw(st.sampled_from(KEYS))] = copy.deepcopy(draw(st.sampled_from(VALUES)))
        elif op == "add" and isinstance(node, list):
            node.append(copy.deepcopy(draw(st.sampled_from(VALUES))))
        elif op == "string" and isinstance(node, str) and path:
            how = draw(st.sampled_from(["trunc", "space", "upper", "lower", "nl", "char"]))
            if how == "trunc":
                node = node[:-1]
            elif how == "space":
                node = node[: len(node) // 2] + " " + node[len(node) // 2 :]
            elif how == "upper":
                node = node.upper()
            elif how == "lower":
                node = node.lower()
            elif how == "nl":
                node += "\n"
            else:
                i = draw(st.integers(0, len(node)))
                node = node[:i] + draw(st.sampled_from(list("-:#/%[]{}_+Z T"))) + node[i:]
            event = _set(event, path, node)
        elif op == "number" and path:
            event = _set(event, path, draw(st.sampled_from([-1, 0, 2**40, 1e300, -0.5, 3.0])))
    return event


@pytest.mark.slow
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_events_get_the_oracle_verdict(event: Any) -> None:
    assert_both_agree(event)


@pytest.mark.slow
@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(annex_only=True))
def test_mutated_annex_facets_get_the_oracle_verdict(event: Any) -> None:
    assert_both_agree(event)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(CORPUS), st.sampled_from(VALUES), st.sampled_from(KEYS))
def test_unknown_top_level_keys_and_facets(event: dict, value: Any, key: str) -> None:
    event = copy.deepcopy(event)
    event[key] = value
    assert_both_agree(event)


def test_non_objects() -> None:
    for value in [None, 1, "x", [], [FULL], True]:
        assert validate_event(value) and not oracle(value)
        assert screen_event(value) is None


def assert_both_agree(event: Any) -> None:
    """Both annex validators give the oracle's verdict, and the same kind when valid."""
    verdict = oracle(event)
    kind, violations = check_event(event)
    assert (not violations) == verdict, (violations, json.dumps(event)[:2000])
    screened = screen_event(event)
    assert (screened is not None) == verdict, ("fast path", json.dumps(event)[:2000])
    if verdict:
        assert screened == kind


FORMAT_EDGES = [
    "2025-06-30T18:00:00Z\n",  # rfc3339-validator anchors with $: a trailing newline passes
    "2025-06-30t18:00:00z",
    "2025-06-30T18:00:00",
    "2025-02-30T18:00:00Z",
    "2025-06-30T24:00:00Z",
    "2025-06-30T18:00:00.123456789+23:59",
    # outside the fast path's common spellings (days 29-31, year 0): the Python test decides
    "2024-02-29T18:00:00Z",
    "2023-02-29T18:00:00Z",
    "2025-01-31T18:00:00+01:00",
    "0000-06-30T18:00:00Z",
]
URI_EDGES = [
    *["https://x\n", "urn:x", "no scheme", "https://[::1]/", "https://ex ample.com", ""],
    *["https://x/a?b=c", "https://x/%41", "https://x/%zz", "https://u@x:8080/a", "https://x/#a#b"],
]
UUID_EDGES = [
    *[RUN_ID.upper(), "{" + RUN_ID + "}", "urn:uuid:" + RUN_ID, RUN_ID.replace("-", "")],
    "0197c1a_-7b3e-7c11-9a2e-5d1f0b9e4a10",  # uuid.UUID reads hex through int(): "_" passes
    RUN_ID[:-1] + "g",
]


@pytest.mark.parametrize("text", FORMAT_EDGES)
def test_fast_path_asserts_date_time_as_the_oracle(text: str) -> None:
    assert_both_agree(
        base(job={"namespace": "n", "name": "j"}, run={"runId": RUN_ID}) | {"eventTime": text}
    )


@pytest.mark.parametrize("text", URI_EDGES)
def test_fast_path_asserts_uri_as_the_oracle(text: str) -> None:
    assert_both_agree(
        base(job={"namespace": "n", "name": "j"}, run={"runId": RUN_ID}) | {"producer": text}
    )


@pytest.mark.parametrize("text", UUID_EDGES)
def test_fast_path_asserts_uuid_as_the_oracle(text: str) -> None:
    assert_both_agree(base(job={"namespace": "n", "name": "j"}, run={"runId": text}))


@pytest.mark.parametrize("language", ["en\n", "en\n\n", "zh-Hant", "e1", "x-\n"])
def test_fast_path_matches_patterns_as_python(language: str) -> None:
    """jsonschema's ``re.search`` lets a final ``$`` match before a trailing newline."""
    event = copy.deepcopy(CORPUS[0])
    for item in event.get("inputs", []):
        content = item.get("facets", {}).get("annex_content")
        if content is not None:
            content["languages"] = [language]
            break
    else:
        pytest.fail("the corpus's first event has no annex_content facet")
    assert_both_agree(event)


@settings(max_examples=300, deadline=None)
@given(st.data())
@pytest.mark.parametrize("name", sorted(V.COMMON_FORMAT_PATTERNS))
def test_common_format_spellings_pass_the_format(name: str, data: st.DataObject) -> None:
    """The fast path skips the format test for a value of its common pattern: each such value
    must pass that test, and jsonschema's."""
    text = data.draw(st.from_regex(V.COMMON_FORMAT_PATTERNS[name], fullmatch=True))
    assert V.FORMATS[name](text), (name, text)
    assert FORMATS.conforms(text, name), (name, text)


def test_fast_path_keeps_every_format_behind_its_common_pattern() -> None:
    """Every asserted format of the fast documents is still there, as the second branch of an
    anyOf whose first is its common pattern; no other keyword changes."""
    seen: set[str] = set()

    def walk(fast: Any, original: Any) -> None:
        if isinstance(original, list):
            assert isinstance(fast, list) and len(fast) == len(original)
            for a, b in zip(fast, original, strict=True):
                walk(a, b)
            return
        if not isinstance(original, dict):
            assert fast == original
            return
        name = original.get("format")
        if name in V.COMMON_FORMAT_PATTERNS:
            seen.add(name)
            assert "format" not in fast
            *kept, either = fast["allOf"]
            assert either == {
                "anyOf": [{"pattern": V.COMMON_FORMAT_PATTERNS[name]}, {"format": name}]
            }
            walk(kept, original.get("allOf", []))
            assert set(fast) - {"allOf"} == set(original) - {"format", "allOf"}
        else:
            assert set(fast) == set(original)
            if "allOf" in original:
                walk(fast["allOf"], original["allOf"])
        for key in set(original) - {"format", "allOf"}:
            walk(fast[key], original[key])

    for document in _DOCS.values():
        walk(V._each_schema(document, V._common_format_first), document)
    assert seen == set(V.COMMON_FORMAT_PATTERNS)  # no pattern without a format to stand for


def test_every_reference_of_the_vendored_documents_is_to_a_definition() -> None:
    """The fast path rewrites the schemas it finds under the applicator keywords; a ``$ref``
    into anything else (an annotation, a data value) would reach a schema it never saw."""
    refs: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            refs.extend([node["$ref"]] if isinstance(node.get("$ref"), str) else [])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(_DOCS)
    assert refs
    for ref in refs:
        document, _, pointer = ref.partition("#")
        assert document in ("", *_DOCS) and pointer.count("/") == 2, ref
        assert pointer.startswith("/$defs/"), ref


_DATA_AND_SCHEMAS = {
    "type": "object",
    "properties": {
        # properties named like data keywords: schemas, rewritten
        "default": {"type": "string", "pattern": "^v1$"},
        "enum": {"type": "string", "format": "uri"},
        # data keywords: values compared as they are, never rewritten
        "const": {"const": {"pattern": "^c$", "format": "uuid"}},
        "listed": {"enum": [{"pattern": "^e$"}, {"format": "date"}]},
        "tuple": {"type": "array", "prefixItems": [{"pattern": "^t$"}]},
    },
    "default": {"pattern": "^d$"},
    "examples": [{"format": "uri"}],
    "x-note": {"pattern": "^n$"},
}


@pytest.mark.parametrize(
    "instance",
    [
        {"default": "v1"},
        {"default": "v1\n"},  # Python's $ matches before a final newline: valid
        {"default": "v2"},
        {"enum": "https://example.com/a"},
        {"enum": "not a uri"},
        {"const": {"pattern": "^c$", "format": "uuid"}},
        {"const": {"pattern": "^c\\n?$", "format": "uuid"}},
        {"listed": {"pattern": "^e$"}},
        {"listed": {"format": "date"}},
        {"listed": {"allOf": [{"anyOf": [{"format": "date"}]}]}},
        {"tuple": ["t\n"]},
        {"tuple": ["u"]},
    ],
)
def test_fast_document_rewrites_schemas_never_data(instance: dict[str, Any]) -> None:
    """Rewritten for the fast path (patterns anchored as Python reads them, common formats
    first), a schema gives jsonschema's verdict on every instance: the rewrite reaches the
    schemas under properties named like data keywords and leaves data values alone."""
    import jsonschema_rs

    fast = jsonschema_rs.Draft202012Validator(
        V._fast_document(_DATA_AND_SCHEMAS),
        validate_formats=True,
        formats={"uri": V.is_uri, "uuid": V.is_uuid, "date": V.is_date},
    )
    oracle = Draft202012Validator(_DATA_AND_SCHEMAS, format_checker=FORMATS)
    assert fast.is_valid(instance) == oracle.is_valid(instance)


def test_fast_path_never_fetches() -> None:
    """A $ref outside the vendored documents is refused, not fetched."""
    import jsonschema_rs

    registry = jsonschema_rs.Registry(list(V.load_schemas().items()), retriever=V._no_retrieval)
    with pytest.raises(jsonschema_rs.ValidationError, match="Retrieval is disabled"):
        jsonschema_rs.Draft202012Validator(
            {"$ref": "https://openlineage.io/spec/facets/1-0-0/Missing.json"},
            registry=registry,
            offline=True,
        )


def test_official_facet_bases_are_those_of_the_official_schema() -> None:
    """The fast path leaves each annex facet's base out because the official document applies
    it to every facet of that place; that holds only while these are the document's bases."""
    defs = _DOCS[OL]["$defs"]
    maps = {
        "run": defs["Run"]["properties"]["facets"],
        "job": defs["Job"]["properties"]["facets"],
        "dataset": defs["Dataset"]["properties"]["facets"],
        "input": defs["InputDataset"]["allOf"][1]["properties"]["inputFacets"],
        "output": defs["OutputDataset"]["allOf"][1]["properties"]["outputFacets"],
    }
    for place, facets in maps.items():
        (branch,) = facets["anyOf"]
        assert branch["additionalProperties"] == {
            "$ref": f"#/$defs/{V.OFFICIAL_FACET_BASES[place]}"
        }, place
    fast = V._without_official_bases(_DOCS)
    for (place, _key), cls in V.ANNEX_FACETS.items():
        loaded = _DOCS[f"{ANNEX}{cls}.json"]["$defs"][cls]["allOf"]  # left as it was
        assert loaded[0] == {"$ref": f"{OL}#/$defs/{V.OFFICIAL_FACET_BASES[place]}"}, cls
        assert fast[f"{ANNEX}{cls}.json"]["$defs"][cls]["allOf"] == loaded[1:], cls


@pytest.mark.parametrize(
    ("place", "change"),
    [
        ("run", {"_producer": "not a uri"}),
        ("input", {"_schemaURL": "https://x\n\n"}),
        ("dataset", {"_producer": None}),
        ("dataset", {"_deleted": "yes"}),
        ("dataset", {"_schemaURL": "urn:x"}),  # a valid uri: accepted
    ],
)
def test_fast_path_checks_the_base_of_annex_facets(place: str, change: dict) -> None:
    """An annex facet's ``_producer``, ``_schemaURL`` and ``_deleted`` are still checked once
    the fast path leaves its base to the official schema."""
    event = copy.deepcopy(FULL)
    if place == "run":
        facet = event["run"]["facets"]["annex_trainingRun"]
    elif place == "input":
        facet = event["inputs"][0]["inputFacets"]["annex_trainingUsage"]
    else:
        facet = event["inputs"][1]["facets"]["annex_source"]
    facet.update(change)
    if change.get("_producer", "") is None:
        del facet["_producer"]
    assert_both_agree(event)
    assert (screen_event(event) is None) == ("urn:x" not in change.values())


# ------------------------------------------------------------------------------------------
# formats: the same functions as jsonschema's checkers

TEXT = st.text(
    alphabet=st.sampled_from(list("0123456789abcdefABCDEF-:TtZz.+ /#?[]%@_{}\n")), max_size=40
)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None)
@given(st.one_of(TEXT, st.sampled_from([v for v in VALUES if isinstance(v, str)])))
def test_formats_match_jsonschema(text: str) -> None:
    for name, ours in V.FORMATS.items():
        assert ours(text) == FORMATS.conforms(text, name), (name, text)


@settings(max_examples=800, deadline=None)
@given(
    st.builds(
        lambda d, t, f, z: f"{d}T{t}{f}{z}",
        st.dates().map(str),
        st.times().map(lambda t: t.strftime("%H:%M:%S")),
        st.sampled_from(["", ".5", ".123456789"]),
        st.sampled_from(["Z", "z", "+00:00", "-23:59", "+24:00", "", "+0100"]),
    )
)
def test_datetime_matches_jsonschema(text: str) -> None:
    assert V.is_datetime(text) == FORMATS.conforms(text, "date-time"), text


@settings(max_examples=2000, deadline=None)
@given(st.text(max_size=30).map(lambda s: "https://" + s))
def test_uri_matches_jsonschema(text: str) -> None:
    assert V.is_uri(text) == FORMATS.conforms(text, "uri"), text
