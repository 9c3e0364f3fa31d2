"""Per-case predictions: the estimator's value for one calibration case's metric, with its interval.

Where a case does not publish an input the estimator needs, a stated default is assumed and named in the
prediction's ``notes``.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpufleet.errors import GpufleetError, InputError, UnsupportedError
from gpufleet.estimate.profile import METRIC_FAMILY, CalibrationProfile, load_profile, make_interval
from gpufleet.estimate.types import TRAINING_TASKS, Interval, adapter_task
from gpufleet.models.registry import resolve_model
from gpufleet.units import MS_PER_S, SECONDS_PER_MINUTE

if TYPE_CHECKING:
    from gpufleet.estimate.cases import CalibrationCase


class CaseNotSupportedError(GpufleetError):
    """A calibration case the estimator cannot map (metric, task or inputs it cannot estimate)."""


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
    (``no recompute``, ``selective recompute``, ``full recompute``), ``static batching``, ``attention DP``
    (attention data parallel inside an expert-parallel group) and the optimizer offloaded to the host
    (``CPU offload``, ``ZeRO-Offload``), the virtual pipeline stages per rank (``VP4``, ``VPP=2``), MoE
    routing forced to balanced loads (``force-balanced``) and a token-dropping capacity factor (``capacity
    factor 1.25``); a bare
    "activation checkpointing" is left to the default choice (selective where it fits), since papers use it
    for both."""
    low = note.lower()
    hints: dict[str, Any] = {}
    zero = re.search(r"\bzero[\s_-]*(?:stage[\s_=-]*)?([0-3])\b", low)  # ZeRO-3, zero3, ZeRO stage 2
    if zero:
        hints["zero_stage"] = int(zero.group(1))
    if "fsdp" in low and not any(f"{neg} fsdp" in low for neg in ("no", "without", "w/o")):
        hints["zero_stage"] = 3
    if any(w in low for w in ("hybrid shard", "hybrid_shard", "hsdp")):
        # FSDP HYBRID_SHARD: FULL_SHARD within a node, replicated across nodes (torch.distributed.fsdp
        # ShardingStrategy docs); the node size is comms.DEFAULT_GPUS_PER_NODE
        hints["zero_stage"] = 3
        hints["hybrid_shard"] = True
    if "static batching" in low:
        hints["static_batching"] = True
    if any(
        w in low for w in ("cpu offload", "zero-offload", "zero offload", "offload_optimizer", "cpuoffload")
    ) or re.search(r"\bzero[\s_-]*(?:stage[\s_=-]*)?[0-3]?[\s_+-]*(?:cpu[\s_-]*)?offload", low):
        hints["cpu_offload"] = True
        if "fsdp" in low or any(w in low for w in ("offload_param", "offload param", "zero-infinity")):
            # FSDP's CPU offload always moves the parameters (FSDP1 CPUOffload(offload_params=True), FSDP2
            # CPUOffloadPolicy); DeepSpeed's only with offload_param (ZeRO-Infinity)
            hints["offload_params"] = True
    if any(k in low for k in ("attention dp", "attention data parallel", "dp attention", "attention_dp")):
        hints["attention_dp"] = True
    if re.search(
        r"force[sd]?[\s_-]*(?:load[\s_-]*)?balanc", low
    ):  # Megatron --moe-router-force-load-balancing
        hints["moe_routing"] = "balanced"
    cap = re.search(r"capacity[\s_-]*factor\s*(?:of\s*|=\s*|:\s*)?(\d+(?:\.\d+)?)", low)
    if cap:
        hints["moe_capacity_factor"] = float(cap.group(1))
    vp = re.search(r"\b(?:vp|vpp)\s*=?\s*(\d+)\b", low)
    if vp and int(vp.group(1)) >= 1:
        hints["virtual_stages"] = int(vp.group(1))
    negated = re.search(
        r"\b(?:no|without|w/o)\s+(?:activation\s+|gradient\s+)?(?:recompute|recomputation|checkpointing)", low
    )
    no_flash = re.search(
        r"\b(?:no|without|w/o)\s+flash[\s_-]*attn|\b(?:no|without|w/o)\s+flash[\s_-]*attention", low
    )
    if no_flash or "unfused attention" in low:
        hints["flash_attention"] = False
    elif re.search(r"flash[\s_-]*(?:attention|attn)", low):
        hints["flash_attention"] = True
    if "no recompute" in low or "no activation checkpointing" in low or negated:
        hints["recompute"] = "none"
    elif "selective recompute" in low or "selective activation recomputation" in low:
        hints["recompute"] = "selective"
    elif any(p in low for p in _FULL_RECOMPUTE_PHRASES):
        hints["recompute"] = "full"
    return hints


