"""Inline SVG charts: no JavaScript, no external fonts, works offline.

Each function returns one ``<svg>`` element as a string, sized by its ``viewBox`` so that it scales with the
page. Every data mark carries a ``class`` (``mark``, ``pareto``, ``bar``, ``segment``) and a ``<title>``
tooltip, so that tests (and screen readers) can find them. Colours: the Okabe-Ito palette (colour-blind
safe).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

PALETTE: tuple[str, ...] = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#56B4E9",
    "#F0E442",
    "#000000",
)
_MUTED = "#9aa5b1"
#: one colour per pay kind and per finding in every report (a stacked bar coloured by first-seen order gave
#: "spot" another colour in each plan): Okabe-Ito hues, muted grey for what is not compute
SERIES_COLOURS: dict[str, str] = {
    # pay kinds (gpufleet.fleet.types.PayKind)
    "on_demand": "#0072B2",
    "spot": "#E69F00",
    "commit_1y": "#56B4E9",
    "commit_3y": "#009E73",
    "existing": "#CC79A7",
    "on_prem": "#000000",
    "data_transfer": "#9aa5b1",
    # telemetry findings (gpufleet.telemetry.finding_types.FINDINGS)
    "Idle": "#D55E00",
    "Overprovisioned": "#E69F00",
    "Underprovisioned": "#CC79A7",
    "Optimized": "#009E73",
    "InsufficientData": "#9aa5b1",
}


def colour_for(name: str, index: int) -> str:
    """The fixed colour of a pay kind or finding (:data:`SERIES_COLOURS`), else the palette's ``index``-th."""
    return SERIES_COLOURS.get(name, PALETTE[index % len(PALETTE)])


_AXIS = "#52606d"
_GRID = "#e4e7eb"
_FONT = "font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif"


@dataclass(frozen=True, slots=True, kw_only=True)
class ScatterPoint:
    """One candidate on a scatter chart; ``x_low``/``x_high`` draw an error bar (e.g. p10-p90)."""

    x: float
    y: float
    label: str
    highlight: bool = False
    x_low: float | None = None
    x_high: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StackedBar:
    """One bar made of named segments (e.g. monthly cost by component)."""

    label: str
    segments: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class _Frame:
    width: float
    height: float
    left: float = 72.0
    right: float = 20.0
    top: float = 36.0
    bottom: float = 56.0

    @property
    def plot_w(self) -> float:
        return self.width - self.left - self.right

    @property
    def plot_h(self) -> float:
        return self.height - self.top - self.bottom


