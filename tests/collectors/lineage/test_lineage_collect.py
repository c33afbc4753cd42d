"""``collect_lineage``: the intake's spool read column-wise, JSON-lines files validated line by
line, one row per event_id, rejections with their locator, batches of at most BATCH_ROWS, and
the files to archive after the commit."""

from __future__ import annotations

import gzip
import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from annex.settings import LineageSettings, Settings
from collectors.lineage import collect as collect_module
from collectors.lineage.collect import CollectStats, collect_lineage, count_waiting
from collectors.lineage.events import event_id
from collectors.lineage.intake import LineageIntake
from collectors.lineage.schema import LINEAGE_EVENTS, REJECTED, TABLES
from simulator.lineage.producer import build_events, to_json
from simulator.world import build_world
from tests.helpers.lineage_spool import to_legacy_jsonl


@pytest.fixture(scope="module")
def events() -> list[dict]:
    return [json.loads(to_json(e)) for e in build_events(build_world(8, seed=5))]


@pytest.fixture(scope="module")
def now(events: list[dict]) -> datetime:
    newest = max(datetime.fromisoformat(e["eventTime"].replace("Z", "+00:00")) for e in events)
    return newest + timedelta(hours=1)


def make_settings(tmp_path: Path, *watch: Path, **limits: int) -> Settings:
    return Settings(
        lineage=LineageSettings(
            spool_dir=tmp_path / "lineage", watch_dirs=watch, intake_workers=0, **limits
        )
    )


def collect(settings: Settings, now: datetime, **kwargs) -> tuple[pa.Table, pa.Table, CollectStats]:
    stats = CollectStats()
    tables: dict[str, list[pa.RecordBatch]] = {name: [] for name in TABLES}
    for name, batch in collect_lineage(settings, stats=stats, now=now, **kwargs):
        assert batch.num_rows <= collect_module.BATCH_ROWS
        assert batch.schema == TABLES[name]
        tables[name].append(batch)
    events = pa.Table.from_batches(tables["lineage_events"], schema=LINEAGE_EVENTS)
    rejected = pa.Table.from_batches(tables["rejected"], schema=REJECTED)
    return events, rejected, stats


def post(intake: LineageIntake, body: bytes, at: datetime, *, batch: bool = True) -> int:
    call = intake.batch if batch else intake.single
    return call(body, content_encoding=None, received_at=at).status


def test_spool_files_become_rows_without_revalidation(
    tmp_path: Path, events: list[dict], now: datetime
) -> None:
    settings = make_settings(tmp_path)
    intake = LineageIntake(settings.lineage)
    bad = dict(events[2], eventType="PAUSED")
    assert post(intake, json.dumps([events[0], events[1], bad]).encode(), now) == 200
    retry = now + timedelta(seconds=1)
    assert post(intake, json.dumps([events[1], events[3]]).encode(), retry) == 200
    assert post(intake, b"not json", retry + timedelta(seconds=1), batch=False) == 400
    assert count_waiting(settings.lineage) == 3

    table, rejected, stats = collect(settings, now)
    assert table.column("event_id").to_pylist() == [
        event_id(events[0]),
        event_id(events[1]),
        event_id(events[3]),
    ]  # events[1] was sent twice: one row
    assert stats.events == 3 and stats.repeated == 1 and stats.files_read == 3
    row = table.slice(0, 1).to_pylist()[0]
    first = events[0]
    assert json.loads(row["payload"]) == first
    assert row["event_kind"] == "RunEvent" and row["event_type"] == first["eventType"]
    assert row["run_id"] == first["run"]["runId"]
    assert row["job_name"] == first["job"]["name"]
    assert row["producer"] == first["producer"] and row["schema_url"] == first["schemaURL"]
    assert row["received_at"] == now.replace(tzinfo=None)
    sent = datetime.fromisoformat(first["eventTime"].replace("Z", "+00:00"))
    assert row["event_time"] == sent.astimezone(UTC).replace(tzinfo=None)
    assert row["event_time_offset_minutes"] == 0 and row["findings"] == []
    archive = settings.lineage.spool_dir / "archive" / f"{now:%Y-%m-%d}"
    assert row["source_locator"].startswith(str(archive)) and row["source_locator"].endswith("#1")

    assert sorted(rejected.column("reason_code").to_pylist()) == [
        "invalid_json",
        "unknown_event_type",
    ]
    unknown = next(r for r in rejected.to_pylist() if r["reason_code"] == "unknown_event_type")
    assert json.loads(unknown["raw"]) == bad and unknown["locator"].endswith("#3")
    assert "event 2 of the request" in unknown["message"]
    assert stats.rejected == 2 and stats.reasons["invalid_json"] == 1
    # every spool file is handed back for archiving; nothing was moved yet
    assert len(stats.consumed) == 3 and count_waiting(settings.lineage) == 3
    assert all(dest.parent == archive for _, dest in stats.consumed)


