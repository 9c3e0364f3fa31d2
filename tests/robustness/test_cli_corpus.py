"""The bad-input corpus: every case exits 2 with one clear message, no traceback, no hang.

Classes (issue 12): encodings, resource bombs, absurd numbers, contradictions, unknown names, stored state.
Each case is ``(argv, files, key words)``: ``{name}`` in ``argv`` is replaced by the path of a file written
from ``files[name]`` (bytes, or a special: ``FIFO``, ``DIR``, ``MISSING``, ``BIG``). Run in-process with
typer's CliRunner; a per-case alarm fails a case that runs over 10 s.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app

FIFO, DIR, MISSING, BIG = "<fifo>", "<dir>", "<missing>", "<big>"


def _hf(drop: tuple[str, ...] = (), **fields: object) -> bytes:
    """A Llama-like config.json with ``fields`` replaced and ``drop`` removed."""
    cfg: dict[str, object] = {
        "model_type": "llama",
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 11008,
        "vocab_size": 32000,
        "max_position_embeddings": 4096,
    }
    cfg.update(fields)
    for key in drop:
        cfg.pop(key)
    return json.dumps(cfg).encode()


def _commit(**kw: object) -> bytes:
    entry = {
        "provider": "aws",
        "program": "reserved",
        "term_years": 1,
        "discount_fraction": 0.3,
        "source": "me",
    }
    entry.update(kw)
    return json.dumps({"commitments": [entry]}).encode()


WORKLOAD = b"name: w\nmodel: llama-3-8b\ntask: inference\ninput_len_tokens: 512\noutput_len_tokens: 128\n"
CATALOG = (
    b"version: 1\noffers:\n  - provider: onprem\n    region: dc\n    instance_type: box\n    gpu: H100-SXM\n"
    b"    gpu_count: 8\n    price_on_demand_usd_per_hour: 18.5\n"
)
CASES_HEADER = (
    b"case_id,metric,model,task,gpu,gpu_count,precision,batch,seq_len,input_len,output_len,train_tokens,"
    b"tp,pp,dp,ep,cp,software,measured,unit,note,source\n"
)
ALIAS_BOMB = b'a: &a ["x","x"]\nb: &b [*a,*a]\nc: &c [*b,*b]\nd: [*c,*c]\n'
DEEP_JSON = b"[" * 3000 + b"]" * 3000
DEEP_YAML = b"a: " + b"[" * 300 + b"]" * 300 + b"\n"
LATIN1 = "name: caf\xe9\nmodel: llama-3-8b\n".encode("latin-1")
UTF16_NO_BOM = "model: llama-3-8b\n".encode("utf-16-le")
BINARY = bytes(range(256)) * 16
INVALID_UTF8 = b"model: llama-3-8b\n\xff\xfe\xfa\xc3\x28 garbage \x80\x81\n"

# ---- file-reading commands: (id, argv with {f}, file suffix, kind) ----------------------------------------
FILE_COMMANDS: list[tuple[str, list[str], str, str]] = [
    ("recommend-workload", ["recommend", "{f}"], ".yaml", "yaml"),
    ("migrate-workload", ["migrate", "{f}"], ".yaml", "yaml"),
    ("recommend-json-workload", ["recommend", "{f}"], ".json", "json"),
    ("recommend-catalog", ["recommend", "--model", "llama-3-8b", "--catalog", "{f}"], ".yaml", "yaml"),
    ("offers-catalog", ["catalog", "offers", "--catalog", "{f}"], ".yaml", "yaml"),
    ("offers-json-catalog", ["catalog", "offers", "--catalog", "{f}"], ".json", "json"),
    ("commitments-override", ["catalog", "commitments", "--override", "{f}"], ".yaml", "yaml"),
    ("infer-config", ["estimate", "infer", "-m", "{f}", "-g", "h100"], ".json", "json"),
    (
        "memory-profile",
        ["estimate", "memory", "-m", "llama-3-8b", "-g", "h100", "--profile", "{f}"],
        ".json",
        "json",
    ),
    ("validate-cases", ["validate", "{f}"], ".csv", "csv"),
    ("calibrate-cases", ["calibrate", "{f}", "-o", "{out}"], ".csv", "csv"),
    ("config-check-yaml", ["config", "check", "{f}"], ".yaml", "yaml"),
]

# ---- bad contents: (id, bytes or special, kinds it applies to, key words) ------------------------------
BAD_CONTENTS: list[tuple[str, bytes | str, set[str], list[str]]] = [
    ("latin1", LATIN1, {"yaml", "json", "csv"}, ["not UTF-8", "Latin-1"]),
    ("utf16-no-bom", UTF16_NO_BOM, {"yaml", "json", "csv"}, ["UTF-16"]),
    ("binary", BINARY, {"yaml", "json", "csv"}, ["binary"]),
    ("invalid-utf8", INVALID_UTF8, {"yaml", "json", "csv"}, ["not UTF-8"]),
    ("alias-bomb", ALIAS_BOMB, {"yaml"}, ["aliases"]),
    ("deep-yaml", DEEP_YAML, {"yaml"}, ["nesting deeper"]),
    ("deep-json", DEEP_JSON, {"json"}, ["nesting deeper"]),
    ("dup-key-yaml", b"model: llama-3-8b\nmodel: llama-3-70b\n", {"yaml"}, ["duplicate key"]),
    ("dup-key-json", b'{"model": "a", "model": "b"}', {"json"}, ["duplicate key"]),
    ("big", BIG, {"yaml", "json", "csv"}, ["larger than"]),
    ("fifo", FIFO, {"yaml", "json", "csv"}, ["FIFO"]),
    ("directory", DIR, {"yaml", "json", "csv"}, ["directory"]),
    ("missing", MISSING, {"yaml", "json", "csv"}, ["does not exist"]),
    ("huge-csv-field", CASES_HEADER + b"x," + b"a" * 200_000 + b"\n", {"csv"}, ["CSV error", "line 2"]),
]

# a directory given as --model is read as the folder holding config.json
_OVERRIDE = {("infer-config", "directory"): ["config.json", "does not exist"]}
FILE_CASES = [
    pytest.param(argv, suffix, content, _OVERRIDE.get((cid, bid), words), id=f"{cid}:{bid}")
    for cid, argv, suffix, kind in FILE_COMMANDS
    for bid, content, kinds, words in BAD_CONTENTS
    if kind in kinds
]

# ---- argv-only cases: (argv, key words) ------------------------------------------------------------------
E = ["estimate", "infer", "-m", "llama-3-8b", "-g", "h100"]
T = ["estimate", "train", "-m", "llama-3-8b", "-g", "h100"]
M = ["estimate", "memory", "-m", "llama-3-8b", "-g", "h100"]
R = ["recommend", "--model", "llama-3-8b"]
ABSURD: list[tuple[list[str], list[str]]] = [
    ([*E, "--gpus", "1099511627776"], ["--gpus", "maximum", "1,000,000"]),
    ([*E, "--gpus", "0"], ["--gpus", "greater than 0"]),
    ([*E, "--gpus", "-8"], ["--gpus"]),
    ([*E, "--input-len", "99999999999999999999"], ["--input-len", "maximum"]),
    ([*E, "--input-len", "0"], ["--input-len"]),
    ([*E, "--output-len", "100000000"], ["--output-len", "maximum"]),
    ([*E, "--batch", "1000000000000"], ["--batch", "maximum"]),
    ([*E, "--tp", "0"], ["--tp"]),
    ([*E, "--tp", "4096000"], ["--tp", "maximum"]),
    ([*E, "--pp", "99999999"], ["--pp", "maximum"]),
    ([*T, "--gpus", "1099511627776"], ["--gpus", "maximum"]),
    ([*T, "--tokens", "inf"], ["--tokens", "finite"]),
    ([*T, "--tokens", "nan"], ["--tokens"]),
    ([*T, "--tokens", "-1e12"], ["--tokens"]),
    ([*T, "--tokens", "1e300"], ["--tokens", "maximum"]),
    ([*T, "--seq-len", "100000000"], ["--seq-len", "maximum"]),
    ([*T, "--batch", "1000000000000"], ["--batch", "maximum"]),
    ([*T, "--dp", "0"], ["--dp"]),
    ([*M, "--batch", "1000000000000"], ["--batch", "maximum"]),
    ([*M, "--seq-len", "99999999999"], ["--seq-len", "maximum"]),
    ([*M, "--tp", "-1"], ["--tp"]),
    ([*M, "--input-len", "99999999999"], ["--input-len", "maximum"]),
    ([*R, "--concurrency", "10000000000"], ["--concurrency", "less than or equal"]),
    ([*R, "--concurrency", "0"], ["--concurrency"]),
    ([*R, "--target-rps", "inf"], ["--target-rps", "finite"]),
    ([*R, "--target-rps", "nan"], ["--target-rps", "finite"]),
    ([*R, "--target-rps", "-3"], ["--target-rps"]),
    ([*R, "--target-rps", "1e12"], ["--target-rps", "less than or equal"]),
    ([*R, "--target-tps", "inf"], ["--target-tps"]),
    ([*R, "--budget", "nan"], ["--budget", "finite"]),
    ([*R, "--budget", "inf"], ["--budget", "finite"]),
    ([*R, "--budget", "-100"], ["--budget"]),
    ([*R, "--budget", "1e300"], ["--budget"]),
    ([*R, "--ttft-ms", "nan"], ["--ttft-ms"]),
    ([*R, "--ttft-ms", "-5"], ["--ttft-ms"]),
    ([*R, "--tpot-ms", "inf"], ["--tpot-ms"]),
    ([*R, "--input-len", "99999999999999999999"], ["--input-len"]),
    ([*R, "--input-len", "0"], ["--input-len"]),
    ([*R, "--output-len", "-1"], ["--output-len"]),
    ([*R, "--hours-per-month", "1000"], ["--hours-per-month"]),
    ([*R, "--hours-per-month", "nan"], ["--hours-per-month"]),
    ([*R, "--task", "pretrain", "--tokens", "inf"], ["--tokens"]),
    ([*R, "--task", "pretrain", "--tokens", "1e20"], ["--tokens"]),
    ([*R, "--task", "pretrain", "--tokens", "1e12", "--deadline-hours", "nan"], ["--deadline-hours"]),
    (
        ["migrate", "--model", "llama-3-8b", "--current-instance", "p5.48xlarge", "--current-count", "0"],
        ["count"],
    ),
    (["catalog", "offers", "--gpus", "nan"], ["--gpus"]),
    (["catalog", "offers", "--max-price", "nan"], ["--max-price"]),
    (["catalog", "offers", "--min-gpu-memory", "inf"], ["--min-gpu-memory"]),
    (["catalog", "offers", "--limit", "-1"], ["--limit"]),
    (
        ["catalog", "update", "--provider", "azure", "--dry-run", "--network-budget", "nan"],
        ["--network-budget"],
    ),
    (
        ["estimate", "matrix", "--models", "llama-3-8b", "--gpus", "h100", "--gpu-count", "1099511627776"],
        ["maximum"],
    ),
    (["estimate", "matrix", "--models", "llama-3-8b", "--gpus", "h100", "--input-len", "0"], ["--input-len"]),
]
CONTRADICTIONS: list[tuple[list[str], list[str]]] = [
    ([*R, "--tokens", "1e12"], ["inference workload", "train_tokens"]),
    ([*R, "--deadline-hours", "10"], ["inference workload", "deadline_h"]),
    ([*R, "--task", "pretrain", "--tokens", "1e12", "--concurrency", "4"], ["serving targets"]),
    ([*R, "--task", "pretrain", "--tokens", "1e12", "--ttft-ms", "200"], ["serving targets"]),
    ([*R, "--task", "pretrain"], ["train_tokens"]),
    ([*R, "--concurrency", "4", "--target-rps", "2"], ["at most one"]),
    ([*R, "--schedule", "24/7", "--hours-per-month", "100"], ["one schedule"]),
    ([*E, "--tp", "3"], ["3"]),
    ([*T, "--tp", "16", "--gpus", "8"], ["16"]),
    ([*M, "--pp", "1000"], ["layers"]),
    ([*E, "--input-len", "1000000"], ["maximum context", "131,072"]),
    (
        ["estimate", "infer", "-m", "llama-2-7b", "-g", "h100", "--input-len", "4000"],
        ["maximum context", "4,096"],
    ),
    ([*R, "--input-len", "1000000"], ["maximum context"]),
    (
        ["migrate", "--model", "llama-2-7b", "--current-instance", "p5.48xlarge", "--input-len", "9000"],
        ["context"],
    ),
    (["recommend", "--model", "llama-2-7b", "--input-len", "4000", "--output-len", "200"], ["4,096"]),
]
UNKNOWN: list[tuple[list[str], list[str]]] = [
    (["estimate", "infer", "-m", "llama-3-8bb", "-g", "h100"], ["llama-3-8b"]),
    (["estimate", "infer", "-m", "llama-3-8b", "-g", "h1000"], ["H100"]),
    ([*E, "-p", "bf17"], ["bf16"]),
    ([*E, "--kv-precision", "fp9"], ["fp9"]),
    ([*M, "--engine", "vllmm"], ["vllm"]),
    ([*E, "--engine", "vllmm"], ["software stack", "vllm"]),
    ([*T, "--software", "megatronn"], ["software stack", "megatron"]),
    ([*T, "--engine", "deepspeedd"], ["deepspeed"]),
    ([*M, "--task", "pretrian"], ["pretrian"]),
    ([*M, "--recompute", "sometimes"], ["sometimes"]),
    ([*T, "--task", "inference"], ["inference"]),
    ([*R, "--precision", "fp7"], ["fp7"]),
    ([*R, "--pricing", "3year"], ["3year"]),
    ([*R, "--objective", "cheapestt"], ["cheapestt"]),
    (["recommend", "--model", "x" * 5000], ["x"]),
    (["estimate", "infer", "-m", "x" * 5000 + ".json", "-g", "h100"], ["characters long"]),
    (["scenarios", "run", "no-such-scenario"], ["no-such-scenario"]),
    (["catalog", "update", "--provider", "awz"], ["aws"]),
    (["catalog", "offers", "--gpu", "H1000"], ["H1000"]),
]
ARGV_CASES = [
    pytest.param(argv, words, id=f"{cls}:{i}:{' '.join(argv)[:60]}")
    for cls, cases in (("absurd", ABSURD), ("contradiction", CONTRADICTIONS), ("unknown", UNKNOWN))
    for i, (argv, words) in enumerate(cases)
]

# ---- file contents that are well-formed but wrong (contradictions, unknown names, absurd values) --------
CONTENT_CASES: list[tuple[list[str], str, bytes, list[str]]] = [
    (["recommend", "{f}"], ".yaml", WORKLOAD + b"train_tokens: 1e12\n", ["inference workload"]),
    (["recommend", "{f}"], ".yaml", WORKLOAD + b"deadline_h: 24\n", ["deadline_h"]),
    (["recommend", "{f}"], ".yaml", WORKLOAD + b"concurrency: .nan\n", ["finite"]),
    (["recommend", "{f}"], ".yaml", WORKLOAD + b"concurrency: 1e10\n", ["concurrency"]),
    (["recommend", "{f}"], ".yaml", WORKLOAD + b"budget_usd_per_month: .inf\n", ["finite"]),
    (["recommend", "{f}"], ".yaml", WORKLOAD + b"target_requests_per_s: -1\n", ["target_requests_per_s"]),
    (["recommend", "{f}"], ".yaml", WORKLOAD + b"pricing: weekly\n", ["pricing"]),
    (["recommend", "{f}"], ".yaml", WORKLOAD + b"max_nodes: 100000\n", ["max_nodes"]),
    (["recommend", "{f}"], ".yaml", b"- 1\n- 2\n", ["mapping"]),
    (["recommend", "{f}"], ".yaml", b"42\n", ["mapping"]),
    (
        ["recommend", "{f}"],
        ".json",
        b'{"model": "llama-3-8b", "input_len_tokens": 1e400}',
        ["input_len_tokens"],
    ),
    (
        ["catalog", "offers", "--catalog", "{f}"],
        ".yaml",
        CATALOG.replace(b"version: 1", b"version: 7"),
        ["version"],
    ),
    (
        ["catalog", "offers", "--catalog", "{f}"],
        ".yaml",
        CATALOG + CATALOG[CATALOG.index(b"  - ") :],
        ["duplicate"],
    ),
    (["catalog", "offers", "--catalog", "{f}"], ".yaml", CATALOG.replace(b"18.5", b".nan"), ["price"]),
    (["catalog", "offers", "--catalog", "{f}"], ".yaml", CATALOG.replace(b"18.5", b"-2"), ["price"]),
    (
        ["catalog", "offers", "--catalog", "{f}"],
        ".yaml",
        CATALOG.replace(b"gpu_count: 8", b"gpu_count: 1e12"),
        ["gpu_count"],
    ),
    (
        ["catalog", "offers", "--catalog", "{f}"],
        ".yaml",
        CATALOG.replace(b"H100-SXM", b"H100-SXN"),
        ["H100-SXN"],
    ),
    (["catalog", "offers", "--catalog", "{f}"], ".yaml", b"offers: 5\n", ["offers"]),
    (
        ["catalog", "commitments", "--override", "{f}"],
        ".yaml",
        _commit(provider="awz"),
        ["awz"],
    ),
    (
        ["catalog", "commitments", "--override", "{f}"],
        ".yaml",
        _commit(discount_fraction=1.5),
        ["discount_fraction"],
    ),
    (
        ["estimate", "infer", "-m", "{f}", "-g", "h100"],
        ".json",
        _hf(hidden_size=1e300),
        ["hidden_size"],
    ),
    (
        ["estimate", "infer", "-m", "{f}", "-g", "h100"],
        ".json",
        _hf(num_attention_heads=1_000_000_000),
        ["num_attention_heads"],
    ),
    (
        ["estimate", "infer", "-m", "{f}", "-g", "h100"],
        ".json",
        _hf(hidden_size=64, num_attention_heads=128),
        ["num_attention_heads"],
    ),
    (
        ["estimate", "infer", "-m", "{f}", "-g", "h100"],
        ".json",
        _hf(model_type="mixtral", num_local_experts=8, num_experts_per_tok=9),
        ["num_experts_per_tok"],
    ),
    (
        ["estimate", "infer", "-m", "{f}", "-g", "h100"],
        ".json",
        _hf(model_type="mistral", sliding_window=-5),
        ["sliding_window"],
    ),
    (["estimate", "infer", "-m", "{f}", "-g", "h100"], ".json", b'["not", "an", "object"]', ["object"]),
    (
        ["validate", "{f}"],
        ".csv",
        CASES_HEADER + b"B1,ttft_ms,llama-2-7b,inference,A100-SXM-80GB,1,fp16,1,,128,128,,,,,,,,nan,ms,,\n",
        ["B1"],
    ),
    (
        ["validate", "{f}"],
        ".csv",
        CASES_HEADER
        + b"B1,ttft_ms,llama-2-7b,inference,A100-SXM-80GB,1099511627776,fp16,1,,128,128,,,,,,,,133,ms,,\n",
        ["B1"],
    ),
    (
        ["estimate", "memory", "-m", "llama-3-8b", "-g", "h100", "--profile", "{f}"],
        ".json",
        b'{"version": 1}',
        ["profile"],
    ),
]
CONTENT_PARAMS = [
    pytest.param(argv, suffix, content, words, id=f"content:{i}:{' '.join(argv)[:30]}")
    for i, (argv, suffix, content, words) in enumerate(CONTENT_CASES)
]

runner = CliRunner()


# isolation (own data dir, wide terminal) and the 10 s alarm: conftest.py `cli_case_guard`


def _materialise(tmp_path: Path, suffix: str, content: bytes | str) -> Path:
    path = tmp_path / f"input{suffix}"
    if content == FIFO:
        os.mkfifo(path)
    elif content == DIR:
        path.mkdir()
    elif content == MISSING:
        pass
    elif content == BIG:
        with path.open("wb") as fh:
            fh.write(WORKLOAD)
            fh.write(b"# " + b"x" * (25 * 1024 * 1024) + b"\n")
    else:
        assert isinstance(content, bytes)
        path.write_bytes(content)
    return path


def _check(argv: list[str], words: list[str], subs: dict[str, str] | None = None) -> None:
    """``argv`` (with ``{key}`` placeholders replaced from ``subs``) exits 2, no traceback, no hang, and the
    message names every one of ``words``."""
    for key, value in (subs or {}).items():
        argv = [a.replace("{" + key + "}", value) for a in argv]
    res = runner.invoke(app, argv)
    out = res.output
    assert not isinstance(res.exception, TimeoutError), f"hang: {argv}"
    assert "Traceback" not in out, out
    assert res.exit_code == 2, f"exit {res.exit_code} (exception {res.exception!r}): {out[-800:]}"
    flat = " ".join(out.split())
    for w in words:
        assert w.lower() in flat.lower(), f"{w!r} not in: {flat[-800:]}"


@pytest.mark.parametrize(("argv", "suffix", "content", "words"), FILE_CASES)
def test_bad_file(
    tmp_path: Path, argv: list[str], suffix: str, content: bytes | str, words: list[str]
) -> None:
    path = _materialise(tmp_path, suffix, content)
    _check([a.replace("{f}", str(path)).replace("{out}", str(tmp_path / "out.json")) for a in argv], words)


@pytest.mark.parametrize(("argv", "words"), ARGV_CASES)
def test_bad_argv(argv: list[str], words: list[str]) -> None:
    _check(argv, words)


@pytest.mark.parametrize(("argv", "suffix", "content", "words"), CONTENT_PARAMS)
def test_bad_content(tmp_path: Path, argv: list[str], suffix: str, content: bytes, words: list[str]) -> None:
    path = _materialise(tmp_path, suffix, content)
    _check([a.replace("{f}", str(path)) for a in argv], words)


def test_dev_zero_as_catalog() -> None:
    _check(["catalog", "offers", "--catalog", "/dev/zero"], ["device"])


def test_corpus_size() -> None:
    assert len(FILE_CASES) + len(ARGV_CASES) + len(CONTENT_PARAMS) + 1 >= 150


# ---- more model-config contradictions and absurd values ----------------------------------------------------
HF_CASES: list[tuple[bytes, list[str]]] = [
    (
        _hf(model_type="deepseek_v3", n_routed_experts=8, num_experts_per_tok=2, first_k_dense_replace=99),
        ["first_k_dense_replace"],
    ),
    (_hf(num_key_value_heads=64), ["num_key_value_heads"]),
    (_hf(num_hidden_layers=0), ["num_hidden_layers"]),
    (_hf(num_hidden_layers=1e9), ["num_hidden_layers"]),
    (_hf(vocab_size=-3), ["vocab_size"]),
    (_hf(vocab_size="big"), ["vocab_size"]),
    (_hf(intermediate_size=1.5), ["intermediate_size"]),
    (_hf(hidden_size=True), ["hidden_size"]),
    (_hf(max_position_embeddings=1e300), ["max_position_embeddings"]),
    (_hf(model_type="mixtral", num_local_experts=10**7, num_experts_per_tok=2), ["num_local_experts"]),
]


@pytest.mark.parametrize(("content", "words"), HF_CASES, ids=[f"hf:{i}" for i in range(len(HF_CASES))])
def test_bad_model_config(tmp_path: Path, content: bytes, words: list[str]) -> None:
    path = _materialise(tmp_path, ".json", content)
    _check(["estimate", "memory", "-m", str(path), "-g", "h100"], words)


@pytest.fixture(autouse=True)
def _isolated(cli_case_guard: None) -> None:
    """Every case of this module runs under the shared guard."""
