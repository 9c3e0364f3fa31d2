"""Red-team bad-input corpus (third; same rules and checker as ``test_cli_corpus.py``): exit 2, a message
naming the bad field, no traceback, a 10 s alarm per case.

Covers what the first two corpora did not: GPU Fleet Optimizer files under ``config check`` (every scenario
and instance field x bad values), booleans where numbers are expected (YAML ``true`` was read as 1), every
workload numeric field x nan/inf/negative/huge/wrong-type, catalog field mutations, calibration-case CSV
shapes, traces, job queues, fleet files and flags with empty/absurd values.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_cli_corpus import CASES_HEADER, CATALOG, WORKLOAD, _check, _materialise
from test_cli_corpus_new import FLEETFILE, JOBS, TRACE

GFO_DIR = Path(__file__).parents[1] / "data" / "gfo_guide"
GFO_WL = json.loads((GFO_DIR / "custom_workload.json").read_bytes())
GFO_GPU = json.loads((GFO_DIR / "gpu_instances.json").read_bytes())
NAN, INF = float("nan"), float("inf")


def _gfo_wl(field: str, value: object) -> bytes:
    doc = json.loads(json.dumps(GFO_WL))
    doc["workloads"]["my_custom_workload"]["scenario"][field] = value
    return json.dumps(doc).encode()


def _gfo_gpu(field: str, value: object) -> bytes:
    doc = json.loads(json.dumps(GFO_GPU))
    doc["gpu_instances"]["P5"][field] = value
    return json.dumps(doc).encode()


CC = ["config", "check", "{f}"]
CASES: list[tuple[str, list[str], str, bytes, list[str]]] = []
# GFO workloads.json: model/instance must be text, use_spot a boolean, the model must exist
for v in [NAN, INF, -1, 0, 1e300, True, None, [], 1.5, ""]:
    CASES.append((f"gfo-model_size={v!r}", CC, ".json", _gfo_wl("model_size", v), ["model_size"]))
    CASES.append(
        (f"gfo-current_instance={v!r}", CC, ".json", _gfo_wl("current_instance", v), ["current_instance"])
    )
for v in [NAN, INF, -1, 0, 1e300, "abc", None, [], 1.5]:
    CASES.append((f"gfo-use_spot={v!r}", CC, ".json", _gfo_wl("use_spot", v), ["use_spot", "true or false"]))
for v in [NAN, INF, -1, 0, 1e300, True, "abc", []]:
    CASES.append((f"gfo-monthly_hours={v!r}", CC, ".json", _gfo_wl("monthly_hours", v), ["hours"]))
    CASES.append((f"gfo-gpu_count={v!r}", CC, ".json", _gfo_wl("current_gpu_count", v), ["gpu_count"]))
for v in ["abc", "MEGA", "llama-9"]:
    CASES.append((f"gfo-model-unknown={v}", CC, ".json", _gfo_wl("model_size", v), [v]))
CASES.append(("gfo-workload_type", CC, ".json", _gfo_wl("workload_type", "DANCING"), ["DANCING"]))
CASES.append(("gfo-precision", CC, ".json", _gfo_wl("precision", "fp3"), ["fp3"]))
# GFO gpu_instances.json: every numeric field finite, positive, bounded, not a boolean
for fld in [
    "vcpus",
    "gpu_memory_gb",
    "gpus_per_instance",
    "on_demand_cost_per_hour",
    "compute_tflops",
    "interconnect_bandwidth_gbps",
    "memory_bandwidth_factor",
    "interconnect_multiplier",
]:
    for v in [NAN, INF, -1, 0, 1e300, True, "abc"]:
        CASES.append((f"gfo-gpu-{fld}={v!r}", CC, ".json", _gfo_gpu(fld, v), [fld]))
for v in [NAN, INF, -1, 0, 1e300, True, "abc"]:
    CASES.append(
        (f"gfo-gpu-spot={v!r}", CC, ".json", _gfo_gpu("spot_cost_per_hour", v), ["spot_cost_per_hour"])
    )
CASES.append(
    ("gfo-gpu-gpus-fraction", CC, ".json", _gfo_gpu("gpus_per_instance", 1.5), ["gpus_per_instance"])
)
CASES.append(("gfo-gpu-unknown-gpu", CC, ".json", _gfo_gpu("gpu_type", "NVIDIA H1000"), ["H1000"]))
CASES.append(("gfo-gpu-empty", CC, ".json", b'{"gpu_instances": {}}', ["gpu_instances"]))
for c in [b"{}", b"[]", b'{"workloads": []}', b'{"workloads": {"x": 5}}', b"null", b"5", b'"s"']:
    CASES.append((f"config-check:{c!r}", CC, ".json", c, []))

# workload files: every numeric field x bad values (booleans were read as 1/0)
RW = ["recommend", "{f}"]
WFIELDS = [
    "input_len_tokens",
    "output_len_tokens",
    "concurrency",
    "target_requests_per_s",
    "budget_usd_per_month",
    "max_nodes",
    "deadline_h",
    "hours_per_month",
    "train_tokens",
    "ttft_p95_ms",
    "tpot_p95_ms",
    "seq_len_tokens",
    "global_batch_sequences",
    "max_price_per_gpu_usd_per_hour",
    "min_gpu_memory_gib",
]
for fld in WFIELDS:
    for v in [b".nan", b".inf", b"-.inf", b"-1", b"1e400", b"true", b"false", b"'abc'", b"[]", b"{}"]:
        CASES.append(
            (f"workload-{fld}={v.decode()}", RW, ".yaml", WORKLOAD + fld.encode() + b": " + v + b"\n", [fld])
        )
for typo, near in [(b"input_len_tokns: 5\n", "input_len_tokens"), (b"modle: x\n", "model")]:
    CASES.append((f"workload-typo-{near}", RW, ".yaml", WORKLOAD + typo, [near]))
CASES.append(("workload-empty-name", RW, ".yaml", WORKLOAD.replace(b"name: w", b"name: ''"), ["name"]))
CASES.append(("workload-python-tag", RW, ".yaml", WORKLOAD + b"x: !!python/object:os.system ls\n", []))
for c in [b"   \n\n", WORKLOAD[:30], b"{", b"---\n---\n", b"\x1f\x8b\x08\x00\x00", b"~", b"[1,2", b"a: b: c"]:
    CASES.append((f"workload-content:{c[:12]!r}", RW, ".yaml", c, []))

# user catalogs
OC = ["catalog", "offers", "--catalog", "{f}"]
for fld in [b"price_on_demand_usd_per_hour", b"gpu_count"]:
    for v in [b".nan", b".inf", b"-1", b"1e400", b"true", b"'abc'", b"[]"]:
        content = re.sub(fld + rb": [^\n]*", fld + b": " + v, CATALOG)
        CASES.append((f"catalog-{fld.decode()}={v.decode()}", OC, ".yaml", content, [fld.decode()]))
CASES.append(("catalog-typo", OC, ".yaml", CATALOG + b"    regoin: x\n", ["regoin"]))
CASES.append(
    ("catalog-spot-nan", OC, ".yaml", CATALOG + b"    price_spot_usd_per_hour: .nan\n", ["price_spot"])
)

# calibration cases CSV
V = ["validate", "{f}"]
ROW = b"B1,ttft_ms,llama-2-7b,inference,A100-SXM-80GB,1,fp16,1,,128,128,,,,,,,,133,ms,,\n"
for name, content in [
    ("header-only", CASES_HEADER),
    ("dup-col", CASES_HEADER.replace(b"case_id", b"case_id,case_id") + ROW),
    ("extra-fields", CASES_HEADER + ROW.replace(b"ms,,\n", b"ms,,,,,\n")),
    ("short-row", CASES_HEADER + ROW.replace(b",ms,,\n", b"\n")),
    ("negative", CASES_HEADER + ROW.replace(b"133", b"-1")),
    ("inf", CASES_HEADER + ROW.replace(b"133", b"inf")),
    ("zero", CASES_HEADER + ROW.replace(b"133", b"0")),
    ("unit", CASES_HEADER + ROW.replace(b",ms,", b",furlongs,")),
    ("metric", CASES_HEADER + ROW.replace(b"ttft_ms", b"bogus")),
    ("precision", CASES_HEADER + ROW.replace(b"fp16", b"fp3")),
    ("fraction-gpus", CASES_HEADER + ROW.replace(b",1,fp16,1,", b",1.5,fp16,1,")),
    ("task", CASES_HEADER + ROW.replace(b"inference", b"dance")),
    ("zero-input", CASES_HEADER + ROW.replace(b",128,128,", b",0,128,")),
    ("semicolons", (CASES_HEADER + ROW).replace(b",", b";")),
    ("other-csv", b"a,b\n1,2\n"),
    ("blank-lines", b"\n\n\n"),
]:
    CASES.append((f"cases-{name}", V, ".csv", content, []))

# traces and job queues
SA = ["simulate", "autoscale", "{f}", "--gpu", "l4"]
H = b"timestamp_s,input_tokens,output_tokens\n"
for name, content in [
    ("empty-trace", H),
    ("unsorted", TRACE + b"-5,1,1\n"),
    ("huge-tokens", H + b"0,1e400,5\n"),
    ("short-row", H + b"0,5\n"),
    ("long-row", H + b"0,5,5,5\n"),
    ("bad-date", b"TIMESTAMP,ContextTokens,GeneratedTokens\nnot-a-date,374,44\n"),
    ("dup-col", b"timestamp_s,timestamp_s,output_tokens\n0,5,5\n"),
]:
    CASES.append((f"trace-{name}", SA, ".csv", content, []))
SB = ["simulate", "batch", "{f}"]
for name, content in [
    ("neg-duration", JOBS.replace(b"7200", b"-1")),
    ("inf-duration", JOBS.replace(b"7200", b"inf")),
    ("neg-submit", JOBS.replace(b"j2,60", b"j2,-60")),
    ("huge-gpus", JOBS.replace(b"j2,60,1", b"j2,60,1000000")),
    ("frac-gpus", JOBS.replace(b"j2,60,1", b"j2,60,1.5")),
    ("header-only", JOBS.split(b"\n")[0] + b"\n"),
    ("nan-priority", JOBS.replace(b",1,,false", b",nan,,false")),
]:
    CASES.append((f"jobs-{name}", SB, ".csv", content, []))

# fleet files
P = ["plan", "{f}"]
for a, b in [
    (b"requests_per_s: 2", b"requests_per_s: 0"),
    (b"requests_per_s: 2", b"requests_per_s: -3"),
    (b"requests_per_s: 2", b"requests_per_s: 1e400"),
    (b"requests_per_s: 2", b"requests_per_s: true"),
    (b"demand:", b"demnad:"),
    (b"workload:", b"wrkload:"),
    (b"'24/7'", b"''"),
]:
    CASES.append((f"fleet-{b.decode()}", P, ".yaml", FLEETFILE.replace(a, b), []))
for extra in [
    b"budgets: 5\n",
    b"quotas: [1]\n",
    b"quotas:\n  - {provider: awz, gpu: h100, max_gpus: 5}\n",
    b"quotas:\n  - {provider: aws, gpu: h100, max_gpus: -5}\n",
    b"budgets:\n  - {scope: all, max_usd_per_month: .nan}\n",
    b"colour: red\n",
]:
    CASES.append((f"fleet+{extra[:30].decode()}", P, ".yaml", FLEETFILE + extra, []))

# the example fleets with one number made infinite / boolean (infinite costs were accepted)
MULTI = (Path(__file__).parents[2] / "examples" / "fleets" / "multicloud.yaml").read_bytes()
for key, num in [
    (b"lifetime_months", b"6"),
    (b"capex_usd_per_node", b"180000"),
    (b"depreciation_months", b"48"),
    (b"power_kw_per_node", b"6.5"),
    (b"usd_per_kwh", b"0.18"),
    (b"ops_usd_per_node_per_month", b"1500"),
]:
    for v in [b"1e400", b".inf", b".nan", b"true"]:
        content = MULTI.replace(key + b": " + num + b"\n", key + b": " + v + b"\n", 1)
        assert content != MULTI
        CASES.append((f"fleet-example-{key.decode()}={v.decode()}", P, ".yaml", content, [key.decode()]))

# flags with empty / absurd values and unknown names (no file)
FLAGS: list[tuple[list[str], list[str]]] = [
    (["scenarios", "run", "nope"], ["nope"]),
    (["scenarios", "run-set", "nope"], ["nope"]),
    (["catalog", "offers", "--provider", "awz"], ["awz"]),
    (["catalog", "offers", "--region", "mars-1"], []),
    (["catalog", "offers", "--sort", "colour"], ["colour"]),
    (["catalog", "gpus", "--format", "pdf"], ["pdf"]),
    (["catalog", "update", "awz"], []),
    (["estimate", "matrix", "--models", "nope"], []),
    (["estimate", "infer", "-m", "", "-g", "h100"], []),
    (["estimate", "infer", "-m", "llama-3-8b", "-g", ""], []),
    (["recommend", "--model", "llama-3-8b", "--top", "0"], ["--top"]),
    (["recommend", "--model", ""], []),
    (["recommend"], []),
    (["validate"], []),
    (["config", "show", "--format", "xml"], ["xml"]),
    (["telemetry", "findings", "--store", "/nonexistent/store"], []),
    (["simulate", "spot", "--model", "llama-3-8b", "--tokens", "1e9", "--gpus", "1.5"], ["--gpus"]),
    (["simulate", "spot", "--model", "llama-3-8b", "--tokens", ""], ["--tokens"]),
    (["plan", "examples/fleets/multicloud.yaml", "--gap", "-0.1"], ["--gap"]),
]

FILE_PARAMS = [pytest.param(argv, sfx, content, words, id=cid) for cid, argv, sfx, content, words in CASES]


@pytest.mark.parametrize(("argv", "suffix", "content", "words"), FILE_PARAMS)
def test_redteam_file(tmp_path: Path, argv: list[str], suffix: str, content: bytes, words: list[str]) -> None:
    _check(argv, words, {"f": str(_materialise(tmp_path, suffix, content))})


@pytest.mark.parametrize(("argv", "words"), FLAGS, ids=[" ".join(a)[:60] for a, _ in FLAGS])
def test_redteam_flag(argv: list[str], words: list[str]) -> None:
    _check(argv, words)


def test_redteam_size() -> None:
    assert len(FILE_PARAMS) + len(FLAGS) >= 300


@pytest.fixture(autouse=True)
def _isolated(cli_case_guard: None) -> None:
    """Every case of this module runs under the shared guard."""
