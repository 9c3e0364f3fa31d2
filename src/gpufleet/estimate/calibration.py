"""Calibration: the profile of fitted parameters, its file format, the fit, and per-case predictions.

The performance model has a few shared parameters (kernel efficiency per GPU generation, the fp8 discount, a
width constant, bandwidth efficiency, a per-step overhead, software-stack multipliers). Each starts at a named
literature prior (:data:`PRIORS`, with its source); :func:`fit_profile` moves the ``fit=True`` ones with
``scipy.optimize.least_squares`` on ``ln(measured / predicted)`` plus a Gaussian prior penalty in log space
(``(ln p - ln prior) / log_sd``), so a parameter with little data stays near its prior. Stack multipliers are
fitted only where at least :data:`MIN_CASES_PER_STACK` cases support them. Intervals come from the
leave-one-out residual quantiles per metric family, with a floor, widened for uncertain specs and for GPU
generations, precisions and stacks without cases.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from gpufleet.errors import ConfigFileError, DataError, GpufleetError, InputError, UnsupportedError
from gpufleet.estimate.types import TRAINING_TASKS, Interval
from gpufleet.fileio import atomic_write_text
from gpufleet.models.registry import resolve_model
from gpufleet.units import MS_PER_S, SECONDS_PER_MINUTE

if TYPE_CHECKING:
    from gpufleet.estimate.cases import CalibrationCase


class CaseNotSupportedError(GpufleetError):
    """A calibration case the estimator cannot map (metric, task or inputs it cannot estimate)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Prior:
    """A named model parameter: literature value, log spread, whether the fit moves it, its source."""

    value: float
    log_sd: float
    fit: bool
    source: str


