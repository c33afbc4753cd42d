"""A simulated cluster plus an annex settings file naming it: what the pipeline tests run on."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from simulator.kubernetes import SimulatedCluster
from simulator.world import build_world


@dataclass(frozen=True)
class Setup:
    tmp: Path
    config_path: Path
    warehouse_path: Path


@contextmanager
def simulated_setup(tmp_path: Path, *, cluster: str, nodes: int, seed: int) -> Iterator[Setup]:
    """Serve a ``nodes``-node world and write ``annex.toml`` with it as the only cluster."""
    with SimulatedCluster(build_world(nodes=nodes, seed=seed)) as sim:
        kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
        warehouse_path = tmp_path / "annex.duckdb"
        config = tmp_path / "annex.toml"
        config.write_text(
            f'[warehouse]\npath = "{warehouse_path}"\n\n'
            f'[[clusters]]\nname = "{cluster}"\nkubeconfig = "{kubeconfig}"\n',
            encoding="utf-8",
        )
        yield Setup(tmp=tmp_path, config_path=config, warehouse_path=warehouse_path)
