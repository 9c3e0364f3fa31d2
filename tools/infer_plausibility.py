"""Plausibility sweep of the inference estimator against practitioner ranges and rooflines.

Usage: python tools/infer_plausibility.py [--all] [--gpus A,B] [--models A,B] [--stacks vllm,blank,...]

For a grid of GPUs x models x precisions x stacks it prints the implied quantities of the estimates and
flags those outside the ranges practitioners report (each range cites its source below):

* ``bw1``: batch-1 decode, achieved share of peak memory bandwidth = (weight bytes read per token + KV
  bytes at the context) / TPOT / (GPUs working at once, tp or ep, x peak bandwidth). Expected 0.55-0.85
  for vLLM, TensorRT-LLM and llama.cpp on NVIDIA (batch-1 GEMV kernels ~80 % of HBM peak, NVIDIA
  "Mastering LLM Techniques: Inference Optimization" blog 2023; llama.cpp RTX 4090 Llama-3-8B F16 tg
  54 tok/s = 16 GB x 54 / 1008 GB/s ~0.86, XiongjieDai/GPU-Benchmarks-on-LLM-Inference); below 0.3 or
  above 0.9 is flagged (per-step host overhead dominates fast GPUs at batch 1, so low values there are
  expected for stacks with a large overhead: HF transformers, TGI).
* ``pf``: prefill of a 2048-token prompt at batch 1, achieved share of the dense peak at the compute
  precision = prefill FLOPs / TTFT / (GPUs working at once x peak). Expected ~0.4-0.7 on Hopper/Ampere
  in 16 bit (cuBLAS GEMMs at transformer sizes, NVIDIA "Matrix multiplication background" guide;
  TRT-LLM A100 Llama-2-7B TTFT 133 ms for 2048 tokens = 0.66 of 312 TFLOP/s); above 0.85 is flagged
  (beats a tuned GEMM; GeForce parts list the halved fp32-accumulate peak, so llama.cpp's fp16-accumulate
  GEMMs may pass it legitimately).
* ``q4x``: batch-1 decode speed-up of int4 weight-only over 16 bit on the same GPU and stack. Expected
  ~2.3-3.5x for 7-8B models (Marlin ~3.5-3.9x per layer, Frantar et al. 2024 fig. 1; llama.cpp Q4_K_M vs
  F16 on RTX 4090 127.7 / 54.3 = 2.35x, XiongjieDai); outside 1.8-3.9x is flagged.
* ``roof``: saturated output tokens/s x FLOPs per output token (its prompt's prefill included) / (GPUs x
  dense peak): must stay below 1 (a compute roofline); above 0.8 is flagged.
* ``mono``: throughput must not fall and TPOT must not shrink as the batch grows 1 -> 8 -> 32 -> 128.

Run by developers; never imported at run time.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from dataclasses import dataclass

from gpufleet.catalog.specs import get_spec
from gpufleet.errors import GpufleetError
from gpufleet.estimate import compute as cx
from gpufleet.estimate.inference import HEAD_BYTES_QUANTISED, estimate_inference
from gpufleet.estimate.kv_cache import kv_cache_bytes_per_token
from gpufleet.estimate.support import precision_support
from gpufleet.models.registry import resolve_model
from gpufleet.precision import QUANTISED_FORMATS, bytes_per_element

GPUS = (
    "T4", "A10G", "L4", "L40S", "A100-SXM-80GB", "H100-SXM", "H200-SXM", "B200", "MI300X", "Gaudi2",
    "RTX-4090", "RTX-3090", "RTX-A6000",
)  # fmt: skip
MODELS = ("llama-3.1-8b", "llama-3.1-70b", "mistral-7b", "mixtral-8x7b", "qwen2.5-7b", "qwen2.5-32b")
PRECISIONS = ("16", "fp8", "int8", "int4")  # "16": bf16 where the GPU has it, else fp16
STACKS = ("vllm", "tgi", "trtllm", "llamacpp", "sglang", "transformers", "blank")
BATCHES = (1, 8, 32, 128)
IN_LEN, OUT_LEN = 1024, 256  # serving shape of the batch sweep
PREFILL_LEN = 2048  # prompt of the TTFT probe

BW1_RANGE = (0.3, 0.9)
PF_MAX = 0.85
Q4X_RANGE = (1.8, 3.9)
ROOF_MAX = 0.8


@dataclass(frozen=True, slots=True)
class Row:
    gpu: str
    model: str
    prec: str
    stack: str
    gpus: int
    tp: int
    pp: int
    bw1: float | None
    pf: float | None
    tok_s: dict[int, float]
    tpot_ms: dict[int, float]
    sat_tok_s: float | None
    sat_batch: int | None
    roof: float | None
    flags: tuple[str, ...]


def _precision(gpu: str, p: str) -> str:
    if p != "16":
        return p
    return "bf16" if get_spec(gpu).bf16_tflops else "fp16"


def _fits_count(model: str, gpu: str, prec: str, sw: str | None) -> int | None:
    for n in (1, 2, 4, 8):
        try:
            e = estimate_inference(
                model=model, gpu=gpu, precision=prec, input_len=IN_LEN, output_len=OUT_LEN, gpu_count=n,
                batch=1, software=sw,
            )  # fmt: skip
        except GpufleetError:
            return None
        if e.fits:
            return n
    return None


def _bytes_per_token(model: str, prec: str, ctx: float) -> float:
    """Weight bytes one batch-1 decode step reads (all GPUs) plus the KV cache at ``ctx`` [bytes]."""
    m = resolve_model(model)
    shape = cx.model_shape(m)
    wb = bytes_per_element(prec)
    head_b = HEAD_BYTES_QUANTISED if prec in QUANTISED_FORMATS else wb
    body = cx.decode_weight_params(m, 1.0) - shape.lm_head_params
    kv_prec = "fp8" if prec == "fp8" else None
    return body * wb + shape.lm_head_params * head_b + ctx * kv_cache_bytes_per_token(m, kv_prec)


def _peak_flops(gpu: str, prec: str) -> float:
    spec = get_spec(gpu)
    sup = precision_support(spec, prec, allow_fallback=False)
    peak = spec.dense_peak_tflops(sup.compute_precision) or sup.peak16_tflops or 0.0
    return peak * 1e12


def sweep_one(model: str, gpu: str, p: str, stack: str) -> Row | None:
    prec = _precision(gpu, p)
    sw = None if stack == "blank" else stack
    n = _fits_count(model, gpu, prec, sw)
    if n is None:
        return None
    spec = get_spec(gpu)
    kw = dict(model=model, gpu=gpu, precision=prec, gpu_count=n, software=sw)
    flags: list[str] = []
    tok_s: dict[int, float] = {}
    tpot: dict[int, float] = {}
    tp = pp = width = 1
    for b in BATCHES:
        e = estimate_inference(input_len=IN_LEN, output_len=OUT_LEN, batch=b, **kw)
        if not e.fits or e.output_tokens_per_s is None or e.tpot_s is None:
            continue  # this batch does not fit the GPUs' memory: not shown
        tok_s[b], tpot[b] = e.output_tokens_per_s.central, e.tpot_s.central * 1e3
        if b == 1:
            tp, pp, width = e.tp, e.pp, e.gpus_per_replica // e.pp
    bw1 = None
    if 1 in tpot:
        # mean context of the decode (input + half the output), as the estimator's TPOT
        ctx = IN_LEN + OUT_LEN / 2
        bw1 = _bytes_per_token(model, prec, ctx) / (tpot[1] / 1e3) / (width * spec.mem_bw_gb_per_s * 1e9)
        if not BW1_RANGE[0] <= bw1 <= BW1_RANGE[1]:
            flags.append(f"bw1={bw1:.2f}")
    e1 = estimate_inference(input_len=PREFILL_LEN, output_len=1, batch=1, **kw)
    pf = None
    peak = _peak_flops(gpu, prec)
    if e1.ttft_s is not None and peak > 0:
        width1 = e1.gpus_per_replica // e1.pp
        pf = cx.prefill_flops(resolve_model(model), PREFILL_LEN) / e1.ttft_s.central / (width1 * peak)
        if pf > PF_MAX:
            flags.append(f"pf={pf:.2f}")
    es = estimate_inference(input_len=IN_LEN, output_len=OUT_LEN, **kw)
    sat = es.output_tokens_per_s.central if es.output_tokens_per_s else None
    roof = None
    if sat is not None and peak > 0:
        m = resolve_model(model)
        flops = (
            cx.prefill_flops(m, IN_LEN)
            + sum(cx.decode_flops_per_token(m, IN_LEN + i) for i in range(0, OUT_LEN, 16)) * 16
        )  # every 16th position, x16
        roof = sat * flops / OUT_LEN / (n * peak)
        if roof > ROOF_MAX:
            flags.append(f"roof={roof:.2f}")
    bs = sorted(tok_s)
    for a, b in itertools.pairwise(bs):
        if tok_s[b] < tok_s[a] * 0.999:
            flags.append(f"tok/s falls b{a}->b{b}")
        if tpot[b] < tpot[a] * 0.999:
            flags.append(f"tpot shrinks b{a}->b{b}")
    sat_b = es.batch_per_replica
    return Row(gpu, model, prec, stack, n, tp, pp, bw1, pf, tok_s, tpot, sat, sat_b, roof, tuple(flags))


def _fmt(x: float | None, f: str = ".2f") -> str:
    return "-" if x is None else format(x, f)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="print every row, not only flagged ones")
    ap.add_argument("--gpus", default=",".join(GPUS))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--precisions", default=",".join(PRECISIONS))
    ap.add_argument("--stacks", default=",".join(STACKS))
    args = ap.parse_args(argv)
    rows: list[Row] = []
    for gpu in args.gpus.split(","):
        for model in args.models.split(","):
            for p in args.precisions.split(","):
                for stack in args.stacks.split(","):
                    try:
                        r = sweep_one(model, gpu, p, stack)
                    except GpufleetError:
                        r = None
                    if r is not None:
                        rows.append(r)
    # int4 / 16-bit batch-1 speed-up, per (gpu, model, stack, gpus)
    by = {(r.gpu, r.model, r.stack, r.prec): r for r in rows}
    q4x: dict[tuple[str, str, str], float] = {}
    for r in rows:
        if r.prec != "int4" or 1 not in r.tpot_ms:
            continue
        ref = by.get((r.gpu, r.model, r.stack, _precision(r.gpu, "16")))
        if ref is not None and 1 in ref.tpot_ms and ref.gpus == r.gpus:
            q4x[(r.gpu, r.model, r.stack)] = ref.tpot_ms[1] / r.tpot_ms[1]
    head = (
        f"{'gpu':14s} {'model':14s} {'prec':5s} {'stack':12s} {'n':>2s} {'tp':>2s} {'pp':>2s} {'bw1':>5s} "
        f"{'pf':>5s} {'q4x':>5s} {'tpot1ms':>8s} {'tok/s b1':>9s} {'b8':>8s} {'b32':>8s} {'b128':>8s} "
        f"{'sat':>9s} {'satB':>5s} {'roof':>5s}  flags"
    )
    print(head)
    flagged = 0
    for r in rows:
        flags = list(r.flags)
        x = q4x.get((r.gpu, r.model, r.stack)) if r.prec == "int4" else None
        if x is not None and not Q4X_RANGE[0] <= x <= Q4X_RANGE[1]:
            flags.append(f"q4x={x:.2f}")
        flagged += bool(flags)
        if not flags and not args.all:
            continue
        print(
            f"{r.gpu:14s} {r.model:14s} {r.prec:5s} {r.stack:12s} {r.gpus:2d} {r.tp:2d} {r.pp:2d} "
            f"{_fmt(r.bw1):>5s} {_fmt(r.pf):>5s} {_fmt(x):>5s} {_fmt(r.tpot_ms.get(1), '.2f'):>8s} "
            + " ".join(f"{_fmt(r.tok_s.get(b), '.0f'):>8s}" for b in BATCHES)
            + f" {_fmt(r.sat_tok_s, '.0f'):>9s} {r.sat_batch or 0:5d} {_fmt(r.roof):>5s}  {'; '.join(flags)}"
        )
    print(f"{len(rows)} configurations, {flagged} flagged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
