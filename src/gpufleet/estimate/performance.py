"""Inference and training time from FLOPs, bytes and links, at calibrated efficiencies (docs/performance.md).

Inference (one replica of ``tp x pp`` GPUs):

* prefill = max(matmul FLOPs / (peak x eta x w(h) x stack), weight read) + attention FLOPs / (16-bit peak x
  eta16 x stack) + TP all-reduces (2 per layer) + per-step overhead;
* decode step at batch ``b``, context ``c`` = max(weight bytes / (BW x eta_bw), GEMM FLOPs / (peak x eta x
  w(h) x stack)) + max(KV bytes / (BW x eta_bw), attention FLOPs / ...) + TP all-reduces + per-step
  overhead; weights read = all (MoE: the expected distinct experts); GEMMs and attention run in turn;
* throughput at concurrency ``b``: in-flight batching = b x out / (out x step(b decode + b x in / out prompt
  tokens per step)); static batching = b x out / (prefill of b prompts + out x TPOT(b, in + out/2)).

Training (per step): compute at the precision's dense peak x eta x w(h) x train_eff x stack factor, exposed
tensor-parallel and expert all-to-all time, pipeline bubble ``(p-1)/(v m)``, and the data-parallel gradient
reduce (or ZeRO-3 gathers) beyond what overlaps the backward.

``w(h) = h / (h + h0)``: narrow models run their GEMMs less efficiently. ``eta`` is shared per GPU generation
(fitted for Ampere and Hopper, derived for the others) and precision (fp8 keeps ``fp8_eff`` of the 16-bit
efficiency at twice the peak).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpufleet.catalog.specs import AcceleratorSpec, get_spec
from gpufleet.errors import InputError, UnsupportedError
from gpufleet.estimate import compute as cx
from gpufleet.estimate.calibration import PRIORS, CalibrationProfile, load_profile, make_interval, stack_param
from gpufleet.estimate.comms import (
    DEFAULT_GPUS_PER_NODE,
    Link,
    all_gather_s,
    all_reduce_s,
    all_to_all_nodes_s,
    group_link,
    intra_node_link,
)
from gpufleet.estimate.memory import MemoryEstimate, estimate_memory, kv_cache_bytes_per_token
from gpufleet.estimate.parallelism import (
    USEFUL_CONCURRENCY,
    TrainingLayout,
    choose_inference_layout,
    default_ep,
    training_layouts,
)
from gpufleet.estimate.support import precision_support
from gpufleet.estimate.types import TRAINING_TASKS, Interval
from gpufleet.models import count_params, lora_params
from gpufleet.models.arch import ModelArch
from gpufleet.models.params import ffn_params
from gpufleet.models.registry import resolve_model
from gpufleet.precision import COMPUTE_COLUMN, bytes_per_element, check_precision
from gpufleet.units import GB, SECONDS_PER_HOUR, TERA

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
#: concurrent sequences an engine schedules at most, by default: vLLM ``max_num_seqs`` 256 (EngineArgs);
#: SGLang/TGI are bounded by KV tokens (taken as 512); TRT-LLM ``max_batch_size`` 2048 (trtllm-build default
#: since v0.11); HF transformers: a static batch chosen by the user (32 assumed); llama.cpp server 4 slots.
ENGINE_MAX_BATCH: dict[str, int] = {
    "vllm": 256, "sglang": 512, "tgi": 512, "trtllm": 2048, "transformers": 32, "llamacpp": 4, "unknown": 256,
}  # fmt: skip
#: stacks without in-flight (continuous) batching: HF transformers ``generate`` runs static batches
STATIC_BATCHING_STACKS = frozenset({"transformers"})
#: memory-module engine used for each software stack's memory accounting
MEMORY_ENGINE: dict[str, str] = {"trtllm": "trtllm", "transformers": "transformers", "llamacpp": "pytorch"}
#: bytes per activation element sent in TP all-reduces (bf16/fp16 activations, also under fp8 GEMMs)
ACT_BYTES = 2.0
#: bytes per gradient element in the data-parallel reduce (Megatron default: fp32 main grads)
GRAD_BYTES = 4.0
#: bytes per parameter all-gathered after the optimizer step (bf16 weights; fp8 training keeps bf16 ones)
PARAM_BYTES = 2.0
#: quantised checkpoints keep the LM head in 16 bit (AWQ/GPTQ, vLLM/TRT-LLM fp8): bytes per element
HEAD_BYTES_QUANTISED = 2.0
_QUANTISED = frozenset({"fp8", "int8", "int4", "fp4", "nf4"})


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
    """Normalised software name (``unknown`` when None/blank)."""
    return (software or "").strip().lower() or "unknown"


def resolve_inputs(
    model: ModelArch | str, gpu: AcceleratorSpec | str, profile: CalibrationProfile | None
) -> tuple[ModelArch, AcceleratorSpec, CalibrationProfile]:
    """Resolve names to objects; ``profile`` None = the shipped profile."""
    arch = model if isinstance(model, ModelArch) else resolve_model(model)
    spec = gpu if isinstance(gpu, AcceleratorSpec) else get_spec(gpu)
    return arch, spec, profile if profile is not None else load_profile()


def positive_int(name: str, value: int | None, *, allow_none: bool = False) -> None:
    """Raise :class:`InputError` unless ``value`` is a whole number >= 1."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{name} must be a whole number >= 1, got {value!r}. Pass a positive integer.")


