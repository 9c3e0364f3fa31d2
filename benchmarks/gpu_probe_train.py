"""Measure fine-tuning steps of real models on a lent GPU and write them as calibration cases.

The training half of ``gpu_probe.py`` (same model building: random weights from the shipped ``models.json``
configs, no hub access). Each point is one Hugging Face Trainer-style step on one GPU, the recipe the case
schema calls ``transformers`` (preset ``hf_trainer``, :mod:`gpufleet.estimate.recipes`):

- ``full_finetune``: fp32 master weights under ``torch.autocast(bfloat16)`` (Trainer ``bf16=True``), torch
  AdamW (``adamw_torch_fused``, fp32 moments: 16 B/param with the fp32 gradients), loss in the model's
  forward;
- ``lora``: a bf16 base model, PEFT ``get_peft_model`` with rank 16 on every linear layer (``all-linear``:
  q, k, v, o, gate, up, down), adapters upcast to fp32 (PEFT's default), AdamW over the adapters;
- each with and without activation checkpointing (``gradient_checkpointing_enable``, non-reentrant).

Attention is transformers' default SDPA (FlashAttention-2 kernels inside PyTorch). Measured per point:
``train_step_s`` (forward + backward + optimizer step + zero_grad, CUDA events, median of ``--steps`` steps
after two warm-up steps) and ``peak_memory_gib`` (``torch.cuda.max_memory_allocated`` over the timed steps).

torch, transformers and peft are imported lazily (in :func:`measure_training` and :func:`main`), so the
repository's tests and linters do not need them. Usage (on a GPU machine)::

    python benchmarks/gpu_probe_train.py --points full_finetune:llama-3.2-1b:4:2048:0 --out train_cases.csv
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpu_probe import ProbeError, gpu_id_for_device, hf_config_dict, load_model_entries, source_text
from gpufleet.estimate.cases import CalibrationCase, write_cases_csv
from gpufleet.units import gib_from_bytes

#: PEFT LoRA settings of every ``lora`` point: the estimator's default rank and targets (memory.LORA_TARGETS)
LORA_RANK = 16
TASKS = ("full_finetune", "lora")

DEFAULT_POINTS = (
    "full_finetune:llama-3.2-1b:4:2048:0",
    "full_finetune:llama-3.2-1b:4:2048:1",
    "full_finetune:qwen2.5-0.5b:8:2048:0",
    "full_finetune:llama-3.2-3b:4:2048:1",
    "lora:llama-3.1-8b:2:2048:0",
    "lora:llama-3.1-8b:4:2048:1",
    "lora:qwen2.5-14b:4:2048:1",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainPoint:
    """One configuration to measure: ``task:model:batch:seq_len:checkpointing(0|1)``."""

    task: str
    model_id: str
    batch: int
    seq_len: int
    checkpointing: bool

    @classmethod
    def parse(cls, text: str) -> TrainPoint:
        parts = text.strip().split(":")
        sizes_ok = len(parts) == 5 and all(x.isdigit() and int(x) > 0 for x in parts[2:4])
        if not sizes_ok or parts[0] not in TASKS or parts[4] not in ("0", "1"):
            raise ProbeError(
                f"point {text!r}: expected task:model:batch:seq_len:0|1 with task in {TASKS} and positive "
                "integer batch and seq_len"
            )
        return cls(task=parts[0], model_id=parts[1], batch=int(parts[2]), seq_len=int(parts[3]),
                   checkpointing=parts[4] == "1")  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainMeasurement:
    """One measured point. Time in seconds, memory in bytes as torch reports them."""

    point: TrainPoint
    gpu: str  # accelerator spec id
    step_s: float
    peak_allocated_bytes: int
    trainable_params: int


def train_cases(m: TrainMeasurement, source: str) -> list[CalibrationCase]:
    """The calibration rows of one training point: train_step_s and peak_memory_gib."""
    p = m.point
    ckpt = "gradient checkpointing (non-reentrant)" if p.checkpointing else "no activation checkpointing"
    if p.task == "lora":
        how = f"PEFT LoRA r={LORA_RANK} all-linear, bf16 base, fp32 adapters, torch fused AdamW"
    else:
        how = "HF Trainer-style bf16 AMP: fp32 master weights, torch fused AdamW (fp32 states)"
    note = (
        f"random weights; {how}; {ckpt}; SDPA attention; loss in the model forward; "
        f"{m.trainable_params / 1e6:.1f}M trainable parameters; median step of a timed run"
    )
    stem = (
        f"P-{p.task}-{p.model_id}-{m.gpu}-b{p.batch}-s{p.seq_len}-{'ckpt' if p.checkpointing else 'nockpt'}"
    )
    common: dict[str, Any] = {
        "model": p.model_id, "task": p.task, "gpu": m.gpu, "gpu_count": 1, "precision": "bf16",
        "batch": p.batch, "seq_len": float(p.seq_len), "input_len": None, "output_len": None,
        "train_tokens": None, "tp": 1, "pp": 1, "dp": 1, "ep": None, "cp": None, "software": "transformers",
        "optimizer": "adamw", "note": note, "source": source,
    }  # fmt: skip
    return [
        CalibrationCase(case_id=f"{stem}-step", metric="train_step_s", measured=m.step_s, unit="s", **common),
        CalibrationCase(case_id=f"{stem}-mem", metric="peak_memory_gib",
                        measured=gib_from_bytes(m.peak_allocated_bytes), unit="GiB", **common),
    ]  # fmt: skip


def measure_training(
    p: TrainPoint, entry: dict[str, Any], gpu: str, steps: int, device: str = "cuda"
) -> TrainMeasurement:
    """Build the model, run two warm-up steps and ``steps`` timed ones (needs torch, transformers, peft)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg_dict = hf_config_dict(entry)
    config = AutoConfig.for_model(cfg_dict.pop("model_type"), **cfg_dict)
    config.use_cache = False
    on_gpu = device == "cuda"
    if on_gpu:
        gc.collect()
        torch.cuda.empty_cache()
    base_dtype = torch.float32 if p.task == "full_finetune" else torch.bfloat16
    with torch.device(device):
        model: Any = AutoModelForCausalLM.from_config(config, dtype=base_dtype)
    if p.task == "lora":
        from peft import LoraConfig, get_peft_model

        lora = LoraConfig(
            r=LORA_RANK, lora_alpha=2 * LORA_RANK, lora_dropout=0.0, target_modules="all-linear",
            task_type="CAUSAL_LM",
        )  # fmt: skip
        model = get_peft_model(model, lora)
    if p.checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    params = [q for q in model.parameters() if q.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-5, fused=on_gpu)
    ids = torch.randint(0, int(config.vocab_size), (p.batch, p.seq_len), device=device)

    def step() -> None:
        with torch.autocast(device, dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    times: list[float] = []
    for _ in range(2):  # warm-up: kernels, allocator, optimizer states
        step()
    if on_gpu:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    for _ in range(steps):
        if not on_gpu:  # a dry run of the code path (tests on a machine without a GPU)
            step()
            times.append(0.0)
            continue
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1000.0)
    peak = torch.cuda.max_memory_allocated() if on_gpu else 0
    trainable = sum(q.numel() for q in params)
    return TrainMeasurement(point=p, gpu=gpu, step_s=statistics.median(times), peak_allocated_bytes=peak,
                            trainable_params=trainable)  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", default=",".join(DEFAULT_POINTS), help="task:model:batch:seq_len:ckpt, ...")
    ap.add_argument("--gpu", default=None, help="spec id (default: from torch.cuda.get_device_name)")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("train_cases.csv"))
    args = ap.parse_args(argv)

    import peft
    import torch
    import transformers

    try:
        points = [TrainPoint.parse(t) for t in args.points.split(",") if t.strip()]
    except ProbeError as exc:
        ap.error(str(exc))  # exit 2 with the usage line, no traceback
    device_name = torch.cuda.get_device_name(0)
    gpu = args.gpu or gpu_id_for_device(device_name)
    versions = f"torch {torch.__version__}, transformers {transformers.__version__}, peft {peft.__version__}"
    source = source_text(device_name, datetime.now(UTC), versions, script="gpu_probe_train.py")
    entries = load_model_entries()
    cases: list[CalibrationCase] = []
    for p in points:
        gc.collect()  # the last point's model (HF modules hold reference cycles)
        torch.cuda.empty_cache()
        try:
            m = measure_training(p, entries[p.model_id], gpu, args.steps)
        except (ProbeError, KeyError, torch.cuda.OutOfMemoryError) as exc:
            print(f"# {p}: skipped ({type(exc).__name__}: {str(exc)[:200]})", file=sys.stderr)
            gc.collect()
            torch.cuda.empty_cache()
            continue
        cases.extend(train_cases(m, source))
        peak_gib = gib_from_bytes(m.peak_allocated_bytes)
        print(f"{p.task} {p.model_id} b{p.batch} s{p.seq_len} ckpt={int(p.checkpointing)}: "
              f"step {m.step_s:.3f} s, peak {peak_gib:.2f} GiB", flush=True)  # fmt: skip
        args.out.write_text(
            write_cases_csv(cases), encoding="utf-8"
        )  # after each point: keep partial results
    print(f"wrote {len(cases)} cases to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
