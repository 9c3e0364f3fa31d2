"""Tables fit their card in headless Chromium, on screen and in print layout (issue 23, item 6): the
candidates table of the recommend and scenario reports was wider than its card, so Risk, host, fabric and
price date sat behind a scrollbar, which a printout does not show.

The measuring script (appended to a COPY of the report, which has no scripts of its own) returns, for every
table, its scroll width against its container's width, and the right edge of each key header against the
container's and the window's. Print layout: the report's ``@media print`` rules applied on screen at the
printable width of an A4 page (210 mm = 794 CSS px at 96 px/in, less Chromium's default 0.4 in margins:
718 px); ``--print-to-pdf`` is also run, to show the page prints at all.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpufleet.report import render_html

from . import samples
from .test_html_browser import _run, chromium  # noqa: F401  (the fixture)

KEY_HEADERS = (
    "Risk",
    "Host vCPU / RAM",
    "Provider class, fabric",
    "Price date",
    "Cost (training: $/run first)",
)
A4_PRINTABLE_PX = 794 - 2 * 38

_MEASURE = """
<script>
window.addEventListener('load', () => {
  const keys = %s;
  const out = [];
  for (const t of document.querySelectorAll('table')) {
    const box = (t.closest('.scroll') || t.parentElement).getBoundingClientRect();
    const cont = t.closest('.scroll') || t.parentElement;
    const heads = [...t.querySelectorAll('th')].map((th) => {
      const r = th.getBoundingClientRect();
      return {text: th.textContent, right: r.right, width: r.width};
    }).filter((h) => keys.includes(h.text));
    out.push({scroll: t.scrollWidth, room: cont.clientWidth, right: box.right, win: window.innerWidth,
              heads: heads});
  }
  const pre = document.createElement('pre');
  pre.id = 'measure';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def _measure(
    binary: str, tmp: Path, html: str, width: int, *, print_css: bool, keys: tuple[str, ...] = KEY_HEADERS
) -> list[dict[str, object]]:
    html = html.replace("<details>", "<details open>")
    if print_css:
        html = html.replace("@media print", "@media all")
    page = tmp / f"fit-{width}-{print_css}.html"
    page.write_text(html.replace("</body>", _MEASURE % json.dumps(keys) + "</body>"), encoding="utf-8")
    proc = _run(
        binary, tmp, f"--window-size={width},1200", "--virtual-time-budget=5000", "--dump-dom", page.as_uri()
    )
    match = re.search(r'<pre id="measure">(.*?)</pre>', proc.stdout)
    assert match, f"no measurement in the DOM; chromium stderr: {proc.stderr[-2000:]}"
    return json.loads(match.group(1).replace("&quot;", '"').replace("&amp;", "&"))  # type: ignore[no-any-return]


@pytest.mark.parametrize("which", ["recommendation", "scenario_set"])
@pytest.mark.parametrize(("width", "print_css"), [(1280, False), (1024, False), (A4_PRINTABLE_PX, True)])
def test_key_columns_visible(chromium: str, tmp_path: Path, which: str, width: int, print_css: bool) -> None:  # noqa: F811
    html = render_html(getattr(samples, which)())
    tables = _measure(chromium, tmp_path, html, width, print_css=print_css)
    cand = [t for t in tables if {h["text"] for h in t["heads"]} >= {"Risk", "Price date"}]  # type: ignore[union-attr]
    assert cand, "no candidates table measured"
    for t in tables:
        assert t["scroll"] <= t["room"] + 1, f"a table is wider than its card at {width}px: {t}"
    for t in cand:
        for h in t["heads"]:  # type: ignore[union-attr]
            assert h["width"] > 0, h
            assert h["right"] <= min(t["right"], t["win"]) + 1, f"{h['text']} is cut off at {width}px: {t}"


def test_prints_to_pdf(chromium: str, tmp_path: Path) -> None:  # noqa: F811
    page = tmp_path / "report.html"
    page.write_text(render_html(samples.recommendation()), encoding="utf-8")
    pdf = tmp_path / "report.pdf"
    proc = _run(chromium, tmp_path, "--no-pdf-header-footer", f"--print-to-pdf={pdf}", page.as_uri())
    assert pdf.exists() and pdf.read_bytes()[:5] == b"%PDF-", proc.stderr[-2000:]


@pytest.mark.parametrize(("width", "print_css"), [(1280, False), (1024, False), (A4_PRINTABLE_PX, True)])
def test_telemetry_findings_table_fits(chromium: str, tmp_path: Path, width: int, print_css: bool) -> None:  # noqa: F811
    """The telemetry report's GPU findings table (13 columns, reason lists, option names) ran 1,324 px wide
    in its 1,216 px card at 1,280 px (981 in 718 printed): savings and risk sat behind a scrollbar, which a
    printout does not show. Cells now wrap anywhere, so every table fits its card."""
    from gpufleet.report.telemetry import render_findings_html
    from gpufleet.telemetry.api import analyze_fleet
    from gpufleet.telemetry.schema import ProblemCounter
    from gpufleet.telemetry.store import TelemetryStore
    from gpufleet.telemetry.summary import summarize
    from gpufleet.telemetry.synth import synthetic_fleet

    counts = {"idle": 2, "over": 2, "migable": 2, "busy": 1, "memstarved": 1, "healthy": 2}
    labels = {"provider": "aws", "instance_type": "p5.48xlarge", "region": "us-east-1"}
    batch, _ = synthetic_fleet(seed=1, counts=counts, days=2.0, labels=labels)
    TelemetryStore(tmp_path / "s").append(
        batch, ProblemCounter(), sources=["t"], rows_read=len(batch), now_us=1_790_000_000 * 1_000_000
    )
    ff = analyze_fleet(tmp_path / "s")
    html = render_findings_html(ff, summarize(ff), [])
    tables = _measure(chromium, tmp_path, html, width, print_css=print_css, keys=("risk", "savings_month"))
    gpu = [t for t in tables if {h["text"] for h in t["heads"]} >= {"risk", "savings_month"}]  # type: ignore[union-attr]
    assert gpu, "no GPU findings table measured"
    for t in tables:
        assert t["scroll"] <= t["room"] + 1, f"a table is wider than its card at {width}px: {t}"
    for h in gpu[0]["heads"]:  # type: ignore[union-attr]
        assert h["right"] <= gpu[0]["right"] + 1, h  # type: ignore[index,operator]
    # status words and figures stay on one line; only names and reason lists wrap
    assert '<td class="k">Overprovisioned</td>' in html and ".k{white-space:nowrap" in html