# fmt: off
_PRIOR_TABLE: tuple[tuple[str, float, float, bool, str], ...] = (
    # --- kernel efficiency: achieved fraction of the DENSE 16-bit peak by large transformer GEMMs
    ("eta_ampere", 0.7, 0.3, True,
     "A100 cuBLAS bf16 GEMMs reach ~230-250 of 312 TFLOP/s at transformer sizes (NVIDIA 'Matrix "
     "multiplication background' guide; Megatron-LM reports 52% MFU end to end, Narayanan 2021)"),
    ("eta_hopper", 0.65, 0.3, True,
     "H100 SXM bf16 GEMMs reach ~600-700 of 989 TFLOP/s (cuBLAS/CUTLASS benchmarks); power/clock "
     "throttling lowers sustained rates"),
    ("fp8_eff", 0.7, 0.3, True,
     "fraction of the 16-bit efficiency kept at fp8 (2x peak): Transformer Engine fp8 training speeds end-"
     "to-end GPT runs 1.3-1.5x over bf16, not 2x (NVIDIA NeMo performance tables)"),
    ("width_h0", 1024.0, 0.7, True,
     "GEMM efficiency falls for narrow layers as h/(h+h0): tiles underfill SMs and wave quantisation "
     "(NVIDIA 'Matrix multiplication background'); h0 ~1k from the GEMM-size sweeps there"),
    ("train_eff", 0.8, 0.3, True,
     "share of training step time in GEMMs at GEMM speed: norms, softmax, activations, optimizer step and "
     "launches take ~15-25% (Korthikanti 2022 Table 4 breakdown)"),
    ("eta_bw", 0.8, 0.2, True,
     "achieved HBM bandwidth of decode kernels: 75-90% of peak (STREAM-like copy on A100/H100 reaches "
     "~90%; TRT-LLM/vLLM GEMV kernels ~80%)"),
    ("step_overhead_s", 0.001, 0.7, True,
     "per decode step host overhead of an optimised engine (scheduling, sampling, launch): ~0.5-2 ms (TRT-"
     "LLM in-flight batching, vLLM v0.6 multi-step blog)"),
    # --- communication and pipelining
    ("link_eff", 0.8, 0.2, False,
     "NCCL bus bandwidth / link rate: nccl-tests all-reduce ~230/300 GB/s (DGX A100), ~360/450 (DGX H100)"),
    ("tp_overlap", 0.1, 0.5, True,
     "share of tensor-parallel communication hidden behind GEMMs in training: Megatron-LM (2022) runs the "
     "TP all-reduces/all-gathers synchronously (Korthikanti 2022 sec 4.2.2), a little overlaps through "
     "async launches"),
    ("tp_overlap_nemo", 0.6, 0.5, True,
     "NeMo enables Transformer Engine userbuffers TP-communication overlap (split GEMM + all-gather / "
     "reduce-scatter pipelining) in its GPT and Llama recipes (NeMo performance docs, 'Communication "
     "overlap')"),
    ("ep_overlap", 0.8, 0.3, False,
     "share of the step's compute behind which stacks that overlap it hide the expert-parallel all-to-all: "
     "DeepSeek-V3 DualPipe pairs forward and backward chunks so the all-to-all is hidden at a ~1:1 "
     "computation-to-communication ratio, with 20 of 132 SMs given to communication (DeepSeek-V3 report "
     "sec 3.2.1-3.2.2); Megatron-Core's EP A2A overlap (--overlap-moe-expert-parallel-comm) follows it"),
    ("dp_overlap", 0.8, 0.3, False,
     "share of the last micro-batch's backward that the gradient reduce can hide under (PyTorch DDP "
     "bucketing, Li et al. 2020; Megatron distributed optimizer overlap)"),
    ("pp_interleave", 4.0, 0.5, False,
     "virtual pipeline stages per GPU in Megatron/NeMo interleaved 1F1B, bubble (p-1)/(v m) (Narayanan et "
     "al. 2021 sec 2.2.2); capped at layers per stage"),
    # --- run-level overheads (named, sourced, not fitted to one row)
    ("mlperf_eval_overhead", 1.15, 0.15, False,
     "MLPerf Training time-to-train includes the benchmark's forward-only evaluations at fixed intervals "
     "(llama2_70b_lora: 173 eval samples every 384 train samples ~20%; gpt3: ~10-15%) (MLPerf Training "
     "rules and reference configs)"),
    ("failure_rate_per_gpu_hour", 1.97e-05, 0.5, False,
     "419 unexpected interruptions in 54 days on 16,384 H100 (Llama 3 Herd of Models, sec 3.3.4)"),
    ("failure_cost_h", 0.3, 0.5, False,
     "lost time per interruption (restart + lost work) so that the Llama 3 run keeps its reported >90% "
     "effective training time (sec 3.3.4)"),
    # --- software stacks: multipliers on the reference stack's efficiency (train: Megatron/NeMo = 1;
    #     infer: TensorRT-LLM = 1) and per-step host-overhead multipliers
    ("train_stack_deepspeed", 0.45, 0.4, True,
     "DeepSpeed + HF transformers runs reach ~25-35% MFU vs 50-60% for Megatron/NeMo on the same GPUs "
     "(BLOOM/OPT/HF reports; MLPerf v4.0 llama2_70b_lora DeepSpeed vs NeMo submissions)"),
    ("train_stack_pytorch", 0.6, 0.4, True,
     "plain PyTorch FSDP (torchtitan) reaches ~35-40% bf16 MFU on H100 vs ~50%+ Megatron (torchtitan "
     "paper, Liang et al. 2024)"),
    ("train_stack_transformers", 0.45, 0.4, True,
     "HF Trainer without fused kernels: as DeepSpeed-HF above"),
    ("train_stack_paddle", 0.85, 0.4, True,
     "PaddleNLP with flash attention and fused kernels: close to Megatron (FlagPerf reports)"),
    ("train_stack_unknown", 0.9, 0.4, True,
     "unstated stack: published large runs are tuned close to the Megatron reference (LLaMA, Llama 3 "
     "papers); wider interval"),
    ("infer_stack_vllm", 0.9, 0.3, True,
     "vLLM vs TensorRT-LLM throughput on H100: 0.7-0.95x (vLLM v0.6 and NVIDIA benchmarks, 2024)"),
    ("infer_stack_sglang", 0.9, 0.3, True,
     "SGLang v0.3 vs TRT-LLM: parity to 0.9x (LMSYS blog, 2024)"),
    ("infer_stack_tgi", 0.75, 0.4, True,
     "TGI v1-2: below vLLM in throughput (vLLM and TGI benchmark blogs, 2023-24)"),
    ("infer_stack_transformers", 0.4, 0.5, True,
     "HF generate without paged KV / fused kernels: eager PyTorch, python loop per token"),
    ("infer_stack_llamacpp", 0.6, 0.5, True,
     "llama.cpp CUDA backend: ~50-70% of peak bandwidth at batch 1 (llama.cpp GPU benchmarks)"),
    ("infer_stack_unknown", 0.85, 0.4, True,
     "unstated engine: vLLM-like"),
    ("overhead_mult_vllm", 1.5, 0.5, False,
     "python scheduler; v0.6 multi-step scheduling cut it to ~1-2 ms per step (vLLM v0.6 blog, Sept 2024)"),
    ("overhead_mult_sglang", 1.2, 0.5, False,
     "python scheduler, overlapped"),
    ("overhead_mult_tgi", 3.0, 0.5, False,
     "python router + shards (TGI arch.)"),
    ("overhead_mult_transformers", 20.0, 0.7, False,
     "eager PyTorch: one python forward per token, ~20-30 ms for 7B at batch 1 (HF blog benchmarks)"),
    ("overhead_mult_llamacpp", 1.5, 0.5, False,
     "C++ loop, graph rebuilt per step"),
    ("overhead_mult_unknown", 2.0, 0.5, False,
     "as vLLM"),
)
# fmt: on

