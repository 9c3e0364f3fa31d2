"""`gpufleet estimate memory|train|infer|matrix` through the CLI runner: output, JSON and every bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app

runner = CliRunner()
WIDE = {"COLUMNS": "220"}


def run(*args: str) -> Any:
    return runner.invoke(app, ["estimate", *args], env=WIDE)


def ok(*args: str) -> Any:
    """An answer: exit 0, or exit 5 (gpufleet.cli.exit_codes.DOES_NOT_FIT) after the table when it says the
    configuration does not fit."""
    result = run(*args)
    assert result.exit_code in (0, 5), result.output
    assert (result.exit_code == 5) == ("Exit 5 (does_not_fit)" in result.stderr), result.output
    return result


def user_error(*args: str, fragments: tuple[str, ...] = ()) -> str:
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    flat = " ".join(result.output.split())
    for frag in fragments:
        assert frag in flat, (frag, flat)
    return flat


# --- memory -------------------------------------------------------------------------------------------------
def test_memory_table_shows_breakdown_and_verdict() -> None:
    out = ok("memory", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--seq-len", "4096").stdout
    assert "needed" in out and "device capacity" in out and "fits" in out
    assert "Notes and assumptions" in out


def test_memory_json_is_the_typed_result() -> None:
    out = ok("memory", "-m", "llama-3.1-8b", "-g", "H100", "--format", "json").stdout
    doc = json.loads(out)
    assert doc["fits"] is True
    assert set(doc) >= {"per_gpu_gib", "allocated_gib", "usable_gib", "capacity_gib", "breakdown_gib"}
    assert doc["per_gpu_gib"] > 15.0  # 8.03e9 params × 2 bytes = 15 GiB of weights alone
    assert doc["allocated_gib"] <= doc["per_gpu_gib"]


def test_memory_does_not_fit_is_a_result_not_an_error() -> None:
    out = ok("memory", "-m", "llama-3.1-70b", "-g", "L4", "--format", "json").stdout
    assert json.loads(out)["fits"] is False
    table = ok("memory", "-m", "llama-3.1-70b", "-g", "L4").stdout
    assert "does not fit" in table


def test_memory_training_with_zero() -> None:
    doc = json.loads(ok("memory", "-m", "llama-3.1-8b", "-g", "H100", "--task", "pretrain", "--dp", "8",
                        "--zero", "3", "--format", "json").stdout)  # fmt: skip
    doc0 = json.loads(ok("memory", "-m", "llama-3.1-8b", "-g", "H100", "--task", "pretrain", "--dp", "8",
                         "--zero", "0", "--format", "json").stdout)  # fmt: skip
    assert doc["per_gpu_gib"] < doc0["per_gpu_gib"]


# --- inference and training -----------------------------------------------------------------------------
def test_infer_table_and_json() -> None:
    table = ok("infer", "-m", "llama-3.1-8b", "-g", "H100", "--batch", "8").stdout
    assert "TTFT" in table and "TPOT" in table and "requests/s" in table and "TP 1" in table
    doc = json.loads(ok("infer", "-m", "llama-3.1-8b", "-g", "H100", "--batch", "8", "-f", "json").stdout)
    assert doc["fits"] is True and doc["batch_per_replica"] == 8
    ttft = doc["ttft_s"]
    assert 0 < ttft["p10"] <= ttft["central"] <= ttft["p90"]
    assert isinstance(doc["notes"], list) and "memory" in doc


def test_infer_table_shows_the_tpot_a_request_sees_under_load() -> None:
    # at 64 concurrent requests each decode step also carries the prompts joining meanwhile: the table shows
    # that TPOT and the decode step it is built on, and the system throughput matches the loaded one
    args = ("infer", "-m", "llama-3.1-70b", "-g", "H100", "--gpus", "4", "-p", "fp8", "--batch", "64")
    doc = json.loads(ok(*args, "--engine", "vllm", "-f", "json").stdout)
    loaded, step = doc["tpot_loaded_s"]["central"], doc["tpot_s"]["central"]
    assert loaded > step
    per_replica = doc["output_tokens_per_s"]["central"] / doc["replicas"]
    assert per_replica == pytest.approx(64 / loaded, rel=0.02)
    table = ok(*args, "--engine", "vllm").stdout
    assert "TPOT at this concurrency" in table and "decode step alone" in table
    single = ok("infer", "-m", "llama-3.1-8b", "-g", "H100", "--batch", "1").stdout
    assert "TPOT at this concurrency" not in single and "TPOT" in single


def test_infer_multi_gpu_replicas() -> None:
    doc = json.loads(ok("infer", "-m", "llama-3.1-70b", "-g", "H100", "--gpus", "8", "--tp", "4",
                        "-f", "json").stdout)  # fmt: skip
    assert doc["tp"] == 4 and doc["replicas"] == 2


def test_infer_expert_parallel_with_attention_dp() -> None:
    args = ("infer", "-m", "deepseek-r1", "-g", "H200-SXM", "--gpus", "8", "--precision", "fp8", "--ep", "8")
    table = ok(*args, "--attention-dp", "--engine", "trtllm").stdout
    assert "EP 8 (attention TP 1 × DP 8)" in table
    doc = json.loads(ok(*args, "--attention-dp", "-f", "json").stdout)
    assert doc["ep"] == 8 and doc["tp"] == 1 and doc["attention_dp"] == 8 and doc["gpus_per_replica"] == 8


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (("--ep", "3"), "ep must divide"),
        (("--ep", "0"), "--ep must be greater than 0"),
        (("--ep", "16"), "needs more than the 8 GPUs"),
        (("--attention-dp",), "needs expert parallelism"),
        (("--ep", "8", "--tp", "3"), "not a multiple of tp"),
    ],
)
def test_infer_bad_expert_parallel_options(extra: tuple[str, ...], fragment: str) -> None:
    user_error("infer", "-m", "deepseek-r1", "-g", "H200-SXM", "--gpus", "8", "--precision", "fp8", *extra,
               fragments=(fragment,))  # fmt: skip


def test_infer_ep_on_a_dense_model_is_a_user_error() -> None:
    user_error("infer", "-m", "llama-3.1-8b", "-g", "H100", "--gpus", "8", "--ep", "8", fragments=("dense",))


def test_train_table_and_json() -> None:
    table = ok("train", "-m", "llama-3.1-8b", "-g", "H100", "--gpus", "8", "--tokens", "1e9").stdout
    assert "tokens/s per GPU" in table and "MFU" in table and "time to train" in table
    doc = json.loads(ok("train", "-m", "llama-3.1-8b", "-g", "H100", "--gpus", "8", "--tokens", "1e9",
                        "-f", "json").stdout)  # fmt: skip
    assert doc["fits"] is True and doc["tp"] * doc["pp"] * doc["dp"] == 8
    assert 0 < doc["mfu"] < 1 and doc["time_to_train_s"]["central"] > 0


#: a 70B pre-training job on 64 H100s with 4 pipeline stages (the --virtual-stages tests)
TRAIN_70B_PP4 = ("train", "-m", "llama-3.1-70b", "-g", "H100", "--gpus", "64", "--pp", "4")


def test_train_virtual_stages_reach_the_estimator() -> None:
    """Interleaved 1F1B with more chunks per rank shrinks the pipeline bubble: v = 4 steps faster than plain
    1F1B (v = 1), both equal to the library's figures."""
    from gpufleet.estimate.performance import estimate_training

    step = {}
    for v in (1, 4):
        doc = json.loads(ok(*TRAIN_70B_PP4, "--tp", "8", "-f", "json", "--virtual-stages", str(v)).stdout)
        step[v] = doc["step_time_s"]["central"]
        lib = estimate_training(
            model="llama-3.1-70b", task="pretrain", gpu="H100", precision="bf16", gpu_count=64,
            global_batch=256, seq_len=4096, tp=8, pp=4, virtual_stages=v,
        )  # fmt: skip
        assert step[v] == pytest.approx(lib.step_time_s.central, rel=1e-12)
    assert step[4] < step[1]


