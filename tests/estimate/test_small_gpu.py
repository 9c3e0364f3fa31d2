"""Single-GPU / small-GPU / PCIe serving mechanisms: engines that prefill outside the decode steps (TGI v1-v2)
(docs/performance.md "Inference")."""

from __future__ import annotations

import pytest

from gpufleet.estimate import estimate_inference
from gpufleet.estimate import inference as inf


def test_tgi_prefills_each_prompt_in_a_pass_of_its_own() -> None:
    """TGI v1-v2: throughput at b sequences = b x out / (out x TPOT(b) + b x prefill of one prompt); the
    prefill of one prompt is the batch-1 TTFT (no decode step to wait for)."""
    kw = dict(model="llama-2-7b", gpu="A10G", precision="fp16", output_len=256, gpu_count=4, tp=4,
              software="tgi", allow_fallback=True)  # fmt: skip
    one = estimate_inference(input_len=512, batch=1, **kw)  # type: ignore[arg-type]
    b20 = estimate_inference(input_len=512, batch=20, **kw)  # type: ignore[arg-type]
    assert one.ttft_s is not None and b20.tpot_s is not None and b20.output_tokens_per_s is not None
    expect = 20 * 256 / (256 * b20.tpot_s.central + 20 * one.ttft_s.central)
    assert b20.output_tokens_per_s.central == pytest.approx(expect, rel=1e-9)
    assert "tgi" in inf.SEPARATE_PREFILL_STACKS and "vllm" not in inf.SEPARATE_PREFILL_STACKS


def test_separate_prefill_is_never_faster_than_chunked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A prefill pass of its own reads the weights again and pays an engine iteration; carrying the prompt
    inside the decode step shares both, so the same engine is never faster with separate prefills."""
    for batch in (1, 8, 64):
        kw = dict(model="llama-3.1-8b", gpu="L40S", precision="bf16", input_len=1024, output_len=128,
                  batch=batch, software="tgi", allow_fallback=True)  # fmt: skip
        sep = estimate_inference(**kw)  # type: ignore[arg-type]
        assert sep.output_tokens_per_s is not None
        with monkeypatch.context() as mp:
            mp.setattr(inf, "SEPARATE_PREFILL_STACKS", frozenset())
            mixed = estimate_inference(**kw)  # type: ignore[arg-type]
        assert mixed.output_tokens_per_s is not None
        assert sep.output_tokens_per_s.central <= mixed.output_tokens_per_s.central * (1 + 1e-9)
