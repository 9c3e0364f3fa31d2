"""Megatron/NeMo distributed-optimizer overlap: the parameter all-gather under the next forward and, with
interleaving, each model chunk's gradient reduce-scatter under the remaining chunks' backward."""

from __future__ import annotations

import pytest

from gpufleet.catalog.specs import get_spec
from gpufleet.estimate.calibration import load_profile
from gpufleet.estimate.comms import all_gather_s, group_link
from gpufleet.estimate.performance import GRAD_BYTES, resolve_rates, training_step
from gpufleet.estimate.training import PARAM_BYTES
from gpufleet.models import count_params, resolve_model

# Llama 2 70B on 64 H100 over a slow 100 Gb/s-class network so the data-parallel traffic dominates
_KW = dict(task="pretrain", tp=4, pp=4, dp=4, ep=1, global_batch=32, seq_len=4096, zero_stage=1,
           recompute="selective", gpus_per_node=8)  # fmt: skip


def _step(software: str, v: int) -> tuple[float, float, float, float]:
    model, spec, prof = resolve_model("llama-2-70b"), get_spec("H100-SXM"), load_profile()
    rates = resolve_rates(spec, "bf16", prof, allow_fallback=False)
    br = training_step(
        model=model, spec=spec, rates=rates, software=software, profile=prof, virtual_stages=v, **_KW
    )  # type: ignore[arg-type]
    link = group_link(spec, group=4, stride=16, gpus_per_node=8, link_eff=prof.param("link_eff"))
    p = count_params(model).total / 16
    rs, ag = all_gather_s(p * GRAD_BYTES, 4, link), all_gather_s(p * PARAM_BYTES, 4, link)
    return br.dp_comm_exposed_s, br.compute_s, rs, ag


def test_plain_1f1b_hides_the_reduce_under_the_last_backward_and_the_gather_under_the_first_forward() -> None:
    exposed, compute, rs, ag = _step("megatron", 1)
    per_micro = compute / 8  # 32 sequences over dp 4: 8 micro-batches
    ov = load_profile().param("dp_overlap")
    expected = max(0.0, rs - ov * per_micro * 2 / 3) + max(0.0, ag - ov * per_micro / 3)
    assert exposed == pytest.approx(expected, rel=1e-9)


def test_interleaving_reduces_each_chunk_under_the_cool_down() -> None:
    exposed, compute, rs, ag = _step("megatron", 4)
    ov = load_profile().param("dp_overlap")
    per_micro = compute / 8
    unit = per_micro * 2 / 3 / 4  # one micro-batch's backward through one of the 4 chunks
    rs_exposed = max(0.0, rs / 4 - ov * unit, rs - ov * unit * (1 + 3 * 4))
    assert exposed == pytest.approx(rs_exposed + max(0.0, ag - ov * per_micro / 3), rel=1e-9)
    assert 0.0 < exposed < _step("megatron", 1)[0]


def test_other_stacks_share_one_backward_window() -> None:
    exposed, compute, rs, ag = _step("deepspeed", 1)
    ov = load_profile().param("dp_overlap")
    assert exposed == pytest.approx(max(0.0, rs + ag - ov * compute / 8 * 2 / 3), rel=1e-9)
