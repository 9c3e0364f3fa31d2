"""What makes a training job fit: the recompute / ZeRO options ``estimate train`` relaxes, tried in its order.

``estimate memory`` answers for the options given; when the answer is "does not fit", :func:`fitting_option`
tries the same passes as the training layout search (:func:`gpufleet.estimate.parallelism.training_layouts`:
selective recompute with ZeRO-1, then ZeRO-3/FSDP, then full recompute) at the given TP/PP/DP and batch, and
returns the first that fits, so the verdict can say which option ``estimate train`` would pick.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from gpufleet.estimate.memory import MemoryEstimate, estimate_memory
from gpufleet.estimate.types import FINE_TUNING_TASKS

#: (recompute, ZeRO stage) in the order the training layout search relaxes them
RELAXATIONS: tuple[tuple[str, int], ...] = (("selective", 1), ("selective", 3), ("full", 1), ("full", 3))


@dataclass(frozen=True, slots=True, kw_only=True)
class FittingOption:
    """An option set under which the job fits, with its memory."""

    recompute: str
    zero_stage: int
    memory: MemoryEstimate

    @property
    def description(self) -> str:
        zero = f", ZeRO-{self.zero_stage}" if self.zero_stage else ""
        return (
            f"fits with {self.recompute} recompute{zero}: {self.memory.per_gpu_gib:.1f} GiB of "
            f"{self.memory.capacity_gib:.1f} GiB (what `gpufleet estimate train` picks)"
        )


def fitting_option(
    *, task: str, recompute: str, zero_stage: int, dp: int, **kwargs: Any
) -> FittingOption | None:
    """The first relaxation (module doc) that fits, other than the options given; None when none does or
    the task is not training. ``kwargs`` are the other :func:`estimate_memory` arguments."""
    if task in ("inference", "load"):
        return None
    for rc, zs in RELAXATIONS:
        z = max(zs, zero_stage) if dp > 1 else zero_stage  # ZeRO shards over data-parallel ranks only
        if (rc, z) == (recompute, zero_stage):
            continue
        mem = estimate_memory(task=task, recompute=rc, zero_stage=z, dp=dp, **kwargs)
        if mem.fits:
            return FittingOption(recompute=rc, zero_stage=z, memory=mem)
    return None


#: how far the scale-out hint looks: up to 64x the data-parallel ranks, down to 256-token sequences
MAX_DP_FACTOR = 64
MIN_HINT_SEQ_LEN = 256


#: a job's fine-tuning choices as given (recipes.training_options: recipe, optimizer, recompute, software);
#: the hints re-resolve them at each GPU count and task they try, since a recipe's multi-GPU settings differ
Choice = Mapping[str, str | None]


def recipe_memory_kwargs(choice: Choice | None, *, task: str, gpu_count: int) -> dict[str, Any]:
    """The :func:`estimate_memory` options of ``choice`` for ``task`` on ``gpu_count`` GPUs ({} for none)."""
    if not choice:
        return {}
    from gpufleet.estimate.recipes import training_options

    return training_options(task=task, gpu_count=gpu_count, **choice).memory_kwargs()


def scale_out_hint(
    *, task: str, dp: int, zero_stage: int, seq_len: int, choice: Choice | None = None, **kwargs: Any
) -> str | None:
    """A concrete, verified way to fit a training job that no recompute / ZeRO option fits at this DP: the
    fewest data-parallel ranks (doubling) at which it fits fully sharded with full recompute, and the longest
    sequence (halving) at which it fits on the GPUs given; None when neither fits or the task is not training.

    Sharding the (frozen, 4-bit for QLoRA) base over more ranks is the FSDP/ZeRO-3 way to fit a model
    that a few GPUs cannot hold (DeepSpeed ZeRO-3 docs; Answer.AI FSDP+QLoRA 2024: 70B on 2 x 24 GB at short
    context with gradient checkpointing); a shorter sequence shrinks activations and logits linearly
    (Korthikanti et al. 2022). Each option is checked with :func:`estimate_memory`, so the hint fits when run.
    ``kwargs`` are the other :func:`estimate_memory` arguments except ``recompute`` and the fine-tuning
    options, which ``choice`` gives (resolved at each data-parallel degree tried)."""
    if task in ("inference", "load"):
        return None
    kwargs.pop("recompute", None)
    opts: list[str] = []
    mp = kwargs.get("tp", 1) * kwargs.get("pp", 1)  # model-parallel GPUs per data-parallel rank
    n = dp * 2
    while n <= dp * MAX_DP_FACTOR:
        rk = recipe_memory_kwargs(choice, task=task, gpu_count=mp * n)
        mem = estimate_memory(
            task=task, dp=n, zero_stage=3, seq_len=seq_len, recompute="full", **kwargs, **rk
        )
        if mem.fits:
            opts.append(
                f"--dp {n} --zero 3 --recompute full: {mem.per_gpu_gib:.1f} GiB of {mem.capacity_gib:.1f} GiB"
            )
            break
        n *= 2
    z = 3 if dp > 1 else zero_stage  # ZeRO shards over data-parallel ranks only
    s = seq_len // 2
    rk = recipe_memory_kwargs(choice, task=task, gpu_count=mp * dp)
    while s >= MIN_HINT_SEQ_LEN:
        mem = estimate_memory(task=task, dp=dp, zero_stage=z, seq_len=s, recompute="full", **kwargs, **rk)
        if mem.fits:
            zero = f" --zero {z}" if z else ""
            opts.append(
                f"--seq-len {s}{zero} --recompute full on these GPUs: {mem.per_gpu_gib:.1f} GiB of "
                f"{mem.capacity_gib:.1f} GiB"
            )
            break
        s //= 2
    return "fits with " + ", or with ".join(opts) if opts else None


#: the largest tensor-parallel degree the serving hint tries: one 8-GPU node (vLLM distributed-serving docs:
#: tensor parallel within a node, pipeline parallel across nodes)
MAX_HINT_TP = 8
#: lower weight precisions the serving hint tries (vLLM/TRT-LLM fp8 checkpoints; AWQ/GPTQ int4)
SERVE_LIGHTER = ("fp8", "int4")


def serving_hint(*, task: str, tp: int, precision: str, **kwargs: Any) -> str | None:
    """A verified way to fit a served (or loaded) model that does not fit: the smallest tensor-parallel
    degree (doubling, up to one node) at which it fits, and a lower weight precision that fits at the TP
    given; None when neither does. ``kwargs`` are the other :func:`estimate_memory` arguments."""
    from gpufleet.errors import GpufleetError

    def fits(t: int, p: str) -> MemoryEstimate | None:
        try:
            mem = estimate_memory(task=task, tp=t, precision=p, **kwargs)
        except GpufleetError:
            return None
        return mem if mem.fits else None

    opts: list[str] = []
    if (wider := first_doubling(tp, MAX_HINT_TP, lambda t: fits(t, precision))) is not None:
        t, m = wider
        opts.append(f"--tp {t}: {m.per_gpu_gib:.1f} GiB of {m.capacity_gib:.1f} GiB")
    if (lighter := first_fitting(lighter_precisions(precision), lambda p: fits(tp, p))) is not None:
        p, m = lighter
        opts.append(f"--precision {p} at TP {tp}: {m.per_gpu_gib:.1f} GiB of {m.capacity_gib:.1f} GiB")
    return "fits with " + ", or with ".join(opts) if opts else None


_T = TypeVar("_T")
_R = TypeVar("_R")


def first_doubling(start: int, limit: int, fits: Callable[[int], _R | None]) -> tuple[int, _R] | None:
    """The first of 2 x ``start``, 4 x ``start``, ... up to ``limit`` for which ``fits`` gives a result, with
    it; None when none does (the hints' "fewest GPUs / smallest TP that fits" search)."""
    n = start * 2
    while n <= limit:
        if (r := fits(n)) is not None:
            return n, r
        n *= 2
    return None


def first_fitting(choices: Sequence[_T], fits: Callable[[_T], _R | None]) -> tuple[_T, _R] | None:
    """The first of ``choices`` for which ``fits`` gives a result, with it; None when none does."""
    for c in choices:
        if (r := fits(c)) is not None:
            return c, r
    return None


def lighter_precisions(precision: str) -> tuple[str, ...]:
    """The serving precisions below ``precision`` the hints try (:data:`SERVE_LIGHTER`)."""
    if precision not in SERVE_LIGHTER:
        return SERVE_LIGHTER
    return SERVE_LIGHTER[SERVE_LIGHTER.index(precision) + 1 :]


#: lighter tasks to try on the same GPUs when a training task does not fit (pretraining has none: a LoRA
#: does not pretrain)
LIGHTER_TASKS: dict[str, tuple[str, ...]] = {"full_finetune": ("lora", "qlora"), "lora": ("qlora",)}
#: how far the GPU-count hints look: up to 64x the GPUs given
MAX_GPU_FACTOR = 64
#: fine-tuning recipes the hints try on the GPUs given, lowest memory first: torchtune's single-device
#: recipes (paged 8-bit AdamW, optimizer in backward, offloaded activations), unsloth's (8-bit AdamW,
#: offloaded checkpoints), the bitsandbytes low-memory recipe (recipes.RECIPES)
LIGHTER_RECIPES: tuple[str, ...] = ("torchtune", "unsloth", "bitsandbytes")


def recipe_hint(*, task: str, recompute: str, choice: Choice | None = None, **kwargs: Any) -> str | None:
    """A lower-memory fine-tuning recipe (:data:`LIGHTER_RECIPES`, other than the one chosen) under which
    the training job fits at the layout given, verified with :func:`estimate_memory`: ``--recipe NAME: X GiB
    of Y GiB``; None when none fits or the task is not training. ``kwargs``: the other
    :func:`estimate_memory` arguments except the fine-tuning options; ``choice``: the user's optimizer and
    recompute are kept (recipes.training_options); a recipe's own recompute replaces an unstated one."""
    if task not in FINE_TUNING_TASKS:  # the presets are fine-tuning recipes, not pre-training ones
        return None
    from gpufleet.errors import GpufleetError
    from gpufleet.estimate.recipes import training_options

    ch = dict(choice or {})
    gpus = kwargs.get("tp", 1) * kwargs.get("pp", 1) * kwargs.get("dp", 1)

    def fits(r: str) -> MemoryEstimate | None:
        try:
            opts = training_options(task=task, gpu_count=gpus, **(ch | {"recipe": r}))
            mem = estimate_memory(
                task=task, recompute=opts.recompute or recompute, **kwargs, **opts.memory_kwargs()
            )
        except GpufleetError:
            return None
        return mem if mem.fits else None

    found = first_fitting([r for r in LIGHTER_RECIPES if r != ch.get("recipe")], fits)
    if found is None:
        return None
    r, m = found
    return f"--recipe {r}: {_needed(m)}"


def _needed(m: MemoryEstimate) -> str:
    """``X GiB of Y GiB``, saying when paged optimizer states fill the free memory (they page to the host
    under pressure, so they never make a job not fit)."""
    paged = (
        " (paged optimizer states fill what is free)" if "optimizer_states_paged" in m.breakdown_gib else ""
    )
    return f"{m.per_gpu_gib:.1f} GiB of {m.capacity_gib:.1f} GiB{paged}"


def training_fit_hints(
    task: str, gpus: int, kw: dict[str, Any], choice: Choice | None = None
) -> tuple[str, ...]:
    """For a training job that fits no layout: the fewest GPUs (doubling) at which ``estimate_training``
    finds a fitting layout, and a lighter task that fits on the GPUs given, each verified by running the
    estimate, so the "does not fit" verdict is actionable (a practitioner scales out with FSDP/ZeRO-3 or
    Megatron TP/PP, DeepSpeed ZeRO docs and Megatron-LM README, or moves to LoRA/QLoRA, PEFT and QLoRA paper
    Dettmers et al. 2023), and a lower-memory fine-tuning recipe (:data:`LIGHTER_RECIPES`) that fits on the
    GPUs given. ``kw``: the other ``estimate_training`` arguments; the data-parallel degree is left to the
    search; ``choice``: the fine-tuning choices (recipes.training_options), resolved at each GPU count and
    task tried."""
    from gpufleet.errors import GpufleetError
    from gpufleet.estimate.performance import TrainingEstimate, estimate_training
    from gpufleet.estimate.recipes import training_options

    def fits(n: int, t: str, recipe: str | None = None) -> TrainingEstimate | None:
        ch = {**(choice or {}), **({"recipe": recipe} if recipe else {})}
        try:
            opts = training_options(task=t, gpu_count=n, **ch) if ch else None
            e = estimate_training(task=t, gpu_count=n, dp=None, options=opts, **kw)
        except GpufleetError:
            return None
        return e if e.fits else None

    out: list[str] = []
    if (more := first_doubling(gpus, gpus * MAX_GPU_FACTOR, lambda n: fits(n, task))) is not None:
        n, e = more
        out.append(
            f"Does not fit on {gpus} GPU(s); fits on {n} (--gpus {n}): TP {e.tp} x PP {e.pp} x "
            f"DP {e.dp}, ZeRO-{e.zero_stage}, {e.recompute} recompute, {e.memory.per_gpu_gib:.1f} GiB of "
            f"{e.memory.capacity_gib:.1f} GiB per GPU."
        )
    else:
        out.append(
            f"Does not fit on {gpus} GPU(s), nor on up to {gpus * MAX_GPU_FACTOR} at this batch and sequence."
        )
    if (lighter := first_fitting(LIGHTER_TASKS.get(task, ()), lambda t: fits(gpus, t))) is not None:
        t, e = lighter
        out.append(f"--task {t} fits on these {gpus} GPU(s): {e.memory.per_gpu_gib:.1f} GiB per GPU.")
    current = (choice or {}).get("recipe")
    others = [r for r in LIGHTER_RECIPES if r != current] if task in FINE_TUNING_TASKS else []
    if (light := first_fitting(others, lambda r: fits(gpus, task, r))) is not None:
        r, e = light
        out.append(f"--recipe {r} fits on these {gpus} GPU(s): {e.optimizer}, {_needed(e.memory)} per GPU.")
    return tuple(out)


def inference_fit_hints(prec: str, gpus: int, kw: dict[str, Any]) -> tuple[str, ...]:
    """For a deployment that does not fit: the fewest GPUs (doubling) at which ``estimate_inference`` finds
    a fitting layout, and a lower weight precision that fits on the GPUs given, each verified by running the
    estimate (vLLM distributed-serving docs: raise tensor_parallel_size until the weights fit; or serve a
    quantised checkpoint). ``kw``: the other ``estimate_inference`` arguments."""
    from gpufleet.errors import GpufleetError
    from gpufleet.estimate.performance import InferenceEstimate, estimate_inference

    def fits(n: int, p: str) -> InferenceEstimate | None:
        try:
            e = estimate_inference(precision=p, gpu_count=n, **kw)
        except GpufleetError:
            return None
        return e if e.fits else None

    out: list[str] = []
    if (more := first_doubling(gpus, gpus * MAX_GPU_FACTOR, lambda n: fits(n, prec))) is not None:
        n, e = more
        out.append(
            f"Does not fit on {gpus} GPU(s); fits on {n} (--gpus {n}): TP {e.tp} x PP {e.pp}, "
            f"{e.memory.per_gpu_gib:.1f} GiB of {e.memory.capacity_gib:.1f} GiB per GPU."
        )
    if (lighter := first_fitting(lighter_precisions(prec), lambda p: fits(gpus, p))) is not None:
        p, e = lighter
        out.append(f"--precision {p} fits on these {gpus} GPU(s): {e.memory.per_gpu_gib:.1f} GiB per GPU.")
    return tuple(out)


__all__ = [
    "FINE_TUNING_TASKS",
    "LIGHTER_RECIPES",
    "LIGHTER_TASKS",
    "MAX_GPU_FACTOR",
    "RELAXATIONS",
    "SERVE_LIGHTER",
    "Choice",
    "FittingOption",
    "first_doubling",
    "first_fitting",
    "fitting_option",
    "inference_fit_hints",
    "lighter_precisions",
    "recipe_hint",
    "recipe_memory_kwargs",
    "scale_out_hint",
    "serving_hint",
    "training_fit_hints",
]
