"""Practitioners' rules for ``gpufleet estimate memory|infer|train`` (docs/performance.md, "Practitioners'
rules we check (estimate)"): the answers an ML engineer reads to decide "does this fit, how fast, on what
layout".

Every case runs the real CLI (table and ``--format json``); expectations come from the inputs and published
reference data (model cards, datasheets, engine defaults), and every "does not fit" hint is run back through
the CLI to check that it fits. Calibrated speeds are not checked here (tests/estimate/test_cases.py is).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from typer.testing import CliRunner

from gpufleet.cli.app import app

runner = CliRunner()
WIDE = {"COLUMNS": "240"}

#: Llama-3.1-70B parameters (Meta model card: 70.6B)
LLAMA_70B_PARAMS = 70.6e9
#: mixed-precision Adam: 2 (bf16 weights) + 2 (grads) + 12 (fp32 master, m, v) bytes per parameter
#: (Rajbhandari et al. 2020, ZeRO, sec. 3.1)
ADAM_MIXED_BYTES_PER_PARAM = 16
#: vLLM's default gpu_memory_utilization (vLLM engine arguments docs)
VLLM_GPU_MEMORY_UTILIZATION = 0.9


def cli(*args: str) -> str:
    """The table of an estimate: exit 0, or 5 (gpufleet.cli.exit_codes.DOES_NOT_FIT) when it says so."""
    res = runner.invoke(app, ["estimate", *args], env=WIDE)
    assert res.exit_code in (0, 5), res.output
    assert (res.exit_code == 5) == ("Exit 5 (does_not_fit)" in res.stderr), res.output
    return " ".join(res.stdout.split())


def cli_json(*args: str) -> dict[str, Any]:
    res = runner.invoke(app, ["estimate", *args, "--format", "json"], env=WIDE)
    doc: dict[str, Any] = json.loads(res.stdout)
    assert res.exit_code == (0 if doc["fits"] else 5), res.output  # 5: does not fit (cli.exit_codes)
    return doc


def notes_of(doc: dict[str, Any]) -> str:
    return " ".join(doc.get("notes") or doc["assumptions"])


def test_train_does_not_fit_names_the_fewest_gpus_that_fit() -> None:
    """A "does not fit" training verdict names a GPU count that fits, verified (DeepSpeed ZeRO docs: shard
    weights, grads and optimizer state over more ranks). Llama-3.1-70B full fine-tuning needs 70.6B x 16 B
    = 1,130 GB of weight, gradient and Adam state (ZeRO paper sec. 3.1): more than 8 x 80 GB H100, less than
    16, so the fewest power-of-two count is 16."""
    need_gb = LLAMA_70B_PARAMS * ADAM_MIXED_BYTES_PER_PARAM / 1e9
    expected = 2 ** math.ceil(math.log2(need_gb / 80.0))
    args = ("-m", "llama-3.1-70b", "-g", "h100", "--batch", "64", "--seq-len", "4096")
    doc = cli_json("train", *args, "--task", "full_finetune", "--gpus", "8")
    assert doc["fits"] is False
    m = re.search(r"fits on (\d+) \(--gpus (\d+)\)", notes_of(doc))
    assert m is not None, notes_of(doc)
    assert int(m.group(2)) == expected == 16
    assert cli_json("train", *args, "--task", "full_finetune", "--gpus", m.group(2))["fits"] is True
    # a lighter task on the same GPUs (PEFT LoRA: frozen base, adapters only) is offered and fits
    lm = re.search(r"--task (lora|qlora) fits on these 8", notes_of(doc))
    assert lm is not None
    assert cli_json("train", *args, "--gpus", "8", "--task", lm.group(1))["fits"] is True


def test_qlora_70b_on_two_24gb_cards_hint_fits_when_run() -> None:
    """QLoRA 70B on 2 x 24 GB with FSDP (Answer.AI FSDP+QLoRA 2024): when the memory model says no recompute /
    ZeRO option fits at DP 2, the hint names flags beyond the ones given (more ranks, or a shorter sequence
    with full recompute, as Answer.AI ran with gradient checkpointing) and each fits when run."""
    base = ("-m", "llama-3.1-70b", "-g", "rtx4090", "--task", "qlora", "--zero", "3")
    doc = cli_json("memory", *base, "--dp", "2")
    assert doc["fits"] is False
    notes = notes_of(doc)
    assert "--dp above 2" in notes  # not "--dp N --zero 3" again: the user already sharded over 2
    m = re.search(r"--dp (\d+) --zero 3 --recompute full", notes)
    assert m is not None, notes
    assert int(m.group(1)) > 2
    assert cli_json("memory", *base, "--dp", m.group(1), "--recompute", "full")["fits"] is True
    s = re.search(r"--seq-len (\d+) --zero 3 --recompute full on these GPUs", notes)
    assert s is not None, notes
    assert cli_json("memory", *base, "--dp", "2", "--seq-len", s.group(1), "--recompute", "full")["fits"]


def test_memory_hint_is_in_json_as_in_table() -> None:
    """Table and JSON say the same thing: the "does not fit" advice the table prints is in the JSON too."""
    args = ("-m", "llama-3.1-8b", "-g", "rtx4090", "--task", "full_finetune")
    table = cli("memory", *args)
    doc = cli_json("memory", *args)
    assert "Verified: it fits with --dp" in table
    assert "Verified: it fits with --dp" in notes_of(doc)


def test_serving_does_not_fit_names_gpus_and_precision_that_fit() -> None:
    """70B in bf16 is 141 GB of weights (70.6B x 2 B); at vLLM's gpu_memory_utilization 0.9 a 24 GB card holds
    21.6 GB, so 2 cards cannot serve it and the fewest power-of-two count (TP must divide 64 heads) is 8
    (vLLM distributed-serving docs: raise tensor_parallel_size until the weights fit). An int4 checkpoint
    (AWQ/GPTQ, 35 GB) is the same-hardware alternative."""
    weights_gb = LLAMA_70B_PARAMS * 2 / 1e9
    expected = 2 ** math.ceil(math.log2(weights_gb / (24.0 * VLLM_GPU_MEMORY_UTILIZATION)))
    args = ("-m", "llama-3.1-70b", "-g", "rtx4090")
    doc = cli_json("infer", *args, "--gpus", "2")
    assert doc["fits"] is False
    m = re.search(r"\(--gpus (\d+)\)", notes_of(doc))
    assert m is not None, notes_of(doc)
    assert int(m.group(1)) == expected == 8
    assert cli_json("infer", *args, "--gpus", m.group(1))["fits"] is True
    assert "--precision int4 fits on these 2" in notes_of(doc)
    assert cli_json("infer", *args, "--gpus", "2", "--precision", "int4")["fits"] is True


def test_memory_inference_does_not_fit_names_tensor_parallel_that_fits() -> None:
    """`estimate memory` for serving 70B bf16 on one 80 GB A100: 141 GB > 72 GB usable (0.9 x 80), 70.6 GB
    per GPU at TP 2 fits, so the hint is --tp 2 (vLLM docs: tensor parallel within a node), and it fits."""
    weights_gb = LLAMA_70B_PARAMS * 2 / 1e9
    expected_tp = 2 ** math.ceil(math.log2(weights_gb / (80.0 * VLLM_GPU_MEMORY_UTILIZATION)))
    doc = cli_json("memory", "-m", "llama-3.1-70b", "-g", "a100-80gb")
    assert doc["fits"] is False
    m = re.search(r"--tp (\d+):", notes_of(doc))
    assert m is not None, notes_of(doc)
    assert int(m.group(1)) == expected_tp == 2
    assert cli_json("memory", "-m", "llama-3.1-70b", "-g", "a100-80gb", "--tp", m.group(1))["fits"] is True


def test_engine_default_is_stated() -> None:
    """Defaults behind "fits" and the batch are visible: without --engine the memory reserve and batch cap are
    vLLM's (gpu_memory_utilization 0.9, max_num_seqs 256: vLLM engine-arguments docs), and the notes say so
    rather than "software unknown"."""
    notes = notes_of(cli_json("infer", "-m", "mixtral-8x7b", "-g", "a100-80gb", "--gpus", "2"))
    assert "software unknown" not in notes
    assert "vllm" in notes
    assert "max_num_seqs 256" in notes
    assert "--engine" in notes


def test_multi_node_fabric_is_stated() -> None:
    """A job over several nodes states the scale-out network it is timed with (NeMo/Megatron performance
    tables quote it; a DGX H100 has 8 x 400 Gb/s NDR InfiniBand, DGX H100 user guide), since `recommend`
    prices each offer with its own fabric; a one-node job has no such note."""
    multi = notes_of(cli_json("train", "-m", "llama-3.1-70b", "-g", "h100", "--gpus", "32"))
    assert "4 nodes of 8 GPUs over 3,200 Gb/s RDMA per node" in multi
    single = notes_of(cli_json("train", "-m", "llama-3.1-8b", "-g", "h100", "--gpus", "8"))
    assert "nodes of" not in single
    serve = cli_json("infer", "-m", "llama-3.1-405b", "-g", "h100", "--gpus", "16", "--precision", "bf16")
    assert "2 nodes of 8 GPUs" in notes_of(serve)


def test_serving_layout_tp_within_node_pp_across() -> None:
    """405B in bf16 (810 GB) on 16 x H100: TP 8 inside each node, PP 2 across the two nodes (vLLM
    distributed-serving docs: tensor_parallel_size = GPUs per node, pipeline_parallel_size = nodes)."""
    doc = cli_json("infer", "-m", "llama-3.1-405b", "-g", "h100", "--gpus", "16", "--precision", "bf16")
    assert (doc["tp"], doc["pp"], doc["replicas"]) == (8, 2, 1)


def test_throughput_latency_little_law() -> None:
    """TPOT, TTFT and throughput agree in a closed loop at concurrency b (vLLM benchmark_serving: latency =
    TTFT + (out - 1) x TPOT): requests/s = replicas x b / latency within 3 %, and output tokens/s = requests/s
    x output tokens. Not exact by construction: TTFT times the newcomer's prompt as a forward of its own
    (latency mode), while the throughput cycle carries prompt tokens inside the shared decode steps, whose
    weight reads they share (about 2 % apart on 70B / 8 x A100 with the 2026-11-26 fit)."""
    out = 256
    for args in (
        ("-m", "mixtral-8x7b", "-g", "a100-80gb", "--gpus", "2"),
        ("-m", "llama-3.1-70b", "-g", "a100-80gb", "--gpus", "8"),
        ("-m", "llama-3.1-8b", "-g", "h100", "--engine", "tgi"),
    ):
        d = cli_json("infer", *args, "--output-len", str(out))
        latency = d["ttft_s"]["central"] + (out - 1) * d["tpot_loaded_s"]["central"]
        little = d["replicas"] * d["batch_per_replica"] / latency
        assert abs(d["requests_per_s"]["central"] / little - 1) < 0.03, (args, d["requests_per_s"], little)
        assert math.isclose(d["output_tokens_per_s"]["central"], d["requests_per_s"]["central"] * out)


def test_fp8_70b_concurrency_matches_kv_arithmetic() -> None:
    """Max concurrency of 70B fp8 on 4 x H100 at 8k context follows from the KV cache: 80 layers x 2 (K, V) x
    8 KV heads x 128 x 1 B = 160 KiB per token, split over the TP ranks (vLLM PagedAttention); the KV-bound
    sequences per replica = floor(KV GiB per GPU / (context x per-token bytes per GPU))."""
    d = cli_json(
        "infer", "-m", "llama-3.1-70b", "-g", "h100", "--gpus", "4", "--precision", "fp8",
        "--input-len", "7168", "--output-len", "1024",
    )  # fmt: skip
    per_token_gpu = 80 * 2 * 8 * 128 * 1 / d["tp"]
    kv_gib = d["memory"]["breakdown_gib"]["kv_cache"]
    expected = math.floor(kv_gib * 2**30 / (8192 * per_token_gpu))
    assert abs(d["max_concurrency_per_replica"] - expected) <= 1
    assert "KV cache assumed fp8" in notes_of(d)  # the default KV precision is stated


def test_moe_training_layout_names_expert_parallelism() -> None:
    """An MoE training layout names its expert-parallel degree (Megatron-LM --expert-model-parallel-size; the
    NeMo Mixtral-8x7B recipes run EP 8): Mixtral's 8 experts x 5.6B parameters cannot sit whole on each of
    64 x 80 GB ranks with ZeRO-1 (47B x 2 B of bf16 weights alone is 93 GB), so EP > 1 must divide the 8
    experts, and the table and JSON say which."""
    args = ("train", "-m", "mixtral-8x7b", "-g", "h100", "--gpus", "64", "--batch", "512")
    d = cli_json(*args)
    assert d["fits"] is True
    assert 47e9 * 2 / 1e9 > 80  # why EP is needed at all
    assert d["ep"] > 1 and 8 % d["ep"] == 0 and d["dp"] % d["ep"] == 0
    assert f"(EP {d['ep']} within DP)" in cli(*args)
    assert f"ep={d['ep']} within dp" in notes_of(d)
    assert cli_json("train", "-m", "llama-3.1-8b", "-g", "h100", "--gpus", "8")["ep"] == 1


def test_matrix_unsupported_cell_says_why() -> None:
    """`estimate matrix` of 8B across consumer cards: a T4 (Turing, compute capability 7.5) has no bf16
    tensor cores (NVIDIA T4 datasheet; vLLM asks for --dtype half there), and the cell says so in the table
    and in JSON, as `estimate infer` does, rather than a bare "unsupported"."""
    res = runner.invoke(
        app, ["estimate", "matrix", "--models", "llama-3.1-8b", "--gpus", "rtx4090,t4", "--mode", "infer"],
        env=WIDE,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "unsupported: T4 has no hardware support for bf16" in " ".join(res.output.split())
    res = runner.invoke(
        app,
        ["estimate", "matrix", "--models", "llama-3.1-8b", "--gpus", "t4", "--mode", "infer", "-f", "json"],
        env=WIDE,
    )
    cell = json.loads(res.output)["grids"][0]["rows"][0]["cells"][0]
    assert cell["status"] == "unsupported"
    assert "bf16" in cell["reason"]
