"""MoE serving at load: the routed experts' activations (routing gather, GEMM inputs and outputs, gated
activation, combine) move through HBM on top of the expert weights (moe_serving.routed_activation_elements);
direction and size against the bytes recomputed from the model's widths; dense models untouched."""

from __future__ import annotations

import dataclasses

import pytest

from gpufleet.estimate import inference as inf
from gpufleet.estimate import moe_serving as moe
from gpufleet.estimate.inference import default_kv_precision
from gpufleet.estimate.rates import ACT_BYTES, resolve_inputs, resolve_rates
from gpufleet.models.registry import resolve_model


def _base(model: str, gpu: str, precision: str, software: str = "trtllm") -> inf._Infer:
    arch, spec, prof = resolve_inputs(model, gpu, None)
    rates = resolve_rates(spec, precision, prof, allow_fallback=False)
    kv = default_kv_precision(precision, spec, software)
    return inf._prepare(arch, spec, prof, precision, software, rates, kv, None, 8, None).base


def test_activation_elements_hand_values() -> None:
    """Qwen3-30B-A3B (h 2048, experts 768 wide, top-8): per routed copy 2h + 3 i_e inside the GEMMs and
    h + 3 i_e between them, plus h per token for the combine's write; TP splits only the expert width."""
    q = resolve_model("qwen3-30b-a3b")
    assert (q.hidden_size, q.moe_intermediate_size, q.experts_per_token) == (2048, 768, 8)
    io, glue = moe.routed_activation_elements(q, 10.0, 80.0)
    assert io == pytest.approx(80 * (2 * 2048 + 3 * 768))
    assert glue == pytest.approx(80 * (2048 + 3 * 768) + 10 * 2048)
    io2, glue2 = moe.routed_activation_elements(q, 10.0, 80.0, tp=2)
    assert io2 == pytest.approx(80 * (2 * 2048 + 3 * 384))
    assert glue2 == pytest.approx(80 * (2048 + 3 * 384) + 10 * 2048)
    assert moe.routed_activation_elements(resolve_model("llama-3.1-8b"), 10.0, 80.0) == (0.0, 0.0)
    assert moe.routed_activation_elements(q, 0.0, 0.0) == (0.0, 0.0)


def _no_activations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(moe, "routed_activation_elements", lambda *a, **k: (0.0, 0.0))


@pytest.mark.parametrize(
    ("model", "gpu", "precision", "batch"),
    [
        ("qwen3-30b-a3b", "B200", "fp4", 1533),  # saturated, ISL/OSL 1k
        ("qwen3-30b-a3b", "H100-SXM", "fp8", 469),
        ("gpt-oss-120b", "B200", "fp4", 2048),
        ("gpt-oss-20b", "B200", "fp4", 2048),
        ("llama-4-scout", "B200", "fp4", 547),
    ],
)
def test_tp_decode_step_grows_by_the_activation_traffic(
    monkeypatch: pytest.MonkeyPatch, model: str, gpu: str, precision: str, batch: int
) -> None:
    """A saturated decode step (as many prompt tokens as sequences) grows by at least the memory-bound
    kernels' bytes (h + 3 i_e per routed copy, h per token) at the achieved bandwidth and by at most all
    activation bytes; for these small-active models that is 2-12 % of the step, not the ~2x gap."""
    c = _base(model, gpu, precision)
    m = c.model
    rows, ctx = 2.0 * batch, 1536.0
    h, i_e, k = float(m.hidden_size), float(m.moe_intermediate_size), m.experts_per_token
    per_layer_io = rows * k * (2 * h + 3 * i_e)
    per_layer_glue = rows * k * (h + 3 * i_e) + rows * h
    bw = c.rates.mem_bw_bytes_per_s * c.eta_bw
    glue_s = m.num_moe_layers * per_layer_glue * ACT_BYTES / bw
    all_s = m.num_moe_layers * (per_layer_io + per_layer_glue) * ACT_BYTES / bw
    with_act = inf.decode_step_s(c, float(batch), ctx, float(batch), 1024.0)
    _no_activations(monkeypatch)
    without = inf.decode_step_s(c, float(batch), ctx, float(batch), 1024.0)
    assert glue_s * 0.999 <= with_act - without <= all_s * 1.001
    assert 0.02 < with_act / without - 1.0 < 0.12


def test_dense_models_are_untouched(monkeypatch: pytest.MonkeyPatch) -> None:
    c = _base("llama-3.1-8b", "H100-SXM", "fp8")
    before = inf.decode_step_s(c, 256.0, 1536.0, 256.0, 1024.0), inf.prefill_s(c, 8.0, 1024.0, latency=False)
    _no_activations(monkeypatch)
    after = inf.decode_step_s(c, 256.0, 1536.0, 256.0, 1024.0), inf.prefill_s(c, 8.0, 1024.0, latency=False)
    assert before == after


def test_ep_stage_adds_the_busiest_ranks_activation_traffic(monkeypatch: pytest.MonkeyPatch) -> None:
    """DeepSeek-V3 with EP 8 and attention DP on B200 fp4: the busiest rank moves its routed copies'
    activations (no TP split of the experts) and its own tokens' combine output; the stage grows by at least
    the memory-bound part and at most all of it."""
    c = dataclasses.replace(_base("deepseek-v3", "B200", "fp4"), ep=8, tp=1, ep_per_node=8)
    m = c.model
    seqs = 8.0 * 256
    busiest = moe.busiest_rank_load(seqs * m.experts_per_token / 8, 8)
    h, i_e = float(m.hidden_size), float(m.moe_intermediate_size)
    bw = c.rates.mem_bw_bytes_per_s * c.eta_bw
    glue_s = m.num_moe_layers * (busiest * (h + 3 * i_e) + seqs / 8 * h) * ACT_BYTES / bw
    io_s = m.num_moe_layers * busiest * (2 * h + 3 * i_e) * ACT_BYTES / bw
    with_act = inf._ep_stage_s(c, seqs, 2048.0, 0.0, 1.0)
    _no_activations(monkeypatch)
    without = inf._ep_stage_s(c, seqs, 2048.0, 0.0, 1.0)
    assert glue_s * 0.999 <= with_act - without <= (glue_s + io_s) * 1.001
