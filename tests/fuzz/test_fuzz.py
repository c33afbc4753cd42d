"""The C readers' fuzz targets (fuzz_graph.py, fuzz_canonical.py), each run by atheris for a
bounded time (``ANNEX_FUZZ_SECONDS``, 10 s by default; a fixed seed) from a seed corpus of the
simulator's events as the intake spools them and a few odd texts. A difference between the C
and the Python path fails the test with the input (libFuzzer also writes it under tmp_path).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from collectors.lineage.events import canonical_json

ROOT = Path(__file__).resolve().parents[2]
DICT = Path(__file__).with_name("json.dict")  # JSON tokens and the keys graph.c reads
SECONDS = int(os.environ.get("ANNEX_FUZZ_SECONDS", "10"))
ODD = [
    b'{"run": {"facets": {"a": {"b": [1.0, -0.0, 1e400, "\\ud83d\\ude00"]}}}}',
    b'{"inputs": [{"namespace": "n", "name": "a", "facets": {"version": {"datasetVersion": "1"}},'
    b' "inputFacets": {"s": {"x": 2.50}}}], "dataset": {"name": null}}',
    b'{"job": {"facets": {"\xc3\xbc": {"t": "\xf0\x9f\x98\x80"}}}, "outputs": [{}]}',
    b'{"r\\u0075n": {"facets": {}}, "k": 12345678901234567890, "f": 0.000001}',
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    from simulator.lineage.producer import build_events, to_json
    from simulator.world import build_world

    folder = tmp_path_factory.mktemp("seeds")
    events = build_events(build_world(4, seed=5))[:10]
    for number, event in enumerate(events):
        (folder / f"event-{number}.json").write_bytes(canonical_json(json.loads(to_json(event))))
    for number, text in enumerate(ODD):
        (folder / f"odd-{number}.json").write_bytes(text)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("target", ["fuzz_graph", "fuzz_canonical"])
def test_the_c_reader_and_the_python_path_agree_on_fuzzed_inputs(
    target: str, corpus: Path, tmp_path: Path
) -> None:
    if not (os.environ.get("CC") or shutil.which("gcc")):
        pytest.skip("no C compiler: annex takes its Python path, there is no C to fuzz")
    work = tmp_path / "corpus"  # libFuzzer adds its finds to the first folder: a copy
    work.mkdir()
    for seed in corpus.iterdir():
        (work / seed.name).write_bytes(seed.read_bytes())
    command = [sys.executable, "-m", f"tests.fuzz.{target}", f"-max_total_time={SECONDS}"]
    command += ["-seed=1", "-max_len=8192", "-timeout=10", "-rss_limit_mb=2048", f"-dict={DICT}"]
    command += [f"-artifact_prefix={tmp_path}/", str(work)]
    environment = {**os.environ, "ANNEX_FUZZ_NATIVE_DIR": str(tmp_path / "native")}
    result = subprocess.run(
        command,
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=SECONDS + 120,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "Done" in output and " runs in " in output, output[-2000:]
    runs = int(output.rsplit("Done ", 1)[1].split(" ", 1)[0])
    assert runs > 100, output[-2000:]  # it ran (not a start-up failure reported as success)
