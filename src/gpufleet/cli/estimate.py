"""`gpufleet estimate memory|train|infer|matrix`: what a model needs, and how fast it runs, on a given GPU.

Every command resolves the model (id, alias, config.json path or size class) and the GPU first, so that
unknown names fail with close matches before any estimate; counts and lengths must be >= 1.
"""

from __future__ import annotations

import dataclasses
import json
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpufleet.cli.console import console
from gpufleet.cli.estimate_args import (
    fine_tuning_choice,
    gpu_arg,
    model_arg,
    require_positive,
    seq_len_within_context,
)
from gpufleet.cli.estimate_matrix import matrix
from gpufleet.cli.estimate_render import inference_table, memory_table, notes_table, training_table
from gpufleet.cli.given import given_options, reject_ignored
from gpufleet.cli.profile_option import ProfileOption, load_profile_option
from gpufleet.errors import InputError
from gpufleet.precision import check_precision
from gpufleet.validation import check_context

if TYPE_CHECKING:
    from rich.table import Table

    from gpufleet.estimate.memory_params import MemoryEstimate
    from gpufleet.estimate.performance import InferenceEstimate, TrainingEstimate

app = typer.Typer(
    help="Estimate memory, training and inference performance of a model on a GPU.", no_args_is_help=True
)
app.command("matrix")(matrix)

#: tokens per sequence when none is given: ``estimate memory`` 2,048, ``estimate train`` 4,096 (each capped
#: at the model's maximum context)
_MEMORY_SEQ_TOKENS = 2048
_TRAIN_SEQ_TOKENS = 4096


class OutFormat(StrEnum):
    table = "table"
    json = "json"


ModelOpt = Annotated[
    str, typer.Option("--model", "-m", help="Model id, alias, config.json path or size class.")
]
GpuOpt = Annotated[
    str, typer.Option("--gpu", "-g", help="Accelerator id or alias (see `gpufleet catalog gpus`).")
]
PrecisionOpt = Annotated[
    str, typer.Option("--precision", "-p", help="fp32 tf32 fp16 bf16 fp8 fp4 int8 int4 nf4.")
]
ServePrecisionOpt = Annotated[
    str | None,
    typer.Option(
        "--precision",
        "-p",
        help="fp32 tf32 fp16 bf16 fp8 fp4 int8 int4 nf4 (default bf16; serving a model published below 16 "
        "bit, FP8 DeepSeek-V3/R1 or MXFP4 gpt-oss: that format).",
    ),
]
KvOpt = Annotated[
    str | None, typer.Option("--kv-precision", help="KV-cache precision (default: as --precision).")
]
FormatOpt = Annotated[OutFormat, typer.Option("--format", "-f", help="table or json.")]
OptimizerOpt = Annotated[
    str | None,
    typer.Option(
        help="Fine-tuning optimizer: adamw adam adamw_8bit adamw8bit paged_adamw8bit adafactor sgd "
        "sgd_momentum (default: the recipe's, else adamw). Overrides the recipe's.",
    ),
]
RecipeOpt = Annotated[
    str | None,
    typer.Option(
        help="Trainer preset: torchtune hf_trainer unsloth axolotl litgpt trl bitsandbytes (its optimizer, "
        "master weights, recompute, optimizer-in-backward, chunked loss, offloading; default: generic).",
    ),
]
FallbackOpt = Annotated[
    bool,
    typer.Option(
        "--allow-fallback",
        help="Fall back visibly (bf16 -> fp16 on T4/V100, fp8 -> weight-only fp8 on A100), not fail.",
    ),
]


def _precisions(precision: str, kv_precision: str | None) -> tuple[str, str | None]:
    return check_precision(precision), None if kv_precision is None else check_precision(kv_precision)


