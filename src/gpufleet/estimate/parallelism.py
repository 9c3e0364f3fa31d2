"""Choosing tensor / pipeline / data parallel degrees as an engineer would when the user gives none.

Training (Megatron-LM/NeMo practice, Narayanan et al. 2021 sec. 3 "takeaways"): tensor parallelism (a power of
two within a node that divides the heads) before pipeline parallelism, which is used only when TP = GPUs per
node still does not fit; the rest data parallel with ZeRO-1 (distributed optimizer) and selective recompute;
then ZeRO-3, then full recompute. Among the TP degrees that fit at the smallest such PP, the performance model
takes the fastest (engineers tune TP for speed, not only for memory: a larger TP can beat a slow data-parallel
reduce). Stacks without tensor parallelism (DeepSpeed, plain PyTorch, HF transformers) shard with ZeRO-3/FSDP
instead; JAX/MaxText (and an unstated stack on a TPU) shards with FSDP alone, no pipeline either, and
rematerialises fully where selective recompute does not fit (:data:`FSDP_ONLY_STACKS`). Inference: the
smallest TP that holds the weights plus a useful KV cache (:data:`USEFUL_CONCURRENCY` sequences), replicas
beyond.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from gpufleet.catalog.specs import AcceleratorSpec
from gpufleet.errors import InputError
from gpufleet.estimate.memory import (
    MemoryEstimate,
    allowed_tp_degrees,
    estimate_memory,
    max_concurrent_sequences,
    training_fits,
)
from gpufleet.estimate.rates import MAX_AUTO_TP
from gpufleet.models.arch import ModelArch

#: stacks whose training recipes have no tensor/pipeline parallelism: they shard with ZeRO/FSDP instead
NO_TP_STACKS = frozenset({"deepspeed", "pytorch", "transformers", "torchtune", "unsloth", "axolotl"})
#: stacks that shard with FSDP alone, no automatic tensor or pipeline parallelism: MaxText (JAX/XLA GSPMD)
#: defaults to ``ici_fsdp_parallelism: -1`` (every chip of the slice in the FSDP axis) with
#: ``ici_tensor_parallelism: 1`` and ``ici_pipeline_parallelism: 1``, and fits memory with ``remat_policy``
#: (full rematerialisation) rather than more parallelism (MaxText ``configs/base.yml`` and README "Getting
#: started": scale by FSDP first); its MLPerf GPT-3 runs on Trillium are "FSDP only" (MLPerf Training v4.1
#: Google cloud-tpu-trillium-1024-maxtext)
FSDP_ONLY_STACKS = frozenset({"jax"})
#: stacks that relax memory with activation recomputation before sharding the parameters: Megatron-LM's
#: distributed optimizer shards only the optimizer state and fp32 master (ZeRO-1, Megatron-LM
#: ``docs/source/api-guide/dist_optimizer.md``) and a layout that does not fit turns on
#: ``--recompute-granularity full`` (``--recompute-method uniform|block``; Korthikanti et al. 2022 sec. 5),
#: as NeMo / Megatron-Bridge pre-training recipes do; their published large dense runs state "no FSDP"
#: (Megatron-Bridge ``docs/performance-summary.md``, Llama 3.1 405B on GB200: VP4, no FSDP). Other stacks
#: shard with ZeRO-3/FSDP first and checkpoint after.
RECOMPUTE_BEFORE_SHARDING_STACKS = frozenset({"megatron", "nemo"})
#: tasks whose every stack shards without tensor parallelism, whatever the software: QLoRA's 4-bit NF4 base
#: (bitsandbytes ``Linear4bit``) runs under DDP or FSDP/ZeRO-3 only: the QLoRA paper (Dettmers et al. 2023)
#: trains on one GPU, HF PEFT "Use PEFT QLoRA and FSDP for finetuning large models on multiple GPUs",
#: bitsandbytes "FSDP-QLoRA" and Answer.AI's FSDP-QLoRA (70B on 2 x 24 GB) shard the quantised base with
#: FSDP; torchtune, Axolotl and Unsloth QLoRA recipes are single-device or FSDP; Megatron-LM/NeMo tensor
#: parallelism splits 16-bit ``ColumnParallelLinear`` layers, not bitsandbytes' packed 4-bit ones
NO_TP_TASKS = frozenset({"qlora"})


def fsdp_only(spec: AcceleratorSpec, software: str) -> bool:
    """Whether ``software`` on ``spec`` shards with FSDP only (:data:`FSDP_ONLY_STACKS`); an unstated stack on
    a TPU is JAX/XLA, the TPU training stacks (MaxText, PyTorch/XLA FSDP via GSPMD; Cloud TPU docs)."""
    return software in FSDP_ONLY_STACKS or (software == "unknown" and spec.architecture.startswith("TPU"))


#: an inference replica is worth running when its KV cache holds at least this many sequences of the
#: requested context (a named assumption: below ~16 concurrent sequences decode is bandwidth-starved)
USEFUL_CONCURRENCY = 16


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingLayout:
    """Chosen training parallelism with the memory estimate at that layout."""

    tp: int
    pp: int
    dp: int
    zero_stage: int
    recompute: str
    memory: MemoryEstimate


@dataclass(frozen=True, slots=True, kw_only=True)
class LayoutKey:
    """A training layout found by the search, before its memory estimate is built (:func:`layout_memory`).

    ``fits`` is what the estimate's ``fits`` will say; ``ep`` is the expert-parallel degree it was sized at.
    """

    tp: int
    pp: int
    dp: int
    ep: int
    zero_stage: int
    recompute: str
    fits: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class InferenceLayout:
    """Chosen inference parallelism per replica with its memory and KV-bound concurrency.

    ``ep`` > 1: the replica's MoE layers span ``ep`` GPUs (per pipeline stage), attention runs TP ``tp``
    in ``ep / tp`` data-parallel groups (:mod:`gpufleet.estimate.moe_serving`); ``memory`` is one GPU's
    and ``max_concurrency`` counts the whole replica's sequences.
    """

    tp: int
    pp: int
    memory: MemoryEstimate
    max_concurrency: int
    ep: int = 1

    @property
    def attention_dp(self) -> int:
        """Attention data-parallel groups per replica (1 without expert parallelism)."""
        return self.ep // self.tp if self.ep > 1 else 1

    @property
    def gpus(self) -> int:
        """GPUs of one replica [GPUs]."""
        return max(self.tp, self.ep) * self.pp

    @property
    def memory_ep(self) -> int:
        """The memory model's ``ep``: routed experts split over ``tp x memory_ep`` GPUs."""
        return self.ep // self.tp if self.ep > 1 else 1

    @property
    def label(self) -> str:
        """Short text of the layout, e.g. ``TP8`` or ``EP8/attention TP1 x DP8``."""
        pp = f" PP{self.pp}" if self.pp > 1 else ""
        if self.ep > 1:
            return f"EP{self.ep}/attention TP{self.tp} x DP{self.attention_dp}{pp}"
        return f"TP{self.tp}{pp}"


