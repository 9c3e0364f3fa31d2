"""Inference speed (TTFT, TPOT, throughput) from FLOPs, bytes and links (docs/performance.md).

Inference (one replica of ``tp x pp`` GPUs):

* prefill = max(matmul FLOPs / (peak x eta x w(h) x stack), weight read) + attention FLOPs / (16-bit peak x
  eta16 x stack) + TP all-reduces (2 per layer) + per-step overhead;
* decode step at batch ``b``, context ``c`` = max(weight bytes / (BW x eta_bw), GEMM FLOPs / (peak x eta x
  w(h) x stack)) + max(KV bytes / (BW x eta_bw), attention FLOPs / ...) + TP all-reduces + per-step
  overhead; weights read = all (MoE: the expected distinct experts); GEMMs and attention run in turn;
* with ``pp`` stages, ``min(pp, b)`` micro-batches circulate, each one engine iteration per token, the LM
  head on the last stage (:func:`pipeline_step_s`); Gaudi stacks pad batch and context to static shapes
  (:mod:`gpufleet.estimate.static_shapes`);
* throughput at concurrency ``b``: in-flight batching = b x out / (out x step(b decode + b x in / out prompt
  tokens per step)); static batching = b x out / (prefill of b prompts + out x TPOT(b, in + out/2)); TGI
  v1-v2 prefill each prompt in a pass of its own (:data:`SEPARATE_PREFILL_STACKS`): b x out / (out x
  TPOT(b) + b x prefill of one prompt).

The engine defaults live in :mod:`gpufleet.estimate.inference_engines` and the step timing in
:mod:`gpufleet.estimate.inference_step`; this module holds the public estimate and the layout search.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpufleet.catalog.specs import AcceleratorSpec
from gpufleet.errors import InputError, UnsupportedError
from gpufleet.estimate import moe_serving as moe
from gpufleet.estimate.comms import (
    inter_node_link,
    intra_node_link,
    network_note,
    pipeline_link,
)
from gpufleet.estimate.inference_engines import (
    ENGINE_MAX_BATCH,
    FP16_ACCUMULATE_STACKS,
    GEFORCE_FP16_ACCUMULATE_SPEEDUP,
    HEAD_BYTES_QUANTISED,
    HOST_BOUND_DECODE_STACKS,
    LAYER_SPLIT_STACKS,
    MEMORY_ENGINE,
    SEPARATE_PREFILL_STACKS,
    STATIC_BATCHING_STACKS,
    _engine_max,
    _fp16_accumulate,
    _software_text,
    default_kv_precision,
)
from gpufleet.estimate.inference_step import _dense_stage_s as _dense_stage_s
from gpufleet.estimate.inference_step import _ep_stage_s as _ep_stage_s
from gpufleet.estimate.inference_step import _gemm_s as _gemm_s
from gpufleet.estimate.inference_step import _Infer as _Infer
from gpufleet.estimate.inference_step import _kv_tp_split as _kv_tp_split
from gpufleet.estimate.inference_step import _routed_s as _routed_s
from gpufleet.estimate.inference_step import (
    _timing,
    decode_step_s,
    prefill_s,
)
from gpufleet.estimate.inference_step import _tp_comm_s as _tp_comm_s
from gpufleet.estimate.inference_step import _weight_bytes_read as _weight_bytes_read
from gpufleet.estimate.kv_cache import kv_cache_bytes_per_token
from gpufleet.estimate.memory import MemoryEstimate
from gpufleet.estimate.parallelism import (
    USEFUL_CONCURRENCY,
    InferenceLayout,
    _memory,
    choose_inference_layout,
    ep_inference_layouts,
)
from gpufleet.estimate.priors import PRIORS, stack_param
from gpufleet.estimate.profile import CalibrationProfile, make_interval
from gpufleet.estimate.rates import (
    Rates,
    Widening,
    _widen,
    geforce_tensor_peak,
    positive_int,
    resolve_inputs,
    resolve_rates,
    scaleup_domain_gpus,
    software_arg,
    tp_link,
    width_factor,
)
from gpufleet.estimate.static_shapes import StaticShapes, serving_shapes
from gpufleet.estimate.types import Interval
from gpufleet.estimate.wq_kernels import wq_kernel
from gpufleet.models.arch import ModelArch
from gpufleet.precision import QUANTISED_FORMATS as _QUANTISED
from gpufleet.precision import UNQUANTISED_BYTES_PER_ELEMENT, check_precision
from gpufleet.validation import check_context, checked_output


@dataclass(frozen=True, slots=True, kw_only=True)
class InferenceEstimate:
    """Inference speed of ``replicas`` replicas of ``tp x pp`` GPUs; speed fields None when not fitting."""

    fits: bool
    memory: MemoryEstimate
    tp: int  # tensor-parallel degree of attention and the dense layers
    pp: int
    replicas: int
    ep: int = 1  # expert-parallel degree of the MoE layers (1 = experts split by TP)
    attention_dp: int = 1  # attention data-parallel groups per replica (ep / tp with EP, else 1)
    gpus_per_replica: int  # GPUs of one replica: max(tp, ep) x pp [GPUs]
    batch_per_replica: int  # concurrent sequences per replica [sequences]
    ttft_s: Interval | None  # time to first token of one request at this batch [s]
    tpot_s: Interval | None  # time per output token at this batch [s]
    output_tokens_per_s: Interval | None  # whole system, all replicas [tokens/s]
    requests_per_s: Interval | None  # whole system [requests/s]
    max_concurrency_per_replica: int  # KV-capacity bound at input+output context [sequences]
    notes: tuple[str, ...]
    # time per output token one request sees while the other batch - 1 keep arriving (closed loop at this
    # concurrency): its decode steps also carry the newcomers' prompts (:func:`_timing`) [s]
    tpot_loaded_s: Interval | None = None
    #: one replica's layout in words ("tp=2 pp=1", or the expert-parallel form) and the serving stack as
    #: the notes state it; :attr:`layout_note` is the note built from them (:func:`layout_note`), which a
    #: caller that places the replicas differently replaces by identity
    layout_text: str = ""
    stack_text: str = ""
    layout_note: str = ""


def layout_note(
    replicas: int, layout_text: str, batch: int, why: str, stack_text: str, where: str = ""
) -> str:
    """The layout note of an inference estimate: "R replica(s) [WHERE] of LAYOUT, B concurrent sequences each
    (WHY); STACK." (``where``: a placement such as "per node")."""
    placed = f"{replicas} replica(s) {where} of" if where else f"{replicas} replica(s) of"
    return f"{placed} {layout_text}, {batch} concurrent sequences each ({why}); {stack_text}."


