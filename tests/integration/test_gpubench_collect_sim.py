"""The gpubench collector against the simulated API server, over real sockets.

What the collector should find is worked out here from the world itself (its probe pods,
``World.pod_logs`` and ``World.probe_faults``) with deliberately simple code, not annex's, so
the collector cannot agree with the test by construction.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from annex.settings import GpubenchSettings, KubernetesSettings, Settings
from collectors.gpubench import CollectStats, collect_gpubench
from collectors.gpubench.schema import SCHEMAS
from collectors.kubernetes import api_client_for
from simulator.kubernetes import Fault, SimulatedCluster
from simulator.world import World, build_world

pytestmark = pytest.mark.integration

NS = "annex-probes"
LABEL = ("app.kubernetes.io/name", "annex-gpubench")

PLANTED_REASON = {
    "truncated_json": "malformed_json",
    "above_peak": "above_peak",
    "negative_time": "negative_value",
}
"""What each planted fault is rejected as. ``foreign_gpu`` (a GPU UUID of another node) is the
warehouse's to catch (it needs other records and telemetry); ``duplicate`` is an exact repeat,
dropped and counted."""


@pytest.fixture(scope="module")
def world() -> World:
    return build_world(60, seed=7)


@pytest.fixture
def sim(world: World, tmp_path: Path):
    with SimulatedCluster(world) as cluster:
        cluster.write_kubeconfig(tmp_path / "kubeconfig")
        yield cluster


def collect(
    sim: SimulatedCluster,
    tmp_path: Path,
    *,
    known: frozenset[str] = frozenset(),
    stats: CollectStats | None = None,
    **bench: Any,
) -> dict[str, list[dict[str, Any]]]:
    kubernetes = KubernetesSettings(page_size=7, max_retries=2, max_backoff_seconds=0.05)
    settings = Settings(kubernetes=kubernetes, gpubench=GpubenchSettings(**bench))
    api = api_client_for(
        kubeconfig=tmp_path / "kubeconfig", context=None, in_cluster=False, settings=kubernetes
    )
    tables: dict[str, list[dict[str, Any]]] = {name: [] for name in SCHEMAS}
    for table, batch in collect_gpubench(api, "sim", settings, known_pod_uids=known, stats=stats):
        assert batch.schema == SCHEMAS[table], table
        tables[table].extend(batch.to_pylist())
    return tables


# --- the world, read simply ------------------------------------------------------------------


def probe_pods(world: World) -> dict[str, dict]:
    """Finished probe pods by name, straight from the world's objects."""
    return {
        p["metadata"]["name"]: p
        for p in world.pods
        if p["metadata"].get("namespace") == NS
        and p["metadata"].get("labels", {}).get(LABEL[0]) == LABEL[1]
        and p["status"].get("phase") in ("Succeeded", "Failed")
    }


def expected(world: World) -> dict[str, Any]:
    """Per pod: JSON lines, text lines; and the record ids, rejections and repeats overall."""
    bad = {
        (f.pod, f.line): PLANTED_REASON[kind]
        for kind, f in world.probe_faults.items()
        if kind in PLANTED_REASON
    }
    per_pod: dict[str, dict[str, int]] = {}
    accepted: set[str] = set()
    rejected: set[tuple[str, str]] = set()
    seen_lines: set[str] = set()
    repeats = 0
    for name in probe_pods(world):
        text = world.pod_logs[(NS, name)]
        records = text_lines = 0
        for number, line in enumerate(text.split("\n"), start=1):
            if not line.startswith("{"):
                text_lines += bool(line.strip())
                continue
            if (name, number) in bad:
                rejected.add((f"{NS}/{name} line {number}", bad[(name, number)]))
                continue
            if line in seen_lines:
                repeats += 1
                continue
            seen_lines.add(line)
            accepted.add(json.loads(line)["record_id"])
            records += 1
        per_pod[name] = {
            "records": records,
            "rejected": sum(1 for pod, _ in bad if pod == name),
            "text_lines": text_lines,
            "log_bytes": len(text.encode()),
        }
    return {"pods": per_pod, "accepted": accepted, "rejected": rejected, "repeats": repeats}


# ---------------------------------------------------------------------------------------------


def test_every_probe_pod_is_read_and_the_planted_faults_rejected(sim, world, tmp_path):
    want = expected(world)
    assert world.probe_faults and len(want["pods"]) == len(world.probe_pods) > 1
    stats = CollectStats()
    tables = collect(sim, tmp_path, stats=stats)

    pods = {row["pod"]: row for row in tables["gpubench_pods"]}
    assert set(pods) == set(want["pods"])
    for name, row in pods.items():
        obj = probe_pods(world)[name]
        assert {k: row[k] for k in want["pods"][name]} == want["pods"][name], name
        assert row["pod_uid"] == obj["metadata"]["uid"]
        assert row["node"] == obj["spec"]["nodeName"]
        assert row["job"] == world.probe_job
        assert (row["phase"], row["log_truncated"]) == ("Succeeded", False)
        assert row["finished_at"] is not None

    records = tables["gpubench_records"]
    ids = [r["record_id"] for r in records]
    assert len(ids) == len(set(ids))
    assert set(ids) == want["accepted"]
    assert {(r["locator"], r["reason_code"]) for r in tables["rejected"]} == want["rejected"]
    assert stats.duplicates_dropped == want["repeats"] == 1

    # the planted foreign GPU is the warehouse's to reject: the collector keeps it as written
    foreign = world.probe_faults["foreign_gpu"]
    kept = next(r for r in records if r["record_id"] == foreign.record_id)
    gpu_node = {gpu.uuid: gpu.node for gpu in world.gpus}
    assert kept["node"] == probe_pods(world)[foreign.pod]["spec"]["nodeName"]
    assert gpu_node[kept["gpu_uuid"]] != kept["node"]

    # every log was asked for the probe container, capped; lists filtered by label and phase
    logs = [r for r in sim.requests if r.path.endswith("/log")]
    assert len(logs) == len(pods)
    assert all(r.query["container"] == ["gpubench"] for r in logs)
    assert all(r.query["limitBytes"] == [str(16 * 1024 * 1024)] for r in logs)
    lists = [r for r in sim.requests if r.path == f"/api/v1/namespaces/{NS}/pods"]
    assert {r.query["fieldSelector"][0] for r in lists} == {
        "status.phase=Succeeded",
        "status.phase=Failed",
    }
    assert {r.query["labelSelector"][0] for r in lists} == {"=".join(LABEL)}
    assert len(lists) > 2  # paged (7 pods a page)


