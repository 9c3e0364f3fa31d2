"""Numeric precisions: storage bytes per element and which dense peak a precision computes at.

Sources: IEEE 754 / OCP MX formats for element widths; NF4 per Dettmers et al. 2023 (QLoRA), 4-bit values with
one fp32 absmax per 64-value block and double quantisation (an fp8 absmax per block + fp32 per 256 blocks),
about 4.127 bits per parameter. GPTQ/AWQ-style int4 stores an fp16 scale (and zero) per 128-value group,
about 4.25 bits per parameter.
"""

from __future__ import annotations

from typing import Literal, get_args

from gpufleet.errors import InputError

Precision = Literal["fp32", "tf32", "fp16", "bf16", "fp8", "fp4", "int8", "int4", "nf4"]
PRECISIONS: tuple[str, ...] = get_args(Precision)

#: storage bytes per element, including block-quantisation scales [bytes]
BYTES_PER_ELEMENT: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,  # stored as fp32
    "fp16": 2.0,
    "bf16": 2.0,
    "fp8": 1.0 + 4.0 / 128.0 / 4.0,  # e4m3 + a per-128-channel fp32 scale (TRT-LLM/vLLM per-channel) ~1.008
    "int8": 1.0 + 2.0 / 128.0 / 2.0,  # int8 + fp16 per-channel scale, amortised ~1.008
    "fp4": 0.5 + 1.0 / 16.0,  # NVFP4: e2m1 + one fp8 scale per 16 values = 4.5 bits
    "int4": 0.5 + 4.0 / 128.0,  # int4 + fp16 scale and zero per 128-value group = 4.25 bits
    "nf4": 0.5 + (1.0 + 4.0 / 256.0) / 64.0,  # QLoRA double-quantised NF4 ~4.127 bits
}

#: which dense-peak column of the spec table a precision computes at (weight-only formats compute in 16 bit)
COMPUTE_COLUMN: dict[str, str] = {
    "fp32": "fp32",
    "tf32": "tf32",
    "fp16": "fp16",
    "bf16": "bf16",
    "fp8": "fp8",
    "fp4": "fp4",
    "int8": "int8",
    "int4": "fp16",  # weight-only int4 (AWQ/GPTQ kernels) dequantise to fp16 for the matmul
    "nf4": "bf16",  # bitsandbytes NF4 dequantises to the compute dtype (bf16)
}


#: formats whose checkpoints quantise the linear layers only: embeddings, lm_head and norms stay 16-bit
#: (AWQ/GPTQ, vLLM/TRT-LLM fp8, bitsandbytes NF4 checkpoints)
QUANTISED_FORMATS: frozenset[str] = frozenset({"fp8", "int8", "int4", "fp4", "nf4"})
#: bytes per element of the tensors a quantised checkpoint keeps in 16 bit [bytes]
UNQUANTISED_BYTES_PER_ELEMENT = 2.0


def check_precision(value: str) -> str:
    """Return ``value`` lower-cased if it is a known precision, else raise :class:`InputError`."""
    v = value.lower().strip()
    if v not in PRECISIONS:
        raise InputError(
            f"Unknown precision {value!r}. Allowed: {', '.join(PRECISIONS)}. "
            "Pass one of these with --precision (for example --precision bf16)."
        )
    return v


def bytes_per_element(precision: str) -> float:
    """Storage bytes per element of ``precision`` [bytes]."""
    return BYTES_PER_ELEMENT[check_precision(precision)]
