"""A seeded synthetic GPU fleet with known ground truth, for tests, benchmarks and demos.

Each GPU gets a class and a level; series are the level plus a diurnal swing, AR(1) noise and rare spikes
(realistic enough to need percentiles, not means). GPU_UTIL is derived from SM activity the way it behaves in
real fleets (AcmeTrace: median GPU_UTIL 98-99 % at SM_ACTIVE 34-50 %): a kernel-time flag that saturates
long before the SMs do, so ``gpu_util = min(100, 100 * (sm / 0.35) ** 0.5)`` while anything runs.

Classes (expected finding with default :class:`~gpufleet.telemetry.findings.Thresholds`):
``idle`` -> Idle; ``over`` (compute 0.15-0.25, memory 45-60 % of capacity) -> Overprovisioned without a MIG
slice; ``migable`` (compute 0.05-0.12 high percentile, memory < 15 %) -> Overprovisioned with a MIG option;
``busy`` (compute ~0.93, memory 70-80 %) -> Optimized (a busy GPU is the goal; nothing says work waits);
``memstarved`` (compute 0.5-0.6, memory 92-97 % of capacity) -> Underprovisioned (GPUMemoryUnderprovisioned);
``healthy`` (compute 0.55-0.7, memory 60-75 %) -> Optimized.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from gpufleet.telemetry.schema import SampleBatch
from gpufleet.units import SECONDS_PER_DAY

EXPECTED: Final[dict[str, str]] = {
    "idle": "Idle",
    "over": "Overprovisioned",
    "migable": "Overprovisioned",
    "busy": "Optimized",
    "memstarved": "Underprovisioned",
    "healthy": "Optimized",
}
_LEVELS: Final[dict[str, tuple[tuple[float, float], tuple[float, float]]]] = {
    # class: ((compute level lo, hi), (memory share lo, hi))
    "idle": ((0.0, 0.01), (0.0, 0.02)),
    "over": ((0.15, 0.22), (0.45, 0.6)),
    "migable": ((0.04, 0.08), (0.05, 0.12)),
    "busy": ((0.9, 0.93), (0.7, 0.8)),
    "memstarved": ((0.5, 0.6), (0.95, 0.97)),
    "healthy": ((0.55, 0.65), (0.6, 0.72)),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class SyntheticGpu:
    gpu_key: str
    host: str
    cls: str
    expected: str


def gpu_util_from_sm(sm: np.ndarray) -> np.ndarray:
    """nvidia-smi utilization.gpu [%] implied by SM activity (kernel-time flag; see the module docstring)."""
    out: np.ndarray = np.where(sm > 0.002, np.minimum(100.0, 100.0 * np.sqrt(np.clip(sm, 0, 1) / 0.35)), 0.0)
    return out


def _series(rng: np.random.Generator, level: float, n: int, step_s: float, amp: float) -> np.ndarray:
    t = np.arange(n) * step_s
    diurnal = amp * np.sin(2 * math.pi * t / SECONDS_PER_DAY + rng.uniform(0, 2 * math.pi))
    noise = np.empty(n)
    e = rng.normal(0.0, 0.02, n)
    noise[0] = e[0]
    for i in range(1, n):  # AR(1), phi 0.8
        noise[i] = 0.8 * noise[i - 1] + e[i]
    spikes = (rng.random(n) < 0.002) * rng.uniform(0.0, 0.15, n)
    out: np.ndarray = level + diurnal + noise + spikes
    return out


def synthetic_fleet(
    *,
    seed: int,
    counts: dict[str, int],
    days: float = 3.0,
    step_s: float = 300.0,
    start_s: float = 1_780_000_000.0,
    model: str = "NVIDIA H100 80GB HBM3",
    capacity_mib: float = 81559.0,
    hosts_gpus: int = 8,
    labels: dict[str, str] | None = None,
) -> tuple[SampleBatch, list[SyntheticGpu]]:
    """Samples (SM_ACTIVE, GPU_UTIL, FB_USED/FREE, DRAM_ACTIVE, power) and the truth for each GPU."""
    rng = np.random.default_rng(seed)
    n = int(days * SECONDS_PER_DAY / step_s)
    ts_us = (start_s + np.arange(n) * step_s) * 1e6
    batch = SampleBatch()
    truth: list[SyntheticGpu] = []
    classes = [c for c, k in counts.items() for _ in range(k)]
    rng.shuffle(classes)
    for i, cls in enumerate(classes):
        host, idx = f"node-{i // hosts_gpus:03d}", i % hosts_gpus
        uuid = f"GPU-{seed:04d}-{i:06d}"
        (c_lo, c_hi), (m_lo, m_hi) = _LEVELS[cls]
        level = rng.uniform(c_lo, c_hi)
        sm = np.clip(_series(rng, level, n, step_s, amp=0.0 if cls == "idle" else 0.03), 0.0, 1.0)
        if cls == "idle":
            sm = np.clip(rng.normal(0.003, 0.002, n), 0.0, 0.02)
        mem_share = np.clip(
            _series(rng, rng.uniform(m_lo, m_hi), n, step_s, amp=0.01) * 0.5 + rng.uniform(m_lo, m_hi) * 0.5,
            0.0,
            0.99,
        )
        used = mem_share * capacity_mib
        util = np.clip(gpu_util_from_sm(sm) + rng.normal(0, 1.0, n), 0, 100)
        dram = np.clip(sm * 0.6 + rng.normal(0, 0.01, n), 0, 1)
        power = np.clip(70.0 + 600.0 * sm + rng.normal(0, 5, n), 0, 700)
        lab = {
            "source": "synthetic",
            "host": host,
            "gpu_uuid": uuid,
            "model": model,
            "namespace": f"team-{i % 3}",
            "pod": f"job-{i:04d}",
            **(labels or {}),
        }
        lid = batch.label_id(lab, idx)
        for metric, values in (
            ("sm_active_ratio", sm),
            ("gpu_util_pct", util),
            ("fb_used_mib", used),
            ("fb_free_mib", capacity_mib - used),
            ("dram_active_ratio", dram),
            ("power_w", power),
            ("power_limit_w", np.full(n, 700.0)),
        ):
            for t, v in zip(ts_us.tolist(), values.tolist(), strict=True):
                batch.add_sample(lid, int(t), metric, float(v))
        key = batch.label_rows[lid][0]
        truth.append(SyntheticGpu(gpu_key=str(key), host=host, cls=cls, expected=EXPECTED[cls]))
    return batch, truth


def acme_levels(x_pct: Sequence[float], cdf_pct: Sequence[float], n: int) -> np.ndarray:
    """``n`` per-GPU SM_ACTIVE levels (0-1) drawn from a CDF by stratified inverse transform (u =
    (i+0.5)/n)."""
    u = (np.arange(n) + 0.5) / n * 100.0
    order = np.argsort(np.asarray(cdf_pct, dtype=float), kind="stable")
    cdf = np.asarray(cdf_pct, dtype=float)[order]
    levels: np.ndarray = np.interp(u, cdf, np.asarray(x_pct, dtype=float)[order]) / 100.0
    return levels


__all__ = ["EXPECTED", "SyntheticGpu", "acme_levels", "gpu_util_from_sm", "synthetic_fleet"]
