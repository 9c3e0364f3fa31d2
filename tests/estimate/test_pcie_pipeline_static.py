"""PCIe transports (P2P vs SHM), mesh-fabric shares, bridged pairs, pipeline-parallel serving and Gaudi
static-shape serving (docs/performance.md "Communication" and "Inference")."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.catalog.specs import get_spec
from gpufleet.estimate import comms
from gpufleet.estimate import inference as inf
from gpufleet.estimate import static_shapes as ss
from gpufleet.estimate.performance import estimate_inference


def test_p2p_capability_by_host_class() -> None:
    assert comms.pcie_p2p_capable(get_spec("L40S"))
    assert comms.pcie_p2p_capable(get_spec("RTX-PRO-6000"))
    assert not comms.pcie_p2p_capable(get_spec("A10G"))  # AWS g5 VMs expose no peer access
    assert not comms.pcie_p2p_capable(get_spec("RTX-4090"))  # GeForce: no PCIe P2P


def test_shm_halves_the_pcie_rate_and_wide_groups_cross_sockets() -> None:
    l40s = get_spec("L40S")
    p2p = comms.intra_node_link(l40s, 1.0, 4)
    wide = comms.intra_node_link(l40s, 1.0, 8)
    assert p2p.kind == "pcie" and p2p.bw_gb_per_s == pytest.approx(31.5)
    assert wide.kind == "pcie_shm" and wide.bw_gb_per_s == pytest.approx(31.5 * comms.SHM_BW_FACTOR)
    a10g = comms.intra_node_link(get_spec("A10G"), 1.0, 2)
    assert a10g.kind == "pcie_shm"
    assert a10g.hop_latency_s == p2p.hop_latency_s  # the latency is PCIe through the host either way


def test_mesh_fabric_group_uses_its_peer_links_only() -> None:
    mi300x = get_spec("MI300X")
    full = comms.intra_node_link(mi300x, 1.0, 8)
    assert full.bw_gb_per_s == pytest.approx(mi300x.scaleup_bw_gb_per_s / 2)
    assert comms.intra_node_link(mi300x, 1.0, 4).bw_gb_per_s == pytest.approx(full.bw_gb_per_s * 3 / 7)
    # Gaudi 2: a pair drives the 3 x 100 GbE ports between the two chips = 37.5 GB/s per direction
    assert comms.intra_node_link(get_spec("Gaudi2"), 1.0, 2).bw_gb_per_s == pytest.approx(37.5)
    # a switched fabric gives every group the full per-GPU rate
    h100 = get_spec("H100-SXM")
    assert comms.intra_node_link(h100, 1.0, 2).bw_gb_per_s == comms.intra_node_link(h100, 1.0, 8).bw_gb_per_s


def test_nvlink_bridge_joins_pairs_only() -> None:
    h100p = get_spec("H100-PCIe")
    assert comms.scaleup_group_gpus(h100p) == 2
    assert comms.intra_node_link(h100p, 1.0, 2).kind == "nvlink"
    assert comms.intra_node_link(h100p, 1.0, 4).kind == "pcie"
    assert comms.scaleup_group_gpus(get_spec("H200-NVL")) == 4
    assert comms.scaleup_group_gpus(get_spec("H100-SXM")) is None


@given(ranks=st.integers(2, 8))
def test_no_group_link_beats_the_whole_fabric(ranks: int) -> None:
    for gpu in ("MI300X", "Gaudi2", "H100-SXM", "H100-PCIe", "L40S", "A10G"):
        spec = get_spec(gpu)
        assert comms.intra_node_link(spec, 1.0, ranks).bw_gb_per_s <= (
            comms.intra_node_link(spec, 1.0).bw_gb_per_s + 1e-9
        )


def _infer(pp: int, overhead_s: float = 0.0) -> inf._Infer:
    from gpufleet.estimate.comms import Link
    from gpufleet.estimate.profile import load_profile
    from gpufleet.estimate.rates import resolve_rates
    from gpufleet.models.registry import resolve_model

    spec = get_spec("RTX-PRO-6000")
    link = Link(bw_gb_per_s=50.0, hop_latency_s=0.0, kind="pcie")
    rates = resolve_rates(spec, "fp8", load_profile(), allow_fallback=False)
    return inf._Infer(
        model=resolve_model("llama-3.3-70b"), rates=rates,
        tp=1, pp=pp, link=link, width=1.0, stack=1.0, overhead_s=overhead_s, eta_bw=0.8,
        kv_bytes_per_token=160e3, head_bytes=2.0, pp_link=link,
    )  # fmt: skip


@settings(max_examples=30, deadline=None)
@given(batch=st.integers(1, 2048), pp=st.sampled_from([2, 4, 8]))
def test_pipeline_step_bounds(batch: int, pp: int) -> None:
    """A pipelined step takes at least the even split of the single-stage work (never faster than pp GPUs
    sharing it perfectly) and the slowest stage's share; with one sequence it is the stages in turn."""
    one = _infer(1)
    piped = _infer(pp)
    t1 = inf.decode_step_s(one, float(batch), 1152.0)
    tp = inf.decode_step_s(piped, float(batch), 1152.0)
    assert tp >= t1 / pp * (1 - 1e-9)
    if batch == 1:
        assert tp >= t1 * (1 - 1e-9)  # one sequence: the stages run in turn, nothing overlaps