def test_recomputed_values_agree_with_what_the_simulated_probes_claim(sim, world, tmp_path):
    claims = {}
    for name in probe_pods(world):
        for line in world.pod_logs[(NS, name)].split("\n"):
            if line.startswith("{") and line.endswith("}"):
                claim = json.loads(line)
                claims[claim["record_id"]] = claim
    records = collect(sim, tmp_path)["gpubench_records"]
    assert records
    for row in records:
        claim = claims[row["record_id"]]
        assert row["simulated"] is True and row["backend"] == "cuda"
        assert (row["flops"], row["bytes"]) == (claim["flops"], claim["bytes"])
        # the simulated harness prints six significant digits
        assert row["achieved_tflops"] == pytest.approx(claim["achieved_tflops"], rel=1e-5)
        assert row["achieved_gbps"] == pytest.approx(claim["achieved_gbps"], rel=1e-5)
        # the simulator's own SKU table; where its probes print none (GB200), annex's own
        # table (NVIDIA's GB200 NVL72 datasheet) gives the SKU and peak
        if claim["gpu_sku"] is None:
            assert row["gpu_sku"] == "GB200-186GB"
            assert row["peak_tflops"] in (2500.0, 5000.0, 80.0, None)  # by dtype
        else:
            assert row["gpu_sku"] == claim["gpu_sku"]
            assert row["peak_tflops"] == claim["peak_tflops"]
        if claim["frac_peak_flops"] is not None and claim["benchmark"] == "gemm":
            assert row["frac_peak_flops"] == pytest.approx(claim["frac_peak_flops"], rel=1e-5)
        assert row["ts"].isoformat() + "Z" == claim["ts"]
        assert json.loads(row["shape"]) == claim["shape"]


def test_an_unreadable_log_is_one_rejection_and_retries_recover(sim, world, tmp_path):
    names = sorted(probe_pods(world))
    broken, flaky, cut = names[0], names[1], names[2]
    prefix = f"/api/v1/namespaces/{NS}/pods/"
    sim.faults.add(Fault("status", status=500, path_prefix=f"{prefix}{broken}/log", times=3))
    sim.faults.add(Fault("status", status=503, path_prefix=f"{prefix}{flaky}/log", times=1))
    sim.faults.add(Fault("truncate", path_prefix=f"{prefix}{cut}/log", times=1))
    stats = CollectStats()
    tables = collect(sim, tmp_path, stats=stats)

    unavailable = [r for r in tables["rejected"] if r["reason_code"] == "log_unavailable"]
    assert [(r["locator"]) for r in unavailable] == [f"{NS}/{broken}"]
    assert "500" in unavailable[0]["message"]
    pods = {row["pod"]: row for row in tables["gpubench_pods"]}
    assert broken not in pods and len(pods) == len(names) - 1
    want = expected(world)["pods"]
    for name in (flaky, cut):
        assert pods[name]["records"] == want[name]["records"]
        assert pods[name]["log_bytes"] == want[name]["log_bytes"]
    attempts = [r.path for r in sim.requests if r.path.endswith("/log")]
    assert attempts.count(f"{prefix}{broken}/log") == 3  # max_retries=2
    assert attempts.count(f"{prefix}{flaky}/log") == 2
    assert attempts.count(f"{prefix}{cut}/log") == 2
    assert stats.logs_unavailable == 1


def test_known_pods_are_not_read_again(sim, world, tmp_path):
    pods = probe_pods(world)
    keep = sorted(pods)[-1]
    known = frozenset(p["metadata"]["uid"] for name, p in pods.items() if name != keep)
    tables = collect(sim, tmp_path, known=known)
    assert [row["pod"] for row in tables["gpubench_pods"]] == [keep]
    assert [r.path for r in sim.requests if r.path.endswith("/log")] == [
        f"/api/v1/namespaces/{NS}/pods/{keep}/log"
    ]


def test_logs_cut_by_limit_bytes_are_marked_and_their_last_line_is_text(sim, world, tmp_path):
    cap = 4096
    tables = collect(sim, tmp_path, max_log_bytes=cap)
    assert tables["rejected"] == []  # the planted faults sit after the first 4 KiB
    for row in tables["gpubench_pods"]:
        head = world.pod_logs[(NS, row["pod"])].encode()[:cap]
        complete = head.split(b"\n")[:-1]
        assert (row["log_bytes"], row["log_truncated"]) == (cap, True)
        assert row["records"] == sum(line.startswith(b"{") for line in complete)
        assert row["text_lines"] == sum(not line.startswith(b"{") for line in complete) + 1
