"""Measure real models on a lent GPU and write the results as calibration cases.

Builds random-weight models from the shipped ``models.json`` configs with torch + transformers (no hub access:
``AutoConfig.for_model`` + ``AutoModelForCausalLM.from_config``, initialised on the GPU), then measures
at a few batch × prompt-length points:

- ``peak_memory_gib``: ``torch.cuda.max_memory_allocated`` over prefill + decode (compare with the estimator's
  ``allocated_gib``; the CUDA context is not included), and ``memory_allocated`` once the weights are built
  (task ``load``);
- ``ttft_ms``: prefill forward of ``batch`` prompts + greedy pick of the first token, timed with CUDA events;
- ``tpot_ms``: mean time per decode step over ``--output-len`` steps with the KV cache (``use_cache=True``).

Each point runs a warm-up pass first and reports the median of ``--repeats`` runs. The output is a CSV in the
calibration schema (software ``transformers``, source naming this probe, the date, the GPU and the versions),
ready for ``gpufleet validate`` / ``gpufleet calibrate``.

torch and transformers are imported lazily (only in :func:`measure` and :func:`main`), so the repository's
tests and linters do not need them. Usage (on a GPU machine)::

    python benchmarks/gpu_probe.py --models llama-3.2-1b,qwen2.5-0.5b --out probe_cases.csv
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from gpufleet.estimate.cases import CalibrationCase, write_cases_csv
from gpufleet.units import MS_PER_S, gib_from_bytes

#: HF architecture class (first word of models.json "architecture") -> transformers ``model_type``
ARCH_MODEL_TYPES: dict[str, str] = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "MixtralForCausalLM": "mixtral",
    "Qwen2ForCausalLM": "qwen2",
    "Gemma2ForCausalLM": "gemma2",
    "Gemma3ForCausalLM": "gemma3_text",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "Llama4ForCausalLM": "llama4_text",
    "GptOssForCausalLM": "gpt_oss",
    "Phi3ForCausalLM": "phi3",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "GPT2LMHeadModel": "gpt2",
    "FalconForCausalLM": "falcon",
    "GPTJForCausalLM": "gptj",
    "GPTBigCodeForCausalLM": "gpt_bigcode",
    "BertForMaskedLM": "bert",
}

#: models.json "GPT-style decoder" entries (Megatron GPT-3 family) are built as GPT-2 (learned pos, GELU MLP)
_GPT_STYLE_RENAMES = {
    "hidden_size": "n_embd",
    "num_hidden_layers": "n_layer",
    "num_attention_heads": "n_head",
    "intermediate_size": "n_inner",
    "max_position_embeddings": "n_positions",
}
#: models.json keys that document the entry and are not HF config fields
_NON_HF_KEYS = ("layer_pattern",)

#: torch.cuda.get_device_name() -> spec id, for names that are not spec aliases (as nvidia-smi reports them)
DEVICE_NAMES: dict[str, str] = {
    "NVIDIA H100 80GB HBM3": "H100-SXM",
    "NVIDIA H100 PCIe": "H100-PCIe",
    "NVIDIA H100 NVL": "H100-NVL",
    "NVIDIA H200": "H200-SXM",
    "NVIDIA H200 NVL": "H200-NVL",
    "NVIDIA GH200 480GB": "GH200",
    "NVIDIA A100-SXM4-80GB": "A100-SXM-80GB",
    "NVIDIA A100-SXM4-40GB": "A100-SXM-40GB",
    "NVIDIA A100 80GB PCIe": "A100-PCIe-80GB",
    "NVIDIA A100-PCIE-40GB": "A100-PCIe-40GB",
    "Tesla V100-SXM2-16GB": "V100-SXM2-16GB",
    "Tesla V100-SXM2-32GB": "V100-SXM2-32GB",
    "Tesla V100-PCIE-16GB": "V100-PCIe-16GB",
    "Tesla T4": "T4",
    "NVIDIA A10G": "A10G",
    "NVIDIA A10": "A10",
    "NVIDIA L4": "L4",
    "NVIDIA L40S": "L40S",
    "NVIDIA L40": "L40",
    "NVIDIA B200": "B200",
}

DEFAULT_MODELS = ("qwen2.5-0.5b", "llama-3.2-1b", "gpt2", "llama-3.2-3b", "llama-3.1-8b", "mistral-7b")
_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


class ProbeError(Exception):
    """A model or option the probe cannot run."""


def load_model_entries() -> dict[str, dict[str, Any]]:
    """The shipped models.json entries by id."""
    text = resources.files("gpufleet.models").joinpath("data", "models.json").read_text(encoding="utf-8")
    return {m["id"]: m for m in json.loads(text)["models"]}


def hf_config_dict(entry: dict[str, Any]) -> dict[str, Any]:
    """A transformers config dict (with ``model_type``) for a models.json entry; ProbeError if unknown."""
    arch_class = str(entry.get("architecture", "")).split(" ")[0]
    cfg = {k: v for k, v in entry["config"].items() if not k.startswith("note") and k not in _NON_HF_KEYS}
    if not isinstance(cfg.get("rope_scaling", {}), dict):
        # models.json states the scaling in words ("llama3 (factor 8, ...)"); the frequencies do not change
        # the cost, so the random-weight model is built without it
        cfg.pop("rope_scaling")
    if arch_class == "GPT-style":
        cfg = {_GPT_STYLE_RENAMES.get(k, k): v for k, v in cfg.items() if k != "num_key_value_heads"}
        return {"model_type": "gpt2", **cfg}
    if arch_class not in ARCH_MODEL_TYPES:
        raise ProbeError(f"{entry['id']}: no transformers model_type known for {arch_class!r}")
    return {"model_type": ARCH_MODEL_TYPES[arch_class], **cfg}


@dataclass(frozen=True, slots=True, kw_only=True)
class Measurement:
    """One probe point. Times in seconds, memory in bytes as torch reports them."""

    model_id: str
    gpu: str  # accelerator spec id
    precision: str
    batch: int  # concurrent sequences
    input_len: int  # prompt tokens
    output_len: int  # decode steps timed
    ttft_s: float
    tpot_s: float
    peak_allocated_bytes: int  # torch.cuda.max_memory_allocated over prefill + decode
    weights_allocated_bytes: int  # torch.cuda.memory_allocated after building the model


def gpu_id_for_device(device_name: str) -> str:
    """The spec id of a torch device name; raises ProbeError (pass --gpu) when it cannot be told."""
    from gpufleet.catalog.specs import get_spec
    from gpufleet.errors import UnknownNameError

    if device_name in DEVICE_NAMES:
        return DEVICE_NAMES[device_name]
    for candidate in (device_name, device_name.removeprefix("NVIDIA ").removeprefix("Tesla ")):
        try:
            return get_spec(candidate).id
        except UnknownNameError:
            continue
    raise ProbeError(f"cannot map device {device_name!r} to an accelerator id; pass --gpu with its spec id")


def source_text(device_name: str, when: datetime, versions: str, script: str = "gpu_probe.py") -> str:
    return f"gpufleet benchmarks/{script} {when:%Y-%m-%d} on {device_name} ({versions})"


def measurement_cases(m: Measurement, source: str) -> list[CalibrationCase]:
    """The calibration rows of one measurement: ttft_ms, tpot_ms and peak_memory_gib (inference)."""
    stem = f"P-{m.model_id}-{m.gpu}-{m.precision}-b{m.batch}-i{m.input_len}"
    note = (
        "random weights, transformers eager generate loop (greedy, DynamicCache, last-token logits), "
        "median of repeats"
    )
    common: dict[str, Any] = {
        "model": m.model_id, "task": "inference", "gpu": m.gpu, "gpu_count": 1, "precision": m.precision,
        "batch": m.batch, "seq_len": None, "input_len": float(m.input_len), "train_tokens": None, "tp": 1,
        "pp": 1, "dp": 1, "ep": None, "cp": None, "software": "transformers", "note": note, "source": source,
    }  # fmt: skip
    return [
        CalibrationCase(case_id=f"{stem}-ttft", metric="ttft_ms", output_len=1.0,
                        measured=m.ttft_s * MS_PER_S, unit="ms", **common),
        CalibrationCase(case_id=f"{stem}-tpot", metric="tpot_ms", output_len=float(m.output_len),
                        measured=m.tpot_s * MS_PER_S, unit="ms", **common),
        CalibrationCase(case_id=f"{stem}-mem", metric="peak_memory_gib", output_len=float(m.output_len),
                        measured=gib_from_bytes(m.peak_allocated_bytes), unit="GiB", **common),
    ]  # fmt: skip


def load_case(model_id: str, gpu: str, precision: str, weights_bytes: int, source: str) -> CalibrationCase:
    """The weights-only ``load`` row of one model."""
    return CalibrationCase(
        case_id=f"P-{model_id}-{gpu}-{precision}-load", metric="peak_memory_gib", model=model_id, task="load",
        gpu=gpu, gpu_count=1, precision=precision, batch=None, seq_len=None, input_len=None, output_len=None,
        train_tokens=None, tp=None, pp=None, dp=None, ep=None, cp=None, software="transformers",
        measured=gib_from_bytes(weights_bytes), unit="GiB", note="random weights built on the GPU, no inputs",
        source=source,
    )  # fmt: skip


def median_time_s(run: Callable[[], float], repeats: int) -> float:
    """Median of ``repeats`` calls of ``run`` (each returns seconds)."""
    return statistics.median(run() for _ in range(repeats))


def measure(
    model_id: str, entry: dict[str, Any], gpu: str, precision: str, batches: Sequence[int],
    input_lens: Sequence[int], output_len: int, repeats: int,
) -> tuple[int, list[Measurement]]:  # fmt: skip
    """Build one random-weight model on the GPU and measure every batch × input length (needs torch)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg_dict = hf_config_dict(entry)
    model_type = cfg_dict.pop("model_type")
    if model_type == "bert":
        raise ProbeError(f"{model_id}: encoder-only, no generation to time")
    config = AutoConfig.for_model(model_type, **cfg_dict)
    dtype = getattr(torch, _DTYPES[precision])
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    model.eval()
    # held after building, not the peak: a tied-embedding model allocates its LM head before tying it
    weights_bytes = torch.cuda.memory_allocated()
    vocab = int(config.vocab_size)

    def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out = fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / MS_PER_S, out

    def one_run(ids: Any, steps: int) -> tuple[float, float]:
        with torch.inference_mode():
            # generate() asks for the last position's logits only (``logits_to_keep=1``), so does the probe
            t_prefill, out = timed(lambda: model(input_ids=ids, use_cache=True, logits_to_keep=1))
            t_pick, tok = timed(lambda: out.logits[:, -1, :].argmax(dim=-1, keepdim=True))
            past, total = out.past_key_values, 0.0
            for _ in range(steps):
                dt, out = timed(lambda: model(input_ids=tok, past_key_values=past, use_cache=True))  # noqa: B023
                tok, past, total = (
                    out.logits[:, -1, :].argmax(dim=-1, keepdim=True),
                    out.past_key_values,
                    total + dt,
                )
        return t_prefill + t_pick, total / max(steps, 1)

    results: list[Measurement] = []
    for batch in batches:
        for input_len in input_lens:
            ids = torch.randint(0, vocab, (batch, input_len), device="cuda")
            try:
                one_run(ids, 2)  # warm-up at this shape: cuBLAS kernel choice, allocator, handles
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                runs = [one_run(ids, output_len) for _ in range(repeats)]
                peak = torch.cuda.max_memory_allocated()
            except torch.cuda.OutOfMemoryError:
                torch.cuda.empty_cache()
                print(
                    f"# {model_id} batch {batch} input {input_len}: out of memory, skipped", file=sys.stderr
                )
                continue
            results.append(
                Measurement(
                    model_id=model_id, gpu=gpu, precision=precision, batch=batch, input_len=input_len,
                    output_len=output_len, ttft_s=statistics.median(r[0] for r in runs),
                    tpot_s=statistics.median(r[1] for r in runs), peak_allocated_bytes=peak,
                    weights_allocated_bytes=weights_bytes,
                )
            )  # fmt: skip
    return weights_bytes, results


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS))
    ap.add_argument("--gpu", default=None, help="spec id (default: from torch.cuda.get_device_name)")
    ap.add_argument("--precision", default="bf16", choices=sorted(_DTYPES))
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--input-lens", default="512,2048")
    ap.add_argument("--output-len", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("probe_cases.csv"))
    args = ap.parse_args(argv)

    import torch
    import transformers

    device_name = torch.cuda.get_device_name(0)
    gpu = args.gpu or gpu_id_for_device(device_name)
    versions = f"torch {torch.__version__}, transformers {transformers.__version__}"
    source = source_text(device_name, datetime.now(UTC), versions)
    entries = load_model_entries()
    cases: list[CalibrationCase] = []
    for model_id in [m.strip() for m in args.models.split(",") if m.strip()]:
        try:
            weights, points = measure(
                model_id, entries[model_id], gpu, args.precision, _ints(args.batches), _ints(args.input_lens),
                args.output_len, args.repeats,
            )  # fmt: skip
        except (ProbeError, KeyError, torch.cuda.OutOfMemoryError) as exc:
            print(f"# {model_id}: skipped ({exc})", file=sys.stderr)
            continue
        torch.cuda.empty_cache()  # the model was freed when measure() returned
        cases.append(load_case(model_id, gpu, args.precision, weights, source))
        for p in points:
            cases.extend(measurement_cases(p, source))
            peak_gib = gib_from_bytes(p.peak_allocated_bytes)
            print(f"{model_id} b{p.batch} i{p.input_len}: ttft {p.ttft_s * MS_PER_S:.1f} ms, "
                  f"tpot {p.tpot_s * MS_PER_S:.2f} ms, peak {peak_gib:.2f} GiB")  # fmt: skip
        args.out.write_text(
            write_cases_csv(cases), encoding="utf-8"
        )  # after each model: keep partial results
    print(f"wrote {len(cases)} cases to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
