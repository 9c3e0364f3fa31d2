"""Hardware rates and efficiencies shared by the inference and training estimators (docs/performance.md).

``w(h) = h / (h + h0)``: narrow models run their GEMMs less efficiently. ``eta`` is shared per GPU generation
(fitted for Ampere and Hopper, derived for the others) and precision (fp8 keeps ``fp8_eff`` of the 16-bit
efficiency at twice the peak).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.catalog.specs import AcceleratorSpec, get_spec
from gpufleet.errors import UnknownNameError, UnsupportedError
from gpufleet.estimate.comms import Link, group_link, intra_node_link
from gpufleet.estimate.profile import CalibrationProfile, load_profile
from gpufleet.estimate.support import precision_support
from gpufleet.models.arch import ModelArch
from gpufleet.models.registry import resolve_model
from gpufleet.precision import COMPUTE_COLUMN, bytes_per_element, check_precision
from gpufleet.units import GB, TERA
from gpufleet.validation import check_count, check_number

#: architecture -> (profile parameter of its 16-bit GEMM efficiency, multiplier, calibrated-by-design).
#: Ada shares Ampere's SM design; Blackwell extends Hopper's; Turing/Volta tensor cores are a generation older
#: (-10 %); AMD CDNA reaches a lower share of its larger peak with today's ROCm kernels (-30 %, SemiAnalysis
#: MI300X vs H100 training benchmark, Dec 2024); Gaudi/TPU/Trainium through their compilers (-20 %).
ARCH_EFFICIENCY: dict[str, tuple[str, float]] = {
    "Ampere": ("eta_ampere", 1.0),
    "Hopper": ("eta_hopper", 1.0),
    "Ada Lovelace": ("eta_ampere", 1.0),
    "Blackwell": ("eta_hopper", 1.0),
    "Blackwell Ultra": ("eta_hopper", 1.0),
    "Turing": ("eta_ampere", 0.9),
    "Volta": ("eta_ampere", 0.9),
    "CDNA 2": ("eta_hopper", 0.7),
    "CDNA 3": ("eta_hopper", 0.7),
    "CDNA 4": ("eta_hopper", 0.7),
}
ARCH_EFFICIENCY_DEFAULT = ("eta_ampere", 0.8)
#: bytes per activation element sent in TP all-reduces (bf16/fp16 activations, also under fp8 GEMMs)
ACT_BYTES = 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Rates:
    """Hardware rates of one GPU for one precision after fallback, with efficiencies from the profile."""

    peak_flops: float  # dense peak at the compute precision [FLOP/s]
    peak16_flops: float  # dense 16-bit peak, used by attention kernels [FLOP/s]
    stated_peak_flops: float  # dense peak of the stated precision, for MFU [FLOP/s]
    eta: float  # GEMM efficiency at the compute precision (generation x precision)
    eta16: float  # GEMM efficiency at 16 bit
    weight_bytes: float  # bytes per weight element read [bytes]
    mem_bw_bytes_per_s: float  # peak HBM bandwidth [bytes/s]
    calibrated: bool  # this architecture/precision class had calibration cases
    notes: tuple[str, ...]


def _arch_eta(spec: AcceleratorSpec, profile: CalibrationProfile) -> float:
    name, mult = ARCH_EFFICIENCY.get(spec.architecture, ARCH_EFFICIENCY_DEFAULT)
    for prefix, key, m in (
        ("Gaudi", "eta_hopper", 0.8),
        ("TPU", "eta_hopper", 0.8),
        ("Neuron", "eta_hopper", 0.8),
    ):
        if spec.architecture.startswith(prefix):
            name, mult = key, m
    return profile.param(name) * mult


def precision_class(precision: str) -> str:
    """Calibration class of a compute precision: ``16bit``, ``fp8`` (also int8), ``fp4``, ``fp32``."""
    col = COMPUTE_COLUMN[precision]
    return {"fp16": "16bit", "bf16": "16bit", "int8": "fp8", "tf32": "fp32"}.get(col, col)


def resolve_rates(
    spec: AcceleratorSpec, precision: str, profile: CalibrationProfile, *, allow_fallback: bool
) -> Rates:
    """Peaks and efficiencies for ``precision`` on ``spec``; explicit fallbacks where hardware lacks it."""
    prec = check_precision(precision)
    sup = precision_support(spec, prec, allow_fallback=allow_fallback)
    p16 = spec.fp32_tflops if sup.no16 else sup.peak16_tflops
    if p16 is None:
        raise UnsupportedError(
            f"{spec.id} publishes no compute peak at all, so its speed cannot be estimated. Choose "
            "another GPU (see `gpufleet catalog gpus`)."
        )
    compute_prec = sup.compute_precision
    if compute_prec == prec:
        peak = spec.dense_peak_tflops(prec) or p16
    elif compute_prec == "fp32" and prec == "tf32":
        peak = spec.fp32_tflops or p16
    else:
        peak = p16
    notes = list(sup.notes)
    eta16 = _arch_eta(spec, profile)
    cls = precision_class(compute_prec)
    eta = eta16 * {"fp8": profile.param("fp8_eff"), "fp4": profile.param("fp8_eff") ** 2}.get(cls, 1.0)
    stated = spec.dense_peak_tflops(prec) or peak
    key = f"{spec.architecture}/{cls}"
    return Rates(
        peak_flops=peak * TERA,
        peak16_flops=p16 * TERA,
        stated_peak_flops=stated * TERA,
        eta=eta,
        eta16=eta16,
        weight_bytes=bytes_per_element(prec),
        mem_bw_bytes_per_s=spec.mem_bw_gb_per_s * GB,
        calibrated=key in profile.calibrated,
        notes=tuple(notes),
    )


def width_factor(model: ModelArch, profile: CalibrationProfile) -> float:
    """GEMM efficiency factor of the model width, ``h / (h + h0)``."""
    return model.hidden_size / (model.hidden_size + profile.param("width_h0"))


def software_key(software: str | None) -> str:
    """Normalised software name (``unknown`` when None/blank); an unknown name is an UnknownNameError."""
    from gpufleet.estimate.cases import SOFTWARES  # the schema's list of stacks

    key = (software or "").strip().lower() or "unknown"
    if key != "unknown" and key not in SOFTWARES:
        raise UnknownNameError(
            "software stack",
            str(software),
            SOFTWARES,
            hint="Pass --engine/--software with one of these (or leave it out: an unknown stack, wider "
            "interval).",
        )
    return key


def resolve_inputs(
    model: ModelArch | str, gpu: AcceleratorSpec | str, profile: CalibrationProfile | None
) -> tuple[ModelArch, AcceleratorSpec, CalibrationProfile]:
    """Resolve names to objects; ``profile`` None = the shipped profile."""
    arch = model if isinstance(model, ModelArch) else resolve_model(model)
    spec = gpu if isinstance(gpu, AcceleratorSpec) else get_spec(gpu)
    return arch, spec, profile if profile is not None else load_profile()


def positive_int(name: str, value: int | None, *, allow_none: bool = False) -> None:
    """Raise :class:`InputError` unless ``value`` is a whole number >= 1."""
    check_count(name, value, allow_none=allow_none)  # whole, >= 1, <= the stated maximum for ``name``


def positive_float(name: str, value: float | None) -> float:
    """Raise :class:`InputError` unless ``value`` is a finite number > 0."""
    x = check_number(name, value)  # finite, > 0, <= the stated maximum for ``name``
    assert x is not None
    return x


def tp_link(spec: AcceleratorSpec, tp: int, gpus_per_node: int, profile: CalibrationProfile) -> Link:
    """Link used by a TP group (innermost ranks): NVLink/PCIe within a node, else the network."""
    link_eff = profile.param("link_eff")
    if tp <= gpus_per_node:
        return intra_node_link(spec, link_eff)
    return group_link(spec, group=tp, stride=1, gpus_per_node=gpus_per_node, link_eff=link_eff)


def _widen(
    rates: Rates, spec: AcceleratorSpec, stack_name: str | None, prof: CalibrationProfile, model: ModelArch
) -> int:
    """How many times to widen an interval: uncalibrated generation/precision, uncertain spec, unfitted stack,
    mixture-of-experts model (no MoE calibration case)."""
    n = 0 if rates.calibrated else 1
    n += 1 if model.is_moe else 0
    n += 1 if spec.uncertain or any("uncertain" in x for x in rates.notes) else 0
    n += 1 if stack_name is not None and stack_name not in prof.fitted else 0
    return n


__all__ = [
    "ACT_BYTES",
    "ARCH_EFFICIENCY",
    "ARCH_EFFICIENCY_DEFAULT",
    "Rates",
    "positive_float",
    "positive_int",
    "precision_class",
    "resolve_inputs",
    "resolve_rates",
    "software_key",
    "tp_link",
    "width_factor",
]
