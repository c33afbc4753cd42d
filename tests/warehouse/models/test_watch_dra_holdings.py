"""GPUs held through DRA claims in the watch (warehouse.models.watch, watch_dra_*.sql).

A pod, its claims and the slices publishing their devices come in three watch streams whose
commits arrive in any order: whichever completes a holding opens it, with the pod's own
timestamps and the snapshot's rule (a claim shared by k pods gives each 1/k; IMEX channels are
no GPUs; MIG devices count in their profile's bucket). The pod's end, or the claim's deletion
or release, closes it.
"""

from __future__ import annotations

import itertools
from datetime import datetime
from pathlib import Path

import msgspec
import pytest

from annex.settings import KubernetesSettings, WarehouseSettings
from collectors.kubernetes.history import HistoryBatch, HistorySnapshot, ResourceHistory, _Buffer
from collectors.kubernetes.watch import WatchEvent
from tests.helpers import dra_objects as dra
from tests.helpers.kubernetes_api import pod
from warehouse import Warehouse
from warehouse.models.watch import commit_batch, commit_snapshot

NODE = "node-1"
COMPUTE = "compute-domain.nvidia.com"
SLICES = [
    dra.resource_slice(
        "s-gpu",
        NODE,
        dra.GPU,
        [
            dra.gpu("gpu-0", "GPU-0"),
            dra.gpu("gpu-1", "GPU-1"),
            dra.gpu("gpu-2", "GPU-2"),
            dra.mig("gpu-3-mig-1g.10gb-0", "GPU-3", "1g.10gb"),
        ],
    ),
    dra.resource_slice("s-imex", NODE, COMPUTE, [dra.channel("channel-0")]),
]
CLAIMS = [
    # p1: two whole GPUs, a MIG device and an IMEX channel (no GPU)
    dra.claim(
        "c1",
        [
            ("gpus", dra.GPU, NODE, "gpu-0"),
            ("gpus", dra.GPU, NODE, "gpu-1"),
            ("mig", dra.GPU, NODE, "gpu-3-mig-1g.10gb-0"),
            ("imex", COMPUTE, NODE, "channel-0"),
        ],
        ["p1"],
    ),
    # one GPU shared by p2 and p3
    dra.claim("c2", [("gpu", dra.GPU, NODE, "gpu-2")], ["p2", "p3"]),
]
EXPECTED = [
    ("p1", "c1", "nvidia.com/gpu", 2.0),
    ("p1", "c1", "nvidia.com/mig-1g.10gb", 1.0),
    ("p2", "c2", "nvidia.com/gpu", 0.5),
    ("p3", "c2", "nvidia.com/gpu", 0.5),
]


def claiming_pod(uid: str, claim: str, **kwargs) -> dict:
    body = pod(f"pod-{uid}", uid=uid, gpus=0, **kwargs)
    body["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimName": f"claim-{claim}"}]
    return body


PODS = [claiming_pod("p1", "c1"), claiming_pod("p2", "c2"), claiming_pod("p3", "c2")]
RV = itertools.count(100)


def batch(table: str, objects: list[dict], kind: str = "MODIFIED") -> HistoryBatch:
    """One watch batch of ``table`` as ``ResourceHistory`` yields it."""
    history = ResourceHistory(None, table, KubernetesSettings())  # type: ignore[arg-type]
    buffer = _Buffer()
    rv = str(next(RV))
    for obj in objects:
        buffer.add(WatchEvent(kind, rv, msgspec.json.encode(obj)), 0.0)  # type: ignore[arg-type]
    return history._changes(buffer, rv)


@pytest.fixture
def wh(tmp_path: Path) -> Warehouse:
    return Warehouse(WarehouseSettings(path=tmp_path / "annex.duckdb"))


def commit(wh: Warehouse, *batches: HistoryBatch) -> None:
    with wh.writer() as con:
        for b in batches:
            commit_batch(con, b, cluster="c", session_id="s")


def holdings(wh: Warehouse, open_only: bool = True) -> list[tuple]:
    with wh.writer() as con:
        return con.execute(
            "SELECT pod_uid, claim_uid, resource_name, gpus FROM core.watched_gpu_allocations "
            f"WHERE mechanism = 'dra' {'AND valid_to IS NULL' if open_only else ''} ORDER BY ALL"
        ).fetchall()


def ends(wh: Warehouse) -> dict[tuple, tuple]:
    with wh.writer() as con:
        rows = con.execute(
            "SELECT pod_uid, resource_name, valid_from, valid_to, valid_to_source, "
            "valid_to_inferred FROM core.watched_gpu_allocations WHERE mechanism = 'dra'"
        ).fetchall()
    return {(p, r): tuple(rest) for p, r, *rest in rows}


@pytest.mark.parametrize(
    "order", list(itertools.permutations(("resource_slices", "resource_claims", "pods")))
)
def test_a_holding_opens_whichever_stream_commits_last(wh: Warehouse, order) -> None:
    objects = {"resource_slices": SLICES, "resource_claims": CLAIMS, "pods": PODS}
    for table in order:
        commit(wh, batch(table, objects[table]))
    assert holdings(wh) == EXPECTED
    valid_from = {row[0] for row in ends(wh).values()}
    assert valid_from == {datetime(2026, 11, 2, 8, 0)}  # the pods' PodScheduled time
    # committing any of them again opens nothing twice
    commit(wh, *(batch(table, objects[table]) for table in order))
    assert holdings(wh) == EXPECTED


