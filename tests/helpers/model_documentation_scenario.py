"""A model "student" whose technical documentation is worked out by hand (the report tests'
known scenario): the training-content lineage of training_summary_scenario.py, its
pre-training run tied to a Kubernetes Job whose GPU holdings are in the inventory, the compute
and attestation marts refreshed by the real models, and a metadata file with some of the
documentation answers.

* Lineage: five sources (crawl, wiki, newswire, synthetic, mystery without a category: a gap
  in provenance), 3T tokens consumed by the pre-training run (T0 = 2025-06-01 08:00 UTC).
* Kubernetes: node-1 (pool ``h100-pool``, 8 NVIDIA H100 80GB HBM3), pod p1 of Job
  ``pretrain-1`` in ``team`` holds all 8 GPUs from T0 - 9 h to T0 + 1 h: 80 GPU-hours, 10
  wall-clock hours (0.42 days), 3.33 hardware-days. No attestation: all 80 are unattested.
* Compute ([compute] MFU 0.35, PUE 1.2, server overhead 1.5, power fraction 1.0):
  hardware 80 × 3600 × 989.4e12 × 0.35 = 9.97e19 FLOP; architecture 6 × 7e11 × 3e12 =
  1.26e25 FLOP is above the run's physical maximum 80 × 3600 × 989.4e12 = 2.85e20 FLOP (an
  error in the inputs: 3T tokens cannot pass through 8 GPUs in 10 hours), so the hardware
  figure is of record: 9.97e19 FLOP (band ±50 % at the assumed MFU), of the order of 10^19,
  below 10^25 (Annex XI section 2 not required). Energy of record: no telemetry, estimated
  80 × 0.7 kW × 1.8 / 1000 = 0.1008 MWh (0.101 to 3 significant figures), 0 % measured.
* The metadata file answers intended tasks, the AUP, distribution channels, formats, the
  context length, integration and evaluation; every other documentation answer is a gap.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from annex.model_registry import load_registry, registry_rows
from annex.settings import ComputeSettings, WarehouseSettings
from services.compute import PeakTable
from tests.helpers.lineage_warehouse import load, training_facet
from tests.helpers.training_summary_scenario import student_events
from warehouse import Warehouse
from warehouse.models.attestation_coverage import refresh_attestation_coverage
from warehouse.models.compute import refresh_compute

T0 = datetime(2025, 6, 1, 8, 0)
NOW = T0 + timedelta(days=1)
CONFIG = ComputeSettings(
    pue=1.2, server_overhead=1.5, power_fraction=1.0, default_mfu=0.35, disagreement_margin=0.3
)
GPU_HOURS = 80.0
HARDWARE_FLOP = 80 * 3600 * 989.4e12 * 0.35
ARCHITECTURE_FLOP = 6 * 700_000_000_000 * 3_000_000_000_000
ENERGY_MWH = 80 * 0.7 * 1.0 * 1.5 * 1.2 / 1000
MODEL_FILE = """\
name: student
provider: Example Labs
contact: ai-act@example.com
versions: [v1]
parameters: 700000000000
architecture: dense decoder-only transformer
licence: Apache-2.0
modalities: {input: [text], output: [text]}
release_date: 2026-10-01
documentation:
  intended_tasks: multilingual chat and summarisation
  acceptable_use_policy: https://example.com/aup
  distribution_channels: [API, weights download]
  input_formats: UTF-8 text
  output_formats: UTF-8 text
  context_length: 131072
  integration: OpenAI-compatible HTTP API; 8 GPUs with 80 GB each per replica
  evaluation: MMLU 71.2 and an internal multilingual suite; limitations in section 4
"""
OTHER_FILE = """\
name: planned-lm
provider: Example Labs
parameters: 1000000000
architecture: dense decoder-only transformer
licence: Apache-2.0
modalities: {input: [text], output: [text]}
"""


def build_documentation_scenario(
    directory: Path, *, model_file: str = MODEL_FILE, events: list[dict] | None = None
) -> tuple[Warehouse, Path]:
    """Create, fill and publish the warehouse; write the registry; return both. ``model_file``
    and ``events`` (student_events() by default) let a test put hostile strings in them."""
    models = directory / "models"
    models.mkdir()
    (models / "student.yaml").write_text(model_file, encoding="utf-8")
    (models / "planned-lm.yaml").write_text(OTHER_FILE, encoding="utf-8")
    wh = Warehouse(WarehouseSettings(path=directory / "w.duckdb", lock_timeout_seconds=5))
    events = events if events is not None else student_events()
    events[1]["run"]["facets"]["annex_trainingRun"] = training_facet(
        "student", "PRETRAINING", ("c", "team", "pretrain-1")
    )
    load(wh, events)
    with wh.writer() as con:
        con.execute(
            "INSERT INTO audit.collections (collection_id, source, cluster, started_at, "
            "finished_at, status) VALUES ('k8s-1', 'kubernetes', 'c', ?, ?, 'succeeded')",
            [T0 + timedelta(hours=2), T0 + timedelta(hours=2)],
        )
        con.execute(
            "INSERT INTO core.nodes (cluster, node_uid, node_name, node_pool, gfd_product, "
            "gpu_capacity, gpu_allocatable, gpu_resources, content_hash, valid_from, "
            "collection_id) VALUES ('c', 'uid-node-1', 'node-1', 'h100-pool', "
            "'NVIDIA-H100-80GB-HBM3', 8, 8, [{'resource_name': 'nvidia.com/gpu', "
            "'capacity': 8, 'allocatable': 8}], 0, ?, 'k8s-1')",
            [T0 - timedelta(days=1)],
        )
        con.execute(
            "INSERT INTO core.gpu_allocations (cluster, pod_uid, namespace, pod_name, job_name, "
            "node_name, resource_name, gpus, category, valid_from, valid_from_source, valid_to, "
            "opened_collection_id) VALUES ('c', 'uid-p1', 'team', 'p1', 'pretrain-1', 'node-1', "
            "'nvidia.com/gpu', 8, 'workload', ?, 'scheduled', ?, 'k8s-1')",
            [T0 - timedelta(hours=9), T0 + timedelta(hours=1)],
        )
        rows = registry_rows(load_registry(models))
        refresh_compute(con, CONFIG, rows, PeakTable(), now=NOW)
        refresh_attestation_coverage(con, since=T0 - timedelta(days=1))
    wh.publish()
    return wh, models