def positive_float(name: str, value: float | None) -> float:
    """Raise :class:`InputError` unless ``value`` is a finite number > 0."""
    if value is None or isinstance(value, bool) or not math.isfinite(float(value)) or float(value) <= 0:
        raise InputError(f"{name} must be a positive number, got {value!r}. Pass a value above zero.")
    return float(value)


def tp_link(spec: AcceleratorSpec, tp: int, gpus_per_node: int, profile: CalibrationProfile) -> Link:
    """Link used by a TP group (innermost ranks): NVLink/PCIe within a node, else the network."""
    link_eff = profile.param("link_eff")
    if tp <= gpus_per_node:
        return intra_node_link(spec, link_eff)
    return group_link(spec, group=tp, stride=1, gpus_per_node=gpus_per_node, link_eff=link_eff)


# --- inference ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class InferenceEstimate:
    """Inference speed of ``replicas`` replicas of ``tp x pp`` GPUs; speed fields None when not fitting."""

    fits: bool
    memory: MemoryEstimate
    tp: int
    pp: int
    replicas: int
    batch_per_replica: int  # concurrent sequences per replica [sequences]
    ttft_s: Interval | None  # time to first token of one request at this batch [s]
    tpot_s: Interval | None  # time per output token at this batch [s]
    output_tokens_per_s: Interval | None  # whole system, all replicas [tokens/s]
    requests_per_s: Interval | None  # whole system [requests/s]
    max_concurrency_per_replica: int  # KV-capacity bound at input+output context [sequences]
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Infer:
    """Everything a decode/prefill time needs for one replica, resolved once per call."""

    model: ModelArch
    rates: Rates
    tp: int
    pp: int
    link: Link
    width: float
    stack: float  # software multiplier on efficiencies
    overhead_s: float  # per forward step [s]
    eta_bw: float
    kv_bytes_per_token: float  # all layers [bytes/token]
    head_bytes: float  # bytes per LM-head weight


def _weight_bytes_read(c: _Infer, tokens: float) -> float:
    """Weight bytes one forward of ``tokens`` sequences reads on one GPU [bytes]."""
    shape = cx.model_shape(c.model)
    params = cx.decode_weight_params(c.model, tokens)
    body = (params - shape.lm_head_params) * c.rates.weight_bytes
    return (body + shape.lm_head_params * c.head_bytes) / (c.tp * c.pp)


def _tp_comm_s(c: _Infer, tokens: float, layers: float) -> float:
    """Two all-reduces of the hidden state per layer (attention out, MLP out) (Shoeybi et al. 2019) [s]."""
    return 2.0 * layers * all_reduce_s(tokens * c.model.hidden_size * ACT_BYTES, c.tp, c.link)


