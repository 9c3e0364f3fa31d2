"""Inline SVG chart primitives: well-formed XML, marks present, scales sane."""

from __future__ import annotations

import itertools
import math
import xml.etree.ElementTree as ET

import pytest

from gpufleet.report.charts import (
    ScatterPoint,
    StackedBar,
    bar_chart,
    fmt_number,
    nice_ticks,
    scatter_chart,
    stacked_bar_chart,
)

NS = "{http://www.w3.org/2000/svg}"


def _marks(svg: str, cls: str) -> list[ET.Element]:
    root = ET.fromstring(svg)
    return [e for e in root.iter() if cls in (e.get("class") or "").split()]


def test_nice_ticks_cover_range() -> None:
    ticks = nice_ticks(0.0, 16030.8)
    assert ticks[0] <= 0.0 and ticks[-1] >= 16030.8
    steps = {round(b - a, 6) for a, b in itertools.pairwise(ticks)}
    assert len(steps) == 1 and 3 <= len(ticks) <= 8


def test_nice_ticks_degenerate_ranges() -> None:
    assert nice_ticks(5.0, 5.0)[-1] >= 5.0
    assert nice_ticks(math.nan, 1.0) == [0.0, 1.0]
    neg = nice_ticks(-300.0, 1200.0)
    assert neg[0] <= -300.0 and neg[-1] >= 1200.0


def test_fmt_number() -> None:
    assert fmt_number(15000) == "15k"
    assert fmt_number(2_500_000) == "2.5M"
    assert fmt_number(0) == "0"
    assert fmt_number(0.05) == "0.05"


def test_scatter_highlights_front_and_escapes_labels() -> None:
    pts = [
        ScatterPoint(x=5000, y=1810, label="aws <g6e>", highlight=True, x_low=3600, x_high=6300),
        ScatterPoint(x=6000, y=3635, label="lambda", highlight=True),
        ScatterPoint(x=5000, y=2606, label="runpod"),
    ]
    svg = scatter_chart(pts, title="Cost & speed", x_label="tok/s", y_label="USD/month")
    assert len(_marks(svg, "mark")) == 3
    assert len(_marks(svg, "pareto")) == 2
    assert len(_marks(svg, "front-line")) == 1
    assert len(_marks(svg, "errorbar")) == 1
    assert "aws &lt;g6e&gt;" in svg and "Cost &amp; speed" in svg
    # cheaper point is drawn lower on the chart (larger y pixel)
    circles = {c.find(f"{NS}title").text: float(c.get("cy")) for c in _marks(svg, "mark")}  # type: ignore[union-attr]
    assert circles["aws <g6e>"] > circles["lambda"]


def test_scatter_without_finite_points_says_so() -> None:
    svg = scatter_chart([ScatterPoint(x=math.nan, y=1, label="x")], title="t", x_label="x", y_label="y")
    assert _marks(svg, "empty") and not _marks(svg, "mark")


def test_stacked_bars_sum_to_total_height() -> None:
    bars = [
        StackedBar(label="a", segments={"compute": 100.0, "spot": 50.0}),
        StackedBar(label="b", segments={"compute": 150.0}),
    ]
    svg = stacked_bar_chart(bars, title="t", y_label="USD")
    segs = _marks(svg, "segment")
    assert len(segs) == 3
    h = [float(s.get("height", 0)) for s in segs]
    assert h[0] + h[1] == pytest.approx(h[2], rel=0.02)
    assert "spot" in svg  # legend lists only segments with a value


def test_stacked_bars_legend_skips_empty_segments() -> None:
    svg = stacked_bar_chart(
        [StackedBar(label="a", segments={"compute": 1.0, "idle": 0.0})], title="t", y_label="y"
    )
    assert ">idle<" not in svg


def test_stacked_bars_empty() -> None:
    assert _marks(stacked_bar_chart([], title="t", y_label="y"), "empty")


def test_bar_chart_negative_values() -> None:
    svg = bar_chart([("a", 1000.0), ("b", -250.0)], title="Savings", y_label="USD/month")
    bars = _marks(svg, "bar")
    assert len(bars) == 2
    assert bars[0].get("fill") != bars[1].get("fill")
    assert _marks(bar_chart([], title="t", y_label="y"), "empty")


def test_wide_positive_range_uses_log_scale_and_few_labels() -> None:
    from gpufleet.report.charts import log_ticks

    pts = [
        ScatterPoint(x=1000.0 * 1.3**i, y=800.0 * 1.6**i, label=f"p{i}", highlight=True) for i in range(20)
    ]
    svg = scatter_chart(pts, title="t", x_label="tok/s", y_label="USD/month")
    assert "USD/month (log)" in svg  # y spans 800 .. 6.3M
    assert len(_marks(svg, "point-label")) == 5  # 20 front points, 5 labelled (first, last, spread)
    assert len(_marks(svg, "pareto")) == 20
    ys = [float(c.get("cy", 0)) for c in _marks(svg, "mark")]
    gaps = [a - b for a, b in itertools.pairwise(ys)]
    assert max(gaps) / min(gaps) < 1.01  # equal ratios -> equal pixel steps on a log axis
    ticks = log_ticks(800.0, 6.3e6)
    assert ticks[0] <= 800.0 and ticks[-1] >= 6.3e6


def test_narrow_range_stays_linear_from_zero() -> None:
    pts = [ScatterPoint(x=100.0, y=50.0, label="a"), ScatterPoint(x=200.0, y=90.0, label="b")]
    svg = scatter_chart(pts, title="t", x_label="x", y_label="y")
    assert "(log" not in svg and ">0<" in svg
