"""collectors.lineage.native: annex's C parts are built once per source version, where
ANNEX_NATIVE_DIR says, and a build that cannot happen says how to fix it."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from collectors.lineage import events as events_module
from collectors.lineage import graph as graph_module
from collectors.lineage import native
from collectors.lineage.events import canonical_json
from collectors.lineage.graph import read_graph
from collectors.lineage.native import NativeCodeUnavailable

SOURCE = Path(native.__file__).with_name("canonical.c")


def test_a_missing_compiler_is_named_with_the_fix(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    with pytest.raises(NativeCodeUnavailable, match="building annex's part failed"):
        native.build(SOURCE, tmp_path / "cache" / "x.so", "annex's part")
    monkeypatch.delenv("CC")
    monkeypatch.setattr(native.shutil, "which", lambda name: None)
    with pytest.raises(NativeCodeUnavailable, match="apt-get install gcc"):
        native.build(SOURCE, tmp_path / "cache" / "x.so", "annex's part")


def test_a_source_that_does_not_compile_gives_the_compilers_message(tmp_path) -> None:
    broken = tmp_path / "broken.c"
    broken.write_text("int f(void) { return undeclared; }\n")
    with pytest.raises(NativeCodeUnavailable, match="undeclared"):
        native.build(broken, tmp_path / "cache" / "x.so", "annex's part")
    assert not (tmp_path / "cache" / "x.so").exists()


def test_an_unwritable_folder_is_named_with_the_fix(tmp_path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    with pytest.raises(NativeCodeUnavailable, match="ANNEX_NATIVE_DIR"):
        native.build(SOURCE, blocked / "native" / "x.so", "annex's part")


def test_both_parts_are_built_where_annex_native_dir_says(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("ANNEX_NATIVE_DIR", str(tmp_path / "native"))
    monkeypatch.setattr(native, "_libraries", {})
    monkeypatch.setattr(graph_module, "_library", None)
    monkeypatch.setattr(events_module, "_respell", None)
    monkeypatch.setattr(events_module, "_respell_loaded", False)
    assert read_graph(pa.array(["{}"])).read.to_pylist() == [True]
    assert canonical_json({"x": 2.0}) == b'{"x":2}'
    assert events_module._respell is not None  # the C respelled it
    built = sorted(p.name.split("-")[1] for p in (tmp_path / "native").iterdir())
    assert built == ["canonical", "graph"]
    # loaded once a process: a second use builds nothing more
    canonical_json({"x": 3.0})
    assert len(list((tmp_path / "native").iterdir())) == 2
