"""Bad-input corpus, sixth pass: semantic contradictions (same rules and checker as ``test_cli_corpus.py``).

Every input here parses, and each field alone is valid; the whole is nonsense. Before the fix each case tests,
it exited 0 with a plausible-looking answer, or 0/2 with a message that did not name the cause:

- training tokens below one optimizer step (global batch x sequence length): ``estimate train --tokens 1000``
  gave a time to train of 3.9e-06 h, ``recommend`` ranked offers at $5.7e-05/month, ``simulate spot`` priced
  the run, ``regions`` said "no region can run these workloads" and ``plan`` "no offer holds the model";
- a GPU Fleet Optimizer ``model_size`` outside its enum (``GIGANTIC``): "Unknown model", without the file,
  the entry or the field;
- a spot assumptions row whose mean time between interruptions is not longer than one restart plus one
  checkpoint (0.01 h = 100 interruptions per node-hour): accepted, no run could ever finish;
- a request trace with a request beyond the model's context: replayed as served (an engine refuses it);
- an nvidia-smi row with memory.used above memory.total of the same row: stored (now counted as
  ``out_of_range`` and dropped, with the other columns of the row kept: a warning, exit 0);
- training sequences longer than the model's maximum context: estimated silently (a WARNING note then; since
  issue 26 a typed ``--seq-len`` beyond it exits 2 and the default is capped at the context:
  ``test_cli_corpus_bad11.py``).

``GOOD`` lists nearby valid inputs that must still exit 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from corpus_files import Content, materialise
from test_cli_corpus import _check, runner

from gpufleet.cli.app import app

ROOT = Path(__file__).parents[2]
DATA = ROOT / "tests" / "data"
GFO_WL = json.loads((DATA / "gfo_guide" / "workloads.json").read_bytes())
SPOT = (ROOT / "src" / "gpufleet" / "cost" / "data" / "spot_assumptions.csv").read_bytes()
SMI_HEAD = (
    b"timestamp, index, uuid, name, memory.total [MiB], memory.used [MiB], utilization.gpu [%], "
    b"power.draw [W]\n"
)


def _smi(used_mib: int) -> bytes:
    return SMI_HEAD + b"".join(
        f"2026/07/14 08:1{k}:38.696, 0, GPU-aaaa, NVIDIA H100 80GB HBM3, 81559 MiB, {used_mib} MiB, 50 %, "
        "69.85 W\n".encode()
        for k in range(2)
    )


def _gfo_model_size(value: str) -> bytes:
    doc = json.loads(json.dumps(GFO_WL))
    doc["workloads"]["inference_small_p5"]["scenario"]["model_size"] = value
    return json.dumps(doc).encode()


def _spot(aws_mtbi_h: str) -> bytes:
    return SPOT.replace(b"\naws,2.25,", b"\naws," + aws_mtbi_h.encode() + b",", 1)


def _trace(rows: list[tuple[float, int, int]]) -> bytes:
    return b"timestamp_s,input_tokens,output_tokens\n" + b"".join(
        f"{t},{i},{o}\n".encode() for t, i, o in rows
    )


TRAIN = b"name: t\nmodel: llama-3-8b\ntask: pretrain\n"
FLEET_TRAIN = (
    b"name: f\nworkloads:\n  tr:\n    workload: {model: llama-3.1-8b, task: pretrain, train_tokens: %s}\n"
    b"    demand: {hours_per_week: 10}\n"
)
ET = ["estimate", "train", "-m", "llama-3-8b", "-g", "h100"]
SPOT_SIM = ["simulate", "spot", "-m", "llama-3-8b", "--runs", "5"]
AUTO = ["simulate", "autoscale", "{t}", "--gpu", "l4"]
STEP = "less than one optimizer step"
CONTEXT_TRACE = [(0, 200, 40), (1, 4000, 200), (2, 300, 40)]  # request 2: 4,200 tokens > llama-2-7b's 4,096

FILES: list[tuple[str, list[str], dict[str, Content], list[str]]] = [
    # training tokens below one optimizer step, every entry point
    ("train-file", ["recommend", "{w}"], {"w.yaml": TRAIN + b"train_tokens: 1000\n"}, ["train_tokens", STEP]),
    (
        "train-file-dataset-epochs",
        ["recommend", "{w}"],
        {"w.yaml": TRAIN + b"dataset_tokens: 1000\nepochs: 3\n"},
        ["dataset_tokens", "epochs", STEP],
    ),
    (
        "train-file-big-batch",
        ["recommend", "{w}"],
        {"w.yaml": TRAIN + b"train_tokens: 5e6\nglobal_batch_sequences: 2048\n"},
        ["global_batch_sequences 2,048", "8,388,608"],
    ),
    (
        "train-file-long-seq",
        ["recommend", "{w}"],
        {"w.yaml": TRAIN + b"train_tokens: 1e6\nseq_len_tokens: 8192\n"},
        ["seq_len_tokens 8,192", STEP],
    ),
    (
        "train-plan",
        ["plan", "{f}", "--no-savings"],
        {"f.yaml": FLEET_TRAIN % b"1000"},
        ["train_tokens", STEP],
    ),
    (
        "train-plan-lora",
        ["plan", "{f}", "--no-savings"],
        {"f.yaml": (FLEET_TRAIN % b"5e5").replace(b"pretrain", b"lora")},
        ["500,000", STEP],
    ),
    # GFO workloads.json: model_size outside the ModelSize enum
    ("gfo-model-size-check", ["config", "check", "{g}"], {"g.json": _gfo_model_size("GIGANTIC")}, []),
    (
        "gfo-model-size-recommend",
        ["recommend", "{g}", "--name", "inference_small_p5"],
        {"g.json": _gfo_model_size("GIGANTIC")},
        ["'model_size'", "'GIGANTIC'", "SMALL", "MASSIVE", "inference_small_p5"],
    ),
    (
        "gfo-model-size-migrate",
        ["migrate", "{g}", "--name", "inference_small_p5"],
        {"g.json": _gfo_model_size("XL")},
        ["'model_size'", "'XL'", "size class"],
    ),
    (
        "gfo-model-size-typo",
        ["recommend", "{g}", "--name", "inference_small_p5"],
        {"g.json": _gfo_model_size("SMAL")},
        ["'model_size'", "'SMAL'"],
    ),
    # spot assumptions: interrupted before one restart + checkpoint
    ("spot-mtbi-tiny", ["config", "check", "{s}"], {"s.csv": _spot("0.01")}, []),
    ("spot-mtbi-equal", ["config", "check", "{s}"], {"s.csv": _spot("0.25")}, []),
    # request traces beyond the model's context
    (
        "trace-beyond-context",
        [*AUTO, "--model", "llama-2-7b"],
        {"t.csv": _trace(CONTEXT_TRACE)},
        ["request 2", "4,200", "4,096", "llama-2-7b"],
    ),
    (
        "trace-beyond-context-big",
        [*AUTO, "--model", "llama-3-8b"],
        {"t.csv": _trace([(0, 200, 40), (1, 200_000, 40), (2, 200_000, 40)])},
        ["200,040", "131,072", "2 request(s) of 3"],
    ),
    (
        "trace-beyond-context-recommended-gpu",
        ["simulate", "autoscale", "{t}", "--model", "llama-2-7b"],
        {"t.csv": _trace(CONTEXT_TRACE)},
        ["request 2", "maximum context"],
    ),
]
# config check prints "Invalid: <message>": the fragments of those cases
CONFIG_WORDS = {
    "gfo-model-size-check": ["'model_size'", "'GIGANTIC'", "SMALL", "MASSIVE"],
    "spot-mtbi-tiny": ["mean_time_between_interruptions_h 0.01", "100.0 interruptions per hour", "900 s"],
    "spot-mtbi-equal": ["mean_time_between_interruptions_h 0.25", "restart_overhead_s + checkpoint_cost_s"],
}

CATALOG = (
    b"version: 1\noffers:\n  - provider: onprem\n    region: dc\n    instance_type: box\n    gpu: %s\n"
    b"    gpu_count: %s\n    price_on_demand_usd_per_hour: 18.5\n    gpu_memory_gib: %s\n"
)
CO = ["catalog", "offers", "--catalog", "{c}", "--provider", "onprem"]
INV = b"hosts:\n  - host: 'n*'\n    provider: aws\n    instance_type: %s\n    region: us-east-1\n"
FINDINGS = ["telemetry", "findings", "--store", "{store}", "--inventory", "{i}"]
FILES += [
    # a user catalog's memory per GPU far above the GPU's datasheet: models sized on memory it lacks
    (
        "catalog-memory-per-instance",
        CO,
        {"c.yaml": CATALOG % (b"H100-SXM", b"8", b"640")},
        ["gpu_memory_gib 640", "25 %", "79.65 GiB per GPU of H100-SXM", "not per instance"],
    ),
    (
        "catalog-memory-other-variant",
        CO,
        {"c.yaml": CATALOG % (b"A100-SXM-40GB", b"8", b"80")},
        ["gpu_memory_gib 80", "A100-SXM-40GB", "variant"],
    ),
    # an inventory whose instance type holds another GPU than the host reports: priced as the wrong GPU
    (
        "inventory-other-gpu",
        FINDINGS,
        {"i.yaml": INV % b"g5.xlarge"},
        ["Host n1", "g5.xlarge", "A10G", "H100-SXM", "instance_type"],
    ),
    ("inventory-other-gpu-l4", FINDINGS, {"i.yaml": INV % b"g6.xlarge"}, ["L4", "H100-SXM"]),
    ("inventory-other-gpu-h200", FINDINGS, {"i.yaml": INV % b"p5en.48xlarge"}, ["H200", "H100-SXM"]),
]

ARGV: list[tuple[str, list[str], list[str]]] = [
    ("estimate-train-tokens", [*ET, "--tokens", "1000"], ["train_tokens (1,000)", STEP, "--tokens"]),
    (
        "estimate-train-batch",
        [*ET, "--tokens", "4e6", "--batch", "1024", "--seq-len", "8192"],
        ["global batch 1,024", "8,388,608", "--batch"],
    ),
    ("estimate-train-lora", [*ET, "--task", "lora", "--tokens", "1k"], ["train_tokens (1,000)", STEP]),
    ("spot-sim-tokens", [*SPOT_SIM, "--tokens", "1000"], ["train_tokens (1,000)", STEP]),
    (
        "recommend-flags-tokens",
        ["recommend", "--model", "llama-3-8b", "--task", "pretrain", "--tokens", "1000"],
        ["train_tokens 1,000", STEP],
    ),
    (
        "regions-tokens",
        ["regions", "--model", "llama-3-8b", "--task", "pretrain", "--tokens", "1000"],
        ["train_tokens 1,000", STEP],
    ),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An H100 host n1: 60 one-minute nvidia-smi samples."""
    d = tmp_path_factory.mktemp("bad6")
    rows = b"".join(
        f"2026/07/14 08:{k:02d}:38.696, 0, GPU-aaaa, NVIDIA H100 80GB HBM3, 81559 MiB, 9000 MiB, 40 %, "
        "300 W\n".encode()
        for k in range(60)
    )
    (d / "s.csv").write_bytes(SMI_HEAD + rows)
    argv = ["telemetry", "ingest", str(d / "s.csv"), "--store", str(d / "st"), "--timezone", "UTC"]
    res = runner.invoke(app, [*argv, "--host", "n1"])
    assert res.exit_code == 0, res.output
    return d / "st"


