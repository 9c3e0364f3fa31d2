"""Parameter-count invariants over random Hugging Face configs (hypothesis)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpufleet.models import arch_from_config, count_params, lora_params


@st.composite
def llama_configs(draw: st.DrawFn) -> dict[str, object]:
    kv = draw(st.integers(1, 16))
    group = draw(st.integers(1, 8))
    head_dim = draw(st.sampled_from([64, 80, 128, 256]))
    return {
        "model_type": "llama",
        "hidden_size": draw(st.integers(1, 64)) * 64,
        "num_hidden_layers": draw(st.integers(1, 96)),
        "num_attention_heads": kv * group,
        "num_key_value_heads": kv,
        "head_dim": head_dim,
        "intermediate_size": draw(st.integers(1, 512)) * 64,
        "vocab_size": draw(st.integers(1000, 260000)),
        "max_position_embeddings": 4096,
        "tie_word_embeddings": draw(st.booleans()),
    }


@given(llama_configs())
def test_llama_closed_form(cfg: dict[str, object]) -> None:
    """12-ish h² rule made exact: L(2h·a·d + 2h·kv·d + 3hI + 2h) + V·h (x2 untied) + h."""
    m = arch_from_config(cfg, model_id="x", name="x", source="hypothesis")
    h, n, a, kv, d = m.hidden_size, m.num_layers, m.num_attention_heads, m.num_kv_heads, m.head_dim
    per_layer = 2 * h * a * d + 2 * h * kv * d + 3 * h * m.intermediate_size + 2 * h
    emb = m.vocab_size * h * (1 if m.tie_word_embeddings else 2)
    pc = count_params(m)
    assert pc.total == n * per_layer + emb + h
    assert pc.active == pc.total
    assert pc.non_embedding == n * per_layer + h


@given(llama_configs(), st.integers(2, 64), st.integers(1, 8))
def test_moe_total_grows_with_experts_active_does_not(cfg: dict[str, object], experts: int, k: int) -> None:
    k = min(k, experts)
    base = {**cfg, "num_local_experts": experts, "num_experts_per_tok": k}
    more = {**base, "num_local_experts": experts + 1}
    arch = arch_from_config(base, model_id="a", name="a", source="h")
    a = count_params(arch)
    b = count_params(arch_from_config(more, model_id="b", name="b", source="h"))
    assert b.total > a.total
    assert b.active - a.active == arch.hidden_size * arch.num_layers  # only each router grows by a column
    assert a.active <= a.total


@given(llama_configs(), st.integers(1, 256))
def test_lora_far_smaller_than_model(cfg: dict[str, object], rank: int) -> None:
    m = arch_from_config(cfg, model_id="x", name="x", source="h")
    assert 0 < lora_params(m, rank) == rank * lora_params(m, 1)
