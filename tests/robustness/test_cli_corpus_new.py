"""The bad-input corpus for the telemetry, simulate and fleet commands (issue 12; same rules as
``test_cli_corpus.py``): exit 2, one clear message with its key words, no traceback, a 10 s alarm per case.

Placeholders in argv: ``{f}`` the bad file of the case, ``{trace}``/``{jobs}``/``{sweep}``/``{fleet}``/
``{wl}``/``{smi}`` small valid inputs, ``{store}`` a telemetry store holding two GPUs of samples,
``{empty}`` an empty store.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_cli_corpus import BINARY, DIR, FIFO, LATIN1, MISSING, UTF16_NO_BOM, _check, _materialise
from typer.testing import CliRunner

from gpufleet.cli.app import app

EMPTY = b""
TRACE = b"timestamp_s,input_tokens,output_tokens\n" + b"".join(
    f"{k * 0.5:.1f},{200 + 13 * k},{40 + k}\n".encode() for k in range(40)
)
JOBS = (
    b"job_id,submit_s,gpus,duration_s,priority,deadline_s,preemptible,team\n"
    b"j1,0,8,7200,1,,false,research\nj2,60,1,3600,0,,true,prod\n"
)
SWEEP = b"kind: batch\nbase:\n  jobs: jobs.csv\ngrid:\n  policy: [fifo, easy]\nseeds: [0]\n"
FLEETFILE = (
    b"name: t\nworkloads:\n  chat:\n    workload: {model: llama-3.1-8b, target_requests_per_s: 2}\n"
    b"    demand: {schedule: '24/7'}\n    providers: [lambda]\n"
)
WL = b"name: w\nmodel: llama-3-8b\ntask: inference\ninput_len_tokens: 512\noutput_len_tokens: 128\n"
T0_MS = 1_780_000_200_000
EXPO = "\n".join(
    f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",UUID="GPU-{g}",Hostname="node-a"}} {50 * g} {T0_MS + 60_000 * k}'
    for k in range(30)
    for g in (0, 1)
).encode()

# ---- file-reading commands: (id, argv with {f}, file suffix) ----------------------------------------------
FILE_COMMANDS: list[tuple[str, list[str], str]] = [
    ("telemetry-ingest", ["telemetry", "ingest", "{f}", "--store", "{empty}"], ".prom"),
    (
        "telemetry-ingest-smi",
        [
            "telemetry",
            "ingest",
            "{f}",
            "--store",
            "{empty}",
            "--input-format",
            "nvidia-smi",
            "--timezone",
            "UTC",
        ],
        ".csv",
    ),
    (
        "telemetry-findings-inventory",
        ["telemetry", "findings", "--store", "{store}", "--inventory", "{f}"],
        ".yaml",
    ),
    (
        "telemetry-report-inventory",
        ["telemetry", "report", "--store", "{store}", "--inventory", "{f}"],
        ".yaml",
    ),
    ("telemetry-alerts-rules", ["telemetry", "alerts", "--store", "{store}", "--rules", "{f}"], ".yaml"),
    ("simulate-autoscale-trace", ["simulate", "autoscale", "{f}", "--gpu", "l4"], ".csv"),
    ("simulate-autoscale-workload", ["simulate", "autoscale", "{trace}", "--workload", "{f}"], ".yaml"),
    ("simulate-batch-jobs", ["simulate", "batch", "{f}"], ".csv"),
    ("simulate-batch-fleet", ["simulate", "batch", "{jobs}", "--fleet", "{f}"], ".yaml"),
    ("simulate-sweep-spec", ["simulate", "sweep", "{f}", "--workers", "1"], ".yaml"),
    (
        "simulate-spot-interruptions",
        ["simulate", "spot", "--model", "llama-3-8b", "--tokens", "1e9", "--interruptions", "{f}"],
        ".json",
    ),
    ("plan-fleet", ["plan", "{f}"], ".yaml"),
    ("regions-workload", ["regions", "{f}"], ".yaml"),
]
BAD_CONTENTS: list[tuple[str, bytes | str, list[str]]] = [
    ("latin1", LATIN1, ["not UTF-8", "Latin-1"]),
    ("utf16-no-bom", UTF16_NO_BOM, ["UTF-16"]),
    ("binary", BINARY, ["binary"]),
    ("fifo", FIFO, ["FIFO"]),
    ("directory", DIR, ["directory"]),
    ("missing", MISSING, ["does not exist"]),
    ("empty", EMPTY, ["empty"]),
]
# an empty file is reported by what it lacks
_EMPTY_WORDS = {
    "telemetry-ingest": ["first line", "--input-format"],
    "telemetry-findings-inventory": ["hosts:"],
    "telemetry-report-inventory": ["hosts:"],
    "telemetry-alerts-rules": ["rules:"],
    "simulate-autoscale-workload": ["mapping"],
    "simulate-sweep-spec": ["kind"],
    "simulate-spot-interruptions": ["not valid JSON"],
    "regions-workload": ["mapping"],
}
FILE_CASES = [
    pytest.param(
        argv, suffix, content, _EMPTY_WORDS.get(cid, words) if bid == "empty" else words, id=f"{cid}:{bid}"
    )
    for cid, argv, suffix in FILE_COMMANDS
    for bid, content, words in BAD_CONTENTS
]

SA = ["simulate", "autoscale", "{trace}", "--gpu", "l4"]
SP = ["simulate", "spot", "--model", "llama-3-8b"]
SPT = [*SP, "--tokens", "1e9"]
SB = ["simulate", "batch", "{jobs}"]
SW = ["simulate", "sweep", "{sweep}"]
TF = ["telemetry", "findings", "--store", "{store}"]
TR = ["telemetry", "report", "--store", "{store}"]
TA = ["telemetry", "alerts", "--store", "{store}"]
P = ["plan", "{fleet}"]
R = ["regions", "--model", "llama-3-8b"]
ARGV: list[tuple[list[str], list[str]]] = [
    # simulate autoscale
    ([*SA, "--min-replicas", "-1"], ["--min-replicas"]),
    ([*SA, "--max-replicas", "0"], ["--max-replicas"]),
    ([*SA, "--max-replicas", "99999999999"], ["--max-replicas", "maximum"]),
    ([*SA, "--min-replicas", "8", "--max-replicas", "2"], ["min", "max"]),
    ([*SA, "--spot-share", "1.5"], ["--spot-share"]),
    ([*SA, "--spot-share", "nan"], ["--spot-share"]),
    ([*SA, "--rate", "inf"], ["--rate"]),
    ([*SA, "--rate", "-2"], ["rate factor", "> 0"]),
    ([*SA, "--rate", "0"], ["rate factor", "> 0"]),
    ([*SA, "--slo-ttft", "nan"], ["--slo-ttft"]),
    ([*SA, "--slo-tpot", "-1"], ["--slo-tpot"]),
    ([*SA, "--cold-start", "-5"], ["cold"]),
    ([*SA, "--cold-start", "inf"], ["cold"]),
    ([*SA, "--policy", "kpaa"], ["kpaa", "kpa"]),
    ([*SA, "--param", "bogus=3"], ["bogus"]),
    ([*SA, "--param", "nonsense"], ["NAME=VALUE"]),
    ([*SA, "--trace-format", "azurr"], ["azurr"]),
    ([*SA, "--seed", "-1"], ["--seed"]),
    ([*SA, "--precision", "fp7"], ["fp7"]),
    ([*SA, "--gpus-per-replica", "0"], ["--gpus-per-replica"]),
    ([*SA, "--format", "pdf"], ["pdf"]),
    (["simulate", "autoscale", "{trace}", "--model", "llama-3-8bb", "--gpu", "l4"], ["llama-3-8b"]),
    (["simulate", "autoscale", "{trace}", "--gpu", "h1000"], ["h1000"]),
    # simulate spot
    ([*SP, "--tokens", "nan"], ["--tokens"]),
    ([*SP, "--tokens", "inf"], ["--tokens"]),
    ([*SP, "--tokens", "-1e10"], ["--tokens"]),
    ([*SP, "--tokens", "0"], ["--tokens"]),
    ([*SP, "--tokens", "1e30"], ["--tokens", "maximum"]),
    ([*SPT, "--gpus", "0"], ["--gpus"]),
    ([*SPT, "--gpus", "1099511627776"], ["--gpus", "maximum"]),
    ([*SPT, "--runs", "0"], ["--runs"]),
    ([*SPT, "--runs", "1000000000"], ["--runs", "maximum"]),
    ([*SPT, "--deadline-hours", "-1"], ["--deadline-hours"]),
    ([*SPT, "--deadline-hours", "nan"], ["--deadline-hours"]),
    ([*SPT, "--checkpoint-hours", "0"], ["checkpoint"]),
    ([*SPT, "--checkpoint-hours", "1e-12"], ["checkpoint"]),
    ([*SPT, "--gpu", "h1000"], ["h1000"]),
    ([*SPT, "--provider", "awz"], ["awz"]),
    ([*SPT, "--seed", "-3"], ["--seed"]),
    (["simulate", "spot", "--model", "llama-3-8bb", "--tokens", "1e9"], ["llama-3-8b"]),
    # simulate batch / sweep
    ([*SB, "--policy", "fifoo"], ["fifoo"]),
    ([*SB, "--jobs-format", "pai2"], ["pai2"]),
    ([*SB, "--seed", "-1"], ["--seed"]),
    ([*SW, "--engine", "rayy"], ["rayy"]),
    ([*SW, "--workers", "0"], ["--workers"]),
    ([*SW, "--workers", "-3"], ["--workers"]),
    ([*SW, "--seed", "-1"], ["seeds", "integers >= 0"]),
    # telemetry
    ([*TF, "--lookback", "0"], ["--lookback"]),
    ([*TF, "--lookback", "-1"], ["--lookback"]),
    ([*TF, "--lookback", "nan"], ["--lookback"]),
    ([*TF, "--lookback", "inf"], ["--lookback"]),
    ([*TF, "--lookback", "1e300"], ["--lookback"]),
    ([*TF, "--percentile", "0.2"], ["--percentile"]),
    ([*TF, "--percentile", "1.5"], ["--percentile"]),
    ([*TF, "--percentile", "nan"], ["--percentile"]),
    ([*TF, "--headroom", "-1"], ["--headroom"]),
    ([*TF, "--headroom", "nan"], ["--headroom"]),
    ([*TF, "--end", "yesterday"], ["--end"]),
    ([*TF, "--format", "pdf"], ["pdf"]),
    ([*TR, "--lookback", "nan"], ["--lookback"]),
    ([*TR, "--percentile", "2"], ["--percentile"]),
    ([*TA, "--step", "0s"], ["--step"]),
    ([*TA, "--step", "abc"], ["--step"]),
    ([*TA, "--step", "-5s"], ["--step"]),
    ([*TA, "--lookback", "-2"], ["--lookback"]),
    ([*TA, "--export", "grafana"], ["grafana"]),
    (["telemetry", "findings", "--store", "{empty}"], ["empty"]),
    (["telemetry", "ingest", "--store", "{empty}"], ["telemetry files", "--prometheus"]),
    (["telemetry", "ingest", "{trace}", "--store", "{empty}", "--input-format", "csvv"], ["csvv"]),
    (
        [
            "telemetry",
            "ingest",
            "{smi}",
            "--store",
            "{empty}",
            "--input-format",
            "nvidia-smi",
            "--timezone",
            "Mars/X",
        ],
        ["Mars/X"],
    ),
    # plan
    ([*P, "--time-limit", "0"], ["--time-limit"]),
    ([*P, "--time-limit", "nan"], ["--time-limit"]),
    ([*P, "--gap", "2"], ["--gap"]),
    ([*P, "--gap", "nan"], ["--gap"]),
    ([*P, "--format", "pdf"], ["pdf"]),
    ([*P, "--period", "2026-13"], ["period"]),
    ([*P, "--period", "abc"], ["period"]),
    # regions
    ([*R, "--user-lat", "91", "--user-lon", "0"], ["latitude"]),
    ([*R, "--user-lat", "nan", "--user-lon", "0"], ["lat"]),
    ([*R, "--user-lat", "10"], ["both"]),
    ([*R, "--data-provider", "aws"], ["both"]),
    ([*R, "--data-gib", "-1"], ["data"]),
    ([*R, "--data-gib", "nan"], ["data"]),
    ([*R, "--serving-gib", "inf"], ["serving"]),
    ([*R, "--bandwidth-gbps", "0"], ["bandwidth"]),
    ([*R, "--limit", "0"], ["--limit"]),
    ([*R, "--provider", "awz"], ["awz"]),
    ([*R, "--concurrency", "0"], ["--concurrency"]),
    ([*R, "--tokens", "1e12"], ["inference workload"]),
    (["regions", "--model", "llama-3-8bb"], ["llama-3-8b"]),
]
ARGV_CASES = [
    pytest.param(argv, words, id=f"{i}:{' '.join(argv)[:60]}") for i, (argv, words) in enumerate(ARGV)
]

# ---- well-formed files with wrong contents --------------------------------------------------------------
CONTENT: list[tuple[list[str], str, bytes, list[str]]] = [
    (["simulate", "batch", "{f}"], ".csv", JOBS.replace(b"j2,60,1,", b"j2,60,0,"), ["gpus"]),
    (["simulate", "batch", "{f}"], ".csv", JOBS.replace(b"j2,60,", b"j2,nan,"), ["submit_s"]),
    (["simulate", "batch", "{f}"], ".csv", JOBS.replace(b",true,", b",maybe,"), ["preemptible"]),
    (["simulate", "batch", "{f}"], ".csv", JOBS.replace(b"team\n", b"team,color\n", 1), ["color"]),
    (["simulate", "batch", "{f}"], ".csv", JOBS + b"j3,0,1,60\n", ["line"]),
    (
        ["simulate", "batch", "{jobs}", "--fleet", "{f}"],
        ".yaml",
        b"pools:\n  - {gpu: h1000, nodes: 1, kind: on_demand}\n",
        ["h1000"],
    ),
    (
        ["simulate", "batch", "{jobs}", "--fleet", "{f}"],
        ".yaml",
        b"pools:\n  - {gpu: h100, nodes: -1, kind: on_demand}\n",
        ["nodes"],
    ),
    (["simulate", "batch", "{jobs}", "--fleet", "{f}"], ".yaml", b"pools: 3\n", ["pools"]),
    (
        ["simulate", "batch", "{jobs}", "--fleet", "{f}"],
        ".yaml",
        b"pools:\n  - {gpu: h100, nodes: 1, kind: cheap}\n",
        ["kind"],
    ),
    (["simulate", "autoscale", "{f}", "--gpu", "l4"], ".csv", TRACE + b"1.0,5,5\n", ["sorted"]),
    (["simulate", "autoscale", "{f}", "--gpu", "l4"], ".csv", TRACE + b"100,nan,5\n", ["finite"]),
    (["simulate", "autoscale", "{f}", "--gpu", "l4"], ".csv", TRACE + b"1e9,5,5\n", ["days"]),
    (["simulate", "autoscale", "{f}", "--gpu", "l4"], ".csv", b"time,a,b\n1,2,3\n", ["columns"]),
    (["simulate", "sweep", "{f}"], ".yaml", b"kind: magic\n", ["kind"]),
    (["simulate", "sweep", "{f}"], ".yaml", SWEEP.replace(b"policy:", b"colour:"), ["colour"]),
    (["simulate", "sweep", "{f}"], ".yaml", SWEEP.replace(b"[0]", b"[-1]"), ["seeds"]),
    (["simulate", "sweep", "{f}"], ".yaml", SWEEP.replace(b"[fifo, easy]", b"[]"), ["grid"]),
    (["plan", "{f}"], ".yaml", b"name: t\nworkloads: {}\n", ["workloads"]),
    (["plan", "{f}"], ".yaml", FLEETFILE.replace(b"llama-3.1-8b", b"llama-3-8bb"), ["llama-3-8bb"]),
    (["plan", "{f}"], ".yaml", FLEETFILE.replace(b"[lambda]", b"[awz]"), ["awz"]),
    (["plan", "{f}"], ".yaml", FLEETFILE.replace(b"requests_per_s: 2", b"requests_per_s: .nan"), ["finite"]),
    (["plan", "{f}"], ".yaml", FLEETFILE.replace(b"'24/7'", b"'always'"), ["schedule"]),
    (["plan", "{f}"], ".yaml", FLEETFILE + b"workloads: {}\n", ["duplicate key"]),
    (["regions", "{f}"], ".yaml", WL + b"concurrency: .nan\n", ["finite"]),
    (["regions", "{f}"], ".yaml", WL + b"pricing: weekly\n", ["pricing"]),
    (["telemetry", "alerts", "--store", "{store}", "--rules", "{f}"], ".yaml", b"rules: {}\n", ["rules"]),
    (
        ["telemetry", "alerts", "--store", "{store}", "--rules", "{f}"],
        ".yaml",
        b"rules:\n  - name: x\n    metric: nope\n    threshold: 1\n",
        ["nope"],
    ),
]
CONTENT_CASES = [
    pytest.param(argv, suffix, content, words, id=f"content:{i}:{' '.join(argv)[:30]}")
    for i, (argv, suffix, content, words) in enumerate(CONTENT)
]

runner = CliRunner()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("inputs")
    files = {"trace": ("t.csv", TRACE), "jobs": ("jobs.csv", JOBS), "sweep": ("sweep.yaml", SWEEP)}
    files |= {"fleet": ("fleet.yaml", FLEETFILE), "wl": ("wl.yaml", WL), "expo": ("s.prom", EXPO)}
    files |= {
        "smi": (
            "node.csv",
            b"timestamp, index, uuid, utilization.gpu [%]\n2026/07/14 08:12:38.696, 0, G, 5 %\n",
        )
    }
    out = {}
    for key, (name, content) in files.items():
        (d / name).write_bytes(content)
        out[key] = str(d / name)
    store = d / "store"
    res = runner.invoke(app, ["telemetry", "ingest", out["expo"], "--store", str(store)])
    assert res.exit_code == 0, res.output
    out["store"] = str(store)
    return out


# isolation (own data dir, wide terminal) and the 10 s alarm: conftest.py `cli_case_guard`


def _subs(inputs: dict[str, str], tmp_path: Path, f: Path | None = None) -> dict[str, str]:
    subs = {**inputs, "empty": str(tmp_path / "empty-store")}
    if f is not None:
        subs["f"] = str(f)
    return subs


@pytest.mark.parametrize(("argv", "suffix", "content", "words"), FILE_CASES)
def test_bad_file(
    inputs: dict[str, str],
    tmp_path: Path,
    argv: list[str],
    suffix: str,
    content: bytes | str,
    words: list[str],
) -> None:
    _check(argv, words, _subs(inputs, tmp_path, _materialise(tmp_path, suffix, content)))


@pytest.mark.parametrize(("argv", "words"), ARGV_CASES)
def test_bad_argv(inputs: dict[str, str], tmp_path: Path, argv: list[str], words: list[str]) -> None:
    _check(argv, words, _subs(inputs, tmp_path))


@pytest.mark.parametrize(("argv", "suffix", "content", "words"), CONTENT_CASES)
def test_bad_content(
    inputs: dict[str, str], tmp_path: Path, argv: list[str], suffix: str, content: bytes, words: list[str]
) -> None:
    _check(argv, words, _subs(inputs, tmp_path, _materialise(tmp_path, suffix, content)))


def test_dev_paths(inputs: dict[str, str], tmp_path: Path) -> None:
    _check(["plan", "/dev/zero"], ["device"], _subs(inputs, tmp_path))
    _check(["simulate", "batch", "/dev/null"], ["device"], _subs(inputs, tmp_path))
    _check(["telemetry", "ingest", "/dev/zero", "--store", "{empty}"], ["device"], _subs(inputs, tmp_path))


def test_corpus_size() -> None:
    assert len(FILE_CASES) + len(ARGV_CASES) + len(CONTENT_CASES) >= 60


@pytest.fixture(autouse=True)
def _isolated(cli_case_guard: None) -> None:
    """Every case of this module runs under the shared guard."""