def test_offsets_are_converted_to_utc_and_kept(
    tmp_path: Path, events: list[dict], now: datetime
) -> None:
    settings = make_settings(tmp_path)
    event = dict(events[0], eventTime="2026-06-01T10:30:00.250+02:00")
    assert (
        post(LineageIntake(settings.lineage), json.dumps(event).encode(), now, batch=False) == 200
    )
    table, _, _ = collect(settings, now)
    row = table.to_pylist()[0]
    assert row["event_time"] == datetime(2026, 6, 1, 8, 30, 0, 250000)
    assert row["event_time_offset_minutes"] == 120


def test_a_damaged_legacy_spool_file_loses_only_its_bad_lines(
    tmp_path: Path, events: list[dict], now: datetime
) -> None:
    settings = make_settings(tmp_path)
    assert post(LineageIntake(settings.lineage), json.dumps(events[:3]).encode(), now) == 200
    [arrow] = (settings.lineage.spool_dir / "incoming").glob("*.arrow")
    path = to_legacy_jsonl(arrow)
    lines = path.read_bytes().splitlines()
    path.write_bytes(b"\n".join([lines[0], b'{"kind": "event", "event_id": ', lines[1], b"[]"]))
    table, rejected, stats = collect(settings, now)
    assert table.column("event_id").to_pylist() == [event_id(events[0]), event_id(events[1])]
    assert table.column("source_locator").to_pylist()[1].endswith("#3")
    assert rejected.column("reason_code").to_pylist() == [
        "malformed_spool_line",
        "malformed_spool_line",
    ]
    assert rejected.column("locator").to_pylist()[0].endswith("#2")
    assert stats.consumed and stats.consumed[0][0] == path


def test_legacy_json_lines_spool_files_load_as_arrow_ones(
    tmp_path: Path, events: list[dict], now: datetime
) -> None:
    # spool files of an earlier annex (JSON lines) wait beside today's (Arrow IPC): both load,
    # giving the same rows, rejections included
    body = json.dumps([*events[:4], {"eventTime": "bad"}, events[1]]).encode()
    arrow_settings = make_settings(tmp_path / "arrow")
    assert post(LineageIntake(arrow_settings.lineage), body, now) == 200
    today, today_rejected, _ = collect(arrow_settings, now)
    legacy_settings = make_settings(tmp_path / "legacy")
    assert post(LineageIntake(legacy_settings.lineage), body, now) == 200
    [arrow] = (legacy_settings.lineage.spool_dir / "incoming").glob("*.arrow")
    to_legacy_jsonl(arrow)
    assert count_waiting(legacy_settings.lineage) == 1
    before, before_rejected, stats = collect(legacy_settings, now)
    assert before.drop_columns(["source_locator"]).equals(today.drop_columns(["source_locator"]))
    assert before.num_rows == 4 and stats.repeated == 0
    assert before_rejected.select(["reason_code", "message", "raw"]).equals(
        today_rejected.select(["reason_code", "message", "raw"])
    )
    assert before.column("source_locator")[0].as_py().endswith(".jsonl#1")


