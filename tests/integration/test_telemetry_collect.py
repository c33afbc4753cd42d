"""The telemetry collector against the simulated exporters and Prometheus, over real sockets.

Expectations come from the world (its activity: roles, pods) and from the simulator's signal
functions evaluated here in-process, not through any HTTP, text or normalisation code.
"""

from __future__ import annotations

import dataclasses
import math
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs

import pyarrow as pa
import pytest

from annex.errors import CollectionError
from annex.settings import Settings, TelemetrySettings
from collectors.telemetry import collect_exporters, collect_prometheus, fields
from collectors.telemetry.query_range import PrometheusClient, PrometheusError
from simulator.kubernetes.faults import Fault
from simulator.telemetry import TelemetryServer, signals
from simulator.world import build_world
from simulator.world.activity import gpu_activity

pytestmark = pytest.mark.integration

SAMPLE = 15.0


@pytest.fixture(scope="module")
def world():
    return build_world(20, seed=3)


@pytest.fixture(scope="module")
def now(world) -> float:
    return math.floor(world.now.timestamp() / 60) * 60  # on the minute: both paths meet


@pytest.fixture(scope="module")
def server(world, now):
    with TelemetryServer(world, clock=lambda: now) as telemetry:
        yield telemetry


def tables(batches) -> dict[str, pa.Table]:
    grouped: dict[str, list[pa.RecordBatch]] = {}
    for name, batch in batches:
        grouped.setdefault(name, []).append(batch)
    return {name: pa.Table.from_batches(bs) for name, bs in grouped.items()}


def settings(**telemetry) -> Settings:
    return dataclasses.replace(Settings(), telemetry=TelemetrySettings(**telemetry))


def keyed(t: dict[str, pa.Table]) -> dict[tuple, float]:
    """Samples by (series identity, ts), independent of series numbering."""
    series = {
        r["series_index"]: (r["exporter_metric"], r["gpu_uuid"], r["pod"], r["mig_instance"])
        for r in t["telemetry_series"].to_pylist()
    }
    return {
        (series[s["series_index"]], s["ts"]): s["value"] for s in t["telemetry_samples"].to_pylist()
    }


def by_gpu_metric(t: dict[str, pa.Table], ts: datetime) -> dict[tuple, float]:
    series = {r["series_index"]: r for r in t["telemetry_series"].to_pylist()}
    out = {}
    for sample in t["telemetry_samples"].to_pylist():
        if sample["ts"] != ts:
            continue
        s = series[sample["series_index"]]
        key = (s["gpu_uuid"], s["metric"], s["mig_instance"])
        assert key not in out, key
        out[key] = sample["value"]
    return out


@pytest.fixture(scope="module")
def scraped(server, world, now):
    urls = [server.exporter_url(node) for node in server.nodes()]
    urls.append(server.exporter_url("no-such-node"))  # 404
    urls.append(server.prometheus_url + "/api/v1/status/buildinfo")  # JSON: unparsable
    urls.append("http://127.0.0.1:9/metrics")  # nothing listens (discard port)
    when = datetime.fromtimestamp(now, UTC)
    seen = []
    result = tables(collect_exporters(urls, "sim", Settings(), now=when, on_target=seen.append))
    assert len(seen) == len(urls)
    return result