def prefill_s(c: _Infer, requests: float, input_len: float, *, latency: bool) -> float:
    """Time to prefill ``requests`` prompts of ``input_len`` tokens on one replica [s].

    ``latency``: the prompt passes the ``pp`` stages in turn (TTFT); otherwise stages work in parallel on
    different requests (throughput).
    """
    shape = cx.model_shape(c.model)
    tokens = requests * input_len
    gpus = c.tp * (1 if latency else c.pp)
    mm = tokens * 2.0 * shape.matmul_active_params / gpus
    attn = (
        requests
        * (cx.prefill_flops(c.model, input_len) - input_len * 2.0 * shape.matmul_active_params)
        / gpus
    )
    r = c.rates
    t_mm = mm / (r.peak_flops * r.eta * c.width * c.stack)
    t_attn = attn / (r.peak16_flops * r.eta16 * c.stack)
    t_weights = _weight_bytes_read(c, tokens) * c.pp / gpus * c.tp / (r.mem_bw_bytes_per_s * c.eta_bw)
    layers = c.model.num_layers / (1 if latency else c.pp)
    return max(t_mm, t_weights) + t_attn + _tp_comm_s(c, tokens, layers) + c.overhead_s


def decode_step_s(
    c: _Infer, batch: float, context: float, prefill_tokens: float = 0.0, prefill_len: float = 1.0
) -> float:
    """One decode step at ``batch`` sequences with ``context`` cached tokens [s].

    ``prefill_tokens``: prompt tokens (of prompts of ``prefill_len``) processed in the same step, as in-flight
    batching with chunked prefill does (TRT-LLM, vLLM): they share the step's weight read and GEMMs. Pipeline
    stages take micro-batches of ``batch / pp`` in turn, so a token of a sequence passes all stages.
    """
    r = c.rates
    micro = max(batch / c.pp, 1.0)
    pf = prefill_tokens / c.pp
    rows = micro + pf
    bw = r.mem_bw_bytes_per_s * c.eta_bw
    shape = cx.model_shape(c.model)
    gpus = c.tp * c.pp
    mm = rows * 2.0 * shape.matmul_active_params / gpus
    attn = micro * cx.attention_flops_per_token(c.model, context)
    if pf > 0:
        attn += pf * cx.attention_flops_per_token(c.model, (prefill_len + 1.0) / 2.0)
    kv_bytes = micro * context * c.kv_bytes_per_token / gpus
    # GEMMs (weight-streaming or compute bound) and attention (KV-streaming bound) run one after the other
    t_gemm = max(_weight_bytes_read(c, rows) / bw, mm / (r.peak_flops * r.eta * c.width * c.stack))
    t_attn = max(kv_bytes / bw, attn / gpus / (r.peak16_flops * r.eta16 * c.stack))
    stage = t_gemm + t_attn + _tp_comm_s(c, rows, c.model.num_layers / c.pp)
    return c.pp * stage + c.overhead_s


def default_kv_precision(precision: str, spec: AcceleratorSpec) -> str | None:
    """KV cache precision when none is given: fp8 with fp8/fp4 weights on GPUs with fp8 (TRT-LLM and vLLM
    quantisation recipes store KV in fp8 alongside fp8 weights), else the engines' 16-bit default (None)."""
    if precision in ("fp8", "fp4") and spec.fp8_tflops is not None:
        return "fp8"
    return None