@lru_cache(maxsize=4096)
def _memory(**kw: object) -> MemoryEstimate:
    """:func:`estimate_memory`, cached: layouts are re-scored with the same arguments (calibration)."""
    return estimate_memory(**kw)  # type: ignore[arg-type]


@lru_cache(maxsize=4096)
def _concurrency(**kw: object) -> int:
    """:func:`max_concurrent_sequences`, cached."""
    return max_concurrent_sequences(**kw)  # type: ignore[arg-type]


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def default_ep(model: ModelArch, dp: int, gpus_per_node: int) -> int:
    """Expert-parallel degree: the largest power of two dividing the experts, within dp and a node."""
    ep = 1
    while ep * 2 <= min(dp, gpus_per_node) and model.num_experts % (ep * 2) == 0:
        ep *= 2
    return ep


def tp_candidates(model: ModelArch, limit: int) -> list[int]:
    """Powers of two up to ``limit`` that split the model's heads (smallest first)."""
    return [d for d in allowed_tp_degrees(model) if d <= limit and d & (d - 1) == 0]


def training_layouts(
    *,
    model: ModelArch,
    spec: AcceleratorSpec,
    task: str,
    precision: str,
    gpu_count: int,
    global_batch: int,
    seq_len: int,
    gpus_per_node: int,
    software: str,
    tp: int | None,
    pp: int | None,
    dp: int | None,
    zero_stage: int | None,
    recompute: str | None,
    ep: int | None = None,
    allow_fallback: bool = False,
    optimizer: str = "adamw",
    master_weights: bool = True,
    knobs: Mapping[str, Any] | None = None,
) -> list[TrainingLayout]:
    """:func:`training_layout_keys` with the memory estimate of each layout."""
    keys = training_layout_keys(
        model=model, spec=spec, task=task, precision=precision, gpu_count=gpu_count,
        global_batch=global_batch, seq_len=seq_len, gpus_per_node=gpus_per_node, software=software, tp=tp,
        pp=pp, dp=dp, zero_stage=zero_stage, recompute=recompute, ep=ep, allow_fallback=allow_fallback,
        optimizer=optimizer, master_weights=master_weights, knobs=knobs,
    )  # fmt: skip
    return [
        layout_memory(k, model=model, spec=spec, task=task, precision=precision, seq_len=seq_len,
                      allow_fallback=allow_fallback, optimizer=optimizer, master_weights=master_weights,
                      knobs=knobs)
        for k in keys
    ]  # fmt: skip