@pytest.mark.parametrize(("argv", "files", "words"), [pytest.param(a, f, w, id=i) for i, a, f, w in FILES])
def test_bad6_file(
    request: pytest.FixtureRequest,
    store: Path,
    tmp_path: Path,
    argv: list[str],
    files: dict[str, Content],
    words: list[str],
) -> None:
    case = request.node.callspec.id
    _check(argv, words or CONFIG_WORDS[case], {**materialise(tmp_path, files), "store": str(store)})


@pytest.mark.parametrize(("argv", "words"), [pytest.param(a, w, id=i) for i, a, w in ARGV])
def test_bad6_argv(argv: list[str], words: list[str]) -> None:
    _check(argv, words)


def _run_ok(argv: list[str], subs: dict[str, str]) -> str:
    for key, value in subs.items():
        argv = [a.replace("{" + key + "}", value) for a in argv]
    res = runner.invoke(app, argv)
    assert "Traceback" not in res.output, res.output
    assert res.exit_code == 0, f"exit {res.exit_code} ({res.exception!r}): {res.output[-800:]}"
    return " ".join(res.output.split())


# ---- answered, with an explicit warning in the output -----------------------------------------------------
WARNED: list[tuple[str, list[str], dict[str, Content], list[str]]] = [
    (
        "smi-used-above-total",
        ["telemetry", "ingest", "{t}", "--store", "{tmp}/st", "--timezone", "UTC"],
        {"t.csv": _smi(900_000)},
        ["2 x out_of_range", "fb_used_mib=900000 above fb_total_mib=81559"],
    ),
]