def _served_precision(precision: str | None, model: str, task: str) -> tuple[str, tuple[str, ...]]:
    """The precision given, else for serving (or loading) a model whose weights are published below 16 bit
    that format, with a note, as recommend does (``WorkloadSpec._precision_served``); else bf16."""
    if precision is not None or task not in ("inference", "load"):
        return ("bf16" if precision is None else precision), ()  # a blank --precision is refused, not bf16
    from gpufleet.models.registry import released_precision

    released = released_precision(model)
    if released is None:
        return "bf16", ()
    prec, source = released
    return prec, (
        f"precision {prec}: the format {model} is published in ({source}); pass --precision bf16 for the "
        "dequantised model.",
    )


def _emit_json(result: Any, kind: str) -> None:
    """The estimate's fields at top level, after ``kind`` and ``gpufleet_version``."""
    from gpufleet import __version__
    from gpufleet.report.json_report import to_jsonable

    doc = {"kind": kind, "gpufleet_version": __version__} | to_jsonable(result)
    typer.echo(json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False))


def _exit_if_not_fit(fits: bool, mem: MemoryEstimate) -> None:
    """Exit 5 (gpufleet.cli.exit_codes) after the output where the configuration does not fit: the message
    compares the two figures the verdict compares (the memory table's rows)."""
    if not fits:
        from gpufleet.cli.exit_codes import ExitCode, exit_with

        needed = mem.per_gpu_gib_p90 - mem.breakdown_gib.get("optimizer_states_paged", 0.0)
        exit_with(
            ExitCode.DOES_NOT_FIT,
            f"does not fit: {needed:,.1f} GiB needed per GPU at the p90 of the estimate, at most "
            f"{mem.fit_limit_gib:,.1f} GiB allowed on the {mem.capacity_gib:,.1f} GiB device (see the notes "
            "for a layout that fits).",
        )


def _print_estimate(main: Table, est: InferenceEstimate | TrainingEstimate) -> None:
    """A performance estimate's own table, then its memory per GPU, then its notes and assumptions."""
    console.print(main)
    console.print(memory_table(est.memory, "Memory per GPU"))
    console.print(notes_table((*est.notes, *est.memory.assumptions)))


