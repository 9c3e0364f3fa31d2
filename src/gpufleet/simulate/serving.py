"""One serving replica's speed, from the estimator: prefill time by prompt length, decode step by batch.

The simulator does not re-derive speeds: it samples :func:`gpufleet.estimate_inference` on a grid and
interpolates.

* prefill [s] of one prompt of ``n`` tokens = the estimator's TTFT at batch 1 (batch 1: no other sequence
  shares the step), sampled at prompt lengths 64 ... the model's context and interpolated linearly (the
  attention term makes it slightly convex; the grid is dense enough that linear interpolation is within a
  few per cent). A group of prompts prefilled together costs the sum of their prefills less the shared
  per-step overhead (one forward pass).
* decode step [s] at ``b`` running sequences = the estimator's TPOT at batch ``b`` and the trace's mean
  context (input + output / 2), sampled at b = 1, 2, 4, ... the cap and interpolated linearly. The context
  of each request is not tracked (a documented approximation: the KV read term uses the mean).
* KV capacity [tokens] = the estimator's KV-bound concurrency at the mean context x that context;
  ``max_batch`` = that concurrency (capped by the engine's ``max_num_seqs``, vLLM 256,
  :data:`gpufleet.estimate.performance.ENGINE_MAX_BATCH`) is the replica's typical concurrency limit (the
  autoscalers' capacity). With paged KV (the default, :mod:`gpufleet.simulate.cluster`) the KV pool is the
  limit and the batch may reach ``engine_max_seqs``; the decode step beyond the sampled batches is
  extrapolated linearly from the last two samples (the step is linear in the batch: weights + per-sequence
  KV reads), since the estimator refuses batches whose mean-context KV does not fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gpufleet.errors import InfeasibleError, InputError
from gpufleet.estimate.performance import ENGINE_MAX_BATCH, estimate_inference
from gpufleet.models import resolve_model
from gpufleet.units import GIB

#: tokens one prefill pass takes at most: vLLM ``max_num_batched_tokens`` (8192 in the V1 OpenAI server on
#: data-centre GPUs, vllm/engine/arg_utils.py); a longer prompt is still prefilled alone
MAX_PREFILL_TOKENS = 8192


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceModel:
    """Speed of one replica: piecewise-linear tables (x ascending)."""

    name: str
    gpus_per_replica: int
    prefill_tokens: tuple[float, ...]  # prompt lengths sampled [tokens]
    prefill_s: tuple[float, ...]  # prefill time at those lengths [s]
    step_overhead_s: float  # per forward pass, shared by a prefill group [s]
    decode_batch: tuple[float, ...]  # batch sizes sampled [sequences]
    decode_step_s: tuple[float, ...]  # decode step time at those batches [s]
    kv_capacity_tokens: float  # KV cache room [tokens]
    max_batch: int  # running sequences at most [sequences]
    max_prefill_tokens: float = MAX_PREFILL_TOKENS
    weights_bytes: float = 0.0  # model weights per replica [bytes] (cold-start weight load)
    engine_max_seqs: int = 0  # the engine's sequence cap (vLLM max_num_seqs) [sequences]; 0: max_batch

    def __post_init__(self) -> None:
        if self.kv_capacity_tokens <= 0 or self.max_batch < 1:
            raise InputError(f"service model {self.name}: KV capacity and max batch must be positive.")

    def prefill_time_s(self, tokens: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Prefill of each prompt alone [s] (linear extrapolation beyond the sampled range)."""
        x = np.asarray(self.prefill_tokens)
        y = np.asarray(self.prefill_s)
        out = np.interp(tokens, x, y)
        slope = (y[-1] - y[-2]) / (x[-1] - x[-2]) if len(x) > 1 else 0.0
        over = tokens > x[-1]
        out[over] = y[-1] + slope * (tokens[over] - x[-1])
        return np.asarray(out, dtype=np.float64)

    @property
    def seq_cap(self) -> int:
        """Running sequences at most when the KV pool, not a fixed reservation, is the limit [sequences]."""
        return max(self.engine_max_seqs, self.max_batch)

    def step_table(self, upto: int | None = None) -> list[float]:
        """Decode step time [s] at batch 0..``upto`` (default max_batch; index = batch); linear
        extrapolation beyond the sampled batches (module doc)."""
        n = self.max_batch if upto is None else upto
        b = np.arange(n + 1, dtype=np.float64)
        x = np.asarray(self.decode_batch)
        y = np.asarray(self.decode_step_s)
        out = np.interp(b, x, y)
        if len(x) > 1 and x[-1] > x[-2]:
            slope = max((y[-1] - y[-2]) / (x[-1] - x[-2]), 0.0)
            over = b > x[-1]
            out[over] = y[-1] + slope * (b[over] - x[-1])
        out[0] = 0.0
        return [float(v) for v in out]