PRIORS: Mapping[str, Prior] = MappingProxyType(
    {n: Prior(value=v, log_sd=sd, fit=f, source=src) for n, v, sd, f, src in _PRIOR_TABLE}
)

#: training stacks taken as the reference (multiplier 1): Megatron-LM and NeMo on Megatron-Core
TRAIN_REFERENCE_STACKS = ("nemo", "megatron")
#: inference stack taken as the reference (multiplier 1)
INFER_REFERENCE_STACKS = ("trtllm",)


def prior_params() -> dict[str, float]:
    """Every parameter at its prior value."""
    return {k: p.value for k, p in PRIORS.items()}


def stack_param(kind: str, software: str | None) -> str | None:
    """Name of the stack multiplier for ``kind`` (``train|infer``) and ``software`` (None: reference)."""
    ref = TRAIN_REFERENCE_STACKS if kind == "train" else INFER_REFERENCE_STACKS
    sw = (software or "unknown").lower()
    if sw in ref:
        return None
    name = f"{kind}_stack_{sw}"
    return name if name in PRIORS else f"{kind}_stack_unknown"


# --- the profile --------------------------------------------------------------------------------------------

PROFILE_VERSION = 1
#: weight of each prior's penalty against one case's log residual: 1 makes a prior one ``log_sd`` away cost as
#: much as one case off by ``exp(1)``; lower lets the data speak (chosen by leave-one-out error)
PRIOR_WEIGHT = 0.5
#: fit a stack multiplier only where at least this many cases measured that stack
MIN_CASES_PER_STACK = 2
#: metric -> interval family
METRIC_FAMILY: Mapping[str, str] = MappingProxyType(
    {
        "train_minutes": "training",
        "train_gpu_hours": "training",
        "train_step_s": "training",
        "train_tokens_per_s_per_gpu": "training",
        "mfu": "training",
        "infer_output_tokens_per_s": "throughput",
        "ttft_ms": "latency",
        "tpot_ms": "latency",
        "peak_memory_gib": "memory",
    }
)
FAMILIES: tuple[str, ...] = ("training", "throughput", "latency", "memory")
#: smallest half-width of any interval in log space (-22 % / +28 %). Published single measurements vary by
#: ~10-15 % run to run and between software versions, and the leave-one-out residuals of 19 cases (2-4 per
#: family) understate the error on GPUs, models and stacks outside them, so the floor sits above both.
LOG_INTERVAL_FLOOR = 0.25
#: standard-normal 90th percentile: p10/p90 of a log-normal error are -/+ Z x RMS
Z_10_90 = 1.2816
#: default half-width for a family without residuals (ln 2: the "within 2x" target)
LOG_INTERVAL_DEFAULT = math.log(2.0)
#: widening of the log interval for estimates outside the calibrated data: multiplier and added width
WIDEN_FACTOR = 1.5
WIDEN_ADD = 0.15


@dataclass(frozen=True, slots=True, kw_only=True)
class CalibrationProfile:
    """Fitted parameters, residual quantiles and provenance of one calibration run."""

    params: Mapping[str, float]
    fitted_at: str
    case_count: int
    log_residual_quantiles: Mapping[
        str, tuple[float, float]
    ]  # family -> (q10, q90) of ln(measured/predicted)
    residuals: Mapping[str, float]  # case_id -> in-sample ln(measured / predicted)
    version: int
    source: str
    loo_residuals: Mapping[str, float] = field(default_factory=dict)  # case_id -> leave-one-out ln ratio
    calibrated: tuple[str, ...] = ()  # "<architecture>/<compute class>" keys with cases, e.g. "Hopper/fp8"
    fitted: tuple[str, ...] = ()  # names of the parameters the fit moved

    def param(self, name: str) -> float:
        """Value of parameter ``name`` (its prior when the profile predates it)."""
        if name in self.params:
            return self.params[name]
        return PRIORS[name].value


def prior_profile() -> CalibrationProfile:
    """A profile with every parameter at its prior and default interval widths (nothing fitted)."""
    return CalibrationProfile(
        params=MappingProxyType(prior_params()),
        fitted_at="",
        case_count=0,
        log_residual_quantiles=MappingProxyType(
            {f: (-LOG_INTERVAL_DEFAULT, LOG_INTERVAL_DEFAULT) for f in FAMILIES}
        ),
        residuals=MappingProxyType({}),
        version=PROFILE_VERSION,
        source="priors",
    )


def with_params(profile: CalibrationProfile, params: Mapping[str, float]) -> CalibrationProfile:
    """``profile`` with some parameters replaced (used by the fit)."""
    merged = dict(profile.params)
    merged.update(params)
    return CalibrationProfile(
        params=merged,
        fitted_at=profile.fitted_at,
        case_count=profile.case_count,
        log_residual_quantiles=profile.log_residual_quantiles,
        residuals=profile.residuals,
        version=profile.version,
        source=profile.source,
        loo_residuals=profile.loo_residuals,
        calibrated=profile.calibrated,
        fitted=profile.fitted,
    )


