"""OpenLineage events for a simulated world's training runs, and their delivery.

`build_events(world)` emits, with openlineage-python's `event_v2` classes, the lineage of
every model the world trains (simulator.world.workloads.MODELS), from the sources of
`simulator.lineage.catalog` to the checkpoints of the world's Kubernetes training Jobs:

    crawl://... --[filter]--> s3://annex-sim-corpora/filtered/<crawl>     (DATA_PROCESSING)
    filtered + hf:// + licensed + ... --[mixture]--> s3://annex-sim-datasets/<model>/shards
    shards --[basetrain]--> s3://annex-sim-checkpoints/<model>/base        (PRETRAINING, MODEL)
    <teacher>/base + seed corpus --[synthgen]--> s3://annex-sim-synthetic/<model>/...
                                                                  (SYNTHETIC_GENERATION)
    synthetic + instructions + user data --[instructmix]--> .../<model>/instruct
    world Job "<model>-pretrain|ablation-*":  shards -> <model>/<job>           (PRETRAINING)
    world Job "<model>-sft|rlhf|finetune-*":  base + instruct -> <model>/<job>  (FINE_TUNING)

The seed corpus a family's synthetic generation reads is also in its pretraining mixture, so
every fine-tuned checkpoint sits below a diamond: one corpus version, two stages (mixture,
synthetic generation), one model. Each stage is a run under its model's campaign (`parent`
facet), started and ended by START and COMPLETE/FAIL events; the world's runs end as the
world says (running and starting: START only; queued: nothing yet, no trainer has started).
Their job is named after the Kubernetes Job (`annex-sim://<namespace>`, `<job name>`,
the namespace the world's trainers get in OPENLINEAGE_NAMESPACE) and their `annex_trainingRun`
facet carries the cluster, namespace and Job name. Run ids are UUIDv7 whose time is the
run's start and whose random bits hash the world's seed and run id, so they are stable.

Everything is made up, so every event and facet names the simulator as its producer.

Delivery: `deliver` posts the events with openlineage-python's HTTP transport, shuffled and
with some sent twice; `write_jsonl` writes them for the file-ingest path;
`malformed_bodies`/`post_malformed` make and send one bad body per `MALFORMED_KINDS`.
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
import math
import random
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import attr
from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import (
    InputDataset,
    Job,
    OutputDataset,
    Run,
    RunEvent,
    RunState,
)
from openlineage.client.facet_v2 import (
    DatasetFacet,
    InputDatasetFacet,
    RunFacet,
    dataset_type_dataset,
    dataset_version_dataset,
    error_message_run,
    job_type_job,
    parent_run,
    processing_engine_run,
)
from openlineage.client.serde import Serde
from openlineage.client.transport.http import (
    ApiKeyTokenProvider,
    HttpCompression,
    HttpConfig,
    HttpTransport,
    TokenProvider,
)

from simulator.lineage.catalog import (
    DERIVED,
    FAMILIES,
    TEACHERS,
    Catalog,
    Source,
    build_catalog,
    seed_corpus,
)
from simulator.world.dra import GPU_CLASS
from simulator.world.model import TrainingRun, World
from simulator.world.workloads import MODELS

PRODUCER = "https://annex.dev/simulator/lineage"  # "simulator": everything here is made up
FACET_SCHEMA_BASE = "https://annex.dev/spec/facets/1-0-0/"
DEFAULT_CLUSTER = "simulated"  # the cluster name the other stand-ins report
JOB_NAMESPACE_PREFIX = "annex-sim://"  # OPENLINEAGE_NAMESPACE of the world's trainers
CHECKPOINTS = "s3://annex-sim-checkpoints"
DATASETS = "s3://annex-sim-datasets"  # DATASET_URI of the world's trainers
CORPORA = "s3://annex-sim-corpora"
SYNTHETIC = "s3://annex-sim-synthetic"
STAGES = {  # the world's job-name stage -> annex_trainingRun.stage
    "pretrain": "PRETRAINING",
    "ablation": "PRETRAINING",
    "sft": "FINE_TUNING",
    "rlhf": "FINE_TUNING",
    "finetune": "FINE_TUNING",
}
CORPORA_CAMPAIGN = "web-corpora"  # the shared crawl-filtering runs' campaign and modelName


def _schema(name: str) -> str:
    return f"{FACET_SCHEMA_BASE}{name}.json#/$defs/{name}"


# ---- annex facets (the contract's; field names are the JSON keys) ------------------------


@attr.define
class AnnexSourceDatasetFacet(DatasetFacet):
    sourceCategory: str
    publiclyAvailable: bool
    description: str
    generatorModels: list[str] | None = None

    @staticmethod
    def _get_schema() -> str:
        return _schema("AnnexSourceDatasetFacet")


@attr.define
class AnnexLicensingDatasetFacet(DatasetFacet):
    spdxExpression: str
    copyrightStatus: str
    hfLicenseId: str | None = None
    tdmExceptionReliedOn: str | None = None
    licensor: str | None = None

    @staticmethod
    def _get_schema() -> str:
        return _schema("AnnexLicensingDatasetFacet")


@attr.define
class AnnexCrawlDatasetFacet(DatasetFacet):
    crawlerName: str
    purpose: str
    collectionPeriod: dict[str, str]
    optOut: dict[str, Any]
    paywallPolicy: str

    @staticmethod
    def _get_schema() -> str:
        return _schema("AnnexCrawlDatasetFacet")


@attr.define
class AnnexContentDatasetFacet(DatasetFacet):
    modality: str
    contentTypes: list[str]
    languages: list[str]
    size: dict[str, int]
    latestCollectionDate: str | None = None
    domainStats: dict[str, Any] | None = None

    @staticmethod
    def _get_schema() -> str:
        return _schema("AnnexContentDatasetFacet")


@attr.define
class AnnexPersonalDataDatasetFacet(DatasetFacet):
    present: str
    sensitive: str
    measures: list[str]

    @staticmethod
    def _get_schema() -> str:
        return _schema("AnnexPersonalDataDatasetFacet")


@attr.define
class AnnexIllegalContentDatasetFacet(DatasetFacet):
    measures: list[str]
    removedItems: int

    @staticmethod
    def _get_schema() -> str:
        return _schema("AnnexIllegalContentDatasetFacet")


@attr.define
class AnnexTrainingUsageInputDatasetFacet(InputDatasetFacet):
    tokensConsumed: int
    epochs: float
    samplingWeight: float

    @staticmethod
    def _get_schema() -> str:
        return _schema("AnnexTrainingUsageInputDatasetFacet")


@attr.define
class AnnexTrainingRunRunFacet(RunFacet):
    stage: str
    modelName: str
    kubernetes: dict[str, str]
    purpose: str | None = attr.field(default=None)
    method: str | None = attr.field(default=None)
    resources: dict[str, Any] | None = attr.field(default=None)
    generation: dict[str, Any] | None = attr.field(default=None)

    @staticmethod
    def _get_schema() -> str:
        return _schema("AnnexTrainingRunRunFacet")


# ---- identifiers -----------------------------------------------------------------------


def uuid7(moment: datetime, key: str) -> str:
    """A UUIDv7 (RFC 9562): `moment` in its 48-bit millisecond field, random bits from `key`."""
    millis = int(moment.timestamp() * 1000) & ((1 << 48) - 1)
    digest = int.from_bytes(hashlib.sha256(key.encode()).digest()[:10], "big")
    rand_a = digest >> 68  # 12 bits
    rand_b = digest & ((1 << 62) - 1)
    value = (millis << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


ACTIVE_PARAMETERS = {  # N of 6·N·D of the world's models (their files in simulator/models/)
    "annex-lm-400b": 80e9,
    "llama-70b": 70e9,
    "mixtral-8x22b": 39e9,
    "codegen-34b": 34e9,
    "vit-h14": 632e6,
    "dit-xl": 675e6,
    "clip-l14": 428e6,
    "whisper-large": 1.55e9,
    "protein-fold": 650e6,
}
WHOLE_GPU_RESOURCES = ("nvidia.com/gpu", GPU_CLASS)
"""What a run's ``gpu_resource`` names when its pods hold whole GPUs: the device plugin's
resource, or the DRA device class its claims request (``gpus_per_pod`` each, as many)."""


JOB_PEAK_TFLOPS = {  # dense bf16 TFLOP/s of the world's GPU products (NVIDIA's datasheets)
    "NVIDIA-H100-80GB-HBM3": 989.4,
    "NVIDIA-A100-SXM4-80GB": 312.0,
    "NVIDIA-A100-SXM4-40GB": 312.0,
    "NVIDIA-GB200": 2500.0,
}
BASE_TRAINING_GPU = "NVIDIA-H100-80GB-HBM3"  # the GFD product label of the H100 SXM
BASE_TRAINING_MFU = 0.4  # the utilisation a base pre-training run's GPU count is sized for


def declared_hardware(
    model: str, tokens: float, hours: float, flop_per_token: int = 6
) -> tuple[dict[str, Any], float]:
    """The hardware a run before the world's cluster inventory declares
    (annex_trainingRun.resources: only its producer knows it), and the hours it then takes.
    Sized so that ``flop_per_token``·N·D (6 for training, 2 for generation) takes ``hours`` on
    H100s (989.4 dense bf16 TFLOP/s) at 40 % MFU, in whole nodes of 8; a job too small for one
    node runs on one node for as long as it needs."""
    flop = flop_per_token * ACTIVE_PARAMETERS[model] * tokens
    gpu_seconds = flop / (989.4e12 * BASE_TRAINING_MFU)
    gpus = max(8, 8 * math.ceil(gpu_seconds / (hours * 3600) / 8))
    hours = min(hours, gpu_seconds / gpus / 3600)
    return {"gpuCount": gpus, "gpuProduct": BASE_TRAINING_GPU}, hours


def generated(model: str, kept_tokens: int) -> dict[str, Any]:
    """What a synthetic-data generation run produced (annex_trainingRun.generation): the kept
    samples are 30-69 % of all it generated (a filter discards the rest), fixed per model."""
    kept_share = 0.30 + (zlib.crc32(model.encode()) % 40) / 100
    tokens = round(kept_tokens / kept_share)
    kept_samples = max(1, kept_tokens // 700)
    return {
        "tokensGenerated": tokens,
        "samplesGenerated": round(kept_samples / kept_share),
        "samplesKept": kept_samples,
    }


def run_uuid(world: World, run: TrainingRun) -> str:
    """The OpenLineage run id of one of the world's training runs."""
    return uuid7(run.started or world.now, f"annex-sim-lineage:{world.seed}:{run.run_id}")


