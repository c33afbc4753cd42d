"""The ``annex`` command as a user runs it: a subprocess, exit codes, what it prints."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.demo import clean_env

pytestmark = pytest.mark.e2e


def annex(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    base = clean_env()
    base["ANNEX_WAREHOUSE"] = str(cwd / "annex.duckdb")
    return subprocess.run(
        [sys.executable, "-m", "annex", *args],
        cwd=cwd,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _pages_as_png(pdf: Path, folder: Path) -> list[Path]:
    """Every page of ``pdf`` as a PNG, the way poppler's pdftoppm rasterises it."""
    folder.mkdir(exist_ok=True)
    prefix = folder / pdf.stem
    subprocess.run(["pdftoppm", "-r", "40", "-png", str(pdf), str(prefix)], check=True)
    return sorted(folder.glob(f"{pdf.stem}-*.png"))


def _not_blank(png: Path) -> bool:
    from PIL import Image

    with Image.open(png) as image:
        darkest, _ = image.convert("L").getextrema()
    return darkest < 128


def test_help_lists_every_command(tmp_path: Path) -> None:
    result = annex("--help", cwd=tmp_path)
    assert result.returncode == 0
    for command in ("simulate", "collect", "demo", "run", "sql", "warehouse"):
        assert command in result.stdout


def test_invalid_config_exits_2_without_traceback(tmp_path: Path) -> None:
    (tmp_path / "annex.toml").write_text("[kubernetes]\npage_size = 1\n")
    result = annex("warehouse", "status", cwd=tmp_path)
    assert result.returncode == 2
    assert "kubernetes.page_size" in result.stderr
    assert "Traceback" not in result.stderr


