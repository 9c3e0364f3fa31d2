"""Charts people read (issue 23, item 6): one colour per pay kind and finding in every report, a real
waterfall (floating bars from today's cost down to the planned cost), integer ticks for counts, and a
colour scale with metric and unit on the heat map."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

from gpufleet.fleet.types import Lever
from gpufleet.report.charts import SERIES_COLOURS, StackedBar, bar_chart, nice_ticks, stacked_bar_chart
from gpufleet.report.fleet_report import waterfall_chart
from gpufleet.report.telemetry import heatmap_svg

_RECT = re.compile(
    r'<rect class="bar ([a-z ]+)" x="[\d.]+" y="([\d.]+)" width="[\d.]+" height="([\d.]+)" fill="(#\w+)"'
)


def _fills(svg: str) -> dict[str, str]:
    """segment name -> fill, from the stacked bars' tooltips."""
    out = {}
    for fill, name in re.findall(r'fill="(#\w+)"><title>[^:]+: (\w+) ', svg):
        out[name] = fill
    return out


def test_pay_kind_colour_does_not_depend_on_order() -> None:
    a = stacked_bar_chart(
        [StackedBar(label="w1", segments={"on_demand": 2.0, "spot": 1.0})], title="a", y_label="$"
    )
    b = stacked_bar_chart(
        [StackedBar(label="w2", segments={"spot": 1.0, "commit_3y": 3.0, "on_demand": 1.0})],
        title="b",
        y_label="$",
    )
    fa, fb = _fills(a), _fills(b)
    assert fa["spot"] == fb["spot"] == SERIES_COLOURS["spot"]
    assert fa["on_demand"] == fb["on_demand"] == SERIES_COLOURS["on_demand"]
    assert len({SERIES_COLOURS[k] for k in ("on_demand", "spot", "commit_1y", "commit_3y", "existing")}) == 5
    findings = ("Idle", "Overprovisioned", "Underprovisioned", "Optimized", "InsufficientData")
    assert len({SERIES_COLOURS[f] for f in findings}) == len(findings)


def _lever(name: str, before: float, after: float | None) -> Lever:
    saved = None if after is None else before - after
    return Lever(
        name=name, usd_per_month_before=before, usd_per_month_after=after, savings_usd_per_month=saved,
        savings_pct=None, goal="",
    )  # fmt: skip


def test_plan_waterfall_floats_from_today_to_planned() -> None:
    levers = [
        _lever("right-size", 10_000.0, 8_000.0),
        _lever("region moves", 8_000.0, 5_000.0),
        _lever("spot", 5_000.0, 4_500.0),
        _lever("autoscaling", 4_500.0, None),
    ]
    svg = waterfall_chart(SimpleNamespace(levers=levers))  # type: ignore[arg-type]
    bars = [(css, float(y), float(h)) for css, y, h, _ in _RECT.findall(svg)]
    assert [c for c, _, _ in bars] == ["total", "step", "step", "step", "total"]
    (_, y0, h0), *steps, (_, ye, he) = bars
    baseline = y0 + h0
    assert abs(ye + he - baseline) < 0.2  # both totals stand on zero
    px_per_usd = h0 / 10_000.0
    assert abs(he - 4_500.0 * px_per_usd) < 0.2  # the planned cost
    # each step floats: its top is the level before it, its bottom the level after; none touches zero
    level = 10_000.0
    for (_, y, h), after in zip(steps, (8_000.0, 5_000.0, 4_500.0), strict=True):
        assert abs(y - (baseline - level * px_per_usd)) < 0.2
        assert abs(y + h - (baseline - after * px_per_usd)) < 0.2
        assert y + h < baseline - 1
        level = after
    assert "n/e" in svg  # the lever not evaluated
    assert svg.count('class="connector"') == 5  # between the 6 columns


def test_counts_tick_at_integers() -> None:
    assert nice_ticks(0.0, 2.0, integer=True) == [0.0, 1.0, 2.0]
    assert all(t == int(t) for t in nice_ticks(0.0, 3.0, integer=True))
    svg = bar_chart([("0-10%", 1.0), ("10-20%", 2.0)], title="GPUs", y_label="GPUs", integer=True)
    ticks = re.findall(r'text-anchor="end" fill="#52606d">([^<]+)</text>', svg)
    assert ticks and all("." not in t for t in ticks), ticks


def test_heatmap_has_a_colour_scale_with_metric_and_unit() -> None:
    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    cells = [(t0 + timedelta(hours=h), h / 47) for h in range(48)]
    svg = heatmap_svg(cells, title="Fleet compute by hour (UTC)")
    assert 'class="colour-scale"' in svg and "linearGradient" in svg
    assert "fleet mean compute (SM_ACTIVE, else GPU_UTIL) [% of the GPU]" in svg
    for k in (0, 25, 50, 75, 100):
        assert f">{k}</text>" in svg
