"""Regenerate the README screenshots (docs/img/*.png) from the reports `make demo` writes.

    .venv/bin/python tools/screenshots.py [--out docs/img] [--only report,plan,telemetry,simulate]

Each report is rendered by gpufleet itself (the same commands as `make demo` and the README), written to a
temporary folder and photographed with headless Chromium (`chromium --headless --screenshot`), at 1280 px
wide and the page's own height (measured first with `--dump-dom` and a measuring script appended to a copy;
the report has no scripts of its own). Needs a Chromium binary (Debian: `apt-get install -y chromium`).

* report.png: `gpufleet scenarios run-set basic_demos --format html`
* plan.png: `gpufleet plan examples/fleets/assessment-platform.yaml --format html`
* telemetry.png: `gpufleet telemetry report` on the example fleet of tools/make_telemetry_example.py
* simulate.png: `gpufleet simulate autoscale` of the Azure conversation trace on L4 (KPA) as HTML
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WIDTH = 1280
#: tallest screenshot [px]: the README shows the top of a long report (the scenario set runs to ~6,000 px)
MAX_HEIGHT = 2250
BINARIES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
MEASURE = (
    "<script>window.addEventListener('load',()=>{const p=document.createElement('pre');p.id='h';"
    "p.textContent=JSON.stringify(document.documentElement.scrollHeight);document.body.appendChild(p);});"
    "</script>"
)


def _chromium() -> str:
    for name in BINARIES:
        found = shutil.which(name)
        if found:
            return found
    sys.exit("no Chromium binary found (" + ", ".join(BINARIES) + "); apt-get install -y chromium")


def _gpufleet(*args: str) -> None:
    cmd = [sys.executable, "-c", "from gpufleet.cli.entry import main; main()", *args]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False, timeout=900)
    if proc.returncode != 0:
        sys.exit(f"gpufleet {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")


def _chrome(binary: str, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp / f"profile-{len(list(tmp.iterdir()))}"
    cmd = [binary, *FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def shoot(binary: str, html: Path, png: Path, tmp: Path) -> tuple[int, int]:
    """Screenshot ``html`` into ``png`` at WIDTH x the page height; returns the size."""
    probe = tmp / f"{html.stem}-measure.html"
    probe.write_text(
        html.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"), encoding="utf-8"
    )
    out = _chrome(
        binary, tmp, f"--window-size={WIDTH},1000", "--virtual-time-budget=5000", "--dump-dom", probe.as_uri()
    )
    m = re.search(r'<pre id="h">(\d+)</pre>', out.stdout)
    height = min(int(json.loads(m.group(1))) if m else 2000, MAX_HEIGHT)
    _chrome(binary, tmp, f"--window-size={WIDTH},{height}", f"--screenshot={png}", html.as_uri())
    if not png.exists():
        sys.exit(f"no screenshot of {html}")
    return WIDTH, height


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    ap.add_argument("--only", default="report,plan,telemetry,simulate")
    args = ap.parse_args()
    wanted = {w.strip() for w in args.only.split(",") if w.strip()}
    binary = _chromium()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        pages: dict[str, Path] = {}
        if "report" in wanted:
            pages["report"] = tmp / "report.html"
            _gpufleet("scenarios", "run-set", "basic_demos", "--format", "html", "-o", str(pages["report"]))
        if "plan" in wanted:
            pages["plan"] = tmp / "plan.html"
            _gpufleet(
                "plan",
                "examples/fleets/assessment-platform.yaml",
                "--format",
                "html",
                "-o",
                str(pages["plan"]),
            )
        if "telemetry" in wanted:
            store = tmp / "store"
            example = tmp / "telemetry"
            subprocess.run(
                [sys.executable, str(ROOT / "tools" / "make_telemetry_example.py"), str(example)],
                cwd=ROOT, check=True, capture_output=True, timeout=600,
            )  # fmt: skip
            _gpufleet("telemetry", "ingest", str(example / "dcgm.prom"), "--store", str(store))
            pages["telemetry"] = tmp / "telemetry.html"
            _gpufleet(
                "telemetry",
                "report",
                "--store",
                str(store),
                "--format",
                "html",
                "-o",
                str(pages["telemetry"]),
            )
        if "simulate" in wanted:
            pages["simulate"] = tmp / "simulate.html"
            trace = (
                ROOT
                / "tests"
                / "data"
                / "traces"
                / "azure-llm-inference-2023"
                / "AzureLLMInferenceTrace_conv.csv"
            )
            _gpufleet(
                "simulate", "autoscale", str(trace), "--gpu", "l4", "--policy", "kpa",
                "--format", "html", "-o", str(pages["simulate"]),
            )  # fmt: skip
        for name, page in pages.items():
            size = shoot(binary, page, args.out / f"{name}.png", tmp)
            print(f"{args.out / f'{name}.png'}: {size[0]} x {size[1]}")


if __name__ == "__main__":
    main()
