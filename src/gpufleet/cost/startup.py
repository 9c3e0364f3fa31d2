"""Start-up time of a replica or a training job: provisioning + image pull + weight load + warm-up [s].

Billed time that does no work: a serving replica pays it on every cold start (:mod:`gpufleet.simulate.
coldstart`), a training run once per run on every GPU it holds, which is what keeps a short job off a large
slice (a 256-chip slice for a 3-minute LoRA pays 256 chip start-ups). Defaults are priors from
fleet-anchors section F (secondary sources, marked so there):

* provisioning 60 s: node/GPU provisioning 10-60 s (paralleliq.ai, spheron.network); the upper end, since
  GPU nodes are the slow case;
* image pull 30 s: 5-30 s for a cached image, 4-8 min uncached for 15-18 GB images; the cached upper end;
* weight load = weight bytes / load bandwidth, 2 GB/s: "7B = 8 s from fast NVMe" (16 GB / 8 s = 2 GB/s)
  and "70B = 40-45 s" (140 GB / 42 s = 3.3 GB/s); the slower figure;
* warm-up 20 s: CUDA graph capture 10-30 s; the midpoint (a training job's first-step compile and NCCL
  set-up take as long or longer: a lower bound there).
"""

from __future__ import annotations

from gpufleet.units import GB

DEFAULT_PROVISIONING_S = 60.0
DEFAULT_IMAGE_PULL_S = 30.0
DEFAULT_LOAD_BANDWIDTH_BYTES_PER_S = 2.0 * GB
DEFAULT_WARMUP_S = 20.0


def training_startup_s(weights_bytes_per_node: float) -> float:
    """Start-up of a training run whose nodes each read ``weights_bytes_per_node`` of checkpoint (in
    parallel; 0 for a pre-training run from scratch) before the first step [s]."""
    load = max(0.0, weights_bytes_per_node) / DEFAULT_LOAD_BANDWIDTH_BYTES_PER_S
    return DEFAULT_PROVISIONING_S + DEFAULT_IMAGE_PULL_S + load + DEFAULT_WARMUP_S