@dataclass(frozen=True, slots=True, kw_only=True)
class _Setup:
    """The part of an inference estimate that does not depend on the batch, the lengths or the layout (rates,
    links, software factors, notes), kept per (model, GPU, profile, precision, stack, ...) by
    :func:`estimate_inference` so that estimates differing only in batch or lengths skip it."""

    rates: Rates
    kv_prec: str | None
    notes: tuple[str, ...]
    base: _Infer
    shapes: StaticShapes | None
    static: bool
    widen: Widening
    infers: dict[tuple[int, int, int], _Infer]  # (tp, pp, ep) -> ``base`` for that layout (_run_layout)


_SETUPS: dict[tuple[object, ...], tuple[ModelArch, AcceleratorSpec, CalibrationProfile, _Setup]] = {}
_SETUPS_MAX = 4096


def _setup_key(
    arch: ModelArch,
    spec: AcceleratorSpec,
    prof: CalibrationProfile,
    prec: str,
    sw: str,
    kv_precision: object,
    allow_fallback: object,
    gpn: object,
    static_batching: object,
) -> tuple[object, ...] | None:
    """Cache key of :class:`_Setup`: the objects by identity (the cache entry holds them, so an id is not
    reused while it lives), the other arguments by value and type; None when one is not hashable."""
    loose = (kv_precision, allow_fallback, gpn, static_batching)
    key = (id(arch), id(spec), id(prof), prec, sw, loose, tuple(type(x) for x in loose))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _prepare(
    arch: ModelArch,
    spec: AcceleratorSpec,
    prof: CalibrationProfile,
    prec: str,
    sw: str,
    rates: Rates,
    kv_prec: str | None,
    kv_precision: str | None,
    gpn: int,
    static_batching: bool | None,
) -> _Setup:
    """The batch- and layout-independent part of :func:`estimate_inference` (see :class:`_Setup`)."""
    notes = list(rates.notes)
    if kv_prec != kv_precision:
        notes.append(f"KV cache assumed {kv_prec} (the engine recipe for {prec} weights).")
    stack_name = stack_param("infer", sw)
    # weight-only quantisation: weights stored below 16 bit, matmuls in 16 bit (int4/nf4, or a fallback)
    weight_only = (
        rates.weight_bytes < UNQUANTISED_BYTES_PER_ELEMENT and rates.peak_flops <= rates.peak16_flops
    )
    kernel = wq_kernel(sw, spec, prof, prec)
    if weight_only:
        notes.append(
            f"{prec} weights dequantised to 16 bit inside the GEMMs ({kernel.name} kernels): weight reads at "
            f"{kernel.bw_share:.2f} of the 16-bit kernels' bandwidth, compute-bound GEMMs at "
            f"{prof.param('wq_gemm_eff'):.2f} of their speed."
        )
        if kernel.rows_per_pass is not None:
            notes.append(
                f"{kernel.name} kernels re-read the packed weights for every {kernel.rows_per_pass} tokens "
                f"of a step and rebuild 16-bit weights above {kernel.fused_max_rows} (wq_kernels module)."
            )
    nr_rates, nr_weight_only = None, False
    nr_prec = moe.nonrouted_precision(arch, prec)
    if nr_prec != prec:  # a fp4 MoE checkpoint: routed experts fp4, the rest at nr_prec
        nr_rates = resolve_rates(spec, nr_prec, prof, allow_fallback=True)
        nr_weight_only = (
            nr_rates.weight_bytes < UNQUANTISED_BYTES_PER_ELEMENT
            and nr_rates.peak_flops <= nr_rates.peak16_flops
        )
        notes.append(
            f"{prec} MoE checkpoint: routed experts in {prec}, attention, dense layers and shared experts in "
            f"{nr_prec} (as the published fp4 MoE checkpoints)."
        )
    # vLLM's Triton fused_moe pads each expert's rows to its row block (moe_serving.padded_rows_per_expert);
    # fp4 experts and weight-only int4 run other kernels (FlashInfer / Marlin), TRT-LLM autotuned CUTLASS
    padded = arch.is_moe and sw in moe.TRITON_FUSED_MOE_STACKS and prec in ("bf16", "fp16", "fp8", "int8")
    if padded:
        notes.append(
            f"{sw} routed experts in the Triton fused_moe kernel: each expert's rows padded to its "
            f"BLOCK_SIZE_M ({'16-64' if prec == 'fp8' else '16-128'} by the step's tokens), the padded rows "
            "computed (moe_serving module)."
        )
    link_eff = prof.param("link_eff")
    base = _Infer(
        model=arch, rates=rates, tp=1, pp=1, link=tp_link(spec, 1, gpn, prof), width=width_factor(arch, prof),
        stack=prof.param(stack_name) if stack_name else 1.0,
        overhead_s=prof.param("step_overhead_s") * (prof.param(f"overhead_mult_{sw}")
                                                     if f"overhead_mult_{sw}" in PRIORS else 1.0),
        eta_bw=prof.param("eta_bw"),
        kv_bytes_per_token=kv_cache_bytes_per_token(arch, kv_prec),
        head_bytes=HEAD_BYTES_QUANTISED if prec in _QUANTISED else rates.weight_bytes,
        wq_bw=kernel.bw_share if weight_only else 1.0,
        wq_gemm=prof.param("wq_gemm_eff") if weight_only else 1.0,
        wq_kernel=kernel if weight_only and nr_prec == prec else None,
        ep_intra=intra_node_link(spec, link_eff), ep_inter=inter_node_link(spec, link_eff, gpn),
        nr_rates=nr_rates, nr_wq_bw=kernel.bw_share if nr_weight_only else 1.0,
        nr_wq_gemm=prof.param("wq_gemm_eff") if nr_weight_only else 1.0,
        expert_width=moe.expert_width_factor(arch, prof.param("width_h0")),
        pp_overlap=sw not in LAYER_SPLIT_STACKS, expert_block_padding=padded, expert_block_format=prec,
    )  # fmt: skip
    shapes = serving_shapes(spec, sw)
    if static_batching is not None:
        static = static_batching
    else:
        static = sw in STATIC_BATCHING_STACKS or (shapes is not None and shapes.static_batching)
    if shapes is not None:
        notes.append(
            f"{spec.id} serves with static shapes ({shapes.stack}): decode batches padded to multiples of "
            f"{shapes.batch_bucket}, attention over the context padded to {shapes.context_bucket}-token "
            f"buckets{', one static batch' if static else ''}."
        )
    widen = _widen(rates, spec, stack_name, prof, arch)
    return _Setup(
        rates=rates, kv_prec=kv_prec, notes=tuple(notes), base=base,
        shapes=shapes, static=static, widen=widen, infers={},
    )  # fmt: skip


