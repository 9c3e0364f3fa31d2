"""A generated Kubernetes GPU fleet with known truth, as OpenMetrics text (dcgm-exporter and vLLM names).

The same text is read by ``gpufleet telemetry ingest`` (file path) and backfilled into a real Prometheus with
``promtool tsdb create-blocks-from openmetrics`` (Prometheus path), so both paths are tested on one fleet.
Timestamps are seconds (OpenMetrics). Each case is a workload with its pods, the GPUs they ran on, and the
finding expected for every GPU and for the workload (default ``Thresholds``):

- idle: a StatefulSet notebook holding nothing -> GPU Idle, workload Idle;
- over: a Deployment at 15 % SM, 50 % memory -> Overprovisioned, Overprovisioned;
- busy: a training Job at 93 % SM, 77 % memory, steady step time (1.0 s) -> Optimized, Optimized;
- busy-serving: vLLM at 85 % SM, queue empty, TTFT p95 0.75 s -> Optimized, Optimized;
- memory-starved: a fine-tune at 60 % SM, 96 % memory -> Underprovisioned, Underprovisioned;
- slo-violating: vLLM at 80 % SM, requests waiting, KV cache 97 %, TTFT p95 4.75 s -> Underprovisioned both;
- short-lived pods: 3 successive pods of one Deployment (14 h each, one GPU each), 6 % SM, 19-47 GiB used
  -> every GPU InsufficientData, the workload (42 h) Overprovisioned;
- slow-step: a training Job at 92 % SM, 70 % memory whose step time grows from 1.0 s to 1.6 s over the run
  (``train_step_duration_seconds``) -> Underprovisioned both (TrainingStepTimeDegrading).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

import numpy as np

H100_MIB: Final = 81559.0
MODEL: Final = "NVIDIA H100 80GB HBM3"
#: vLLM's default TTFT buckets (a subset, seconds; vllm/engine/metrics.py) and +Inf.
TTFT_LE: Final[tuple[str, ...]] = ("0.1", "0.25", "0.5", "1.0", "2.5", "5.0", "+Inf")


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    name: str
    namespace: str
    pods: tuple[str, ...]  # successive pods, one GPU each
    sm: float
    mem_share: tuple[float, float]  # low, high across the run
    serving: str | None  # None, "healthy", "violating"
    gpu_truth: str
    workload: str  # workload key (namespace/owner)
    workload_truth: str
    labelled: bool = True  # instance labels (provider, instance type) for pricing
    step: str | None = None  # training step-time gauge: None, "steady" (1.0 s), "slowing" (1.0 -> 1.6 s)
    reasons: tuple[str, ...] = ()  # the workload's expected reason codes


CASES: Final[tuple[Case, ...]] = (
    Case(
        name="idle",
        namespace="research",
        pods=("notebook-0",),
        sm=0.003,
        mem_share=(0.02, 0.02),
        serving=None,
        gpu_truth="Idle",
        workload="research/notebook",
        workload_truth="Idle",
    ),
    Case(
        name="over",
        namespace="batch",
        pods=("embed-7d9f8b6c4-x2kq9",),
        sm=0.15,
        mem_share=(0.5, 0.5),
        serving=None,
        gpu_truth="Overprovisioned",
        workload="batch/embed",
        workload_truth="Overprovisioned",
    ),
    Case(
        name="busy",
        namespace="training",
        pods=("pretrain-x7k2p",),
        sm=0.93,
        mem_share=(0.77, 0.77),
        serving=None,
        gpu_truth="Optimized",
        workload="training/pretrain",
        workload_truth="Optimized",
        step="steady",
    ),
    Case(
        name="busy-serving",
        namespace="serving",
        pods=("chat-5f6d7c8b9-z9z9z",),
        sm=0.85,
        mem_share=(0.8, 0.8),
        serving="healthy",
        gpu_truth="Optimized",
        workload="serving/chat",
        workload_truth="Optimized",
    ),
    Case(
        name="memory-starved",
        namespace="training",
        pods=("finetune-b2c4d",),
        sm=0.6,
        mem_share=(0.96, 0.96),
        serving=None,
        gpu_truth="Underprovisioned",
        workload="training/finetune",
        workload_truth="Underprovisioned",
        labelled=False,
        reasons=("GPUMemoryUnderprovisioned",),
    ),
    Case(
        name="slo-violating",
        namespace="serving",
        pods=("llm-api-6c8d9f7b5-q4w8t",),
        sm=0.8,
        mem_share=(0.8, 0.8),
        serving="violating",
        gpu_truth="Underprovisioned",
        workload="serving/llm-api",
        workload_truth="Underprovisioned",
        labelled=False,
        reasons=("ServingQueueing", "ServingKVCachePressure", "ServingPreemptions", "ServingTTFTAboveSLO"),
    ),
    Case(
        name="short-lived",
        namespace="serving",
        pods=("rag-7b9c8d6f5-k2m4n", "rag-7b9c8d6f5-p5q7r", "rag-8c9d7f6b4-s2t4v"),
        sm=0.06,
        mem_share=(19 * 1024 / H100_MIB, 47 * 1024 / H100_MIB),
        serving=None,
        gpu_truth="InsufficientData",
        workload="serving/rag",
        workload_truth="Overprovisioned",
    ),
    Case(
        name="slow-step",
        namespace="training",
        pods=("sft-llama-q8w4z",),
        sm=0.92,
        mem_share=(0.7, 0.7),
        serving=None,
        gpu_truth="Underprovisioned",
        workload="training/sft-llama",
        workload_truth="Underprovisioned",
        step="slowing",
        reasons=("TrainingStepTimeDegrading",),
    ),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class GeneratedFleet:
    text: str  # OpenMetrics (ends with # EOF)
    samples: int
    gpu_truth: dict[str, str]  # GPU UUID -> finding
    workload_truth: dict[str, str]  # workload key -> finding
    workload_reasons: dict[str, tuple[str, ...]]  # workload key -> its reason codes (Underprovisioned ones)
    start_s: int
    end_s: int


def known_truth_fleet(
    *, start_s: int, hours: float = 42.0, step_s: int = 120, seed: int = 5
) -> GeneratedFleet:
    """The fleet of :data:`CASES` from ``start_s`` for ``hours`` at one sample per ``step_s`` per series."""
    rng = np.random.default_rng(seed)
    n = int(hours * 3600 / step_s)
    lines: list[str] = []
    gpu_truth: dict[str, str] = {}
    wl_truth: dict[str, str] = {}
    g = 0
    for case in CASES:
        wl_truth[case.workload] = case.workload_truth
        per_pod = n // len(case.pods)
        for k, pod in enumerate(case.pods):
            uuid = f"GPU-k8s-{g:04d}"
            gpu_truth[uuid] = case.gpu_truth
            host = f"gpu-node-{g // 4}"
            labels = (
                f'gpu="{g % 4}",UUID="{uuid}",modelName="{MODEL}",Hostname="{host}",'
                f'namespace="{case.namespace}",pod="{pod}",container="main"'
                + (
                    ',node_kubernetes_io_instance_type="p5.48xlarge",provider="aws",region="us-east-1"'
                    if case.labelled
                    else ""
                )
            )
            idx = np.arange(k * per_pod, (k + 1) * per_pod if k < len(case.pods) - 1 else n)
            ts = start_s + idx * step_s
            m = len(idx)
            sm = np.clip(case.sm + rng.normal(0, 0.01 if case.sm > 0.01 else 0.001, m), 0, 1)
            lo, hi = case.mem_share
            share = (
                lo + (hi - lo) * np.linspace(0, 1, m)
                if len(case.pods) == 1
                else np.full(m, lo + (hi - lo) * k / max(len(case.pods) - 1, 1))
            )
            used = np.clip(share * H100_MIB + rng.normal(0, 50, m), 0, H100_MIB)
            util = np.where(sm > 0.002, np.minimum(100.0, 100 * np.sqrt(sm / 0.35)), 0.0)
            for name, values, fmt in (
                ("DCGM_FI_PROF_SM_ACTIVE", sm, "{:.4f}"),
                ("DCGM_FI_DEV_GPU_UTIL", util, "{:.0f}"),
                ("DCGM_FI_DEV_FB_USED", used, "{:.0f}"),
                ("DCGM_FI_DEV_FB_FREE", H100_MIB - used, "{:.0f}"),
            ):
                lines += [f"{name}{{{labels}}} {fmt.format(v)} {t}" for v, t in zip(values, ts, strict=True)]
            if case.serving:
                lines += _serving_lines(case, pod, ts, rng)
            if case.step:
                lines += _step_lines(case, pod, ts, rng)
            g += 1
    text = "\n".join([*lines, "# EOF", ""])
    return GeneratedFleet(
        text=text,
        samples=len(lines),
        gpu_truth=gpu_truth,
        workload_truth=wl_truth,
        workload_reasons={c.workload: c.reasons for c in CASES},
        start_s=start_s,
        end_s=start_s + (n - 1) * step_s,
    )


def _serving_lines(case: Case, pod: str, ts: np.ndarray, rng: np.random.Generator) -> list[str]:
    lab = f'namespace="{case.namespace}",pod="{pod}",model_name="llama-3.1-8b",instance="10.0.0.9:8000"'
    bad = case.serving == "violating"
    m = len(ts)
    queue = rng.poisson(6.0, m) if bad else np.zeros(m, dtype=int)
    kv = np.clip((0.97 if bad else 0.4) + rng.normal(0, 0.01, m), 0, 1)
    pre = np.cumsum(rng.poisson(2.0, m)) if bad else np.zeros(m, dtype=int)
    out = [f"vllm:num_requests_waiting{{{lab}}} {q} {t}" for q, t in zip(queue, ts, strict=True)]
    out += [f"vllm:gpu_cache_usage_perc{{{lab}}} {v:.3f} {t}" for v, t in zip(kv, ts, strict=True)]
    out += [f"vllm:num_preemptions_total{{{lab}}} {v} {t}" for v, t in zip(pre, ts, strict=True)]
    # per step 20 requests: healthy all within 0.5 s; violating half of them between 2.5 and 5 s
    per_step = (
        np.array([2, 6, 10, 2, 0, 0, 0]) if not bad else np.array([0, 0, 2, 3, 5, 10, 0])
    )  # requests per bucket (non-cumulative), buckets of TTFT_LE
    cum = np.cumsum(per_step)
    for le, c in zip(TTFT_LE, cum, strict=True):
        out += [
            f'vllm:time_to_first_token_seconds_bucket{{{lab},le="{le}"}} {c * (i + 1)} {t}'
            for i, t in enumerate(ts)
        ]
    return out


def _step_lines(case: Case, pod: str, ts: np.ndarray, rng: np.random.Generator) -> list[str]:
    """The job's step-time gauge (seconds per optimizer step), one rank per pod."""
    lab = f'namespace="{case.namespace}",pod="{pod}",rank="0",instance="10.0.1.7:9100"'
    m = len(ts)
    base = np.linspace(1.0, 1.6, m) if case.step == "slowing" else np.full(m, 1.0)
    step = np.clip(base + rng.normal(0, 0.02, m), 0.5, None)
    return [f"train_step_duration_seconds{{{lab}}} {v:.4f} {t}" for v, t in zip(step, ts, strict=True)]


def expected_ttft_p95_s(serving: str) -> float:
    """The p95 TTFT of a case's histogram (histogram_quantile on the per-step counts)."""
    per = [2, 6, 10, 2, 0, 0, 0] if serving == "healthy" else [0, 0, 2, 3, 5, 10, 0]
    cum = list(np.cumsum(per))
    rank = 0.95 * cum[-1]
    prev_le, prev_c = 0.0, 0.0
    for le, c in zip(TTFT_LE, cum, strict=True):
        if c >= rank:
            return float(prev_le + (float(le) - prev_le) * (rank - prev_c) / (c - prev_c))
        prev_le, prev_c = float(le), float(c)
    return math.nan


__all__ = ["CASES", "Case", "GeneratedFleet", "expected_ttft_p95_s", "known_truth_fleet"]
