"""GPU memory per device for inference, training, LoRA/QLoRA and loading (docs/memory.md: every formula).

Pure functions carry the numbers (``weights_bytes``, ``kv_cache_bytes``, ``optimizer_bytes_per_param`` ...);
:func:`estimate_memory` assembles them per pipeline stage and reports the heaviest stage with its
breakdown and the assumptions it made. Nothing here prints. The KV-cache functions live in
:mod:`gpufleet.estimate.kv_cache`, the weights, optimizer states and stage split in
:mod:`gpufleet.estimate.memory_params`, the serving terms in :mod:`gpufleet.estimate.memory_serving` and the
training terms in :mod:`gpufleet.estimate.memory_training` (their public names re-exported here).
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache
from typing import Any

from gpufleet.catalog.specs import AcceleratorSpec, get_spec
from gpufleet.errors import InputError, UnsupportedError
from gpufleet.estimate.activations import (
    check_recompute,
)
from gpufleet.estimate.kv_cache import _KV_BYTES as _KV_BYTES
from gpufleet.estimate.kv_cache import _kv_per_token_layer as _kv_per_token_layer
from gpufleet.estimate.kv_cache import _round_up as _round_up
from gpufleet.estimate.kv_cache import kv_bytes_per_element, kv_cache_bytes_per_sequence
from gpufleet.estimate.kv_cache import kv_cache_bytes as kv_cache_bytes
from gpufleet.estimate.kv_cache import kv_cache_bytes_per_token as kv_cache_bytes_per_token
from gpufleet.estimate.kv_cache import mla_kv_cache_bytes as mla_kv_cache_bytes
from gpufleet.estimate.memory_params import (
    OPTIMIZER_MOMENT_BYTES,
    OPTIMIZERS,
    PAGED_OPTIMIZERS,
    MemoryEstimate,
    TrainingBytesPerParam,
    _check_parallel,
    _positive,
    _Query,
    _Stage,
    _stages,
    _weight_bytes,
    allowed_tp_degrees,
    memory_p90_factor,
    optimizer_bytes_per_param,
    optimizer_state_parts,
    weights_bytes,
)
from gpufleet.estimate.memory_serving import (
    CUDA_CONTEXT_GIB,
    ENGINES,
    KV_BLOCK_TOKENS,
    NCCL_BUFFERS_GIB,
    PREFILL_CHUNK_TOKENS,
    TRTLLM_KV_FREE_FRACTION,
    VLLM_CUDA_GRAPHS_GIB,
    VLLM_GPU_MEMORY_UTILIZATION,
    VLLM_MAX_NUM_SEQS,
    Engine,
    _budgeted_overheads,
    _check_engine,
    _inference_assumptions,
    _inference_parts,
    _overheads,
    _usable,
)
from gpufleet.estimate.memory_training import (
    CHUNKED_LOSS_CHUNKS,
    LORA_DROPOUT_MODES,
    _training_assumptions,
    _training_parts,
)
from gpufleet.estimate.support import precision_support
from gpufleet.estimate.types import TASKS, adapter_task
from gpufleet.models.arch import ModelArch
from gpufleet.models.registry import resolve_model
from gpufleet.precision import QUANTISED_FORMATS as _QUANTISED
from gpufleet.precision import check_precision
from gpufleet.units import GIB
from gpufleet.validation import checked_output

# ---- assembly --------------------------------------------------------------------------------------


def _resolve_gpu(gpu: AcceleratorSpec | str) -> AcceleratorSpec:
    return gpu if isinstance(gpu, AcceleratorSpec) else get_spec(gpu)


@checked_output("memory estimate")
def estimate_memory(
    *,
    model: ModelArch | str,
    task: str,
    precision: str,
    gpu: AcceleratorSpec | str,
    tp: int = 1,
    pp: int = 1,
    dp: int = 1,
    batch: int = 1,
    seq_len: int,
    kv_precision: str | None = None,
    zero_stage: int = 0,
    ep: int = 1,
    recompute: str = "selective",
    optimizer: str = "adamw",
    lora_rank: int = 16,
    engine: str = "vllm",
    fp32_grads: bool = False,
    sequence_parallel: bool = True,
    flash_attention: bool = True,
    allow_fallback: bool = False,
    master_weights: bool = True,
    optimizer_in_backward: bool = False,
    chunked_loss: bool = False,
    cpu_offload: bool = False,
    adapter_fp32: bool = True,
    lora_dropout: str = "none",
    offload_checkpoints: bool = False,
    shard_degree: int | None = None,
    offload_params: bool = False,
    kbit_upcast: bool = False,
    hf_eager: bool = False,
    cp: int = 1,
) -> MemoryEstimate:
    """Memory per GPU for ``task`` (docs/memory.md).

    A precision ``gpu`` cannot run raises :class:`UnsupportedError`; ``allow_fallback`` accepts the same
    fallbacks as the speed model (bf16 -> fp16 on T4/V100, fp8 -> weight-only fp8 on Ampere; sizes stay those
    of the stated precision) and records them in ``assumptions``.

    ``batch`` is concurrent sequences for inference and the micro-batch per model replica for training;
    ``seq_len`` is the context (prompt + output) or the training sequence length [tokens]. With pipeline
    parallelism the heaviest stage is reported. ``engine`` matters for inference only.

    Fine-tuning recipe knobs (see :mod:`gpufleet.estimate.recipes` for the named presets): ``optimizer``
    (``adamw``, ``adamw8bit``, ``paged_adamw8bit`` whose states page to host memory and are left out of
    ``allocated_gib``, ``adafactor``, ``sgd`` ...); ``master_weights`` False = pure 16-bit training (no fp32
    copy); ``optimizer_in_backward`` frees each gradient right after its update; ``chunked_loss`` computes
    the cross entropy in chunks (torchtune); ``cpu_offload`` keeps the fp32 master and optimizer states in
    host memory (DeepSpeed ZeRO-Offload, FSDP ``CPUOffload``; their speed cost is not modelled);
    ``adapter_fp32`` False keeps LoRA adapters and their AdamW states in the 16-bit model dtype (torchtune,
    litgpt) instead of PEFT's fp32 upcast; ``lora_dropout`` (:data:`LORA_DROPOUT_MODES`) where the trainer's
    LoRA dropout stores masks and dropped inputs; ``offload_checkpoints`` with full recompute keeps the
    checkpointed layer inputs in host memory (unsloth's ``use_gradient_checkpointing="unsloth"``);
    ``shard_degree`` < ``dp`` shards the ZeRO/FSDP states over groups of that many ranks and replicates them
    across groups (FSDP ``HYBRID_SHARD``: full sharding within a node, replication across nodes);
    ``offload_params`` (with ``cpu_offload`` and ``zero_stage=3``) also keeps the sharded parameters on the
    host (ZeRO-3 ``offload_param``, FSDP ``CPUOffloadPolicy``): only gathered modules stay on the GPU;
    ``kbit_upcast`` holds a QLoRA base's unquantised embeddings and LM head in fp32 (PEFT
    ``prepare_model_for_kbit_training``); ``hf_eager`` says the model runs Hugging Face transformers' eager
    modelling code under ``torch.autocast`` (HF Trainer, TRL, axolotl, PEFT): on one GPU without ZeRO, AMP
    full fine-tunes and fp32-adapter LoRA then take the tensors that code saves and the peak of the step's
    timeline instead of the generic sum (``_hf_training_parts``). ``cp``: the training job's context-parallel
    degree, ``seq_len`` being each rank's share of the sequence: the ``cp`` ranks of a sequence hold the same
    weights, so ZeRO/FSDP shard over dp x cp ranks (Megatron-Core's distributed optimizer over
    ``get_data_parallel_group(with_context_parallel=True)``; the speed model reduces gradients over the same
    group).
    """
    m = resolve_model(model)
    spec = _resolve_gpu(gpu)
    if task not in TASKS:
        raise InputError(f"Unknown task {task!r}. Allowed: {', '.join(TASKS)}. Pick the one you will run.")
    prec = check_precision(precision)
    task = adapter_task(task, prec, spec.architecture)
    support = precision_support(
        spec, "nf4" if task == "qlora" and prec == "int8" else prec, allow_fallback=allow_fallback
    )  # an 8-bit frozen adapter base computes in 16-bit, like any weight-only format
    _check_engine(engine)
    for name, v in (("batch", batch), ("seq_len", seq_len), ("lora_rank", lora_rank), ("cp", cp)):
        _positive(name, v)
    _check_parallel(m, tp, pp, dp, ep)
    if lora_dropout not in LORA_DROPOUT_MODES:
        raise InputError(
            f"Unknown lora_dropout mode {lora_dropout!r}. Allowed: {', '.join(LORA_DROPOUT_MODES)}. "
            "Use 'none' for lora_dropout 0 (the PEFT default)."
        )
    if shard_degree is not None and (shard_degree < 1 or dp % shard_degree):
        raise InputError(
            f"shard_degree {shard_degree} must divide dp={dp}: hybrid sharding shards within groups of that "
            "many data-parallel ranks (usually the GPUs of one node). Leave it out to shard over all of dp."
        )
    if offload_params and not (cpu_offload and zero_stage == 3):
        raise InputError(
            "offload_params keeps ZeRO-3/FSDP parameter shards on the host: it needs cpu_offload=True and "
            f"zero_stage=3 (got cpu_offload={cpu_offload}, zero_stage={zero_stage}). Set both, or drop it."
        )
    if zero_stage not in (0, 1, 2, 3):
        raise InputError(f"zero_stage must be 0, 1, 2 or 3 (3 = FSDP full sharding), got {zero_stage!r}.")
    check_recompute(recompute)
    if kv_precision is not None:
        kv_bytes_per_element(kv_precision)
    if task not in ("inference", "load"):
        optimizer_bytes_per_param(optimizer, "fp32" if task in ("lora", "qlora") else prec)
    q = _Query(
        m=m, task=task, precision=prec, engine=engine if task == "inference" else "pytorch", tp=tp, pp=pp,
        dp=dp, ep=ep, batch=batch, seq_len=seq_len, kv_precision=kv_precision, zero_stage=zero_stage,
        recompute=recompute, optimizer=optimizer, lora_rank=lora_rank, fp32_grads=fp32_grads,
        sequence_parallel=sequence_parallel, flash_attention=flash_attention, master_weights=master_weights,
        optimizer_in_backward=optimizer_in_backward, chunked_loss=chunked_loss, cpu_offload=cpu_offload,
        adapter_fp32=adapter_fp32, lora_dropout=lora_dropout, offload_checkpoints=offload_checkpoints,
        shard_degree=shard_degree, offload_params=offload_params, kbit_upcast=kbit_upcast, hf_eager=hf_eager,
        cp=cp,
    )  # fmt: skip
    usable, parts, slack = _assemble(q, spec)
    over = _overheads(q)
    fallback = tuple(n for n in support.notes if "fallback" in n)
    paged = parts.pop("optimizer_states_paged", 0.0)
    resident = sum(parts.values())
    # paged states occupy device memory only as far as it is free (the driver evicts them under pressure)
    paged_on_gpu = min(paged, max(0.0, spec.memory_gib * GIB - resident - sum(over.values())))
    if paged:
        parts["optimizer_states_paged"] = paged_on_gpu
    exact = parts.get("kv_cache", 0.0) + parts.get("weights", 0.0)
    per_gpu_p90 = (resident - exact) * memory_p90_factor() + exact + paged_on_gpu + sum(over.values())
    return MemoryEstimate(
        per_gpu_gib=(resident + paged_on_gpu + sum(over.values())) / GIB,
        per_gpu_gib_p90=per_gpu_p90 / GIB,
        # fits <=> slack >= 0 <=> per_gpu_p90 - paged_on_gpu <= this (the same bytes, seen from the device)
        fit_limit_gib=(per_gpu_p90 - paged_on_gpu + slack) / GIB,
        allocated_gib=resident / GIB,
        usable_gib=usable / GIB,
        capacity_gib=spec.memory_gib,
        fits=slack >= 0.0,
        breakdown_gib={k: v / GIB for k, v in (parts | over).items()},
        assumptions=fallback + _assumptions(q),
        optimizer=None if task in ("inference", "load") else optimizer,
    )


@lru_cache(maxsize=65536)
def training_fits(
    *,
    model: ModelArch,
    task: str,
    precision: str,
    memory_gib: float,
    tp: int,
    pp: int,
    dp: int,
    ep: int,
    seq_len: int,
    zero_stage: int,
    recompute: str,
    optimizer: str = "adamw",
    master_weights: bool = True,
    **knobs: Any,
) -> bool:
    """Whether :func:`estimate_memory` (training ``task``, ``batch=1``, ``engine="pytorch"``, ``optimizer``
    and ``master_weights`` and the fine-tuning ``knobs`` as given (recipes.TrainingOptions ``knobs``: the
    :class:`_Query` fields of the same names, so a new knob needs no change here), every other argument at
    its default) on a GPU of ``memory_gib``
    reports ``fits``: the same slack computation
    (:func:`_assemble`), without building the estimate. The layout search screens thousands of layouts with
    it and builds full estimates only for those it keeps; the caller validates the shared arguments once
    with :func:`estimate_memory`. The result depends on the GPU only through its capacity, so the cache is
    keyed by it (providers list the same GPU under many instance types)."""
    _check_parallel(model, tp, pp, dp, ep)
    q = _Query(
        m=model, task=task, precision=check_precision(precision), engine="pytorch", tp=tp, pp=pp, dp=dp,
        ep=ep, batch=1, seq_len=seq_len, kv_precision=None, zero_stage=zero_stage, recompute=recompute,
        optimizer=optimizer, lora_rank=16, fp32_grads=False, sequence_parallel=True, flash_attention=True,
        master_weights=master_weights, **knobs,
    )  # fmt: skip
    return _slack(q, memory_gib * GIB)[2] >= 0.0


def _assemble(q: _Query, spec: AcceleratorSpec) -> tuple[float, dict[str, float], float]:
    """(usable bytes, parts of the heaviest stage, slack) of one validated query [bytes]."""
    return _slack(q, spec.memory_gib * GIB)


def _slack(q: _Query, cap: float) -> tuple[float, dict[str, float], float]:
    """(usable bytes, parts of the heaviest stage, slack) of one validated query on ``cap`` bytes."""
    m, prec, task = q.m, q.precision, q.task
    over = _overheads(q)
    extra = _budgeted_overheads(q.engine, over)
    best: tuple[float, dict[str, float], float] | None = None
    for st in _candidate_stages(_stages(m, q.tp, q.pp, q.ep)):
        if task == "load":
            parts = {"weights": _weight_bytes(st, prec)}
        elif task == "inference":
            parts = _inference_parts(q, st)
        else:
            parts = _training_parts(q, st)
        allocated = sum(v for k, v in parts.items() if k != "optimizer_states_paged")
        kv = parts.get("kv_cache", 0.0)
        usable = _usable(cap, q.engine, over, allocated - kv)
        # judged at the p90 of the modelled tensors (memory_p90_factor); weights and KV cache are exact
        exact = kv + parts.get("weights", 0.0)
        slack = usable - (allocated - exact) * memory_p90_factor() - exact - extra
        if best is None or slack < best[2]:
            best = (usable, parts, slack)
    assert best is not None
    return best


def _candidate_stages(stages: tuple[_Stage, ...]) -> tuple[_Stage, ...]:
    """The stages that can be the heaviest. Under 1F1B a stage's load is its parameters plus (p - i)
    micro-batches of activations; the first stages hold the extra layers and the most micro-batches, so past
    the dense-first layers of a MoE model (at most the first few stages) the load only falls until the last
    stage, which adds lm_head and the logits. Checking the first four and the last is exact for that layout
    and keeps deep pipelines cheap to size."""
    if len(stages) <= 5:
        return stages
    return (*stages[:4], stages[-1])


def max_concurrent_sequences(
    *,
    model: ModelArch | str,
    gpu: AcceleratorSpec | str,
    precision: str,
    tp: int,
    pp: int,
    context_len: int,
    kv_precision: str | None = None,
    engine: str = "vllm",
    allow_fallback: bool = False,
    ep: int = 1,
) -> int:
    """Sequences of ``context_len`` tokens that fit one replica's KV cache [count].

    The largest ``b`` for which :func:`estimate_memory` at ``batch=b`` fits (engine reserve, block rounding,
    heaviest pipeline stage, and the per-sequence terms that grow with the batch besides the KV cache:
    sampling logits beyond vLLM's profiled ``max_num_seqs``, TRT-LLM's pool sized after them, whole-batch
    prefill activations without chunking); 0 when even one does not fit. ``ep`` > 1: the routed experts are
    split over ``tp x ep`` GPUs (expert parallelism) and the count is per attention group of ``tp`` GPUs.
    """
    m = resolve_model(model)
    if not m.is_decoder:
        raise UnsupportedError(
            f"{m.id} is an encoder-only model: it has no KV cache, so concurrency is not KV-bound. "
            "Use estimate_memory with the batch you plan to run."
        )
    spec = _resolve_gpu(gpu)
    _positive("context_len", context_len)
    # validates every other input exactly as estimate_memory does
    estimate_memory(
        model=m, task="inference", precision=precision, gpu=spec, tp=tp, pp=pp, seq_len=context_len,
        kv_precision=kv_precision, engine=engine, allow_fallback=allow_fallback, ep=ep,
    )  # fmt: skip
    q = _Query(
        m=m, task="inference", precision=check_precision(precision), engine=engine, tp=tp, pp=pp, dp=1,
        ep=ep, batch=1, seq_len=context_len, kv_precision=kv_precision, zero_stage=0, recompute="selective",
        optimizer="adamw", lora_rank=1, fp32_grads=False, sequence_parallel=True, flash_attention=True,
    )  # fmt: skip
    cap = spec.memory_gib * GIB
    over = _overheads(q)
    extra = _budgeted_overheads(engine, over)
    # upper bound: the pool left beside the batch-1 tensors, divided by one sequence's KV cache
    hi = math.inf
    for st in _stages(m, tp, pp, ep):
        parts = _inference_parts(q, st)
        per_seq = parts.pop("kv_cache")
        static = sum(parts.values())
        pool = _usable(cap, engine, over, static) - static - extra
        hi = min(hi, math.floor(max(0.0, pool) / per_seq))
    # memory grows with the batch: the largest batch that still fits, searched in [0, bound]. The slack is
    # nearly linear in the batch, so a secant guess through batch 1 and the bound lands within a sequence or
    # two of it; probing the guess and the next batch narrows the bracket that the bisection then searches:
    # the same answer in ~4 probes instead of ~12
    lo, hi_n = 0, int(hi)

    def slack(b: int) -> float:
        return _assemble(replace(q, batch=b), spec)[2]

    if hi_n >= 2:
        s1, s_hi = slack(1), slack(hi_n)
        if s_hi >= 0.0:
            return hi_n
        if not s1 >= 0.0:
            return 0
        lo, hi_n = 1, hi_n - 1  # batch 1 fits, the bound does not
        per_seq = (s1 - s_hi) / hi_n  # slack lost per added sequence
        if math.isfinite(per_seq) and per_seq > 0.0:
            guess = min(max(1 + int(s1 / per_seq), lo), hi_n)
            if slack(guess) >= 0.0:
                lo = guess
                if guess < hi_n and not slack(guess + 1) >= 0.0:
                    hi_n = guess
            else:
                hi_n = guess - 1
    while lo < hi_n:
        mid = (lo + hi_n + 1) // 2
        if slack(mid) >= 0.0:
            lo = mid
        else:
            hi_n = mid - 1
    return lo


def _assumptions(q: _Query) -> tuple[str, ...]:
    a = [
        f"CUDA context {CUDA_CONTEXT_GIB} GiB per GPU (CUDA 12 lazy loading).",
        f"Fit verdict at the p90 of memory: modelled tensors x {memory_p90_factor():.3f} (the memory "
        "interval of the calibration profile)"
        + ("; the KV cache at its exact size." if q.task == "inference" else "."),
    ]
    if q.tp * q.pp * (q.dp if q.task != "inference" else 1) > 1:
        a.append(f"NCCL buffers {NCCL_BUFFERS_GIB} GiB per GPU (stated assumption).")
    if q.ep > 1:
        a.append(f"Routed experts split over tp x ep = {q.tp * q.ep} GPUs; ZeRO shards them over dp/ep.")
    if q.pp > 1:
        a.append("Heaviest pipeline stage shown: the first holds the embedding, the last lm_head and logits.")
    if q.precision in _QUANTISED and q.task in ("inference", "load", "lora", "qlora"):
        a.append(f"Linear layers in {q.precision} incl. scales; embeddings, lm_head and norms stay 16-bit.")
        if q.precision == "fp4" and q.m.is_moe:
            from gpufleet.estimate.moe_serving import FP4_MOE_NONROUTED_PRECISION

            a.append(
                f"fp4 MoE checkpoint: only the routed experts are fp4; attention, dense layers and shared "
                f"experts stay {FP4_MOE_NONROUTED_PRECISION}."
            )
    if q.task == "load":
        a.append("Weights only: no KV cache, activations or optimizer.")
    elif q.task == "inference":
        a += _inference_assumptions(q)
    else:
        a += _training_assumptions(q)
    return tuple(a)


__all__ = [
    "CHUNKED_LOSS_CHUNKS",
    "CUDA_CONTEXT_GIB",
    "ENGINES",
    "KV_BLOCK_TOKENS",
    "LORA_DROPOUT_MODES",
    "NCCL_BUFFERS_GIB",
    "OPTIMIZERS",
    "OPTIMIZER_MOMENT_BYTES",
    "PAGED_OPTIMIZERS",
    "PREFILL_CHUNK_TOKENS",
    "TRTLLM_KV_FREE_FRACTION",
    "VLLM_CUDA_GRAPHS_GIB",
    "VLLM_GPU_MEMORY_UTILIZATION",
    "VLLM_MAX_NUM_SEQS",
    "Engine",
    "MemoryEstimate",
    "TrainingBytesPerParam",
    "allowed_tp_degrees",
    "estimate_memory",
    "kv_cache_bytes",
    "kv_cache_bytes_per_sequence",
    "kv_cache_bytes_per_token",
    "max_concurrent_sequences",
    "memory_p90_factor",
    "mla_kv_cache_bytes",
    "optimizer_bytes_per_param",
    "optimizer_state_parts",
    "training_fits",
    "weights_bytes",
]