@checked_output("inference estimate")
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
    ep: int | None = None,
    attention_dp: bool | None = None,
    kv_precision: str | None = None,
    software: str | None = None,
    profile: CalibrationProfile | None = None,
    allow_fallback: bool = False,
    gpus_per_node: int | None = None,
    ignore_memory: bool = False,
    static_batching: bool | None = None,
) -> InferenceEstimate:
    """Estimate TTFT, TPOT and throughput for serving ``model`` on ``gpu_count`` x ``gpu`` (see module doc).

    ``batch`` None = saturated: as many concurrent sequences as the KV cache and the engine allow (per
    replica). ``static_batching``: the batch prefills together and then decodes (None: by stack, static for
    HF transformers, in-flight batching otherwise). ``ignore_memory``: estimate speed even where the memory
    model says the configuration does not fit (``fits`` stays False, a note says so); for measured cases,
    which evidently ran.

    Mixture-of-experts models (:mod:`gpufleet.estimate.moe_serving`): ``ep`` > 1 splits the routed experts
    over ``ep`` GPUs per replica (expert parallelism) with attention TP ``tp`` inside it (``ep`` a multiple
    of ``tp``); ``attention_dp=True`` means attention data parallel (``tp`` = 1 within the EP group, TRT-LLM
    ``enable_attention_dp``, SGLang ``--enable-dp-attention``). With neither ``tp`` nor ``ep`` given, a MoE
    model's expert-parallel layouts within the scale-up domain are timed beside the TP layout and the fastest
    (output tokens/s) is kept, as a tuned deployment would.
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
    positive_int("ep", ep, allow_none=True)
    if not arch.is_decoder:
        raise UnsupportedError(
            f"{arch.id} is an encoder-only model: it generates no tokens, so TTFT/TPOT/throughput do not "
            "apply. Estimate its memory with task 'load', or choose a decoder model."
        )
    check_context(arch.id, arch.max_position_embeddings, input_len, output_len)
    _check_ep(arch, ep, tp, attention_dp, gpu_count, pp)
    sw = software_arg(software)
    gpn = gpus_per_node or scaleup_domain_gpus(spec, gpu_count)
    key = _setup_key(arch, spec, prof, prec, sw, kv_precision, allow_fallback, gpn, static_batching)
    hit = _SETUPS.get(key) if key is not None else None
    st = hit[3] if hit is not None and hit[0] is arch and hit[1] is spec and hit[2] is prof else None
    if st is not None:  # the per-(model, GPU, precision, stack, node) part of an earlier call
        rates, kv_prec = st.rates, st.kv_prec
    else:
        rates = resolve_rates(spec, prec, prof, allow_fallback=allow_fallback)
        if sw in FP16_ACCUMULATE_STACKS and geforce_tensor_peak(spec):
            rates = _fp16_accumulate(rates, spec)
        kv_prec = kv_precision if kv_precision is not None else default_kv_precision(prec, spec, sw)
    engine = MEMORY_ENGINE.get(sw, "vllm")
    context = input_len + output_len
    lay_kw: dict[str, Any] = dict(
        model=arch, spec=spec, precision=prec, gpu_count=gpu_count, context_len=context, batch=batch,
        kv_precision=kv_prec, engine=engine, gpus_per_node=gpn, pp=pp, allow_fallback=allow_fallback,
    )  # fmt: skip
    layouts: list[InferenceLayout] = []
    layer_split = sw in LAYER_SPLIT_STACKS
    if ep is None or ep == 1:
        layouts.append(choose_inference_layout(tp=tp, layer_split=layer_split, **lay_kw))
    auto_ep = ep is None and tp is None and attention_dp is not False and not layer_split
    if arch.is_moe and ((ep is not None and ep > 1) or auto_ep):
        attn_tp = 1 if attention_dp else tp
        layouts += ep_inference_layouts(ep=ep, tp=attn_tp, **lay_kw)
    if st is None:
        st = _prepare(arch, spec, prof, prec, sw, rates, kv_prec, kv_precision, gpn, static_batching)
        if key is not None:
            if len(_SETUPS) >= _SETUPS_MAX:
                _SETUPS.clear()
            _SETUPS[key] = (arch, spec, prof, st)
    notes = list(st.notes)
    base, shapes, static = st.base, st.shapes, st.static
    run_kw: dict[str, Any] = dict(
        gpu_count=gpu_count, gpn=gpn, input_len=input_len, output_len=output_len, engine_max=_engine_max(sw),
        static=static, ignore_memory=ignore_memory, spec=spec, prof=prof, shapes=shapes,
        separate_prefill=sw in SEPARATE_PREFILL_STACKS, infers=st.infers,
    )  # fmt: skip
    runs = [_run_layout(base, lay, batch=batch, **run_kw) for lay in layouts]
    # layouts rank by their saturated throughput, whatever batch is asked, so asking for the concurrency a
    # saturated estimate reported gives the same layout; a layout that fits the batch comes first
    ranks = (
        runs
        if batch is None or len(runs) == 1
        else [_run_layout(base, x, batch=None, **run_kw) for x in layouts]
    )
    best = runs[
        max(
            range(len(runs)),
            key=lambda i: (runs[i].fits, runs[i].tok_s is not None, ranks[i].tok_s or 0.0, -i),
        )
    ]
    if best.tok_s is None or best.ttft is None or best.tpot is None:
        return InferenceEstimate(
            fits=False, memory=best.layout.memory, tp=best.layout.tp, pp=best.layout.pp,
            replicas=best.replicas, ep=best.layout.ep, attention_dp=best.layout.attention_dp,
            gpus_per_replica=best.layout.gpus, batch_per_replica=best.batch, ttft_s=None, tpot_s=None,
            output_tokens_per_s=None, requests_per_s=None,
            max_concurrency_per_replica=best.layout.max_concurrency, notes=(*notes, *best.notes),
        )  # fmt: skip
    lay = best.layout
    memory = lay.memory
    if batch is None:  # saturated: the breakdown describes the b sequences chosen, not the batch-1 probe
        memory = _memory(  # estimate_memory, cached (placements at other GPU counts ask the same)
            model=arch, task="inference", precision=prec, gpu=spec, tp=lay.tp, pp=lay.pp,
            batch=-(-best.batch // lay.attention_dp), seq_len=context, kv_precision=kv_prec, engine=engine,
            allow_fallback=allow_fallback, ep=lay.memory_ep,
        )  # fmt: skip
    widen = st.widen.spanning(best.replicas * lay.gpus, gpn)  # + multinode past one domain
    notes += best.notes
    if sw in HOST_BOUND_DECODE_STACKS:
        notes.append(
            "Eager decode is bound by the host CPU (one Python forward per token, its cost growing with the "
            "layers): the same GPU type measured ~2x apart on two hosts, and TPOT here may be low by up to "
            "2x (H200, transformers 5.17: 0.4-0.8 of measured); compile or serve with an engine for speed."
        )
    layout_text = f"tp={lay.tp} pp={lay.pp}"
    if lay.ep > 1:
        layout_text = (
            f"ep={lay.ep} (routed experts {arch.num_experts // lay.ep} per GPU) with attention tp={lay.tp} x "
            f"dp={lay.attention_dp}, pp={lay.pp}"
        )
    if len(runs) > 1:  # the kept layout is the fastest saturated; say too what each does at the batch asked
        timed = ", ".join(f"{r.layout.label} {r.tok_s or 0:,.0f} tok/s" for r in ranks)
        given = ""
        if ranks is not runs:
            given = f" (at {batch} sequences per replica: " + ", ".join(f"{r.tok_s or 0:,.0f}" for r in runs)
            given += " tok/s)"
        notes.append(f"MoE layouts timed at saturation: {timed}; the fastest kept{given}.")
    stack_text = _software_text(sw, engine)
    why = "given" if batch else "saturated: KV cache / engine limit"
    placed = layout_note(best.replicas, layout_text, best.batch, why, stack_text)
    notes.append(placed)
    if (net := network_note(spec, gpn, lay.gpus)) is not None:  # a replica over nodes: state the fabric
        notes.append(net)
    return InferenceEstimate(
        fits=best.fits, memory=memory, tp=lay.tp, pp=lay.pp, replicas=best.replicas, ep=lay.ep,
        attention_dp=lay.attention_dp, gpus_per_replica=lay.gpus, batch_per_replica=best.batch,
        ttft_s=make_interval(best.ttft, "latency", prof, widen),
        tpot_s=make_interval(best.tpot, "latency", prof, widen),
        tpot_loaded_s=make_interval(best.tpot_loaded or best.tpot, "latency", prof, widen),
        output_tokens_per_s=make_interval(best.tok_s, "throughput", prof, widen),
        requests_per_s=make_interval(best.tok_s / output_len, "throughput", prof, widen),
        max_concurrency_per_replica=lay.max_concurrency, notes=tuple(notes), layout_text=layout_text,
        stack_text=stack_text, layout_note=placed,
    )  # fmt: skip


def _check_ep(
    arch: ModelArch, ep: int | None, tp: int | None, attention_dp: bool | None, gpu_count: int, pp: int
) -> None:
    """Reject expert-parallel requests that cannot be laid out, saying what is allowed."""
    if ep is None or ep == 1:
        if attention_dp:
            raise InputError(
                "attention_dp needs expert parallelism: give ep > 1 (the GPUs the routed experts are split "
                "over), or leave attention_dp unset."
            )
        return
    if not arch.is_moe or arch.num_experts % ep:
        allowed = [d for d in range(2, arch.num_experts + 1) if arch.num_experts % d == 0]
        raise InputError(
            f"ep={ep} does not fit {arch.id}: expert parallelism splits the routed experts, so ep must "
            f"divide them ({arch.num_experts}). Allowed: {allowed or 'none (a dense model)'}; leave ep unset "
            "for TP."
        )
    attn_tp = 1 if attention_dp else tp
    if attn_tp is not None and ep % attn_tp:
        raise InputError(
            f"ep={ep} is not a multiple of tp={attn_tp}: attention runs TP inside the EP group, so the group "
            "of ep GPUs must hold whole TP groups. Give tp dividing ep (tp=1 is attention data parallel)."
        )
    if attention_dp is False and tp is not None and tp != ep:
        raise InputError(
            f"attention_dp=False with ep={ep} means attention TP over the whole EP group: tp must be {ep}, "
            f"not {tp}. Leave tp unset or set attention_dp."
        )
    if ep * pp > gpu_count:
        raise InputError(
            f"ep={ep} x pp={pp} needs more than the {gpu_count} GPUs given. Use ep x pp <= gpu_count."
        )


#: (id(_Infer), batch, input_len, output_len) -> (that _Infer, TPOT, TTFT, cycle) of :func:`_timing`, for the
#: layouts of a :class:`_Setup` (which fixes static batching, shapes and separate prefill); the entry holds
#: the _Infer, so its id is not reused while the entry lives
_TIMINGS: dict[tuple[int, int, int, int], tuple[_Infer, float, float, float, float]] = {}
_TIMINGS_MAX = 100_000


@dataclass(frozen=True, slots=True, kw_only=True)
class _Run:
    """One layout timed: throughput and latencies at its batch (None when it does not fit)."""

    layout: InferenceLayout
    fits: bool
    replicas: int
    batch: int
    tok_s: float | None
    ttft: float | None
    tpot: float | None
    notes: tuple[str, ...]
    tpot_loaded: float | None = None


def _run_layout(
    base: _Infer,
    lay: InferenceLayout,
    *,
    batch: int | None,
    gpu_count: int,
    gpn: int,
    input_len: int,
    output_len: int,
    engine_max: int,
    static: bool,
    ignore_memory: bool,
    spec: AcceleratorSpec,
    prof: CalibrationProfile,
    shapes: StaticShapes | None = None,
    separate_prefill: bool = False,
    infers: dict[tuple[int, int, int], _Infer] | None = None,
) -> _Run:
    """Time ``lay``: TTFT, TPOT and output tokens/s at ``batch`` (None: saturated) sequences per replica.
    ``infers``: ``base`` per (tp, pp, ep) already built for these ``base``, ``gpn``, ``spec`` and ``prof``
    (:class:`_Setup`, which also fixes ``static``, ``shapes`` and ``separate_prefill``); with it the timings
    are kept (:data:`_TIMINGS`)."""
    from dataclasses import replace

    notes: list[str] = []
    context = input_len + output_len
    replicas = gpu_count // lay.gpus
    if replicas >= 1 and gpu_count % lay.gpus:  # said, not silent: the spare GPUs serve nothing
        notes.append(
            f"{gpu_count % lay.gpus} of the {gpu_count} GPUs stay idle: each replica uses tp x pp = "
            f"{lay.gpus}; give a multiple of {lay.gpus} GPUs to use them all."
        )
    cap = min(lay.max_concurrency, engine_max * lay.attention_dp)
    b = batch if batch is not None else cap
    fits = lay.memory.fits and lay.max_concurrency >= 1 and replicas >= 1
    if batch is not None and batch > lay.max_concurrency:
        fits = False
        notes.append(f"{batch} sequences of {context} tokens exceed the KV cache ({lay.max_concurrency}).")
    if not fits and ignore_memory and replicas >= 1:
        b = batch if batch is not None else max(cap, USEFUL_CONCURRENCY * lay.attention_dp)
        notes.append(
            f"the memory model says {lay.label} does not fit ({lay.memory.per_gpu_gib:.1f} GiB per GPU, KV "
            f"room for {lay.max_concurrency} sequences); speed estimated anyway at {b} sequences."
        )
    elif not fits:
        return _Run(layout=lay, fits=False, replicas=replicas, batch=b, tok_s=None, ttft=None, tpot=None,
                    notes=tuple(notes))  # fmt: skip
    whole = type(lay.tp) is int and type(lay.pp) is int and type(lay.ep) is int
    c = infers.get((lay.tp, lay.pp, lay.ep)) if infers is not None and whole else None
    if c is None:
        ep_per_node = max(1, min(lay.ep, gpn))
        c = replace(
            base, tp=lay.tp, pp=lay.pp, link=tp_link(spec, lay.tp, gpn, prof), ep=lay.ep,
            ep_per_node=ep_per_node, pp_link=pipeline_link(spec, lay.tp, lay.pp, gpn, prof.param("link_eff")),
        )  # fmt: skip
        if infers is not None and whole:
            infers[(lay.tp, lay.pp, lay.ep)] = c
    keep = infers is not None and whole and type(b) is int and type(input_len) is int
    keep = keep and type(output_len) is int
    tkey = (id(c), b, input_len, output_len)
    hit = _TIMINGS.get(tkey) if keep else None
    if hit is not None and hit[0] is c:
        tpot, ttft, cycle, loaded = hit[1:]
    else:
        tpot, ttft, cycle, loaded = _timing(
            c, b, input_len, output_len, static=static, shapes=shapes, separate_prefill=separate_prefill
        )
        if keep:
            if len(_TIMINGS) >= _TIMINGS_MAX:
                _TIMINGS.clear()
            _TIMINGS[tkey] = (c, tpot, ttft, cycle, loaded)
    tok_s = replicas * b * output_len / cycle
    return _Run(layout=lay, fits=fits, replicas=replicas, batch=b, tok_s=tok_s, ttft=ttft, tpot=tpot,
                notes=tuple(notes), tpot_loaded=loaded)  # fmt: skip


__all__ = [
    "ENGINE_MAX_BATCH",
    "FP16_ACCUMULATE_STACKS",
    "GEFORCE_FP16_ACCUMULATE_SPEEDUP",
    "HEAD_BYTES_QUANTISED",
    "LAYER_SPLIT_STACKS",
    "MEMORY_ENGINE",
    "SEPARATE_PREFILL_STACKS",
    "STATIC_BATCHING_STACKS",
    "InferenceEstimate",
    "decode_step_s",
    "default_kv_precision",
    "estimate_inference",
    "prefill_s",
]
