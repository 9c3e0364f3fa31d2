"""CANNOT FIT: why nothing holds the workload, and what would (each suggestion with its numbers).

Each suggestion is a re-run of the candidate engine on a changed workload (lower precision, more nodes, the
whole catalog's larger-memory GPUs, LoRA/QLoRA instead of a full fine-tune), so its memory figure and example
offer come from the same estimator as the main answer.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np

from gpufleet.catalog.offers import OfferTable
from gpufleet.catalog.specs import load_specs
from gpufleet.cost.spot import SpotAssumption
from gpufleet.recommend.candidates import build_candidates, cached_configs, eligible_mask
from gpufleet.recommend.perf import Config, Estimator, unique_shapes
from gpufleet.recommend.types import CannotFit, FitSuggestion, Workload

#: lower precisions tried, in order, for each starting precision (inference: weight quantisation)
_LOWER_INFERENCE = {
    "fp32": ("bf16", "fp8", "int4"),
    "tf32": ("bf16", "fp8", "int4"),
    "fp16": ("fp8", "int8", "int4"),
    "bf16": ("fp8", "int8", "int4"),
    "fp8": ("int4", "fp4"),
    "int8": ("int4",),
}
_LOWER_TRAINING = {"fp32": ("bf16",), "tf32": ("bf16",), "fp16": ("fp8",), "bf16": ("fp8",)}
#: the most nodes tried by the "more GPUs" suggestion [count]
MAX_NODES_SUGGESTED = 32


def _cheapest(
    table: OfferTable, w: Workload, est: Estimator, spot: dict[str, SpotAssumption]
) -> tuple[str, float] | None:
    """(offer description, memory per GPU) of the cheapest fitting candidate of ``w``, if any."""
    cs = build_candidates(table, w, est, spot)
    if len(cs) == 0:
        return None
    cost = cs.cost_usd_per_run if w.is_training else cs.cost_usd_per_month
    row = int(np.nanargmin(cost))
    o = int(cs.offer[row])
    cfg = cs.configs[int(cs.cfg[row])]
    t = cs.table
    desc = (
        f"{t.column('provider')[o]} {t.column('instance_type')[o]} ({t.column('region')[o]}), "
        f"{int(cs.total_nodes[row])} node(s) x {cfg.gpus_per_node} {cfg.gpu}, TP {cfg.tp} PP {cfg.pp}, "
        f"${float(cost[row]):,.0f}{'/run' if w.is_training else '/month'}"
    )
    return desc, cfg.mem_per_gpu_gib


def _tried_configs(table: OfferTable, w: Workload, est: Estimator) -> list[Config]:
    m = eligible_mask(table, w)
    shapes = unique_shapes(list(table.column("gpu")[m]), list(table.column("gpu_count")[m]))
    return [c for gpu, g in shapes for c in cached_configs(est, w, gpu, g)]


def _tuning(w: Workload) -> str:
    """``, recipe hf_trainer, optimizer adamw8bit`` for the settings that sized a fine-tune, else ''."""
    return "".join(f", {n} {getattr(w, n)}" for n in ("recipe", "optimizer") if getattr(w, n) is not None)


def _precision_refused(table: OfferTable, w: Workload) -> tuple[list[str], str]:
    """(GPU ids among the eligible offers that cannot compute ``w.precision``, the first refusal's reason)."""
    from gpufleet.errors import UnsupportedError
    from gpufleet.estimate.support import precision_support

    specs = load_specs()
    refused: list[str] = []
    why = ""
    for gpu in sorted({str(g) for g in table.column("gpu")[eligible_mask(table, w)]}):
        if gpu not in specs:
            continue
        try:
            precision_support(specs[gpu], w.precision, allow_fallback=w.allow_fallback)
        except UnsupportedError as exc:
            refused.append(gpu)
            why = why or str(exc)
    return refused, why


def _precision_reason(table: OfferTable, w: Workload) -> str | None:
    """Why nothing was even tried when no eligible GPU computes the precision (bf16 on a T4, fp8 on an A100
    without ``allow_fallback``), else None. Before, such an ask read "needs about 0.0 GiB on a single GPU"."""
    refused, why = _precision_refused(table, w)
    m = eligible_mask(table, w)
    gpus = {str(g) for g in table.column("gpu")[m]}
    if not refused or len(refused) < len(gpus):
        return None
    shown = ", ".join(refused[:6]) + (f" and {len(refused) - 6} more" if len(refused) > 6 else "")
    return (
        f"no GPU among the offers considered ({shown}) computes {w.precision}: {why} A lower precision the "
        "GPUs run, if any, is suggested below."
    )


def _weights_and_one_sequence_gib(table: OfferTable, w: Workload) -> float:
    """Memory of one replica of ``w`` on one of the eligible GPUs (as if it computed the precision): the
    figure a CANNOT FIT for an unsupported precision shows instead of nothing; 0 where even that fails."""
    from gpufleet.errors import GpufleetError
    from gpufleet.estimate.memory import estimate_memory

    gpus = sorted({str(g) for g in table.column("gpu")[eligible_mask(table, w)]})
    for gpu in gpus:
        try:
            seq = w.input_len_tokens + w.output_len_tokens
            mem = estimate_memory(
                model=w.model,
                task="inference",
                precision=w.precision,
                gpu=gpu,
                seq_len=seq,
                allow_fallback=True,
            )
        except GpufleetError:
            continue
        return mem.per_gpu_gib
    return 0.0


def analyse_cannot_fit(
    table: OfferTable, w: Workload, est: Estimator, spot: dict[str, SpotAssumption], full_table: OfferTable
) -> CannotFit:
    """Explain a workload no eligible offer holds; ``full_table`` is the unfiltered catalog."""
    configs = _tried_configs(table, w, est)
    single = [c.mem_per_gpu_gib for c in configs if c.gpus_per_replica == 1 and c.nodes_per_unit == 1]
    need_1 = (
        max(single)
        if single
        else (max((c.mem_per_gpu_gib * c.gpus_per_replica for c in configs), default=0.0))
    )
    m = eligible_mask(table, w)
    mem = table.column("gpu_memory_gib")[m]
    cnt = table.column("gpu_count")[m]
    largest_gpu = float(mem.max()) if mem.size else 0.0
    largest_node = float((mem * cnt).max()) if mem.size else 0.0
    best_try = min(configs, key=lambda c: c.mem_per_gpu_gib / max(c.mem_capacity_gib, 1e-9), default=None)
    unsupported = _precision_reason(table, w) if not configs else None
    if unsupported is not None and not w.is_training:
        need_1 = _weights_and_one_sequence_gib(table, w)
    what = f"{w.model} ({w.task}, {w.precision}{_tuning(w)})"
    reason = (
        f"{what}: {unsupported}"
        if unsupported is not None
        else f"{what} needs about {need_1:,.1f} GiB on a single GPU. "
        f"The largest GPU among the offers considered has {largest_gpu:,.1f} GiB and the largest node "
        f"{largest_node:,.1f} GiB in total, up to {w.max_nodes} node(s) per replica."
    )
    if best_try is not None:
        reason += (
            f" The closest placement, {best_try.nodes_per_unit} node(s) of {best_try.gpus_per_node} x "
            f"{best_try.gpu} at TP {best_try.tp} PP {best_try.pp}, needs {best_try.mem_per_gpu_gib:,.1f} GiB "
            f"per GPU of {best_try.mem_capacity_gib:,.1f} GiB."
        )
    out: list[FitSuggestion] = []
    lower = (_LOWER_TRAINING if w.is_training else _LOWER_INFERENCE).get(w.precision, ())
    for p in lower:
        hit = _cheapest(table, dataclasses.replace(w, precision=p), est, spot)
        if hit:
            out.append(
                FitSuggestion(
                    kind="lower_precision",
                    description=f"Use {p} instead of {w.precision}: "
                    f"{hit[1]:,.1f} GiB per GPU; e.g. {hit[0]}.",
                    mem_per_gpu_gib=hit[1],
                    example_offer=hit[0],
                )
            )
            break
    if w.max_nodes < MAX_NODES_SUGGESTED:
        hit = _cheapest(table, dataclasses.replace(w, max_nodes=MAX_NODES_SUGGESTED), est, spot)
        if hit:
            out.append(
                FitSuggestion(
                    kind="more_gpus",
                    description=f"Allow up to {MAX_NODES_SUGGESTED} nodes "
                    f"(TP within a node, PP across nodes): {hit[1]:,.1f} GiB per GPU; e.g. {hit[0]}.",
                    mem_per_gpu_gib=hit[1],
                    example_offer=hit[0],
                )
            )
    if len(full_table) != len(table) or w.providers or w.regions or w.gpu_vendors:
        wide = dataclasses.replace(w, providers=(), regions=(), gpu_vendors=())
        hit = _cheapest(full_table, wide, est, spot)
        if hit:
            out.append(
                FitSuggestion(
                    kind="more_memory_gpu",
                    description="Drop the provider/region/vendor filters "
                    f"to reach GPUs with more memory: {hit[1]:,.1f} GiB per GPU; e.g. {hit[0]}.",
                    mem_per_gpu_gib=hit[1],
                    example_offer=hit[0],
                )
            )
    if w.task == "full_finetune":
        for task, prec in (("lora", w.precision), ("qlora", "nf4")):
            hit = _cheapest(table, dataclasses.replace(w, task=task, precision=prec), est, spot)
            if hit:
                kind: Literal["lora", "qlora"] = "lora" if task == "lora" else "qlora"
                out.append(
                    FitSuggestion(
                        kind=kind,
                        description=f"Fine-tune with {task.upper()} ({prec} base "
                        f"weights) instead of a full fine-tune: {hit[1]:,.1f} GiB per GPU; e.g. "
                        f"{hit[0]}.",
                        mem_per_gpu_gib=hit[1],
                        example_offer=hit[0],
                    )
                )
                break
    if not out:
        reason += " No lower precision, larger node count or LoRA/QLoRA variant fits the catalog either."
    return CannotFit(
        mem_needed_single_gpu_gib=need_1,
        largest_gpu_memory_gib=largest_gpu,
        largest_node_memory_gib=largest_node,
        reason=reason,
        suggestions=tuple(out),
    )