class _ProfileFile(BaseModel):
    """The JSON file format of a profile (validated where a user passes a file)."""

    model_config = ConfigDict(extra="ignore")
    version: int
    fitted_at: str
    case_count: int
    source: str
    params: dict[str, float]
    log_residual_quantiles: dict[str, tuple[float, float]]
    residuals: dict[str, float]
    loo_residuals: dict[str, float] = {}
    calibrated: list[str] = []
    fitted: list[str] = []


def _profile_from_text(text: str, name: str) -> CalibrationProfile:
    try:
        raw = _ProfileFile.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise ConfigFileError(
            f"Calibration profile {name} is not valid: field {where}: {first['msg']}. A profile is the JSON "
            "written by `tools/calibrate.py` (keys version, fitted_at, case_count, source, params, "
            "log_residual_quantiles, residuals). Re-create it with `python tools/calibrate.py --out FILE`."
        ) from exc
    if raw.version != PROFILE_VERSION:
        raise ConfigFileError(
            f"Calibration profile {name} has version {raw.version}; this gpufleet reads version "
            f"{PROFILE_VERSION}. Re-create it with `python tools/calibrate.py --out FILE`."
        )
    bad = [k for k, v in raw.params.items() if not (math.isfinite(v) and v > 0)]
    unknown = [k for k in raw.params if k not in PRIORS]
    if bad or unknown:
        raise ConfigFileError(
            f"Calibration profile {name} has invalid parameters: non-positive {bad}, unknown {unknown}. "
            f"Allowed: positive values for {', '.join(sorted(PRIORS))}. Re-create it with tools/calibrate.py."
        )
    return CalibrationProfile(
        params=MappingProxyType({**prior_params(), **raw.params}),
        fitted_at=raw.fitted_at,
        case_count=raw.case_count,
        log_residual_quantiles=MappingProxyType(dict(raw.log_residual_quantiles)),
        residuals=MappingProxyType(dict(raw.residuals)),
        version=raw.version,
        source=raw.source,
        loo_residuals=MappingProxyType(dict(raw.loo_residuals)),
        calibrated=tuple(raw.calibrated),
        fitted=tuple(raw.fitted),
    )


@cache
def _shipped_profile() -> CalibrationProfile:
    try:
        text = (
            resources.files("gpufleet.estimate").joinpath("data", "profile.json").read_text(encoding="utf-8")
        )
    except (FileNotFoundError, OSError) as exc:
        raise DataError(
            "The shipped calibration profile estimate/data/profile.json is missing. Reinstall gpufleet, or "
            "re-create it with `python tools/calibrate.py`."
        ) from exc
    try:
        return _profile_from_text(text, "estimate/data/profile.json (shipped)")
    except ConfigFileError as exc:
        raise DataError(f"{exc} Reinstall gpufleet to restore the shipped profile.") from exc


def load_profile(path: Path | None = None) -> CalibrationProfile:
    """Load a profile from ``path``, or the shipped one when ``path`` is None (cached)."""
    if path is None:
        return _shipped_profile()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigFileError(
            f"Cannot read calibration profile {path}: {exc.strerror}. Pass an existing file written by "
            "`tools/calibrate.py`, or leave the option out to use the shipped profile."
        ) from exc
    return _profile_from_text(text, str(path))


def profile_to_dict(profile: CalibrationProfile) -> dict[str, Any]:
    """The JSON-ready form of ``profile`` (with each parameter's prior and source, for readers)."""
    return {
        "version": profile.version,
        "fitted_at": profile.fitted_at,
        "case_count": profile.case_count,
        "source": profile.source,
        "params": {k: profile.params[k] for k in sorted(profile.params)},
        "priors": {
            k: {"value": p.value, "log_sd": p.log_sd, "fit": p.fit, "source": p.source}
            for k, p in PRIORS.items()
        },
        "fitted": list(profile.fitted),
        "calibrated": list(profile.calibrated),
        "log_residual_quantiles": {k: list(v) for k, v in profile.log_residual_quantiles.items()},
        "residuals": dict(profile.residuals),
        "loo_residuals": dict(profile.loo_residuals),
    }


def save_profile(profile: CalibrationProfile, path: Path) -> None:
    """Write ``profile`` as JSON to ``path`` atomically (temporary file + rename)."""
    path = Path(path)
    text = json.dumps(profile_to_dict(profile), indent=1, sort_keys=False) + "\n"
    atomic_write_text(path, text)


