"""Hardware rates and efficiencies shared by the inference and training estimators (docs/performance.md).

``w(h) = h / (h + h0)``: narrow models run their GEMMs less efficiently. ``eta`` is shared per GPU generation
(fitted for Ampere and Hopper, derived for the others) and precision (fp8 keeps ``fp8_eff`` of the 16-bit
efficiency per doubling of the peak: :func:`low_precision_discount`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cache

from gpufleet.catalog.specs import AcceleratorSpec, get_spec
from gpufleet.errors import InputError, UnknownNameError, UnsupportedError
from gpufleet.estimate.comms import DEFAULT_GPUS_PER_NODE, Link, group_link, intra_node_link
from gpufleet.estimate.profile import CalibrationProfile, load_profile
from gpufleet.estimate.support import precision_support
from gpufleet.estimate.types import SOFTWARE_ALIASES, SOFTWARES
from gpufleet.models.arch import ModelArch
from gpufleet.models.registry import resolve_model
from gpufleet.precision import (
    COMPUTE_COLUMN,
    UNQUANTISED_BYTES_PER_ELEMENT,
    bytes_per_element,
    check_precision,
)
from gpufleet.units import GB, TERA
from gpufleet.validation import check_count, check_number

#: architecture -> (profile parameters whose product is its 16-bit GEMM efficiency, multiplier). Ampere and
#: Hopper have their own share of peak; Ada, Blackwell and CDNA have a share *relative* to their lineage's
#: reference (at most 1, so a higher-peak successor never out-runs its reference by more than the peak
#: ratio in compute-bound work); each is a sourced prior (:mod:`gpufleet.estimate.priors`) moved by the fit
#: where cases measured it. Turing/Volta tensor cores are a generation older than Ampere (-10 %), CDNA 2
#: borrows CDNA 3 (-10 %). GeForce parts add ``eta_geforce_mult`` (their listed peak is the halved
#: fp32-accumulate rate); the product is capped at 1.
ARCH_EFFICIENCY: dict[str, tuple[str, float]] = {
    "Ampere": ("eta_ampere", 1.0),
    "Hopper": ("eta_hopper", 1.0),
    "Ada Lovelace": ("eta_ampere*eta_ada_rel", 1.0),
    "Blackwell": ("eta_hopper*eta_blackwell_rel", 1.0),
    "Blackwell Ultra": ("eta_hopper*eta_blackwell_rel", 1.0),
    "Turing": ("eta_ampere", 0.9),
    "Volta": ("eta_ampere", 0.9),
    "CDNA 2": ("eta_hopper*eta_cdna_rel", 0.9),
    "CDNA 3": ("eta_hopper*eta_cdna_rel", 1.0),
    "CDNA 4": ("eta_hopper*eta_cdna4_rel", 1.0),
}
#: architecture-name prefixes of non-GPU accelerators -> (parameter, multiplier)
ARCH_PREFIX_EFFICIENCY: tuple[tuple[str, str, float], ...] = (
    ("Gaudi", "eta_gaudi", 1.0),
    ("TPU", "eta_tpu", 1.0),
    ("Neuron", "eta_gaudi", 0.9),
)
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


#: architecture words of NVIDIA GPUs without tensor cores: Kepler, Maxwell and Pascal predate them (Volta
#: introduced them, NVIDIA Tesla V100 whitepaper 2017); Turing TU116/TU117 (GTX 16xx) carry packed-FP16
#: CUDA-core units instead of tensor cores (NVIDIA Turing TU116 / GTX 1660 Ti launch material), so their
#: listed 16-bit peak is the CUDA-core rate, not a halved fp32-accumulate tensor rate
NO_TENSOR_CORE_ARCH_WORDS: tuple[str, ...] = ("Kepler", "Maxwell", "Pascal", "TU116", "TU117")


def geforce_tensor_peak(spec: AcceleratorSpec) -> bool:
    """Whether ``spec`` is a GeForce (consumer NVIDIA) part whose listed 16-bit peak is the tensor cores'
    fp32-accumulate rate, half their fp16-accumulate rate (Ampere GA102 and Ada AD102 whitepapers): true for
    consumer NVIDIA GPUs with tensor cores, false for those without (:data:`NO_TENSOR_CORE_ARCH_WORDS`),
    whose packed-FP16 CUDA cores have no such halving and no fp16-accumulate speed-up."""
    if spec.vendor != "NVIDIA" or "consumer" not in spec.form_factor.lower():
        return False
    return not any(w in spec.architecture for w in NO_TENSOR_CORE_ARCH_WORDS)


def _arch_eta(spec: AcceleratorSpec, profile: CalibrationProfile) -> float:
    names, mult = arch_efficiency_param(spec)
    eta = mult
    for name in names.split("*"):
        eta *= profile.param(name)
    if geforce_tensor_peak(spec):
        eta *= profile.param("eta_geforce_mult")
    return min(eta, 1.0)


def arch_efficiency_param(spec: AcceleratorSpec) -> tuple[str, float]:
    """(profile parameter names joined by ``*``, multiplier) of ``spec``'s 16-bit GEMM efficiency."""
    for prefix, key, m in ARCH_PREFIX_EFFICIENCY:
        if spec.architecture.startswith(prefix):
            return key, m
    return ARCH_EFFICIENCY.get(spec.architecture, ARCH_EFFICIENCY_DEFAULT)


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
    eta = eta16 * low_precision_discount(peak / p16, profile) if cls in ("fp8", "fp4") else eta16
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