def test_pipeline_charges_the_engine_iteration_per_micro_batch() -> None:
    c0, c1 = _infer(4), _infer(4, overhead_s=1e-3)
    assert inf.decode_step_s(c1, 512.0, 1152.0) - inf.decode_step_s(c0, 512.0, 1152.0) == pytest.approx(4e-3)
    # pp=1: one iteration per step, as before
    assert inf.decode_step_s(_infer(1, 1e-3), 512.0, 1152.0) - inf.decode_step_s(
        _infer(1), 512.0, 1152.0
    ) == (pytest.approx(1e-3))


def test_last_stage_carries_the_lm_head() -> None:
    c = _infer(8)
    layers = c.model.num_layers // 8
    with_head = inf._dense_stage_s(c, 200.0, 0.0, 1152.0, 1.0, layers, True)
    without = inf._dense_stage_s(c, 200.0, 0.0, 1152.0, 1.0, layers, False)
    assert with_head > without


def test_gaudi_static_shapes() -> None:
    gaudi, h100 = get_spec("Gaudi2"), get_spec("H100-SXM")
    assert ss.serving_shapes(h100, "unknown") is None
    assert ss.serving_shapes(gaudi, "pytorch") is None  # MLPerf harness: dynamic model kept
    ohb = ss.serving_shapes(gaudi, "unknown")
    assert ohb is not None and ohb.static_batching
    tgi = ss.serving_shapes(gaudi, "tgi")
    assert tgi is not None and not tgi.static_batching
    assert ss.padded_batch(tgi, 9.0) == 16.0 and ss.padded_batch(None, 9.0) == 9.0
    assert ss.mean_decode_context(None, 128, 2048) == 1152.0
    assert ss.mean_decode_context(ohb, 128, 2048) == 1152.0 + 64.0
    assert ss.mean_decode_context(ohb, 100, 10) <= 128.0  # capped at the padded full length


def test_gaudi_estimate_states_static_shapes_and_is_not_faster() -> None:
    kw = dict(model="llama-2-70b", gpu="Gaudi2", precision="fp8", input_len=128, output_len=2048, gpu_count=4,
              batch=256, tp=4)  # fmt: skip
    ohb = estimate_inference(**kw)  # type: ignore[arg-type]
    mlperf = estimate_inference(software="pytorch", **kw)  # type: ignore[arg-type]
    assert any("static shapes" in n for n in ohb.notes)
    assert not any("static shapes" in n for n in mlperf.notes)
    dyn = estimate_inference(static_batching=False, **kw)  # type: ignore[arg-type]
    assert ohb.output_tokens_per_s is not None and dyn.output_tokens_per_s is not None
    # padded attention context: the static-shape stack is never faster than the same in-flight run
    assert ohb.output_tokens_per_s.central <= dyn.output_tokens_per_s.central * 1.001


def test_pcie_tp_on_a_vm_is_slower_than_on_bare_metal_p2p() -> None:
    """The same GPU without peer access (SHM) serves TP4 more slowly than with P2P."""
    a10 = get_spec("A10")
    no_p2p = replace(a10, form_factor="PCIe (AWS G5)")
    kw = dict(
        model="llama-2-7b", precision="fp16", input_len=512, output_len=256, gpu_count=4, tp=4, batch=64
    )
    fast = estimate_inference(gpu=a10, **kw)  # type: ignore[arg-type]
    slow = estimate_inference(gpu=no_p2p, **kw)  # type: ignore[arg-type]
    assert fast.output_tokens_per_s is not None and slow.output_tokens_per_s is not None
    assert slow.output_tokens_per_s.central < fast.output_tokens_per_s.central


def test_lm_head_runs_in_16_bit_for_sampled_rows_only() -> None:
    """A quantised checkpoint's 16-bit LM head runs at the 16-bit rate; only sampled rows reach it."""
    c16 = _infer(1)  # fp8 weights, head_bytes 2: 16-bit head
    c8 = replace(c16, head_bytes=c16.rates.weight_bytes)  # a head quantised like the body
    assert inf._gemm_s(c16, 100.0, 1e9, 100.0, 1e9) > inf._gemm_s(c8, 100.0, 1e9, 100.0, 1e9)
    # fewer head rows (prompt tokens that sample nothing) cost less
    assert inf._gemm_s(c16, 100.0, 1e9, 1.0, 1e9) < inf._gemm_s(c16, 100.0, 1e9, 100.0, 1e9)
