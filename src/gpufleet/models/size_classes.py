"""The GPU Fleet Optimizer's coarse size classes, each pinned to a real published architecture.

A size class must be estimable like any model (KV cache, activations, TP limits), so each maps to one real
config.json rather than a bare parameter count:

| class   | nominal | architecture used                    | params (counted) | config (huggingface.co/...) |
|---------|---------|--------------------------------------|------------------|---------------|
| SMALL   | 13B     | Llama-2-13B (MHA, 40 layers)         | 13.0B            | meta-llama/Llama-2-13b-hf |
| MEDIUM  | 35B     | CodeLlama-34B (GQA 8, 48 layers)     | 33.7B            | codellama/CodeLlama-34b-hf |
| LARGE   | 70B     | Llama-3.1-70B (GQA 8, 80 layers)     | 70.6B            | meta-llama/Llama-3.1-70B |
| MASSIVE | 405B    | Llama-3.1-405B (GQA 8, 126 layers)   | 405.9B           | meta-llama/Llama-3.1-405B |
"""

from __future__ import annotations

from functools import cache
from typing import Any

from gpufleet.models.arch import ModelArch
from gpufleet.models.hf_config import arch_from_config

_LLAMA2 = {"vocab_size": 32000, "tie_word_embeddings": False, "model_type": "llama"}
_LLAMA31 = {
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "tie_word_embeddings": False,
    "model_type": "llama",
}

#: class -> (nominal parameters [count], architecture name, config source, config fields)
SIZE_CLASSES: dict[str, tuple[float, str, str, dict[str, Any]]] = {
    "SMALL": (
        13e9,
        "Llama-2-13B",
        "https://meta-llama/Llama-2-13b-hf/blob/main/config.json",
        _LLAMA2
        | {
            "hidden_size": 5120,
            "num_hidden_layers": 40,
            "num_attention_heads": 40,
            "num_key_value_heads": 40,
            "intermediate_size": 13824,
            "max_position_embeddings": 4096,
        },
    ),
    "MEDIUM": (
        35e9,
        "CodeLlama-34B",
        "https://codellama/CodeLlama-34b-hf/blob/main/config.json",
        _LLAMA2
        | {
            "hidden_size": 8192,
            "num_hidden_layers": 48,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "intermediate_size": 22016,
            "max_position_embeddings": 16384,
        },
    ),
    "LARGE": (
        70e9,
        "Llama-3.1-70B",
        "https://meta-llama/Llama-3.1-70B/blob/main/config.json",
        _LLAMA31
        | {
            "hidden_size": 8192,
            "num_hidden_layers": 80,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "intermediate_size": 28672,
        },
    ),
    "MASSIVE": (
        405e9,
        "Llama-3.1-405B",
        "https://meta-llama/Llama-3.1-405B/blob/main/config.json",
        _LLAMA31
        | {
            "hidden_size": 16384,
            "num_hidden_layers": 126,
            "num_attention_heads": 128,
            "num_key_value_heads": 8,
            "intermediate_size": 53248,
        },
    ),
}


@cache
def size_class_arch(size_class: str) -> ModelArch:
    """The :class:`ModelArch` standing for a size class (upper-case key of :data:`SIZE_CLASSES`)."""
    _nominal, arch_name, source, cfg = SIZE_CLASSES[size_class]
    return arch_from_config(
        cfg,
        model_id=size_class,
        name=f"{size_class} ({arch_name} architecture)",
        source=source,
    )


#: a custom size class written as a model reference: ``size:200B`` (billions of parameters)
CUSTOM_SIZE_PREFIX = "size:"


def custom_size_ref(params_billion: float) -> str:
    """The model reference of a custom size class of ``params_billion`` billion parameters."""
    return f"{CUSTOM_SIZE_PREFIX}{params_billion:g}B"


def parse_custom_size(name: str) -> float | None:
    """``"size:200B"`` -> 200e9 parameters; None when ``name`` is not a custom size reference."""
    if not name.lower().startswith(CUSTOM_SIZE_PREFIX):
        return None
    text = name[len(CUSTOM_SIZE_PREFIX) :].strip().upper().removesuffix("B")
    try:
        value = float(text)
    except ValueError:
        return None
    return value * 1e9 if 0.1 <= value <= 10_000 else None


@cache
def custom_size_arch(params: float) -> ModelArch:
    """A dense decoder of about ``params`` parameters for a GPU Fleet Optimizer custom size class (its
    model_config.json gives only ``parameter_count_billion``, e.g. extra_large = 200).

    Built from the pinned class nearest in log(parameters) by scaling its layer count so the counted
    parameters match (hidden size, heads and FFN width stay those of a published architecture): 200B ->
    the Llama-3.1-405B layer shape with 61 layers. An approximation: KV cache and activations scale with
    the layers; a real model of that size may be wider and shallower.
    """
    import math

    from gpufleet.models.params import count_params

    key = min(SIZE_CLASSES, key=lambda k: abs(math.log(SIZE_CLASSES[k][0] / params)))
    _nominal, arch_name, source, cfg = SIZE_CLASSES[key]
    base = count_params(size_class_arch(key))
    per_layer = base.dense_layer
    fixed = base.total - per_layer * base.num_dense_layers
    layers = max(1, round((params - fixed) / per_layer))
    ref = custom_size_ref(params / 1e9)
    return arch_from_config(
        cfg | {"num_hidden_layers": layers},
        model_id=ref,
        name=f"{params / 1e9:g}B custom size ({arch_name} layer shape, {layers} layers)",
        source=f"{source} (layers scaled to {params / 1e9:g}B parameters)",
    )