def _time(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# ---- datasets --------------------------------------------------------------------------


@dataclass(frozen=True)
class Dataset:
    """One dataset version as every event that reads or writes it describes it."""

    namespace: str
    name: str
    facets: dict[str, DatasetFacet]

    @property
    def version(self) -> str | None:
        facet = self.facets.get("version")
        return getattr(facet, "datasetVersion", None)

    def read(self, usage: AnnexTrainingUsageInputDatasetFacet | None = None) -> InputDataset:
        facets = {"annex_trainingUsage": usage} if usage is not None else {}
        return InputDataset(self.namespace, self.name, inputFacets=facets, facets=self.facets)

    def written(self) -> OutputDataset:
        return OutputDataset(self.namespace, self.name, facets=self.facets)


def _version(value: str) -> dataset_version_dataset.DatasetVersionDatasetFacet:
    return dataset_version_dataset.DatasetVersionDatasetFacet(value, producer=PRODUCER)


def _content(
    modality: str,
    content_types: Sequence[str],
    languages: Sequence[str],
    tokens: int,
    size: int,
    items: int,
    latest: str | None,
    domains: Sequence[tuple[str, int]] = (),
    stats_uri: str | None = None,
) -> AnnexContentDatasetFacet:
    stats = None
    if domains:
        stats = {"topN": [{"domain": d, "tokens": t} for d, t in domains]}
        if stats_uri:
            stats["fullStatsUri"] = stats_uri
    return AnnexContentDatasetFacet(
        modality=modality,
        contentTypes=list(content_types),
        languages=list(languages),
        size={"tokens": tokens, "bytes": size, "items": items},
        latestCollectionDate=latest,
        domainStats=stats,
        producer=PRODUCER,
    )


def source_dataset(source: Source) -> Dataset:
    """A catalogue source as a dataset with every annex facet that applies to it."""
    present, sensitive, measures = source.personal_data
    facets: dict[str, DatasetFacet] = {
        "version": _version(source.version),
        "annex_source": AnnexSourceDatasetFacet(
            sourceCategory=source.category,
            publiclyAvailable=source.publicly_available,
            description=source.description,
            generatorModels=list(source.generator_models) or None,
            producer=PRODUCER,
        ),
        "annex_licensing": AnnexLicensingDatasetFacet(
            spdxExpression=source.spdx,
            copyrightStatus=source.copyright_status,
            hfLicenseId=source.hf_license_id,
            tdmExceptionReliedOn=source.tdm_exception,
            licensor=source.licensor,
            producer=PRODUCER,
        ),
        "annex_content": _content(
            source.modality,
            source.content_types,
            source.languages,
            source.tokens,
            source.bytes,
            source.items,
            source.latest_collection.isoformat(),
            source.top_domains,
            source.stats_uri,
        ),
        "annex_personalData": AnnexPersonalDataDatasetFacet(
            present=present, sensitive=sensitive, measures=list(measures), producer=PRODUCER
        ),
    }
    if source.crawl is not None:
        c = source.crawl
        facets["annex_crawl"] = AnnexCrawlDatasetFacet(
            crawlerName=c.crawler,
            purpose=c.purpose,
            collectionPeriod={"start": c.start.isoformat(), "end": c.end.isoformat()},
            optOut={
                "robotsTxt": c.robots_txt,
                "tdmrep": c.tdmrep,
                "ietfAipref": c.ietf_aipref,
                "aiTxt": c.ai_txt,
                "checkedAt": c.checked_at,
                "documentsExcluded": c.documents_excluded,
            },
            paywallPolicy=c.paywall_policy,
            producer=PRODUCER,
        )
    return Dataset(source.namespace, source.name, facets)


def _derived(
    namespace: str,
    name: str,
    version: str,
    description: str,
    content: AnnexContentDatasetFacet,
    *,
    category: str = DERIVED,
    generators: Sequence[str] = (),
    extra: dict[str, DatasetFacet] | None = None,
) -> Dataset:
    facets: dict[str, DatasetFacet] = {
        "version": _version(version),
        "annex_source": AnnexSourceDatasetFacet(
            sourceCategory=category,
            publiclyAvailable=False,
            description=description,
            generatorModels=list(generators) or None,
            producer=PRODUCER,
        ),
        "annex_content": content,
        **(extra or {}),
    }
    return Dataset(namespace, name, facets)


def _checkpoint(model: str, name: str, version: str | None) -> Dataset:
    facets: dict[str, DatasetFacet] = {
        "datasetType": dataset_type_dataset.DatasetTypeDatasetFacet(
            datasetType="MODEL", subType="CHECKPOINT", producer=PRODUCER
        )
    }
    if version is not None:
        facets["version"] = _version(version)
    return Dataset(CHECKPOINTS, f"{model}/{name}", facets)


# ---- runs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Parent:
    run_id: str
    namespace: str
    name: str

    def facet(self) -> parent_run.ParentRunFacet:
        return parent_run.ParentRunFacet(
            run=parent_run.Run(runId=self.run_id),
            job=parent_run.Job(namespace=self.namespace, name=self.name),
            producer=PRODUCER,
        )


@dataclass(frozen=True)
class StageRun:
    """One run of one stage: what it read and wrote, when, and how it ended."""

    run_id: str
    k8s_namespace: str
    job_name: str
    stage: str
    model: str
    start: datetime
    end: datetime | None  # None: still running
    outcome: str | None  # "COMPLETE" | "FAIL" | None (running)
    inputs: tuple[InputDataset, ...]
    outputs: tuple[OutputDataset, ...]
    parent: Parent | None
    error: str | None = None
    purpose: str | None = None  # annex_trainingRun.purpose: ABLATION for the world's ablations
    method: str | None = None  # annex_trainingRun.method of a FINE_TUNING run (RL for rlhf)
    resources: dict[str, Any] | None = None  # hardware declared by a run no inventory saw
    generation: dict[str, Any] | None = None  # all a generator produced, kept or discarded


def _events(run: StageRun, cluster: str) -> list[RunEvent]:
    job = Job(
        namespace=JOB_NAMESPACE_PREFIX + run.k8s_namespace,
        name=run.job_name,
        facets={
            "jobType": job_type_job.JobTypeJobFacet(
                processingType="BATCH",
                integration="ANNEX_SIM_TRAINER",
                jobType="JOB",
                producer=PRODUCER,
            )
        },
    )
    facets: dict[str, RunFacet] = {
        "annex_trainingRun": AnnexTrainingRunRunFacet(
            stage=run.stage,
            modelName=run.model,
            kubernetes={
                "cluster": cluster,
                "namespace": run.k8s_namespace,
                "jobName": run.job_name,
            },
            purpose=run.purpose,
            method=run.method,
            resources=run.resources,
            generation=run.generation,
            producer=PRODUCER,
        ),
        "processing_engine": processing_engine_run.ProcessingEngineRunFacet(
            version="2.9.0", name="torch", openlineageAdapterVersion="1.54.0", producer=PRODUCER
        ),
    }
    if run.parent is not None:
        facets["parent"] = run.parent.facet()
    events = [
        RunEvent(
            eventType=RunState.START,
            eventTime=_time(run.start),
            producer=PRODUCER,
            run=Run(runId=run.run_id, facets=dict(facets)),
            job=job,
            inputs=list(run.inputs),
            outputs=list(run.outputs),
        )
    ]
    if run.outcome is not None and run.end is not None:
        if run.outcome == "FAIL":
            facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
                message=run.error or "training job failed",
                programmingLanguage="python",
                producer=PRODUCER,
            )
        events.append(
            RunEvent(
                eventType=RunState.COMPLETE if run.outcome == "COMPLETE" else RunState.FAIL,
                eventTime=_time(run.end),
                producer=PRODUCER,
                run=Run(runId=run.run_id, facets=facets),
                job=job,
                inputs=list(run.inputs),
                outputs=list(run.outputs) if run.outcome == "COMPLETE" else [],
            )
        )
    return events


