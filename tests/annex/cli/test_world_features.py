"""`annex simulate --features` and `annex demo --features`: which parts of the simulated world
are built, the default (all three where the world has room for their pools), the error on too
small a world, and the demo's world key, which must name the features so that a rerun rebuilds
the same world and a change of features builds a new one."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from annex.cli import build_parser
from annex.cli.demo import _demo_world_clock
from annex.cli.world_features import NAMES, chosen_features, feature_list
from annex.errors import ConfigError
from annex.settings import Settings, WarehouseSettings
from simulator.world.features import FEATURES, extra_nodes

ALL = frozenset(NAMES)


def test_the_names_are_the_simulators() -> None:
    assert NAMES == FEATURES


@pytest.mark.parametrize(
    ("text", "chosen"),
    [
        ("dra,sharing,kueue", ALL),
        ("all", ALL),
        ("kueue", frozenset({"kueue"})),
        (" DRA , sharing ", frozenset({"dra", "sharing"})),
        ("none", frozenset()),
        ("", frozenset()),
    ],
)
def test_feature_lists(text: str, chosen: frozenset[str]) -> None:
    assert feature_list(text) == chosen


def test_an_unknown_feature_names_the_choices() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="unknown world features mig: choose"):
        feature_list("dra,mig")


@pytest.mark.parametrize("command", ["simulate", "demo"])
def test_both_commands_take_features(command: str) -> None:
    args = build_parser().parse_args([command, "--features", "dra,kueue"])
    assert args.features == frozenset({"dra", "kueue"})
    assert build_parser().parse_args([command]).features is None


def test_by_default_all_features_where_the_world_has_room_for_them() -> None:
    smallest = extra_nodes(1, ALL) + 1  # small worlds: the pools take their minimum sizes
    assert chosen_features(40, None) == ALL
    assert chosen_features(smallest, None) == ALL
    assert chosen_features(smallest - 1, None) == frozenset()  # a 3-node demo stays 3 nodes
    assert chosen_features(3, None) == frozenset()
    assert chosen_features(3, frozenset()) == frozenset()


def test_features_asked_for_on_too_small_a_world_say_how_many_nodes_they_need() -> None:
    with pytest.raises(ConfigError) as error:
        chosen_features(5, frozenset({"dra", "kueue"}))
    needed = extra_nodes(5, frozenset({"dra", "kueue"}))
    assert f"need {needed} nodes of their own and --nodes is 5" in error.value.message
    assert f"--nodes {needed + 1} or more" in (error.value.hint or "")


def test_the_demo_world_key_names_the_features(tmp_path: Path) -> None:
    settings = Settings(warehouse=WarehouseSettings(path=tmp_path / "absent.duckdb"))
    args = argparse.Namespace(out=tmp_path, seed=0, nodes=40)
    _demo_world_clock(settings, args, ALL)
    recorded = json.loads((tmp_path / "world.json").read_text())
    assert recorded["features"] == ["dra", "kueue", "sharing"]
    assert {recorded["seed"], recorded["nodes"]} == {0, 40}
    # a demo without features is another world: recorded anew
    _demo_world_clock(settings, args, frozenset())
    assert json.loads((tmp_path / "world.json").read_text())["features"] == []


def test_simulate_builds_and_serves_the_chosen_features(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`annex simulate --nodes 20 --features dra,kueue`: the world is built with those parts
    and the printed hints show how to list their objects."""
    import time

    import simulator.world
    from annex.cli.simulate import cmd_simulate

    built: list[object] = []
    real = simulator.world.build_world

    def build_world(**kwargs: object) -> object:
        built.append(kwargs["features"])
        return real(**kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(simulator.world, "build_world", build_world)

    def stop(_seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(time, "sleep", stop)
    args = build_parser().parse_args(
        [
            "simulate",
            "--nodes",
            "20",
            "--features",
            "dra,kueue",
            "--kubeconfig",
            str(tmp_path / "k"),
        ]
    )
    assert cmd_simulate(args, Settings()) == 0
    assert built == [frozenset({"dra", "kueue"})]
    out = capsys.readouterr().out
    assert "features dra, kueue" in out
    assert "get resourceclaims -A" in out and "get workloads.kueue.x-k8s.io -A" in out