def estimate_inference(
    *,
    model: ModelArch | str,
    gpu: AcceleratorSpec | str,
    precision: str,
    input_len: int,
    output_len: int,
    gpu_count: int = 1,
    batch: int | None = None,
    tp: int | None = None,
    pp: int = 1,
    kv_precision: str | None = None,
    software: str | None = None,
    profile: CalibrationProfile | None = None,
    allow_fallback: bool = False,
    gpus_per_node: int | None = None,
    ignore_memory: bool = False,
    static_batching: bool | None = None,
) -> InferenceEstimate:
    """Estimate TTFT, TPOT and throughput for serving ``model`` on ``gpu_count`` x ``gpu`` (see module doc).

    ``batch`` None = saturated: as many concurrent sequences as the KV cache and the engine allow.
    ``static_batching``: the batch prefills together and then decodes (None: by stack, static for HF
    transformers, in-flight batching otherwise). ``ignore_memory``: estimate speed even where the memory
    model says the configuration does not fit (``fits`` stays False, a note says so); for measured cases,
    which evidently ran.
    """
    arch, spec, prof = resolve_inputs(model, gpu, profile)
    prec = check_precision(precision)
    for name, v in (
        ("input_len", input_len),
        ("output_len", output_len),
        ("gpu_count", gpu_count),
        ("pp", pp),
    ):
        positive_int(name, v)
    positive_int("batch", batch, allow_none=True)
    positive_int("tp", tp, allow_none=True)
    if not arch.is_decoder:
        raise UnsupportedError(
            f"{arch.id} is an encoder-only model: it generates no tokens, so TTFT/TPOT/throughput do not "
            "apply. Estimate its memory with task 'load', or choose a decoder model."
        )
    sw = software_key(software)
    rates = resolve_rates(spec, prec, prof, allow_fallback=allow_fallback)
    kv_prec = kv_precision if kv_precision is not None else default_kv_precision(prec, spec)
    engine = MEMORY_ENGINE.get(sw, "vllm")
    gpn = gpus_per_node or DEFAULT_GPUS_PER_NODE
    context = input_len + output_len
    layout = choose_inference_layout(
        model=arch, spec=spec, precision=prec, gpu_count=gpu_count, context_len=context, batch=batch,
        kv_precision=kv_prec, engine=engine, gpus_per_node=gpn, tp=tp, pp=pp, allow_fallback=allow_fallback,
    )  # fmt: skip
    notes = list(rates.notes)
    if kv_prec != kv_precision:
        notes.append(f"KV cache assumed {kv_prec} (the engine recipe for {prec} weights).")
    replicas = gpu_count // (layout.tp * layout.pp)
    cap = min(layout.max_concurrency, ENGINE_MAX_BATCH.get(sw, ENGINE_MAX_BATCH["unknown"]))
    b = batch if batch is not None else cap
    fits = layout.memory.fits and layout.max_concurrency >= 1 and replicas >= 1
    if batch is not None and batch > layout.max_concurrency:
        fits = False
        notes.append(f"{batch} sequences of {context} tokens exceed the KV cache ({layout.max_concurrency}).")
    if not fits and ignore_memory and replicas >= 1:
        b = batch if batch is not None else max(cap, USEFUL_CONCURRENCY)
        notes.append(
            f"the memory model says this does not fit ({layout.memory.per_gpu_gib:.1f} GiB per GPU, KV room "
            f"for {layout.max_concurrency} sequences); speed estimated anyway at {b} sequences."
        )
    elif not fits:
        return InferenceEstimate(
            fits=False, memory=layout.memory, tp=layout.tp, pp=layout.pp, replicas=replicas,
            batch_per_replica=b, ttft_s=None, tpot_s=None, output_tokens_per_s=None, requests_per_s=None,
            max_concurrency_per_replica=layout.max_concurrency, notes=tuple(notes),
        )  # fmt: skip
    memory = layout.memory
    if batch is None:  # saturated: the breakdown describes the b sequences chosen, not the batch-1 probe
        memory = estimate_memory(
            model=arch, task="inference", precision=prec, gpu=spec, tp=layout.tp, pp=layout.pp, batch=b,
            seq_len=context, kv_precision=kv_prec, engine=engine, allow_fallback=allow_fallback,
        )  # fmt: skip
    stack_name = stack_param("infer", sw)
    c = _Infer(
        model=arch, rates=rates, tp=layout.tp, pp=layout.pp,
        link=tp_link(spec, layout.tp, gpn, prof), width=width_factor(arch, prof),
        stack=prof.param(stack_name) if stack_name else 1.0,
        overhead_s=prof.param("step_overhead_s") * (prof.param(f"overhead_mult_{sw}")
                                                     if f"overhead_mult_{sw}" in PRIORS else 1.0),
        eta_bw=prof.param("eta_bw"),
        kv_bytes_per_token=kv_cache_bytes_per_token(arch, kv_prec),
        head_bytes=HEAD_BYTES_QUANTISED if prec in _QUANTISED else rates.weight_bytes,
    )  # fmt: skip
    tpot = decode_step_s(c, float(b), input_len + output_len / 2.0)
    static = static_batching if static_batching is not None else sw in STATIC_BATCHING_STACKS
    # TTFT at concurrency b (queueing excluded): with static batching the whole batch prefills before the
    # first token; with in-flight batching a new prompt is prefilled alongside the other b-1 sequences'
    # decode step, so it waits for its own prefill plus one shared step. Same rule given or saturated.
    if static:
        ttft = prefill_s(c, float(b), float(input_len), latency=True)
    else:
        ttft = prefill_s(c, 1.0, float(input_len), latency=True)
        if b > 1:
            ttft += decode_step_s(c, float(b - 1), input_len + output_len / 2.0)
    if static:  # the whole batch prefills, then decodes together
        cycle = prefill_s(c, float(b), float(input_len), latency=False) + output_len * tpot
    else:  # in-flight batching: each step also carries its share of the newcomers' prompt tokens
        step = decode_step_s(c, float(b), input_len + output_len / 2.0, b * input_len / output_len, input_len)
        cycle = output_len * step
    tok_s = replicas * b * output_len / cycle
    widen = _widen(rates, spec, stack_name, prof, arch)
    notes.append(
        f"{replicas} replica(s) of tp={layout.tp} pp={layout.pp}, {b} concurrent sequences each "
        f"({'given' if batch else 'saturated: KV cache / engine limit'}); software {sw}."
    )
    return InferenceEstimate(
        fits=fits, memory=memory, tp=layout.tp, pp=layout.pp, replicas=replicas, batch_per_replica=b,
        ttft_s=make_interval(ttft, "latency", prof, widen),
        tpot_s=make_interval(tpot, "latency", prof, widen),
        output_tokens_per_s=make_interval(tok_s, "throughput", prof, widen),
        requests_per_s=make_interval(tok_s / output_len, "throughput", prof, widen),
        max_concurrency_per_replica=layout.max_concurrency, notes=tuple(notes),
    )  # fmt: skip


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


