"""Bad-input corpus, fourth part (same rules and checker as ``test_cli_corpus.py``): every case exits 2 with
a message naming the problem, no traceback, no hang (10 s alarm per case).

Each case here exited 0 with a silent answer (or 1 with a traceback) before the fix it tests: fractional
token counts in traces, telemetry files without samples, empty user catalogs, spot prices above on-demand,
unbounded ranking/solver/cold-start/filter options, unknown GPU Fleet Optimizer instances, loose simulate
batch fleet files, inventories and alert rules, unbounded magnitudes and blank names in YAML/JSON files, and
output paths that are folders, devices or in missing folders. ``GOOD`` lists inputs that must still succeed
(the shipped examples and tests/data among them), so the checks do not refuse valid files.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
import yaml
from test_cli_corpus import CASES_HEADER, CATALOG, WORKLOAD, _check, _materialise, runner
from test_cli_corpus_new import EXPO, JOBS, TRACE

from gpufleet.cli.app import app

ROOT = Path(__file__).parents[2]
DATA = ROOT / "tests" / "data"
GFO = DATA / "gfo_guide"
SIM_FLEET = (DATA / "simulate" / "fleet.yaml").read_bytes()
MULTI = yaml.safe_load((ROOT / "examples" / "fleets" / "multicloud.yaml").read_text(encoding="utf-8"))
INV = b"hosts:\n  - host: 'node-*'\n    provider: aws\n    instance_type: g5.xlarge\n    region: us-east-1\n"
RULE = b"rules:\n  - name: hot\n    metric: gpu_util_pct\n    op: '>'\n    threshold: 90\n    for: 10m\n"
SPOT_CSV = (ROOT / "src" / "gpufleet" / "cost" / "data" / "spot_assumptions.csv").read_bytes()
CASE_ROW = b"B1,ttft_ms,llama-2-7b,inference,A100-SXM-80GB,1,fp16,1,,128,128,,,,,,,,133,ms,,\n"


def _gfo_instance(value: str) -> bytes:
    doc = json.loads((GFO / "custom_workload.json").read_bytes())
    doc["workloads"]["my_custom_workload"]["scenario"]["current_instance"] = value
    return json.dumps(doc).encode()


def _gfo_spot(spot: float) -> bytes:
    doc = json.loads((GFO / "gpu_instances.json").read_bytes())
    doc["gpu_instances"]["P5"]["spot_cost_per_hour"] = spot
    return json.dumps(doc).encode()


def _gfo_model(value: object) -> bytes:
    doc = json.loads((GFO / "model_config.json").read_bytes())
    doc["model_sizes"]["small"]["memory_overhead_multiplier"] = value
    return json.dumps(doc).encode()


def _multi(path: tuple[str | int, ...], value: object) -> bytes:
    doc = json.loads(json.dumps(MULTI))
    cur = doc
    for key in path[:-1]:
        cur = cur[key]
    cur[path[-1]] = value
    return yaml.safe_dump(doc).encode()


def _sim_fleet(extra: str) -> bytes:
    return (
        b"pools:\n  - {name: od, gpu: h100, gpus_per_node: 8, nodes: 2, kind: on_demand}\n" + extra.encode()
    )


def _sweep(base: str, seeds: str = "[0]") -> bytes:
    return f"kind: batch\nbase:\n{base}grid:\n  policy: [fifo]\nseeds: {seeds}\n".encode()


H = b"timestamp_s,input_tokens,output_tokens\n"
SA = ["simulate", "autoscale", "{f}", "--gpu", "l4"]
TI = ["telemetry", "ingest", "{f}", "--store", "{empty}"]
OC = ["catalog", "offers", "--catalog", "{f}"]
CC = ["config", "check", "{f}"]
SB = ["simulate", "batch", "{jobs}", "--fleet", "{f}"]
P = ["plan", "{f}", "--no-savings"]
INVF = ["telemetry", "findings", "--store", "{store}", "--inventory", "{f}"]
SPOT_I = ["simulate", "spot", "--model", "llama-3-8b", "--tokens", "1e9", "--interruptions", "{f}"]
OFFER = (
    b"version: 1\noffers:\n  - {provider: onprem, region: dc, instance_type: box, gpu: H100-SXM, "
    b"gpu_count: 8, price_on_demand_usd_per_hour: 18.5, price_spot_usd_per_hour: %s}\n"
)
OVERRIDE = (
    b"price_overrides:\n  - {provider: aws, instance_type: p5.48xlarge, price_on_demand_usd_per_hour: 10, "
    b"price_spot_usd_per_hour: 20}\n"
)

# (id, argv with {f}, suffix, content, words the message must hold)
FILES: list[tuple[str, list[str], str, bytes, list[str]]] = [
    # 1. token counts are whole numbers (12.5 tokens was read as is)
    ("trace-frac-input", SA, ".csv", H + b"0,12.5,5\n1,3,4\n", ["input_tokens", "whole"]),
    ("trace-frac-output", SA, ".csv", H + b"0,12,5.5\n", ["output_tokens", "whole"]),
    ("trace-huge-tokens", SA, ".csv", H + b"0,20000000,5\n", ["input_tokens", "10,000,000"]),
    (
        "trace-azure-frac",
        SA,
        ".csv",
        b"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374.5,44\n",
        ["ContextTokens", "whole"],
    ),
    (
        "trace-burst-frac",
        SA,
        ".csv",
        b"Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n0,gpt,10,2.5,12.5,x\n",
        ["Response tokens", "whole"],
    ),
    (
        "mooncake-frac",
        SA,
        ".jsonl",
        b'{"timestamp": 0, "input_length": 5, "output_length": 2.5}\n',
        ["output_length", "whole"],
    ),
    (
        "mooncake-dup-key",
        SA,
        ".jsonl",
        b'{"timestamp": 0, "input_length": 5, "input_length": 6, "output_length": 2}\n',
        ["duplicate key"],
    ),
    (
        "mooncake-nan",
        SA,
        ".jsonl",
        b'{"timestamp": 0, "input_length": NaN, "output_length": 2}\n',
        ["NaN"],
    ),
    # 2. telemetry files without a single sample
    (
        "prom-comments-only",
        TI,
        ".prom",
        b"# HELP x\n# TYPE x gauge\n",
        ["no samples", "DCGM_FI_DEV_GPU_UTIL"],
    ),
    ("prom-eof-only", TI, ".prom", b"# EOF\n", ["no samples"]),
    (
        "prom-json-no-series",
        TI,
        ".json",
        b'{"status": "success", "data": {"resultType": "matrix", "result": []}}',
        ["no samples"],
    ),
    (
        "smi-header-only",
        [*TI, "--input-format", "nvidia-smi", "--timezone", "UTC"],
        ".csv",
        b"timestamp, index, uuid, utilization.gpu [%]\n",
        ["no samples"],
    ),
    (
        "exposition-empty-explicit",
        [*TI, "--input-format", "exposition"],
        ".prom",
        b"\n\n",
        ["no samples"],
    ),
    (
        "smi-huge-field",
        [*TI, "--input-format", "nvidia-smi", "--timezone", "UTC"],
        ".csv",
        b"a" * 200_000 + b"\n",
        ["not valid CSV"],
    ),
    # 3. user catalogs that add nothing
    ("catalog-empty-offers", OC, ".yaml", b"version: 1\noffers: []\n", ["no offers"]),
    ("catalog-empty-json", OC, ".json", b"{}", ["no offers"]),
    ("catalog-version-only", OC, ".yaml", b"version: 1\n", ["no offers"]),
    ("catalog-both-empty", OC, ".yaml", b"offers: []\nprice_overrides: []\n", ["no offers"]),
    # 4. spot above on-demand
    ("catalog-spot-above-od", OC, ".yaml", OFFER % b"30", ["price_spot_usd_per_hour", "above"]),
    ("catalog-override-spot-above", OC, ".yaml", OVERRIDE, ["above"]),
    ("gfo-catalog-spot-above", CC, ".json", _gfo_spot(1000.0), ["spot_cost_per_hour", "above"]),
    ("catalog-price-1e300", OC, ".yaml", CATALOG.replace(b"18.5", b"1e300"), ["price", "100,000"]),
    # 6. GPU Fleet Optimizer current_instance
    ("gfo-instance-unknown", CC, ".json", _gfo_instance("P9x"), ["current_instance", "P9x", "P4d"]),
    ("gfo-instance-typo", CC, ".json", _gfo_instance("p5.48xlarg"), ["Did you mean", "p5.48xlarge"]),
    ("gfo-model-overhead-nan", CC, ".json", _gfo_model(float("nan")), ["memory_overhead_multiplier"]),
    ("gfo-model-overhead-unit", CC, ".json", _gfo_model("1.5x"), ["memory_overhead_multiplier"]),
    # workload files: unbounded magnitudes, blank names
    (
        "wl-min-mem-huge",
        ["recommend", "{f}"],
        ".yaml",
        WORKLOAD + b"min_gpu_memory_gib: 1e300\n",
        ["min_gpu"],
    ),
    (
        "wl-max-price-huge",
        ["recommend", "{f}"],
        ".yaml",
        WORKLOAD + b"max_price_per_gpu_usd_per_hour: 1e300\n",
        ["max_price_per_gpu_usd_per_hour"],
    ),
    ("wl-gpus-per-node-huge", ["recommend", "{f}"], ".yaml", WORKLOAD + b"gpus_per_node: [5000]\n", ["5000"]),
    (
        "wl-blank-provider",
        ["recommend", "{f}"],
        ".yaml",
        WORKLOAD + b"providers: ['']\n",
        ["providers", "blank"],
    ),
    (
        "wl-runs-huge",
        ["recommend", "{f}"],
        ".yaml",
        WORKLOAD + b"runs_per_month: 1e300\n",
        ["runs_per_month"],
    ),
    # plan fleet files: magnitudes that overflowed the solver, booleans in lists, blank names
    (
        "plan-data-size-huge",
        P,
        ".yaml",
        _multi(("workloads", "chat-eu", "data", "size_gib"), 1e300),
        ["size_gib"],
    ),
    (
        "plan-egress-huge",
        P,
        ".yaml",
        _multi(("workloads", "chat-eu", "data", "serving_egress_gib_per_month"), 1e300),
        ["serving_egress_gib_per_month"],
    ),
    ("plan-hourly-bool", P, ".yaml", _multi(("workloads", "rag", "demand", "hourly", 0), True), ["boolean"]),
    ("plan-blank-team", P, ".yaml", _multi(("workloads", "chat-eu", "team"), ""), ["team", "blank"]),
    (
        "plan-min-mem-huge",
        P,
        ".yaml",
        _multi(("workloads", "finetune", "resources", "min_gpu_memory_gib"), 1e300),
        ["min_gpu_memory_gib"],
    ),
    (
        "plan-lifetime-huge",
        P,
        ".yaml",
        _multi(("workloads", "finetune", "lifetime_months"), 1e300),
        ["lifetime"],
    ),
    (
        "plan-vcpus-huge",
        P,
        ".yaml",
        _multi(("workloads", "features", "resources", "vcpus"), 1e300),
        ["vcpus"],
    ),
    (
        "plan-blank-current",
        P,
        ".yaml",
        _multi(("workloads", "chat-eu", "current", "instance_type"), " "),
        ["blank"],
    ),
    ("plan-blank-name", P, ".yaml", _multi(("name",), ""), ["name", "blank"]),
    # simulate batch fleet files (teams and off_peak were not checked at all)
    ("simfleet-team-nan", SB, ".yaml", _sim_fleet("teams:\n  a: {nominal_gpus: .nan}\n"), ["nominal_gpus"]),
    ("simfleet-team-neg", SB, ".yaml", _sim_fleet("teams:\n  a: {nominal_gpus: -1}\n"), ["nominal_gpus"]),
    ("simfleet-team-bool", SB, ".yaml", _sim_fleet("teams:\n  a: {nominal_gpus: true}\n"), ["boolean"]),
    ("simfleet-team-unit", SB, ".yaml", _sim_fleet("teams:\n  a: {nominal_gpus: 80GB}\n"), ["nominal_gpus"]),
    (
        "simfleet-borrow-huge",
        SB,
        ".yaml",
        _sim_fleet("teams:\n  a: {borrowing_limit_gpus: 1e300}\n"),
        ["borrowing_limit_gpus"],
    ),
    (
        "simfleet-offpeak-hour",
        SB,
        ".yaml",
        _sim_fleet("off_peak: {start_hour: 25, end_hour: 6, price_factor: 0.5}\n"),
        ["start_hour"],
    ),
    (
        "simfleet-offpeak-factor",
        SB,
        ".yaml",
        _sim_fleet("off_peak: {start_hour: 1, end_hour: 6, price_factor: .inf}\n"),
        ["price_factor"],
    ),
    (
        "simfleet-offpeak-empty",
        SB,
        ".yaml",
        _sim_fleet("off_peak: {start_hour: 3, end_hour: 3, price_factor: 0.5}\n"),
        ["empty"],
    ),
    (
        "simfleet-offpeak-typo",
        SB,
        ".yaml",
        _sim_fleet("off_peak: {start_hour: 1, end_hour: 6, price_factor: 0.5, colour: red}\n"),
        ["colour"],
    ),
    (
        "simfleet-dup-pool",
        SB,
        ".yaml",
        _sim_fleet("  - {name: od, gpu: h100, gpus_per_node: 8, nodes: 1, kind: spot}\n"),
        ["od"],
    ),
    (
        "simfleet-price-huge",
        SB,
        ".yaml",
        b"pools:\n  - {gpu: h100, nodes: 1, kind: on_demand, price_usd_per_node_hour: 1e300}\n",
        ["price_usd_per_node_hour"],
    ),
    (
        "simfleet-nodes-frac",
        SB,
        ".yaml",
        b"pools:\n  - {gpu: h100, nodes: 1.5, kind: on_demand}\n",
        ["nodes"],
    ),
    # sweep specs: file paths of the wrong type were a TypeError traceback; repeated seeds ran twice
    ("sweep-jobs-number", ["simulate", "sweep", "{f}"], ".yaml", _sweep("  jobs: 123\n"), ["jobs", "path"]),
    ("sweep-jobs-null", ["simulate", "sweep", "{f}"], ".yaml", _sweep("  jobs: null\n"), ["jobs", "path"]),
    (
        "sweep-fleet-list",
        ["simulate", "sweep", "{f}"],
        ".yaml",
        _sweep("  jobs: j.csv\n  fleet: [1]\n"),
        ["fleet"],
    ),
    (
        "sweep-dup-seeds",
        ["simulate", "sweep", "{f}"],
        ".yaml",
        _sweep("  jobs: j.csv\n", "[0, 0]"),
        ["seeds", "repeat"],
    ),
    (
        "sweep-bool-seed",
        ["simulate", "sweep", "{f}"],
        ".yaml",
        _sweep("  jobs: j.csv\n", "[true]"),
        ["seeds"],
    ),
    # inventories
    ("inv-blank-provider", INVF, ".yaml", INV.replace(b"provider: aws", b"provider: ''"), ["provider"]),
    ("inv-top-level-typo", INVF, ".yaml", INV + b"hots: []\n", ["hots"]),
    ("inv-no-entries", INVF, ".yaml", b"hosts: []\n", ["no entries"]),
    ("inv-duplicate", INVF, ".yaml", INV + INV[INV.index(b"  - ") :], ["repeats"]),
    (
        "inv-csv-typo-column",
        INVF,
        ".csv",
        b"gpu_uuid,provider,instance_type,regoin\nGPU-1,aws,p5.48xlarge,\n",
        ["regoin", "region"],
    ),
    # alert rules and spot availability traces
    (
        "rules-threshold-nan",
        ["telemetry", "alerts", "--store", "{store}", "--rules", "{f}"],
        ".yaml",
        RULE.replace(b"threshold: 90", b"threshold: .nan"),
        ["threshold"],
    ),
    (
        "rules-threshold-bool",
        ["telemetry", "alerts", "--store", "{store}", "--rules", "{f}"],
        ".yaml",
        RULE.replace(b"threshold: 90", b"threshold: true"),
        ["boolean"],
    ),
    (
        "spot-trace-inf",
        SPOT_I,
        ".json",
        b'{"metadata": {"gap_seconds": 60}, "data": [1, 1e400, 1]}',
        ["data[1]"],
    ),
    (
        "spot-trace-huge",
        SPOT_I,
        ".json",
        b'{"metadata": {"gap_seconds": 60}, "data": [1, 1e300]}',
        ["data[1]"],
    ),
    (
        "spot-trace-gap-huge",
        SPOT_I,
        ".json",
        b'{"metadata": {"gap_seconds": 1e300}, "data": [1, 0]}',
        ["gap_seconds"],
    ),
    # spot assumption overrides (nan and inf were accepted; a repeated provider silently won)
    ("spotcsv-nan", CC, ".csv", SPOT_CSV.replace(b"aws,2.25,", b"aws,nan,"), ["aws", "finite"]),
    ("spotcsv-inf", CC, ".csv", SPOT_CSV.replace(b"aws,2.25,120,600", b"aws,2.25,120,inf"), ["aws"]),
    ("spotcsv-dup", CC, ".csv", SPOT_CSV + SPOT_CSV.splitlines(keepends=True)[1], ["second row"]),
    (
        "spotcsv-extra-col",
        CC,
        ".csv",
        SPOT_CSV.replace(b",source\n", b",source,colour\n", 1),
        ["colour"],
    ),
    # calibration cases: token and measured magnitudes
    (
        "cases-output-len-huge",
        ["validate", "{f}"],
        ".csv",
        CASES_HEADER + CASE_ROW.replace(b",128,128,", b",128,1e300,"),
        ["output_len"],
    ),
    (
        "cases-measured-huge",
        ["validate", "{f}"],
        ".csv",
        CASES_HEADER + CASE_ROW.replace(b"133", b"1e300"),
        ["measured"],
    ),
]

PROMJSON = {
    "status": "success",
    "data": {
        "resultType": "matrix",
        "result": [
            {
                "metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "Hostname": "n1", "UUID": "GPU-1"},
                "values": [[1780000200, "50"]],
            }
        ],
    },
}


def _promjson(ts: object) -> bytes:
    doc = json.loads(json.dumps(PROMJSON))
    doc["data"]["result"][0]["values"][0][0] = ts
    return json.dumps(doc).encode()


def _profile(path: tuple[str, ...], value: object) -> bytes:
    doc = json.loads((ROOT / "src" / "gpufleet" / "estimate" / "data" / "profile.json").read_bytes())
    cur = doc
    for key in path[:-1]:
        cur = cur[key]
    cur[path[-1]] = value
    return json.dumps(doc).encode()


COMMIT = {"provider": "aws", "program": "reserved", "term_years": 1, "discount_fraction": 0.3, "source": "me"}
EI = ["estimate", "infer", "-m", "llama-3-8b", "-g", "h100", "--profile", "{f}"]
FILES += [
    # prom-json timestamps: inf and 1e300 were an OverflowError traceback, true was read as 1 s after 1970
    ("promjson-ts-inf", TI, ".json", _promjson(float("inf")), ["no sample could be stored"]),
    ("promjson-ts-huge", TI, ".json", _promjson(1e300), ["no sample could be stored"]),
    ("promjson-ts-bool", TI, ".json", _promjson(True), ["no sample could be stored"]),
    # calibration profiles: booleans read as 1, negative counts, non-finite diagnostics
    ("profile-param-bool", EI, ".json", _profile(("params", "eta_hopper"), True), ["params.eta_hopper"]),
    ("profile-version-bool", EI, ".json", _profile(("version",), True), ["version"]),
    ("profile-case-count", EI, ".json", _profile(("case_count",), -1), ["case_count"]),
    ("profile-loo-nan", EI, ".json", _profile(("loo_residuals",), {"x": float("nan")}), ["residuals"]),
    # commitment overrides and a workload's current deployment
    (
        "commit-term-bool",
        ["catalog", "commitments", "--override", "{f}"],
        ".json",
        json.dumps({"commitments": [{**COMMIT, "term_years": True}]}).encode(),
        ["term_years"],
    ),
    (
        "commit-discount-bool",
        ["catalog", "commitments", "--override", "{f}"],
        ".json",
        json.dumps({"commitments": [{**COMMIT, "discount_fraction": False}]}).encode(),
        ["boolean"],
    ),
    (
        "wl-current-blank",
        ["migrate", "{f}"],
        ".yaml",
        WORKLOAD + b"current: {provider: aws, instance_type: ''}\n",
        ["instance_type"],
    ),
    (
        "wl-current-count-bool",
        ["migrate", "{f}"],
        ".yaml",
        WORKLOAD + b"current: {provider: aws, instance_type: p5.48xlarge, count: true}\n",
        ["count"],
    ),
]

PAI = (
    b"job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type\n"
    b"j1,t,1,Terminated,0,3600,600,30,100,V100\nj2,t,2,Terminated,60,7200,600,30,50,V100\n"
)
HELIOS = (
    b"job_id,user,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration\n"
    b"j1,u1,8,32,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:10,2020-04-01 01:00:10,3600\n"
)
FILES += [
    # public job-trace layouts: a 1e300 s job ran as a finite simulation
    (
        "jobs-pai-end-huge",
        ["simulate", "batch", "{f}"],
        ".csv",
        PAI.replace(b",3600,600", b",1e300,600"),
        ["job j1", "1,000,000"],
    ),
    (
        "jobs-helios-duration-huge",
        ["simulate", "batch", "{f}"],
        ".csv",
        HELIOS.replace(b",3600\n", b",1e300\n"),
        ["job j1"],
    ),
    (
        "jobs-generic-huge-duration",
        ["simulate", "batch", "{f}"],
        ".csv",
        JOBS.replace(b"7200", b"1e300"),
        ["job j1"],
    ),
]

# argv-only cases: absurd or blank options (5.) and options that were silently ignored
R = ["recommend", "--model", "llama-3-8b"]
M = ["migrate", "--model", "llama-3-8b", "--current-instance", "p5.48xlarge"]
FLAGS: list[tuple[list[str], list[str]]] = [
    ([*R, "--top", "99999999999999"], ["--top", "1,000"]),
    ([*R, "--top", "1001"], ["--top", "1,000"]),
    ([*M, "--top", "99999999999999"], ["--top"]),
    (["scenarios", "run", "inference_small_p5", "--top", "99999999999999"], ["--top"]),
    (["scenarios", "run-set", "basic_demos", "--top", "99999999999999"], ["--top"]),
    (["plan", "examples/fleets/multicloud.yaml", "--time-limit", "1e300"], ["--time-limit", "86,400"]),
    (["plan", "examples/fleets/multicloud.yaml", "--time-limit", "86401"], ["--time-limit"]),
    (["simulate", "autoscale", "{trace}", "--gpu", "l4", "--cold-start", "1e300"], ["cold start", "86,400"]),
    (["catalog", "offers", "--limit", "99999999999999"], ["--limit", "maximum"]),
    (["catalog", "offers", "--gpus", "1e300"], ["--gpus", "maximum"]),
    (["catalog", "offers", "--max-price", "1e300"], ["--max-price", "maximum"]),
    (["catalog", "offers", "--min-gpu-memory", "1e300"], ["--min-gpu-memory", "maximum"]),
    ([*R, "--min-gpu-memory", "1e300"], ["--min-gpu-memory"]),
    ([*R, "--max-price-per-gpu-hour", "1e300"], ["--max-price-per-gpu-hour"]),
    ([*M, "--max-price-per-gpu-hour", "1e300"], ["--max-price-per-gpu-hour"]),
    ([*R, "--name", "chat"], ["--name", "no file"]),
    (["regions", "--model", "llama-3-8b", "--name", "x"], ["--name"]),
    (["estimate", "infer", "-m", "llama-3-8b", "-g", "h100", "--engine", ""], ["engine"]),
    (["estimate", "infer", "-m", "llama-3-8b", "-g", "h100", "--engine", " "], ["engine"]),
    (
        ["estimate", "train", "-m", "llama-3-8b", "-g", "h100", "--tokens", "1e9", "--software", ""],
        ["software"],
    ),
    (
        ["estimate", "matrix", "--models", "llama-3-8b", "--gpus", "h100", "--task", "nan"],
        ["nan", "pretrain"],
    ),
    (["simulate", "spot", "--model", "llama-3-8b", "--tokens", "1e9", "--provider", ""], ["provider"]),
    (["telemetry", "findings", "--store", "{store}", "-o", "{tmp}/x.txt"], ["--format table"]),
    (
        ["simulate", "autoscale", "{trace}", "--gpu", "l4", "--policy", "hpa", "--param", "target=1e300"],
        ["target"],
    ),
    (
        [
            "simulate",
            "autoscale",
            "{trace}",
            "--gpu",
            "l4",
            "--policy",
            "scheduled",
            "--param",
            "schedule=0:99999999999",
        ],
        ["schedule", "replicas"],
    ),
    (
        [
            "simulate",
            "autoscale",
            "{trace}",
            "--gpu",
            "l4",
            "--policy",
            "scheduled",
            "--param",
            "schedule=0:2,0:3",
        ],
        ["hour twice"],
    ),
    (
        [
            "simulate",
            "autoscale",
            "{trace}",
            "--gpu",
            "l4",
            "--param",
            "target_concurrency=3",
            "--param",
            "target_concurrency=4",
        ],
        ["twice"],
    ),
    (
        [
            "telemetry",
            "ingest",
            "--prometheus",
            "http://127.0.0.1:9",
            "--start",
            "2026-01-01T00:00:00Z",
            "--timeout",
            "1e300",
            "--store",
            "{tmp}/s",
        ],
        ["--timeout", "3,600"],
    ),
    (
        [
            "telemetry",
            "ingest",
            "--prometheus",
            "http://127.0.0.1:9",
            "--start",
            "2026-01-01T00:00:00Z",
            "--timeout",
            "0",
            "--store",
            "{tmp}/s",
        ],
        ["--timeout"],
    ),
    (
        [
            "telemetry",
            "ingest",
            "--prometheus",
            "http://127.0.0.1:9",
            "--start",
            "1900-01-01T00:00:00Z",
            "--store",
            "{tmp}/s",
        ],
        ["points per series"],
    ),
    (["telemetry", "alerts", "--store", "{store}", "-o", "{tmp}/x.txt"], ["--format table"]),
]

# output paths: a folder, a special file, a missing folder, a path under a file, a blank path
OUTPUTS: list[list[str]] = [
    ["recommend", "--model", "llama-3-8b", "-f", "markdown", "-o", "{out}"],
    ["calibrate", str(DATA / "cases" / "small.csv"), "-o", "{out}"],
    ["telemetry", "findings", "--store", "{store}", "--format", "csv", "-o", "{out}"],
    ["plan", "examples/fleets/multicloud.yaml", "--no-savings", "-f", "csv", "-o", "{out}"],
    ["simulate", "sweep", str(DATA / "simulate" / "sweep.yaml"), "--workers", "1", "--parquet", "{out}"],
]
# a FIFO stands for every special file: before the fix an atomic write renamed over it (as root, over
# /dev/full too); a FIFO of the test's own keeps a regression from touching the machine's devices
OUT_TARGETS = {
    "folder": "{tmp}",
    "missing-folder": "{tmp}/no/such/dir/x.out",
    "blank": "",
    "in-file": "{jobs}/x",
    "fifo": "{tmp}/fifo",
}

FILE_PARAMS = [pytest.param(argv, sfx, content, words, id=cid) for cid, argv, sfx, content, words in FILES]
FLAG_PARAMS = [pytest.param(argv, words, id=" ".join(argv)[:70]) for argv, words in FLAGS]
OUT_PARAMS = [
    pytest.param(argv, target, id=f"{argv[0]}-{argv[1]}:{name}")
    for argv in OUTPUTS
    for name, target in OUT_TARGETS.items()
]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("bad2")
    (d / "t.csv").write_bytes(TRACE)
    (d / "jobs.csv").write_bytes(JOBS)
    (d / "j.csv").write_bytes(JOBS)
    (d / "s.prom").write_bytes(EXPO)
    store = d / "store"
    res = runner.invoke(app, ["telemetry", "ingest", str(d / "s.prom"), "--store", str(store)])
    assert res.exit_code == 0, res.output
    return {"trace": str(d / "t.csv"), "jobs": str(d / "jobs.csv"), "store": str(store), "dir": str(d)}


def _subs(inputs: dict[str, str], tmp_path: Path, f: Path | None = None) -> dict[str, str]:
    subs = {**inputs, "empty": str(tmp_path / "empty-store"), "tmp": str(tmp_path)}
    if f is not None:
        subs["f"] = str(f)
    return subs


@pytest.mark.parametrize(("argv", "suffix", "content", "words"), FILE_PARAMS)
def test_bad2_file(
    inputs: dict[str, str], tmp_path: Path, argv: list[str], suffix: str, content: bytes, words: list[str]
) -> None:
    path = _materialise(tmp_path, suffix, content)
    if argv[:2] == ["simulate", "sweep"]:  # the spec's relative job file sits next to it
        (tmp_path / "j.csv").write_bytes(JOBS)
    _check(argv, words, _subs(inputs, tmp_path, path))


@pytest.mark.parametrize(("argv", "words"), FLAG_PARAMS)
def test_bad2_flag(inputs: dict[str, str], tmp_path: Path, argv: list[str], words: list[str]) -> None:
    _check(argv, words, _subs(inputs, tmp_path))


@pytest.mark.parametrize(("argv", "target"), OUT_PARAMS)
def test_bad2_output_path(inputs: dict[str, str], tmp_path: Path, argv: list[str], target: str) -> None:
    subs = _subs(inputs, tmp_path)
    out = target
    for key, value in subs.items():
        out = out.replace("{" + key + "}", value)
    if target.endswith("/fifo"):
        os.mkfifo(out)
    # click's own check answers first for a folder given to calibrate (its -o is dir_okay=False)
    words = ["directory"] if argv[0] == "calibrate" and target == "{tmp}" else ["Cannot write"]
    if not target:  # refused by the path type of every option (cli/finite.py), before any command runs
        words = ["empty path", "leave the option out"]
    _check([a.replace("{out}", out) for a in argv], words, subs)
    if target.endswith("/fifo"):  # still the FIFO, not replaced by a regular file
        assert stat.S_ISFIFO(os.stat(out).st_mode)


# --- inputs that must still succeed -------------------------------------------------------------------------
GOOD_FILES: list[tuple[str, list[str], str, bytes]] = [
    ("trace-integral-floats", SA, ".csv", H + b"0,12.0,5.0\n1,3,4\n"),
    ("catalog-spot-equal-od", OC, ".yaml", OFFER % b"18.5"),
    (
        "catalog-overrides-only",
        OC,
        ".yaml",
        b"price_overrides:\n  - {provider: aws, instance_type: p5.48xlarge, discount_fraction: 0.3}\n",
    ),
    ("gfo-instance-family-lower", CC, ".json", _gfo_instance("p5")),
    ("gfo-instance-aws-type", CC, ".json", _gfo_instance("p4d.24xlarge")),
    ("wl-blank-description", ["recommend", "{f}"], ".yaml", WORKLOAD + b"description: ''\n"),
    (
        "wl-train-tokens-1e13",
        ["recommend", "{f}"],
        ".yaml",
        WORKLOAD.replace(b"inference", b"pretrain").replace(
            b"input_len_tokens: 512\noutput_len_tokens: 128\n", b""
        )
        + b"train_tokens: 1.0e+13\n",
    ),
    ("simfleet-shipped", SB, ".yaml", SIM_FLEET),
    (
        "simfleet-offpeak-wrap",
        SB,
        ".yaml",
        _sim_fleet("off_peak: {start_hour: 22, end_hour: 6, price_factor: 0.6}\n"),
    ),
    ("inv-ok", INVF, ".yaml", INV),
    ("spotcsv-shipped", CC, ".csv", SPOT_CSV),
    ("cases-small", ["validate", "{f}"], ".csv", (DATA / "cases" / "small.csv").read_bytes()),
]
FLEETS = ROOT / "examples" / "fleets"
MOONCAKE = str(next((DATA / "traces" / "mooncake-fast25").glob("*.jsonl")))
AZURE = str(next((DATA / "traces" / "azure-llm-inference-2023").glob("*.csv")))
GOOD_ARGV: list[list[str]] = [
    ["plan", str(FLEETS / "multicloud.yaml"), "--no-savings"],
    ["plan", str(FLEETS / "assessment-platform.yaml"), "--no-savings"],
    ["plan", str(FLEETS / "mig-inference.yaml"), "--no-savings", "--time-limit", "86400"],
    ["recommend", str(DATA / "workloads" / "inference.yaml"), "--top", "1000"],
    ["catalog", "offers", "--catalog", str(DATA / "user_catalogs" / "onprem.yaml"), "--provider", "onprem"],
    ["catalog", "offers", "--catalog", str(GFO / "gpu_instances.json"), "--limit", "100000", "--gpu", "H100"],
    [
        "config",
        "check",
        *(str(GFO / n) for n in ("workloads.json", "custom_workload.json", "model_config.json")),
    ],
    [
        "config",
        "check",
        *(str(DATA / "workloads" / n) for n in ("gfo_workloads.json", "gfo_model_config.json")),
    ],
    ["simulate", "autoscale", MOONCAKE, "--gpu", "l4"],
    ["simulate", "autoscale", AZURE, "--gpu", "l4"],
    [
        "simulate",
        "batch",
        str(DATA / "simulate" / "jobs.csv"),
        "--fleet",
        str(DATA / "simulate" / "fleet.yaml"),
    ],
    ["simulate", "sweep", str(DATA / "simulate" / "sweep.yaml"), "--workers", "1", "--parquet", "{tmp}/s.pq"],
    ["telemetry", "findings", "--store", "{store}", "--format", "csv", "-o", "{tmp}/f.csv"],
    ["simulate", "autoscale", "{trace}", "--gpu", "l4", "--cold-start", "86400"],
]


def _ok(argv: list[str], subs: dict[str, str]) -> None:
    for key, value in subs.items():
        argv = [a.replace("{" + key + "}", value) for a in argv]
    res = runner.invoke(app, argv)
    assert not isinstance(res.exception, TimeoutError), f"hang: {argv}"
    assert "Traceback" not in res.output, res.output
    if argv[:2] == ["simulate", "autoscale"] and res.exit_code == 3:  # a valid replay that misses its SLO
        assert "misses the SLO" in res.output, res.output[-800:]
        return
    assert res.exit_code == 0, f"exit {res.exit_code} ({res.exception!r}): {res.output[-800:]}"


@pytest.mark.parametrize(
    ("argv", "suffix", "content"),
    [pytest.param(a, s, c, id=i) for i, a, s, c in GOOD_FILES],
)
def test_good_file(
    inputs: dict[str, str], tmp_path: Path, argv: list[str], suffix: str, content: bytes
) -> None:
    _ok(argv, _subs(inputs, tmp_path, _materialise(tmp_path, suffix, content)))


@pytest.mark.parametrize(
    "argv", GOOD_ARGV, ids=[" ".join(a[:3])[:50] + f":{i}" for i, a in enumerate(GOOD_ARGV)]
)
def test_good_argv(inputs: dict[str, str], tmp_path: Path, argv: list[str]) -> None:
    if "sweep" in argv and not _has_pyarrow():
        argv = argv[: argv.index("--parquet")]
    _ok(argv, _subs(inputs, tmp_path))


def _has_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def test_bad2_size() -> None:
    assert len(FILE_PARAMS) + len(FLAG_PARAMS) + len(OUT_PARAMS) >= 100


@pytest.fixture(autouse=True)
def _isolated(cli_case_guard: None) -> None:
    """Every case of this module runs under the shared guard."""