def low_precision_discount(peak_ratio: float, profile: CalibrationProfile) -> float:
    """Share of the 16-bit GEMM efficiency kept by an 8/4-bit matmul running at ``peak_ratio`` times the
    16-bit peak: ``fp8_eff`` per doubling of the peak (fp8 at 2x: ``fp8_eff``; fp4 at 4x: ``fp8_eff^2``).
    Feeding a faster matrix pipe (scaling, quantising activations, the same memory system) is what costs the
    efficiency, so where the low-precision peak equals the 16-bit one (Gaudi 3 fp8 = bf16 = 1835 TFLOP/s,
    TPU v5p fp8 = bf16) nothing is lost and a low-precision GEMM never runs slower than the 16-bit one."""
    doublings = max(0.0, math.log2(max(peak_ratio, 1.0)))
    return float(profile.param("fp8_eff") ** doublings)


def width_factor(model: ModelArch, profile: CalibrationProfile) -> float:
    """GEMM efficiency factor of the model width, ``h / (h + h0)``."""
    return model.hidden_size / (model.hidden_size + profile.param("width_h0"))


#: widest tensor-parallel degree chosen automatically: Megatron/NeMo and MaxText recipes keep TP within 8
#: ranks even inside larger NVLink/ICI domains (NeMo performance tables; MaxText ``ici_tensor_parallelism``)
MAX_AUTO_TP = 8


#: chips of one TPU pod, the largest ICI domain of each generation: a slice never spans pods, so a job on more
#: chips is a Multislice job whose slices talk over the data-centre network (DCN) (Cloud TPU docs: v2 pod 256
#: chips, v3 1024, v4 4096, v5e 256, v5p 8960, v6e 256; "Cloud TPU Multislice overview")
TPU_POD_CHIPS: tuple[tuple[str, int], ...] = (
    ("TPU v2", 256), ("TPU v3", 1024), ("TPU v4", 4096), ("TPU v5e", 256), ("TPU v5p", 8960),
    ("TPU v6e", 256),
)  # fmt: skip


def tpu_pod_chips(spec: AcceleratorSpec) -> int | None:
    """Chips in one pod (ICI domain) of ``spec``'s TPU generation; None for other accelerators."""
    return next((n for prefix, n in TPU_POD_CHIPS if spec.architecture.startswith(prefix)), None)


def scaleup_domain_gpus(spec: AcceleratorSpec, gpu_count: int) -> int:
    """Accelerators that share the scale-up fabric when the caller names no node size.

    TPU slices connect every chip over ICI (Cloud TPU v5p/v6e docs: a slice is one ICI torus, no host
    network between its chips), so a slice is one domain, at most a pod (:data:`TPU_POD_CHIPS`; beyond, the
    slices of a Multislice job meet over DCN); rack-scale NVLink parts state their domain
    (``NVLink 5 (72-GPU domain)`` for GB200 NVL72); everything else is an 8-GPU baseboard
    (:data:`~gpufleet.estimate.comms.DEFAULT_GPUS_PER_NODE`).
    """
    if spec.architecture.startswith("TPU") and spec.has_scaleup_fabric:
        return max(min(gpu_count, tpu_pod_chips(spec) or gpu_count), 1)
    stated = _stated_domain(spec.scaleup_interconnect)
    if stated is not None and spec.has_scaleup_fabric:
        return max(stated, 1)
    return DEFAULT_GPUS_PER_NODE