# --- training -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingEstimate:
    """Training speed at a ``tp x pp x dp`` layout; performance fields None when it does not fit."""

    fits: bool
    memory: MemoryEstimate
    tp: int
    pp: int
    dp: int
    step_time_s: Interval | None  # one optimizer step of global_batch x seq_len tokens [s]
    tokens_per_s_per_gpu: Interval | None  # [tokens/s/GPU]
    tokens_per_s: Interval | None  # whole system [tokens/s]
    mfu: float | None  # model FLOPs / (time x GPUs x dense peak of the stated precision) [fraction]
    time_to_train_s: Interval | None  # train_tokens at this rate, with expected failure restarts [s]
    gpu_hours: Interval | None  # time_to_train x GPUs [GPU h]
    notes: tuple[str, ...]
    zero_stage: int = 1
    recompute: str = "selective"


#: stacks that run Megatron's interleaved pipeline schedule (others: plain 1F1B, v = 1)
INTERLEAVED_STACKS = frozenset({"nemo", "megatron", "unknown"})
#: stacks that overlap the expert-parallel all-to-all with another micro-batch's compute: Megatron-Core MoE
#: (EP A2A overlap), NeMo recipes on it, and tuned published runs (DeepSeek-V3 DualPipe); others
#: (DeepSpeed-MoE, plain PyTorch) run it in line and hide only what async launches give, like TP traffic
EP_OVERLAP_STACKS = frozenset({"nemo", "megatron", "unknown"})
#: QLoRA dequantises NF4 weights before every matmul (bitsandbytes): ~0.6-0.7x LoRA speed (QLoRA paper,
#: Dettmers et al. 2023, and HF PEFT benchmarks); a named prior applied to qlora compute
QLORA_DEQUANT_EFF = 0.65


@dataclass(frozen=True, slots=True, kw_only=True)
class StepBreakdown:
    """Parts of one training step on one GPU [s]."""

    compute_s: float
    tp_comm_exposed_s: float
    ep_comm_s: float
    bubble_fraction: float
    dp_comm_exposed_s: float

    @property
    def step_s(self) -> float:
        return (self.compute_s + self.tp_comm_exposed_s + self.ep_comm_s) * (
            1.0 + self.bubble_fraction
        ) + self.dp_comm_exposed_s