def _campaign_event(parent: Parent, start: datetime) -> RunEvent:
    """The campaign's own START: the parent run exists, and is still going."""
    return RunEvent(
        eventType=RunState.START,
        eventTime=_time(start),
        producer=PRODUCER,
        run=Run(runId=parent.run_id),
        job=Job(
            namespace=parent.namespace,
            name=parent.name,
            facets={
                "jobType": job_type_job.JobTypeJobFacet(
                    processingType="BATCH",
                    integration="ANNEX_SIM_TRAINER",
                    jobType="CAMPAIGN",
                    producer=PRODUCER,
                )
            },
        ),
    )


FAILURES = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB",
    "torch.distributed.DistBackendError: NCCL communicator was aborted (watchdog timeout)",
    "RuntimeError: loss is NaN at step 18432; stopping",
)


class _Lineage:
    """Builds the whole graph of one world; see the module docstring for its shape."""

    def __init__(self, world: World, catalog: Catalog, cluster: str) -> None:
        self.world = world
        self.catalog = catalog
        self.cluster = cluster
        self.rng = random.Random(f"annex-simulator-lineage:{world.seed}")
        self.now = world.now
        # each node's GPU product (GFD label), read once: every world Job's token plan needs it
        self.node_products = {
            n["metadata"]["name"]: n["metadata"]["labels"].get("nvidia.com/gpu.product", "")
            for n in world.nodes
        }
        self.runs: list[StageRun] = []
        self.campaign_events: list[RunEvent] = []
        self.sources = {k: source_dataset(s) for k, s in catalog.sources.items()}
        self.filtered: dict[str, Dataset] = {}
        self.shards: dict[str, Dataset] = {}
        self.base: dict[str, Dataset] = {}
        self.base_end: dict[str, datetime] = {}
        self.instruct: dict[str, Dataset] = {}
        self.pretrain_tokens: dict[str, int] = {}
        self.parents: dict[str, Parent] = {}

    # -- helpers
    def _suffix(self) -> str:
        return f"{self.rng.getrandbits(20):05x}"

    def _parent(self, key: str, namespace: str, name: str, start: datetime) -> Parent:
        if key not in self.parents:
            parent = Parent(
                uuid7(start, f"annex-sim-lineage:{self.world.seed}:campaign:{key}"),
                JOB_NAMESPACE_PREFIX + namespace,
                name,
            )
            self.parents[key] = parent
            self.campaign_events.append(_campaign_event(parent, start))
        return self.parents[key]

    def _stage(
        self,
        label: str,
        namespace: str,
        job_name: str,
        stage: str,
        model: str,
        start: datetime,
        hours: float,
        inputs: Iterable[InputDataset],
        outputs: Iterable[OutputDataset],
        parent: Parent,
        **facet_fields: Any,
    ) -> datetime:
        end = start + timedelta(hours=hours)
        self.runs.append(
            StageRun(
                run_id=uuid7(start, f"annex-sim-lineage:{self.world.seed}:{label}"),
                k8s_namespace=namespace,
                job_name=job_name,
                stage=stage,
                model=model,
                start=start,
                end=end,
                outcome="COMPLETE",
                inputs=tuple(inputs),
                outputs=tuple(outputs),
                parent=parent,
                **facet_fields,
            )
        )
        return end

    def _usage(
        self, tokens: int, weight: float, budget: int
    ) -> AnnexTrainingUsageInputDatasetFacet:
        consumed = int(budget * weight)
        return AnnexTrainingUsageInputDatasetFacet(
            tokensConsumed=consumed,
            epochs=round(consumed / max(1, tokens), 3),
            samplingWeight=weight,
            producer=PRODUCER,
        )

    # -- the graph
    def build(self) -> list[RunEvent]:
        self._filter_crawls()
        for model, _ in MODELS:
            self._model(model)
        for model, _ in MODELS:
            self._instruct(model)
        for run in self.world.training_runs:
            self._world_run(run)
        events = list(self.campaign_events)
        for run in self.runs:
            events.extend(_events(run, self.cluster))
        events.sort(key=lambda e: (e.eventTime, e.run.runId, e.eventType != RunState.START))
        return events

    def _filter_crawls(self) -> None:
        first = min(s.crawl.start for s in self.catalog.crawls if s.crawl is not None)
        campaign_start = datetime(first.year, first.month, first.day, tzinfo=UTC)
        parent = self._parent("corpora", "research", f"{CORPORA_CAMPAIGN}.campaign", campaign_start)
        for source in self.catalog.crawls:
            assert source.crawl is not None
            key = source.key.removeprefix("crawl-")
            end = source.crawl.end
            start = datetime(end.year, end.month, end.day, tzinfo=UTC) + timedelta(
                days=self.rng.uniform(1, 4)
            )
            kept = self.rng.uniform(0.35, 0.55)
            removed = int(source.items * self.rng.uniform(0.001, 0.004))
            version = f"{source.version}-f{self._suffix()}"
            namespace = "team-vision" if source.modality == "IMAGE" else "team-llm"
            out = _derived(
                CORPORA,
                f"filtered/{source.name}",
                version,
                f"Simulated: {source.name} after deduplication, quality and safety filtering",
                _content(
                    source.modality,
                    list(source.content_types),
                    source.languages,
                    int(source.tokens * kept),
                    int(source.bytes * kept),
                    int(source.items * kept),
                    source.latest_collection.isoformat(),
                    [(d, int(t * kept)) for d, t in source.top_domains],
                    source.stats_uri,
                ),
                extra={
                    "annex_personalData": AnnexPersonalDataDatasetFacet(
                        present="yes",
                        sensitive="noAssertion",
                        measures=["EMAIL_PHONE_REGEX_REDACTION", "PII_NER_REDACTION"],
                        producer=PRODUCER,
                    ),
                    "annex_illegalContent": AnnexIllegalContentDatasetFacet(
                        measures=["CSAM_HASH_MATCHING", "URL_BLOCKLIST", "TOXICITY_CLASSIFIER"],
                        removedItems=removed,
                        producer=PRODUCER,
                    ),
                },
            )
            self.filtered[source.key] = out
            self._stage(
                f"filter:{source.key}",
                namespace,
                f"corpus-filter-{key}-{self._suffix()}",
                "DATA_PROCESSING",
                CORPORA_CAMPAIGN,  # shared by several models: named after its campaign
                start,
                self.rng.uniform(20, 70),
                [self.sources[source.key].read()],
                [out.written()],
                parent,
            )

    def _dataset(self, key: str) -> Dataset:
        if key.startswith("filtered:"):
            return self.filtered[key.removeprefix("filtered:")]
        return self.sources[key]

    def _tokens(self, dataset: Dataset) -> int:
        content = dataset.facets["annex_content"]
        assert isinstance(content, AnnexContentDatasetFacet)
        return content.size["tokens"]

    def _model(self, model: str) -> None:
        family = FAMILIES[model]
        namespace = dict(MODELS)[model]
        now = self.now
        start = now - timedelta(days=60, hours=self.rng.uniform(0, 48))
        parent = self._parent(model, namespace, f"{model}.campaign", start - timedelta(hours=1))
        # tokenised pretraining mixture
        mix = self.catalog.pretraining[family]
        budget = {"text": 1.5e13, "code": 4e12, "image": 3e11, "audio": 8e9, "protein": 2e9}
        budget_tokens = int(budget[family] * self.rng.uniform(0.8, 1.2))
        self.pretrain_tokens[model] = budget_tokens
        inputs = [
            self._dataset(k).read(self._usage(self._tokens(self._dataset(k)), w, budget_tokens))
            for k, w in mix
        ]
        first = self._dataset(mix[0][0])
        content = first.facets["annex_content"]
        assert isinstance(content, AnnexContentDatasetFacet)
        shards = _derived(
            DATASETS,
            f"{model}/shards",
            f"mix-{self._suffix()}",
            f"Simulated: tokenised pretraining mixture of {model}",
            _content(
                content.modality,
                ["TOKENISED_MIXTURE"],
                sorted({lang for k, _ in mix for lang in self._langs(k)}),
                budget_tokens,
                budget_tokens * 2,
                budget_tokens // 8192,
                None,
            ),
        )
        self.shards[model] = shards
        end = self._stage(
            f"mixture:{model}",
            namespace,
            f"{model}-mixture-{self._suffix()}",
            "DATA_PROCESSING",
            model,
            start,
            self.rng.uniform(10, 40),
            inputs,
            [shards.written()],
            parent,
        )
        # base pretraining
        base = _checkpoint(model, "base", f"base-{self._suffix()}")
        self.base[model] = base
        base_start = end + timedelta(hours=self.rng.uniform(2, 24))
        resources, base_hours = declared_hardware(
            model, budget_tokens, self.rng.uniform(24 * 20, 24 * 30)
        )
        self.base_end[model] = self._stage(
            f"basetrain:{model}",
            namespace,
            f"{model}-basetrain-{self._suffix()}",
            "PRETRAINING",
            model,
            base_start,
            base_hours,
            [shards.read(self._usage(budget_tokens, 1.0, budget_tokens))],
            [base.written()],
            parent,
            resources=resources,
        )

    def _langs(self, key: str) -> list[str]:
        content = self._dataset(key).facets["annex_content"]
        assert isinstance(content, AnnexContentDatasetFacet)
        return content.languages

    def _instruct(self, model: str) -> Dataset:
        """Synthetic generation and the fine-tuning mixture, made when first needed."""
        if model in self.instruct:
            return self.instruct[model]
        family = FAMILIES[model]
        namespace = dict(MODELS)[model]
        parent = self.parents[model]
        teacher = TEACHERS[family]
        seed_key = seed_corpus(self.catalog, family)
        seed = self._dataset(seed_key)
        start = max(self.base_end[teacher], self.base_end[model]) + timedelta(
            hours=self.rng.uniform(2, 12)
        )
        tokens = int(self._tokens(seed) * self.rng.uniform(0.002, 0.01))
        content = seed.facets["annex_content"]
        assert isinstance(content, AnnexContentDatasetFacet)
        synthetic = _derived(
            SYNTHETIC,
            f"{model}/synthetic-{family}-{self._suffix()}",
            f"gen-{self._suffix()}",
            f"Simulated: data written by {teacher} from its seed corpus for {model}",
            _content(
                content.modality,
                ["SYNTHETIC_INSTRUCTIONS"],
                content.languages[:3],
                tokens,
                tokens * 4,
                max(1, tokens // 700),
                None,
            ),
            category="SYNTHETIC",
            generators=[teacher],
            extra={
                "annex_licensing": AnnexLicensingDatasetFacet(
                    spdxExpression="NOASSERTION",
                    copyrightStatus="OWN_CONTENT",
                    tdmExceptionReliedOn="NONE",
                    producer=PRODUCER,
                )
            },
        )
        generation = generated(model, tokens)
        resources, hours = declared_hardware(
            teacher, generation["tokensGenerated"], self.rng.uniform(8, 36), 2
        )
        end = self._stage(
            f"synthgen:{model}",
            namespace,
            f"{model}-synthgen-{self._suffix()}",
            "SYNTHETIC_GENERATION",
            teacher,
            start,
            hours,
            [self.base[teacher].read(), seed.read()],
            [synthetic.written()],
            parent,
            generation=generation,
            resources=resources,
        )
        mix = [*self.catalog.fine_tuning[family]]
        weight = round(1.0 - sum(w for _, w in mix), 3)
        parts = [(self._dataset(k), w) for k, w in mix] + [(synthetic, weight)]
        total = sum(self._tokens(d) for d, _ in parts)
        budget_tokens = int(min(total, 5e10) * self.rng.uniform(0.5, 0.9))
        instruct = _derived(
            DATASETS,
            f"{model}/instruct",
            f"ift-{self._suffix()}",
            f"Simulated: tokenised fine-tuning mixture of {model}",
            _content(
                content.modality,
                ["TOKENISED_MIXTURE"],
                content.languages[:3],
                budget_tokens,
                budget_tokens * 2,
                max(1, budget_tokens // 4096),
                None,
            ),
        )
        end = self._stage(
            f"instructmix:{model}",
            namespace,
            f"{model}-instructmix-{self._suffix()}",
            "DATA_PROCESSING",
            model,
            end + timedelta(hours=self.rng.uniform(1, 6)),
            self.rng.uniform(2, 8),
            [d.read(self._usage(self._tokens(d), w, budget_tokens)) for d, w in parts],
            [instruct.written()],
            parent,
        )
        self.instruct[model] = instruct
        # the campaign's released fine-tuned model: base + instruct (closes the diamond)
        release_start = end + timedelta(hours=self.rng.uniform(2, 12))
        release_hardware, release_hours = declared_hardware(
            model, budget_tokens, self.rng.uniform(12, 48)
        )
        self._stage(
            f"release:{model}",
            namespace,
            f"{model}-release-{self._suffix()}",
            "FINE_TUNING",
            model,
            release_start,
            release_hours,
            [
                self.base[model].read(),
                instruct.read(self._usage(budget_tokens, 1.0, budget_tokens)),
            ],
            [_checkpoint(model, "release-v1", f"rel-{self._suffix()}").written()],
            parent,
            method="SUPERVISED",
            resources=release_hardware,
        )
        return instruct

    def _job_tokens(self, run: TrainingRun, model: str) -> int:
        """The tokens a world Job trains on (its START plans the whole run): what its GPUs
        process at 45-59 % of their dense peak (the training role's tensor activity) over its
        span; a running Job plans 1.5-3 times the time it has run so far. Fixed per Job."""
        gpus = run.pods * run.gpus_per_pod if run.gpu_resource in WHOLE_GPU_RESOURCES else 1
        peak = min(
            (JOB_PEAK_TFLOPS.get(self.node_products.get(node, ""), 312.0) for node in run.nodes),
            default=312.0,
        )
        key = zlib.crc32(run.job_name.encode())
        start = run.started or self.now
        end = run.finished or start + (self.now - start) * (1.5 + (key % 150) / 100)
        mfu = 0.45 + (key // 150 % 15) / 100
        seconds = max(60.0, (end - start).total_seconds())
        return max(1, int(gpus * seconds * peak * 1e12 * mfu / (6 * ACTIVE_PARAMETERS[model])))

    def _world_run(self, run: TrainingRun) -> None:
        if run.state == "queued" or run.started is None:
            return  # no trainer has started, so nothing has been emitted yet
        model = run.model if run.model in FAMILIES else None
        if model is None:
            return
        word = run.job_name[len(model) + 1 :].rsplit("-", 1)[0]
        stage = STAGES.get(word, "PRETRAINING")
        shards = self.shards[model]
        if stage == "PRETRAINING":
            self.rng.uniform(0.3, 1.0)  # kept: the draws after it stay as they were
            budget = self._job_tokens(run, model)
            inputs = [shards.read(self._usage(self._tokens(shards), 1.0, budget))]
            if word != "ablation":  # continued pre-training resumes from the base checkpoint
                inputs.insert(0, self.base[model].read())
        else:
            instruct = self._instruct(model)
            tokens = self._tokens(instruct)
            self.rng.choice((1, 2, 3))  # kept: the draws after it stay as they were
            consumed = self._job_tokens(run, model)
            inputs = [
                self.base[model].read(),
                instruct.read(
                    AnnexTrainingUsageInputDatasetFacet(
                        tokensConsumed=consumed,
                        epochs=round(consumed / max(1, tokens), 3),
                        samplingWeight=1.0,
                        producer=PRODUCER,
                    )
                ),
            ]
        outcome = {"completed": "COMPLETE", "failed": "FAIL"}.get(run.state)
        error = self.rng.choice(FAILURES) if outcome == "FAIL" else None
        self.runs.append(
            StageRun(
                run_id=run_uuid(self.world, run),
                k8s_namespace=run.namespace,
                job_name=run.job_name,
                stage=stage,
                model=model,
                start=run.started,
                end=run.finished,
                outcome=outcome,
                inputs=tuple(inputs),
                outputs=(_checkpoint(model, run.job_name, None).written(),),
                parent=self.parents[model],
                error=error,
                purpose="ABLATION" if word == "ablation" else None,
                method={"rlhf": "RL", "sft": "SUPERVISED", "finetune": "SUPERVISED"}.get(word),
            )
        )


def build_events(
    world: World, *, cluster: str = DEFAULT_CLUSTER, catalog: Catalog | None = None
) -> list[RunEvent]:
    """Every lineage event of `world`, in event-time order; identical for the same world."""
    catalog = catalog or build_catalog(world.seed, world.now)
    return _Lineage(world, catalog, cluster).build()


def to_json(event: RunEvent) -> str:
    """One event as the OpenLineage JSON openlineage-python sends (nulls left out)."""
    return Serde.to_json(event)


def write_jsonl(events: Iterable[RunEvent], path: str | Path) -> int:
    """Write one event per line (the file-ingest path); returns how many were written."""
    count = 0
    with Path(path).open("w", encoding="utf-8") as out:
        for event in events:
            out.write(to_json(event))
            out.write("\n")
            count += 1
    return count


# ---- delivery ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Delivery:
    """What `deliver` sent: positions into the original `events`, in sending order."""

    order: list[int]
    duplicates: list[int]  # indexes sent twice
    requests: int


def delivery_order(
    count: int, *, shuffle_seed: int = 0, duplicate_fraction: float = 0.05
) -> tuple[list[int], list[int]]:
    """The order `deliver` sends `count` events in: shuffled, with some sent twice.

    A duplicate is re-sent later than its first copy, as a retrying producer would.
    """
    if not 0.0 <= duplicate_fraction <= 1.0:
        raise ValueError(f"duplicate_fraction must be in [0, 1], got {duplicate_fraction}")
    rng = random.Random(f"annex-simulator-lineage-delivery:{shuffle_seed}")
    order = list(range(count))
    rng.shuffle(order)
    duplicates = sorted(rng.sample(range(count), round(count * duplicate_fraction)))
    for index in duplicates:
        first = order.index(index)
        order.insert(rng.randint(first + 1, len(order)), index)
    return order, duplicates


class _BatchHttpTransport(HttpTransport):
    """openlineage-python's HTTP transport, posting a JSON array to `/lineage/batch`.

    The client has no batch call; this reuses the transport's session (retries), auth
    headers and gzip compression, and only changes the body and the endpoint.
    """

    def emit_batch(self, events: Sequence[RunEvent]) -> None:
        body = "[" + ",".join(Serde.to_json(e) for e in events) + "]"
        data, headers = self._prepare_request(body)
        response = self.session.post(
            url=urljoin(self.url, self.endpoint + "/batch"),
            data=data,
            headers=headers,
            timeout=self.timeout,
            verify=self.verify,
        )
        response.close()
        response.raise_for_status()


def deliver(
    events: Sequence[RunEvent],
    url: str,
    *,
    token: str | None = None,
    batch_size: int = 1,
    shuffle_seed: int = 0,
    duplicate_fraction: float = 0.05,
    timeout: float = 10.0,
    compression: bool = True,
) -> Delivery:
    """POST `events` to an OpenLineage HTTP endpoint out of order and with duplicates.

    `url` is the server's base URL (`https://annex.example:8080/`); events go to
    `api/v1/lineage` one per request, or, with `batch_size` > 1, as JSON arrays of up to
    `batch_size` events to `api/v1/lineage/batch`. Single events go through
    `OpenLineageClient.emit`, which adds its `tags` run facet
    (`openlineage_client_version`) and honours the usual OpenLineage client configuration;
    batches go through the same HTTP transport without them. `events` are not modified.
    `token` is sent as `Authorization: Bearer`; bodies are gzip-compressed unless
    `compression` is false. Raises the transport's `requests.HTTPError` on a response that
    is not 2xx (after its retries).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    order, duplicates = delivery_order(
        len(events), shuffle_seed=shuffle_seed, duplicate_fraction=duplicate_fraction
    )
    config = HttpConfig(
        url=url,
        endpoint="api/v1/lineage",
        timeout=timeout,
        auth=ApiKeyTokenProvider({"api_key": token}) if token else TokenProvider({}),
        compression=HttpCompression.GZIP if compression else None,
    )
    requests = 0
    if batch_size == 1:
        client = OpenLineageClient(transport=HttpTransport(config))
        try:
            for index in order:
                # the client adds its tags facet to the event it is given: send a copy
                client.emit(copy.deepcopy(events[index]))
                requests += 1
        finally:
            client.close()
    else:
        transport = _BatchHttpTransport(config)
        try:
            for at in range(0, len(order), batch_size):
                transport.emit_batch([events[i] for i in order[at : at + batch_size]])
                requests += 1
        finally:
            transport.close()
    return Delivery(order=order, duplicates=duplicates, requests=requests)


# ---- faults: malformed deliveries (the ingester's bad-input table) -------------------------

MALFORMED_KINDS = (
    "invalid_json",  # a body that is not JSON at all
    "missing_run_id",  # run without runId
    "non_uuid_run_id",  # runId that is not a UUID
    "unknown_event_type",  # eventType outside the spec's enum
    "naive_event_time",  # eventTime without a timezone
    "future_event_time",  # eventTime two days ahead of the newest event
    "truncated_gzip",  # Content-Encoding: gzip, body cut short
)


@dataclass(frozen=True)
class Malformed:
    """One bad request body: `body` is what goes on the wire (gzip-compressed or not)."""

    kind: str
    body: bytes
    gzip: bool


def malformed_bodies(events: Sequence[RunEvent], *, seed: int = 0) -> list[Malformed]:
    """One bad body per `MALFORMED_KINDS`, each made from a real event of `events`."""
    if not events:
        raise ValueError("malformed_bodies needs at least one event to spoil")
    rng = random.Random(f"annex-simulator-lineage-malformed:{seed}")
    newest = max(datetime.fromisoformat(e.eventTime.replace("Z", "+00:00")) for e in events)
    out = []
    for kind in MALFORMED_KINDS:
        event = json.loads(to_json(rng.choice(events)))
        if kind == "invalid_json":
            text = to_json(rng.choice(events))
            out.append(Malformed(kind, text[: len(text) // 2].encode(), False))
            continue
        if kind == "missing_run_id":
            del event["run"]["runId"]
        elif kind == "non_uuid_run_id":
            event["run"]["runId"] = f"run-{rng.getrandbits(32):08x}"
        elif kind == "unknown_event_type":
            event["eventType"] = "PAUSED"
        elif kind == "naive_event_time":
            event["eventTime"] = event["eventTime"].removesuffix("Z")
        elif kind == "future_event_time":
            event["eventTime"] = _time(newest + timedelta(days=2))
        body = json.dumps(event).encode()
        if kind == "truncated_gzip":
            packed = gzip.compress(body)
            out.append(Malformed(kind, packed[: len(packed) // 2], True))
        else:
            out.append(Malformed(kind, body, False))
    return out


def post_malformed(
    bodies: Iterable[Malformed], url: str, *, token: str | None = None, timeout: float = 10.0
) -> dict[str, int]:
    """POST each bad body to `url`'s `api/v1/lineage`; returns the HTTP status per kind.

    Plain `urllib`: openlineage-python cannot send what is not an event.
    """
    statuses = {}
    for bad in bodies:
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if bad.gzip:
            headers["Content-Encoding"] = "gzip"
        request = urllib.request.Request(
            urljoin(url, "api/v1/lineage"), data=bad.body, headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                statuses[bad.kind] = response.status
        except urllib.error.HTTPError as error:
            statuses[bad.kind] = error.code
            error.close()
    return statuses


__all__ = [
    "DEFAULT_CLUSTER",
    "MALFORMED_KINDS",
    "PRODUCER",
    "AnnexContentDatasetFacet",
    "AnnexCrawlDatasetFacet",
    "AnnexIllegalContentDatasetFacet",
    "AnnexLicensingDatasetFacet",
    "AnnexPersonalDataDatasetFacet",
    "AnnexSourceDatasetFacet",
    "AnnexTrainingRunRunFacet",
    "AnnexTrainingUsageInputDatasetFacet",
    "Delivery",
    "Malformed",
    "build_events",
    "deliver",
    "delivery_order",
    "malformed_bodies",
    "post_malformed",
    "run_uuid",
    "to_json",
    "uuid7",
    "write_jsonl",
]