def test_unreachable_cluster_exits_3_with_a_hint(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:9"}}]
users: [{name: u, user: {token: not-a-real-token}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
current-context: ctx
"""
    )
    result = annex(
        "collect",
        "cluster",
        "--kubeconfig",
        str(kubeconfig),
        "--quiet",
        cwd=tmp_path,
        env={"ANNEX_KUBERNETES__MAX_RETRIES": "0"},
    )
    assert result.returncode == 3, result.stderr
    assert "127.0.0.1:9" in result.stderr
    assert "hint:" in result.stderr
    assert "not-a-real-token" not in result.stderr + result.stdout
    assert "Traceback" not in result.stderr


def test_missing_kubeconfig_context_is_a_clear_error(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\n")
    result = annex(
        "collect", "cluster", "--kubeconfig", str(kubeconfig), "--context", "nope", cwd=tmp_path
    )
    assert result.returncode in (2, 3), result.stderr
    assert "nope" in result.stderr
    assert "Traceback" not in result.stderr


def test_sql_before_any_collection_says_what_to_do(tmp_path: Path) -> None:
    result = annex("sql", "-c", "select 1", cwd=tmp_path)
    assert result.returncode == 5
    assert "hint:" in result.stderr


def test_demo_then_sql_agree_with_the_simulated_cluster(tmp_path: Path) -> None:
    nodes = 40
    demo = annex("demo", "--nodes", str(nodes), "--out", str(tmp_path / "demo"), cwd=tmp_path)
    assert demo.returncode == 0, demo.stderr
    assert "GPU" in demo.stdout
    # The collection ran as a Dagster run whose id the demo prints, with every check passing.
    run_line = re.search(r"dagster run ([0-9a-f-]{36}) \(cluster_inventory_job.*", demo.stdout)
    assert run_line, demo.stdout
    assert "succeeded, all 5 checks passed" in run_line.group(0)
    assert f"dagster run: {run_line.group(1)}" in demo.stdout
    assert "Traceback" not in demo.stderr
    # the pushed evidence went through the intake: lineage landed with its checks passing
    assert re.search(r"\(lineage_job\): succeeded, all 3 checks passed", demo.stdout), demo.stdout
    # every report rendered, every page of it a real page (pdftoppm, as a reader sees it)
    reports = [
        Path(line.split("report: ", 1)[1])
        for line in demo.stdout.splitlines()
        if line.startswith("report: ")
    ]
    assert len(reports) >= 2, demo.stdout
    for pdf in reports:
        pages = _pages_as_png(pdf, tmp_path / "pages")
        assert len(pages) >= 3, pdf  # title, contents, content
        assert all(_not_blank(page) for page in pages), pdf
    count = annex(
        "sql",
        "-c",
        # core.nodes holds a version per change (the demo's past cordons, failures, recoveries):
        # the nodes of the cluster now are the open versions
        "select count(*) as n from core.nodes where valid_to is null",
        "--format",
        "csv",
        cwd=tmp_path,
    )
    assert count.returncode == 0, count.stderr
    assert count.stdout.splitlines() == ['"n"', str(nodes)]
    bad = annex("sql", "-c", "select * from no_such_table", cwd=tmp_path)
    assert bad.returncode == 6
    assert "no_such_table" in bad.stderr
    as_json = annex("sql", "-c", "select 1 as one, 'x' as two", "--format", "json", cwd=tmp_path)
    assert as_json.returncode == 0
    assert '"one":1' in as_json.stdout.replace(" ", "")


ABSOLUTE_PATH = re.compile(r"(?<![\w:/.])/(?:[\w.-]+/)+[\w.-]*")
"""A POSIX path from the root (/home/x/models/a.yaml), not a URL's path (https://h/p)."""


def test_no_document_of_the_demo_shows_a_machine_path(tmp_path: Path) -> None:
    """Issue 40 item 7: no machine path anywhere. Every report the demo renders, its text and
    every attachment (pypdf), and every evidence bundle's files, name the model metadata file
    relative to the models folder and hold no path of the machine that rendered them."""
    import io
    import zipfile

    from pypdf import PdfReader

    demo = annex("demo", "--nodes", "40", "--out", str(tmp_path / "demo"), cwd=tmp_path)
    assert demo.returncode == 0, demo.stderr
    pdfs = sorted((tmp_path / "demo" / "reports").glob("*.pdf"))
    bundles = sorted((tmp_path / "demo" / "evidence").glob("*.evidence.zip"))
    assert len(pdfs) >= 5 and len(bundles) == len(pdfs)
    found = {}
    for pdf in pdfs:
        reader = PdfReader(pdf)
        documents = {"text": " ".join(page.extract_text() or "" for page in reader.pages)}
        documents |= {name: data[0].decode() for name, data in reader.attachments.items()}
        for name, body in documents.items():
            if match := ABSOLUTE_PATH.search(re.sub(r"\s+", "", body)):
                found[f"{pdf.name}: {name}"] = match.group(0)
    for bundle in bundles:
        with zipfile.ZipFile(io.BytesIO(bundle.read_bytes())) as files:
            for name in files.namelist():
                text = files.read(name).decode()
                if match := ABSOLUTE_PATH.search(text):
                    found[f"{bundle.name}: {name}"] = match.group(0)
                assert str(tmp_path) not in text
    assert found == {}


def test_simulate_serves_a_cluster_that_kubectl_and_annex_collect_read(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "sim" / "kubeconfig"
    env = clean_env()
    env["ANNEX_WAREHOUSE"] = str(tmp_path / "annex.duckdb")
    simulate = subprocess.Popen(
        [
            *(sys.executable, "-m", "annex", "simulate"),
            *("--nodes", "6", "--seed", "3", "--kubeconfig", str(kubeconfig)),
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while "Ctrl-C" not in (line := simulate.stdout.readline()):
            assert line or simulate.poll() is None, simulate.stderr.read()
            assert time.monotonic() < deadline, "annex simulate did not start"
        kubectl = shutil.which("kubectl")
        assert kubectl, "kubectl is missing: `make test` installs it (Debian kubernetes-client)"
        names = subprocess.run(
            [kubectl, "--kubeconfig", str(kubeconfig), "get", "nodes", "-o", "name"],
            capture_output=True,
            text=True,
            timeout=60,
            env={**env, "HOME": str(tmp_path)},
        )
        assert names.returncode == 0, names.stderr
        assert len(names.stdout.split()) == 6
        collect = annex("collect", "cluster", "--kubeconfig", str(kubeconfig), cwd=tmp_path)
        assert collect.returncode == 0, collect.stderr
        assert "fleet summary" in collect.stdout
        count = annex(
            "sql", "-c", "select count(*) from core.nodes", "--format", "csv", cwd=tmp_path
        )
        assert count.stdout.splitlines()[1] == "6"
    finally:
        simulate.send_signal(signal.SIGTERM)
        assert simulate.wait(timeout=30) == 0


def test_interactive_sql_reads_statements_from_standard_input(tmp_path: Path) -> None:
    demo = annex("demo", "--nodes", "3", "--out", str(tmp_path / "demo"), cwd=tmp_path)
    assert demo.returncode == 0, demo.stderr
    base = clean_env()
    shell = subprocess.run(
        [sys.executable, "-m", "annex", "sql"],
        input=".tables\nselect count(*) * 7 as seven_per_node\n  from core.nodes;\n.quit\n",
        cwd=tmp_path,
        env={**base, "ANNEX_WAREHOUSE": str(tmp_path / "annex.duckdb")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shell.returncode == 0, shell.stderr
    assert "marts.fleet_summary" in shell.stdout
    assert "21" in shell.stdout