def training_step(
    *, model: ModelArch, spec: AcceleratorSpec, rates: Rates, task: str, tp: int, pp: int, dp: int, ep: int,
    global_batch: int, seq_len: int, zero_stage: int, recompute: str, software: str, gpus_per_node: int,
    profile: CalibrationProfile, cp: int = 1,
) -> StepBreakdown:  # fmt: skip
    """Time of one optimizer step, split into its parts (module doc)."""
    n = tp * pp * dp * cp
    fl = cx.training_flops_per_token(model, task=task, seq_len=seq_len, recompute=recompute)
    tokens = float(global_batch * seq_len)
    stack_name = stack_param("train", software)
    eff = profile.param("train_eff") * (profile.param(stack_name) if stack_name else 1.0)
    if task == "qlora":
        eff *= QLORA_DEQUANT_EFF
    t_mm = tokens * fl.hw_matmul / n / (rates.peak_flops * rates.eta * width_factor(model, profile) * eff)
    t_attn = tokens * fl.hw_attention / n / (rates.peak16_flops * rates.eta16 * eff)
    compute = t_mm + t_attn
    micro = max(global_batch // dp, 1)  # micro-batches of one sequence per data-parallel replica
    link_eff = profile.param("link_eff")
    tp_l = tp_link(spec, tp, gpus_per_node, profile)
    n_ar = 4 + (2 if recompute == "full" else 0)  # fwd 2 + bwd 2 per layer (Korthikanti 2022 sec. 4.2.2)
    local_seq = seq_len / cp
    per_ar = all_reduce_s(local_seq * model.hidden_size * ACT_BYTES, tp, tp_l)
    t_tp = n_ar * (model.num_layers / pp) * micro * per_ar
    # context parallel (Megatron CP / ring attention): each rank gathers the sequence's K and V forward, and
    # again + reduce-scatters their gradients backward, overlapped with attention like TP traffic
    kv_dim = 2 * model.num_kv_heads * model.head_dim
    cp_l = group_link(spec, group=cp, stride=tp, gpus_per_node=gpus_per_node, link_eff=link_eff)
    t_cp = 3.0 * (model.num_layers / pp) * micro * all_gather_s(seq_len * kv_dim * ACT_BYTES / tp, cp, cp_l)
    t_ep = 0.0
    if model.is_moe and ep > 1:
        # each TP rank routes its 1/tp of the tokens (sequence parallel) to k experts: dispatch + combine,
        # forward + backward; peers in the same node over NVLink, the others over the network, at once
        per = local_seq / tp * model.experts_per_token * model.hidden_size * ACT_BYTES
        per_node = max(1, gpus_per_node // tp)
        a2a = all_to_all_nodes_s(
            per, ep, per_node, intra_node_link(spec, link_eff), group_link(
                spec, group=ep, stride=tp, gpus_per_node=gpus_per_node, link_eff=link_eff
            ),
        )  # fmt: skip
        t_ep = 4.0 * (model.num_moe_layers / pp) * micro * a2a
    tp_ov = "tp_overlap_nemo" if software == "nemo" else "tp_overlap"
    exposed = 1.0 - min(profile.param(tp_ov), 1.0)
    if software in EP_OVERLAP_STACKS:
        # DualPipe / Megatron-Core EP A2A overlap: the all-to-all of one micro-batch runs under another's
        # compute, so only what exceeds ``ep_overlap`` x the compute stays exposed
        ep_exposed = max(0.0, t_ep - min(profile.param("ep_overlap"), 1.0) * compute)
    else:
        ep_exposed = exposed * t_ep
    v = min(profile.param("pp_interleave"), model.num_layers / pp) if software in INTERLEAVED_STACKS else 1.0
    bubble = (pp - 1) / (max(v, 1.0) * micro)
    dp = dp * cp  # the gradient reduce runs over dp x cp ranks (Megatron CP)
    pc = count_params(model)
    # Routed-expert weights are split over ep ranks and their gradients reduce only across the dp / ep
    # expert-data-parallel replicas (Megatron-Core MoE; DeepSeek-V3 report sec. 3.2); the rest over all dp.
    routed = (
        float(model.num_moe_layers * model.num_experts * ffn_params(model, model.moe_intermediate_size))
        if model.is_moe
        else 0.0
    )
    ep_eff = ep if model.is_moe and ep > 1 and dp % ep == 0 else 1
    groups: list[tuple[float, int]]  # (parameters per GPU, ranks that reduce them)
    if task in ("lora", "qlora"):
        groups = [(float(lora_params(model, 16)) / (tp * pp), dp)]
    else:
        groups = [((pc.total - routed) / (tp * pp), dp), (routed / (tp * pp * ep_eff), dp // ep_eff)]
    overlap = profile.param("dp_overlap")

    def _links(ranks: int) -> Link:
        return group_link(spec, group=ranks, stride=tp * pp, gpus_per_node=gpus_per_node, link_eff=link_eff)

    if zero_stage == 3:
        gather = sum(2.0 * all_gather_s(p * rates.weight_bytes, r, _links(r)) for p, r in groups if p > 0)
        t_micro = compute / micro
        reduce = sum(all_gather_s(p * GRAD_BYTES, r, _links(r)) for p, r in groups if p > 0)
        dp_exposed = micro * max(0.0, gather - overlap * t_micro) + reduce
    else:
        # pp = 1: one micro-batch per step when memory allows, so the reduce overlaps the whole backward;
        # with pipelining only the last micro-batch's backward remains to hide it
        t_window = compute * (2.0 / 3.0) / (micro if pp > 1 else 1)
        t_dp = 0.0
        for p, r in groups:
            if p <= 0:
                continue
            if zero_stage == 0:
                t_dp += all_reduce_s(p * GRAD_BYTES, r, _links(r))
            else:  # reduce-scatter fp32 grads + all-gather updated 16-bit params (distributed optimizer)
                t_dp += all_gather_s(p * GRAD_BYTES, r, _links(r)) + all_gather_s(
                    p * PARAM_BYTES, r, _links(r)
                )
        dp_exposed = max(0.0, t_dp - overlap * t_window)
    return StepBreakdown(
        compute_s=compute, tp_comm_exposed_s=exposed * t_tp, ep_comm_s=ep_exposed + exposed * t_cp,
        bubble_fraction=bubble, dp_comm_exposed_s=dp_exposed,
    )  # fmt: skip


def effective_time_fraction(gpu_count: int, profile: CalibrationProfile) -> float:
    """Share of wall time spent training, given failures ~ GPUs (Llama 3 sec. 3.3.4 rate and cost)."""
    lost = profile.param("failure_rate_per_gpu_hour") * gpu_count * profile.param("failure_cost_h")
    return 1.0 / (1.0 + lost)


def estimate_training(
    *,
    model: ModelArch | str,
    task: str,
    gpu: AcceleratorSpec | str,
    precision: str,
    gpu_count: int,
    global_batch: int,
    seq_len: int,
    train_tokens: float | None = None,
    tp: int | None = None,
    pp: int | None = None,
    dp: int | None = None,
    ep: int | None = None,
    gpus_per_node: int | None = None,
    zero_stage: int | None = None,
    recompute: str | None = None,
    software: str | None = None,
    profile: CalibrationProfile | None = None,
    allow_fallback: bool = False,
    cp: int | None = None,
    ignore_memory: bool = False,
) -> TrainingEstimate:
    """Estimate step time, throughput, MFU and time to train (module doc).

    ``cp``: context-parallel degree (each group of ``cp`` GPUs splits every sequence; ring attention exchanges
    K/V). ``ignore_memory``: estimate speed even where the memory model says nothing fits (``fits`` stays
    False, a note says so); for measured cases.
    """
    arch, spec, prof = resolve_inputs(model, gpu, profile)
    prec = check_precision(precision)
    if task not in TRAINING_TASKS:
        raise InputError(
            f"Task {task!r} is not a training task. Allowed: {', '.join(TRAINING_TASKS)}. "
            "Use estimate_inference for serving."
        )
    for name, v in (("gpu_count", gpu_count), ("global_batch", global_batch), ("seq_len", seq_len)):
        positive_int(name, v)
    for name, opt in (
        ("tp", tp),
        ("pp", pp),
        ("dp", dp),
        ("ep", ep),
        ("cp", cp),
        ("gpus_per_node", gpus_per_node),
    ):
        positive_int(name, opt, allow_none=True)
    if train_tokens is not None:
        positive_float("train_tokens", train_tokens)
    if recompute is not None and recompute not in ("none", "selective", "full"):
        raise InputError(f"recompute must be none, selective or full, got {recompute!r}.")
    sw = software_key(software)
    rates = resolve_rates(spec, prec, prof, allow_fallback=allow_fallback)
    gpn = gpus_per_node or DEFAULT_GPUS_PER_NODE
    cp_deg = cp or 1
    if gpu_count % cp_deg or seq_len < cp_deg:
        raise InputError(
            f"Context-parallel degree {cp_deg} must divide the {gpu_count} GPUs and be at most seq_len "
            f"({seq_len}). Use a cp that divides the GPU count, or leave it out."
        )
    layouts = training_layouts(
        model=arch, spec=spec, task=task, precision=prec, gpu_count=gpu_count // cp_deg,
        global_batch=global_batch, seq_len=-(-seq_len // cp_deg), gpus_per_node=gpn, software=sw, tp=tp,
        pp=pp, dp=dp, zero_stage=zero_stage, recompute=recompute, ep=ep, allow_fallback=allow_fallback,
    )  # fmt: skip
    best: tuple[float, TrainingLayout, StepBreakdown] | None = None
    for lay in layouts:
        if not lay.memory.fits and not ignore_memory:
            continue
        ep_deg = ep if ep is not None else (default_ep(arch, lay.dp, gpn) if arch.is_moe else 1)
        br = training_step(
            model=arch, spec=spec, rates=rates, task=task, tp=lay.tp, pp=lay.pp, dp=lay.dp, ep=ep_deg,
            global_batch=global_batch, seq_len=seq_len, zero_stage=lay.zero_stage, recompute=lay.recompute,
            software=sw, gpus_per_node=gpn, profile=prof, cp=cp_deg,
        )  # fmt: skip
        if best is None or br.step_s < best[0]:
            best = (br.step_s, lay, br)
    layout = best[1] if best is not None else layouts[-1]
    recompute = layout.recompute
    notes = list(rates.notes)
    notes.append(
        f"layout tp={layout.tp} pp={layout.pp} dp={layout.dp}, ZeRO-{layout.zero_stage}, "
        f"{recompute} recompute, "
        f"software {sw}."
    )
    if global_batch < layout.dp:
        raise InputError(
            f"global_batch {global_batch} is smaller than the data-parallel degree {layout.dp}: every "
            "replica "
            "needs at least one sequence. Raise the global batch or use fewer GPUs."
        )
    if best is None:
        return TrainingEstimate(
            fits=False, memory=layout.memory, tp=layout.tp, pp=layout.pp, dp=layout.dp, step_time_s=None,
            tokens_per_s_per_gpu=None, tokens_per_s=None, mfu=None, time_to_train_s=None, gpu_hours=None,
            notes=tuple(notes), zero_stage=layout.zero_stage, recompute=recompute,
        )  # fmt: skip
    br = best[2]
    if not layout.memory.fits:
        notes.append(
            f"the memory model says this does not fit ({layout.memory.per_gpu_gib:.1f} GiB per GPU); speed "
            "estimated anyway."
        )
    step = br.step_s
    used = layout.tp * layout.pp * layout.dp * cp_deg
    tok_gpu = global_batch * seq_len / step / used
    fl = cx.training_flops_per_token(arch, task=task, seq_len=seq_len, recompute=recompute)
    mfu = tok_gpu * fl.model_total / rates.stated_peak_flops
    widen = _widen(rates, spec, stack_param("train", sw), prof, arch)
    step_i = make_interval(step, "training", prof, widen)
    tok_i = step_i.inverted(global_batch * seq_len / used)
    ttt = gpus_h = None
    if train_tokens is not None:
        frac = effective_time_fraction(used, prof)
        ttt = tok_i.inverted(train_tokens / used / frac)
        gpus_h = ttt.scaled(used / SECONDS_PER_HOUR)
        notes.append(f"time to train includes {100 * (1 / frac - 1):.1f}% for failures and restarts.")
    return TrainingEstimate(
        fits=layout.memory.fits, memory=layout.memory, tp=layout.tp, pp=layout.pp, dp=layout.dp,
        step_time_s=step_i,
        tokens_per_s_per_gpu=tok_i, tokens_per_s=tok_i.scaled(used), mfu=mfu, time_to_train_s=ttt,
        gpu_hours=gpus_h, notes=tuple(notes), zero_stage=layout.zero_stage, recompute=recompute,
    )  # fmt: skip


__all__ = [
    "ACT_BYTES",
    "ARCH_EFFICIENCY",
    "ENGINE_MAX_BATCH",
    "EP_OVERLAP_STACKS",
    "GRAD_BYTES",
    "INTERLEAVED_STACKS",
    "PARAM_BYTES",
    "QLORA_DEQUANT_EFF",
    "STATIC_BATCHING_STACKS",
    "InferenceEstimate",
    "Rates",
    "StepBreakdown",
    "TrainingEstimate",
    "decode_step_s",
    "default_kv_precision",
    "effective_time_fraction",
    "estimate_inference",
    "estimate_training",
    "precision_class",
    "prefill_s",
    "resolve_inputs",
    "resolve_rates",
    "software_key",
    "training_step",
    "width_factor",
]