def make_interval(central: float, family: str, profile: CalibrationProfile, widen: int = 0) -> Interval:
    """``central`` with p10/p90 from the family's residual quantiles, floored, widened ``widen`` times.

    Residuals are ln(measured / predicted), so p10 = central * exp(q10) and p90 = central * exp(q90).
    """
    q10, q90 = profile.log_residual_quantiles.get(family, (-LOG_INTERVAL_DEFAULT, LOG_INTERVAL_DEFAULT))
    lo, hi = min(q10, -LOG_INTERVAL_FLOOR), max(q90, LOG_INTERVAL_FLOOR)
    for _ in range(widen):
        lo, hi = lo * WIDEN_FACTOR - WIDEN_ADD, hi * WIDEN_FACTOR + WIDEN_ADD
    return Interval(central=central, p10=central * math.exp(lo), p90=central * math.exp(hi))


# --- predictions for calibration cases ----------------------------------------------------------------------

#: prompt and output lengths assumed where a case does not publish them [tokens]
DEFAULT_INPUT_TOKENS = 512
DEFAULT_OUTPUT_TOKENS = 256
#: training sequence length assumed where a case does not publish it (capped by the model's context) [tokens]
DEFAULT_TRAIN_SEQ_TOKENS = 4096
#: global batch assumed where a training case does not publish it: ~4M tokens per step, the batch of the
#: Llama 2 and Llama 3 pre-training runs (Touvron et al. 2023, sec. 2.2; Llama 3 Herd, sec. 3.4.1) [tokens]
DEFAULT_TOKENS_PER_STEP = 4 * 2**20
#: stacks whose peak memory is what torch.cuda.max_memory_allocated reports (no context, no engine reserve)
TORCH_ALLOCATED_STACKS = ("pytorch", "transformers")
#: engines that reserve their KV-cache pool at start-up (vLLM gpu_memory_utilization, TRT-LLM
#: kv_cache_free_gpu_mem_fraction): a device-level peak measurement shows the pool
PREALLOCATING_ENGINES = ("vllm", "trtllm")


@dataclass(frozen=True, slots=True, kw_only=True)
class CasePrediction:
    """The estimator's value for one case's metric, in the case's unit, with its p10-p90 interval."""

    predicted: float
    p10: float
    p90: float
    notes: tuple[str, ...]


def note_hints(note: str) -> dict[str, Any]:
    """Standard settings named in a case note: ZeRO stage (``ZeRO-2``, ``FSDP`` = 3) and recompute mode
    (``no recompute``, ``selective recompute``, ``full recompute``); a bare "activation checkpointing" is left
    to the default choice (selective where it fits), since papers use it for both."""
    low = note.lower()
    hints: dict[str, Any] = {}
    for stage in (0, 1, 2, 3):
        if f"zero-{stage}" in low or f"zero stage {stage}" in low:
            hints["zero_stage"] = stage
    if "fsdp" in low:
        hints["zero_stage"] = 3
    if "static batching" in low:
        hints["static_batching"] = True
    if "no recompute" in low or "no activation checkpointing" in low:
        hints["recompute"] = "none"
    elif "selective recompute" in low:
        hints["recompute"] = "selective"
    elif "full recompute" in low or "full activation checkpointing" in low:
        hints["recompute"] = "full"
    return hints


def _need(case: CalibrationCase, name: str, value: float | None) -> float:
    if value is None or value <= 0:
        raise CaseNotSupportedError(
            f"Case {case.case_id} ({case.metric}) needs {name}, which is blank. "
            f"Fill in {name} to estimate it."
        )
    return value


def _interval_of(iv: Interval | None, case: CalibrationCase, factor: float = 1.0) -> CasePrediction:
    if iv is None:
        raise CaseNotSupportedError(
            f"Case {case.case_id}: {case.model} does not fit on {case.gpu_count} x {case.gpu} "
            f"at {case.precision} "
            "in the estimator's memory model, so no speed can be predicted."
        )
    s = iv.scaled(factor)
    return CasePrediction(predicted=s.central, p10=s.p10, p90=s.p90, notes=())


def predict_case(case: CalibrationCase, profile: CalibrationProfile | None = None) -> CasePrediction:
    """Predict ``case.metric`` for the case's model, task, GPUs and precision (see METRIC_FAMILY).

    Raises :class:`CaseNotSupportedError` with the reason when the case lacks what its metric needs. A case
    was measured, so precisions without hardware support take the explicit fallback (stated in ``notes``).
    """
    from gpufleet.estimate import performance as perf  # performance imports this module
    from gpufleet.estimate.memory import estimate_memory

    prof = profile if profile is not None else load_profile()
    if case.metric not in METRIC_FAMILY:
        raise CaseNotSupportedError(
            f"Case {case.case_id}: metric {case.metric!r} is not estimated. "
            f"Allowed: {', '.join(METRIC_FAMILY)}."
        )
    try:
        if case.metric == "peak_memory_gib":
            return _predict_memory(case, prof, estimate_memory)
        if case.metric in ("infer_output_tokens_per_s", "ttft_ms", "tpot_ms"):
            return _predict_inference(case, prof, perf)
        return _predict_training(case, prof, perf)
    except CaseNotSupportedError:
        raise
    except GpufleetError as exc:
        raise CaseNotSupportedError(f"Case {case.case_id} cannot be estimated: {exc}") from exc


