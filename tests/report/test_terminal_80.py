"""Terminal tables at 80 columns and in pipes keep money and status columns whole (issue 23, item 6): a
plan's "$/month" column read "$11…" there. Rendered through a real pipe (stdout not a terminal, where rich
prints 80 columns) and at console width 80."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from gpufleet.report.fleet_report import LINE_COLUMNS
from gpufleet.report.termtable import whole_table

ROOT = Path(__file__).resolve().parents[2]
MONEY = re.compile(r"-?\$[\d,]+(?:\.\d+)?")


def _pipe(*args: str) -> str:
    """``gpufleet ARGS`` with stdout a pipe and no COLUMNS: what `| less` or a CI log shows."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONPATH"] = str(ROOT / "src")
    proc = subprocess.run(
        [sys.executable, "-c", "from gpufleet.cli.entry import main; main()", *args],
        capture_output=True, text=True, timeout=300, env=env, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def _lines_fit(text: str, width: int = 80) -> None:
    assert "…" not in text, next(line for line in text.splitlines() if "…" in line)
    assert max(len(line.rstrip()) for line in text.splitlines()) <= width


def test_whole_table_keeps_money_and_status_at_80() -> None:
    headers = list(LINE_COLUMNS)
    rows = [
        ["chat-eu-long-name", "product", "hyperstack", "NORWAY-1", "n3-RTX-A4000x2", "RTX-A4000",
         "data_transfer", "12", "730", "$11,467.25"],
        ["rag", "research", "aws", "us-east-1", "g5.xlarge", "A10G", "commit_3y", "1", "456", "-$1,249.69"],
    ]  # fmt: skip
    buf = io.StringIO()
    Console(file=buf, width=80, color_system=None).print(whole_table(headers, rows, status=("Pay",)))
    text = buf.getvalue()
    _lines_fit(text)
    for cell in ("$11,467.25", "-$1,249.69", "data_transfer", "commit_3y", "730"):
        assert cell in text, cell


def test_plan_in_a_pipe() -> None:
    """The multicloud example plan: every money figure of the JSON appears whole in the piped table."""
    text = _pipe("plan", str(ROOT / "examples" / "fleets" / "mig-inference.yaml"))
    _lines_fit(text)
    doc = json.loads(_pipe("plan", str(ROOT / "examples" / "fleets" / "mig-inference.yaml"), "-f", "json"))
    for line in doc["result"]["lines"]:
        assert line["pay_kind"] in text
    money = MONEY.findall(text)
    assert money and all(not m.endswith(",") for m in money)


def test_simulate_spot_in_a_pipe() -> None:
    text = _pipe(
        "simulate", "spot", "--model", "llama-3.1-8b", "--tokens", "2e10", "--gpus", "8", "--runs", "5"
    )
    _lines_fit(text)
    for strategy in ("on_demand", "spot", "greedy", "uniform_progress", "failover"):
        assert re.search(rf"^ ?{strategy} ", text, re.M), strategy
    doc = json.loads(
        _pipe("simulate", "spot", "--model", "llama-3.1-8b", "--tokens", "2e10", "--gpus", "8", "--runs", "5",
              "-f", "json")
    )  # fmt: skip
    for o in doc["result"]["outcomes"]:
        v = o["expected_cost_usd"]
        assert (f"${v:,.0f}" if v >= 1000 else f"${v:,.2f}") in text


def test_simulate_spot_layout_status_whole_in_a_pipe() -> None:
    """The layout search's status and best-strategy words were folded to "ski/ppe/d" and "mee/ts" at 80
    columns; they stay whole, one word per row."""
    text = _pipe(
        "simulate",
        "spot",
        "--model",
        "llama-3.1-8b",
        "--tokens",
        "2e10",
        "--deadline-hours",
        "72",
        "--runs",
        "5",
    )
    _lines_fit(text)
    layouts = text.split("Layouts searched", 1)[1]
    assert re.search(r"^ ?1 +- skipped ", layouts, re.M), layouts
    assert re.search(r"^ ?16 +2 meets +spot ", layouts, re.M), layouts


def test_recommend_candidates_in_a_pipe_keep_money_whole() -> None:
    """The compact candidate table at 80 columns: its Cost column kept every line unwrapped and squeezed the
    Option column to 5 characters ("lambd/a gpu_8/x_b20"); now the cost cell wraps between words and never
    inside a money figure, and the option's words stay readable."""
    args = ("recommend", "--model", "llama-3.1-8b", "--task", "full_finetune", "--tokens", "2e9",
            "--top", "3")  # fmt: skip
    text = _pipe(*args)
    _lines_fit(text)
    table = text.split("Top candidates", 1)[1]
    doc = json.loads(_pipe(*args, "-f", "json"))
    for c in doc["result"]["ranked"]:
        v = c["cost_usd_per_month"]
        assert (f"${v:,.0f}" if v >= 1000 else f"${v:,.2f}") + "/month" in table, v
        assert c["provider"] in table, c["provider"]


def test_a_table_too_wide_for_80_columns_is_stacked_with_every_cell_whole() -> None:
    """The plan's placements at 80 columns folded region and instance words ("northc/entral/us",
    "Standard_NC4/as_T4_v3") into 4-letter columns; a table that would break a word is printed as one block
    per row with ``Header: value`` pairs, and the same table on a wide console stays a table."""
    headers = list(LINE_COLUMNS)
    rows = [
        ["dev", "research", "azure", "northcentralus", "Standard_NC4as_T4_v3", "T4", "spot", "1", "176",
         "$28.84"],
        ["staging", "platform", "cudo", "us-newyork-1", "intel-broadwell-v100_1x4v8gb", "V100-SXM2-16GB",
         "on_demand", "1", "88", "$20.24"],
    ]  # fmt: skip

    def render(width: int) -> str:
        buf = io.StringIO()
        Console(file=buf, width=width, color_system=None).print(whole_table(headers, rows, status=("Pay",)))
        return buf.getvalue()

    narrow = render(80)
    _lines_fit(narrow)
    for r in rows:
        for h, cell in zip(headers, r, strict=True):
            assert f"{h}: {cell}" in narrow, (h, cell)
    wide = render(200)
    assert "Region: " not in wide and re.search(r"^ *dev +research +azure +northcentralus ", wide, re.M), wide
