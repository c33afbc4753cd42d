"""Charts: SVG that stays well-formed whatever the labels hold (escaped, never markup), draws
days without evidence as gaps rather than zeros, and is the same for the same input."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from reports.charts import Series, horizontal_bars, stacked_columns

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = '</text><script>alert(1)</script><image href="file:///etc/passwd"/> & "x"'


def test_hostile_labels_stay_text() -> None:
    svg = horizontal_bars([(HOSTILE, 3.0), ("b", None)], title=HOSTILE, unit="GPU-h")
    root = ET.fromstring(svg)
    assert root.find(f".//{SVG}script") is None
    assert root.find(f".//{SVG}image") is None
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert HOSTILE in texts  # the title, whole
    assert HOSTILE[:39] + "…" in texts  # the bar label, cut to 40 characters
    assert "no evidence" in texts  # a missing value is a gap, not a zero-length bar
    assert root.find(f"{SVG}title").text == HOSTILE


def test_missing_days_are_hatched_gaps_and_output_is_deterministic() -> None:
    series = [
        Series("work", [5.0, None, 2.0], "#000000"),
        Series(HOSTILE, [1.0, None, 0.0], "#111111"),
    ]
    svg = stacked_columns(["d1", "d2", "d3"], series, title="t", unit="GPU-hours")
    assert svg == stacked_columns(["d1", "d2", "d3"], series, title="t", unit="GPU-hours")
    root = ET.fromstring(svg)
    dashed = [r for r in root.iter(f"{SVG}rect") if r.get("stroke-dasharray")]
    assert len(dashed) == 1  # d2, where every series is missing
    assert HOSTILE in [t.text for t in root.iter(f"{SVG}text")]  # legend entry, as text
