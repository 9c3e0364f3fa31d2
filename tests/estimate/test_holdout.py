"""Held-out published measurements, never used in calibration: the model must generalise to them.

GPU-hours of whole pre-training runs on A100-80GB at 2048 GPUs and 4M-token batches:
Touvron et al. 2023 (LLaMA), Table 15: 7B 82,432 GPU-h (1.0T tokens); Touvron et al. 2023 (Llama 2),
Table 2: 7B 184,320, 13B 368,640, 70B 1,720,320 GPU-h (2.0T tokens, 4k context). (LLaMA-65B is a calibration
case, T17; the others are not.)
"""

from __future__ import annotations

import math

import pytest

from gpufleet.estimate import estimate_training

HELD_OUT = [
    ("llama-7b", 2048, 1.0e12, 82_432),
    ("llama-2-7b", 4096, 2.0e12, 184_320),
    ("llama-2-13b", 4096, 2.0e12, 368_640),
    ("llama-2-70b", 4096, 2.0e12, 1_720_320),
]


@pytest.mark.parametrize(("model", "seq_len", "tokens", "gpu_hours"), HELD_OUT)
def test_published_pretraining_gpu_hours(model: str, seq_len: int, tokens: float, gpu_hours: float) -> None:
    e = estimate_training(
        model=model, task="pretrain", gpu="A100-SXM-80GB", precision="bf16", gpu_count=2048,
        global_batch=4 * 2**20 // seq_len, seq_len=seq_len, train_tokens=tokens,
    )  # fmt: skip
    assert e.gpu_hours is not None
    assert abs(math.log(gpu_hours / e.gpu_hours.central)) < math.log(1.5)
