"""resolve_model: ids, aliases, size classes, Hugging Face config.json files and every bad-input path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpufleet.errors import ConfigFileError, UnknownNameError
from gpufleet.models import count_params, load_model_entries, parse_stated_params, resolve_model


def _write(tmp_path: Path, cfg: Any, name: str = "my-model") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    path = folder / "config.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return path


def test_shipped_id_and_case_insensitive_alias() -> None:
    assert resolve_model("llama-3.1-70b").num_layers == 80
    assert resolve_model("LLAMA-3-70B").id == "llama-3.1-70b"
    assert resolve_model("OctoCoder").id == "starcoder-15.5b"
    assert resolve_model("Llama-2-7B").id == "llama-2-7b"


def test_hugging_face_repo_id() -> None:
    assert resolve_model("meta-llama/Llama-3.1-8B").id == "llama-3.1-8b"
    assert resolve_model("MISTRALAI/MIXTRAL-8X7B-V0.1").id == "mixtral-8x7b"


def test_unknown_repo_id_is_unknown_name() -> None:
    with pytest.raises(UnknownNameError, match=r"config\.json"):
        resolve_model("meta-llama/Llama-3.1-8B-Instruct-XYZ")


def test_size_classes_are_real_architectures() -> None:
    small, medium = resolve_model("SMALL"), resolve_model("medium")
    large, massive = resolve_model("LARGE"), resolve_model("MASSIVE")
    assert count_params(small).total == count_params(resolve_model("llama-2-13b")).total
    assert 33.5e9 < count_params(medium).total < 34e9  # CodeLlama-34B: 33.7B
    assert medium.num_kv_heads == 8 and medium.num_layers == 48
    assert count_params(large).total == count_params(resolve_model("llama-3.1-70b")).total
    assert count_params(massive).total == count_params(resolve_model("llama-3.1-405b")).total


def test_unknown_model_lists_close_matches() -> None:
    with pytest.raises(UnknownNameError) as err:
        resolve_model("llama-3.1-7b")
    assert "llama-3.1-70b" in err.value.close_matches or "llama-3.1-8b" in err.value.close_matches
    assert "size class" in str(err.value)


def test_missing_config_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="does not exist"):
        resolve_model(str(tmp_path / "nope" / "config.json"))


def test_folder_without_config_json(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="does not exist"):
        resolve_model(str(tmp_path))


def test_config_folder_and_file(tmp_path: Path) -> None:
    cfg = {
        "model_type": "llama",
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 14336,
        "vocab_size": 128256,
        "max_position_embeddings": 131072,
    }
    path = _write(tmp_path, cfg)
    by_file, by_dir = resolve_model(str(path)), resolve_model(str(path.parent))
    assert by_file == by_dir
    assert by_file.id == "my-model"
    assert count_params(by_file).total == count_params(resolve_model("llama-3.1-8b")).total


def test_missing_fields_named(tmp_path: Path) -> None:
    path = _write(tmp_path, {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32})
    with pytest.raises(ConfigFileError) as err:
        resolve_model(str(path))
    msg = str(err.value)
    assert str(path) in msg
    for field in ("num_hidden_layers", "intermediate_size", "vocab_size", "max_position_embeddings"):
        assert field in msg


def test_bad_field_type_named(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            "model_type": "gpt2",
            "n_embd": "768",
            "n_layer": 12,
            "n_head": 12,
            "vocab_size": 50257,
            "n_positions": 1024,
        },
    )
    with pytest.raises(ConfigFileError, match="'n_embd' has the value '768'"):
        resolve_model(str(path))


def test_negative_field_rejected(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            "model_type": "gpt2",
            "n_embd": 768,
            "n_layer": -1,
            "n_head": 12,
            "vocab_size": 50257,
            "n_positions": 1024,
        },
    )
    with pytest.raises(ConfigFileError, match="n_layer"):
        resolve_model(str(path))


def test_heads_not_multiple_of_kv_heads(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            "hidden_size": 4096,
            "num_hidden_layers": 2,
            "num_attention_heads": 32,
            "num_key_value_heads": 5,
            "intermediate_size": 11008,
            "vocab_size": 32000,
            "max_position_embeddings": 4096,
        },
    )
    with pytest.raises(ConfigFileError, match="key/value heads"):
        resolve_model(str(path))


def test_unsupported_model_type(tmp_path: Path) -> None:
    path = _write(tmp_path, {"model_type": "gpt_neox", "hidden_size": 6144, "num_hidden_layers": 44})
    with pytest.raises(ConfigFileError, match="'model_type' is 'gpt_neox'"):
        resolve_model(str(path))


def test_invalid_json(tmp_path: Path) -> None:
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "config.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigFileError, match="not valid JSON"):
        resolve_model(str(folder / "config.json"))


def test_json_not_an_object(tmp_path: Path) -> None:
    path = _write(tmp_path, [1, 2, 3])
    with pytest.raises(ConfigFileError, match="JSON object"):
        resolve_model(str(path))


def test_head_dim_read_from_config(tmp_path: Path) -> None:
    gemma = resolve_model("gemma-2-27b")
    assert gemma.head_dim == 128 and gemma.hidden_size // gemma.num_attention_heads == 144
    assert gemma.norms_per_layer == 4 and gemma.tie_word_embeddings
    assert gemma.sliding_window == 4096 and gemma.sliding_window_layer_fraction == 0.5


@pytest.mark.parametrize(
    ("model_id", "facts"),
    [
        (
            "gpt2",
            {"intermediate_size": 3072, "position_kind": "learned", "linear_bias": True, "ffn_kind": "mlp"},
        ),
        (
            "gpt-j-6b",
            {
                "intermediate_size": 16384,
                "parallel_block": True,
                "mlp_bias": True,
                "lm_head_bias": True,
                "linear_bias": False,
                "tie_word_embeddings": False,
                "norms_per_layer": 1,
            },
        ),
        ("starcoder-15.5b", {"num_kv_heads": 1, "head_dim": 128, "linear_bias": True}),
        (
            "falcon-40b",
            {
                "num_kv_heads": 8,
                "intermediate_size": 32768,
                "parallel_block": True,
                "norms_per_layer": 2,
                "max_position_embeddings": 2048,
                "tie_word_embeddings": True,
            },
        ),
        (
            "bert-base-uncased",
            {"is_decoder": False, "type_vocab_size": 2, "pooler": True, "final_norm": False},
        ),
        ("qwen2.5-7b", {"qkv_bias": True, "linear_bias": False}),
        ("mixtral-8x7b", {"num_experts": 8, "experts_per_token": 2, "moe_intermediate_size": 14336}),
        (
            "deepseek-v3",
            {
                "num_experts": 256,
                "num_shared_experts": 1,
                "first_k_dense_layers": 3,
                "kv_lora_rank": 512,
                "qk_rope_head_dim": 64,
                "q_lora_rank": 1536,
            },
        ),
        ("mistral-7b", {"sliding_window": 4096, "sliding_window_layer_fraction": 1.0}),
        ("gpt3-175b", {"ffn_kind": "mlp", "position_kind": "learned", "dropout": True}),
    ],
)
def test_family_spellings(model_id: str, facts: dict[str, object]) -> None:
    arch = resolve_model(model_id)
    for field, value in facts.items():
        assert getattr(arch, field) == value, field


def test_falcon_7b_multi_query_config(tmp_path: Path) -> None:
    """Falcon-7B (published config): multi_query, one LayerNorm, parallel attention, tied lm_head (the
    FalconConfig default); closed form per layer: ln 2h + qkv h*(h + 2*64) + dense h*h + MLP 8h²."""
    cfg = {
        "architectures": ["FalconForCausalLM"],
        "hidden_size": 4544,
        "num_hidden_layers": 32,
        "num_attention_heads": 71,
        "multi_query": True,
        "parallel_attn": True,
        "bias": False,
        "vocab_size": 65024,
        "new_decoder_architecture": False,
        "alibi": False,
    }
    arch = resolve_model(str(_write(tmp_path, cfg)))
    assert arch.num_kv_heads == 1 and arch.norms_per_layer == 1
    h, layers, v = 4544, 32, 65024
    per_layer = 2 * h + h * (h + 2 * 64) + h * h + 8 * h * h
    assert count_params(arch).total == layers * per_layer + v * h + 2 * h  # 6.92B; HF lists 7.22B untied


def test_qwen2_sliding_window_only_when_enabled(tmp_path: Path) -> None:
    base = {
        "model_type": "qwen2",
        "hidden_size": 896,
        "num_hidden_layers": 24,
        "num_attention_heads": 14,
        "num_key_value_heads": 2,
        "intermediate_size": 4864,
        "vocab_size": 151936,
        "max_position_embeddings": 32768,
        "sliding_window": 32768,
        "use_sliding_window": False,
    }
    assert resolve_model(str(_write(tmp_path, base, "a"))).sliding_window is None
    on = resolve_model(str(_write(tmp_path, base | {"use_sliding_window": True}, "b")))
    assert on.sliding_window == 32768


@pytest.mark.parametrize(
    ("text", "total", "active"),
    [
        ("46.7B total / 12.9B active", 46.7e9, 12.9e9),
        ("1B (1.23B)", 1.23e9, None),
        ("0.49B (0.36B non-embedding)", 0.49e9, None),
        ("1.5B (1542M)", 1.542e9, None),
        ("124M", 124e6, None),
        ("1T", 1e12, None),
        ("671B total / 37B activated (+14B MTP module = 685B on HF)", 671e9, 37e9),
    ],
)
def test_parse_stated_params(text: str, total: float, active: float | None) -> None:
    got_total, got_active = parse_stated_params(text)
    assert got_total == pytest.approx(total)
    assert got_active == (pytest.approx(active) if active else None)


def test_parse_stated_params_rejects_text() -> None:
    with pytest.raises(ValueError, match="no count"):
        parse_stated_params("about seven billion")


def test_every_shipped_entry_loads() -> None:
    entries = load_model_entries()
    assert len(entries) == 47
    assert all(e.arch.stated_params for e in entries.values())


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
        ("meta-llama/Meta-Llama-3.1-8B", "llama-3.1-8b"),
        ("Llama-2-70b-chat-hf", "llama-2-70b"),
        ("llama3.1-8b", "llama-3.1-8b"),
        ("mistralai/Mistral-7B-Instruct-v0.3", "mistral-7b"),
        ("Qwen/Qwen2.5-72B-Instruct", "qwen2.5-72b"),
        ("google/gemma-3-27b-it", "gemma-3-27b"),
        ("mistralai/Mistral-Small-24B-Instruct-2501", "mistral-small-3-24b"),
        ("deepseek-ai/DeepSeek-V3-0324", "deepseek-v3"),
        ("Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen3-30b-a3b"),
    ],
)
def test_a_release_of_a_shipped_model_resolves_to_its_architecture(name: str, expected: str) -> None:
    assert resolve_model(name).id == expected


@pytest.mark.parametrize("name", ["x-instruct", "Qwen/Qwen2.5-7B-Instruct-AWQ", "llama-instruct", "gpt-j"])
def test_a_suffix_alone_does_not_invent_a_model(name: str) -> None:
    # a quantised repo (AWQ) names a precision as well: the user says qwen2.5-7b and int4
    with pytest.raises(UnknownNameError):
        resolve_model(name)