def nice_ticks(lo: float, hi: float, count: int = 5, *, integer: bool = False) -> list[float]:
    """Round tick values covering ``[lo, hi]`` (1-2-5 steps); at least two ticks. ``integer``: whole-number
    steps only (counts: no tick at 0.5 GPU)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0, 1.0]
    if hi <= lo:
        hi = lo + (abs(lo) if lo else 1.0)
    raw = (hi - lo) / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw))
    steps = (1, 2, 5, 10) if integer else (1, 2, 2.5, 5, 10)
    step = next(m * mag for m in steps if m * mag >= raw)
    if integer:
        step = max(1.0, float(round(step)))
    start = math.floor(lo / step) * step
    ticks = []
    t = start
    while t < hi + step * 0.5:
        ticks.append(round(t, 10))
        t += step
    if ticks[-1] < hi:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def fmt_number(value: float) -> str:
    """Short human number for axis labels: 1.2k, 3.4M, 0.05."""
    a = abs(value)
    if a >= 1e9:
        return f"{value / 1e9:.3g}G"
    if a >= 1e6:
        return f"{value / 1e6:.3g}M"
    if a >= 1e4:
        return f"{value / 1e3:.3g}k"
    if a >= 100 or value == 0:
        return f"{value:.0f}"
    return f"{value:.3g}"


def _open(frame: _Frame, title: str, css_class: str) -> list[str]:
    t = escape(title)
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {css_class}" viewBox="0 0 {frame.width:.0f} '
        f'{frame.height:.0f}" width="100%" role="img" aria-label="{t}" '
        f'style="{_FONT};max-width:{frame.width:.0f}px">',
        f"<title>{t}</title>",
        f'<text x="{frame.left:.0f}" y="20" font-size="14" font-weight="600" fill="#1f2933">{t}</text>',
    ]


def _y_axis(frame: _Frame, ticks: Sequence[float], label: str, y_of: _Scale) -> list[str]:
    out = []
    for t in ticks:
        y = y_of(t)
        out.append(
            f'<line x1="{frame.left:.1f}" x2="{frame.width - frame.right:.1f}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="{_GRID}"/>'
            f'<text x="{frame.left - 6:.1f}" y="{y + 4:.1f}" font-size="11" text-anchor="end" fill="{_AXIS}">'
            f"{escape(fmt_number(t))}</text>"
        )
    cy = frame.top + frame.plot_h / 2
    out.append(
        f'<text x="14" y="{cy:.1f}" font-size="12" fill="{_AXIS}" text-anchor="middle" '
        f'transform="rotate(-90 14 {cy:.1f})">{escape(label)}</text>'
    )
    return out


class _Scale:
    """Map from a data interval onto a pixel interval, linear or log10 (``log`` needs a positive interval)."""

    def __init__(self, d0: float, d1: float, p0: float, p1: float, *, log: bool = False) -> None:
        self.log = log
        self.d0, self.d1 = (math.log10(d0), math.log10(d1)) if log else (d0, d1)
        self.p0, self.p1 = p0, p1

    def __call__(self, v: float) -> float:
        if self.log:
            v = math.log10(max(v, 10**self.d0))
        span = self.d1 - self.d0 or 1.0
        return self.p0 + (v - self.d0) / span * (self.p1 - self.p0)


#: a positive axis spanning more than this ratio (max / min) is drawn on a log scale
LOG_SCALE_RATIO = 30.0


def log_ticks(lo: float, hi: float) -> list[float]:
    """1-2-5 ticks per decade covering ``[lo, hi]`` (both > 0); only decades when the span is wide."""
    d0, d1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    steps = (1.0,) if d1 - d0 > 4 else (1.0, 2.0, 5.0)
    ticks = [m * 10.0**d for d in range(d0, d1 + 1) for m in steps]
    inside = [t for t in ticks if lo <= t <= hi]
    below = [t for t in ticks if t < lo][-1:] or [10.0**d0]
    above = [t for t in ticks if t > hi][:1] or [10.0**d1]
    return below + inside + above


def _axis(values: Sequence[float], p0: float, p1: float) -> tuple[_Scale, list[float]]:
    lo, hi = min(values), max(values)
    if lo > 0 and hi / lo > LOG_SCALE_RATIO:
        ticks = log_ticks(lo, hi)
        return _Scale(ticks[0], ticks[-1], p0, p1, log=True), ticks
    ticks = nice_ticks(min(0.0, lo), hi)
    return _Scale(ticks[0], ticks[-1], p0, p1), ticks


def _labelled(n: int, limit: int = 5) -> set[int]:
    """Indices of at most ``limit`` evenly spread items out of ``n`` (always the first and the last)."""
    if n <= limit:
        return set(range(n))
    return {round(i * (n - 1) / (limit - 1)) for i in range(limit)}


def scatter_chart(
    points: Sequence[ScatterPoint],
    *,
    title: str,
    x_label: str,
    y_label: str,
    highlight_label: str = "Pareto front",
    width: float = 680,
    height: float = 400,
) -> str:
    """Scatter of ``points``; highlighted points are drawn on top and joined by a step line (the front)."""
    frame = _Frame(width, height)
    pts = [p for p in points if math.isfinite(p.x) and math.isfinite(p.y)]
    out = _open(frame, title, "scatter")
    if not pts:
        out.append(_empty(frame))
        return "\n".join([*out, "</svg>"])
    xs = [v for p in pts for v in (p.x, p.x_low, p.x_high) if v is not None and math.isfinite(v)]
    sx, xt = _axis(xs, frame.left, frame.width - frame.right)
    sy, yt = _axis([p.y for p in pts], frame.top + frame.plot_h, frame.top)
    x_label += " (log scale)" if sx.log else ""
    y_label += " (log)" if sy.log else ""
    out += _y_axis(frame, yt, y_label, sy)
    base = frame.top + frame.plot_h
    for t in xt:
        x = sx(t)
        out.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{frame.top:.1f}" y2="{base:.1f}" stroke="{_GRID}"/>'
            f'<text x="{x:.1f}" y="{base + 16:.1f}" font-size="11" text-anchor="middle" fill="{_AXIS}">'
            f"{escape(fmt_number(t))}</text>"
        )
    out.append(
        f'<text x="{frame.left + frame.plot_w / 2:.1f}" y="{frame.height - 12:.1f}" font-size="12" '
        f'text-anchor="middle" fill="{_AXIS}">{escape(x_label)}</text>'
    )
    front = sorted((p for p in pts if p.highlight), key=lambda p: p.x)
    if len(front) > 1:
        path = " ".join(f"{sx(p.x):.1f},{sy(p.y):.1f}" for p in front)
        out.append(
            f'<polyline class="front-line" points="{path}" fill="none" stroke="{PALETTE[3]}" '
            'stroke-width="1.5" stroke-dasharray="4 3"/>'
        )
    labelled = {id(front[i]) for i in _labelled(len(front))}
    faint = len(pts) > 12
    for p in sorted(pts, key=lambda p: p.highlight):
        out.append(_point(p, sx, sy, label=id(p) in labelled, faint=faint))
    lx = frame.width - frame.right - 150
    out.append(
        f'<circle cx="{lx:.0f}" cy="16" r="5" fill="{PALETTE[3]}"/><text x="{lx + 10:.0f}" y="20" '
        f'font-size="11" fill="{_AXIS}">{escape(highlight_label)}</text>'
        f'<circle cx="{lx + 100:.0f}" cy="16" r="4" fill="{_MUTED}"/><text x="{lx + 108:.0f}" y="20" '
        f'font-size="11" fill="{_AXIS}">other</text>'
    )
    return "\n".join([*out, "</svg>"])


def _point(p: ScatterPoint, sx: _Scale, sy: _Scale, *, label: bool, faint: bool) -> str:
    cx, cy = sx(p.x), sy(p.y)
    colour = PALETTE[3] if p.highlight else _MUTED
    parts = []
    if p.x_low is not None and p.x_high is not None:
        parts.append(
            f'<line class="errorbar" x1="{sx(p.x_low):.1f}" x2="{sx(p.x_high):.1f}" '
            f'y1="{cy:.1f}" y2="{cy:.1f}" '
            f'stroke="{colour}" stroke-width="1.5" opacity="{0.25 if faint else 0.6}"/>'
        )
    cls = "mark pareto" if p.highlight else "mark"
    r = (5 if faint else 6) if p.highlight else 4
    parts.append(
        f'<circle class="{cls}" cx="{cx:.1f}" cy="{cy:.1f}" r="{r}" fill="{colour}" '
        'stroke="#fff" stroke-width="1">'
        f"<title>{escape(p.label)}</title></circle>"
    )
    if p.highlight and label:
        right_half = cx > (sx.p0 + sx.p1) / 2
        tx, anchor = (cx - 8, "end") if right_half else (cx + 8, "start")
        parts.append(
            f'<text class="point-label" x="{tx:.1f}" y="{cy - 8:.1f}" font-size="10" fill="#1f2933" '
            f'text-anchor="{anchor}">'
            f"{escape(_short(p.label))}</text>"
        )
    return "".join(parts)


def stacked_bar_chart(
    bars: Sequence[StackedBar], *, title: str, y_label: str, width: float = 680, height: float = 420
) -> str:
    """Vertical stacked bars, one per ``bars`` entry; segments are stacked in first-seen order (>= 0 only)."""
    frame = _Frame(width, height, top=52.0, bottom=120.0)
    out = _open(frame, title, "stacked")
    names: list[str] = []
    for b in bars:
        names += [n for n, v in b.segments.items() if n not in names and v > 0]
    totals = [sum(max(v, 0.0) for v in b.segments.values()) for b in bars]
    if not bars or max(totals) <= 0:
        out.append(_empty(frame))
        return "\n".join([*out, "</svg>"])
    yt = nice_ticks(0.0, max(totals))
    sy = _Scale(0.0, yt[-1], frame.top + frame.plot_h, frame.top)
    out += _y_axis(frame, yt, y_label, sy)
    slot = frame.plot_w / len(bars)
    bw = min(56.0, slot * 0.6)
    for i, b in enumerate(bars):
        x = frame.left + slot * i + (slot - bw) / 2
        acc = 0.0
        for j, name in enumerate(names):
            v = max(b.segments.get(name, 0.0), 0.0)
            if v <= 0:
                continue
            y1, y0 = sy(acc + v), sy(acc)
            out.append(
                f'<rect class="bar segment" x="{x:.1f}" y="{y1:.1f}" width="{bw:.1f}" '
                f'height="{max(y0 - y1, 0.5):.1f}" '
                f'fill="{colour_for(name, j)}"><title>{escape(b.label)}: {escape(name)} '
                f"{escape(fmt_number(v))}</title></rect>"
            )
            acc += v
        out.append(_x_label(x + bw / 2, frame.top + frame.plot_h + 12, b.label))
    out += _legend(frame, names)
    return "\n".join([*out, "</svg>"])


def bar_chart(
    items: Sequence[tuple[str, float]],
    *,
    title: str,
    y_label: str,
    width: float = 680,
    height: float = 360,
    integer: bool = False,
) -> str:
    """Vertical bars that may be negative (e.g. savings per scenario); negative bars are drawn in orange.
    ``integer``: the values are counts, so the axis ticks at whole numbers only."""
    frame = _Frame(width, height, bottom=120.0)
    out = _open(frame, title, "bars")
    vals = [v for _, v in items if math.isfinite(v)]
    if not vals:
        out.append(_empty(frame))
        return "\n".join([*out, "</svg>"])
    yt = nice_ticks(min(0.0, min(vals)), max(0.0, max(vals)), integer=integer)
    sy = _Scale(yt[0], yt[-1], frame.top + frame.plot_h, frame.top)
    out += _y_axis(frame, yt, y_label, sy)
    zero = sy(0.0)
    slot = frame.plot_w / len(items)
    bw = min(56.0, slot * 0.6)
    for i, (label, v) in enumerate(items):
        x = frame.left + slot * i + (slot - bw) / 2
        if math.isfinite(v):
            top, bottom = sorted((sy(v), zero))
            colour = PALETTE[2] if v >= 0 else PALETTE[3]
            out.append(
                f'<rect class="bar" x="{x:.1f}" y="{top:.1f}" width="{bw:.1f}" '
                f'height="{max(bottom - top, 1.0):.1f}" '
                f'fill="{colour}"><title>{escape(label)}: {escape(fmt_number(v))}</title></rect>'
            )
        out.append(_x_label(x + bw / 2, frame.top + frame.plot_h + 12, label))
    out.append(
        f'<line x1="{frame.left:.1f}" x2="{frame.width - frame.right:.1f}" y1="{zero:.1f}" y2="{zero:.1f}" '
        f'stroke="{_AXIS}"/>'
    )
    return "\n".join([*out, "</svg>"])


def waterfall_chart(
    start: tuple[str, float],
    steps: Sequence[tuple[str, float | None]],
    end_label: str,
    *,
    title: str,
    y_label: str,
    colours: Mapping[str, str] | None = None,
    width: float = 680,
    height: float = 380,
) -> str:
    """A waterfall: a total bar from 0 to ``start``, then one floating bar per step from the running level
    to the level plus its change (a saving is negative: the bar hangs down from the previous level), dashed
    connectors between levels, and a total bar from 0 to the level reached (``end_label``). A step whose
    change is None was not evaluated: its label shows "n/e" and the level does not move. Steps are green
    when they lower the total and vermillion when they raise it, unless ``colours`` names a colour for the
    step (e.g. one per finding)."""
    frame = _Frame(width, height, bottom=110.0)
    out = _open(frame, title, "waterfall")
    label0, level = start
    levels = [level]
    for _, d in steps:
        levels.append(levels[-1] + (d or 0.0))
    if not all(math.isfinite(v) for v in levels):
        out.append(_empty(frame))
        return "\n".join([*out, "</svg>"])
    yt = nice_ticks(min(0.0, *levels), max(0.0, *levels))
    sy = _Scale(yt[0], yt[-1], frame.top + frame.plot_h, frame.top)
    out += _y_axis(frame, yt, y_label, sy)
    n = len(steps) + 2
    slot = frame.plot_w / n
    bw = min(56.0, slot * 0.6)

    def bar(i: int, lo: float, hi: float, colour: str, css: str, label: str, value: str) -> None:
        x = frame.left + slot * i + (slot - bw) / 2
        top, bottom = sorted((sy(hi), sy(lo)))
        out.append(
            f'<rect class="bar {css}" x="{x:.1f}" y="{top:.1f}" width="{bw:.1f}" '
            f'height="{max(bottom - top, 1.0):.1f}" fill="{colour}"><title>{escape(label)}: '
            f"{escape(value)}</title></rect>"
        )
        out.append(
            f'<text class="value" x="{x + bw / 2:.1f}" y="{top - 4:.1f}" font-size="10" fill="{_AXIS}" '
            f'text-anchor="middle">{escape(value)}</text>'
        )

    def connector(i: int, v: float) -> None:
        x0 = frame.left + slot * i + (slot + bw) / 2
        out.append(
            f'<line class="connector" x1="{x0:.1f}" x2="{x0 + slot - bw:.1f}" y1="{sy(v):.1f}" '
            f'y2="{sy(v):.1f}" stroke="{_AXIS}" stroke-dasharray="3 3"/>'
        )

    bar(0, 0.0, levels[0], PALETTE[0], "total", label0, fmt_number(levels[0]))
    out.append(_x_label(frame.left + slot * 0.5 + bw / 2, frame.top + frame.plot_h + 12, label0))
    for i, (label, d) in enumerate(steps, start=1):
        connector(i - 1, levels[i - 1])
        cx = frame.left + slot * i + slot / 2
        if d is None:
            out.append(
                f'<text class="not-evaluated" x="{cx:.1f}" y="{sy(levels[i]) - 4:.1f}" font-size="10" '
                f'fill="{_MUTED}" text-anchor="middle">n/e<title>{escape(label)}: not evaluated</title>'
                "</text>"
            )
        else:
            colour = (colours or {}).get(label) or (PALETTE[2] if d <= 0 else PALETTE[3])
            sign = "-" if d < 0 else "+"
            bar(i, levels[i - 1], levels[i], colour, "step", label, f"{sign}{fmt_number(abs(d))}")
        out.append(_x_label(cx + bw / 2, frame.top + frame.plot_h + 12, label))
    connector(n - 2, levels[-1])
    bar(n - 1, 0.0, levels[-1], PALETTE[0], "total", end_label, fmt_number(levels[-1]))
    out.append(_x_label(frame.left + slot * (n - 0.5) + bw / 2, frame.top + frame.plot_h + 12, end_label))
    return "\n".join([*out, "</svg>"])


def _x_label(x: float, y: float, label: str) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="10" fill="{_AXIS}" text-anchor="end" '
        f'transform="rotate(-30 {x:.1f} {y:.1f})">{escape(_short(label, 30))}'
        f"<title>{escape(label)}</title></text>"
    )


def _legend(frame: _Frame, names: Sequence[str]) -> list[str]:
    out = []
    x = frame.left
    for j, name in enumerate(names):
        out.append(
            f'<rect x="{x:.0f}" y="29" width="10" height="10" fill="{colour_for(name, j)}"/>'
            f'<text x="{x + 14:.0f}" y="38" font-size="11" fill="{_AXIS}">{escape(name)}</text>'
        )
        x += 22 + 6.5 * len(name)
    return out


def _empty(frame: _Frame) -> str:
    return (
        f'<text class="empty" x="{frame.width / 2:.0f}" y="{frame.height / 2:.0f}" text-anchor="middle" '
        f'font-size="13" fill="{_AXIS}">no data to chart</text>'
    )


def _short(label: str, limit: int = 28) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def line_chart(
    series: Mapping[str, Sequence[tuple[float, float]]],
    *,
    title: str,
    x_label: str,
    y_label: str,
    step: bool = False,
    width: float = 680,
    height: float = 320,
) -> str:
    """Named ``(x, y)`` series as lines (``step``: a staircase, for counts such as replicas over time)."""
    frame = _Frame(width, height)
    out = _open(frame, title, "lines")
    pts = [(x, y) for s in series.values() for x, y in s if math.isfinite(x) and math.isfinite(y)]
    if not pts:
        out.append(_empty(frame))
        return "\n".join([*out, "</svg>"])
    xt = nice_ticks(min(x for x, _ in pts), max(x for x, _ in pts))
    yt = nice_ticks(min(0.0, min(y for _, y in pts)), max(y for _, y in pts))
    sx = _Scale(xt[0], xt[-1], frame.left, frame.width - frame.right)
    sy = _Scale(yt[0], yt[-1], frame.top + frame.plot_h, frame.top)
    out += _y_axis(frame, yt, y_label, sy)
    base = frame.top + frame.plot_h
    for t in xt:
        out.append(
            f'<text x="{sx(t):.1f}" y="{base + 16:.1f}" font-size="11" text-anchor="middle" fill="{_AXIS}">'
            f"{escape(fmt_number(t))}</text>"
        )
    out.append(
        f'<text x="{frame.left + frame.plot_w / 2:.1f}" y="{frame.height - 12:.1f}" font-size="12" '
        f'text-anchor="middle" fill="{_AXIS}">{escape(x_label)}</text>'
    )
    for j, (name, s) in enumerate(series.items()):
        xy = [(x, y) for x, y in s if math.isfinite(x) and math.isfinite(y)]
        if step:
            xy = [p for k, (x, y) in enumerate(xy) for p in ([(x, xy[k - 1][1])] if k else []) + [(x, y)]]
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in xy)
        out.append(
            f'<polyline class="line" points="{path}" fill="none" stroke="{PALETTE[j % len(PALETTE)]}" '
            f'stroke-width="1.5"><title>{escape(name)}</title></polyline>'
        )
    out += _legend(frame, list(series))
    return "\n".join([*out, "</svg>"])
