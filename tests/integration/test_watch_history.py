"""Watch mode end to end: the simulated API server, the real client, a real warehouse file.

The simulator's ``ShortJobs`` runs a sweep of sub-minute jobs whose pods are deleted right
after they finish, and keeps the ground truth of each pod's GPU-seconds. The snapshot
collector, run before and after, never sees those pods; the watch must have every one, with
exactly the ground truth's GPU-seconds, through disconnects, 410s (HTTP and in-stream),
compaction and a crash before a commit.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from annex.cli import main
from annex.settings import ClusterSettings, KubernetesSettings, Settings, WarehouseSettings
from collectors.kubernetes import api_client_for
from collectors.kubernetes.history import WATCHED, ResourceHistory, WatchOptions
from services.watch import WatchService
from simulator.kubernetes import Fault, SimulatedCluster
from simulator.kubernetes.churn import ShortJobs
from simulator.world import build_world
from warehouse import Warehouse
from warehouse.models.watch import commit_batch, load_cursors

pytestmark = pytest.mark.integration

CLUSTER = "sim"
OPTIONS = WatchOptions(timeout_seconds=2, max_batch_seconds=0.2, max_batch_events=50)


@pytest.fixture
def sim(tmp_path: Path):
    cluster = SimulatedCluster(build_world(12, seed=3), bookmark_interval_seconds=0.2)
    with cluster:
        cluster.write_kubeconfig(tmp_path / "kubeconfig")
        yield cluster


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return replace(
        Settings(),
        kubernetes=KubernetesSettings(max_backoff_seconds=0.2),
        warehouse=WarehouseSettings(path=tmp_path / "annex.duckdb"),
    )


@pytest.fixture
def target(tmp_path: Path) -> ClusterSettings:
    return ClusterSettings(name=CLUSTER, kubeconfig=tmp_path / "kubeconfig")


@pytest.fixture
def api(sim: SimulatedCluster, settings: Settings, target: ClusterSettings):
    client = api_client_for(
        kubeconfig=target.kubeconfig, context=None, in_cluster=False, settings=settings.kubernetes
    )
    yield client
    client.close()


@pytest.fixture
def wh(settings: Settings) -> Warehouse:
    return Warehouse(settings.warehouse)


def service(api, wh: Warehouse, settings: Settings, resources=("pods",)) -> WatchService:
    return WatchService(
        api, wh, cluster=CLUSTER, settings=settings, options=OPTIONS, resources=resources
    )


def watched(wh: Warehouse) -> dict[str, tuple]:
    """pod_uid -> (gpus, gpu_seconds, valid_to_source) from the watch-built mart."""
    with wh.writer() as con:
        rows = con.execute(
            "SELECT pod_uid, gpus, gpu_seconds, valid_to_source "
            "FROM marts.watched_gpu_allocations WHERE cluster = ?",
            [CLUSTER],
        ).fetchall()
    return {uid: (gpus, seconds, source) for uid, gpus, seconds, source in rows}


def assert_matches_ground_truth(wh: Warehouse, jobs: ShortJobs) -> None:
    rows = watched(wh)
    assert len(jobs.ledger) >= 20
    for uid, truth in jobs.ledger.items():
        assert uid in rows, f"short-job pod {truth.pod_name} missing from the watch history"
        gpus, seconds, source = rows[uid]
        assert (gpus, seconds, source) == (truth.gpus, truth.gpu_seconds, "finished"), truth
    with wh.writer() as con:
        duplicates = con.execute(
            "SELECT count(*) - count(DISTINCT pod_uid) FROM core.watched_gpu_allocations "
            "WHERE namespace = 'team-sweep'"
        ).fetchone()[0]
    assert duplicates == 0


def cursor_rv(wh: Warehouse, resource: str = "pods") -> int:
    with wh.writer() as con:
        return int(load_cursors(con, CLUSTER)[resource].resource_version)


# ---------------------------------------------------------------------------------------------


def run_during(watch: WatchService, sim: SimulatedCluster, jobs: ShortJobs) -> None:
    """Run ``watch`` as the service does while ``jobs`` runs to its end, until caught up."""
    stop = threading.Event()
    failure: list[BaseException] = []

    def serve() -> None:
        try:
            watch.run(stop)
        except BaseException as exc:
            failure.append(exc)

    runner = threading.Thread(target=serve)
    runner.start()
    try:
        # The history starts at each resource's first list: the sweep starts once all are in
        # (they are committed one after the other, each under the writer lock).
        listed = time.monotonic() + 30
        while len(watch.summary.resources) < len(watch.resources) and not failure:
            assert time.monotonic() < listed, "the watch's initial lists did not finish"
            time.sleep(0.05)
        jobs.start()
        jobs.drain(timeout=60)
        jobs.stop()
        wanted = sim.resource_version
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not failure:
            progress = watch.summary.resources
            if len(progress) == len(watch.resources) and all(
                p.resource_version and int(p.resource_version) >= wanted for p in progress.values()
            ):
                break
            time.sleep(0.1)
    finally:
        stop.set()
        runner.join(timeout=30)
    assert not failure, failure


def test_short_jobs_between_snapshots_are_missed_by_snapshots_and_kept_by_the_watch(
    sim: SimulatedCluster, api, wh: Warehouse, settings: Settings, target: ClusterSettings
) -> None:
    from services.inventory import collect_cluster_inventory

    first = collect_cluster_inventory(settings, wh, target, publish=False)
    assert first.status == "succeeded"
    watch = service(api, wh, settings, resources=("pods", "nodes", "jobs", "events"))
    jobs = ShortJobs(sim, max_jobs=300, jobs_per_tick=6)
    run_during(watch, sim, jobs)
    second = collect_cluster_inventory(settings, wh, target, publish=False)
    assert second.status == "succeeded"

    assert len(jobs.ledger) == 300
    with wh.writer() as con:
        snapshot_uids = {
            row[0]
            for row in con.execute(
                "SELECT pod_uid FROM core.gpu_allocations WHERE cluster = ?", [CLUSTER]
            ).fetchall()
        }
        watched_jobs = con.execute(
            "SELECT count(*) FROM core.watched_objects WHERE resource = 'jobs' "
            "AND namespace = 'team-sweep' AND NOT present AND gone_how = 'deleted'"
        ).fetchone()[0]
    assert not snapshot_uids & set(jobs.ledger), "the snapshots should never see short jobs"
    assert_matches_ground_truth(wh, jobs)
    assert watched_jobs == 300
    # the long-running pods both histories share agree on what is open
    with wh.writer() as con:
        open_watch = set(
            con.execute(
                "SELECT pod_uid FROM core.watched_gpu_allocations WHERE valid_to IS NULL"
            ).fetchall()
        )
        open_snapshot = set(
            con.execute(
                "SELECT pod_uid FROM core.gpu_allocations WHERE valid_to IS NULL"
            ).fetchall()
        )
        latency = con.execute(
            "SELECT verb, requests, within_slo FROM marts.kubernetes_api_latency "
            "WHERE resource = 'pods' ORDER BY verb"
        ).fetchall()
    assert open_watch == open_snapshot
    assert latency[0][0] == "list" and latency[0][2] is True
    assert latency[1][0] == "watch" and latency[1][1] >= 1 and latency[1][2] is None


def test_a_dropped_connection_resumes_from_the_last_resource_version(
    sim: SimulatedCluster, api, wh: Warehouse, settings: Settings
) -> None:
    service(api, wh, settings).catch_up()
    start_rv = cursor_rv(wh)
    # The first watch request streams; later ones are cut off before any answer.
    sim.faults.add(Fault("disconnect", resource="pods", watch=True, skip=1, times=2))
    sim.clear_requests()
    watch = service(api, wh, settings)

    jobs = ShortJobs(sim, max_jobs=80, jobs_per_tick=2)
    run_during(watch, sim, jobs)

    watches = [r for r in sim.requests if r.path == "/api/v1/pods" and "watch" in r.query]
    dropped = [r for r in watches if r.fault == "disconnect"]
    assert len(dropped) == 2
    assert watches[0].query["resourceVersion"] == [str(start_rv)]
    # the retry resumed where the first stream had got to, not from the start or a relist
    assert int(dropped[0].query["resourceVersion"][0]) > start_rv
    assert all("sendInitialEvents" not in r.query for r in watches)
    assert watch.summary.resources["pods"].snapshots == 0
    assert_matches_ground_truth(wh, jobs)


def test_an_http_410_relists_and_closes_what_vanished(
    sim: SimulatedCluster, api, wh: Warehouse, settings: Settings
) -> None:
    service(api, wh, settings).catch_up()
    before = watched(wh)
    victim = next(
        p
        for p in sim.objects("pods")
        if p["metadata"]["uid"] in before and before[p["metadata"]["uid"]][1] is None
    )
    sim.faults.add(Fault("status", status=410, resource="pods", watch=True, times=1))
    # The pod goes while the watch is refused: only the relist can tell.
    sim.delete("pods", victim["metadata"]["name"], victim["metadata"]["namespace"])

    watch = service(api, wh, settings)
    watch.catch_up()

    assert watch.summary.resources["pods"].snapshots == 1
    with wh.writer() as con:
        cursor = load_cursors(con, CLUSTER)["pods"]
        row = con.execute(
            "SELECT valid_to_source, valid_to_inferred, valid_to IS NOT NULL "
            "FROM core.watched_gpu_allocations WHERE pod_uid = ?",
            [victim["metadata"]["uid"]],
        ).fetchone()
        gone = con.execute(
            "SELECT present, gone_how FROM core.watched_objects WHERE uid = ?",
            [victim["metadata"]["uid"]],
        ).fetchone()
    assert cursor.relists == 1
    assert row == ("relisted", True, True)
    assert gone == (False, "relisted")


def test_compaction_gives_an_in_stream_410_and_the_watch_relists(
    sim: SimulatedCluster, api, wh: Warehouse, settings: Settings
) -> None:
    service(api, wh, settings).catch_up()
    old = cursor_rv(wh)
    # While no watch runs, a sweep runs and the server compacts its history behind it.
    jobs = ShortJobs(sim, max_jobs=30, compact_keep=3)
    jobs.start()
    jobs.drain(timeout=30)
    jobs.stop()
    assert sim.store.compacted_rv > old
    sim.clear_requests()

    watch = service(api, wh, settings)
    watch.catch_up()

    watches = [r for r in sim.requests if r.path == "/api/v1/pods" and "watch" in r.query]
    assert watches[0].query["resourceVersion"] == [str(old)] and watches[0].status == 200
    assert watch.summary.resources["pods"].snapshots == 1
    assert cursor_rv(wh) >= sim.store.compacted_rv
    with wh.writer() as con:
        assert load_cursors(con, CLUSTER)["pods"].relists == 1
        still_open = con.execute(
            "SELECT count(*) FROM core.watched_gpu_allocations AS a "
            "JOIN core.watched_objects AS o ON o.uid = a.pod_uid "
            "WHERE a.valid_to IS NULL AND NOT o.present"
        ).fetchone()[0]
    assert still_open == 0


def test_a_crash_before_the_commit_loses_and_duplicates_nothing(
    sim: SimulatedCluster, api, wh: Warehouse, settings: Settings
) -> None:
    service(api, wh, settings).catch_up()
    jobs = ShortJobs(sim, max_jobs=60)
    jobs.start()
    jobs.drain(timeout=30)
    jobs.stop()
    target = sim.resource_version

    class Crash(Exception):
        pass

    with wh.writer() as con:
        cursor = load_cursors(con, CLUSTER)["pods"].resource_version
    history = ResourceHistory(api, "pods", settings.kubernetes, options=OPTIONS)
    received = 0
    with pytest.raises(Crash):
        for batch in history.batches(cursor, deadline=time.monotonic() + 20):
            received += batch.events
            with wh.writer() as con:
                con.execute("BEGIN")
                commit_batch(con, batch, cluster=CLUSTER, session_id="crashing")
                if received >= 40:  # written, not committed: the process dies here
                    raise Crash
                con.execute("COMMIT")
    assert cursor_rv(wh) < target

    service(api, wh, settings).catch_up()

    assert cursor_rv(wh) >= target
    assert_matches_ground_truth(wh, jobs)
    with wh.writer() as con:
        rows = con.execute(
            "SELECT count(*) FROM core.watched_gpu_allocations WHERE namespace = 'team-sweep'"
        ).fetchone()[0]
    assert rows == len(jobs.ledger)


def test_bookmarks_advance_the_resume_point_without_pod_changes(
    sim: SimulatedCluster, api, wh: Warehouse, settings: Settings
) -> None:
    service(api, wh, settings).catch_up()
    first = cursor_rv(wh)
    with wh.writer() as con:
        events_before = load_cursors(con, CLUSTER)["pods"].events
    node = sim.objects("nodes")[0]["metadata"]["name"]
    for number in range(5):  # other resources' writes move the global resourceVersion

        def label(obj: dict, number: int = number) -> None:
            obj["metadata"].setdefault("labels", {})["annex-test"] = str(number)

        sim.mutate("nodes", node, label)
    moved_to = sim.resource_version

    service(api, wh, settings).catch_up()
    second = cursor_rv(wh)
    sim.clear_requests()
    service(api, wh, settings).catch_up()

    assert second >= moved_to > first
    with wh.writer() as con:
        assert load_cursors(con, CLUSTER)["pods"].events == events_before
    resumed = [r for r in sim.requests if r.path == "/api/v1/pods" and "watch" in r.query]
    assert not resumed or int(resumed[0].query["resourceVersion"][0]) >= second


def test_annex_watch_once_from_the_command_line(
    sim: SimulatedCluster, tmp_path: Path, wh: Warehouse
) -> None:
    config = tmp_path / "annex.toml"
    config.write_text(
        f'[warehouse]\npath = "{tmp_path / "annex.duckdb"}"\n'
        f'[[clusters]]\nname = "{CLUSTER}"\nkubeconfig = "{tmp_path / "kubeconfig"}"\n',
        encoding="utf-8",
    )
    args = ["--config", str(config), "watch", "--once", "--timeout-seconds", "2"]

    assert main(args) == 0
    assert main(args) == 0  # a rerun resumes from the cursors: nothing listed again

    with wh.writer() as con:
        cursors = load_cursors(con, CLUSTER)
    # by default every resource watch mode follows that the server serves (the simulator serves
    # DRA's resource.k8s.io/v1 and Kueue's CRDs: issue 38)
    assert set(cursors) == set(WATCHED)
    assert all(c.relists == 0 and c.listed_via in ("list", "watchlist") for c in cursors.values())
    assert wh.published_path.exists()


def test_the_fleet_summary_shows_api_latency_against_the_slo(
    api, wh: Warehouse, settings: Settings, target: ClusterSettings
) -> None:
    import io

    from annex.cli.summary import print_fleet_summary
    from annex.cli.tables import Screen
    from services.inventory import collect_cluster_inventory

    assert collect_cluster_inventory(settings, wh, target).status == "succeeded"
    service(api, wh, settings).catch_up()  # publishes
    out = io.StringIO()

    print_fleet_summary(settings, screen=Screen(out, width=140))

    text = out.getvalue()
    assert "SLO: LIST p99 <= 30 s" in text
    lines = [line for line in text.splitlines() if " pods " in f" {line} "]
    assert any("list" in line and "30,000" in line and "yes" in line for line in lines), text
    assert any("watch" in line for line in lines), text


def test_without_streaming_lists_the_watch_starts_from_a_consistent_paged_list(
    sim: SimulatedCluster, api, wh: Warehouse, settings: Settings
) -> None:
    # A server without WatchList refuses sendInitialEvents (here: 422 on the first watch).
    sim.faults.add(Fault("status", status=422, resource="pods", watch=True, times=1))
    watch = service(api, wh, settings)

    watch.catch_up()

    with wh.writer() as con:
        cursor = load_cursors(con, CLUSTER)["pods"]
        lists = con.execute(
            "SELECT resource, consistent, items FROM audit.kubernetes_lists "
            "WHERE collection_id = ?",
            [watch.session_id],
        ).fetchall()
        present = con.execute(
            "SELECT count(*) FROM core.watched_objects WHERE resource = 'pods' AND present"
        ).fetchone()[0]
    assert cursor.listed_via == "list" and cursor.relists == 0
    assert lists == [("pods", True, len(sim.objects("pods")))]
    assert present == len(sim.objects("pods"))


def test_a_pod_deleted_before_it_finishes_closes_at_its_deletion_timestamp(
    sim: SimulatedCluster, api, wh: Warehouse, settings: Settings
) -> None:
    service(api, wh, settings).catch_up()
    open_pods = {uid for uid, (_, seconds, _) in watched(wh).items() if seconds is None}
    pod = next(p for p in sim.objects("pods") if p["metadata"]["uid"] in open_pods)
    name, namespace = pod["metadata"]["name"], pod["metadata"]["namespace"]

    def terminating(obj: dict) -> None:
        obj["metadata"]["deletionTimestamp"] = "2030-01-01T00:00:30Z"
        obj["metadata"]["deletionGracePeriodSeconds"] = 30

    sim.mutate("pods", name, terminating, namespace)
    sim.delete("pods", name, namespace)
    service(api, wh, settings).catch_up()

    with wh.writer() as con:
        row = con.execute(
            "SELECT strftime(valid_to, '%Y-%m-%dT%H:%M:%SZ'), valid_to_source, valid_to_inferred "
            "FROM core.watched_gpu_allocations WHERE pod_uid = ?",
            [pod["metadata"]["uid"]],
        ).fetchone()
        gone = con.execute(
            "SELECT present, gone_how FROM core.watched_objects WHERE uid = ?",
            [pod["metadata"]["uid"]],
        ).fetchone()
    assert row == ("2030-01-01T00:00:30Z", "deleted", False)
    assert gone == (False, "deleted")


def test_a_pod_that_cannot_be_counted_is_kept_as_rejected_and_the_watch_goes_on(
    sim: SimulatedCluster, api, wh: Warehouse, settings: Settings
) -> None:
    service(api, wh, settings).catch_up()
    node = sim.objects("nodes")[0]["metadata"]["name"]
    bad = {"requests": {"nvidia.com/gpu": "lots"}}
    sim.put(
        "pods",
        {
            "metadata": {"name": "bad-quantity", "namespace": "team-x"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": bad}]},
            "status": {"phase": "Running"},
        },
    )
    wanted = sim.resource_version

    service(api, wh, settings).catch_up()

    with wh.writer() as con:
        rejected = con.execute(
            "SELECT source, reason_code, locator FROM audit.rejected WHERE cluster = ?", [CLUSTER]
        ).fetchall()
        kept = con.execute(
            "SELECT count(*) FROM core.watched_objects WHERE name = 'bad-quantity' AND present"
        ).fetchone()[0]
    assert rejected == [("kubernetes-watch", "invalid_gpu_quantity", rejected[0][2])]
    assert "team-x/bad-quantity" in rejected[0][2]
    assert kept == 1
    assert cursor_rv(wh) >= wanted


def test_a_second_writer_is_refused_and_writes_nothing(
    sim: SimulatedCluster, api, wh: Warehouse, settings: Settings
) -> None:
    from warehouse.models.watch import CursorMoved

    service(api, wh, settings).catch_up()
    before = cursor_rv(wh)
    node = sim.objects("nodes")[0]["metadata"]["name"]
    sim.mutate("nodes", node, lambda n: n["metadata"].setdefault("labels", {}).update(a="b"))
    pod = sim.objects("pods")[0]
    sim.mutate("pods", pod["metadata"]["name"], lambda p: None, pod["metadata"]["namespace"])
    history = ResourceHistory(api, "pods", settings.kubernetes, options=OPTIONS)
    batch = next(
        b for b in history.batches(str(before), deadline=time.monotonic() + 10) if b.events
    )

    with pytest.raises(CursorMoved, match="another `annex watch`"), wh.writer() as con:
        commit_batch(con, batch, cluster=CLUSTER, session_id="second", expected=str(before - 1))

    assert cursor_rv(wh) == before


def test_sigterm_stops_annex_watch_cleanly_while_it_commits(
    sim: SimulatedCluster, tmp_path: Path, wh: Warehouse
) -> None:
    # a Deployment's rollout sends SIGTERM at any moment, a commit under way included: the
    # service finishes that commit and exits 0, and a restart resumes where it stopped
    import os
    import signal
    import subprocess
    import sys

    config = tmp_path / "annex.toml"
    config.write_text(
        f'[warehouse]\npath = "{tmp_path / "annex.duckdb"}"\n'
        f'[[clusters]]\nname = "{CLUSTER}"\nkubeconfig = "{tmp_path / "kubeconfig"}"\n',
        encoding="utf-8",
    )
    jobs = ShortJobs(sim, jobs_per_tick=6).start()
    command = [sys.executable, "-m", "annex", "--config", str(config), "watch"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANNEX_")}
    process = subprocess.Popen(
        [*command, "--timeout-seconds", "2"], stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert "watching cluster" in (process.stderr.readline() if process.stderr else "")
        deadline = time.monotonic() + 60
        while not wh.published_path.exists() and time.monotonic() < deadline:
            time.sleep(0.2)  # the first commits (the initial lists) are published
        time.sleep(1.0)  # and now short jobs are committed all the time
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    finally:
        jobs.stop()
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr and "interrupted" not in stderr.lower()
    with wh.writer() as con:
        cursors = load_cursors(con, CLUSTER)
    assert {"pods", "nodes", "jobs", "events"} <= set(cursors)
    once = [*command, "--once", "--timeout-seconds", "2"]
    assert subprocess.run(once, env=env, capture_output=True).returncode == 0  # resumes
