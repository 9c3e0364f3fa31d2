"""`gpufleet estimate matrix`: the planning tables teams write by hand, one cell per model × GPU.

- train: tokens/s (system) and wall-clock hours per 100M tokens on ``--gpu-count`` GPUs;
- infer: TTFT, TPOT and requests/s at ``--batch`` concurrent requests, on the smallest of 1, 2, 4, 8 GPUs that
  holds the model (or exactly ``--gpu-count``);
- memory: GiB per GPU needed at fp32, bf16, fp8, int8 and int4 (inference, one GPU, ``--batch`` × context);
  a weight format the GPU can only hold weight-only (fp8 on Ampere) is sized and marked "(weight-only)".

A combination that does not fit is marked "does not fit", a precision the GPU cannot run "unsupported"; any
other refusal by the estimator is shown in the cell. Unknown models or GPUs fail before anything is estimated.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpufleet.cli.console import console
from gpufleet.cli.estimate_args import gpu_arg, model_arg, require_positive
from gpufleet.cli.estimate_render import DOES_NOT_FIT, UNSUPPORTED, grid_table
from gpufleet.cli.given import reject_ignored
from gpufleet.cli.profile_option import ProfileOption, load_profile_option
from gpufleet.cli.validate_render import fmt_num
from gpufleet.errors import InfeasibleError, InputError, UnknownNameError, UnsupportedError
from gpufleet.precision import check_precision
from gpufleet.units import MS_PER_S, SECONDS_PER_HOUR

if TYPE_CHECKING:
    from gpufleet.catalog.specs import AcceleratorSpec
    from gpufleet.models.arch import ModelArch

MEMORY_PRECISIONS: tuple[str, ...] = ("fp32", "bf16", "fp8", "int8", "int4")
INFER_GPU_COUNTS: tuple[int, ...] = (1, 2, 4, 8)
TOKENS_PER_PLAN = 1e8  # hours are quoted per 100M tokens [tokens]


class Mode(StrEnum):
    train = "train"
    infer = "infer"
    memory = "memory"
    all = "all"


class MatrixFormat(StrEnum):
    table = "table"
    markdown = "markdown"
    json = "json"


#: one cell: its table text and its values for JSON (``status`` ok, does_not_fit, unsupported or n/a, then
#: numbers with units in their names)
Cell = tuple[str, dict[str, Any]]
Grid = tuple[str, str, list[str], list[tuple[str, list[Cell]]]]  # title, corner, columns, rows


def _split(value: str, flag: str) -> list[str]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise InputError(
            f"{flag} is empty. Pass a comma-separated list, for example {flag} llama-3.1-8b,mixtral."
        )
    return items


def _no_repeats(flag: str, given: list[str], ids: list[str]) -> None:
    """Refuse two names of ``flag`` that resolve to one model or GPU (its row or column would repeat)."""
    first: dict[str, str] = {}
    for name, ident in zip(given, ids, strict=True):
        if ident in first:
            raise InputError(
                f"{flag} names {ident} twice ({first[ident]!r} and {name!r}), so its row or column would "
                f"repeat. Give each {'model' if flag == '--models' else 'GPU'} once."
            )
        first[ident] = name


def _cell(fn: Callable[[], Cell]) -> Cell:
    """Run one estimate; refusals of this combination become the cell text (data/profile errors propagate)."""
    try:
        return fn()
    except UnsupportedError as exc:
        # say why, as the single estimate does (T4: "no hardware support for bf16 compute"): a bare
        # "unsupported" leaves the engineer guessing whether the model, the precision or the GPU is the issue
        reason = str(exc).split(". ")[0]
        return f"{UNSUPPORTED}: {reason}", {"status": "unsupported", "reason": reason}
    except (InputError, InfeasibleError) as exc:
        reason = str(exc).split(". ")[0]
        return "n/a: " + reason, {"status": "n/a", "reason": reason}


_NO_FIT: Cell = (DOES_NOT_FIT, {"status": "does_not_fit"})


def _train_grid(models: list[ModelArch], gpus: list[AcceleratorSpec], o: dict[str, Any]) -> Grid:
    from gpufleet.estimate.performance import estimate_training

    def one(arch: ModelArch, spec: AcceleratorSpec) -> Cell:
        est = estimate_training(
            model=arch, task=o["task"], gpu=spec, precision=o["precision"], gpu_count=o["gpu_count"] or 8,
            global_batch=o["global_batch"], seq_len=o["seq_len"], profile=o["profile"],
        )  # fmt: skip
        if not est.fits or est.tokens_per_s is None:
            return _NO_FIT
        tps = est.tokens_per_s.central
        hours = TOKENS_PER_PLAN / tps / SECONDS_PER_HOUR
        values = {"status": "ok", "tokens_per_s": tps, "hours_per_100m_tokens": hours}
        return f"{fmt_num(tps, 3)} tok/s · {fmt_num(hours, 3)} h/100M", values

    rows = [(m.id, [_cell(partial(one, m, g)) for g in gpus]) for m in models]
    title = (
        f"Training ({o['task']}, {o['precision']}, {o['gpu_count'] or 8} GPUs, "
        f"global batch {o['global_batch']} × {o['seq_len']}): tokens/s, wall-clock hours per 100M tokens"
    )
    return title, "model", [g.id for g in gpus], rows


def _infer_grid(models: list[ModelArch], gpus: list[AcceleratorSpec], o: dict[str, Any]) -> Grid:
    from gpufleet.estimate.performance import estimate_inference

    counts = (o["gpu_count"],) if o["gpu_count"] else INFER_GPU_COUNTS

    def one(arch: ModelArch, spec: AcceleratorSpec) -> Cell:
        for n in counts:
            est = estimate_inference(
                model=arch, gpu=spec, precision=o["precision"], input_len=o["input_len"],
                output_len=o["output_len"], gpu_count=n, batch=o["batch"], profile=o["profile"],
            )  # fmt: skip
            if est.fits and est.ttft_s and est.tpot_s and est.requests_per_s:
                # the TPOT a request sees at --batch (prompts of joining requests included), as req/s is
                tpot = est.tpot_loaded_s or est.tpot_s
                ttft_ms, tpot_ms = est.ttft_s.central * MS_PER_S, tpot.central * MS_PER_S
                rps = est.requests_per_s.central
                text = (
                    f"{n}× TP{est.tp}: TTFT {fmt_num(ttft_ms, 3)} ms · TPOT {fmt_num(tpot_ms, 3)} ms · "
                    f"{fmt_num(rps, 3)} req/s"
                )
                values = {"status": "ok", "gpu_count": n, "tp": est.tp, "ttft_ms": ttft_ms,
                          "tpot_ms": tpot_ms, "requests_per_s": rps}  # fmt: skip
                return text, values
        return _NO_FIT

    rows = [(m.id, [_cell(partial(one, m, g)) for g in gpus]) for m in models]
    title = (
        f"Inference ({o['precision']}, batch {o['batch']}, {o['input_len']} in / {o['output_len']} out "
        "tokens): TTFT, TPOT, requests/s"
    )
    return title, "model", [g.id for g in gpus], rows


def _memory_grid(models: list[ModelArch], gpus: list[AcceleratorSpec], o: dict[str, Any]) -> Grid:
    from gpufleet.estimate.memory import estimate_memory
    from gpufleet.estimate.support import precision_support

    seq = o["input_len"] + o["output_len"]

    def one(arch: ModelArch, spec: AcceleratorSpec, prec: str) -> Cell:
        # sizing a weight format the GPU cannot compute in is still meaningful when a weight-only kernel
        # exists (fp8 weights on Ampere); the cell says so. Formats with no kernel at all stay "unsupported".
        mem = estimate_memory(
            model=arch, task="inference", precision=prec, gpu=spec, batch=o["batch"], seq_len=seq,
            allow_fallback=True,
        )  # fmt: skip
        text = f"{mem.per_gpu_gib:,.1f} GiB"
        values: dict[str, Any] = {"status": "ok" if mem.fits else "does_not_fit",
                                  "mem_per_gpu_gib": mem.per_gpu_gib, "fallback": None}  # fmt: skip
        if precision_support(spec, prec, allow_fallback=True).fallback:
            values["fallback"] = "weight-only" if prec in ("fp8", "fp4", "int8", "int4") else "fp16 compute"
            text += f" ({values['fallback']})"
        return (text if mem.fits else f"{text} ({DOES_NOT_FIT})"), values

    rows = [
        (f"{m.id} on {g.id}", [_cell(partial(one, m, g, p)) for p in MEMORY_PRECISIONS])
        for m in models
        for g in gpus
    ]
    title = f"Inference memory per GPU on one GPU (batch {o['batch']} × {seq} tokens), by weight precision"
    return title, "model on GPU", list(MEMORY_PRECISIONS), rows


def _texts(grid: Grid) -> tuple[str, str, list[str], list[tuple[str, list[str]]]]:
    """The grid with each cell's table text only."""
    title, corner, cols, rows = grid
    return title, corner, cols, [(label, [text for text, _ in cells]) for label, cells in rows]