@cache
def _stated_domain(interconnect: str) -> int | None:
    """The domain size an interconnect text states (``NVLink 5 (72-GPU domain)`` -> 72), else None; cached
    per text (estimators ask once per call, for a handful of distinct texts)."""
    m = re.search(r"(\d+)-GPU domain", interconnect)
    return int(m.group(1)) if m else None


def software_arg(software: str | None) -> str:
    """:func:`software_key` of a caller's ``software`` argument: None means unstated, but a blank string is
    an :class:`InputError` (``--engine ''`` names no stack; it would silently read as unknown)."""
    if software is not None and (not isinstance(software, str) or not software.strip()):
        raise InputError(
            f"software/engine is {software!r}: give a stack name ({', '.join(SOFTWARES)}) or leave the "
            "option out for an unknown stack (wider interval)."
        )
    return software_key(software)


def software_key(software: str | None) -> str:
    """Normalised software name (``unknown`` when None/blank); an unknown name is an UnknownNameError."""
    key = (software or "").strip().lower() or "unknown"
    key = SOFTWARE_ALIASES.get(key, key)
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
    """Link used by a TP group (innermost ranks): NVLink/PCIe within a node (the group's share of a mesh
    fabric, PCIe P2P or SHM: :func:`~gpufleet.estimate.comms.intra_node_link`), else the network."""
    link_eff = profile.param("link_eff")
    if tp <= gpus_per_node:
        return intra_node_link(spec, link_eff, tp)
    return group_link(spec, group=tp, stride=1, gpus_per_node=gpus_per_node, link_eff=link_eff)


#: mechanism classes an estimate can fall in, each with its own held-out interval
#: (``profile.heldout_quantiles`` keys ``family/class``; :mod:`gpufleet.estimate.intervals`): a
#: mixture-of-experts model, quantised weights (fewer than 16 bits per weight), GPUs over more than one
#: scale-up domain, and a GPU generation or precision class without calibration cases
MECHANISMS: tuple[str, ...] = ("moe", "quantised", "multinode", "new_generation")


class Widening(int):
    """How many reasons an estimate lies outside the calibrated data (the int, as before) and the mechanism
    classes (:data:`MECHANISMS`) among them and beside them, which pick its held-out interval."""

    mechanisms: frozenset[str]

    def __new__(cls, count: int, mechanisms: frozenset[str] = frozenset()) -> Widening:
        obj = super().__new__(cls, count)
        obj.mechanisms = mechanisms
        return obj

    def spanning(self, gpus: int, domain_gpus: int) -> Widening:
        """This widening, with ``multinode`` when ``gpus`` exceed one scale-up domain of ``domain_gpus``."""
        if gpus <= domain_gpus:
            return self
        return Widening(int(self), self.mechanisms | {"multinode"})


def _widen(
    rates: Rates, spec: AcceleratorSpec, stack_name: str | None, prof: CalibrationProfile, model: ModelArch
) -> Widening:
    """How many times to widen an interval: uncalibrated generation/precision, uncertain spec, unfitted stack,
    mixture-of-experts model (no MoE calibration case); with the mechanism classes (:class:`Widening`)."""
    n = 0 if rates.calibrated else 1
    n += 1 if model.is_moe else 0
    n += 1 if spec.uncertain or any("uncertain" in x for x in rates.notes) else 0
    n += 1 if stack_name is not None and stack_name not in prof.fitted else 0
    mech = {"new_generation"} if not rates.calibrated else set()
    mech |= {"moe"} if model.is_moe else set()
    mech |= {"quantised"} if rates.weight_bytes < UNQUANTISED_BYTES_PER_ELEMENT else set()
    return Widening(n, frozenset(mech))


__all__ = [
    "ACT_BYTES",
    "ARCH_EFFICIENCY",
    "ARCH_EFFICIENCY_DEFAULT",
    "ARCH_PREFIX_EFFICIENCY",
    "MAX_AUTO_TP",
    "MECHANISMS",
    "NO_TENSOR_CORE_ARCH_WORDS",
    "TPU_POD_CHIPS",
    "Rates",
    "Widening",
    "arch_efficiency_param",
    "geforce_tensor_peak",
    "low_precision_discount",
    "positive_float",
    "positive_int",
    "precision_class",
    "resolve_inputs",
    "resolve_rates",
    "scaleup_domain_gpus",
    "software_key",
    "tp_link",
    "tpu_pod_chips",
    "width_factor",
]
