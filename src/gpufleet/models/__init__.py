"""Model architectures: the shipped registry, Hugging Face config parsing, size classes, parameter counts."""

from gpufleet.models.arch import ModelArch
from gpufleet.models.hf_config import arch_from_config
from gpufleet.models.params import (
    LORA_TARGETS,
    ParamCount,
    attention_params,
    count_params,
    ffn_params,
    lora_params,
)
from gpufleet.models.registry import (
    ModelEntry,
    known_model_names,
    load_model_entries,
    parse_stated_params,
    released_precision,
    resolve_model,
)
from gpufleet.models.size_classes import SIZE_CLASSES, size_class_arch

__all__ = [
    "LORA_TARGETS",
    "SIZE_CLASSES",
    "ModelArch",
    "ModelEntry",
    "ParamCount",
    "arch_from_config",
    "attention_params",
    "count_params",
    "ffn_params",
    "known_model_names",
    "load_model_entries",
    "lora_params",
    "parse_stated_params",
    "released_precision",
    "resolve_model",
    "size_class_arch",
]