@app.command("memory")
def memory(
    model: ModelOpt,
    gpu: GpuOpt,
    task: Annotated[
        str, typer.Option(help="inference pretrain full_finetune lora qlora load.")
    ] = "inference",
    precision: ServePrecisionOpt = None,
    kv_precision: KvOpt = None,
    batch: Annotated[int, typer.Option(help="Sequences per GPU (micro-batch or concurrent requests).")] = 1,
    seq_len: Annotated[
        int | None,
        typer.Option(help="Tokens per sequence (default input+output, else 2048 or the model's context)."),
    ] = None,
    input_len: Annotated[int | None, typer.Option(help="Inference prompt tokens.")] = None,
    output_len: Annotated[int | None, typer.Option(help="Inference generated tokens.")] = None,
    tp: Annotated[int, typer.Option(help="Tensor-parallel degree.")] = 1,
    pp: Annotated[int, typer.Option(help="Pipeline-parallel degree.")] = 1,
    dp: Annotated[int, typer.Option(help="Data-parallel degree (shards optimizer state with --zero).")] = 1,
    zero: Annotated[int, typer.Option(help="ZeRO stage 0-3.")] = 0,
    recompute: Annotated[
        str,
        typer.Option(
            help="Activation recompute: none, selective or full (default selective, or the recipe's)."
        ),
    ] = "selective",
    optimizer: OptimizerOpt = None,
    recipe: RecipeOpt = None,
    engine: Annotated[
        str,
        typer.Option(
            "--engine",
            "--software",
            help="Serving engine (reserve); on a fine-tuning task, transformers selects --recipe hf_trainer.",
        ),
    ] = "vllm",
    profile: ProfileOption = None,
    output_format: FormatOpt = OutFormat.table,
    allow_fallback: FallbackOpt = False,
) -> None:
    """Memory per GPU: weights, KV cache, activations, optimizer state; and whether it fits.

    Memory does not depend on the calibration profile; --profile is accepted (and checked) for symmetry."""
    from gpufleet.estimate.memory import estimate_memory

    require_positive(
        batch=batch, seq_len=seq_len, input_len=input_len, output_len=output_len, tp=tp, pp=pp, dp=dp
    )
    arch, spec = model_arg(model), gpu_arg(gpu)
    served, served_note = _served_precision(precision, arch.id, task)
    prec, kv = _precisions(served, kv_precision)
    load_profile_option(profile)
    if seq_len is not None and (input_len is not None or output_len is not None):
        raise InputError(
            f"--seq-len {seq_len} and --input-len/--output-len both set the tokens per sequence, and "
            "--seq-len would silently win. Give --seq-len alone, or --input-len and --output-len (their "
            "sum is used)."
        )
    if seq_len is not None:
        seq_len = seq_len_within_context(arch, seq_len, typed=True, default=_MEMORY_SEQ_TOKENS)
    elif input_len is not None or output_len is not None:  # the positions used, as estimate infer counts
        check_context(arch.id, arch.max_position_embeddings, input_len or 0, output_len or 0)
        seq_len = (input_len or 0) + (output_len or 0)
    else:
        seq_len = seq_len_within_context(arch, _MEMORY_SEQ_TOKENS, typed=False, default=_MEMORY_SEQ_TOKENS)
    typed_engine = engine if given_options(["engine"], default_ok=False) else None
    choice = fine_tuning_choice(
        task, recipe=recipe, optimizer=optimizer, recompute=recompute, software=typed_engine
    )
    fine: dict[str, Any] = {}
    if choice is not None:
        from gpufleet.estimate.recipes import training_options

        opts = training_options(task=task, gpu_count=tp * pp * dp, **choice)
        recompute = opts.recompute or recompute
        if opts.zero_stage is not None and dp > 1 and not given_options(["zero"], default_ok=False):
            zero = opts.zero_stage  # the trainer's multi-GPU sharding (FSDP = ZeRO-3)
        fine = opts.memory_kwargs()
    mem = estimate_memory(
        model=arch, task=task, precision=prec, gpu=spec, tp=tp, pp=pp, dp=dp, batch=batch, seq_len=seq_len,
        kv_precision=kv, zero_stage=zero, recompute=recompute, engine=engine, allow_fallback=allow_fallback,
        **fine,
    )  # fmt: skip
    if choice is not None and opts.fastest_fit:
        # the recipe's single-GPU runs keep the activations on the GPU where they fit (estimate train too)
        held_opts = opts.held_on_gpu()
        held = estimate_memory(
            model=arch, task=task, precision=prec, gpu=spec, tp=tp, pp=pp, dp=dp, batch=batch,
            seq_len=seq_len, kv_precision=kv, zero_stage=zero, recompute="none", engine=engine,
            allow_fallback=allow_fallback, **held_opts.memory_kwargs(),
        )  # fmt: skip
        if held.fits:
            mem, opts = held, held_opts
    if choice is not None:
        mem = dataclasses.replace(mem, recipe=opts.recipe, assumptions=(opts.summary, *mem.assumptions))
    if served_note:
        mem = dataclasses.replace(mem, assumptions=(*served_note, *mem.assumptions))
    if task in ("inference", "load"):  # after the estimate: bad values first
        reject_ignored(
            ["zero", "recompute", "optimizer", "recipe"],
            why=f"with --task {task} (ZeRO sharding, activation recompute, the optimizer and the fine-tuning "
            "recipe are training settings)",
            fix="Leave those options out, or pass a training --task (pretrain, full_finetune, lora or "
            "qlora).",
        )
    else:  # a training task: the same answer with and without --kv-precision
        reject_ignored(
            ["kv_precision"],
            why=f"with --task {task} (a training step keeps no KV cache: activations are sized instead)",
            fix="Leave it out, or pass --task inference to size a KV cache.",
        )
    if task == "load":
        reject_ignored(
            ["batch", "seq_len", "input_len", "output_len", "kv_precision", "engine"],
            why="with --task load (weights only: no KV cache, activations or engine reserve)",
            fix="Leave those options out, or pass --task inference to size the KV cache as well.",
        )
    hint: tuple[str, ...] = ()
    if not mem.fits:
        from gpufleet.estimate.memory_options import fitting_option

        opt = fitting_option(
            model=arch, task=task, precision=prec, gpu=spec, tp=tp, pp=pp, dp=dp, batch=batch,
            seq_len=seq_len, kv_precision=kv, zero_stage=zero, recompute=recompute, engine=engine,
            allow_fallback=allow_fallback, **fine,
        )  # fmt: skip
        if opt is not None:
            hint = (f"Does not fit with {recompute} recompute, ZeRO-{zero}; {opt.description}.",)
        elif task in ("inference", "load"):
            from gpufleet.estimate.memory_options import serving_hint

            serve = serving_hint(
                model=arch, task=task, precision=prec, gpu=spec, tp=tp, pp=pp, dp=dp, batch=batch,
                seq_len=seq_len, kv_precision=kv, engine=engine, allow_fallback=allow_fallback,
            )  # fmt: skip
            hint = (f"Does not fit at TP {tp} x PP {pp}; verified: it {serve}.",) if serve else ()
        else:
            from gpufleet.estimate.memory_options import recipe_hint, scale_out_hint

            # a "does not fit" verdict names a layout that fits, checked by the same memory model (the
            # FSDP/ZeRO-3 scale-out of DeepSpeed's and Answer.AI's FSDP+QLoRA docs), not just a direction
            scale = scale_out_hint(
                model=arch, task=task, precision=prec, gpu=spec, tp=tp, pp=pp, dp=dp, batch=batch,
                seq_len=seq_len, kv_precision=kv, zero_stage=zero, engine=engine,
                allow_fallback=allow_fallback, choice=choice,
            )  # fmt: skip
            light = recipe_hint(
                model=arch, task=task, precision=prec, gpu=spec, tp=tp, pp=pp, dp=dp, batch=batch,
                seq_len=seq_len, zero_stage=zero, recompute=recompute, allow_fallback=allow_fallback,
                choice=choice,
            )  # fmt: skip
            hint = (
                f"No recompute / ZeRO option makes it fit at this TP/PP/DP and batch: {_lighter(task, dp)}.",
                *((f"Verified: it {scale}.",) if scale else ()),
                *((f"Verified: it fits with a lower-memory trainer recipe, {light}.",) if light else ()),
            )
    if hint:  # in the notes, so the JSON carries the same advice as the table
        mem = dataclasses.replace(mem, assumptions=(*hint, *mem.assumptions))
    if output_format is OutFormat.json:
        _emit_json(mem, "estimate_memory")
    else:
        title = (
            f"{arch.id} {task} on {spec.id}, {prec}, batch {batch} × {seq_len} tokens, "
            f"TP {tp} PP {pp} DP {dp}"
        )
        console.print(memory_table(mem, title))
        console.print(notes_table(mem.assumptions))
    _exit_if_not_fit(mem.fits, mem)