@pytest.mark.parametrize("value", ["0", "-2"])
def test_train_virtual_stages_must_be_positive(value: str) -> None:
    user_error(*TRAIN_70B_PP4, "--virtual-stages", value, fragments=("--virtual-stages", "greater than 0"))


def test_train_virtual_stages_must_be_whole() -> None:
    user_error(*TRAIN_70B_PP4, "--virtual-stages", "1.5", fragments=("--virtual-stages", "not a valid int"))


# --- matrix ---------------------------------------------------------------------------------------------
def test_matrix_all_modes_mark_no_fit_and_unsupported() -> None:
    out = ok(
        "matrix", "--models", "llama-3.1-8b,llama-3.1-70b", "--gpus", "H100,T4", "--format", "markdown"
    ).stdout
    assert "tok/s" in out and "h/100M" in out and "TTFT" in out
    assert "does not fit" in out
    assert "unsupported" in out  # bf16 compute on a T4
    assert "| fp32 | bf16 | fp8 | int8 | int4 |" in out


def test_matrix_memory_json() -> None:
    doc = json.loads(ok("matrix", "--models", "llama-3.1-8b", "--gpus", "H100", "--mode", "memory",
                        "-f", "json").stdout)  # fmt: skip
    assert doc["kind"] == "estimate_matrix" and doc["gpufleet_version"]
    (grid,) = doc["grids"]
    assert grid["mode"] == "memory" and grid["corner"] == "model on GPU"
    assert grid["columns"] == ["fp32", "bf16", "fp8", "int8", "int4"]
    cells = grid["rows"][0]["cells"]
    gib = [c["mem_per_gpu_gib"] for c in cells]  # numbers, not formatted text
    assert all(isinstance(g, float) for g in gib)
    assert gib == sorted(gib, reverse=True)  # fewer bytes per weight, less memory


