"""Rich tables for `gpufleet estimate`: memory breakdown, inference and training estimates, planning matrices.

Pure formatting over the estimator's result types; times shown in ms or h, rates in tokens/s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gpufleet.cli.validate_render import fmt_num
from gpufleet.estimate.types import Interval
from gpufleet.units import MS_PER_S, SECONDS_PER_HOUR

if TYPE_CHECKING:
    from rich.table import Table

    from gpufleet.estimate.memory import MemoryEstimate
    from gpufleet.estimate.performance import InferenceEstimate, TrainingEstimate

DOES_NOT_FIT = "does not fit"
UNSUPPORTED = "unsupported"


def fmt_interval(iv: Interval | None, factor: float = 1.0, unit: str = "") -> str:
    """``central (p10–p90) unit`` after multiplying by ``factor``; a dash for None."""
    if iv is None:
        return "—"
    s = iv.scaled(factor)
    tail = f" {unit}" if unit else ""
    return f"{fmt_num(s.central)} ({fmt_num(s.p10, 3)}–{fmt_num(s.p90, 3)}){tail}"


def memory_table(mem: MemoryEstimate, title: str) -> Table:
    from rich.table import Table

    t = Table(title=title, title_justify="left", min_width=min(len(title), 110))
    t.add_column("memory per GPU")
    t.add_column("GiB", justify="right")
    if mem.optimizer is not None:  # training tasks
        t.add_row("optimizer (fine-tuning recipe)", optimizer_label(mem.optimizer, mem.recipe))
    for name, gib in mem.breakdown_gib.items():
        t.add_row(name, f"{gib:,.2f}")
    t.add_row("[bold]needed (nvidia-smi view)[/]", f"[bold]{mem.per_gpu_gib:,.2f}[/]")
    t.add_row("allocated (torch max_memory_allocated view)", f"{mem.allocated_gib:,.2f}")
    paged = mem.breakdown_gib.get("optimizer_states_paged", 0.0)
    t.add_row(
        "needed at p90 of the estimate (verdict" + ("; paged states left out" if paged else "") + ")",
        f"{mem.per_gpu_gib_p90 - paged:,.2f}",
    )
    t.add_row("most the verdict allows (same view)", f"{mem.fit_limit_gib:,.2f}")
    t.add_row("device capacity", f"{mem.capacity_gib:,.2f}")
    verdict = "[green]fits at p90[/]" if mem.fits else f"[red]{DOES_NOT_FIT}[/] (at p90)"
    t.add_row("[bold]verdict[/]", verdict)
    return t


def optimizer_label(optimizer: str, recipe: str | None) -> str:
    """``paged_adamw8bit (recipe torchtune)``, or ``adamw (no recipe)``."""
    return f"{optimizer} ({f'recipe {recipe}' if recipe else 'no recipe'})"


def notes_table(notes: Sequence[str], title: str = "Notes and assumptions") -> Table:
    from rich.table import Table

    t = Table(title=title, title_justify="left", show_header=False)
    t.add_column("note")
    for n in notes:
        t.add_row(f"• {n}")
    return t


def _estimate_table(title: str) -> Table:
    """An empty two-column table: quantity, and its estimate with the p10–p90 interval."""
    from rich.table import Table

    t = Table(title=title, title_justify="left", min_width=min(len(title), 110))
    t.add_column("quantity")
    t.add_column("estimate (p10–p90)", justify="right")
    return t


def inference_table(est: InferenceEstimate, title: str) -> Table:
    t = _estimate_table(title)
    if est.ep > 1:
        par = f"EP {est.ep} (attention TP {est.tp} × DP {est.attention_dp}) × PP {est.pp}"
    else:
        par = f"TP {est.tp} × PP {est.pp}"
    t.add_row("parallelism", f"{par}, {est.replicas} replica(s) of {est.gpus_per_replica} GPU(s)")
    t.add_row(
        "batch per replica", f"{est.batch_per_replica} (max by KV cache {est.max_concurrency_per_replica})"
    )
    if not est.fits:
        t.add_row("[bold]verdict[/]", f"[red]{DOES_NOT_FIT}[/]")
        return t
    t.add_row("TTFT", fmt_interval(est.ttft_s, MS_PER_S, "ms"))
    loaded = est.tpot_loaded_s
    if loaded is not None and est.tpot_s is not None and loaded.central > est.tpot_s.central * 1.005:
        # what a request sees while the others' prompts join the batch (benchmark_serving's TPOT), and the
        # bare decode step it is built on
        t.add_row("TPOT at this concurrency", fmt_interval(loaded, MS_PER_S, "ms"))
        t.add_row("TPOT, decode step alone", fmt_interval(est.tpot_s, MS_PER_S, "ms"))
    else:
        t.add_row("TPOT", fmt_interval(est.tpot_s, MS_PER_S, "ms"))
    t.add_row("output tokens/s (system)", fmt_interval(est.output_tokens_per_s, 1.0, "tok/s"))
    t.add_row("requests/s (system)", fmt_interval(est.requests_per_s, 1.0, "req/s"))
    return t


def training_table(est: TrainingEstimate, title: str) -> Table:
    t = _estimate_table(title)
    ep = f" (EP {est.ep} within DP)" if est.ep > 1 else ""
    t.add_row("parallelism", f"TP {est.tp} × PP {est.pp} × DP {est.dp}{ep}")
    t.add_row("optimizer (fine-tuning recipe)", optimizer_label(est.optimizer, est.recipe))
    if not est.fits:
        t.add_row("[bold]verdict[/]", f"[red]{DOES_NOT_FIT}[/]")
        return t
    t.add_row("step time", fmt_interval(est.step_time_s, 1.0, "s"))
    t.add_row("tokens/s per GPU", fmt_interval(est.tokens_per_s_per_gpu, 1.0, "tok/s/gpu"))
    t.add_row("tokens/s (system)", fmt_interval(est.tokens_per_s, 1.0, "tok/s"))
    t.add_row("MFU", "—" if est.mfu is None else f"{100 * est.mfu:.1f}%")
    t.add_row("time to train", fmt_interval(est.time_to_train_s, 1.0 / SECONDS_PER_HOUR, "h"))
    t.add_row("GPU-hours", fmt_interval(est.gpu_hours, 1.0, "GPU·h"))
    return t


def grid_table(
    title: str, corner: str, columns: Sequence[str], rows: Sequence[tuple[str, list[str]]]
) -> Table:
    """A planning matrix: one row label and one cell per column."""
    from rich.table import Table

    t = Table(title=title, title_justify="left", min_width=min(len(title), 110))
    t.add_column(corner)
    for c in columns:
        t.add_column(c, justify="right")
    for label, cells in rows:
        t.add_row(label, *cells)
    return t