def test_scrape_values_match_the_world(scraped, world, now) -> None:
    activity = {a.gpu.uuid: a for a in gpu_activity(world)}
    series = scraped["telemetry_series"].to_pylist()
    values = by_gpu_metric(scraped, datetime.fromtimestamp(now, UTC).replace(tzinfo=None))
    sample_time = math.floor(now / SAMPLE) * SAMPLE
    checked = 0
    for (uuid, metric, _mig), value in values.items():
        a = activity[uuid]
        expected = signals.signals_for(a).value(metric, sample_time)
        assert expected is not None, (uuid, metric)
        # 4.8 writes whole mJ, 4.9 whole J; doubles keep six decimals (%f)
        tolerance = 1.0 if metric == "total_energy_consumption" else 5e-7
        assert value == pytest.approx(expected, abs=tolerance), (a.role, metric)
        checked += 1
    assert checked > 1000
    for row in series:
        a = activity[row["gpu_uuid"]]
        assert row["source"] == "scrape" and row["hostname"] == a.gpu.node
        assert row["gpu_index"] == a.gpu.index
        assert row["driver_version"] == a.driver_version
        if a.pod and now >= a.since:
            assert (row["pod"], row["namespace"], row["container"]) == (
                a.pod,
                a.namespace,
                a.container,
            )
        else:
            assert row["pod"] is None
    idle = [u for u, a in activity.items() if a.role in ("idle", "balloon")]
    training = [u for u, a in activity.items() if a.role == "training" and not a.degraded]
    assert idle and training
    for uuid in idle:
        assert values.get((uuid, "gr_engine_active", None), 0.0) < 0.05
    for uuid in training:
        if activity[uuid].gpu.mig_devices or now < activity[uuid].since:
            continue
        assert 0.4 <= values[(uuid, "tensor_active", None)] <= 0.65
    gone = [u for u, a in activity.items() if a.role == "unavailable"]
    for uuid in gone:
        assert values[(uuid, "xid_errors", None)] == 79


def extents_from_samples(t: dict[str, pa.Table]) -> dict[int, tuple]:
    out: dict[int, tuple] = {}
    for s in t["telemetry_samples"].to_pylist():
        first, last, n = out.get(s["series_index"], (s["ts"], s["ts"], 0))
        out[s["series_index"]] = (min(first, s["ts"]), max(last, s["ts"]), n + 1)
    return out


def test_extents_cover_exactly_the_samples_yielded(scraped, ranged) -> None:
    for t in (scraped, ranged[0]):
        rows = t["telemetry_extents"].to_pylist()
        yielded = {r["series_index"]: (r["first_ts"], r["last_ts"], r["samples"]) for r in rows}
        assert yielded == extents_from_samples(t)
        assert len(rows) == len(yielded)  # one row per series


def test_both_generations_and_mig_are_normalised(scraped, world) -> None:
    series = scraped["telemetry_series"].to_pylist()
    generations = {a.gpu.uuid: a.exporter_generation for a in gpu_activity(world)}
    names = {(generations[r["gpu_uuid"]], r["metric"]): r["exporter_metric"] for r in series}
    assert names[("4.8", "gpu_util")] == "DCGM_FI_DEV_GPU_UTIL"
    assert names[("4.9", "total_energy_consumption")] == "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL"
    assert {r["unit"] for r in series if r["metric"] == "sm_clock"} == {"mhz"}
    assert all(r["field_id"] == fields.BY_METRIC[r["metric"]].field_id for r in series)
    mig = [r for r in series if r["mig_profile"]]
    assert mig and all(r["metric"] in signals.PROFILING and r["mig_instance"] for r in mig)


def test_failed_targets_are_recorded_and_do_not_stop_the_others(scraped, server) -> None:
    targets = scraped["telemetry_targets"].to_pylist()
    assert len(targets) == len(server.nodes()) + 3
    ok = [t for t in targets if t["status"] == "ok"]
    assert len(ok) == len(server.nodes())
    assert sum(t["samples"] for t in ok) == scraped["telemetry_samples"].num_rows
    failed = {t["target"].rsplit("/", 2)[-2]: t for t in targets if t["status"] == "failed"}
    assert failed["no-such-node"]["http_status"] == 404
    assert failed["status"]["http_status"] == 200
    assert "unparsable exposition" in failed["status"]["error"]
    refused = [t for t in failed.values() if t["http_status"] is None]
    assert len(refused) == 1 and "cannot connect" in refused[0]["error"]
    (rejected,) = scraped["rejected"].to_pylist()
    assert rejected["reason_code"] == "unparsable_exposition"
    assert "Invalid labels" in rejected["message"] and rejected["raw"].startswith(b"{")