def layout_memory(
    key: LayoutKey,
    *,
    model: ModelArch,
    spec: AcceleratorSpec,
    task: str,
    precision: str,
    seq_len: int,
    allow_fallback: bool = False,
    optimizer: str = "adamw",
    master_weights: bool = True,
    knobs: Mapping[str, Any] | None = None,
) -> TrainingLayout:
    """The layout ``key`` with its memory estimate (micro-batch 1, as the search sized it; ``optimizer``
    and ``master_weights`` as the job runs them: an 8-bit or paged optimizer without an fp32 master copy
    needs far less than AdamW's 16 bytes per parameter; ``knobs``: the recipe's other memory settings,
    recipes.TrainingOptions ``memory_kwargs``)."""
    mem = _memory(
        model=model, task=task, precision=precision, gpu=spec, tp=key.tp, pp=key.pp, dp=key.dp, ep=key.ep,
        batch=1, seq_len=seq_len, zero_stage=key.zero_stage, recompute=key.recompute, engine="pytorch",
        allow_fallback=allow_fallback, optimizer=optimizer, master_weights=master_weights, **(knobs or {}),
    )  # fmt: skip
    return TrainingLayout(
        tp=key.tp, pp=key.pp, dp=key.dp, zero_stage=key.zero_stage, recompute=key.recompute, memory=mem
    )