def _markdown(grid: tuple[str, str, list[str], list[tuple[str, list[str]]]]) -> str:
    title, corner, cols, rows = grid
    lines = [f"**{title}**", "", "| " + " | ".join([corner, *cols]) + " |", "|" + "---|" * (len(cols) + 1)]
    lines += ["| " + " | ".join([label, *cells]) + " |" for label, cells in rows]
    return "\n".join(lines) + "\n"


#: the options each grid reads (an option no chosen grid reads is an error, not silently dropped)
_MODE_OPTIONS: dict[Mode, tuple[str, ...]] = {
    Mode.train: ("task", "precision", "gpu_count", "global_batch", "seq_len"),
    Mode.infer: ("precision", "gpu_count", "batch", "input_len", "output_len"),
    Mode.memory: ("batch", "input_len", "output_len"),
}


def matrix(
    models: Annotated[
        list[str],
        typer.Option("--models", help="Model ids/aliases/size classes (comma-separated or repeatable)."),
    ],
    gpus: Annotated[
        list[str], typer.Option("--gpus", help="Accelerator ids or aliases (comma-separated or repeatable).")
    ],
    mode: Annotated[Mode, typer.Option(help="train, infer, memory or all.")] = Mode.all,
    precision: Annotated[str, typer.Option(help="Precision for train and infer.")] = "bf16",
    task: Annotated[
        str, typer.Option(help="Training task: pretrain, full_finetune, lora, qlora.")
    ] = "pretrain",
    gpu_count: Annotated[
        int | None, typer.Option(help="GPUs per job (default: train 8, infer smallest fit).")
    ] = None,
    global_batch: Annotated[int, typer.Option(help="Training global batch (sequences).")] = 256,
    seq_len: Annotated[int, typer.Option(help="Training sequence length (tokens).")] = 4096,
    batch: Annotated[int, typer.Option(help="Inference concurrent requests per replica.")] = 8,
    input_len: Annotated[int, typer.Option(help="Inference prompt tokens.")] = 1024,
    output_len: Annotated[int, typer.Option(help="Inference generated tokens.")] = 256,
    profile: ProfileOption = None,
    output_format: Annotated[MatrixFormat, typer.Option("--format", "-f")] = MatrixFormat.table,
) -> None:
    """Planning tables per model × GPU: training tokens/s, inference latency and memory by precision."""
    require_positive(
        gpu_count=gpu_count, global_batch=global_batch, seq_len=seq_len, batch=batch, input_len=input_len,
        output_len=output_len,
    )  # fmt: skip
    from gpufleet.estimate.types import TRAINING_TASKS

    if task not in TRAINING_TASKS:
        raise UnknownNameError("training task", task, TRAINING_TASKS, hint="(--task of the training grid)")
    for flag, given in (("--models", models), ("--gpus", gpus)):
        blank = [v for v in given if not v.strip(" ,\t")]
        if blank and len(given) > 1:  # `--gpus h100 --gpus ""` dropped the blank one silently
            raise InputError(
                f"{flag} is given {len(given)} times and {blank[0]!r} names nothing. Give each {flag} a "
                f"name (or a comma-separated list), or remove the empty one."
            )
    names, gpu_names = _split(",".join(models), "--models"), _split(",".join(gpus), "--gpus")
    archs = [model_arg(n) for n in names]
    specs = [gpu_arg(g) for g in gpu_names]
    _no_repeats("--models", names, [a.id for a in archs])
    _no_repeats("--gpus", gpu_names, [s.id for s in specs])
    opts: dict[str, Any] = {
        "precision": check_precision(precision), "task": task, "gpu_count": gpu_count,
        "global_batch": global_batch, "seq_len": seq_len, "batch": batch, "input_len": input_len,
        "output_len": output_len, "profile": load_profile_option(profile),
    }  # fmt: skip
    builders = {Mode.train: _train_grid, Mode.infer: _infer_grid, Mode.memory: _memory_grid}
    chosen = list(builders) if mode is Mode.all else [mode]
    used = {name for m in chosen for name in _MODE_OPTIONS[m]}
    reject_ignored(
        sorted(set().union(*_MODE_OPTIONS.values()) - used),
        why=f"with --mode {mode.value}",
        fix="Leave those options out, or pick the --mode whose table they set (train: --task --precision "
        "--gpu-count --global-batch --seq-len; infer: --precision --gpu-count --batch --input-len "
        "--output-len; memory: --batch --input-len --output-len; all: every one).",
    )
    grids = [builders[m](archs, specs, opts) for m in chosen]
    if output_format is MatrixFormat.json:
        from gpufleet.report.json_report import dump_json, envelope

        doc = [
            {"mode": m.value, "title": t, "corner": c, "columns": cols,
             "rows": [{"label": lbl, "cells": [{"column": col, "text": text, **values}
                                               for col, (text, values) in zip(cols, cells, strict=True)]}
                      for lbl, cells in rows]}
            for m, (t, c, cols, rows) in zip(chosen, grids, strict=True)
        ]  # fmt: skip
        typer.echo(dump_json(envelope("estimate_matrix", grids=doc)), nl=False)
    elif output_format is MatrixFormat.markdown:
        typer.echo("\n".join(_markdown(_texts(g)) for g in grids), nl=False)
    else:
        for g in grids:
            console.print(grid_table(*_texts(g)))