#: note phrases that mean full (per-layer) activation recomputation: the explicit forms; HF transformers'
#: "gradient checkpointing" (``gradient_checkpointing_enable`` wraps every decoder layer in
#: ``torch.utils.checkpoint``); Megatron-LM's "activation recomputation" without "selective" (Narayanan et
#: al. 2021 sec. 3.5: the whole layer is replayed; selective recomputation came with Korthikanti et al. 2022)
#: and its ``--recompute-granularity full`` / pre-2022 ``--checkpoint-activations`` flags. A bare "activation
#: checkpointing" stays ambiguous (LLaMA's paper uses it for saving the linear outputs, i.e. selective).
_FULL_RECOMPUTE_PHRASES: tuple[str, ...] = (
    "full recompute",
    "full activation checkpointing",
    "full activation recomputation",
    "gradient checkpointing",
    "activation recomputation",
    "recompute-granularity full",
    "recompute_granularity=full",
    "recompute_granularity: full",
    "checkpoint-activations",
    "checkpoint_activations",
)

#: stacks whose results published up to 2022 materialised the attention scores unless the case says
#: otherwise: FlashAttention (Dao et al., NeurIPS 2022) reached Megatron-LM as ``--use-flash-attn`` in 2023,
#: and DeepSpeed training ran the model's own (HF eager) attention; HF transformers' SDPA path came in late
#: 2023
PRE_2023_STACKS: frozenset[str] = frozenset({"megatron", "megatron_deepspeed", "deepspeed"})
#: of those, the stacks whose published large runs up to 2022 also replayed whole layers: Megatron-LM's
#: ``--checkpoint-activations`` (selective recomputation arrived with Korthikanti et al. 2022, "Reducing
#: Activation Recomputation in Large Transformer Models", May 2022; MT-NLG 530B, Smith et al. 2022, on
#: Megatron-DeepSpeed, still replayed whole layers); plain DeepSpeed runs may or may not checkpoint
PRE_2023_FULL_RECOMPUTE_STACKS: frozenset[str] = frozenset({"megatron", "megatron_deepspeed"})

_YEAR = re.compile(r"(?<![\d.])(20[12]\d)(?![\d.])")


def source_year(text: str) -> int | None:
    """The latest publication year (2010-2029) a case's source names ("Narayanan et al. 2021"), or None."""
    years = [int(y) for y in _YEAR.findall(text)]
    return max(years) if years else None


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
    from gpufleet.estimate import (
        performance as perf,  # lazy: the estimator loads only when a case is predicted
    )
    from gpufleet.estimate.memory import estimate_memory

    prof = profile if profile is not None else load_profile()
    if case.metric not in METRIC_FAMILY:
        raise CaseNotSupportedError(
            f"Case {case.case_id}: metric {case.metric!r} is not estimated. "
            f"Allowed: {', '.join(METRIC_FAMILY)}."
        )
    try:
        from gpufleet.catalog.specs import get_spec

        task = adapter_task(case.task, case.precision, get_spec(case.gpu).architecture)
        case = dataclasses.replace(case, task=task)  # lora on a quantised base is a QLoRA-style job
        if case.metric == "peak_memory_gib":
            pred = _predict_memory(case, prof, estimate_memory)
        elif case.metric in ("infer_output_tokens_per_s", "ttft_ms", "tpot_ms"):
            pred = _predict_inference(case, prof, perf)
        else:
            pred = _predict_training(case, prof, perf)
    except CaseNotSupportedError:
        raise
    except GpufleetError as exc:
        raise CaseNotSupportedError(f"Case {case.case_id} cannot be estimated: {exc}") from exc
    if case.software_unmodelled:
        note = (
            f"software {case.software_unmodelled!r} is not a stack the estimator models: predicted as unknown"
        )
        pred = dataclasses.replace(pred, notes=(*pred.notes, note))
    return pred