def training_layout_keys(
    *,
    model: ModelArch,
    spec: AcceleratorSpec,
    task: str,
    precision: str,
    gpu_count: int,
    global_batch: int,
    seq_len: int,
    gpus_per_node: int,
    software: str,
    tp: int | None,
    pp: int | None,
    dp: int | None,
    zero_stage: int | None,
    recompute: str | None,
    ep: int | None = None,
    allow_fallback: bool = False,
    optimizer: str = "adamw",
    master_weights: bool = True,
    knobs: Mapping[str, Any] | None = None,
) -> list[LayoutKey]:
    """The fitting layouts of the first pass that has one, else ``[the last layout tried]``.

    Every TP x PP that fits is returned (for stacks without TP, only those at the smallest fitting pipeline
    degree); the caller keeps the fastest, as an engineer tuning for throughput would: at scale a deeper
    pipeline with less TP often wins (Narayanan et al. 2021, sec. 3: TP within a node, PP across nodes).

    Passes, in the order an engineer relaxes them: (1) selective recompute with ZeRO-1 (ZeRO-1 then ZeRO-3 for
    stacks without TP), every TP at the smallest PP that fits; (2) ZeRO-3/FSDP; (3) full recompute. Megatron
    and NeMo (:data:`RECOMPUTE_BEFORE_SHARDING_STACKS`) recompute before they shard: (1) selective,
    (2) full recompute with ZeRO-1, then ZeRO-3 with each. Degrees,
    ZeRO stage or recompute given by the caller are kept fixed. Stacks without TP (:data:`NO_TP_STACKS`) and
    tasks without TP (:data:`NO_TP_TASKS`: QLoRA) get TP 1 unless the caller gives a degree. ``knobs``: the
    fine-tuning recipe's other memory settings (recipes.TrainingOptions ``memory_kwargs`` less optimizer and
    master weights), applied to every layout.
    """
    extra = dict(knobs or {})
    # FSDP-only stacks still shard with TP where the batch leaves some chip without a whole sequence
    # (MaxText sets ici_tensor_parallelism > 1 for per-device batches below 1)
    fsdp = fsdp_only(spec, software)
    no_tp = software in NO_TP_STACKS or task in NO_TP_TASKS or (fsdp and global_batch >= gpu_count)
    auto_tps = [1] if no_tp else tp_candidates(model, min(gpus_per_node, gpu_count, MAX_AUTO_TP))
    tps = [tp] if tp is not None else auto_tps
    passes: list[tuple[str, list[int]]] = [
        ("selective", [3] if fsdp else [1, 3] if no_tp else [1]),
        ("selective", [3]),
        ("full", [3] if fsdp else [1, 3]),
    ]
    if software in RECOMPUTE_BEFORE_SHARDING_STACKS:
        passes = [("selective", [1]), ("full", [1]), ("selective", [3]), ("full", [3])]

    def fits(t: int, p: int, d: int, e: int, z: int, rc: str) -> bool:
        return training_fits(
            model=model, task=task, precision=precision, memory_gib=spec.memory_gib, tp=t, pp=p, dp=d, ep=e,
            seq_len=seq_len, zero_stage=z, recompute=rc, optimizer=optimizer, master_weights=master_weights,
            **extra,
        )  # fmt: skip

    # Layouts are screened with training_fits (the estimate's own slack, without building it); the caller
    # builds the memory estimate of the layout it keeps (layout_memory). The arguments every layout shares
    # (precision support, task, recompute, ZeRO stage) are validated once by a full estimate at tp=pp=dp=1;
    # the degrees by training_fits.
    last: tuple[int, int, int, int, int, str] | None = None
    checked = False
    for rc, zeros in passes:
        rc = recompute or rc
        zs = [zero_stage] if zero_stage is not None else zeros
        found: list[LayoutKey] = []
        pp_min: int | None = None
        auto_pps = [1] if fsdp else _pp_candidates(model, gpu_count, tps[0] if tps else 1)
        pps = [pp] if pp is not None else auto_pps
        for pp_try in pps:
            if pp_min is not None and pp_try > 4 * pp_min:
                break  # deeper pipelines than 4x the shallowest that fits only add bubble
            for t in tps:
                if gpu_count % (t * pp_try):
                    continue
                d = dp if dp is not None else gpu_count // (t * pp_try)
                if t * pp_try * d != gpu_count:
                    continue
                e = ep if ep is not None else (default_ep(model, d, gpus_per_node) if model.is_moe else 1)
                if e > 1 and d % e:
                    e = 1
                for z in zs:
                    last = (t, pp_try, d, e, z, rc)
                    if not checked:
                        _memory(
                            model=model, task=task, precision=precision, gpu=spec, batch=1, seq_len=seq_len,
                            zero_stage=z, recompute=rc, engine="pytorch", allow_fallback=allow_fallback,
                            optimizer=optimizer, master_weights=master_weights, **extra,
                        )  # fmt: skip
                        checked = True
                    if global_batch >= d and fits(*last):
                        found.append(
                            LayoutKey(tp=t, pp=pp_try, dp=d, ep=e, zero_stage=z, recompute=rc, fits=True)
                        )
                        break
            if found and no_tp:  # ZeRO/FSDP stacks pipeline only when they must: the smallest pp that fits
                return found
            if found and pp_min is None:
                pp_min = pp_try
        if found:  # every fitting (tp, pp) of the first pass that has one: the caller keeps the fastest
            return found
    if last is None:
        raise InputError(
            f"No tensor x pipeline x data parallel layout of {gpu_count} GPUs matches tp={tp}, pp={pp}, "
            f"dp={dp} "
            f"for {model.id}: tp x pp x dp must equal the GPU count and tp must divide the attention heads. "
            "Give consistent degrees or leave them out to let gpufleet choose."
        )
    t, p, d, e, z, rc = last
    return [LayoutKey(tp=t, pp=p, dp=d, ep=e, zero_stage=z, recompute=rc, fits=fits(*last))]


