"""Open the HTML report in headless Chromium: the charts must lay out with real size and paint pixels.

Skipped only when no Chromium binary is found (Debian: ``apt-get install -y chromium``). The report itself
has no scripts; the test appends a measuring script to a COPY, so that ``--dump-dom`` returns the rendered
sizes of every chart and mark after load. ``GPUFLEET_SCREENSHOT=path`` also saves the screenshot there (used
for ``docs/img/report.png``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from gpufleet.report import render_html

from . import samples

_BINARIES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)

_MEASURE = """
<script>
window.addEventListener('load', () => {
  const box = (e) => {
    const r = e.getBoundingClientRect();
    return [Math.round(r.width), Math.round(r.height)];
  };
  const out = {
    charts: [...document.querySelectorAll('svg.chart')].map(box),
    marks: [...document.querySelectorAll('svg .mark')].map(box),
    pareto: document.querySelectorAll('svg .pareto').length,
    bars: [...document.querySelectorAll('svg .bar')].map(box),
  };
  const pre = document.createElement('pre');
  pre.id = 'measure';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def _chromium() -> str | None:
    for name in _BINARIES:
        found = shutil.which(name)
        if found:
            return found
    return None


def _run(binary: str, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp / f"profile-{len(list(tmp.iterdir()))}"
    cmd = [binary, *_FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=90, check=False)


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Decode an 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes) into rows of raw pixels."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    height, channels = 0, 4
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6)
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, rows, prev = zlib.decompress(idat), width * channels, [], bytearray(width * channels)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 0xFF
            elif f == 2:
                line[i] = (line[i] + b) & 0xFF
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(b"".join(bytes(line[i : i + 3]) for i in range(0, stride, channels)))
        prev = line
    return width, height, rows


@pytest.fixture(scope="module")
def chromium() -> str:
    binary = _chromium()
    if binary is None:
        pytest.skip(
            "no Chromium binary found (looked for " + ", ".join(_BINARIES) + "); apt-get install chromium"
        )
    return binary


def test_charts_render_in_chromium(chromium: str, tmp_path: Path) -> None:
    html = render_html(samples.scenario_set())
    page = tmp_path / "measured.html"
    page.write_text(html.replace("</body>", _MEASURE + "</body>"), encoding="utf-8")
    proc = _run(chromium, tmp_path, "--virtual-time-budget=5000", "--dump-dom", page.as_uri())
    match = re.search(r'<pre id="measure">(.*?)</pre>', proc.stdout)
    assert match, f"no measurement in the DOM; chromium stderr: {proc.stderr[-2000:]}"
    m = json.loads(match.group(1).replace("&quot;", '"'))
    # set: savings + cost by scenario; now-vs-after; cost-vs-throughput + breakdown for 2 scenarios
    assert len(m["charts"]) == 7
    assert all(w > 200 and h > 150 for w, h in m["charts"]), m["charts"]
    assert m["pareto"] >= 2
    assert len(m["marks"]) >= 4 and all(w > 0 and h > 0 for w, h in m["marks"])
    assert len(m["bars"]) >= 4 and all(w > 0 and h > 0 for w, h in m["bars"])


def test_screenshot_is_not_blank(chromium: str, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text(render_html(samples.scenario_set()), encoding="utf-8")
    shot = tmp_path / "shot.png"
    proc = _run(chromium, tmp_path, "--window-size=1280,1700", f"--screenshot={shot}", page.as_uri())
    assert shot.exists(), f"no screenshot; chromium stderr: {proc.stderr[-2000:]}"
    width, height, rows = _png_pixels(shot.read_bytes())
    assert (width, height) == (1280, 1700)
    colours: set[bytes] = set()
    non_white = 0
    for row in rows[::4]:
        for i in range(0, len(row), 12):
            px = row[i : i + 3]
            colours.add(px)
            non_white += px < b"\xf0\xf0\xf0"
    assert len(colours) > 50, "the page looks blank"
    assert non_white > 2000
    assert bytes.fromhex("0072B2") in colours or bytes.fromhex("009E73") in colours, "no chart colour painted"
    target = os.environ.get("GPUFLEET_SCREENSHOT")
    if target:
        Path(target).write_bytes(shot.read_bytes())