def _predict_memory(case: CalibrationCase, prof: CalibrationProfile, estimate_memory: Any) -> CasePrediction:
    engine = {"trtllm": "trtllm", "transformers": "transformers", "pytorch": "pytorch"}.get(
        (case.software or "").lower(), "vllm" if case.task == "inference" else "pytorch"
    )
    seq = round((case.input_len or 0) + (case.output_len or 0)) or (case.seq_len or 1)
    hints = note_hints(case.note)
    recipe_kw = _recipe_kwargs(case, hints) if case.task in TRAINING_TASKS else {}
    recipe_kw.pop("speed_recompute", None)
    tp, pp = case.tp or 1, case.pp or 1
    dp = case.dp or max(1, case.gpu_count // (tp * pp))
    batch = case.batch or 1
    notes: list[str] = []
    if case.task in TRAINING_TASKS and batch > 1:
        # the schema's training batch is global; memory holds one micro-batch per data-parallel rank
        micro = max(1, -(-batch // dp))
        notes.append(f"global batch {batch} over dp={dp}: micro-batch {micro} per GPU")
        batch = micro
    recompute = hints.get("recompute", recipe_kw.pop("recompute", "selective"))
    recipe_zero = recipe_kw.pop("zero_stage", None)  # the trainer's multi-GPU sharding (FSDP = 3)
    if recipe_zero is not None and dp > 1:
        hints.setdefault("zero_stage", recipe_zero)
    kw: dict[str, Any] = dict(
        model=case.model, precision=case.precision, gpu=case.gpu, tp=tp, pp=pp, batch=batch,
        seq_len=max(seq, 1), engine=engine, allow_fallback=True, cpu_offload=hints.get("cpu_offload", False),
        **recipe_kw,
    )  # fmt: skip
    if hints.get("hybrid_shard"):
        from gpufleet.estimate.comms import DEFAULT_GPUS_PER_NODE

        node = max(1, DEFAULT_GPUS_PER_NODE // (tp * pp))  # data-parallel ranks inside one node
        if dp > node and dp % node == 0:
            kw["shard_degree"] = node
    offload_params = kw.pop("offload_params", False) or hints.get("offload_params", False)
    if offload_params and kw["cpu_offload"] and hints.get("zero_stage", 0) == 3 and dp > 1:
        kw["offload_params"] = True
    mem = estimate_memory(
        task=case.task, dp=dp, zero_stage=hints.get("zero_stage", 0), recompute=recompute, **kw
    )
    stated = {k for k in ("zero_stage", "recompute") if k in hints}
    if "recompute" not in hints and _fastest_fit(case):
        # the trainer's published single-GPU rows keep the activations on the GPU where they fit
        # (recipes.Recipe.fastest_fit_single_device: torchtune's README table)
        held = estimate_memory(
            task=case.task, dp=dp, zero_stage=hints.get("zero_stage", 0), recompute="none",
            **(kw | {"offload_checkpoints": False}),
        )  # fmt: skip
        if held.fits:
            mem = held
            notes.append("recompute not stated: activations kept on the GPU, where this recipe fits them")
    if case.task in TRAINING_TASKS and not mem.fits and len(stated) < 2:
        # the job was measured, so it fit: unstated options are the first relaxation `estimate train` makes
        from gpufleet.estimate.memory_options import fitting_option

        zero = hints.get("zero_stage", 0)
        opt = fitting_option(task=case.task, recompute=recompute, zero_stage=zero, dp=dp, **kw)
        if opt is not None and all(
            getattr(opt, k) == v for k, v in (("zero_stage", zero), ("recompute", recompute)) if k in stated
        ):
            mem = opt.memory
            notes.append(
                f"{' and '.join(sorted({'zero_stage', 'recompute'} - stated))} not stated: {opt.description}"
            )
    torch_view = (case.software or "").lower() in TORCH_ALLOCATED_STACKS
    if torch_view:
        value, what = mem.allocated_gib, "torch allocated"
    elif case.task == "inference" and (case.software or "").lower() in PREALLOCATING_ENGINES:
        # vLLM and TRT-LLM size their KV pool up front, so the device shows the whole pool, not the need
        # (only when the case names that engine: an unstated stack is compared on what it needs)
        outside = sum(mem.breakdown_gib.get(k, 0.0) for k in ("cuda_context", "nccl_buffers"))
        if engine != "vllm":  # vLLM's budget excludes the context and NCCL buffers; others include NCCL
            outside = mem.breakdown_gib.get("cuda_context", 0.0)
        value = max(mem.per_gpu_gib, mem.usable_gib + outside)
        what = f"per-GPU (nvidia-smi), {engine} pre-allocated KV pool included"
    else:
        value, what = mem.per_gpu_gib, "per-GPU (nvidia-smi)"
    iv = make_interval(value, "memory", prof)
    return CasePrediction(
        predicted=value, p10=iv.p10, p90=iv.p90, notes=(f"memory compared as {what}", *notes)
    )


def _fastest_fit(case: CalibrationCase) -> bool:
    """Whether a one-GPU training case runs a recipe whose published rows keep the activations on the GPU
    wherever they fit (:attr:`gpufleet.estimate.recipes.Recipe.fastest_fit_single_device`)."""
    from gpufleet.estimate.recipes import recipe_for_job

    if case.task not in TRAINING_TASKS or case.gpu_count != 1:
        return False
    recipe = recipe_for_job(
        case.software, case.note, task=case.task, optimizer=case.optimizer, gpu_count=case.gpu_count
    )
    return recipe is not None and recipe.fastest_fit_single_device


#: the schema's optimizer names -> the memory model's
_SCHEMA_OPTIMIZER = {"adamw": "adamw", "adamw8bit": "adamw8bit", "paged_adamw8bit": "paged_adamw8bit",
                     "sgd": "sgd", "adafactor": "adafactor"}  # fmt: skip


def _recipe_kwargs(case: CalibrationCase, hints: dict[str, Any]) -> dict[str, Any]:
    """Memory-model options of a training case: its optimizer, and the named recipe's defaults
    (:mod:`gpufleet.estimate.recipes`) where the software or note names one."""
    from gpufleet.estimate.recipes import recipe_for_job, recipe_kwargs

    recipe = recipe_for_job(
        case.software, case.note, task=case.task, optimizer=case.optimizer, gpu_count=case.gpu_count
    )
    kw = {} if recipe is None else recipe_kwargs(recipe, task=case.task, gpu_count=case.gpu_count)
    if case.optimizer:
        kw["optimizer"] = _SCHEMA_OPTIMIZER[case.optimizer]
    return kw


def case_software(case: CalibrationCase) -> str | None:
    """The stack key of a training case: DeepSpeed with stated tensor or pipeline parallelism is
    Megatron-DeepSpeed (3D parallelism: Megatron kernels, DeepSpeed ZeRO), a different performance class."""
    sw = (case.software or "").lower() or None
    if sw == "deepspeed" and ((case.tp or 1) > 1 or (case.pp or 1) > 1):
        return "megatron_deepspeed"
    if sw in ("pytorch", None) and case.note:
        from gpufleet.estimate.recipes import recipe_for

        r = recipe_for(None, case.note)
        if r is not None and r.name in ("torchtune", "unsloth", "axolotl"):
            return r.name
    return sw


def _predict_inference(case: CalibrationCase, prof: CalibrationProfile, perf: Any) -> CasePrediction:
    from gpufleet.estimate.inference import LAYER_SPLIT_STACKS
    from gpufleet.estimate.rates import MAX_AUTO_TP, software_key

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
    hints = note_hints(case.note)
    ep = case.ep if case.ep and case.ep > 1 else None

    def run(b: int | None, tp: int | None, pp: int, ep_: int | None, adp: bool | None) -> Any:
        return perf.estimate_inference(
            model=case.model, gpu=case.gpu, precision=case.precision, input_len=max(round(inp), 1),
            output_len=max(round(out), 1), gpu_count=case.gpu_count, batch=b, tp=tp, pp=pp, ep=ep_,
            attention_dp=adp, software=case.software, profile=prof, allow_fallback=True, ignore_memory=True,
            static_batching=hints.get("static_batching"),
        )  # fmt: skip

    est = run(batch, case.tp, case.pp or 1, ep, hints.get("attention_dp") if ep else None)
    unstated = case.tp is None and case.pp is None and ep is None and est.ep == 1
    if batch is not None and est.replicas > 1 and unstated and case.gpu_count <= MAX_AUTO_TP:
        # a serving benchmark at a stated concurrency runs one engine instance over the GPUs it lists (vLLM
        # / TRT-LLM / SGLang ``--tensor-parallel-size N``; llama.cpp splits its layers over every visible
        # GPU), not the cheapest replicas the estimator would deploy; a TP degree the model's heads do not
        # allow keeps the replicas
        n = case.gpu_count
        split = software_key(case.software) in LAYER_SPLIT_STACKS
        try:
            wide = run(batch, 1 if split else n, n if split else 1, None, None)
        except InputError:
            wide = None
        if wide is not None and wide.replicas == 1:
            est = wide
            notes.append(f"batch stated, layout not: one engine instance over the {n} GPUs")
    scale = 1.0
    if batch is not None and est.replicas > 1:
        # the schema's inference ``batch`` is the whole system's concurrency (docs/calibration-schema.md),
        # the estimator's the concurrency of one replica: spread it over the replicas of the chosen layout
        per = -(-batch // est.replicas)
        est = run(
            per,
            est.tp,
            est.pp,
            est.ep if est.ep > 1 else None,
            (est.attention_dp > 1) if est.ep > 1 else None,
        )
        # ``batch`` sequences at ``per`` each keep batch / per replicas busy, not all of them
        scale = batch / per / est.replicas
        notes.append(
            f"{batch} concurrent sequences in all: {per} on each busy replica of tp={est.tp} pp={est.pp}"
        )
    # a TPOT measured at concurrency is what a request sees while the others come and go (closed loop):
    # the estimator's loaded TPOT (equal to the decode step at one sequence)
    tpot = est.tpot_loaded_s or est.tpot_s
    iv = {"infer_output_tokens_per_s": est.output_tokens_per_s, "ttft_ms": est.ttft_s, "tpot_ms": tpot}
    factor = 1.0 if case.metric == "infer_output_tokens_per_s" else MS_PER_S
    if case.metric == "infer_output_tokens_per_s":
        factor = scale
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


_MLPERF_ROUND = re.compile(r"(?:MLPerf Training v|training_results_v)(\d+\.\d+)", re.IGNORECASE)


def mlperf_round(text: str) -> float | None:
    """The MLPerf Training round a case's source or note names ("MLPerf Training v5.0",
    "mlcommons/training_results_v5.0"), or None."""
    m = _MLPERF_ROUND.search(text)
    return float(m.group(1)) if m else None


def mlperf_eval_factor(
    *, model: str, task: str, seq_len: int, global_batch: int, train_tokens: float, recompute: str,
    profile: CalibrationProfile, round_: float | None = None,
) -> tuple[float, str]:  # fmt: skip
    """Time-to-train multiplier for an MLPerf benchmark's evaluations inside the timed region, and a note.

    For a benchmark in :data:`~gpufleet.estimate.priors.MLPERF_EVAL_RULES` (matched on model and task, and
    on the MLPerf round ``round_`` when given, else the newest schedule):
    ``1 + n_eval x eval_samples x f / train_samples`` with ``train_samples = train_tokens / seq_len``,
    ``n_eval = floor(train_samples / every_samples) - skipped`` evaluations, and ``f`` the forward FLOPs of a
    sequence over the training step's hardware FLOPs (evaluation is forward-only: ~1/3 of a pre-training
    step, ~1/2 of a LoRA step whose frozen base computes no weight gradients; compute module). Other
    benchmarks take the flat ``mlperf_eval_overhead`` prior."""
    from gpufleet.estimate import compute as cx
    from gpufleet.estimate.priors import MLPERF_EVAL_RULES

    arch = resolve_model(model)
    rules = [r for r in MLPERF_EVAL_RULES if r.model == arch.id and r.task == task]
    if round_ is not None:
        rules = [r for r in rules if r.first_round <= round_ <= r.last_round] or rules
    for rule in sorted(rules, key=lambda r: r.first_round, reverse=True)[:1]:
        name = rule.benchmark
        train_samples = train_tokens / seq_len
        skipped = math.floor(rule.skip_per_gbs * global_batch + rule.skip_const)
        n_eval = max(math.floor(train_samples / rule.every_samples) - skipped, 0)
        fl = cx.training_flops_per_token(arch, task=task, seq_len=seq_len, recompute=recompute)
        fwd = 2.0 * cx.model_shape(arch).matmul_active_params + cx.attention_flops_per_token(
            arch, float(seq_len)
        )
        share = fwd / (fl.hw_matmul + fl.hw_attention)
        factor = 1.0 + n_eval * rule.eval_samples * share / train_samples
        return factor, (
            f"MLPerf {name}: {n_eval} evaluations of {rule.eval_samples:.0f} sequences, forward-only at "
            f"{share:.2f} of a training sequence"
        )
    return profile.param("mlperf_eval_overhead"), "MLPerf evaluation pauses, flat prior"


def _recompute_that_fits(
    case: CalibrationCase, recipe_kw: dict[str, Any], recompute: str, batch: int, seq: int
) -> tuple[str, str]:
    """``recompute``, or ``full`` when a single-GPU job fits its GPU only with full activation checkpointing
    (the memory model at the case's micro-batch, optimizer and recipe options); (mode, note or "")."""
    from gpufleet.estimate.memory import estimate_memory

    if case.gpu_count != 1:
        return recompute, ""
    kw: dict[str, Any] = {
        k: v for k, v in recipe_kw.items() if k not in ("speed_recompute", "recompute") and v is not None
    }
    common: dict[str, Any] = dict(
        model=case.model, task=case.task, precision=case.precision, gpu=case.gpu, batch=batch, seq_len=seq,
        engine="pytorch", allow_fallback=True, **kw,
    )  # fmt: skip
    if estimate_memory(recompute=recompute, **common).fits:
        return recompute, ""
    if not estimate_memory(recompute="full", **common).fits:
        return recompute, ""
    return "full", (
        f"fits one {case.gpu} only with activation checkpointing: speed with full recompute, not {recompute}"
    )


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
    software = case_software(case)
    recipe_kw = _recipe_kwargs(case, hints)
    recipe_rc = recipe_kw.get("speed_recompute") if case.gpu_count == 1 else None
    recompute = hints.get("recompute", recipe_rc)
    year = source_year(case.source) or 9999
    if recompute is None and software in PRE_2023_FULL_RECOMPUTE_STACKS and year <= 2022:
        recompute = "full"
        assumed.append(
            f"recompute not stated: full, as {software} runs published in {year} used it (selective "
            "recomputation arrived with Korthikanti et al. 2022)"
        )
    flash = hints.get("flash_attention")
    if flash is None and software in PRE_2023_STACKS and year <= 2022:
        flash = False
        assumed.append(
            f"attention scores materialised: {software} in {year} predates FlashAttention in it (Dao et al. "
            "2022; Megatron-LM --use-flash-attn, 2023)"
        )
    offloaded = recipe_kw.get("recompute") != recipe_kw.get("speed_recompute")  # activations on the host
    if recompute is not None and recompute != "full" and "recompute" not in hints and not offloaded:
        # the job ran, so it fit: a single-GPU recipe whose default keeps every activation (HF Trainer's
        # gradient_checkpointing=False) but fits only with checkpointing was run with it, which replays the
        # forward (+2N FLOPs); the memory path makes the same relaxation (memory_options.fitting_option)
        recompute, why = _recompute_that_fits(case, recipe_kw, recompute, batch, seq)
        if why:
            assumed.append(why)
    if case.dp and batch < case.dp:
        assumed.append(
            f"global batch {batch} is below the stated dp={case.dp}: taken as {case.dp} (one sequence per "
            "replica per step; time to train depends on the tokens, not the step size)"
        )
        batch = case.dp
    fallback_note = ""
    layouts = _stated_layouts(case)
    for i, (tp, pp, dp, ep) in enumerate(layouts):
        try:
            est = perf.estimate_training(
                model=case.model, task=case.task, gpu=case.gpu, precision=case.precision,
                gpu_count=case.gpu_count, global_batch=batch, seq_len=seq, train_tokens=tokens, tp=tp, pp=pp,
                dp=dp, ep=ep, zero_stage=hints.get("zero_stage"), recompute=recompute,
                software=software, profile=prof, allow_fallback=True, cp=case.cp, ignore_memory=True,
                cpu_offload=hints.get("cpu_offload", False), virtual_stages=hints.get("virtual_stages"),
                optimizer=recipe_kw.get("optimizer"), master_weights=recipe_kw.get("master_weights"),
                flash_attention=flash is not False, moe_routing=hints.get("moe_routing", "dropless"),
                moe_capacity_factor=hints.get("moe_capacity_factor"),
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
        ovh, what = mlperf_eval_factor(
            model=case.model, task=case.task, seq_len=seq, global_batch=batch,
            train_tokens=_need(case, "train_tokens", tokens), recompute=est.recompute, profile=prof,
            round_=mlperf_round(f"{case.source} {case.note}"),
        )  # fmt: skip
        notes.append(f"time-to-train x {ovh:.3f} for the benchmark's evaluations ({what})")
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


__all__ = [
    "DEFAULT_INPUT_TOKENS",
    "DEFAULT_OUTPUT_TOKENS",
    "DEFAULT_TOKENS_PER_STEP",
    "DEFAULT_TRAIN_SEQ_TOKENS",
    "PREALLOCATING_ENGINES",
    "PRE_2023_FULL_RECOMPUTE_STACKS",
    "PRE_2023_STACKS",
    "TORCH_ALLOCATED_STACKS",
    "CaseNotSupportedError",
    "CasePrediction",
    "case_software",
    "mlperf_eval_factor",
    "mlperf_round",
    "note_hints",
    "predict_case",
    "source_year",
]
