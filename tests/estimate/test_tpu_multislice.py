"""TPU Multislice: ICI within a pod, DCN between pods; MaxText shards inside a slice and replicates across."""

from __future__ import annotations

import pytest

from gpufleet.catalog.specs import get_spec
from gpufleet.estimate.calibration import load_profile, with_params
from gpufleet.estimate.comms import all_gather_s, all_reduce_s, inter_node_link, intra_node_link
from gpufleet.estimate.performance import GRAD_BYTES, resolve_rates, training_step
from gpufleet.estimate.rates import scaleup_domain_gpus, tpu_pod_chips
from gpufleet.models import count_params, resolve_model


def test_tpu_domain_is_at_most_a_pod() -> None:
    v6e, v5p, h100 = get_spec("TPU-v6e"), get_spec("TPU-v5p"), get_spec("H100-SXM")
    assert tpu_pod_chips(v6e) == 256 and tpu_pod_chips(v5p) == 8960 and tpu_pod_chips(h100) is None
    assert scaleup_domain_gpus(v6e, 1024) == 256  # 4 slices of a v6e-256 pod
    assert scaleup_domain_gpus(v6e, 64) == 64
    assert scaleup_domain_gpus(v5p, 512) == 512  # one slice
    # DCN: 4 x 200 Gb/s NICs per 8 v6e chips = 100 Gb/s = 12.5 GB/s per chip, at link_eff
    assert inter_node_link(v6e, 0.8, 256).bw_gb_per_s == pytest.approx(12.5 * 0.8)


def test_maxtext_multislice_reduces_shard_gradients_over_dcn() -> None:
    """GPT-3 175B on 4 v6e-256 slices, FSDP: each micro-batch all-gathers the int8 weights over the 256 chips
    of its slice (forward + backward), the gradients reduce-scatter there, and each chip's 1/256 shard of
    fp32 gradients all-reduces across the 4 slices over DCN: 2 x 3/4 x 175e9 / 256 x 4 B ~ 4.1 GB at 10 GB/s
    ~ 0.41 s. No overlap here, so all of it is exposed."""
    model, spec = resolve_model("gpt3-175b"), get_spec("TPU-v6e")
    prof = with_params(load_profile(), {"dp_overlap": 0.0})
    rates = resolve_rates(spec, "int8", prof, allow_fallback=False)
    step = training_step(
        model=model, spec=spec, rates=rates, task="pretrain", tp=1, pp=1, dp=1024, ep=1, global_batch=1024,
        seq_len=2048, zero_stage=3, recompute="full", software="unknown", gpus_per_node=256, profile=prof,
    )  # fmt: skip
    eff = prof.param("link_eff")
    ici, dcn = intra_node_link(spec, eff, 256), inter_node_link(spec, eff, 256)
    params = float(count_params(model).total)
    dcn_s = all_reduce_s(params / 256 * GRAD_BYTES, 4, dcn)
    assert dcn_s == pytest.approx(2 * 3 / 4 * params / 256 * 4 / 10e9 + 6 * dcn.hop_latency_s)
    assert 0.3 < dcn_s < 0.5
    expected = (
        2 * all_gather_s(params * rates.weight_bytes, 256, ici) + all_gather_s(params * GRAD_BYTES, 256, ici)
    ) + dcn_s
    assert step.dp_comm_exposed_s == pytest.approx(expected, rel=1e-9)
    # a PyTorch FSDP job (full sharding) on the same chips gathers across all 1024 over DCN instead: slower
    full = training_step(
        model=model, spec=spec, rates=rates, task="pretrain", tp=1, pp=1, dp=1024, ep=1, global_batch=1024,
        seq_len=2048, zero_stage=3, recompute="full", software="pytorch", gpus_per_node=256, profile=prof,
    )  # fmt: skip
    assert full.dp_comm_exposed_s > 10 * step.dp_comm_exposed_s


def test_xla_overlaps_tensor_parallel_collectives_with_matmuls() -> None:
    """GPT-3 175B on a v5p-1024 slice with TP 8 (MLPerf v4.0 MaxText layout): XLA's collective matmul hides
    ``tp_overlap_xla`` of the TP traffic, a stack without it ``tp_overlap``; at 0.6 vs 0.1 the exposed TP
    time is 0.4 / 0.9 of the other, from the same all-reduce bytes."""
    model, spec = resolve_model("gpt3-175b"), get_spec("TPU-v5p")
    prof = with_params(load_profile(), {"tp_overlap_xla": 0.6, "tp_overlap": 0.1})
    rates = resolve_rates(spec, "int8", prof, allow_fallback=False)
    kw = dict(
        model=model, spec=spec, rates=rates, task="pretrain", tp=8, pp=1, dp=64, ep=1, global_batch=2048,
        seq_len=2048, zero_stage=3, recompute="selective", gpus_per_node=512, profile=prof,
    )  # fmt: skip
    xla = training_step(software="unknown", **kw)  # type: ignore[arg-type]
    other = training_step(software="pytorch", **kw)  # type: ignore[arg-type]
    assert other.tp_comm_exposed_s > 0
    assert xla.tp_comm_exposed_s == pytest.approx(other.tp_comm_exposed_s * 0.4 / 0.9, rel=1e-9)