def test_a_damaged_arrow_spool_file_is_rejected_whole_and_archived(
    tmp_path: Path, events: list[dict], now: datetime
) -> None:
    settings = make_settings(tmp_path)
    intake = LineageIntake(settings.lineage)
    assert post(intake, json.dumps(events[:3]).encode(), now) == 200
    assert post(intake, json.dumps(events[3:5]).encode(), now + timedelta(seconds=1)) == 200
    first, second = sorted((settings.lineage.spool_dir / "incoming").glob("*.arrow"))
    first.write_bytes(first.read_bytes()[:-100])  # truncated: a disk fault
    table, rejected, stats = collect(settings, now)
    assert table.column("event_id").to_pylist() == [event_id(e) for e in events[3:5]]
    [row] = rejected.to_pylist()
    assert row["reason_code"] == "malformed_spool_file" and row["raw"]
    assert [source for source, _ in stats.consumed] == [first, second]


def _rewrite_arrow(path: Path, table: pa.Table) -> None:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    path.write_bytes(sink.getvalue().to_pybytes())


def test_spool_files_with_the_graph_columns_of_an_earlier_intake_load_the_same(
    tmp_path: Path, events: list[dict], now: datetime
) -> None:
    # an earlier intake took the datasets and facets out of each event into two more columns
    # (Arrow files and JSON lines); the warehouse now parses the payload: they are ignored
    settings = make_settings(tmp_path)
    assert post(LineageIntake(settings.lineage), json.dumps(events[:4]).encode(), now) == 200
    [arrow] = (settings.lineage.spool_dir / "incoming").glob("*.arrow")
    data = arrow.read_bytes()
    today, _, _ = collect(settings, now)
    table = pa.ipc.open_file(pa.BufferReader(data)).read_all()
    graph = pa.list_(pa.struct([("item", pa.int32()), ("name", pa.string())]))
    extra = pa.array([[{"item": 0, "name": "x"}]] * table.num_rows, graph)
    table = table.append_column("datasets", extra).append_column("facets", extra)
    _rewrite_arrow(arrow, table)
    earlier, rejected, _ = collect(settings, now)
    assert rejected.num_rows == 0
    assert earlier.drop_columns(["source_locator"]).equals(today.drop_columns(["source_locator"]))
    path = to_legacy_jsonl(arrow)
    lines = [json.loads(line) for line in path.read_bytes().splitlines()]
    assert all("datasets" in line for line in lines)
    legacy, rejected, _ = collect(settings, now)
    assert rejected.num_rows == 0
    assert legacy.column("payload").equals(today.column("payload"))


def test_spool_files_of_other_arrow_types_are_cast_or_rejected_whole(
    tmp_path: Path, events: list[dict], now: datetime
) -> None:
    # a writer with other types: castable ones (64-bit index, large strings) load the same;
    # a column that cannot be the spool's type (event_time as free text) rejects the file
    settings = make_settings(tmp_path)
    intake = LineageIntake(settings.lineage)
    assert post(intake, json.dumps(events[:4]).encode(), now) == 200
    [arrow] = (settings.lineage.spool_dir / "incoming").glob("*.arrow")
    data = arrow.read_bytes()
    today, _, _ = collect(settings, now)
    table = pa.ipc.open_file(pa.BufferReader(data)).read_all()

    def wider_type(field: pa.Field) -> pa.DataType:
        if field.name == "index":
            return pa.int64()
        return pa.large_string() if field.type == pa.string() else field.type

    wider = pa.schema(pa.field(f.name, wider_type(f), f.nullable) for f in table.schema)
    _rewrite_arrow(arrow, table.cast(wider))
    wide, rejected, _ = collect(settings, now)
    assert rejected.num_rows == 0
    assert wide.drop_columns(["source_locator"]).equals(today.drop_columns(["source_locator"]))

    text_times = table.set_column(
        table.schema.get_field_index("event_time"),
        "event_time",
        pa.array(["last tuesday"] * table.num_rows, pa.string()),
    )
    _rewrite_arrow(arrow, text_times)
    table, rejected, stats = collect(settings, now)
    assert table.num_rows == 0
    [row] = rejected.to_pylist()
    assert row["reason_code"] == "malformed_spool_file" and row["raw"]
    assert [source for source, _ in stats.consumed] == [arrow]


