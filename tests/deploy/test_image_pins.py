"""The deployment installs what the lock decided: every package the image adds beyond uv.lock
is pinned, the Dagster integration libraries at the lock's Dagster release, and the
attestation agent's image has its sources named."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def _locked() -> dict[str, str]:
    lock = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
    return {package["name"]: package["version"] for package in lock["package"]}


def _requirements() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (DEPLOY / "requirements-k8s.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep, f"deploy/requirements-k8s.txt: {line!r} is not pinned with =="
            pins[name.strip().lower()] = version.strip()
    return pins


def test_dagster_k8s_and_postgres_are_pinned_at_the_locked_dagster_release() -> None:
    locked = _locked()
    pins = _requirements()
    library = locked["dagster-duckdb"]  # the integration libraries' release of this dagster
    # dagster 1.X.Y ships its libraries as 0.(X+16).Y
    _major, minor, patch = locked["dagster"].split(".")
    assert library == f"0.{int(minor) + 16}.{patch}", (locked["dagster"], library)
    assert pins["dagster-k8s"] == library
    assert pins["dagster-postgres"] == library


def test_the_image_changes_no_locked_package_but_the_one_dagster_k8s_needs() -> None:
    locked = _locked()
    differing = {
        name: (locked[name], version)
        for name, version in _requirements().items()
        if name in locked and locked[name] != version
    }
    assert set(differing) <= {"kubernetes"}, differing


def test_the_dockerfile_installs_the_pinned_file_and_the_chart_matches_dagster() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    assert "uv sync --locked" in dockerfile
    assert "-r deploy/requirements-k8s.txt" in dockerfile
    assert not re.search(r"pip install[^\n]*dagster-(k8s|postgres)(?!\S*==)", dockerfile)
    values = (DEPLOY / "helm" / "values.yaml").read_text(encoding="utf-8")
    chart = re.search(r"dagster/dagster --version (\S+)", values)
    assert chart and chart.group(1) == _locked()["dagster"]


def test_the_attestation_agent_image_has_its_sources_named() -> None:
    daemonset = (DEPLOY / "attestation-daemonset.yaml").read_text(encoding="utf-8")
    images = re.findall(r"image:\s*(\S+)", daemonset)
    agent = [image for image in images if "attestation-agent" in image]
    assert agent, images
    contract = (DEPLOY / "ATTESTATION_AGENT.md").read_text(encoding="utf-8")
    section = contract.split("## Where the agent's image comes from", 1)
    assert len(section) == 2, "ATTESTATION_AGENT.md names no source of the agent's image"
    text = section[1].split("\n## ", 1)[0]
    assert agent[0].rsplit(":", 1)[0] in contract
    assert "github.com/NVIDIA/nvtrust" in text
    assert (ROOT / "simulator" / "attestation" / "agent.py").exists()
    assert "simulator/attestation/agent.py" in text