def constant_service(
    *, step_s: float, servers_batch: int = 1, kv_capacity_tokens: float = math.inf, prefill_s: float = 0.0
) -> ServiceModel:
    """A replica with a fixed step time and prefill: for queueing checks (M/M/c) and tests."""
    return ServiceModel(
        name="constant",
        gpus_per_replica=1,
        prefill_tokens=(0.0, 1.0),
        prefill_s=(prefill_s, prefill_s),
        step_overhead_s=0.0,
        decode_batch=(1.0, float(servers_batch)),
        decode_step_s=(step_s, step_s),
        kv_capacity_tokens=kv_capacity_tokens,
        max_batch=servers_batch,
        engine_max_seqs=servers_batch,
    )


def _pow2_upto(n: int) -> list[int]:
    out = [1]
    while out[-1] * 2 < n:
        out.append(out[-1] * 2)
    if out[-1] != n:
        out.append(n)
    return out


def service_from_estimator(
    *,
    model: str,
    gpu: str,
    precision: str = "bf16",
    gpus_per_replica: int | None = None,
    mean_input_tokens: float,
    mean_output_tokens: float,
    software: str = "vllm",
) -> ServiceModel:
    """Sample :func:`gpufleet.estimate_inference` into a :class:`ServiceModel` (module doc)."""
    arch = resolve_model(model)
    ctx_in = max(1, round(mean_input_tokens))
    ctx_out = max(1, round(mean_output_tokens))

    def est(gpus: int, batch: int | None, n_in: int, n_out: int):  # type: ignore[no-untyped-def]
        return estimate_inference(
            model=arch,
            gpu=gpu,
            precision=precision,
            input_len=n_in,
            output_len=n_out,
            gpu_count=gpus,
            batch=batch,
            software=software,
            tp=gpus,
        )

    counts = [gpus_per_replica] if gpus_per_replica else [1, 2, 4, 8]
    probe = None
    for g in counts:
        probe = est(g, None, ctx_in, ctx_out)
        if probe.fits:
            break
    if probe is None or not probe.fits:
        raise InfeasibleError(
            f"{arch.id} at {precision} does not fit on {counts[-1]} x {gpu} with a {ctx_in + ctx_out}-token "
            "context. Choose a larger GPU, more GPUs per replica (--gpus-per-replica), or a lower precision."
        )
    gpus = probe.gpus_per_replica
    cap = min(probe.max_concurrency_per_replica, ENGINE_MAX_BATCH.get(software, ENGINE_MAX_BATCH["unknown"]))
    batches = _pow2_upto(cap)
    steps = []
    for b in batches:
        e = est(gpus, b, ctx_in, ctx_out)
        steps.append(e.tpot_s.central if e.tpot_s is not None else math.nan)
    if not all(math.isfinite(s) for s in steps):
        raise InfeasibleError(f"the estimator gave no decode speed for {arch.id} on {gpus} x {gpu}.")
    max_len = max(arch.max_position_embeddings - ctx_out, 64)
    lengths = sorted({min(n, max_len) for n in (16, 64, 256, 1024, 2048, 4096, 8192, 16384, 32768, 131072)})
    prefills = []
    for n in lengths:
        e = est(gpus, 1, n, 1)
        prefills.append(e.ttft_s.central if e.ttft_s is not None else math.nan)
    pairs = [(float(n), p) for n, p in zip(lengths, prefills, strict=True) if math.isfinite(p)]
    if len(pairs) < 2:
        raise InfeasibleError(f"the estimator gave no prefill time for {arch.id} on {gpus} x {gpu}.")
    # the per-pass overhead: the intercept of the two shortest prompts' line, bounded to [0, shortest]
    (x0, y0), (x1, y1) = pairs[0], pairs[1]
    overhead = min(max(y0 - x0 * (y1 - y0) / (x1 - x0), 0.0), y0)
    weights_gib = float(probe.memory.breakdown_gib.get("weights", 0.0)) * gpus
    return ServiceModel(
        name=f"{arch.id} on {gpus} x {gpu} ({precision}, {software})",
        gpus_per_replica=gpus,
        prefill_tokens=tuple(x for x, _ in pairs),
        prefill_s=tuple(y for _, y in pairs),
        step_overhead_s=overhead,
        decode_batch=tuple(float(b) for b in batches),
        decode_step_s=tuple(steps),
        kv_capacity_tokens=float(probe.max_concurrency_per_replica * (ctx_in + ctx_out)),
        max_batch=cap,
        weights_bytes=weights_gib * GIB,
        engine_max_seqs=ENGINE_MAX_BATCH.get(software, ENGINE_MAX_BATCH["unknown"]),
    )