def test_named_files_are_validated_line_by_line_and_never_moved(
    tmp_path: Path, events: list[dict], now: datetime
) -> None:
    settings = make_settings(tmp_path, max_body_bytes=64 * 1024)
    plain = tmp_path / "events.jsonl"
    lines = [
        json.dumps(events[0]),
        "",
        json.dumps(dict(events[1], eventTime="2026-11-02T08:00:00")),  # no timezone
        json.dumps([events[2], events[3]]),  # a batch on one line
        "{broken",
        json.dumps(events[0]),  # again: one row
        json.dumps({"padding": "x" * (70 * 1024)}),  # longer than max_body_bytes
        json.dumps(events[4]),
    ]
    plain.write_text("\n".join(lines) + "\n")
    packed = tmp_path / "more.jsonl.gz"
    packed.write_bytes(gzip.compress((json.dumps(events[5]) + "\n").encode()))

    table, rejected, stats = collect(settings, now, files=[plain, packed])
    ids = table.column("event_id").to_pylist()
    assert ids == [event_id(events[i]) for i in (0, 2, 3, 4, 5)]
    locators = table.column("source_locator").to_pylist()
    assert locators[:3] == [f"{plain}#1", f"{plain}#4[0]", f"{plain}#4[1]"]
    assert locators[4] == f"{packed}#1"
    assert table.column("received_at").to_pylist()[0] == now.replace(tzinfo=None)
    reasons = dict(
        zip(
            rejected.column("locator").to_pylist(),
            rejected.column("reason_code").to_pylist(),
            strict=True,
        )
    )
    assert reasons == {
        f"{plain}#3": "missing_timezone",
        f"{plain}#5": "invalid_json",
        f"{plain}#7": "too_large",
    }
    assert stats.repeated == 1 and stats.consumed == []  # named files stay where they are
    assert plain.exists() and packed.exists()


def test_watched_folders_wait_for_files_to_settle(
    tmp_path: Path, events: list[dict], now: datetime
) -> None:
    watched = tmp_path / "watched"
    (watched / "sub").mkdir(parents=True)
    settled = watched / "sub" / "a.jsonl"
    settled.write_text(json.dumps(events[0]) + "\n")
    old = (now - timedelta(minutes=5)).timestamp()
    os.utime(settled, (old, old))
    fresh = watched / "b.jsonl"
    fresh.write_text(json.dumps(events[1]) + "\n")
    recent = (now - timedelta(seconds=1)).timestamp()
    os.utime(fresh, (recent, recent))
    (watched / "ignored.txt").write_text("not an events file")
    (watched / "link.jsonl").symlink_to(settled)
    settings = make_settings(tmp_path, watched)
    assert count_waiting(settings.lineage) == 3

    table, rejected, stats = collect(settings, now)
    assert table.column("event_id").to_pylist() == [event_id(events[0])]
    assert rejected.column("reason_code").to_pylist() == ["unreadable"]  # the link
    assert "symbolic link" in rejected.column("message").to_pylist()[0]
    moved = dict(stats.consumed)
    assert set(moved) == {settled, watched / "link.jsonl"}  # the fresh file waits
    assert moved[settled].name.endswith("-a.jsonl")


def test_batches_hold_at_most_batch_rows(
    tmp_path: Path, events: list[dict], now: datetime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(collect_module, "BATCH_ROWS", 4)
    settings = make_settings(tmp_path)
    intake = LineageIntake(settings.lineage)
    for i in range(0, 15, 3):
        chunk = events[i : i + 3]
        assert post(intake, json.dumps(chunk).encode(), now + timedelta(seconds=i)) == 200
    extra = tmp_path / "extra.jsonl"
    extra.write_text("".join(json.dumps(e) + "\n" for e in events[15:24]))
    stats = CollectStats()
    sizes = []
    for name, batch in collect_lineage(settings, stats=stats, now=now, files=[extra]):
        assert batch.schema == TABLES[name]
        if name == "lineage_events":
            sizes.append(batch.num_rows)
    assert max(sizes) <= 4 and sum(sizes) == 24 == stats.events


def test_max_files_leaves_the_rest_waiting(
    tmp_path: Path, events: list[dict], now: datetime
) -> None:
    settings = make_settings(tmp_path)
    intake = LineageIntake(settings.lineage)
    for i in range(3):
        post(intake, json.dumps(events[i]).encode(), now + timedelta(seconds=i), batch=False)
    table, _, stats = collect(settings, now, max_files=2)
    assert table.num_rows == 2 and len(stats.consumed) == 2