def test_an_unbound_pod_or_unallocated_claim_holds_nothing(wh: Warehouse) -> None:
    pending = claiming_pod("p9", "c9", node_name=None)
    commit(
        wh,
        batch("resource_slices", SLICES),
        batch("resource_claims", [dra.claim("c9", [], [])]),
        batch("pods", [pending]),
    )
    assert holdings(wh, open_only=False) == []


def test_the_pods_end_closes_its_claims_holdings(wh: Warehouse) -> None:
    commit(wh, batch("resource_slices", SLICES), batch("resource_claims", CLAIMS))
    commit(wh, batch("pods", PODS))
    finished = claiming_pod("p1", "c1", phase="Succeeded", finished_at="2026-11-02T09:00:00Z")
    commit(wh, batch("pods", [finished]))
    assert ends(wh)[("p1", "nvidia.com/gpu")][1:] == (
        datetime(2026, 11, 2, 9, 0),
        "finished",
        False,
    )
    assert [h[0] for h in holdings(wh)] == ["p2", "p3"]


def test_a_pod_ended_before_its_claim_is_committed_opens_and_closes_at_once(
    wh: Warehouse,
) -> None:
    finished = claiming_pod("p1", "c1", phase="Failed", finished_at="2026-11-02T08:30:00Z")
    commit(wh, batch("resource_slices", SLICES), batch("pods", [finished]))
    commit(wh, batch("resource_claims", CLAIMS[:1]))
    row = ends(wh)[("p1", "nvidia.com/gpu")]
    assert row[1:] == (datetime(2026, 11, 2, 8, 30), "finished", False)


def test_a_claim_deleted_or_released_closes_and_the_pods_own_end_refines_it(
    wh: Warehouse,
) -> None:
    commit(wh, batch("resource_slices", SLICES), batch("resource_claims", CLAIMS))
    commit(wh, batch("pods", PODS))
    released = dra.claim("c2", [("gpu", dra.GPU, NODE, "gpu-2")], ["p2"])  # p3 no longer
    commit(wh, batch("resource_claims", [released]))
    assert ends(wh)[("p3", "nvidia.com/gpu")][2:] == ("claim_released", True)
    assert ends(wh)[("p2", "nvidia.com/gpu")][1] is None

    gone = dict(CLAIMS[0])
    gone["metadata"] = {**gone["metadata"], "deletionTimestamp": "2026-11-02T09:10:00Z"}
    commit(wh, batch("resource_claims", [gone], kind="DELETED"))
    assert ends(wh)[("p1", "nvidia.com/gpu")][1:] == (
        datetime(2026, 11, 2, 9, 10),
        "claim_deleted",
        False,
    )

    # p3's own end, committed after its claim let it go, is the better time
    finished = claiming_pod("p3", "c2", phase="Succeeded", finished_at="2026-11-02T08:45:00Z")
    commit(wh, batch("pods", [finished]))
    assert ends(wh)[("p3", "nvidia.com/gpu")][1:] == (
        datetime(2026, 11, 2, 8, 45),
        "finished",
        False,
    )


def listed(table: str, objects: list[dict]) -> HistorySnapshot:
    """A list of ``table`` (the first, or a relist after a 410) as ``ResourceHistory`` yields it."""
    history = ResourceHistory(None, table, KubernetesSettings())  # type: ignore[arg-type]
    raws = [msgspec.json.encode(obj) for obj in objects]

    def fetch(snapshot: HistorySnapshot):
        snapshot.resource_version = str(next(RV))
        yield history._snapshot_page(raws, history._decoder(), 0, first=True)

    return HistorySnapshot(table, history.resource.api_path, fetch)


def commit_list(wh: Warehouse, snapshot: HistorySnapshot) -> None:
    with wh.writer() as con:
        commit_snapshot(con, snapshot, cluster="c", session_id="s")


def test_lists_open_holdings_and_a_relist_closes_what_it_lacks(wh: Warehouse) -> None:
    commit_list(wh, listed("pods", [*PODS, pod("plain", gpus=2)]))
    commit_list(wh, listed("resource_claims", CLAIMS))
    commit_list(wh, listed("resource_slices", SLICES))
    assert holdings(wh) == EXPECTED

    # a relist of slices without the GPU slice ends no holding (the claims still hold them)
    commit_list(wh, listed("resource_slices", SLICES[1:]))
    assert holdings(wh) == EXPECTED
    # a relist of claims without c1 ends p1's holdings; one of pods without p2 ends p2's
    commit_list(wh, listed("resource_claims", CLAIMS[1:]))
    commit_list(wh, listed("pods", [PODS[0], PODS[2]]))
    assert holdings(wh) == EXPECTED[3:]
    closed = ends(wh)
    assert closed[("p1", "nvidia.com/gpu")][2:] == ("claim_deleted", True)
    assert closed[("p2", "nvidia.com/gpu")][2:] == ("relisted", True)
    with wh.writer() as con:
        plain = con.execute(
            "SELECT mechanism, gpus FROM core.watched_gpu_allocations WHERE pod_name = 'plain'"
        ).fetchall()
    assert plain == [("device_plugin", 2.0)]
