"""MoE training with expert parallelism: the busiest EP rank sets the routed experts' pace (dropless routing),
force-balanced routing removes the imbalance, a capacity factor caps it (token dropping)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from gpufleet.errors import InputError
from gpufleet.estimate import moe_serving as moe
from gpufleet.estimate.cases import read_cases, shipped_cases_path
from gpufleet.estimate.performance import estimate_training
from gpufleet.estimate.predict import note_hints

MIXTRAL_64_H100: dict[str, Any] = dict(
    model="mixtral-8x7b", task="pretrain", gpu="H100-SXM", precision="bf16", gpu_count=64, global_batch=256,
    seq_len=4096, tp=1, pp=4, ep=8, software="megatron", ignore_memory=True,
)  # fmt: skip


def test_ep_rank_imbalance_bounds() -> None:
    # no expert parallelism, or a router forced to equal loads: no imbalance
    assert moe.ep_rank_imbalance(8192.0, 1) == 1.0
    assert moe.ep_rank_imbalance(8192.0, 8, "balanced") == 1.0
    # dropless: the balls-into-bins excess plus the sourced hotspot, shrinking toward the hotspot with load
    small, large = moe.ep_rank_imbalance(64.0, 8), moe.ep_rank_imbalance(1e7, 8)
    assert small > large
    assert large == pytest.approx(moe.EXPERT_HOTSPOT_FACTOR, rel=0.01)
    want = (8192.0 + math.sqrt(2.0 * 8192.0 * math.log(8))) * moe.EXPERT_HOTSPOT_FACTOR / 8192.0
    assert moe.ep_rank_imbalance(8192.0, 8) == pytest.approx(want)
    # never above every token on one rank
    assert moe.ep_rank_imbalance(0.01, 64) <= 64.0
    # token dropping caps the busiest rank at the capacity
    assert moe.ep_rank_imbalance(8192.0, 8, capacity_factor=1.05) == pytest.approx(1.05)
    assert moe.ep_rank_imbalance(8192.0, 8, capacity_factor=4.0) == pytest.approx(want)


@pytest.mark.parametrize(("routing", "factor"), [("greedy", None), ("dropless", 0.0), ("dropless", math.nan)])
def test_bad_routing_is_refused_with_what_is_allowed(routing: str, factor: float | None) -> None:
    with pytest.raises(InputError, match=r"balanced|positive|finite"):
        estimate_training(**{**MIXTRAL_64_H100, "moe_routing": routing, "moe_capacity_factor": factor})


def test_dropless_ep_training_waits_for_the_busiest_rank() -> None:
    """Mixtral 8x7B on 64 H100 with EP 8 (~8k routed tokens per rank and micro-batch): the routed GEMMs
    and the all-to-all run at the busiest rank's ~1.18x mean load, so a dropless step is slower than a
    force-balanced one, by at most that factor."""
    dropless = estimate_training(**MIXTRAL_64_H100)
    balanced = estimate_training(**{**MIXTRAL_64_H100, "moe_routing": "balanced"})
    capped = estimate_training(**{**MIXTRAL_64_H100, "moe_capacity_factor": 1.05})
    assert dropless.step_time_s is not None and balanced.step_time_s is not None
    assert capped.step_time_s is not None
    ratio = dropless.step_time_s.central / balanced.step_time_s.central
    imbalance = moe.ep_rank_imbalance(4096.0 * 2, 8)
    assert 1.05 < ratio <= imbalance
    assert balanced.step_time_s.central < capped.step_time_s.central < dropless.step_time_s.central


def test_routing_leaves_dense_models_and_ep1_alone() -> None:
    dense = dict(MIXTRAL_64_H100, model="llama-3.1-8b", ep=None)
    a = estimate_training(**dense)
    b = estimate_training(**{**dense, "moe_routing": "balanced"})
    assert a.step_time_s == b.step_time_s
    no_ep = dict(MIXTRAL_64_H100, ep=1)
    c = estimate_training(**no_ep)
    d = estimate_training(**{**no_ep, "moe_routing": "balanced"})
    assert c.step_time_s == d.step_time_s


def test_case_notes_name_the_routing() -> None:
    n030 = next(c for c in read_cases(shipped_cases_path()) if c.case_id == "N030")
    assert note_hints(n030.note)["moe_routing"] == "balanced"  # "force-balanced dropless routing"
    assert note_hints("Megatron --moe-router-force-load-balancing")["moe_routing"] == "balanced"
    assert note_hints("Switch-style, capacity factor 1.25")["moe_capacity_factor"] == 1.25
    assert "moe_routing" not in note_hints("dropless routing with aux loss")
