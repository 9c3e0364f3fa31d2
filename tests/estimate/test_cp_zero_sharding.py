"""Context parallelism and ZeRO: the cp ranks of a sequence hold the same weights, so the distributed
optimizer shards over dp x cp ranks (Megatron-Core ``get_data_parallel_group(with_context_parallel=True)``),
as the speed model already reduces gradients over that group. Before, memory sharded over dp alone."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.errors import InputError
from gpufleet.estimate.memory import estimate_memory
from gpufleet.estimate.performance import estimate_training

KW: dict[str, Any] = dict(
    model="llama-3.1-405b", task="pretrain", precision="fp8", gpu="B200", tp=4, pp=8, dp=2, batch=1,
    seq_len=4096, zero_stage=1, recompute="selective",
)  # fmt: skip


def test_optimizer_states_shard_over_dp_times_cp() -> None:
    one, two = estimate_memory(**KW), estimate_memory(cp=2, **KW)
    assert two.breakdown_gib["optimizer_states"] == pytest.approx(one.breakdown_gib["optimizer_states"] / 2)
    # 12 B per parameter of fp32 master + Adam moments over the 4 ranks holding the same first stage
    first_stage_params = one.breakdown_gib["weights"] / 2.0  # bf16 weights: 2 B per parameter
    assert two.breakdown_gib["optimizer_states"] == pytest.approx(first_stage_params * 12.0 / 4, rel=1e-6)
    # weights and gradients are not sharded by ZeRO-1; activations are per rank already (seq_len / cp)
    for part in ("weights", "gradients", "activations"):
        assert two.breakdown_gib[part] == pytest.approx(one.breakdown_gib[part])


def test_cp_must_be_a_whole_positive_degree() -> None:
    with pytest.raises(InputError):
        estimate_memory(cp=0, **KW)


def test_405b_fp8_on_128_b200_with_cp2_fits_selective_recompute() -> None:
    """TP4 PP8 CP2 on 128 B200 (dp 2): ZeRO-1 over dp alone left 74 GiB of optimizer states per GPU and
    forced full recompute; over dp x cp = 4 they are 37 GiB and selective recompute fits, ~1.3x faster."""
    e = estimate_training(
        model="llama-3.1-405b", task="pretrain", gpu="B200", precision="fp8", gpu_count=128, global_batch=64,
        seq_len=8192, tp=4, pp=8, cp=2, software="megatron",
    )  # fmt: skip
    assert e.fits and e.recompute == "selective" and e.zero_stage == 1
    assert e.memory.breakdown_gib["optimizer_states"] < 40.0
    assert e.memory.per_gpu_gib_p90 <= e.memory.capacity_gib