def test_matrix_memory_marks_weight_only_and_unsupported_formats() -> None:
    args = ("matrix", "--models", "llama-3.1-8b", "--gpus", "A100-SXM-80GB,T4", "--mode", "memory")
    (grid,) = json.loads(ok(*args, "-f", "json").stdout)["grids"]
    a100, t4 = (row["cells"] for row in grid["rows"])
    assert a100[2]["fallback"] == "weight-only"  # fp8 weights on Ampere: weight-only kernels exist
    assert a100[2]["text"].endswith("GiB (weight-only)")
    assert t4[2]["status"] == "unsupported"  # fp8 on Turing: no kernel at all
    assert t4[1]["fallback"] == "fp16 compute"  # bf16 weights on a T4 run as fp16


def test_matrix_table() -> None:
    out = ok("matrix", "--models", "llama-3.2-1b", "--gpus", "A100-SXM-80GB", "--mode", "infer").stdout
    assert "TTFT" in out and "req/s" in out


# --- bad input: exit 2, one paragraph, no traceback -------------------------------------------------------
def test_unknown_model_lists_close_matches() -> None:
    user_error("memory", "-m", "llama-3.1-8", "-g", "H100", fragments=("Unknown model", "llama-3.1-8b"))


def test_unknown_gpu_lists_close_matches() -> None:
    user_error("infer", "-m", "llama-3.1-8b", "-g", "H10O-SXM", fragments=("Unknown GPU", "H100"))


def test_unknown_model_in_matrix() -> None:
    user_error("matrix", "--models", "llama-3.1-8b,lama-2-70", "--gpus", "H100", fragments=("Unknown model",))


def test_tp_that_does_not_divide_heads() -> None:
    user_error("memory", "-m", "llama-3.1-8b", "-g", "H100", "--tp", "3", fragments=("3", "heads"))
    user_error(
        "infer", "-m", "llama-3.1-8b", "-g", "H100", "--gpus", "3", "--tp", "3", fragments=("3", "heads")
    )


@pytest.mark.parametrize(
    "args",
    [
        ("memory", "--batch", "0"),
        ("memory", "--seq-len", "-5"),
        ("infer", "--input-len", "0"),
        ("infer", "--output-len", "-1"),
        ("infer", "--batch", "0"),
        ("train", "--batch", "-8"),
        ("train", "--tokens", "0"),
        ("train", "--gpus", "0"),
    ],
)
def test_zero_or_negative_numbers(args: tuple[str, ...]) -> None:
    cmd, flag, value = args
    user_error(cmd, "-m", "llama-3.1-8b", "-g", "H100", flag, value, fragments=(flag, "greater than 0"))


def test_matrix_zero_batch() -> None:
    user_error("matrix", "--models", "gpt2", "--gpus", "H100", "--batch", "0", fragments=("--batch",))


def test_config_json_missing_fields(tmp_path: Path) -> None:
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "llama", "hidden_size": 4096}), encoding="utf-8")
    user_error("memory", "-m", str(cfg), "-g", "H100", fragments=("config.json",))


def test_config_json_path_works(tmp_path: Path) -> None:
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({
        "model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
        "num_key_value_heads": 8, "intermediate_size": 8192, "vocab_size": 128256,
        "max_position_embeddings": 131072, "tie_word_embeddings": True,
    }), encoding="utf-8")  # fmt: skip
    assert json.loads(ok("memory", "-m", str(cfg), "-g", "H100", "-f", "json").stdout)["fits"] is True


def test_unknown_precision() -> None:
    user_error("memory", "-m", "gpt2", "-g", "H100", "--precision", "fp12", fragments=("fp12", "bf16"))


def test_bf16_on_t4_is_an_error_or_an_explicit_fallback() -> None:
    user_error("infer", "-m", "llama-3.2-1b", "-g", "T4", "--precision", "bf16", fragments=("bf16", "T4"))
    doc = json.loads(ok("infer", "-m", "llama-3.2-1b", "-g", "T4", "--precision", "bf16", "--allow-fallback",
                        "-f", "json").stdout)  # fmt: skip
    assert any("fp16" in n for n in doc["notes"])


def test_memory_of_an_unsupported_precision_is_an_error_or_an_explicit_fallback() -> None:
    user_error("memory", "-m", "llama-2-7b", "-g", "T4", "--precision", "bf16", fragments=("bf16", "T4"))
    user_error("memory", "-m", "llama-2-7b", "-g", "T4", "--precision", "fp8", fragments=("fp8", "T4"))
    doc = json.loads(ok("memory", "-m", "llama-2-7b", "-g", "T4", "--precision", "bf16", "--allow-fallback",
                        "-f", "json").stdout)  # fmt: skip
    assert any("fp16" in a for a in doc["assumptions"])


