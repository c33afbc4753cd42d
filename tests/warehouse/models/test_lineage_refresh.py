"""The incremental lineage refresh: after every load it leaves the marts exactly as a full
rebuild would (random graphs with diamonds, cycles, shared versions, runs that gain inputs in
later events, renamed models and datasets whose kind changes), and it recomputes only the
checkpoints a load can have changed."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.helpers.lineage_warehouse import (
    T0,
    dataset,
    dataset_event,
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

MARTS = {
    "model_inputs": "SELECT * FROM marts.lineage_model_inputs ORDER BY ALL",
    "models": "SELECT * EXCLUDE (refreshed_at) FROM marts.lineage_models ORDER BY ALL",
    "cycles": "SELECT * EXCLUDE (refreshed_at) FROM marts.lineage_cycles ORDER BY ALL",
}


def _marts(wh: Warehouse) -> dict[str, list[tuple]]:
    return {name: query(wh, sql) for name, sql in MARTS.items()}


def _refresh(wh: Warehouse, *, full: bool = False) -> dict[str, int]:
    with wh.writer() as con:
        return refresh_lineage(con, full=full)


def _checkpoint(name: str, version: str, kind: str = "MODEL") -> dict[str, Any]:
    return dataset("s3://ck", name, version, datasetType=model_facet() | {"datasetType": kind})


def _random_events(seed: int) -> list[dict[str, Any]]:
    """A random lineage history: sources, intermediate datasets and checkpoints written by
    runs over earlier versions, plus the events that change a graph after the fact."""
    rng = random.Random(seed)
    names = ["alpha", "beta", "gamma"]
    pool = [dataset("s3://d", f"src{k}", "1") for k in range(10)]
    runs: list[tuple[str, str]] = []  # (run id, job)
    events: list[dict[str, Any]] = []
    clock = iter(range(10_000))

    def when() -> Any:
        return T0 + minutes(next(clock))

    for number in range(rng.randint(12, 24)):
        run, job = run_id(f"{seed}/{number}"), f"job{number}"
        inputs = rng.sample(pool, k=rng.randint(1, min(3, len(pool))))
        if rng.random() < 0.5:
            output = _checkpoint(f"m{number % 5}", f"v{number}")
            facets = {"annex_trainingRun": training_facet(rng.choice(names))}
        elif rng.random() < 0.15:  # a version written again: a second producer, maybe a cycle
            output = rng.choice([item for item in pool if item not in inputs])
            facets = {}
        else:
            output = dataset("s3://d", f"mid{number}", "1")
            facets = {}
        events.append(run_event(run, "START", when(), job=job, inputs=inputs, run_facets=facets))
        events.append(
            run_event(run, "COMPLETE", when(), job=job, outputs=[output], run_facets=facets)
        )
        runs.append((run, job))
        pool.append(output)
        change = rng.random()
        if change < 0.2:  # an earlier run gains an input
            old, old_job = rng.choice(runs)
            events.append(run_event(old, "RUNNING", when(), job=old_job, inputs=[rng.choice(pool)]))
        elif change < 0.3:  # an earlier run is renamed, or restaged
            old, old_job = rng.choice(runs)
            facet = training_facet(rng.choice(names), rng.choice(["PRETRAINING", "FINE_TUNING"]))
            events.append(
                run_event(
                    old, "RUNNING", when(), job=old_job, run_facets={"annex_trainingRun": facet}
                )
            )
        elif change < 0.4:  # a dataset turns out to be a model, or a checkpoint not to be one
            item = rng.choice(pool)
            kind = "DATASET" if item["namespace"] == "s3://ck" else "MODEL"
            events.append(
                dataset_event(
                    dataset(
                        item["namespace"],
                        item["name"],
                        item["facets"]["version"]["datasetVersion"],
                        datasetType=model_facet() | {"datasetType": kind},
                    ),
                    when(),
                )
            )
    return events


def _loads(events: list[dict[str, Any]], rng: random.Random) -> list[list[dict[str, Any]]]:
    """Cut the history into 2 to 5 loads, some events arriving a load late."""
    count = rng.randint(2, 5)
    loads: list[list[dict[str, Any]]] = [[] for _ in range(count)]
    for index, event in enumerate(events):
        at = min(count - 1, index * count // len(events) + (rng.random() < 0.2))
        loads[at].append(event)
    return [batch for batch in loads if batch]


@pytest.mark.parametrize("seed", range(12))
def test_incremental_refresh_equals_a_full_rebuild_after_every_load(wh, seed):
    events = _random_events(seed)
    recomputed = 0
    for batch in _loads(events, random.Random(seed)):
        load(wh, batch, refresh=False)
        counts = _refresh(wh)
        incremental = _marts(wh)
        _refresh(wh, full=True)
        assert incremental == _marts(wh), f"seed {seed}: the incremental refresh diverged"
        recomputed += counts["models_recomputed"]
    # the graphs are not trivial: checkpoints with upstream, and some recomputed incrementally
    assert query(wh, "SELECT count(*) FROM marts.lineage_model_inputs")[0][0] > 0
    modes = query(wh, "SELECT mode FROM audit.lineage_refreshes ORDER BY refreshed_at")
    assert modes[0] == ("full",) and ("incremental",) in modes


def test_only_the_checkpoints_a_load_can_change_are_recomputed(wh):
    def lineage(tag: str, start: int) -> list[dict[str, Any]]:
        src, mid = dataset("s3://d", f"{tag}/src", "1"), dataset("s3://d", f"{tag}/mid", "1")
        ckpt = _checkpoint(f"{tag}/ckpt", "v1")
        train = {"annex_trainingRun": training_facet(tag)}
        return [
            run_event(
                run_id(f"{tag}/prep"), "COMPLETE", T0 + minutes(start), inputs=[src], outputs=[mid]
            ),
            run_event(
                run_id(f"{tag}/train"),
                "COMPLETE",
                T0 + minutes(start + 1),
                inputs=[mid],
                outputs=[ckpt],
                run_facets=train,
            ),
        ]

    load(wh, lineage("a", 0) + lineage("b", 10), refresh=False)
    first = _refresh(wh)
    assert (first["full"], first["models"], first["models_recomputed"]) == (1, 2, 2)

    load(wh, lineage("c", 20), refresh=False)  # a new, unrelated model: only it is computed
    second = _refresh(wh)
    assert (second["full"], second["models"], second["models_recomputed"]) == (0, 3, 1)
    assert second["cycles_searched"] == 0  # c's runs are on no cycle: the search is skipped

    # b's data preparation gains an input: b's checkpoint is recomputed, a's and c's are kept
    extra = dataset("s3://d", "b/extra", "1")
    load(
        wh,
        [run_event(run_id("b/prep"), "RUNNING", T0 + minutes(30), inputs=[extra])],
        refresh=False,
    )
    third = _refresh(wh)
    assert (third["collections"], third["models_recomputed"]) == (1, 1)
    b_ckpt = dv("s3://ck", "b/ckpt", "v1")
    assert query(
        wh,
        "SELECT name, depth, is_leaf FROM marts.lineage_model_inputs "
        "WHERE model_version_id = ? ORDER BY name",
        [b_ckpt],
    ) == [("b/extra", 2, True), ("b/mid", 1, False), ("b/src", 2, True)]

    nothing = _refresh(wh)  # no collection since: nothing recomputed, nothing lost
    assert (nothing["collections"], nothing["models_recomputed"], nothing["model_inputs"]) == (
        0,
        0,
        third["model_inputs"],
    )
    assert query(
        wh,
        "SELECT mode, collections, models_recomputed FROM audit.lineage_refreshes "
        "ORDER BY refreshed_at",
    ) == [("full", 1, 2), ("incremental", 1, 1), ("incremental", 1, 1), ("incremental", 0, 0)]
    assert query(wh, "SELECT count(*) FROM audit.lineage_refreshed_collections") == [(3,)]

    # a producer reuses b's source version as the output of a run reading b's checkpoint: a
    # cycle, found by the search that this run's edges trigger; b is on it, a and c are not
    b_src = dataset("s3://d", "b/src", "1")
    loop = run_event(
        run_id("b/loop"),
        "COMPLETE",
        T0 + minutes(40),
        inputs=[_checkpoint("b/ckpt", "v1")],
        outputs=[b_src],
    )
    load(wh, [loop], refresh=False)
    cyclic = _refresh(wh)
    assert (cyclic["cycles_searched"], cyclic["cycle_versions"]) == (1, 3)
    assert query(wh, "SELECT name, on_cycle FROM marts.lineage_models ORDER BY name") == [
        ("a/ckpt", False),
        ("b/ckpt", True),
        ("c/ckpt", False),
    ]
