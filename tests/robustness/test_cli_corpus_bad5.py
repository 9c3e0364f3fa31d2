"""Bad-input corpus, fifth pass (same rules and checker as ``test_cli_corpus.py``): every case exits 2 with a
message naming the field or option, no traceback, no hang (10 s alarm per case).

Each case here exited 0 with a silent or wrong answer, or 2 with a message that did not say what was wrong,
before the fix it tests:

- number options (every command, ``cli/finite.py``): Arabic-Indic and full-width digits were read as
  numbers (``--batch ٥`` ran with batch 5); units, decimal commas, exponents for whole numbers and blanks
  got click's bare "is not a valid int" (now: what is allowed and the fix);
- a single-value option given twice (``--model a --model b``): the last silently won;
- alert-rule files with unknown top-level keys (ignored), ``rules: []`` (accepted, nothing evaluated),
  ``RULES:``/``Pools:``/``HOSTS:`` reported as a missing list instead of named (``fileio.check_top_level``);
- CSVs separated by ``;`` or tabs and headers naming a column twice (cases, jobs, traces, nvidia-smi): the
  message listed one odd column (or "8 cells for 9 columns") without the cause; a short calibration row was
  reported as a pydantic dump;
- workload/fleet selector lists given empty (``providers: []``, ``gpus: []``): read as "no filter";
  fields next to ``workloads:``: ignored; ``input_len_tokens: 8:32``: YAML 1.1 base 60 (= 512);
  a misspelt ``current:`` block under ``recommend``: ignored;
- ``telemetry ingest --timezone/--host`` on files not read as nvidia-smi: ignored; ``--param`` values in
  Unicode digits (read as numbers) and fractional ``replicas`` (truncated);
- ``estimate matrix`` naming one model or GPU twice (repeated rows); an unknown region listed
  ``, CN, AS, , US, NA, ...`` (names holding commas, unquoted);
- library: ``read_fleet_file``, ``plan_fleet``, ``analyze_regions``, ``simulate_autoscale``,
  ``simulate_spot``, ``run_sweep`` and ``TelemetryStore`` raised TypeError/AttributeError on wrong argument
  types (now :class:`gpufleet.errors.InputError`).

``GOOD`` lists nearby valid inputs that must still exit 0.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from corpus_files import Content, materialise
from test_cli_corpus import CASES_HEADER, WORKLOAD, _check, runner
from test_cli_corpus_new import EXPO, JOBS, TRACE

import gpufleet
from gpufleet.cli.app import app
from gpufleet.errors import GpufleetError

ROOT = Path(__file__).parents[2]
DATA = ROOT / "tests" / "data"
MULTI = ROOT / "examples" / "fleets" / "multicloud.yaml"
SMALL_CASES = (DATA / "cases" / "small.csv").read_bytes()
SIM_FLEET = (DATA / "simulate" / "fleet.yaml").read_bytes()
SWEEP = DATA / "simulate" / "sweep.yaml"
SMI = (
    b"timestamp, index, uuid, name, memory.total [MiB], memory.used [MiB], utilization.gpu [%], "
    b"power.draw [W]\n"
    b"2026/07/14 08:12:38.696, 0, GPU-aaaa, NVIDIA H100 80GB HBM3, 81559 MiB, 100 MiB, 50 %, 69.85 W\n"
    b"2026/07/14 08:13:38.696, 0, GPU-aaaa, NVIDIA H100 80GB HBM3, 81559 MiB, 100 MiB, 60 %, 69.85 W\n"
)
RULE = b"rules:\n  - name: hot\n    metric: gpu_util_pct\n    op: '>'\n    threshold: 90\n    for: 10m\n"
INV = b"hosts:\n  - host: 'node-*'\n    provider: aws\n    instance_type: g5.xlarge\n    region: us-east-1\n"
POOL = b"  - {gpu: h100, gpus_per_node: 8, nodes: 4, kind: on_demand}\n"

# ---- 1. number options, every kind of command -------------------------------------------------------------
EI = ["estimate", "infer", "-m", "llama-3-8b", "-g", "h100"]
ET = ["estimate", "train", "-m", "llama-3-8b", "-g", "h100", "--tokens", "1e9"]
EM = ["estimate", "memory", "-m", "llama-3-8b", "-g", "h100"]
R = ["recommend", "--model", "llama-3-8b"]
INT_OPTIONS: list[list[str]] = [
    [*EI, "--batch"],
    [*EI, "--gpus"],
    [*EI, "--input-len"],
    [*ET, "--seq-len"],
    [*EM, "--tp"],
    [*R, "--concurrency"],
    [*R, "--max-nodes"],
    [*R, "--top"],  # an IntRange
    ["regions", "--model", "llama-3-8b", "--limit"],  # an IntRange
    ["catalog", "offers", "--limit"],
    ["simulate", "spot", "--model", "llama-3-8b", "--tokens", "1e9", "--runs"],
    ["simulate", "batch", str(DATA / "simulate" / "jobs.csv"), "--seed"],
]
# (value, words besides the option name)
INT_BAD: list[tuple[str, list[str]]] = [
    ("\u0665", ["non-ASCII", "ARABIC-INDIC DIGIT FIVE", "0-9"]),
    ("\uff15", ["non-ASCII", "FULLWIDTH DIGIT FIVE"]),
    ("\u096a", ["non-ASCII", "DEVANAGARI"]),
    ("5 GiB", ["'GiB'", "without a unit"]),
    ("10ms", ["'ms'", "unit"]),
    ("0,5", ["commas", "0.5"]),
    ("1,000", ["commas"]),
    ("1e3", ["whole number", "write it out as 1000"]),
    ("2.5", ["whole number", "no decimal point"]),
    ("", ["empty", "leave the option out"]),
    ("   ", ["empty"]),
    ("eight", ["whole number", "such as 8"]),
]
FLOAT_OPTIONS: list[list[str]] = [
    [*R, "--budget"],
    [*R, "--target-rps"],
    [*R, "--ttft-ms"],
    ["catalog", "offers", "--max-price"],
    ["estimate", "train", "-m", "llama-3-8b", "-g", "h100", "--tokens"],
    ["plan", str(MULTI), "--gap"],  # a FloatRange
    ["simulate", "autoscale", str(DATA / "simulate" / "jobs.csv"), "--gpu", "l4", "--cold-start"],
    ["regions", "--model", "llama-3-8b", "--data-gib"],
    ["simulate", "spot", "--model", "llama-3-8b", "--tokens", "1e9", "--checkpoint-hours"],
]
FLOAT_BAD: list[tuple[str, list[str]]] = [
    ("\u0663", ["non-ASCII", "ARABIC-INDIC DIGIT THREE"]),
    ("\uff11.\uff15", ["non-ASCII", "FULLWIDTH DIGIT ONE"]),
    ("5 GiB", ["'GiB'", "unit"]),
    ("2h", ["'h'", "unit"]),
    ("0,5", ["commas", "0.5, not 0,5"]),
    ("", ["empty"]),
    ("1.5.2", ["decimal number such as 2.5"]),
    ("$100", ["decimal number"]),
]
NUMBER_CASES = [
    pytest.param([*argv, value], [argv[-1], *words], id=f"{' '.join(argv[:2])} {argv[-1]}={value!r}")
    for options, bad in ((INT_OPTIONS, INT_BAD), (FLOAT_OPTIONS, FLOAT_BAD))
    for argv in options
    for value, words in bad
]


@pytest.mark.parametrize(("argv", "words"), NUMBER_CASES)
def test_bad5_number(argv: list[str], words: list[str]) -> None:
    _check(argv, words)


# ---- 2. a single-value option given twice ---------------------------------------------------------------
REPEATED: list[list[str]] = [
    [*R, "--model", "llama-3-70b"],
    ["recommend", "--model=llama-3-8b", "--model=llama-3-70b"],
    [*R, "--budget", "100", "--budget", "200"],
    [*EI, "--gpu", "a100"],
    [*EI, "-g", "a100"],
    [*EI, "--batch", "1", "--batch", "8"],
    [*ET, "--tokens", "2e9"],
    [*EM, "--precision", "fp8", "--precision", "bf16"],
    ["catalog", "offers", "--max-price", "3", "--max-price", "5"],
    ["catalog", "offers", "--limit", "3", "--limit=5"],
    ["regions", "--model", "llama-3-8b", "--data-gib", "1", "--data-gib", "2"],
    ["plan", str(MULTI), "--format", "json", "--format", "csv"],
    ["simulate", "spot", "--model", "llama-3-8b", "--tokens", "1e9", "--seed", "1", "--seed", "2"],
    [
        "migrate",
        "--model",
        "llama-3-8b",
        "--current-instance",
        "p5.48xlarge",
        "--current-instance",
        "g5.xlarge",
    ],
]


@pytest.mark.parametrize("argv", REPEATED, ids=[" ".join(a)[-50:] for a in REPEATED])
def test_bad5_repeated_option(argv: list[str]) -> None:
    opt = next(a for a in reversed(argv) if a.startswith("-")).split("=")[0]
    opt = {"-g": "--gpu"}.get(opt, opt)
    _check(argv, [opt, "given 2 times", "only the last"])


# ---- 3. files ---------------------------------------------------------------------------------------------
TA = ["telemetry", "alerts", "--store", "{store}", "--rules", "{r}"]
INVF = ["telemetry", "findings", "--store", "{store}", "--inventory", "{i}"]
SB = ["simulate", "batch", "{j}", "--fleet", "{f}"]
V = ["validate", "{c}"]
RW = ["recommend", "{w}", "--top", "1"]
P = ["plan", "{f}", "--no-savings"]
SA = ["simulate", "autoscale", "{t}", "--gpu", "l4"]
TI = ["telemetry", "ingest", "{t}", "--store", "{tmp}/st"]
FLEET = MULTI.read_bytes()
CC = ["config", "check", "{g}"]
GFO_GPU = json.loads((DATA / "gfo_guide" / "gpu_instances.json").read_bytes())
GFO_WL = json.loads((DATA / "gfo_guide" / "workloads.json").read_bytes())


def _gfo_gpu(**fields: object) -> bytes:
    doc = json.loads(json.dumps(GFO_GPU))
    doc["gpu_instances"]["P5"].update(fields)
    return json.dumps(doc).encode()


def _gfo_wl_set(ids: list[str]) -> bytes:
    doc = json.loads(json.dumps(GFO_WL))
    doc["workload_sets"]["basic_demos"] = ids
    return json.dumps(doc).encode()


SW = ["simulate", "sweep", "{s}", "--workers", "1"]
SWEEP_SPEC = b"kind: batch\nbase:\n  jobs: j.csv\ngrid:\n  policy: [fifo]\nseeds: [0]\n"
CASE_ROW = SMALL_CASES.split(b"\n")[1] + b"\n"
FILES: list[tuple[str, list[str], dict[str, Content], list[str]]] = [
    # alert rules: unknown keys were ignored, an empty list evaluated nothing, RULES: read as missing
    ("rules-unknown-key", TA, {"r.yaml": RULE + b"severity: high\n"}, ["unknown top-level key", "severity"]),
    ("rules-upper", TA, {"r.yaml": RULE.replace(b"rules:", b"RULES:")}, ["'RULES'", "did you mean 'rules'"]),
    ("rules-empty-list", TA, {"r.yaml": b"rules: []\n"}, ["no entries under 'rules:'"]),
    ("rules-int-key", TA, {"r.yaml": RULE + b"1: 2\n"}, ["unknown top-level key", "'1'"]),
    ("rules-null-key", TA, {"r.yaml": RULE + b"~: 2\n"}, ["unknown top-level key", "'None'"]),
    (
        "rules-top-list",
        TA,
        {"r.yaml": b"- name: hot\n"},
        ["must hold a mapping", "'rules:' (a list)", "list"],
    ),
    (
        "rules-json-extra",
        TA,
        {"r.json": b'{"rules": [{"name": "a", "metric": "gpu_util_pct", "threshold": 9}], "version": 2}'},
        ["'version'"],
    ),
    # inventories and batch fleets: a mis-cased list key is named with its fix
    ("inventory-upper", INVF, {"i.yaml": INV.replace(b"hosts:", b"HOSTS:")}, ["'HOSTS'", "'hosts'"]),
    ("inventory-wrong-key", INVF, {"i.yaml": INV.replace(b"hosts:", b"machines:")}, ["'machines'", "hosts"]),
    ("inventory-hosts-map", INVF, {"i.yaml": b"hosts: {a: 1}\n"}, ["non-empty list under 'hosts:'", "dict"]),
    (
        "batch-fleet-upper",
        SB,
        {"j.csv": JOBS, "f.yaml": b"Pools:\n" + POOL},
        ["'Pools'", "did you mean 'pools'"],
    ),
    ("batch-fleet-top-bool", SB, {"j.csv": JOBS, "f.yaml": b"true\n"}, ["must hold a mapping", "bool"]),
    ("batch-fleet-pools-empty", SB, {"j.csv": JOBS, "f.yaml": b"pools: []\n"}, ["no entries under 'pools:'"]),
    (
        "batch-fleet-extra",
        SB,
        {"j.csv": JOBS, "f.yaml": b"pools:\n" + POOL + b"queues: 3\n"},
        ["'queues'", "case-sensitive"],
    ),
    # CSVs separated by ; or tabs; columns named twice; short rows
    (
        "cases-semicolons",
        V,
        {"c.csv": SMALL_CASES.replace(b",", b";")},
        ["separated by semicolons", "commas"],
    ),
    ("cases-tabs", V, {"c.csv": SMALL_CASES.replace(b",", b"\t")}, ["separated by tabs"]),
    (
        "cases-dup-column",
        V,
        {"c.csv": CASES_HEADER.replace(b"\n", b",gpu\n") + CASE_ROW.replace(b"\n", b",x\n")},
        ["duplicate columns", "'gpu'"],
    ),
    ("cases-short-row", V, {"c.csv": CASES_HEADER + b"B1,ttft_ms\n"}, ["line 2", "2 cell(s)", "model"]),
    (
        "jobs-semicolons",
        ["simulate", "batch", "{j}"],
        {"j.csv": JOBS.replace(b",", b";")},
        ["separated by semicolons", "layout"],
    ),
    (
        "jobs-dup-column",
        ["simulate", "batch", "{j}"],
        {"j.csv": JOBS.replace(b"team\n", b"team,gpus\n", 1)},
        ["duplicate columns", "'gpus'"],
    ),
    ("trace-semicolons", SA, {"t.csv": TRACE.replace(b",", b";")}, ["separated by semicolons"]),
    ("trace-tabs", SA, {"t.csv": TRACE.replace(b",", b"\t")}, ["separated by tabs"]),
    (
        "trace-dup-column",
        SA,
        {"t.csv": b"timestamp_s,input_tokens,output_tokens,input_tokens\n0,1,1,1\n"},
        ["'input_tokens'", "more than once"],
    ),
    (
        "smi-semicolons",
        [*TI, "--input-format", "nvidia-smi", "--timezone", "UTC"],
        {"t.csv": SMI.replace(b",", b";")},
        ["separated by semicolons"],
    ),
    # selector lists given empty; fields beside 'workloads:'; base-60 numbers; the current: block
    ("workload-providers-empty", RW, {"w.yaml": WORKLOAD + b"providers: []\n"}, ["providers", "empty list"]),
    ("workload-gpus-empty", RW, {"w.yaml": WORKLOAD + b"gpus: []\n"}, ["gpus", "empty list"]),
    ("workload-geos-empty", RW, {"w.yaml": WORKLOAD + b"geos: []\n"}, ["geos", "empty list"]),
    (
        "workload-json-regions-empty",
        RW,
        {"w.json": b'{"model": "llama-3-8b", "regions": []}'},
        ["regions", "empty list"],
    ),
    (
        "workload-beside-workloads",
        RW,
        {"w.yaml": b"workloads:\n  a: {model: llama-3-8b}\nmodel: llama-3-70b\n"},
        ["'model' next to 'workloads:'"],
    ),
    (
        "workload-sexagesimal",
        RW,
        {"w.yaml": WORKLOAD.replace(b"512", b"8:32")},
        ["input_len_tokens", "'8:32'"],
    ),
    (
        "workload-sexagesimal-float",
        RW,
        {"w.yaml": WORKLOAD + b"budget_usd_per_month: 1:30.5\n"},
        ["budget_usd_per_month"],
    ),
    (
        "recommend-current-instance-typo",
        RW,
        {"w.yaml": WORKLOAD + b"current: {provider: aws, instance_type: p5.48xlargee, count: 1}\n"},
        ["p5.48xlargee", "p5.48xlarge"],
    ),
    (
        "recommend-current-region",
        RW,
        {"w.yaml": WORKLOAD + b"current: {provider: aws, instance_type: p5.48xlarge, region: mars-1}\n"},
        ["mars-1", "us-east-1"],
    ),
    (
        "recommend-current-provider",
        RW,
        {"w.yaml": WORKLOAD + b"current: {provider: awz, instance_type: p5.48xlarge}\n"},
        ["awz", "aws"],
    ),
    (
        "fleet-providers-empty",
        P,
        {"f.yaml": FLEET.replace(b"providers: [aws, gcp, azure]", b"providers: []")},
        ["workloads.rag", "providers", "empty list"],
    ),
    (
        "fleet-gpus-empty",
        P,
        {"f.yaml": FLEET.replace(b"gpus: [L4, A10G, T4]", b"gpus: []")},
        ["workloads.rag.resources", "gpus", "empty list"],
    ),
    # sweep specs: a mis-cased kind, an empty seed list (was read as [0]), unknown keys with suggestions
    (
        "sweep-kind-case",
        SW,
        {"s.yaml": SWEEP_SPEC.replace(b"kind: batch", b"kind: Batch"), "j.csv": JOBS},
        ["'Batch'", "did you mean 'batch'"],
    ),
    (
        "sweep-kind-key-case",
        SW,
        {"s.yaml": SWEEP_SPEC.replace(b"kind:", b"Kind:"), "j.csv": JOBS},
        ["'Kind'", "did you mean 'kind'"],
    ),
    (
        "sweep-seeds-empty",
        SW,
        {"s.yaml": SWEEP_SPEC.replace(b"seeds: [0]", b"seeds: []"), "j.csv": JOBS},
        ["seeds: []", "no run"],
    ),
    ("sweep-top-list", SW, {"s.yaml": b"- kind: batch\n"}, ["must hold a mapping", "a sequence"]),
    # a training workload given to autoscale was served as if it were inference
    (
        "autoscale-training-workload",
        ["simulate", "autoscale", "{t}", "--workload", "{w}"],
        {"t.csv": TRACE, "w.yaml": b"model: llama-3-8b\ntask: pretrain\ntrain_tokens: 1e9\n"},
        ["pretrain", "task: inference"],
    ),
    # a CSV given as a user catalog: "the top level is str"
    (
        "catalog-csv",
        ["catalog", "offers", "--catalog", "{c}"],
        {"c.csv": b"provider,region,instance_type,gpu,gpu_count\nonprem,dc,box,H100-SXM,8\n"},
        ["CSV or plain-text file", "mapping"],
    ),
    # bounded time: inputs that ran for minutes
    (
        "batch-queue-overloaded",
        ["simulate", "batch", "{j}"],
        {
            "j.csv": JOBS.split(b"\n")[0]
            + b"\n"
            + b"".join(b"j%d,0,1,3600,0,,false,r\n" % k for k in range(5_100))
        },
        ["5,001 jobs are waiting", "cannot keep up"],
    ),
    ("yaml-over-2-mib", RW, {"w.yaml": WORKLOAD + b"# padding\n" * 240_000}, ["MiB of YAML", "as JSON"]),
    (
        "rules-over-200",
        TA,
        {
            "r.json": json.dumps(
                {"rules": [{"name": f"r{k}", "metric": "gpu_util_pct", "threshold": 90} for k in range(201)]}
            ).encode()
        },
        ["201 rules", "at most 200"],
    ),
    # GPU Fleet Optimizer files: a memory that contradicts the GPU (ignored), empty sets and size maps
    (
        "gfo-memory-contradicts",
        CC,
        {"g.json": _gfo_gpu(gpu_memory_gb=8000)},
        ["gpu_memory_gb 8000", "H100-SXM"],
    ),
    ("gfo-memory-per-instance", CC, {"g.json": _gfo_gpu(gpu_memory_gb=640)}, ["not per instance"]),
    ("gfo-set-empty", CC, {"g.json": _gfo_wl_set([])}, ["basic_demos", "at least one"]),
    ("gfo-model-sizes-empty", CC, {"g.json": b'{"model_sizes": {}}'}, ["non-empty mapping of size classes"]),
    # links: a looping link given as a model config read "does not exist"; a dangling one names its target
    (
        "model-config-link-loop",
        ["estimate", "memory", "-m", "{loop}", "-g", "h100"],
        {"loop.json": lambda p: os.symlink(p, p)},
        ["symbolic links"],
    ),
    (
        "workload-dangling-link",
        RW,
        {"w.yaml": lambda p: os.symlink(p.parent / "gone.yaml", p)},
        ["symbolic link to", "gone.yaml"],
    ),
    # telemetry options a file's format ignores
    (
        "ingest-timezone-exposition",
        [*TI, "--timezone", "UTC"],
        {"t.prom": EXPO},
        ["--timezone", "exposition"],
    ),
    ("ingest-host-exposition", [*TI, "--host", "node-9"], {"t.prom": EXPO}, ["--host", "ignored"]),
    (
        "ingest-both-exposition",
        [*TI, "--host", "n", "--timezone", "UTC"],
        {"t.prom": EXPO},
        ["--host and --timezone apply"],
    ),
    # policy parameters
    (
        "param-arabic",
        [*SA, "--param", "target_concurrency=\u0665"],
        {"t.csv": TRACE},
        ["target_concurrency", "0-9"],
    ),
    (
        "param-unit",
        [*SA, "--param", "target_concurrency=5 req"],
        {"t.csv": TRACE},
        ["target_concurrency", "no unit"],
    ),
    (
        "param-replicas-fraction",
        [*SA, "--policy", "static", "--param", "replicas=2.7"],
        {"t.csv": TRACE},
        ["replicas=2.7", "whole number"],
    ),
    (
        "param-schedule-fullwidth",
        [*SA, "--policy", "scheduled", "--param", "schedule=0:\uff12"],
        {"t.csv": TRACE},
        ["schedule"],
    ),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("bad5")
    (d / "s.prom").write_bytes(EXPO)
    res = runner.invoke(app, ["telemetry", "ingest", str(d / "s.prom"), "--store", str(d / "store")])
    assert res.exit_code == 0, res.output
    return d / "store"


@pytest.mark.parametrize(("argv", "files", "words"), [pytest.param(a, f, w, id=i) for i, a, f, w in FILES])
def test_bad5_file(
    store: Path, tmp_path: Path, argv: list[str], files: dict[str, Content], words: list[str]
) -> None:
    _check(argv, words, {**materialise(tmp_path, files), "store": str(store)})


# ---- 4. argv contradictions and unknown names -------------------------------------------------------------
MX = ["estimate", "matrix", "--mode", "memory"]
ARGV: list[tuple[str, list[str], list[str]]] = [
    ("matrix-model-alias-twice", [*MX, "--models", "llama-3-8b,llama-3.1-8b", "--gpus", "h100"], ["twice"]),
    ("matrix-model-twice", [*MX, "--models", "llama-3-8b,llama-3-8b", "--gpus", "h100"], ["llama-3.1-8b"]),
    ("matrix-gpu-twice", [*MX, "--models", "llama-3-8b", "--gpus", "h100,H100-SXM"], ["--gpus", "H100-SXM"]),
    (
        "region-list-readable",
        [*R, "--provider", "aws", "--region", "mars-9"],
        ["mars-9", "us-east-1", "eu-west-1"],
    ),
]


@pytest.mark.parametrize(("argv", "words"), [pytest.param(a, w, id=i) for i, a, w in ARGV])
def test_bad5_argv(argv: list[str], words: list[str]) -> None:
    _check(argv, words)


def test_region_list_quotes_odd_names() -> None:
    """Region names holding commas are quoted in the list of known names (they read as separate names)."""
    from gpufleet.errors import UnknownNameError

    msg = str(UnknownNameError("region", "zzzzzz", ["Georgia, US, NA", "eu-west-1", ""]))
    assert "'Georgia, US, NA'" in msg and ", ," not in msg, msg


# ---- 5. the library: wrong argument types raise the root error --------------------------------------------
API: list[tuple[str, Callable[[], Any]]] = [
    ("read_fleet_file-None", lambda: gpufleet.read_fleet_file(None)),  # type: ignore[arg-type]
    ("read_fleet_file-int", lambda: gpufleet.read_fleet_file(5)),  # type: ignore[arg-type]
    ("read_fleet_file-bytes", lambda: gpufleet.read_fleet_file(b"x.yaml")),  # type: ignore[arg-type]
    ("plan_fleet-None", lambda: gpufleet.plan_fleet(None)),  # type: ignore[arg-type]
    ("plan_fleet-int", lambda: gpufleet.plan_fleet(3)),  # type: ignore[arg-type]
    ("analyze_regions-None", lambda: gpufleet.analyze_regions(None)),  # type: ignore[arg-type]
    ("analyze_regions-str", lambda: gpufleet.analyze_regions("llama-3-8b")),  # type: ignore[arg-type]
    ("simulate_autoscale-None", lambda: gpufleet.simulate_autoscale(None)),  # type: ignore[call-arg]
    ("simulate_spot-positional", lambda: gpufleet.simulate_spot(None)),  # type: ignore[call-arg]
    ("run_sweep-None", lambda: gpufleet.run_sweep(None)),  # type: ignore[arg-type]
    ("run_sweep-int", lambda: gpufleet.run_sweep(5)),  # type: ignore[arg-type]
    ("TelemetryStore-int", lambda: gpufleet.TelemetryStore(5)),  # type: ignore[arg-type]
    ("TelemetryStore-list", lambda: gpufleet.TelemetryStore(["a"])),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("call", [pytest.param(c, id=i) for i, c in API])
def test_bad5_api(call: Callable[[], Any]) -> None:
    with pytest.raises(GpufleetError) as info:
        call()
    assert str(info.value).strip()


# ---- inputs near the bad ones that must still succeed -----------------------------------------------------
GOOD: list[tuple[str, list[str], dict[str, Content]]] = [
    ("int-spaces", [*EI, "--batch", " 8 "], {}),
    ("int-plus", [*EI, "--batch", "+8"], {}),
    ("int-underscore", [*EI, "--input-len", "1_024"], {}),
    ("float-exponent", [*ET, "--seq-len", "2048"], {}),
    ("float-leading-dot", ["catalog", "offers", "--max-price", ".5", "--limit", "3"], {}),
    ("float-int-text", ["catalog", "offers", "--max-price", "10", "--limit", "3"], {}),
    ("float-exp", ["estimate", "train", "-m", "llama-3-8b", "-g", "h100", "--tokens", "2E9"], {}),
    ("option-equals-once", ["catalog", "offers", "--limit=3"], {}),
    (
        "repeatable-param",
        [*SA, "--param", "target_concurrency=4", "--param", "tick_s=5"],
        {"t.csv": TRACE},
    ),
    ("flag-twice", ["plan", str(MULTI), "--no-savings", "--no-savings", "-f", "csv"], {}),
    (
        "value-looks-like-option",
        ["recommend", "{w}", "--name", "--top", "--top", "1"],
        {"w.yaml": b"workloads:\n  '--top': {model: llama-3-8b}\n"},
    ),
    ("rules-ok", TA, {"r.yaml": RULE}),
    ("rules-json", TA, {"r.json": b'{"rules": [{"name": "a", "metric": "gpu_util_pct", "threshold": 9}]}'}),
    ("inventory-ok", INVF, {"i.yaml": INV}),
    ("batch-fleet-ok", SB, {"j.csv": JOBS, "f.yaml": SIM_FLEET}),
    ("cases-cr-line-ends", V, {"c.csv": SMALL_CASES.replace(b"\n", b"\r")}),  # classic Mac: was a traceback
    ("cases-crlf-bom", V, {"c.csv": b"\xef\xbb\xbf" + SMALL_CASES.replace(b"\n", b"\r\n")}),
    ("cases-header-spaces", V, {"c.csv": SMALL_CASES.replace(b"case_id,metric", b"case_id , metric", 1)}),
    ("workload-providers-string", RW, {"w.yaml": WORKLOAD + b"providers: aws\n"}),
    ("workload-workloads-only", RW, {"w.yaml": b"workloads:\n  a: {model: llama-3-8b}\n"}),
    ("workload-exclude-empty", RW, {"w.yaml": WORKLOAD + b"exclude_providers: []\n"}),
    (
        "workload-current-ok",
        RW,
        {"w.yaml": WORKLOAD + b"current: {provider: aws, instance_type: p5.48xlarge}\n"},
    ),
    ("workload-hex-ok", RW, {"w.yaml": WORKLOAD.replace(b"512", b"0x200")}),
    ("workload-time-text", RW, {"w.yaml": WORKLOAD.replace(b"name: w", b"name: '8:32'")}),
    (
        "smi-timezone",
        [*TI, "--input-format", "nvidia-smi", "--timezone", "UTC", "--host", "n1"],
        {"t.csv": SMI},
    ),
    ("expo-no-timezone", TI, {"t.prom": EXPO}),
    ("param-replicas-whole", [*SA, "--policy", "static", "--param", "replicas=3.0"], {"t.csv": TRACE}),
    ("sweep-seeds-listed", SW, {"s.yaml": SWEEP_SPEC.replace(b"[0]", b"[0, 1]"), "j.csv": JOBS}),
    (
        "sweep-grid-empty",
        SW,
        {
            "s.yaml": SWEEP_SPEC.replace(b"  policy: [fifo]\n", b"").replace(b"grid:", b"grid: {}"),
            "j.csv": JOBS,
        },
    ),
    (
        "autoscale-inference-workload",
        ["simulate", "autoscale", "{t}", "--workload", "{w}", "--gpu", "l4"],
        {"t.csv": TRACE, "w.yaml": WORKLOAD},
    ),
    ("gfo-guide-instances", CC, {"g.json": (DATA / "gfo_guide" / "gpu_instances.json").read_bytes()}),
    ("gfo-memory-gb-vs-gib", CC, {"g.json": _gfo_gpu(gpu_memory_gb=85)}),
    ("matrix-distinct", [*MX, "--models", "llama-3-8b,llama-2-7b", "--gpus", "h100,a100"], {}),
    ("region-other-provider", [*R, "--provider", "aws", "--region", "eastus", "--top", "1"], {}),
]


#: valid questions whose answer is "no": exit 3 (no candidate, gpufleet.cli.exit_codes) after the table
NO_ANSWER = frozenset({"region-other-provider"})


@pytest.mark.parametrize(("argv", "files", "want"), [pytest.param(a, f, 3 if i in NO_ANSWER else 0, id=i)
                                                     for i, a, f in GOOD])  # fmt: skip
def test_good(store: Path, tmp_path: Path, argv: list[str], files: dict[str, Content], want: int) -> None:
    subs = {**materialise(tmp_path, files), "store": str(store)}
    for key, value in subs.items():
        argv = [a.replace("{" + key + "}", value) for a in argv]
    res = runner.invoke(app, argv)
    assert "Traceback" not in res.output, res.output
    assert res.exit_code == want, f"exit {res.exit_code} ({res.exception!r}): {res.output[-800:]}"


def test_bad5_size() -> None:
    assert len(NUMBER_CASES) + len(REPEATED) + len(FILES) + len(ARGV) + len(API) >= 280


def test_good_json_catalog_untouched() -> None:
    """The JSON readers keep their own NaN handling (the field is named): not a parse-level refusal."""
    doc = json.loads((DATA / "gfo_guide" / "gpu_instances.json").read_bytes())
    assert "gpu_instances" in doc


@pytest.fixture(autouse=True)
def _isolated(cli_case_guard: None) -> None:
    """Every case of this module runs under the shared guard."""