@pytest.mark.parametrize(("argv", "files", "words"), [pytest.param(a, f, w, id=i) for i, a, f, w in WARNED])
def test_bad6_warned(tmp_path: Path, argv: list[str], files: dict[str, Content], words: list[str]) -> None:
    out = _run_ok(argv, materialise(tmp_path, files))
    for w in words:
        assert w in out, f"{w!r} not in: {out[-800:]}"


def test_smi_used_above_total_keeps_the_row_else(tmp_path: Path) -> None:
    """The row's other columns are stored; only the impossible memory.used is dropped."""
    out = _run_ok(
        ["telemetry", "ingest", "{t}", "--store", "{tmp}/st", "--timezone", "UTC"],
        materialise(tmp_path, {"t.csv": _smi(900_000)}),
    )
    assert "stored 6 samples" in out, out


# ---- inputs near the bad ones that must still succeed -----------------------------------------------------
GOOD: list[tuple[str, list[str], dict[str, Content]]] = [
    ("train-exactly-one-step", [*ET, "--tokens", "1048576"], {}),
    ("train-small-batch", [*ET, "--tokens", "1000", "--batch", "1", "--seq-len", "512"], {}),
    (
        "train-seq-at-context",
        ["estimate", "train", "-m", "llama-2-7b", "-g", "h100", "--tokens", "1e9", "--seq-len", "4096"],
        {},
    ),
    ("spot-sim-tokens-ok", [*SPOT_SIM, "--tokens", "2e9"], {}),
    (
        "train-file-dataset-epochs-ok",
        ["config", "check", "{w}"],
        {"w.yaml": TRAIN + b"dataset_tokens: 600000\nepochs: 2\n"},
    ),
    (
        "train-file-small-batch-ok",
        ["config", "check", "{w}"],
        {"w.yaml": TRAIN + b"train_tokens: 1e6\n" + b"global_batch_sequences: 64\n"},
    ),
    (
        "gfo-guide-workloads",
        ["config", "check", "{g}"],
        {"g.json": (DATA / "gfo_guide" / "workloads.json").read_bytes()},
    ),
    ("gfo-model-size-lower", ["config", "check", "{g}"], {"g.json": _gfo_model_size("small")}),
    ("gfo-model-size-id", ["config", "check", "{g}"], {"g.json": _gfo_model_size("llama-3-8b")}),
    ("spot-shipped", ["config", "check", "{s}"], {"s.csv": SPOT}),
    ("spot-mtbi-short-ok", ["config", "check", "{s}"], {"s.csv": _spot("0.3")}),
    (
        "smi-used-equal-total",
        ["telemetry", "ingest", "{t}", "--store", "{tmp}/st", "--timezone", "UTC"],
        {"t.csv": _smi(81559)},
    ),
    (
        "trace-at-context",
        [*AUTO, "--model", "llama-2-7b"],
        {"t.csv": _trace([(0, 200, 40), (1, 4000, 97), (2, 300, 40)])},
    ),
    (
        "infer-long-context-model",
        [
            "estimate",
            "infer",
            "-m",
            "llama-3-8b",
            "-g",
            "h100",
            "--input-len",
            "8000",
            "--output-len",
            "1000",
        ],
        {},
    ),
    ("fleet-train-ok", ["plan", "{f}", "--no-savings"], {"f.yaml": FLEET_TRAIN % b"2e9"}),
]


GOOD += [
    ("catalog-memory-slice", CO, {"c.yaml": CATALOG % (b"H100-SXM", b"0.5", b"40")}),
    ("catalog-memory-nvl-size", CO, {"c.yaml": CATALOG % (b"H100-SXM", b"8", b"93")}),
    ("inventory-same-gpu", FINDINGS, {"i.yaml": INV % b"p5.48xlarge"}),
    ("inventory-same-family", FINDINGS, {"i.yaml": INV % b"p5.4xlarge"}),
]


@pytest.mark.parametrize(("argv", "files"), [pytest.param(a, f, id=i) for i, a, f in GOOD])
def test_good(store: Path, tmp_path: Path, argv: list[str], files: dict[str, Content]) -> None:
    out = _run_ok(argv, {**materialise(tmp_path, files), "store": str(store)})
    assert "WARNING" not in out, out


@pytest.fixture(autouse=True)
def _isolated(cli_case_guard: None) -> None:
    """Every case of this module runs under the shared guard."""
