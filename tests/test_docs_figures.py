"""The headline figures README.md and docs/*.md quote are what the shipped commands give today.

Users read the docs as the product's promise ("a label is a contract"), so each figure here is produced by
running its command in process (typer's CliRunner, or the library call the benchmark quotes) on the shipped
examples and built-in data, formatted as the doc prints it, and must appear in the doc: a change that moves
the number fails this test until the doc is updated (the README and docs/fleet.md quoted the MIG example at
$5,543/month long after the plan gave $6,650). Pinned: the plan totals and levers of the three example
fleets, the basic_demos scenarios' picks and savings, every row of the README's top-picks table
(tools/top_picks.py's own row format), the autoscaling-vs-static-peak figures of the Azure trace, the
telemetry worked example and the accuracy quoted outside the regenerated table. Runs in
~15-25 s on two shared cores.
"""

from __future__ import annotations

import importlib.util
import json
import re
import runpy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FLEET_MD = ROOT / "docs" / "fleet.md"
SCENARIOS_MD = ROOT / "docs" / "scenarios.md"
EXAMPLES = ROOT / "examples" / "fleets"
AZURE = ROOT / "tests" / "data" / "traces" / "azure-llm-inference-2023" / "AzureLLMInferenceTrace_conv.csv"


@pytest.fixture(scope="module", autouse=True)
def _shipped_data_only(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The shipped catalog only: prices a `gpufleet catalog update` left in the user's data dir would move
    the figures (the docs quote the shipped snapshot)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPUFLEET_DATA_DIR", str(tmp_path_factory.mktemp("gpufleet-data")))
        yield


def _text(path: Path) -> str:
    """The document with its line breaks and runs of spaces read as one space (figures wrap across lines)."""
    return " ".join(path.read_text(encoding="utf-8").split())


def _states(path: Path, *figures: str) -> None:
    text = _text(path)
    missing = [f for f in figures if " ".join(f.split()) not in text]
    assert not missing, f"{path.relative_to(ROOT)} does not state {missing} (what the command gives today)"


def _usd(x: float) -> str:
    return f"${x:,.0f}"


def _run_json(*argv: str) -> dict[str, Any]:
    r = CliRunner().invoke(app, [*argv, "--format", "json"])
    assert r.exit_code == 0, r.output[-800:]
    doc: dict[str, Any] = json.loads(r.stdout)
    return doc["result"]  # type: ignore[no-any-return]


def _levers(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {lv["name"]: lv for lv in plan["levers"]}


def _today(plan: dict[str, Any]) -> float:
    return float(plan["levers"][0]["usd_per_month_before"])


# ---- gpufleet plan on the example fleets -------------------------------------------------------------------
def test_assessment_platform_plan_figures() -> None:
    """README "Fleet planning": `make demo`'s plan, its total and the waterfall's levers."""
    plan = _run_json("plan", str(EXAMPLES / "assessment-platform.yaml"))
    assert plan["status"] == "optimal"
    lv = _levers(plan)
    right = lv["right-size"]["savings_pct"]
    _states(
        README,
        f"**{_usd(_today(plan))}/month today → {_usd(plan['cost_usd_per_month'])}/month, proven optimal**",
        f"right-size {'−' if right < 0 else ''}{abs(right):.1f} %",
        f"region moves {lv['region moves']['savings_pct']:.0f} %",
        f"spot {lv['spot']['savings_pct']:.0f} %",
        f"commitments {lv['commitments']['savings_pct']:.0f} %",
    )
    _states(FLEET_MD, f"{_usd(plan['cost_usd_per_month'])}/month in all")


def test_mig_inference_plan_figures() -> None:
    """README and docs/fleet.md: the MIG example's total, its GPU sharing lever and the pool it packs."""
    plan = _run_json("plan", str(EXAMPLES / "mig-inference.yaml"))
    assert plan["status"] == "optimal"
    share = _levers(plan)["GPU sharing"]
    today, after = _usd(_today(plan)), _usd(plan["cost_usd_per_month"])
    _states(
        README,
        f"{_usd(share['savings_usd_per_month'])}/month, {share['savings_pct']:.1f} %; "
        f"{today} → {after}/month in all",
    )
    _states(
        FLEET_MD,
        f"{today}/month today -> {after}/month, optimal; GPU sharing saves "
        f"{_usd(share['savings_usd_per_month'])}/month ({share['savings_pct']:.1f} % of today)",
    )
    (pool,) = plan["pools"]
    ((layout, gpus),) = pool["layouts"]
    assert pool["gpu"] == "A100-SXM-80GB" and pool["nodes"] == 2 and gpus == 2
    tenants = {name for name, _profile, _n in pool["slices"]}
    services = {ln["workload"] for ln in plan["lines"]}
    words = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
    _states(
        README,
        f"packs {words[len(tenants)]} of {words[len(services)]} services onto {words[gpus]} "
        "shared A100 80GB GPUs",
    )
    _states(
        FLEET_MD,
        f"{pool['instance_type']} x {pool['nodes']} in {pool['region']}",
        "each GPU " + " + ".join(f"{n} x {profile}" for profile, n in layout),
    )


def test_multicloud_plan_total() -> None:
    """docs/fleet.md: the multicloud example's plan after production HA over two regions."""
    plan = _run_json("plan", str(EXAMPLES / "multicloud.yaml"))
    assert plan["status"] == "optimal"
    _states(FLEET_MD, f"-> {_usd(plan['cost_usd_per_month'])}/month for the plan")


# ---- gpufleet scenarios run-set basic_demos ----------------------------------------------------------------
def test_basic_demos_scenario_figures() -> None:
    """docs/scenarios.md: each basic_demos scenario's pick, its cost and the saving against today's p5."""
    result = _run_json("scenarios", "run-set", "basic_demos")
    by_name = {r["name"]: r for r in result["results"]}

    small = by_name["inference_small_p5"]["migration"]
    best = small["recommended"]
    assert best["instance_type"] == "gpu_1x_gh200" and best["total_nodes"] == 2
    _states(
        SCENARIOS_MD,
        f"two 1 x GH200 `{best['instance_type']}` nodes on Lambda in {best['region']}",
        f"(TP {best['tp']}, {_usd(small['new_cost_usd_per_month'])}/month, "
        f"−{small['savings_pct']:.0f} % against the p5.4xlarge's {_usd(small['current_cost_usd_per_month'])}",
    )

    ft = by_name["fine_tuning_medium_p5"]["migration"]
    best = ft["recommended"]
    _states(
        SCENARIOS_MD,
        f"one Lambda `{best['instance_type']}` ({best['total_gpus']} x {best['gpu']}, TP {best['tp']} x DP "
        f"{best['dp']})",
        f"{_usd(ft['new_cost_usd_per_month'])} per run against the p5.48xlarge's",
        f"{_usd(ft['current_cost_usd_per_month'])} (−{ft['savings_pct']:.0f} %",
    )
    hours = re.search(r"Per run: (\d+) h -> (\d+) h", ft["verdict"])
    assert hours, ft["verdict"]
    _states(SCENARIOS_MD, f"{hours.group(2)} h and", f"p5.48xlarge's {hours.group(1)} h and")


# ---- README's top picks (rows as tools/top_picks.py writes them) -------------------------------------------
def _top_picks_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("top_picks_for_docs_test", ROOT / "tools" / "top_picks.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_readme_top_picks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every row of the README's top-picks table is tools/top_picks.py's row today, run in process (~5 s)."""
    mod = _top_picks_module()
    runner = CliRunner()

    def run_in_process(cmd: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        r = runner.invoke(app, cmd[1:])
        return subprocess.CompletedProcess(cmd, r.exit_code, r.stdout, "")

    monkeypatch.setattr(mod.subprocess, "run", run_in_process)
    workloads = dict(mod.WORKLOADS)
    readme = README.read_text(encoding="utf-8")
    assert len(workloads) >= 12
    stale = []
    for label, args in workloads.items():
        row = f"| {label} {mod._pick(args)}"
        if row not in readme:
            stale.append(row)
    assert not stale, "README top picks differ from tools/top_picks.py's rows today:\n" + "\n".join(stale)


# ---- README "Simulations": autoscaling vs static peak on the Azure trace -----------------------------------
def test_readme_autoscaling_vs_static_peak() -> None:
    """The README's static peak and best autoscaler on the Azure hour (benchmarks/bench_simulate.py's
    comparison, deterministic: the trace is replayed as recorded, seed 0)."""
    from gpufleet.simulate.autoscale import deployment_for, simulate_autoscale, static_peak
    from gpufleet.simulate.policies import make_policy
    from gpufleet.simulate.traces import read_trace

    trace = read_trace(AZURE)
    dep = deployment_for(trace, model="llama-3.1-8b", gpu="l4")
    peak = static_peak(trace, dep, slo_ttft_s=2.0, kv_mode="paged")
    best = simulate_autoscale(
        trace,
        dep,
        make_policy("kpa", target_concurrency=14),
        min_replicas=6,
        slo_ttft_s=2.0,
        compare_static_peak=False,
        kv_mode="paged",
    )
    assert best.meets_slo
    more = best.cost_usd / peak.cost_usd - 1
    _states(
        README,
        f"({len(trace):,} requests in one hour",
        f"is {peak.replicas} replicas (${peak.cost_usd:.2f} for the hour, p95 TTFT {peak.ttft_p95_s:.2f} s)",
        f"KPA, target 14, min 6: ${best.cost_usd:.2f} ({best.replica_hours:.2f} replica-hours), i.e. "
        f"**{more:.0%} more** than static peak".replace("%", " %"),
    )


# ---- the accuracy the README's introduction, "Limits" and docs/recommend.md quote -------------------------
def _pct_pair(cell: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+) % / (\d+) %", cell.strip())
    assert m, cell
    return int(m.group(1)), int(m.group(2))


def test_accuracy_quotes_follow_the_accuracy_table() -> None:
    """`make validate-table` regenerates README "Accuracy"; the figures quoted from its "origin" table
    elsewhere (cases counted, published-case errors held out) must be that table's."""
    rows = {}
    for line in README.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] in ("published", "measured here (benchmarks/ probes)") and len(cells) == 10:
            rows[cells[0]] = cells
    published, ours = rows["published"], rows["measured here (benchmarks/ probes)"]
    n_pub, n_ours = int(published[1]), int(ours[1])
    loo = _pct_pair(published[3])
    groups = [_pct_pair(c) for c in published[4:8]]
    worst = _pct_pair(published[8])
    medians, p90s = sorted(g[0] for g in groups), sorted(g[1] for g in groups)
    held = f"{medians[0]}-{medians[-1]} % median and {p90s[0]}-{p90s[-1]} % at p90"
    _states(
        README,
        f"on {n_pub} published measurements",
        f"and {n_ours} of its own on an H200",
        f"On the {n_pub} published cases, held out by whole groups the error is {held}",
        f"leave-one-out {loo[0]} % / {loo[1]} %; "
        f"the worst of the four groupings per case {worst[0]} % / {worst[1]} %",
        f"{published[9]} within 2x at the worst held-out fit",
    )
    _states(
        ROOT / "docs" / "recommend.md",
        f"{loo[0]} % leave-one-out over the {n_pub} published calibration cases and "
        f"{medians[0]}-{medians[-1]} % held out by whole groups",
    )


# ---- README "Telemetry right-sizing": the worked example on the seeded example fleet ----------------------
def test_readme_telemetry_worked_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's console excerpt: tools/make_telemetry_example.py (seed 1, 3 days) ingested and analysed
    as shown; the summary lines and savings per finding are the command's."""
    argv = sys.argv
    try:
        sys.argv = ["make_telemetry_example.py", str(tmp_path / "ex")]
        runpy.run_path(str(ROOT / "tools" / "make_telemetry_example.py"), run_name="__main__")
    finally:
        sys.argv = argv
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GPUFLEET_DATA_DIR", str(tmp_path / "data"))
    runner = CliRunner()
    ingest = runner.invoke(app, ["telemetry", "ingest", "ex/dcgm.prom", "--store", "fleet"])
    assert ingest.exit_code == 0, ingest.output
    smi = ["telemetry", "ingest", "ex/node-smi.csv", "--timezone", "Europe/Berlin", "--host", "node-smi"]
    assert runner.invoke(app, [*smi, "--store", "fleet"]).exit_code == 0
    findings = runner.invoke(
        app,
        [
            "telemetry",
            "findings",
            "--store",
            "fleet",
            "--inventory",
            "ex/inventory.yaml",
            "--format",
            "markdown",
        ],
    )
    assert findings.exit_code == 0, findings.output
    read = re.search(
        r"Read [\d,]+ records from 1 source\(s\); stored [\d,]+ samples of \d+ GPU\(s\)", ingest.output
    )
    assert read, ingest.output
    gpus = re.search(r"- GPUs: .*", findings.stdout)
    cost = re.search(r"(\$[\d,]+/month) at this rate", findings.stdout)
    savings = re.search(
        r"- Savings \(best option per GPU, on-demand basis\): (\$[\d,]+/month \(\d+% of cost\))",
        findings.stdout,
    )
    by_kind = dict(re.findall(r"^\| (Idle|Overprovisioned) \| (\d+ \| \$[\d,]+) \|$", findings.stdout, re.M))
    assert gpus and cost and savings and len(by_kind) == 2, findings.stdout[:2000]
    _states(
        README,
        read.group(0),
        gpus.group(0),
        f"- Cost: {cost.group(1)} at this rate; savings (best option per GPU): {savings.group(1)}",
        "(Idle {}; Overprovisioned {}; ...)".format(
            *(by_kind[k].replace(" | ", ": ") for k in ("Idle", "Overprovisioned"))
        ),
    )