def _lighter(task: str, dp: int = 1) -> str:
    """What to try when no recompute/ZeRO option fits ``task``: only the steps that lighten that task (a QLoRA
    has no lighter task; FSDP shards its 4-bit base: QLoRA + FSDP, Answer.AI 2024, 70B on 2 x 24 GB). With
    ``dp`` > 1 already sharded, the step is more ranks than ``dp``, not the same flags again."""
    more = f"--dp above {dp}" if dp > 1 else "--dp N"
    if task == "qlora":
        return (
            f"add GPUs and shard the 4-bit base with FSDP ({more} --zero 3), or a smaller batch or sequence"
        )
    if task == "lora":
        return f"add GPUs ({more} --zero 3), use --task qlora (a 4-bit base), or a smaller batch or sequence"
    return "add GPUs, use --task lora/qlora or a lower precision"


@app.command("infer")
def infer(
    model: ModelOpt,
    gpu: GpuOpt,
    gpus: Annotated[int, typer.Option(help="GPUs in the deployment (replicas = gpus // (tp*pp)).")] = 1,
    precision: ServePrecisionOpt = None,
    kv_precision: KvOpt = None,
    input_len: Annotated[int, typer.Option(help="Prompt tokens per request.")] = 1024,
    output_len: Annotated[int, typer.Option(help="Generated tokens per request.")] = 256,
    batch: Annotated[
        int | None, typer.Option(help="Concurrent requests per replica (default: saturated).")
    ] = None,
    tp: Annotated[int | None, typer.Option(help="Tensor-parallel degree (default: chosen).")] = None,
    pp: Annotated[int, typer.Option(help="Pipeline-parallel degree.")] = 1,
    ep: Annotated[
        int | None,
        typer.Option(help="MoE expert-parallel degree per replica (default: TP, or EP if faster)."),
    ] = None,
    attention_dp: Annotated[
        bool | None,
        typer.Option(
            "--attention-dp/--no-attention-dp",
            help="With --ep: attention data parallel inside the EP group (TRT-LLM enable_attention_dp).",
        ),
    ] = None,
    engine: Annotated[
        str | None, typer.Option("--engine", "--software", help="vllm, trtllm, tgi, ...")
    ] = None,
    allow_fallback: FallbackOpt = False,
    profile: ProfileOption = None,
    output_format: FormatOpt = OutFormat.table,
    optimizer: Annotated[str | None, typer.Option(hidden=True)] = None,
    recipe: Annotated[str | None, typer.Option(hidden=True)] = None,
) -> None:
    """Inference: TTFT, TPOT, tokens/s and requests/s with p10–p90 intervals."""
    from gpufleet.estimate.performance import estimate_inference

    reject_ignored(
        ["optimizer", "recipe"],
        why="on inference (the optimizer and the fine-tuning recipe are training settings)",
        fix="Leave them out, or use `gpufleet estimate train` (or `estimate memory --task full_finetune`, "
        "lora or qlora) to size a fine-tune.",
        default_ok=False,
    )
    require_positive(gpus=gpus, input_len=input_len, output_len=output_len, batch=batch, tp=tp, pp=pp, ep=ep)
    arch, spec = model_arg(model), gpu_arg(gpu)
    served, served_note = _served_precision(precision, arch.id, "inference")
    prec, kv = _precisions(served, kv_precision)
    est = estimate_inference(
        model=arch, gpu=spec, precision=prec, input_len=input_len, output_len=output_len, gpu_count=gpus,
        batch=batch, tp=tp, pp=pp, ep=ep, attention_dp=attention_dp, kv_precision=kv, software=engine,
        profile=load_profile_option(profile), allow_fallback=allow_fallback,
    )  # fmt: skip
    if served_note:
        est = dataclasses.replace(est, notes=(*served_note, *est.notes))
    if not est.fits:
        from gpufleet.estimate.memory_options import inference_fit_hints

        kw: dict[str, Any] = dict(
            model=arch, gpu=spec, input_len=input_len, output_len=output_len, batch=batch, pp=pp,
            kv_precision=kv, software=engine, profile=load_profile_option(profile),
            allow_fallback=allow_fallback,
        )  # fmt: skip
        est = dataclasses.replace(est, notes=(*inference_fit_hints(prec, gpus, kw), *est.notes))
    if output_format is OutFormat.json:
        _emit_json(est, "estimate_inference")
    else:
        title = f"{arch.id} inference on {gpus}× {spec.id}, {prec}, {input_len} in / {output_len} out tokens"
        _print_estimate(inference_table(est, title), est)
    _exit_if_not_fit(est.fits, est.memory)