def test_truncated_and_slow_scrapes(server, now) -> None:
    node = server.nodes()[0]
    server.faults.add(Fault("truncate", path_prefix=f"/exporters/{node}/", truncate_fraction=0.6))
    try:
        result = tables(
            collect_exporters(
                [server.exporter_url(node)], "sim", Settings(), now=datetime.fromtimestamp(now, UTC)
            )
        )
    finally:
        server.faults.clear()
    (target,) = result["telemetry_targets"].to_pylist()
    assert target["status"] == "failed" and "ends early" in target["error"]
    assert "telemetry_samples" not in result


@pytest.fixture(scope="module")
def ranged(server, world, now):
    start = datetime.fromtimestamp(now - 1800, UTC)
    end = datetime.fromtimestamp(now + 1, UTC)  # [start, end): includes `now`
    windows = []
    s = settings(max_points_per_series=12)
    server.clear_requests()
    result = tables(
        collect_prometheus(
            server.prometheus_url, "sim", s, start=start, end=end, on_window=windows.append
        )
    )
    return result, windows, server.requests()


def test_prometheus_path_agrees_with_the_scrape_path(ranged, scraped, now) -> None:
    result, _, _ = ranged
    at = datetime.fromtimestamp(now, UTC).replace(tzinfo=None)
    from_scrape = by_gpu_metric(scraped, at)
    from_prometheus = by_gpu_metric(result, at)
    assert from_scrape.keys() == from_prometheus.keys()
    for key, value in from_scrape.items():
        assert from_prometheus[key] == value, key  # same canonical value, to the bit
    rows = result["telemetry_series"].to_pylist()
    assert {r["source"] for r in rows} == {"query_range"}
    assert all("exported_pod" not in dict(r["labels"]) for r in rows)
    target_pods = {dict(r["labels"]).get("pod") for r in rows}
    assert all(p.startswith("nvidia-dcgm-exporter-") for p in target_pods)


def test_windows_respect_the_point_limit_and_long_queries_are_posted(ranged, now) -> None:
    result, windows, requests = ranged
    assert len(windows) == 3  # 31 minutes at 60 s, at most 12 points per window
    assert [w.status for w in windows] == ["ok"] * 3
    assert result["telemetry_targets"].num_rows == 3
    queries = [r for r in requests if r.path.endswith("/api/v1/query_range")]
    assert queries and all(r.status == 200 for r in queries)
    for r in queries:
        start, end, step = (float(r.query[k][0]) for k in ("start", "end", "step"))
        assert (end - start) / step + 1 <= 12
    assert any(r.method == "POST" for r in queries) and any(r.method == "GET" for r in queries)
    ts = result["telemetry_samples"].column("ts").to_pylist()
    first = datetime.fromtimestamp(now - 1800, UTC).replace(tzinfo=None)
    assert min(ts) == first and max(ts) == first + timedelta(minutes=30)


def test_response_size_limit_halves_windows(server, now) -> None:
    start = datetime.fromtimestamp(now - 1800, UTC)
    end = datetime.fromtimestamp(now, UTC)
    # half an hour of one field for all GPUs is 160-280 kB here; one instant 80-130 kB
    small = settings(max_response_bytes=200_000)
    big = tables(collect_prometheus(server.prometheus_url, "sim", Settings(), start=start, end=end))
    server.clear_requests()
    cut = tables(collect_prometheus(server.prometheus_url, "sim", small, start=start, end=end))
    spans = {
        round((float(r.query["end"][0]) - float(r.query["start"][0])) / 60) + 1
        for r in server.requests()
        if r.path.endswith("/query_range")
    }
    assert 30 in spans and max(spans) == 30 and min(spans) < 30  # some windows were halved
    assert keyed(cut) == keyed(big)
    assert len(cut["telemetry_targets"].to_pylist()) == 1  # halves stay one window's row
    with pytest.raises(PrometheusError, match=r"exceeds the limit"):
        tables(
            collect_prometheus(
                server.prometheus_url,
                "sim",
                settings(max_response_bytes=50_000),
                start=start,
                end=end,
            )
        )