def test_bf16_training_on_v100_is_an_error() -> None:
    user_error("train", "-m", "gpt2", "-g", "V100", "--gpus", "1", "--batch", "8", "--seq-len", "1024",
               "--precision", "bf16", fragments=("bf16",))  # fmt: skip


def test_fp8_on_a100_is_an_error_or_an_explicit_fallback() -> None:
    user_error("infer", "-m", "llama-3.1-8b", "-g", "A100-SXM-80GB", "--precision", "fp8", fragments=("fp8",))
    doc = json.loads(ok("infer", "-m", "llama-3.1-8b", "-g", "A100-SXM-80GB", "--precision", "fp8",
                        "--allow-fallback", "-f", "json").stdout)  # fmt: skip
    assert doc["notes"]


def test_bad_profile_files(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    user_error("infer", "-m", "gpt2", "-g", "H100", "--profile", str(missing), fragments=("missing.json",))
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text("{not json", encoding="utf-8")
    user_error("infer", "-m", "gpt2", "-g", "H100", "--profile", str(corrupt), fragments=("corrupt.json",))
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"params": "fast"}), encoding="utf-8")
    user_error("train", "-m", "gpt2", "-g", "H100", "--profile", str(wrong), fragments=("wrong.json",))


def test_memory_checks_the_profile_too(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text("{", encoding="utf-8")
    user_error("memory", "-m", "gpt2", "-g", "H100", "--profile", str(corrupt), fragments=("corrupt.json",))


def test_unknown_task() -> None:
    user_error("memory", "-m", "gpt2", "-g", "H100", "--task", "serving", fragments=("serving", "inference"))
    user_error(
        "train", "-m", "gpt2", "-g", "H100", "--task", "inference", fragments=("inference", "pretrain")
    )


def test_encoder_model_inference_is_unsupported() -> None:
    user_error("infer", "-m", "bert-base-uncased", "-g", "H100", fragments=("encoder",))


def test_matrix_lists_take_repeats_and_commas() -> None:
    base = ("matrix", "--mode", "memory", "-f", "json")
    a = ok(*base, "--models", "llama-3.2-1b,llama-3.1-8b", "--gpus", "H100").stdout
    b = ok(*base, "--models", "llama-3.2-1b", "--models", "llama-3.1-8b", "--gpus", "H100").stdout
    assert a == b and len(json.loads(a)["grids"][0]["rows"]) == 2


# --- published formats --------------------------------------------------------------------------------------
def test_serving_defaults_to_the_published_format() -> None:
    """gpt-oss is published in MXFP4 (~12.8 GiB for the 20B): with no --precision, `estimate memory` and
    `estimate infer` size it as released (OpenAI: gpt-oss-20b runs within 16 GB), with a note; bf16 stays one
    option away, and training keeps bf16 (a fine-tune dequantises)."""
    served = json.loads(
        ok("memory", "-m", "gpt-oss-20b", "-g", "RTX-A4000", "--engine", "transformers", "-f", "json").stdout
    )
    assert served["fits"] is True and any("published in" in a for a in served["assumptions"])
    # under vLLM's 0.9 budget it fits only at the central estimate (~0.1 GiB spare): the verdict is at p90
    vllm = json.loads(ok("memory", "-m", "gpt-oss-20b", "-g", "RTX-A4000", "--format", "json").stdout)
    assert vllm["fits"] is False and vllm["per_gpu_gib_p90"] > vllm["per_gpu_gib"]
    assert vllm["allocated_gib"] + vllm["breakdown_gib"]["cuda_graphs"] <= vllm["usable_gib"]
    bf16 = json.loads(
        ok("memory", "-m", "gpt-oss-20b", "-g", "RTX-A4000", "-p", "bf16", "--format", "json").stdout
    )
    assert bf16["fits"] is False and not any("published in" in a for a in bf16["assumptions"])
    assert bf16["breakdown_gib"]["weights"] > 2.5 * served["breakdown_gib"]["weights"]
    infer = json.loads(
        ok("infer", "-m", "deepseek-v3", "-g", "H200-SXM", "--gpus", "8", "--format", "json").stdout
    )
    assert any("precision fp8" in n for n in infer["notes"])
    dense = ok("infer", "-m", "llama-3.1-8b", "-g", "H100-SXM").stdout
    assert "bf16" in dense and "published in" not in dense
    train = json.loads(
        ok("memory", "-m", "gpt-oss-20b", "-g", "H100-SXM", "--task", "lora", "--format", "json").stdout
    )
    assert not any("published in" in a for a in train["assumptions"])