def _predict_memory(case: CalibrationCase, prof: CalibrationProfile, estimate_memory: Any) -> CasePrediction:
    engine = {"trtllm": "trtllm", "transformers": "transformers", "pytorch": "pytorch"}.get(
        (case.software or "").lower(), "vllm" if case.task == "inference" else "pytorch"
    )
    seq = round((case.input_len or 0) + (case.output_len or 0)) or (case.seq_len or 1)
    hints = note_hints(case.note)
    tp, pp = case.tp or 1, case.pp or 1
    dp = case.dp or max(1, case.gpu_count // (tp * pp))
    batch = case.batch or 1
    notes: list[str] = []
    if case.task in TRAINING_TASKS and batch > 1:
        # the schema's training batch is global; memory holds one micro-batch per data-parallel rank
        micro = max(1, -(-batch // dp))
        notes.append(f"global batch {batch} over dp={dp}: micro-batch {micro} per GPU")
        batch = micro
    mem = estimate_memory(
        model=case.model, task=case.task, precision=case.precision, gpu=case.gpu, tp=tp, pp=pp, dp=dp,
        batch=batch, seq_len=max(seq, 1), zero_stage=hints.get("zero_stage", 0),
        recompute=hints.get("recompute", "selective"), engine=engine, allow_fallback=True,
    )  # fmt: skip
    torch_view = (case.software or "").lower() in TORCH_ALLOCATED_STACKS
    if torch_view:
        value, what = mem.allocated_gib, "torch allocated"
    elif case.task == "inference" and engine in PREALLOCATING_ENGINES:
        # vLLM and TRT-LLM size their KV pool up front, so the device shows the whole pool, not the need
        value = max(mem.per_gpu_gib, mem.usable_gib + mem.breakdown_gib.get("cuda_context", 0.0))
        what = f"per-GPU (nvidia-smi), {engine} pre-allocated KV pool included"
    else:
        value, what = mem.per_gpu_gib, "per-GPU (nvidia-smi)"
    iv = make_interval(value, "memory", prof)
    return CasePrediction(
        predicted=value, p10=iv.p10, p90=iv.p90, notes=(f"memory compared as {what}", *notes)
    )


def _predict_inference(case: CalibrationCase, prof: CalibrationProfile, perf: Any) -> CasePrediction:
    notes: list[str] = []
    inp = case.input_len or float(DEFAULT_INPUT_TOKENS)
    if case.metric == "infer_output_tokens_per_s":
        out = case.output_len or float(DEFAULT_OUTPUT_TOKENS)
        batch = case.batch
    elif case.metric == "ttft_ms":
        out = case.output_len or 1.0
        batch = case.batch or 1
    else:
        out = case.output_len or float(DEFAULT_OUTPUT_TOKENS)
        batch = case.batch or 1
    missing = [n for n, v in (("prompt", case.input_len), ("output", case.output_len)) if not v]
    if case.metric == "ttft_ms" and "output" in missing:
        missing.remove("output")
    if missing:
        notes.append(
            f"{' and '.join(missing)} length not given: assumed {inp:.0f} prompt and {out:.0f} output tokens"
        )
    est = perf.estimate_inference(
        model=case.model, gpu=case.gpu, precision=case.precision, input_len=max(round(inp), 1),
        output_len=max(round(out), 1), gpu_count=case.gpu_count, batch=batch, tp=case.tp,
        pp=case.pp or 1,
        software=case.software, profile=prof, allow_fallback=True, ignore_memory=True,
        static_batching=note_hints(case.note).get("static_batching"),
    )  # fmt: skip
    iv = {"infer_output_tokens_per_s": est.output_tokens_per_s, "ttft_ms": est.ttft_s, "tpot_ms": est.tpot_s}
    factor = 1.0 if case.metric == "infer_output_tokens_per_s" else MS_PER_S
    pred = _interval_of(iv[case.metric], case, factor)
    return CasePrediction(predicted=pred.predicted, p10=pred.p10, p90=pred.p90, notes=(*est.notes, *notes))


def _stated_layouts(case: CalibrationCase) -> list[tuple[int | None, int | None, int | None, int | None]]:
    """Layouts to try, most faithful first: as stated; expert parallelism folded into data parallelism
    (Megatron counts EP inside DP, other sources list it as its own degree); data parallelism derived from
    the GPU count; everything but the stated degrees dropped. A published case ran, so an inconsistent
    statement must not cost coverage."""
    tp, pp, dp, ep = case.tp, case.pp, case.dp, case.ep
    out: list[tuple[int | None, int | None, int | None, int | None]] = [(tp, pp, dp, ep)]
    if dp is not None and ep is not None:
        out.append((tp, pp, dp * ep, ep))
    if dp is not None:
        out.append((tp, pp, None, ep))
    out.append((None, None, None, ep))
    out.append((None, None, None, None))
    seen: list[tuple[int | None, int | None, int | None, int | None]] = []
    for x in out:
        if x not in seen:
            seen.append(x)
    return seen


def _predict_training(case: CalibrationCase, prof: CalibrationProfile, perf: Any) -> CasePrediction:
    assumed: list[str] = []
    if case.seq_len:
        seq = int(case.seq_len)
    else:
        seq = min(DEFAULT_TRAIN_SEQ_TOKENS, resolve_model(case.model).max_position_embeddings)
        assumed.append(f"sequence length not given: assumed {seq} tokens")
    if case.batch:
        batch = int(case.batch)
    else:
        batch = max(case.gpu_count, -(-DEFAULT_TOKENS_PER_STEP // seq))
        assumed.append(
            f"global batch not given: assumed {batch} sequences "
            f"(~{DEFAULT_TOKENS_PER_STEP / 1e6:.0f}M tokens per step, at least one sequence per GPU)"
        )
    tokens = case.train_tokens
    if case.metric in ("train_minutes", "train_gpu_hours"):
        tokens = _need(case, "train_tokens", tokens)
    hints = note_hints(case.note)
    fallback_note = ""
    layouts = _stated_layouts(case)
    for i, (tp, pp, dp, ep) in enumerate(layouts):
        try:
            est = perf.estimate_training(
                model=case.model, task=case.task, gpu=case.gpu, precision=case.precision,
                gpu_count=case.gpu_count, global_batch=batch, seq_len=seq, train_tokens=tokens, tp=tp, pp=pp,
                dp=dp, ep=ep, zero_stage=hints.get("zero_stage"), recompute=hints.get("recompute"),
                software=case.software, profile=prof, allow_fallback=True, cp=case.cp, ignore_memory=True,
            )  # fmt: skip
            break
        except UnsupportedError:
            raise
        except InputError as exc:
            if i == len(layouts) - 1:
                raise
            fallback_note = f"stated layout not usable ({exc}); layout re-derived from the GPU count"
    notes = [*est.notes, *assumed]
    if fallback_note:
        notes.append(fallback_note)
    if case.metric == "train_minutes":
        ovh = prof.param("mlperf_eval_overhead")
        notes.append(f"time-to-train x {ovh:.2f} for the benchmark's evaluation pauses (MLPerf rules)")
        pred = _interval_of(est.time_to_train_s, case, ovh / SECONDS_PER_MINUTE)
    elif case.metric == "train_gpu_hours":
        pred = _interval_of(est.gpu_hours, case)
    elif case.metric == "train_step_s":
        pred = _interval_of(est.step_time_s, case)
    elif case.metric == "train_tokens_per_s_per_gpu":
        pred = _interval_of(est.tokens_per_s_per_gpu, case)
    else:  # mfu: proportional to tokens/s/GPU
        tok = est.tokens_per_s_per_gpu
        if tok is None or est.mfu is None:
            return _interval_of(None, case)
        pred = _interval_of(tok, case, est.mfu / tok.central)
    return CasePrediction(predicted=pred.predicted, p10=pred.p10, p90=pred.p90, notes=tuple(notes))


# --- the fit ------------------------------------------------------------------------------------------------


def fitted_parameter_names(cases: Sequence[CalibrationCase]) -> list[str]:
    """Parameters the fit moves: every ``fit=True`` prior, stack multipliers only with enough cases."""
    from gpufleet.estimate.performance import software_key

    counts: dict[str, int] = {}
    for c in cases:
        family = METRIC_FAMILY.get(c.metric)
        if family in (None, "memory"):
            continue
        name = stack_param("train" if family == "training" else "infer", software_key(c.software))
        if name:
            counts[name] = counts.get(name, 0) + 1
    out = []
    for name, p in PRIORS.items():
        if not p.fit:
            continue
        if "_stack_" in name and counts.get(name, 0) < MIN_CASES_PER_STACK:
            continue
        out.append(name)
    return out


def _log_ratios(cases: Sequence[CalibrationCase], profile: CalibrationProfile) -> np.ndarray:
    out = np.empty(len(cases))
    for i, c in enumerate(cases):
        out[i] = math.log(c.measured / predict_case(c, profile).predicted)
    return out


def _solve(
    cases: Sequence[CalibrationCase],
    names: Sequence[str],
    base: CalibrationProfile,
    x0: np.ndarray | None = None,
) -> dict[str, float]:
    from scipy.optimize import least_squares

    prior_x = np.array([math.log(PRIORS[n].value) for n in names])
    sd = np.array([PRIORS[n].log_sd for n in names])

    def residuals(x: np.ndarray) -> np.ndarray:
        prof = with_params(base, dict(zip(names, np.exp(x).tolist(), strict=True)))
        return np.concatenate([_log_ratios(cases, prof), PRIOR_WEIGHT * (x - prior_x) / sd])

    # efficiencies stay physical: at most 1 (fractions of peak), overheads within 100x of their priors
    upper = np.array([0.0 if PRIORS[n].value <= 1.0 and n != "step_overhead_s" else x + 4.6
                      for n, x in zip(names, prior_x, strict=True)])  # fmt: skip
    lower = prior_x - 4.6
    start = np.clip(prior_x if x0 is None else x0, lower + 1e-9, upper - 1e-9)
    sol = least_squares(residuals, start, bounds=(lower, upper), x_scale=1.0, diff_step=1e-3, max_nfev=200)
    return dict(zip(names, np.exp(sol.x).tolist(), strict=True))


def _family_quantiles(
    resid: Mapping[str, float], families: Mapping[str, str]
) -> dict[str, tuple[float, float]]:
    out: dict[str, tuple[float, float]] = {}
    for fam in FAMILIES:
        r = np.array([v for k, v in resid.items() if families[k] == fam])
        if r.size == 0:
            out[fam] = (-LOG_INTERVAL_DEFAULT, LOG_INTERVAL_DEFAULT)
        elif r.size < 5:  # too few for empirical deciles: the largest error either way
            m = float(np.max(np.abs(r)))
            out[fam] = (min(-m, -LOG_INTERVAL_FLOOR), max(m, LOG_INTERVAL_FLOOR))
        else:  # empirical deciles, at least the normal deciles of the RMS error (few cases: noisy deciles)
            spread = Z_10_90 * float(np.sqrt(np.mean(r**2)))
            out[fam] = (
                min(float(np.quantile(r, 0.1)), -spread, -LOG_INTERVAL_FLOOR),
                max(float(np.quantile(r, 0.9)), spread, LOG_INTERVAL_FLOOR),
            )
    return out


def fit_profile(
    cases: Sequence[CalibrationCase], *, leave_one_out: bool = True, source: str = ""
) -> CalibrationProfile:
    """Fit the shared parameters to ``cases`` (module doc); residual quantiles from leave-one-out errors."""
    from gpufleet.catalog.specs import get_spec
    from gpufleet.estimate.performance import precision_class

    base = prior_profile()
    usable: list[CalibrationCase] = []
    for c in cases:
        try:
            predict_case(c, base)
        except CaseNotSupportedError:
            continue
        usable.append(c)
    if not usable:
        raise CaseNotSupportedError(
            "None of the calibration cases can be estimated, so nothing can be fitted. Check the case file "
            "(models, GPUs and the fields each metric needs)."
        )
    speed = [c for c in usable if METRIC_FAMILY[c.metric] != "memory"]
    names = fitted_parameter_names(speed)
    params = _solve(speed, names, base) if speed else {}
    fitted = with_params(base, params)
    resid = {c.case_id: float(r) for c, r in zip(usable, _log_ratios(usable, fitted), strict=True)}
    loo = dict(resid)
    if leave_one_out and len(speed) > 1:
        for i, c in enumerate(speed):
            rest = speed[:i] + speed[i + 1 :]
            names_i = fitted_parameter_names(rest)
            p_i = _solve(rest, names_i, base) if names_i else {}
            loo[c.case_id] = float(_log_ratios([c], with_params(base, p_i))[0])
    families = {c.case_id: METRIC_FAMILY[c.metric] for c in usable}
    calibrated = sorted({f"{get_spec(c.gpu).architecture}/{precision_class(c.precision)}" for c in speed})
    return CalibrationProfile(
        params=MappingProxyType(dict(fitted.params)),
        fitted_at=datetime.now(UTC).isoformat(timespec="seconds"),
        case_count=len(usable),
        log_residual_quantiles=MappingProxyType(_family_quantiles(loo, families)),
        residuals=MappingProxyType(resid),
        version=PROFILE_VERSION,
        source=source or f"fit_profile over {len(usable)} cases",
        loo_residuals=MappingProxyType(loo),
        calibrated=tuple(calibrated),
        fitted=tuple(names),
    )


__all__ = [
    "FAMILIES",
    "METRIC_FAMILY",
    "PRIORS",
    "PROFILE_VERSION",
    "CalibrationProfile",
    "CaseNotSupportedError",
    "CasePrediction",
    "Prior",
    "fit_profile",
    "fitted_parameter_names",
    "load_profile",
    "make_interval",
    "note_hints",
    "predict_case",
    "prior_params",
    "prior_profile",
    "profile_to_dict",
    "save_profile",
    "stack_param",
    "with_params",
]
