"""Prometheus formats: exposition text edge cases, and the range-query reader's pure parts."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import orjson
import pyarrow as pa
import pytest

from annex.errors import CollectionError
from collectors.telemetry import exposition
from collectors.telemetry.collect import SeriesTable, read_matrix, read_scrape
from collectors.telemetry.query_range import (
    POST_THRESHOLD,
    FetchError,
    PrometheusError,
    TooLarge,
    decode_matrix,
    field_queries,
    plan_windows,
    prometheus_error,
    redact,
)
from simulator.telemetry import exporter
from simulator.world import build_world
from simulator.world.activity import gpu_activity

TARGET = "http://gpu-1:9400/metrics"
SCRAPED = datetime(2026, 11, 2, 9, 0, 0, tzinfo=UTC)
GPU = (
    'gpu="0",UUID="GPU-aaaa",pci_bus_id="00000000:18:00.0",device="nvidia0",'
    'modelName="NVIDIA H100 80GB HBM3"'
)


def scrape(text: str, table: SeriesTable | None = None, at: datetime = SCRAPED):
    table = SeriesTable("scrape") if table is None else table
    result = read_scrape(text.encode(), TARGET, at, table)
    series = result.series.to_pylist() if result.series is not None else []
    samples = result.samples.to_pylist() if result.samples is not None else []
    return result, series, samples


def test_escaped_label_values_are_unescaped() -> None:
    text = (
        "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
        f'DCGM_FI_DEV_GPU_TEMP{{{GPU},Hostname="n1",note="a\\\\b \\"q\\" line1\\nline2"}} 41\n'
    )
    _, series, samples = scrape(text)
    assert dict(series[0]["labels"])["note"] == 'a\\b "q" line1\nline2'
    assert samples[0]["value"] == 41.0


def test_missing_timestamps_take_the_scrape_time_and_explicit_ones_are_kept() -> None:
    text = (
        f"DCGM_FI_DEV_GPU_TEMP{{{GPU}}} 41\n"
        f"DCGM_FI_DEV_MEMORY_TEMP{{{GPU}}} 45 1793610000123\n"  # milliseconds
    )
    _, _, samples = scrape(text)
    assert samples[0]["ts"] == SCRAPED.replace(tzinfo=None)
    assert samples[1]["ts"] == datetime(2026, 11, 2, 9, 0, 0, 123000)


def test_nan_and_inf_are_skipped_and_counted() -> None:
    text = (
        f"DCGM_FI_DEV_POWER_USAGE{{{GPU}}} NaN\n"
        f"DCGM_FI_DEV_GPU_TEMP{{{GPU}}} +Inf\n"
        f"DCGM_FI_DEV_MEMORY_TEMP{{{GPU}}} -Inf\n"
        f"DCGM_FI_DEV_SM_CLOCK{{{GPU}}} 1980\n"
    )
    result, series, samples = scrape(text)
    assert result.stats.skipped == 3
    assert [s["value"] for s in samples] == [1980.0]
    assert len(series) == 4  # the series exist; only their non-finite samples are dropped


def test_a_counter_reset_survives_collection_unchanged() -> None:
    """Counters are stored as received (in J): the warehouse computes increases and resets."""
    table = SeriesTable("scrape")
    received = [1_000_000, 1_250_000, 1_500_000, 40_000, 290_000]  # mJ; driver reload at [3]
    values, indexes = [], set()
    for minute, mj in enumerate(received):
        text = (
            "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
            f"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{GPU}}} {mj}\n"
        )
        at = SCRAPED.replace(minute=minute)
        _, series, samples = scrape(text, table, at)
        assert len(series) == (1 if minute == 0 else 0)  # one series, announced once
        values += [s["value"] for s in samples]
        indexes |= {s["series_index"] for s in samples}
    assert values == [1000.0, 1250.0, 1500.0, 40.0, 290.0]
    assert indexes == {0}


def test_counter_names_are_kept_as_received() -> None:
    """prometheus_client appends _total to counter samples; the name received is stored."""
    text = (
        "# HELP DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL Total energy (in J).\n"
        "# TYPE DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL counter\n"
        f"DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL{{{GPU}}} 1234\n"
    )
    _, series, _ = scrape(text)
    assert series[0]["exporter_metric"] == "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL"
    assert series[0]["metric"] == "total_energy_consumption"
    assert series[0]["kind"] == "counter"


def test_non_dcgm_families_are_ignored_but_counted_and_unknown_dcgm_fields_kept() -> None:
    text = (
        "# TYPE go_goroutines gauge\ngo_goroutines 12\n"
        "# TYPE go_gc_duration_seconds summary\n"
        'go_gc_duration_seconds{quantile="0.5"} 0.001\ngo_gc_duration_seconds_count 4\n'
        "# TYPE DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL counter\n"
        f"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{{{GPU}}} 555\n"
    )
    result, series, samples = scrape(text)
    assert result.stats.non_dcgm == {
        "go_goroutines",
        "go_gc_duration_seconds",
        "go_gc_duration_seconds_count",
    }
    assert result.stats.unknown == {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"}
    (row,) = series
    assert row["field_id"] is None and row["unit"] is None
    assert row["metric"] == row["exporter_metric"] == "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"
    assert row["kind"] == "counter"
    assert [s["value"] for s in samples] == [555.0]


def test_both_generations_give_the_same_canonical_series() -> None:
    old = (
        f'DCGM_FI_DEV_GPU_UTIL{{{GPU},Hostname="n1",DCGM_FI_DRIVER_VERSION="550.90.07"}} 87\n'
        f'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{GPU},Hostname="n1"}} 123456789\n'
        f'DCGM_FI_DEV_SM_CLOCK{{{GPU},Hostname="n1"}} 1980\n'
    )
    new = (
        f'DCGM_FI_DEV_GPU_UTIL_RATIO{{{GPU},hostname="n1",'
        'DCGM_FI_SYSTEM_DRIVER_VERSION="550.90.07"} 0.870000\n'
        f'DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL{{{GPU},hostname="n1"}} 123456.789\n'
        f'DCGM_FI_DEV_SM_CLOCK_HERTZ{{{GPU},hostname="n1"}} 1980000000\n'
    )
    _, s_old, v_old = scrape(old)
    _, s_new, v_new = scrape(new)
    for a, b, x, y in zip(s_old, s_new, v_old, v_new, strict=True):
        for column in ("metric", "unit", "field_id", "gpu_uuid", "hostname", "gpu_index"):
            assert a[column] == b[column], column
        assert x["value"] == y["value"]
    assert [v["value"] for v in v_old] == [0.87, 123456.789, 1980.0]
    assert s_old[0]["driver_version"] == s_new[0]["driver_version"] == "550.90.07"
    assert s_old[0]["labels"] == s_new[0]["labels"] == []


def test_workload_labels_pod_exported_pod_missing_and_empty() -> None:
    text = (
        f'DCGM_FI_DEV_GPU_TEMP{{{GPU},pod="p1",namespace="ns",container="c"}} 40\n'
        f'DCGM_FI_DEV_MEMORY_TEMP{{{GPU},pod="exporter-x",namespace="gpu-operator",'
        'container="exp",exported_pod="p1",exported_namespace="ns",exported_container="c"} 44\n'
        f"DCGM_FI_DEV_SM_CLOCK{{{GPU}}} 345\n"
        f'DCGM_FI_DEV_MEM_CLOCK{{{GPU},pod="",namespace="",container=""}} 2619\n'
    )
    _, series, _ = scrape(text)
    workloads = [(s["pod"], s["namespace"], s["container"]) for s in series]
    assert workloads == [("p1", "ns", "c"), ("p1", "ns", "c"), (None,) * 3, (None,) * 3]
    assert dict(series[1]["labels"]) == {
        "pod": "exporter-x",
        "namespace": "gpu-operator",
        "container": "exp",
    }


def test_prometheus_target_labels_are_not_a_workload() -> None:
    """Without exported_*, a series scraped through a Service carries the exporter pod."""
    matrix = _matrix(
        [
            {
                "__name__": "DCGM_FI_DEV_GPU_TEMP",
                "UUID": "GPU-aaaa",
                "pod": "nvidia-dcgm-exporter-x",
                "namespace": "gpu-operator",
                "service": "nvidia-dcgm-exporter",
                "endpoint": "gpu-metrics",
            }
        ],
        [[(1793610000, "40")]],
    )
    series, _, _ = read_matrix(matrix, SeriesTable("query_range"), "prom", [])
    row = series.to_pylist()[0]
    assert row["pod"] is None and dict(row["labels"])["pod"] == "nvidia-dcgm-exporter-x"


def test_mig_labels_become_columns() -> None:
    text = (
        f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{GPU},GPU_I_PROFILE="1g.10gb",GPU_I_ID="3",'
        'Hostname="n1"} 0.250000\n'
    )
    _, series, samples = scrape(text)
    assert (series[0]["mig_profile"], series[0]["mig_instance"]) == ("1g.10gb", 3)
    assert samples[0]["value"] == 0.25


def test_unparsable_exposition_rejects_the_target_with_the_parser_message() -> None:
    table = SeriesTable("scrape")
    body = b"<html><body>502 Bad Gateway</body></html>\n"
    result = read_scrape(body, TARGET, SCRAPED, table)
    assert result.series is None and result.samples is None and len(table) == 0
    (rejection,) = result.rejections
    assert rejection.reason_code == "unparsable_exposition"
    assert "invalid metric name" in rejection.message and rejection.raw == body
    truncated = f'DCGM_FI_DEV_GPU_TEMP{{{GPU}}} 41\nDCGM_FI_DEV_GPU_TEMP{{gpu="1",UUID="GPU-b'
    assert read_scrape(truncated.encode(), TARGET, SCRAPED, table).error is not None
    assert len(table) == 0  # nothing of a bad body is kept, not even its good first line


def test_series_without_uuid_are_rejected_once() -> None:
    table = SeriesTable("scrape")
    text = 'DCGM_FI_DEV_NVSWITCH_TEMPERATURE_CURRENT{nvswitch="0",Hostname="n1"} 40\n'
    first = read_scrape(text.encode(), TARGET, SCRAPED, table)
    again = read_scrape(text.encode(), TARGET, SCRAPED, table)
    assert [r.reason_code for r in first.rejections] == ["missing_gpu_uuid"]
    assert again.rejections == [] and first.samples.num_rows == 0


@pytest.mark.parametrize("generation_pool", ["4.8", "4.9"])
def test_the_simulated_exporter_text_parses_completely(generation_pool: str) -> None:
    """Everything the (simulated) dcgm-exporter writes is understood, line for line."""
    world = build_world(20)
    activities = [a for a in gpu_activity(world) if a.exporter_generation == generation_pool]
    by_node: dict[str, list] = {}
    for a in activities:
        by_node.setdefault(a.gpu.node, []).append(a)
    mig = [n for n, acts in by_node.items() if any(a.gpu.mig_devices for a in acts)]
    node = (mig or sorted(by_node))[0]
    text = exporter.render(by_node[node], world.now.timestamp(), pool=world.node_pools[node])
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    parsed = exposition.parse(text)
    assert len(parsed) == len(lines)
    result = read_scrape(text.encode(), TARGET, SCRAPED, SeriesTable("scrape"))
    assert result.rejections == [] and result.stats.unknown == set()
    assert result.samples.num_rows == len(lines)


# -- the range-query reader ------------------------------------------------------------------


def _matrix(metrics: list[dict], values: list[list[tuple]]):
    body = orjson.dumps(
        {
            "status": "success",
            "data": {
                "resultType": "matrix",
                "result": [
                    {"metric": m, "values": [list(p) for p in v]}
                    for m, v in zip(metrics, values, strict=True)
                ],
            },
        }
    )
    return decode_matrix(body)


def test_matrix_values_become_canonical_and_non_finite_are_skipped() -> None:
    matrix = _matrix(
        [
            {"__name__": "DCGM_FI_DEV_GPU_UTIL", "UUID": "GPU-a", "gpu": "0"},
            {"__name__": "DCGM_FI_DEV_GPU_UTIL_RATIO", "UUID": "GPU-b", "gpu": "1"},
            {"__name__": "up", "job": "dcgm-exporter"},
        ],
        [
            [(1793610000, "87"), (1793610060, "NaN"), (1793610120.5, "90")],
            [(1793610000, "0.87"), (1793610060, "+Inf")],
            [(1793610000, "1")],
        ],
    )
    series, samples, stats = read_matrix(matrix, SeriesTable("query_range"), "prom", [])
    rows = samples.to_pylist()
    assert [r["value"] for r in rows] == [0.87, 0.9, 0.87]
    assert rows[1]["ts"] == datetime(2026, 11, 2, 9, 2, 0, 500000)
    assert stats.skipped == 2 and stats.non_dcgm == {"up"}
    assert series.column("metric").to_pylist() == ["gpu_util", "gpu_util"]
    assert samples.schema.field("ts").type == pa.timestamp("us")


def test_windows_never_exceed_the_point_limit_and_stay_on_the_step_grid() -> None:
    start, end = 1793610000 + 7, 1793610000 + 86400
    windows = plan_windows(start, end, 60.0, 100)
    assert all(w.points <= 100 for w in windows)
    assert windows[0].start == 1793610060  # ceil to the step grid
    points = [w.start + k * w.step for w in windows for k in range(w.points)]
    assert points == sorted(set(points))
    assert all(start <= p < end for p in points)
    assert len(points) == 1439  # every grid instant in [start, end)
    assert plan_windows(end, end, 60.0, 100) == []
    first, second = windows[0].halves()
    assert first.points + second.points == windows[0].points
    assert second.start == first.end + 60


def test_the_catch_all_query_is_long_enough_to_be_posted() -> None:
    queries = dict(field_queries())
    assert queries["gpu_util"] == '{__name__=~"DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_GPU_UTIL_RATIO"}'
    from urllib.parse import urlencode

    assert len(urlencode({"query": queries["other"]})) > POST_THRESHOLD


def test_prometheus_errors_carry_error_type_and_text() -> None:
    body = orjson.dumps(
        {
            "status": "error",
            "errorType": "bad_data",
            "error": "exceeded maximum resolution of 11,000 points per timeseries. Try "
            "decreasing the query resolution (?step=XX)",
        }
    )
    error = prometheus_error("http://prom", FetchError("HTTP 400 Bad Request", 400, body))
    assert isinstance(error, PrometheusError)
    assert error.status == 400 and error.error_type == "bad_data"
    assert "11,000 points" in error.error and "11,000 points" in error.message
    denied = prometheus_error("http://prom", FetchError("HTTP 401 Unauthorized", 401, b"no\n"))
    assert "prometheus_token_env" in (denied.hint or "")
    big = prometheus_error("http://prom", TooLarge("response exceeds the limit of 10 bytes"))
    assert "max_response_bytes" in (big.hint or "")


def test_redact_drops_credentials_only() -> None:
    assert redact("https://u:secret@prom.example:9090/prometheus?x=1") == (
        "https://prom.example:9090/prometheus?x=1"
    )
    assert redact("http://10.0.0.1:9400/metrics") == "http://10.0.0.1:9400/metrics"


def test_parse_reports_the_parser_message() -> None:
    with pytest.raises(exposition.ExpositionError, match="Invalid labels"):
        exposition.parse('x{a="1",a="2"} 1\n')
    assert math.isnan(exposition.parse("x NaN\n")[0].value)


def test_matrix_decoding_tolerates_whitespace_and_refuses_malformed_pairs() -> None:
    pretty = b"""{"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "DCGM_FI_DEV_GPU_TEMP", "UUID": "GPU-a"},
         "values": [ [1793610000, "41"], [1793610060.5, "42"] ]}]}}"""
    matrix = decode_matrix(pretty)
    assert matrix.counts == [2]
    assert matrix.times.to_pylist() == [1793610000.0, 1793610060.5]
    assert matrix.values.to_pylist() == ["41", "42"]
    broken = (
        b'{"status":"success","data":{"resultType":"matrix",'
        b'"result":[{"metric":{},"values":[[1,"2",3]]}]}}'
    )
    with pytest.raises(CollectionError, match="malformed sample pairs"):
        decode_matrix(broken)
    with pytest.raises(CollectionError, match="not a range-query result"):
        decode_matrix(b"<html>")
    vector = b'{"status":"success","data":{"resultType":"vector","result":[]}}'
    with pytest.raises(CollectionError, match="expected a matrix"):
        decode_matrix(vector)
