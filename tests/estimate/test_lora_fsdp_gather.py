"""ZeRO-3 / FSDP LoRA: the sharded frozen base is gathered every micro-batch; adapter gradients reduce."""

from __future__ import annotations

import pytest

from gpufleet.catalog.specs import get_spec
from gpufleet.estimate.calibration import load_profile, with_params
from gpufleet.estimate.comms import all_gather_s, group_link
from gpufleet.estimate.performance import GRAD_BYTES, resolve_rates, training_step
from gpufleet.models import count_params, lora_params, resolve_model


def test_lora_zero3_gathers_the_whole_frozen_base() -> None:
    """Llama 2 70B LoRA in fp8 (~1 byte per base weight) on 4 nodes x 8 MI300X, ZeRO-3 over all 32 GPUs,
    with no overlap: the exposed data-parallel time is two all-gathers of the ~69 GB base (forward and
    backward) plus one reduce-scatter of the rank-16 adapters' fp32 gradients, on the inter-node links."""
    model, spec = resolve_model("llama-2-70b"), get_spec("MI300X")
    prof = with_params(load_profile(), {"dp_overlap": 0.0})
    rates = resolve_rates(spec, "fp8", prof, allow_fallback=False)
    assert rates.weight_bytes == pytest.approx(1.0 + 1.0 / 128)  # fp8 + one scale per 128 weights
    step = training_step(
        model=model, spec=spec, rates=rates, task="lora", tp=1, pp=1, dp=32, ep=1, global_batch=32,
        seq_len=8192, zero_stage=3, recompute="selective", software="pytorch", gpus_per_node=8, profile=prof,
    )  # fmt: skip
    link = group_link(spec, group=32, stride=1, gpus_per_node=8, link_eff=prof.param("link_eff"))
    base = float(count_params(model).total)
    assert base == pytest.approx(69e9, rel=0.01)
    gather = 2.0 * all_gather_s(base * rates.weight_bytes, 32, link)
    reduce = all_gather_s(float(lora_params(model, 16)) * GRAD_BYTES, 32, link)
    # 2 x 31/32 x ~69 GB at the network's rate: seconds, vs the adapters' ~0.5 GB of fp32 gradients
    assert gather > 100 * reduce
    assert step.dp_comm_exposed_s == pytest.approx(gather + reduce, rel=1e-9)
    # ZeRO-1 keeps a full base copy per GPU: only the adapters' reduce-scatter + all-gather remain
    z1 = training_step(
        model=model, spec=spec, rates=rates, task="lora", tp=1, pp=1, dp=32, ep=1, global_batch=32,
        seq_len=8192, zero_stage=1, recompute="selective", software="pytorch", gpus_per_node=8, profile=prof,
    )  # fmt: skip
    assert z1.dp_comm_exposed_s < 0.01 * step.dp_comm_exposed_s
