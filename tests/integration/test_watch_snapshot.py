"""Watch mode's lists, streamed: page by page into one transaction (issue 9, bounded memory).

The first list and every relist after a 410 reach the warehouse a page at a time
(``HistorySnapshot.pages()`` into ``commit_snapshot``), never as the whole cluster in Python.
Against the simulated API server over real sockets, with pages of 10 pods (the world has 171):
the state a streamed list leaves must equal the state the same list committed whole leaves
(``commit_batch`` of one snapshot batch, what watch mode did before), nothing may be visible or
kept before the last page, a failure anywhere in the list leaves state and cursor as they
were, and a 410 on a continue token (or a change of list mode) restarts the list cleanly.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest

from annex.errors import CollectionError
from annex.settings import KubernetesSettings, Settings, WarehouseSettings
from collectors.kubernetes import api_client_for
from collectors.kubernetes.history import (
    HistoryBatch,
    HistorySnapshot,
    ResourceHistory,
    SnapshotPage,
    WatchOptions,
)
from simulator.kubernetes import Fault, SimulatedCluster
from simulator.world import build_world
from warehouse import Warehouse
from warehouse.models.watch import commit_batch, commit_snapshot, load_cursors

pytestmark = pytest.mark.integration

CLUSTER = "sim"
PAGE = 10
K8S = KubernetesSettings(page_size=PAGE, max_backoff_seconds=0.05, max_retries=2)
PAGED = WatchOptions(timeout_seconds=2, streaming_list="never")
STREAMED = WatchOptions(timeout_seconds=2, streaming_list="always")
FIRST_AT = dt.datetime(2030, 1, 1, 12, 0, 0)
SECOND_AT = dt.datetime(2030, 1, 1, 13, 0, 0)


@pytest.fixture
def sim(tmp_path: Path):
    cluster = SimulatedCluster(build_world(12, seed=3), bookmark_interval_seconds=0.2)
    with cluster:
        cluster.write_kubeconfig(tmp_path / "kubeconfig")
        yield cluster


@pytest.fixture
def api(sim: SimulatedCluster, tmp_path: Path):
    client = api_client_for(
        kubeconfig=tmp_path / "kubeconfig", context=None, in_cluster=False, settings=K8S
    )
    yield client
    client.close()


def warehouse(tmp_path: Path, name: str) -> Warehouse:
    settings = replace(Settings(), warehouse=WarehouseSettings(path=tmp_path / f"{name}.duckdb"))
    return Warehouse(settings.warehouse)


def snapshot(api, options: WatchOptions = PAGED) -> HistorySnapshot:
    return ResourceHistory(api, "pods", K8S, options=options).snapshot()


class Observed:
    """A snapshot as ``commit_snapshot`` reads it, watched page by page (``after_page`` runs
    after each page is handed over: its number and the page)."""

    def __init__(
        self, inner: HistorySnapshot, after_page: Callable[[int, SnapshotPage], None]
    ) -> None:
        self.inner = inner
        self.after_page = after_page
        self.sizes: list[int] = []
        self.firsts: list[bool] = []

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def pages(self) -> Iterator[SnapshotPage]:
        for number, page in enumerate(self.inner.pages(), start=1):
            self.sizes.append(page.objects.num_rows)
            self.firsts.append(page.first)
            yield page
            self.after_page(number, page)


def commit_streamed(wh: Warehouse, snap, at: dt.datetime) -> None:
    with wh.writer() as con:
        expected = _cursor_rv(con)
        commit_snapshot(
            con, snap, cluster=CLUSTER, session_id="s", expected=expected, committed_at=at
        )


def commit_whole(wh: Warehouse, snap: HistorySnapshot, at: dt.datetime) -> None:
    """The list held whole and committed as one batch: what watch mode did before."""
    pages = list(snap.pages())
    batch = HistoryBatch(
        resource=snap.resource,
        api_path=snap.api_path,
        kind="snapshot",
        resource_version=snap.resource_version,
        objects=pa.concat_batches([p.objects for p in pages]),
        pods=pa.concat_batches([p.pods for p in pages if p.pods is not None]),
        rejected=None,
        requests=snap.requests,
        lists=snap.lists,
        via=snap.via,
        events=snap.events,
    )
    with wh.writer() as con:
        commit_batch(con, batch, cluster=CLUSTER, session_id="s", committed_at=at)


def _cursor_rv(con) -> str | None:
    cursor = load_cursors(con, CLUSTER).get("pods")
    return cursor.resource_version if cursor else None


def history_state(wh: Warehouse) -> dict[str, list]:
    """What the watch knows, without the times at which annex received things."""
    with wh.writer() as con:
        return {
            "objects": con.execute(
                "SELECT resource, uid, namespace, name, resource_version, deletion_timestamp, "
                "present, gone_at, gone_how FROM core.watched_objects ORDER BY uid"
            ).fetchall(),
            "allocations": con.execute(
                "SELECT pod_uid, namespace, pod_name, job_name, node_name, resource_name, gpus, "
                "category, priority_class_name, valid_from, valid_from_source, valid_to, "
                "valid_to_source, valid_to_inferred, opened_resource_version, "
                "closed_resource_version, opened_at, closed_at "
                "FROM core.watched_gpu_allocations ORDER BY pod_uid, resource_name"
            ).fetchall(),
            "cursor": con.execute(
                "SELECT resource, resource_version, relists, events, commits "
                "FROM core.watch_cursors ORDER BY resource"
            ).fetchall(),
        }


def everything(wh: Warehouse) -> dict[str, list]:
    """Every row watch mode writes, times included."""
    with wh.writer() as con:
        return {
            table: con.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()
            for table in (
                "core.watched_objects",
                "core.watched_gpu_allocations",
                "core.watch_cursors",
                "audit.kubernetes_requests",
                "audit.kubernetes_lists",
                "audit.rejected",
            )
        }


def gpu_pods(sim: SimulatedCluster, count: int) -> list[dict]:
    pods = [
        p
        for p in sim.objects("pods")
        if p["spec"].get("nodeName")
        and p["status"].get("phase") == "Running"
        and any(
            "nvidia.com/gpu" in (c.get("resources", {}).get("requests") or {})
            for c in p["spec"]["containers"]
        )
    ]
    assert len(pods) >= count
    return pods[:count]


def delete(sim: SimulatedCluster, pods: list[dict]) -> None:
    for pod in pods:
        sim.delete("pods", pod["metadata"]["name"], pod["metadata"]["namespace"])


# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("options", [PAGED, STREAMED], ids=["paged", "streaming"])
def test_a_list_of_many_pages_commits_once_and_equals_the_list_held_whole(
    sim: SimulatedCluster, api, tmp_path: Path, options: WatchOptions
) -> None:
    streamed, whole = warehouse(tmp_path, "streamed"), warehouse(tmp_path, "whole")
    visible: list[int] = []

    # first list: both warehouses start from the same cluster
    first = Observed(snapshot(api, options), lambda n, p: None)
    commit_whole(whole, snapshot(api, options), FIRST_AT)
    with streamed.writer() as con:

        def peek(number: int, page: SnapshotPage) -> None:
            other = con.cursor()  # another connection: sees only what is committed
            try:
                visible.append(
                    other.execute("SELECT count(*) FROM core.watched_objects").fetchone()[0]
                )
            finally:
                other.close()

        first.after_page = peek
        commit_snapshot(con, first, cluster=CLUSTER, session_id="s", committed_at=FIRST_AT)

    assert len(first.sizes) > 10, "the list should take many pages"
    assert max(first.sizes) <= PAGE and sum(first.sizes) == len(sim.objects("pods"))
    assert first.firsts == [True] + [False] * (len(first.sizes) - 1)
    assert visible == [0] * len(first.sizes), "no page may be visible before the commit"
    assert history_state(streamed) == history_state(whole)

    # pods go while no watch runs: only the relist can tell
    gone = gpu_pods(sim, 3)
    delete(sim, gone)
    relist = Observed(snapshot(api, options), lambda n, p: None)
    commit_streamed(streamed, relist, SECOND_AT)
    commit_whole(whole, snapshot(api, options), SECOND_AT)

    after = history_state(streamed)
    assert after == history_state(whole)
    assert [(row[2], row[4]) for row in after["cursor"]] == [(1, 2)]  # one commit per list
    # closed by this list: at the list's time, or at the deletionTimestamp a pod carried
    closed = {row[0]: row for row in after["allocations"] if row[17] == SECOND_AT}
    assert set(closed) == {pod["metadata"]["uid"] for pod in gone}
    assert all(row[11] <= SECOND_AT for row in closed.values())
    assert all(row[12] in ("relisted", "deleted") for row in closed.values())
    objects = {row[1]: row for row in after["objects"]}
    assert all(objects[uid][6:] == (False, SECOND_AT, "relisted") for uid in closed)
    assert sum(row[6] for row in after["objects"]) == len(sim.objects("pods"))
    with streamed.writer() as con:
        via = load_cursors(con, CLUSTER)["pods"].listed_via
        staged = con.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchone()[0]
    assert via == ("watchlist" if options is STREAMED else "list")
    assert staged == 0


@pytest.mark.parametrize("how", ["api-server-gives-up", "process-killed"])
def test_a_failure_in_the_middle_of_the_list_leaves_state_and_cursor_unchanged(
    sim: SimulatedCluster, api, tmp_path: Path, how: str
) -> None:
    wh = warehouse(tmp_path, "wh")
    commit_streamed(wh, snapshot(api), FIRST_AT)
    before = everything(wh)
    gone = gpu_pods(sim, 2)
    delete(sim, gone)  # a relist that got through would close these

    class Killed(BaseException):
        pass

    def kill(number: int, page: SnapshotPage) -> None:
        if number == 4:
            raise Killed

    if how == "api-server-gives-up":  # the 5th page and every retry of it: 500
        sim.faults.add(
            Fault("status", status=500, resource="pods", watch=False, skip=4, times=None)
        )
        failing, error = Observed(snapshot(api), lambda n, p: None), CollectionError
    else:
        failing, error = Observed(snapshot(api), kill), Killed
    with pytest.raises(error):
        commit_streamed(wh, failing, SECOND_AT)

    assert 3 <= len(failing.sizes) < 10
    assert everything(wh) == before
    # the next run lists again, and now sees what went
    sim.faults.clear()
    commit_streamed(wh, snapshot(api), SECOND_AT)
    with wh.writer() as con:
        closed = con.execute(
            "SELECT pod_uid FROM core.watched_gpu_allocations WHERE valid_to_source = 'relisted'"
        ).fetchall()
        cursor = load_cursors(con, CLUSTER)["pods"]
    assert {row[0] for row in closed} == {pod["metadata"]["uid"] for pod in gone}
    assert cursor.commits == 2 and cursor.relists == 1


def test_an_expired_continue_token_restarts_the_list_and_drops_the_abandoned_pages(
    sim: SimulatedCluster, api, tmp_path: Path
) -> None:
    wh = warehouse(tmp_path, "wh")
    # the third page's continue token has expired (compaction): 410, the list starts over
    sim.faults.add(Fault("expire", resource="pods", watch=False, skip=1, times=1))
    victim: list[dict] = []

    def meanwhile(number: int, page: SnapshotPage) -> None:
        if number == 1:  # a pod of the first page goes before the list starts over
            uid = page.objects.column("uid")[0].as_py()
            pod = next(p for p in sim.objects("pods") if p["metadata"]["uid"] == uid)
            victim.append(pod)
            delete(sim, [pod])

    listed = Observed(snapshot(api), meanwhile)
    commit_streamed(wh, listed, FIRST_AT)

    pods = sim.objects("pods")
    assert listed.firsts[:3] == [True, False, True], "the restarted list says so"
    assert sum(listed.sizes) == 2 * PAGE + len(pods)
    with wh.writer() as con:
        uids = {row[0] for row in con.execute("SELECT uid FROM core.watched_objects").fetchall()}
        lists = con.execute(
            "SELECT restarts, consistent, items FROM audit.kubernetes_lists"
        ).fetchall()
        cursor = load_cursors(con, CLUSTER)["pods"]
        allocations = con.execute(
            "SELECT count(*) FROM core.watched_gpu_allocations WHERE pod_uid = ?",
            [victim[0]["metadata"]["uid"]],
        ).fetchone()[0]
    assert uids == {p["metadata"]["uid"] for p in pods}
    assert victim[0]["metadata"]["uid"] not in uids and allocations == 0
    assert lists == [(1, True, len(pods))]
    assert cursor.commits == 1 and int(cursor.resource_version) >= int(
        victim[0]["metadata"]["resourceVersion"]
    )


def test_a_streaming_list_the_server_refuses_falls_back_to_the_paged_list_in_one_commit(
    sim: SimulatedCluster, api, tmp_path: Path
) -> None:
    wh = warehouse(tmp_path, "wh")
    # a server without WatchList refuses sendInitialEvents (here: 422 on the first watch)
    sim.faults.add(Fault("status", status=422, resource="pods", watch=True, times=1))
    listed = Observed(snapshot(api, WatchOptions(timeout_seconds=2)), lambda n, p: None)

    commit_streamed(wh, listed, FIRST_AT)

    with wh.writer() as con:
        cursor = load_cursors(con, CLUSTER)["pods"]
        present = con.execute("SELECT count(*) FROM core.watched_objects WHERE present").fetchone()[
            0
        ]
    assert cursor.listed_via == "list" and cursor.commits == 1
    assert present == len(sim.objects("pods"))
    assert max(listed.sizes) <= PAGE and listed.firsts[0]


@pytest.mark.parametrize(
    ("options", "via"),
    [(STREAMED, "watchlist"), (WatchOptions(timeout_seconds=2), "list")],
    ids=["streaming-again", "auto-falls-back-to-paging"],
)
def test_a_streaming_list_cut_off_before_its_end_starts_over_and_drops_what_it_staged(
    sim: SimulatedCluster, api, tmp_path: Path, options: WatchOptions, via: str
) -> None:
    wh = warehouse(tmp_path, "wh")
    # the connection drops after the first chunk of initial events, before the end bookmark
    sim.faults.add(Fault("truncate", resource="pods", watch=True, times=1))
    victim: list[str] = []

    def meanwhile(number: int, page: SnapshotPage) -> None:
        if number == 1:  # a pod of the first page goes before the list starts over
            uid = page.objects.column("uid")[0].as_py()
            delete(sim, [p for p in sim.objects("pods") if p["metadata"]["uid"] == uid])
            victim.append(uid)

    listed = Observed(snapshot(api, options), meanwhile)
    commit_streamed(wh, listed, FIRST_AT)

    pods = sim.objects("pods")
    assert listed.firsts.count(True) == 2 and listed.firsts[0], "the list started over once"
    assert max(listed.sizes) <= PAGE
    with wh.writer() as con:
        uids = {row[0] for row in con.execute("SELECT uid FROM core.watched_objects").fetchall()}
        cursor = load_cursors(con, CLUSTER)["pods"]
    assert uids == {p["metadata"]["uid"] for p in pods} and victim[0] not in uids
    assert cursor.listed_via == via and cursor.commits == 1
