"""The small-active MoE models' attention at load is modelled as their config.json states it (issue 25, the
MoE-at-load gap, item (c)): gpt-oss attends a 128-token sliding window on every other layer
(``sliding_window: 128``, ``layer_types`` alternating), Llama 4 attends 8192-token chunks on 3 of 4 layers
(``attention_chunk_size: 8192``, every 4th layer global without RoPE), Qwen3 MoE everywhere. A windowed
layer keeps and reads only its window, which changes both memory (more sequences fit) and the decode step's
KV reads; both stay at or above the bytes at peak bandwidth (the roofline)."""

from __future__ import annotations

import dataclasses

import pytest

from gpufleet.estimate import inference as inf
from gpufleet.estimate import inference_step as st
from gpufleet.estimate.inference import default_kv_precision
from gpufleet.estimate.memory import max_concurrent_sequences
from gpufleet.estimate.rates import resolve_inputs, resolve_rates
from gpufleet.models.registry import resolve_model


def _base(model: object, gpu: str, precision: str, software: str = "trtllm") -> inf._Infer:
    arch, spec, prof = resolve_inputs(model, gpu, None)  # type: ignore[arg-type]
    rates = resolve_rates(spec, precision, prof, allow_fallback=False)
    kv = default_kv_precision(precision, spec, software)
    return inf._prepare(arch, spec, prof, precision, software, rates, kv, None, 8, None).base


def test_configs_as_published() -> None:
    oss, scout, qwen = (resolve_model(n) for n in ("gpt-oss-120b", "llama-4-scout", "qwen3-30b-a3b"))
    assert (oss.sliding_window, oss.sliding_window_layer_fraction) == (128, 0.5)
    assert (scout.sliding_window, scout.sliding_window_layer_fraction) == (8192, 0.75)
    assert qwen.sliding_window is None


def test_gpt_oss_reads_the_window_on_half_its_layers() -> None:
    """At the 1k/1k mean context of 1536 cached tokens, a gpt-oss decode reads 0.5 x 1536 + 0.5 x 128 = 832
    tokens' KV per layer on average: 0.54 of a full-attention model's, and never less than those bytes
    at peak HBM bandwidth."""
    oss = resolve_model("gpt-oss-120b")
    assert st._kv_read_tokens(oss, 1536.0) == pytest.approx(832.0)
    full = dataclasses.replace(oss, sliding_window=None, sliding_window_layer_fraction=0.0)
    c, c_full = _base(oss, "B200", "fp4"), _base(full, "B200", "fp4")
    windowed = inf.decode_step_s(c, 1024.0, 1536.0)
    unwindowed = inf.decode_step_s(c_full, 1024.0, 1536.0)
    kv_full_s = 1024 * 1536 * c.kv_bytes_per_token / (c.rates.mem_bw_bytes_per_s * c.eta_bw)
    assert unwindowed - windowed == pytest.approx(kv_full_s * (1 - 832 / 1536), rel=0.02)
    assert windowed > 1024 * 832 * c.kv_bytes_per_token / c.rates.mem_bw_bytes_per_s


def test_windowed_layers_let_more_sequences_fit() -> None:
    """The window-capped layers hold at most 128 tokens (block-rounded), so at 2048 tokens per sequence
    gpt-oss-20b on one H100 fits ~1.8x the sequences of the same model with full attention everywhere."""
    oss = resolve_model("gpt-oss-20b")
    full = dataclasses.replace(oss, sliding_window=None, sliding_window_layer_fraction=0.0)
    kw = dict(gpu="H100-SXM", precision="fp8", tp=1, pp=1, context_len=2048, engine="vllm")
    windowed = max_concurrent_sequences(model=oss, **kw)  # type: ignore[arg-type]
    unwindowed = max_concurrent_sequences(model=full, **kw)  # type: ignore[arg-type]
    assert 1.6 < windowed / unwindowed < 2.0


def test_llama4_chunks_change_nothing_below_the_chunk() -> None:
    """Llama 4's chunked layers (modelled as an 8192-token window) attend every cached key while the context
    is below 8192, as full attention does: the 1k/1k setups read the whole context on every layer."""
    scout = resolve_model("llama-4-scout")
    assert st._kv_read_tokens(scout, 1536.0) == 1536.0
    assert st._kv_read_tokens(scout, 16384.0) == pytest.approx(0.25 * 16384 + 0.75 * 8192)