def _pp_candidates(model: ModelArch, gpu_count: int, max_tp: int) -> list[int]:
    """1, then pipeline degrees (dividing the GPUs left after TP, at most the layer count) in order."""
    return [p for p in _divisors(max(gpu_count // max_tp, 1)) if p <= model.num_layers] or [1]


def choose_inference_layout(
    *,
    model: ModelArch,
    spec: AcceleratorSpec,
    precision: str,
    gpu_count: int,
    context_len: int,
    batch: int | None,
    kv_precision: str | None,
    engine: str,
    gpus_per_node: int,
    tp: int | None,
    pp: int,
    allow_fallback: bool = False,
    layer_split: bool = False,
) -> InferenceLayout:
    """Smallest TP (then PP) whose replica fits the weights and a useful KV cache (or ``batch`` sequences).

    ``layer_split``: the engine spreads a model over GPUs by whole layers only (llama.cpp's default
    ``--split-mode layer``), so with ``tp`` not given only ``tp = 1`` layouts with the smallest fitting
    ``pp`` are tried."""
    want = batch if batch is not None else USEFUL_CONCURRENCY
    tps = [tp] if tp is not None else tp_candidates(model, min(gpus_per_node, gpu_count, MAX_AUTO_TP))
    if layer_split and tp is None:
        tps = [1]
    pps = [pp] if pp != 1 or tp is not None else [p for p in _divisors(gpu_count) if p <= model.num_layers]
    fallback: InferenceLayout | None = None
    last: InferenceLayout | None = None
    for p in pps:
        for t in tps:
            if t * p > gpu_count:
                continue
            mem = _memory(
                model=model, task="inference", precision=precision, gpu=spec, tp=t, pp=p, batch=batch or 1,
                seq_len=context_len, kv_precision=kv_precision, engine=engine, allow_fallback=allow_fallback,
            )  # fmt: skip
            conc = 0
            if mem.fits:
                conc = _concurrency(
                    model=model, gpu=spec, precision=precision, tp=t, pp=p, context_len=context_len,
                    kv_precision=kv_precision, engine=engine, allow_fallback=allow_fallback,
                )  # fmt: skip
            last = InferenceLayout(tp=t, pp=p, memory=mem, max_concurrency=conc)
            if mem.fits and conc >= want:
                return last
            if mem.fits and conc >= 1 and fallback is None:
                fallback = last
    if fallback is not None:
        return fallback
    if last is None:
        raise InputError(
            f"tp={tp} x pp={pp} needs more than the {gpu_count} GPUs given. Use tp x pp <= gpu_count."
        )
    return last


def ep_inference_layouts(
    *,
    model: ModelArch,
    spec: AcceleratorSpec,
    precision: str,
    gpu_count: int,
    context_len: int,
    batch: int | None,
    kv_precision: str | None,
    engine: str,
    gpus_per_node: int,
    ep: int | None,
    tp: int | None,
    pp: int,
    allow_fallback: bool = False,
) -> list[InferenceLayout]:
    """Expert-parallel layouts of a MoE model (:mod:`gpufleet.estimate.moe_serving`).

    ``ep`` None: every power-of-two EP degree dividing the routed experts within the scale-up domain
    (``gpus_per_node``: an NVL72 rack, an 8-GPU board) and the GPUs, with every attention TP degree
    (powers of two dividing the heads and ``ep``, at most :data:`MAX_AUTO_TP`; ``tp`` = 1 is attention
    data parallel). Those that fit the weights and at least one sequence per attention group are returned;
    a given ``ep``/``tp`` is returned even when it does not fit (``fits`` False). ``batch``: sequences per
    replica, spread over its attention groups. Concurrency: the KV-bound sequences per attention group
    (:func:`max_concurrent_sequences` with the routed experts split over the group) times the groups.
    """
    from gpufleet.estimate.moe_serving import ep_degrees

    eps = [ep] if ep is not None else ep_degrees(model, gpu_count // pp, gpus_per_node)
    out: list[InferenceLayout] = []
    for e in eps:
        if e * pp > gpu_count or model.num_experts % e:
            continue
        tps = [tp] if tp is not None else [t for t in tp_candidates(model, min(e, MAX_AUTO_TP)) if e % t == 0]
        for t in tps:
            groups = e // t
            per_group = -(-(batch or 1) // groups)
            mem = _memory(
                model=model, task="inference", precision=precision, gpu=spec, tp=t, pp=pp, ep=groups,
                batch=per_group, seq_len=context_len, kv_precision=kv_precision, engine=engine,
                allow_fallback=allow_fallback,
            )  # fmt: skip
            conc = 0
            if mem.fits:
                conc = groups * _concurrency(
                    model=model, gpu=spec, precision=precision, tp=t, pp=pp, context_len=context_len,
                    kv_precision=kv_precision, engine=engine, allow_fallback=allow_fallback, ep=groups,
                )  # fmt: skip
            lay = InferenceLayout(tp=t, pp=pp, memory=mem, max_concurrency=conc, ep=e)
            if (mem.fits and conc >= groups) or (ep is not None and tp is not None):
                out.append(lay)
            elif ep is not None and not out and t == tps[-1]:
                out.append(lay)  # the caller asked for this EP degree: report it even when it does not fit
    return out


__all__ = [
    "NO_TP_STACKS",
    "NO_TP_TASKS",
    "USEFUL_CONCURRENCY",
    "InferenceLayout",
    "LayoutKey",
    "TrainingLayout",
    "choose_inference_layout",
    "ep_inference_layouts",
    "layout_memory",
    "tp_candidates",
    "training_layout_keys",
    "training_layouts",
]
