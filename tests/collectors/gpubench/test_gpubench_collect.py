"""The gpubench collector against an in-process API stand-in: which pods, paging, log fetch
failures and retries, truncation, duplicates, batching, and the tables' schemas."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pyarrow as pa
import pytest

from annex.errors import ClusterAccessError, CollectionError
from annex.settings import GpubenchSettings, KubernetesSettings, Settings
from collectors.gpubench import collect as gpubench_collect
from collectors.gpubench.collect import CollectStats, collect_gpubench
from collectors.gpubench.schema import SCHEMAS
from collectors.kubernetes.listing import Lister
from probes.gpubench.peaks import PEAKS
from tests.helpers import kubernetes_api as t

NS = "annex-probes"
PODS = f"/api/v1/namespaces/{NS}/pods"
LABEL = "app.kubernetes.io/name=annex-gpubench"


def log_path(pod: str) -> str:
    return f"{PODS}/{pod}/log"


def record(pod: str, node: str, n: int, **overrides: Any) -> dict[str, Any]:
    """A valid bf16 GEMM record (4096³ in 0.2 ms: 687.2 TFLOP/s on an H100)."""
    base: dict[str, Any] = {
        "schema_version": 1,
        "record_id": f"{pod}-{n}",
        "ts": "2026-11-21T18:40:05Z",
        "namespace": NS,
        "job": "annex-gpubench-202611211840",
        "pod": pod,
        "node": node,
        "gpu_index": n % 8,
        "gpu_uuid": f"GPU-{node}-{n % 8}",
        "gpu_model": "NVIDIA H100 80GB HBM3",
        "backend": "cuda",
        "triton_version": "3.9.0",
        "benchmark": "gemm",
        "kernel": "matmul_kernel",
        "shape": {"M": 4096, "N": 4096, "K": 4096},
        "dtype": "bf16",
        "ms_p20": 0.19,
        "ms_p50": 0.2,
        "ms_p80": 0.21,
        "flops": 2.0 * 4096**3,
        "bytes": 6.0 * 4096**2,
        "correct": True,
    }
    base.update(overrides)
    return base


def log_of(*lines: dict[str, Any] | str) -> str:
    return "".join((json.dumps(x) if isinstance(x, dict) else x) + "\n" for x in lines)


def probe_pod(
    name: str, node: str, phase: str = "Succeeded", *, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    obj = t.pod(
        name,
        namespace=NS,
        node_name=node,
        phase=phase,
        gpus=8,
        job="annex-gpubench-202611211840",
        finished_at="2026-11-21T18:45:00Z",
    )
    obj["metadata"]["labels"] = {
        "app.kubernetes.io/name": "annex-gpubench",
        "app.kubernetes.io/component": "probe",
        "batch.kubernetes.io/job-name": "annex-gpubench-202611211840",
        **(labels or {}),
    }
    for status in obj["status"].get("containerStatuses", []):
        status["name"] = "gpubench"
    return obj


class ProbeCluster(t.FakeCluster):
    """``FakeCluster`` plus what the probe collector needs: label and ``status.phase`` field
    selectors on the pod list, and the pod log endpoint (``limitBytes`` honoured unless
    ``ignore_limit``; ``FakeFault`` entries on a log path apply to it)."""

    def __init__(self, pods: list[dict[str, Any]], logs: dict[str, str]) -> None:
        super().__init__({PODS: []})
        self.pods = pods
        self.logs = logs
        self.ignore_limit = False

    def serve(self, url: str) -> Any:
        parts = urlsplit(url)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        if parts.path.endswith("/log"):
            return self._log(parts.path, query)
        if parts.path == PODS:
            key, _, value = query.get("labelSelector", "").partition("=")
            field, _, phase = query.get("fieldSelector", "").partition("=")
            assert field in ("", "status.phase")
            self.objects[PODS] = [
                p
                for p in self.pods
                if (not key or p["metadata"]["labels"].get(key) == value)
                and (not phase or p["status"]["phase"] == phase)
            ]
        return super().serve(url)

    def _log(self, path: str, query: dict[str, str]) -> Any:
        self.requests.append((path, query))
        for fault in self.faults:
            if fault.times > 0 and fault.path == path:
                fault.times -= 1
                return t._Response(fault.status, fault.body, fault.headers)
        name = path.split("/")[-2]
        if name not in self.logs:
            body = json.dumps(
                {"kind": "Status", "code": 404, "message": f'pods "{name}" not found'}
            )
            return t._Response(404, body.encode(), {})
        assert query["container"] == "gpubench"
        data = self.logs[name].encode()
        if not self.ignore_limit:
            data = data[: int(query["limitBytes"])]
        return t._Response(200, data, {})

    def log_requests(self) -> list[str]:
        return [path for path, _ in self.requests if path.endswith("/log")]


class Clock:
    def __init__(self) -> None:
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


def run(
    fake: ProbeCluster,
    *,
    clock: Clock | None = None,
    known: frozenset[str] = frozenset(),
    stats: CollectStats | None = None,
    on_pod=None,
    page_size: int = 1,
    **bench: Any,
) -> dict[str, list[dict[str, Any]]]:
    """Collect and return every table's rows, checking each batch's schema."""
    kubernetes = KubernetesSettings(page_size=page_size, max_retries=2, max_backoff_seconds=0.01)
    settings = Settings(kubernetes=kubernetes, gpubench=GpubenchSettings(**bench))
    lister = Lister(kubernetes, sleep=(clock or Clock()).sleep, jitter=lambda: 1.0)
    tables: dict[str, list[dict[str, Any]]] = {name: [] for name in SCHEMAS}
    for table, batch in collect_gpubench(
        t.FakeApiClient(fake),
        "test",
        settings,
        known_pod_uids=known,
        on_pod=on_pod,
        lister=lister,
        stats=stats,
    ):
        assert isinstance(batch, pa.RecordBatch)
        assert batch.schema == SCHEMAS[table], table
        tables[table].extend(batch.to_pylist())
    return tables


def three_pods() -> ProbeCluster:
    pods = [
        probe_pod("probe-a", "gpu-1"),
        probe_pod("probe-b", "gpu-2", "Failed"),
        probe_pod("probe-c", "gpu-3"),
        probe_pod("probe-running", "gpu-4", "Running"),
        probe_pod("other-app", "gpu-5", labels={"app.kubernetes.io/name": "something-else"}),
    ]
    logs = {
        "probe-a": log_of("starting gpubench", record("probe-a", "gpu-1", 0), "", "done"),
        "probe-b": log_of(record("probe-b", "gpu-2", 0), "Traceback: CUDA error"),
        "probe-c": log_of(record("probe-c", "gpu-3", 0), record("probe-c", "gpu-3", 1)),
        "probe-running": log_of(record("probe-running", "gpu-4", 0)),
        "other-app": log_of(record("other-app", "gpu-5", 0)),
    }
    return ProbeCluster(pods, logs)


# ---------------------------------------------------------------------------------------------


def test_finished_probe_pods_are_listed_by_phase_paged_and_read():
    fake = three_pods()
    seen: list[tuple[str, int]] = []
    tables = run(fake, on_pod=lambda pod, n: seen.append((pod, n)))

    lists = [q for path, q in fake.requests if path == PODS]
    assert {q["labelSelector"] for q in lists} == {LABEL}
    phases = [q["fieldSelector"] for q in lists]
    # page size 1: two Succeeded pages (+ none after), one Failed page
    assert phases == ["status.phase=Succeeded"] * 2 + ["status.phase=Failed"]
    assert fake.log_requests() == [log_path(p) for p in ("probe-a", "probe-c", "probe-b")]
    log_query = next(q for path, q in fake.requests if path.endswith("/log"))
    assert log_query == {"container": "gpubench", "limitBytes": str(16 * 1024 * 1024)}

    pods = {row["pod"]: row for row in tables["gpubench_pods"]}
    assert set(pods) == {"probe-a", "probe-b", "probe-c"}
    a = pods["probe-a"]
    assert (a["records"], a["rejected"], a["text_lines"], a["log_truncated"]) == (1, 0, 2, False)
    assert a["log_bytes"] == len(fake.logs["probe-a"].encode())
    assert (a["pod_uid"], a["namespace"], a["node"], a["phase"]) == (
        f"uid-pod-{NS}-probe-a",
        NS,
        "gpu-1",
        "Succeeded",
    )
    assert a["job"] == "annex-gpubench-202611211840"
    assert a["finished_at"].isoformat() == "2026-11-21T18:45:00"
    assert (pods["probe-b"]["phase"], pods["probe-b"]["text_lines"]) == ("Failed", 1)
    assert pods["probe-c"]["records"] == 2

    records = tables["gpubench_records"]
    assert sorted(r["record_id"] for r in records) == [
        "probe-a-0",
        "probe-b-0",
        "probe-c-0",
        "probe-c-1",
    ]
    first = next(r for r in records if r["record_id"] == "probe-a-0")
    assert first["locator"] == f"{NS}/probe-a line 2"
    assert first["pod_uid"] == f"uid-pod-{NS}-probe-a"
    assert first["achieved_tflops"] == pytest.approx(2 * 4096**3 / 0.2e-3 / 1e12)  # 687.2
    assert first["gpu_sku"] == "H100-SXM5-80GB"
    assert tables["rejected"] == []
    assert seen == [("probe-a", 1), ("probe-c", 2), ("probe-b", 1)]

    peaks = tables["gpu_peaks"]
    assert len(peaks) == sum(len(p.tflops_dense) for p in PEAKS)
    h100 = next(r for r in peaks if r["gpu_sku"] == "H100-SXM5-80GB" and r["dtype"] == "bf16")
    assert (h100["peak_tflops_dense"], h100["peak_hbm_gbps"], h100["tdp_watts"]) == (
        989.4,
        3350.0,
        700.0,
    )


def test_known_pods_are_skipped_without_reading_their_logs():
    fake = three_pods()
    stats = CollectStats()
    tables = run(fake, known=frozenset({f"uid-pod-{NS}-probe-a"}), stats=stats)
    assert log_path("probe-a") not in fake.log_requests()
    assert {row["pod"] for row in tables["gpubench_pods"]} == {"probe-b", "probe-c"}
    assert (stats.pods_listed, stats.pods_skipped, stats.pods_read) == (3, 1, 2)


def test_bad_lines_are_rejected_with_locators_and_good_lines_kept():
    fake = ProbeCluster(
        [probe_pod("probe-a", "gpu-1")],
        {
            "probe-a": log_of(
                record("probe-a", "gpu-1", 0),
                "{not json",
                record("probe-a", "gpu-2", 1),  # claims another node
                record("probe-a", "gpu-1", 2, ms_p50=0.05, ms_p20=0.05, ms_p80=0.06),
                record("probe-a", "gpu-1", 3),
            )
        },
    )
    tables = run(fake)
    rejected = {(r["locator"], r["reason_code"]) for r in tables["rejected"]}
    assert rejected == {
        (f"{NS}/probe-a line 2", "malformed_json"),
        (f"{NS}/probe-a line 3", "wrong_node"),
        (f"{NS}/probe-a line 4", "above_peak"),
    }
    assert all(r["raw"].startswith(b"{") for r in tables["rejected"])
    assert [r["record_id"] for r in tables["gpubench_records"]] == ["probe-a-0", "probe-a-3"]
    (pod,) = tables["gpubench_pods"]
    assert (pod["records"], pod["rejected"], pod["text_lines"]) == (2, 3, 0)


def test_exact_repeats_are_dropped_and_changed_repeats_rejected():
    same = record("probe-a", "gpu-1", 0)
    changed = record("probe-a", "gpu-1", 0, ms_p50=0.205)
    fake = ProbeCluster(
        [probe_pod("probe-a", "gpu-1"), probe_pod("probe-b", "gpu-2")],
        {
            "probe-a": log_of(same, same, changed),
            # another pod's copy of probe-a's record claims the wrong pod
            "probe-b": log_of(same, record("probe-b", "gpu-2", 0)),
        },
    )
    stats = CollectStats()
    tables = run(fake, stats=stats)
    assert [r["record_id"] for r in tables["gpubench_records"]] == ["probe-a-0", "probe-b-0"]
    reasons = [(r["locator"], r["reason_code"]) for r in tables["rejected"]]
    assert reasons == [
        (f"{NS}/probe-a line 3", "duplicate_record"),
        (f"{NS}/probe-b line 1", "wrong_pod"),
    ]
    assert "probe-a-0" in tables["rejected"][0]["message"]
    assert stats.duplicates_dropped == 1


def test_a_log_at_the_cap_is_truncated_and_its_partial_line_is_text():
    full = log_of(*(record("probe-a", "gpu-1", i) for i in range(10)))
    lines = full.encode().split(b"\n")
    cap = len(b"\n".join(lines[:7])) + 1 + 40  # 7 whole lines and 40 bytes of the 8th
    fake = ProbeCluster([probe_pod("probe-a", "gpu-1")], {"probe-a": full})
    tables = run(fake, max_log_bytes=cap)
    (pod,) = tables["gpubench_pods"]
    assert (pod["log_bytes"], pod["log_truncated"]) == (cap, True)
    assert (pod["records"], pod["rejected"], pod["text_lines"]) == (7, 0, 1)
    assert tables["rejected"] == []


def test_a_server_ignoring_limit_bytes_is_cut_by_the_client():
    full = log_of(*(record("probe-a", "gpu-1", i) for i in range(10)))
    fake = ProbeCluster([probe_pod("probe-a", "gpu-1")], {"probe-a": full})
    fake.ignore_limit = True
    tables = run(fake, max_log_bytes=2000)
    (pod,) = tables["gpubench_pods"]
    assert (pod["log_bytes"], pod["log_truncated"]) == (2000, True)
    kept = full.encode()[:2000]
    assert not kept.endswith(b"\n")
    assert (pod["records"], pod["text_lines"]) == (kept.count(b"\n"), 1)
    assert tables["rejected"] == []


def test_a_complete_log_below_the_cap_parses_its_last_line_without_newline():
    body = log_of(record("probe-a", "gpu-1", 0)) + json.dumps(record("probe-a", "gpu-1", 1))
    fake = ProbeCluster([probe_pod("probe-a", "gpu-1")], {"probe-a": body})
    tables = run(fake)
    assert tables["gpubench_pods"][0]["records"] == 2


def test_log_fetch_failures_are_retried_then_rejected_per_pod():
    fake = three_pods()
    clock = Clock()
    fake.faults += [
        t.FakeFault(log_path("probe-a"), status=500, times=2),  # recovers on the 3rd try
        t.FakeFault(log_path("probe-c"), status=503, times=10),  # never recovers
    ]
    stats = CollectStats()
    tables = run(fake, clock=clock, stats=stats)
    assert fake.log_requests().count(log_path("probe-a")) == 3
    assert fake.log_requests().count(log_path("probe-c")) == 3  # max_retries=2
    (unavailable,) = tables["rejected"]
    assert unavailable["reason_code"] == "log_unavailable"
    assert unavailable["locator"] == f"{NS}/probe-c"
    assert "503" in unavailable["message"] and "3 attempts" in unavailable["message"]
    assert unavailable["raw"] is None
    # the unreadable pod has no pod row (so the next collection tries again); others go on
    assert {row["pod"] for row in tables["gpubench_pods"]} == {"probe-a", "probe-b"}
    assert len(clock.sleeps) == 4
    assert stats.logs_unavailable == 1


def test_a_deleted_pod_is_log_unavailable_at_once():
    fake = three_pods()
    del fake.logs["probe-c"]  # TTL controller removed it between the list and the log GET
    tables = run(fake)
    assert fake.log_requests().count(log_path("probe-c")) == 1
    (row,) = tables["rejected"]
    assert (row["reason_code"], row["locator"]) == ("log_unavailable", f"{NS}/probe-c")
    assert "404" in row["message"] and "not found" in row["message"]


def test_429_on_a_log_waits_retry_after():
    fake = three_pods()
    clock = Clock()
    fake.faults.append(
        t.FakeFault(
            log_path("probe-b"),
            status=429,
            body=b"Too many requests, please try again later.\n",
            headers={"Retry-After": "7"},
        )
    )
    tables = run(fake, clock=clock)
    assert clock.sleeps == [7.0]
    assert len(tables["gpubench_records"]) == 4


def test_forbidden_logs_abort_with_the_rbac_hint():
    fake = three_pods()
    fake.faults.append(
        t.FakeFault(
            log_path("probe-a"),
            status=403,
            body=b'{"kind":"Status","code":403,"message":"pods \\"probe-a\\" is forbidden"}',
        )
    )
    with pytest.raises(ClusterAccessError) as info:
        run(fake)
    assert "cluster test" in info.value.message and "forbidden" in info.value.message
    assert info.value.hint and "pods/log" in info.value.hint


def test_list_errors_are_retried_like_the_inventory():
    fake = three_pods()
    clock = Clock()
    fake.faults.append(t.FakeFault(PODS, status=500, times=1, page=2))
    fake.expire_tokens_at_page[PODS] = 2  # one 410 on the Succeeded list: restart it
    tables = run(fake, clock=clock)
    assert len(clock.sleeps) == 1
    phases = [q["fieldSelector"] for path, q in fake.requests if path == PODS]
    # page 1, page 2 (500), page 2 (410), page 1 again, page 2; then the Failed list
    assert phases == ["status.phase=Succeeded"] * 5 + ["status.phase=Failed"]
    assert sorted(row["pod"] for row in tables["gpubench_pods"]) == [
        "probe-a",
        "probe-b",
        "probe-c",
    ]
    assert len(tables["gpubench_records"]) == 4


def test_a_list_that_keeps_failing_fails_the_collection():
    fake = three_pods()
    fake.faults.append(t.FakeFault(PODS, status=500, times=10))
    with pytest.raises(CollectionError) as info:
        run(fake)
    assert "cluster test" in info.value.message and "status.phase=Succeeded" in info.value.message


def test_batches_stay_below_the_batch_size(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(gpubench_collect, "BATCH_ROWS", 3)
    fake = ProbeCluster(
        [probe_pod(f"probe-{i}", f"gpu-{i}") for i in range(4)],
        {
            f"probe-{i}": log_of(*(record(f"probe-{i}", f"gpu-{i}", n) for n in range(5)))
            for i in range(4)
        },
    )
    kubernetes = KubernetesSettings(page_size=10)
    out = list(collect_gpubench(t.FakeApiClient(fake), "test", Settings(kubernetes=kubernetes)))
    sizes = [b.num_rows for table, b in out if table == "gpubench_records"]
    assert sum(sizes) == 20 and max(sizes) == 3
    assert [b.num_rows for table, b in out if table == "gpubench_pods"] == [3, 1]
    # the first batches arrive before the last pod's log is read
    first_records = next(i for i, (table, _) in enumerate(out) if table == "gpubench_records")
    assert first_records < len(out) - 3