def test_prometheus_refusals_carry_its_error_type(world, now) -> None:
    with TelemetryServer(world, clock=lambda: now, token="s3cret") as guarded:
        start = datetime.fromtimestamp(now - 300, UTC)
        end = datetime.fromtimestamp(now, UTC)
        with pytest.raises(PrometheusError) as denied:
            tables(
                collect_prometheus(guarded.prometheus_url, "sim", Settings(), start=start, end=end)
            )
        assert denied.value.status == 401 and "prometheus_token_env" in denied.value.hint
        ok = tables(
            collect_prometheus(
                guarded.prometheus_url, "sim", Settings(), start=start, end=end, token="s3cret"
            )
        )
        assert ok["telemetry_samples"].num_rows > 0
        assert all("s3cret" not in str(r.headers) for r in guarded.requests())

        client = PrometheusClient(
            guarded.prometheus_url, token="s3cret", timeout=10, max_response_bytes=1 << 20
        )
        with pytest.raises(PrometheusError) as too_fine:
            client.query_range("DCGM_FI_DEV_GPU_TEMP", now - 86400, now, 1)
        assert too_fine.value.status == 400 and too_fine.value.error_type == "bad_data"
        assert too_fine.value.error == (
            "exceeded maximum resolution of 11,000 points per timeseries. "
            "Try decreasing the query resolution (?step=XX)"
        )
        guarded.faults.add(Fault("status", status=503, path_prefix="/prometheus/", method=None))
        with pytest.raises(CollectionError) as down:
            tables(
                collect_prometheus(
                    guarded.prometheus_url, "sim", Settings(), start=start, end=end, token="s3cret"
                )
            )
        assert isinstance(down.value, PrometheusError)
        assert down.value.status == 503 and down.value.error_type == "unavailable"
        assert "cluster sim" in down.value.message


def test_bad_parameters_are_worded_as_prometheus_does(server) -> None:
    from urllib.error import HTTPError
    from urllib.request import urlopen

    import orjson

    url = server.prometheus_url + "/api/v1/query_range?query=up&start=abc&end=1&step=60"
    with pytest.raises(HTTPError) as info:
        urlopen(url)
    body = orjson.loads(info.value.read())
    assert info.value.code == 400
    assert body == {
        "status": "error",
        "errorType": "bad_data",
        "error": 'invalid parameter "start": cannot parse "abc" to a valid timestamp',
    }
    record = server.requests()[-1]
    assert parse_qs("start=abc")["start"] == record.query["start"]


def test_a_past_window_reads_the_past_pods_that_held_each_gpu() -> None:
    """A backfill (``annex collect telemetry --since``) of an hour of the world's past: each GPU
    a past pod held for the whole hour comes back labelled with that pod, as the exporter
    printed it then, and one a past pod held for none of it comes back without a workload."""
    from simulator.world.history import WorldHistory

    past_world = build_world(20, seed=3)
    WorldHistory(past_world, days=10)
    activities = gpu_activity(past_world)
    start = math.floor((past_world.now.timestamp() - 5 * 86400) / 3600) * 3600
    end = start + 3600
    held, free = {}, set()
    for a in activities:
        if a.gpu.mig_devices or a.role == "unavailable":
            continue
        holders = [h for h in a.past if h.begin < end + SAMPLE and h.end > start - SAMPLE]
        if len(holders) == 1 and holders[0].begin <= start and holders[0].end >= end:
            held[a.gpu.uuid] = (holders[0].namespace, holders[0].pod)
        elif not holders and a.since > end:
            free.add(a.gpu.uuid)
    assert held and free, "the test world's past should hold some GPUs and leave some free"
    with TelemetryServer(past_world, clock=lambda: past_world.now.timestamp()) as telemetry:
        got = tables(
            collect_prometheus(
                telemetry.prometheus_url,
                "sim",
                Settings(),
                start=datetime.fromtimestamp(start, UTC),
                end=datetime.fromtimestamp(end, UTC),
            )
        )
    workloads: dict[str, set] = {}
    for r in got["telemetry_series"].to_pylist():
        workloads.setdefault(r["gpu_uuid"], set()).add((r["namespace"], r["pod"]))
    for uuid, pod in held.items():
        assert workloads[uuid] == {pod}, uuid
    for uuid in free:
        assert workloads[uuid] == {(None, None)}, uuid