@app.command("train")
def train(
    model: ModelOpt,
    gpu: GpuOpt,
    gpus: Annotated[int, typer.Option(help="GPUs in the job.")] = 8,
    task: Annotated[str, typer.Option(help="pretrain, full_finetune, lora or qlora.")] = "pretrain",
    precision: PrecisionOpt = "bf16",
    batch: Annotated[int, typer.Option(help="Global batch (sequences).")] = 256,
    seq_len: Annotated[
        int, typer.Option(help="Sequence length (tokens; default 4096, at most the model's context).")
    ] = _TRAIN_SEQ_TOKENS,
    tokens: Annotated[
        float | None, typer.Option(help="Tokens to train on (for time and GPU-hours; 2e9 or 2B).")
    ] = None,
    tp: Annotated[int | None, typer.Option(help="Tensor-parallel degree (default: chosen).")] = None,
    pp: Annotated[int | None, typer.Option(help="Pipeline-parallel degree (default: chosen).")] = None,
    dp: Annotated[int | None, typer.Option(help="Data-parallel degree (default: chosen).")] = None,
    zero: Annotated[int | None, typer.Option(help="ZeRO stage 0-3 (default: chosen).")] = None,
    recompute: Annotated[str | None, typer.Option(help="none, selective or full (default: chosen).")] = None,
    virtual_stages: Annotated[
        int | None,
        typer.Option(
            "--virtual-stages",
            help="Model chunks per pipeline rank, interleaved 1F1B (Megatron "
            "--num-virtual-stages-per-pipeline-rank; 1 = plain 1F1B; default: the stack's). "
            "Used with PP > 1.",
        ),
    ] = None,
    software: Annotated[
        str | None,
        typer.Option(
            "--software", "--engine", help="megatron, nemo, ... (a trainer name also selects its --recipe)."
        ),
    ] = None,
    optimizer: OptimizerOpt = None,
    recipe: RecipeOpt = None,
    allow_fallback: FallbackOpt = False,
    profile: ProfileOption = None,
    output_format: FormatOpt = OutFormat.table,
) -> None:
    """Training: step time, tokens/s, MFU, time and GPU-hours with p10–p90 intervals."""
    from gpufleet.estimate.performance import estimate_training

    require_positive(gpus=gpus, batch=batch, seq_len=seq_len, tokens=tokens, tp=tp, pp=pp, dp=dp,
                     virtual_stages=virtual_stages)  # fmt: skip
    prec, _ = _precisions(precision, None)
    arch, spec = model_arg(model), gpu_arg(gpu)
    seq_len = seq_len_within_context(
        arch, seq_len, typed=bool(given_options(["seq_len"], default_ok=False)), default=_TRAIN_SEQ_TOKENS
    )
    from gpufleet.estimate.recipes import training_options

    choice: dict[str, str | None] = dict(recipe=recipe, optimizer=optimizer, recompute=recompute,
                                         software=software)  # fmt: skip
    opts = training_options(task=task, gpu_count=gpus, **choice)
    est = estimate_training(
        model=arch, task=task, gpu=spec, precision=prec, gpu_count=gpus, global_batch=batch, seq_len=seq_len,
        train_tokens=tokens, tp=tp, pp=pp, dp=dp, zero_stage=zero, recompute=recompute, software=software,
        profile=load_profile_option(profile), allow_fallback=allow_fallback, virtual_stages=virtual_stages,
        options=opts,
    )  # fmt: skip
    if not est.fits:
        from gpufleet.estimate.memory_options import training_fit_hints

        kw: dict[str, Any] = dict(
            model=arch, gpu=spec, precision=prec, global_batch=batch, seq_len=seq_len, tp=tp, pp=pp,
            zero_stage=zero, recompute=recompute, software=software, profile=load_profile_option(profile),
            allow_fallback=allow_fallback, virtual_stages=virtual_stages,
        )  # fmt: skip
        est = dataclasses.replace(est, notes=(*training_fit_hints(task, gpus, kw, choice), *est.notes))
    if output_format is OutFormat.json:
        _emit_json(est, "estimate_training")
    else:
        title = f"{arch.id} {task} on {gpus}× {spec.id}, {prec}, global batch {batch} × {seq_len} tokens"
        _print_estimate(training_table(est, title), est)
    _exit_if_not_fit(est.fits, est.memory)
