"""The lineage graph: model closures end on diamonds and cycles, list each version once, cycles
are reported (never looped on), and a 5,000-version closure is computed set-based."""

from __future__ import annotations

import time

from tests.helpers.lineage_warehouse import (
    T0,
    dataset,
    dv,
    load,
    minutes,
    model_facet,
    query,
    run_event,
    run_id,
    training_facet,
)
from warehouse import Warehouse
from warehouse.models.lineage import refresh_lineage


def _ckpt(name: str = "m/ckpt") -> dict:
    return dataset("s3://ck", name, None, datasetType=model_facet())


def _closure(wh: Warehouse, model_version: str) -> dict[str, tuple]:
    rows = query(
        wh,
        "SELECT name, depth, is_leaf FROM marts.lineage_model_inputs WHERE model_version_id = ?",
        [model_version],
    )
    names = [name for name, _, _ in rows]
    assert len(names) == len(set(names)), "a version listed twice"
    return {name: (depth, leaf) for name, depth, leaf in rows}


def _macro(wh: Warehouse, version: str) -> set[str]:
    rows = query(wh, "SELECT name FROM marts.lineage_upstream(?)", [version])
    assert len(rows) == len(set(rows))
    return {name for (name,) in rows}


def test_diamond_lists_each_version_once(wh):
    src = dataset("s3://d", "src", "1")
    a, b = dataset("s3://d", "a", "1"), dataset("s3://d", "b", "1")
    load(
        wh,
        [
            run_event(run_id("left"), "COMPLETE", T0, inputs=[src], outputs=[a]),
            run_event(run_id("right"), "COMPLETE", T0, inputs=[src], outputs=[b]),
            run_event(
                run_id("top"),
                "COMPLETE",
                T0 + minutes(1),
                inputs=[a, b],
                outputs=[_ckpt()],
                run_facets={"annex_trainingRun": training_facet("m")},
            ),
        ],
    )
    ckpt = dv("s3://ck", "m/ckpt", run_id("top"))
    assert _closure(wh, ckpt) == {"a": (1, False), "b": (1, False), "src": (2, True)}
    assert _macro(wh, ckpt) == {"a", "b", "src"}
    assert query(
        wh,
        "SELECT model_name, upstream_versions, leaf_versions, on_cycle FROM marts.lineage_models",
    ) == [("m", 3, 1, False)]
    assert query(wh, "SELECT count(*) FROM marts.lineage_cycles") == [(0,)]


def test_cycle_is_reported_and_the_closure_ends(wh):
    # a producer reusing version ids: a@1 -> b@1 -> a@1, and b@1 -> checkpoint
    a, b = dataset("s3://c", "a", "1"), dataset("s3://c", "b", "1")
    ext = dataset("s3://c", "ext", "1")
    load(
        wh,
        [
            run_event(run_id("ab"), "COMPLETE", T0, inputs=[a, ext], outputs=[b]),
            run_event(run_id("ba"), "COMPLETE", T0, inputs=[b], outputs=[a]),
            run_event(run_id("ck"), "COMPLETE", T0 + minutes(1), inputs=[b], outputs=[_ckpt()]),
        ],
    )
    ckpt = dv("s3://ck", "m/ckpt", run_id("ck"))
    assert _closure(wh, ckpt) == {"b": (1, False), "a": (2, False), "ext": (2, True)}
    assert _macro(wh, ckpt) == {"a", "b", "ext"}
    cycles = query(
        wh,
        "SELECT cycle_id, name, cycle_versions, example_run_id FROM "
        "marts.lineage_cycles ORDER BY name",
    )
    assert [(name, size) for _, name, size, _ in cycles] == [("a", 2), ("b", 2)]
    assert len({cycle for cycle, *_ in cycles}) == 1
    assert {run for *_, run in cycles} == {run_id("ab"), run_id("ba")}
    assert query(wh, "SELECT on_cycle FROM marts.lineage_models") == [(True,)]


def test_a_loop_across_two_events_of_one_run_is_a_cycle_of_one(wh):
    # START reads x@1, COMPLETE writes x@1: neither event alone is rejected
    x = dataset("s3://c", "x", "1")
    load(
        wh,
        [
            run_event(run_id("loop"), "START", T0, inputs=[x]),
            run_event(run_id("loop"), "COMPLETE", T0 + minutes(1), outputs=[x]),
            run_event(run_id("ck"), "COMPLETE", T0 + minutes(2), inputs=[x], outputs=[_ckpt()]),
        ],
    )
    assert query(wh, "SELECT name, cycle_versions FROM marts.lineage_cycles") == [("x", 1)]
    ckpt = dv("s3://ck", "m/ckpt", run_id("ck"))
    assert _closure(wh, ckpt) == {"x": (1, False)}


LAYERS, WIDTH = 50, 100  # 5,000 dataset versions


def _layered_events() -> list[dict]:
    """Layer 0: 100 sources; each version of layer k+1 is written by its own run reading three
    versions of layer k (every version is read); the checkpoint reads all of layer 49."""

    def node(layer: int, j: int) -> dict:
        return dataset("s3://layers", f"l{layer:02d}/n{j:03d}", "1")

    events = []
    for layer in range(1, LAYERS):
        for j in range(WIDTH):
            reads = [node(layer - 1, (j + k) % WIDTH) for k in (0, 1, 7)]
            events.append(
                run_event(
                    run_id(f"l{layer}/{j}"),
                    "COMPLETE",
                    T0 + minutes(layer),
                    job=f"layer{layer}",
                    inputs=reads,
                    outputs=[node(layer, j)],
                )
            )
    events.append(
        run_event(
            run_id("ckpt"),
            "COMPLETE",
            T0 + minutes(LAYERS),
            job="train",
            inputs=[node(LAYERS - 1, j) for j in range(WIDTH)],
            outputs=[_ckpt("big/ckpt")],
            run_facets={"annex_trainingRun": training_facet("big")},
        )
    )
    return events


def test_closure_of_five_thousand_versions(wh):
    events = _layered_events()
    started = time.perf_counter()
    load(wh, events, refresh=False)
    loaded = time.perf_counter()
    with wh.writer() as con:
        counts = refresh_lineage(con)
    refreshed = time.perf_counter()
    print(
        f"\nmerge of {len(events)} events: {loaded - started:.2f} s; "
        f"refresh (closure of {LAYERS * WIDTH} versions, cycle search): "
        f"{refreshed - loaded:.2f} s, {counts}"
    )
    ckpt = dv("s3://ck", "big/ckpt", run_id("ckpt"))
    assert counts["models"] == 1
    assert counts["model_inputs"] == LAYERS * WIDTH
    closure = _closure(wh, ckpt)
    assert len(closure) == LAYERS * WIDTH
    assert closure["l49/n000"] == (1, False)
    assert closure["l00/n042"] == (LAYERS, True)
    assert {depth for depth, _ in closure.values()} == set(range(1, LAYERS + 1))
    assert sum(leaf for _, leaf in closure.values()) == WIDTH
    assert query(wh, "SELECT count(*) FROM marts.lineage_cycles") == [(0,)]
    started = time.perf_counter()
    assert len(_macro(wh, ckpt)) == LAYERS * WIDTH
    print(
        f"lineage_upstream macro on {LAYERS * WIDTH} versions: "
        f"{time.perf_counter() - started:.2f} s"
    )
