"""Argument checks shared by the `gpufleet estimate` commands: positive numbers, model and GPU names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpufleet.errors import InputError
from gpufleet.validation import check_count, check_number

if TYPE_CHECKING:
    from gpufleet.catalog.specs import AcceleratorSpec
    from gpufleet.models.arch import ModelArch


def require_positive(**values: float | None) -> None:
    """Raise :class:`InputError` for the first value given that is not > 0, finite and <= its maximum."""
    for name, value in values.items():
        if value is None:
            continue
        flag = "--" + name.replace("_", "-")
        if not value > 0:  # NaN fails this too
            raise InputError(
                f"{flag} must be greater than 0, got {value!r}. Batch sizes, lengths, token counts and "
                f"GPU or parallel degrees are positive; pass for example {flag} 1."
            )
        if isinstance(value, int):
            check_count(name, value, flag=flag)
        else:
            check_number(name, value, flag=flag)


def fine_tuning_choice(
    task: str, *, recipe: str | None, optimizer: str | None, recompute: str, software: str | None = None
) -> dict[str, str | None] | None:
    """The fine-tuning choices of ``estimate memory`` for recipes.training_options (``--recompute`` only
    where typed, so a recipe's own recompute applies otherwise); None for an inference or load task or when
    neither ``--recipe`` nor ``--optimizer`` is given and ``software`` (the typed ``--software``) names no
    trainer (the estimator's generic defaults). ``--software transformers`` on a fine-tuning task selects
    the hf_trainer recipe, as on ``estimate train``; the presets are fine-tuning recipes, so not for
    pretrain."""
    from gpufleet.cli.given import given_options
    from gpufleet.estimate.recipes import recipe_for
    from gpufleet.estimate.types import FINE_TUNING_TASKS

    if task in ("inference", "load"):
        return None
    trainer = software if task in FINE_TUNING_TASKS and recipe_for(software) is not None else None
    if recipe is None and optimizer is None and trainer is None:
        return None
    typed = bool(given_options(["recompute"], default_ok=False))
    return {"recipe": recipe, "optimizer": optimizer, "recompute": recompute if typed else None,
            "software": trainer}  # fmt: skip


def model_arg(name: str) -> ModelArch:
    """The model for ``--model`` (id, alias, config.json path or size class); errors list close matches."""
    from gpufleet.models import resolve_model

    return resolve_model(name)


def gpu_arg(name: str) -> AcceleratorSpec:
    """The accelerator for ``--gpu``, or an UnknownNameError with close matches."""
    from gpufleet.catalog.specs import get_spec

    return get_spec(name)


def seq_len_within_context(arch: ModelArch, seq_len: int, *, typed: bool, default: int) -> int:
    """The sequence length ``estimate memory``/``estimate train`` size: a typed ``--seq-len`` beyond the
    model's maximum context (its config's ``max_position_embeddings``) is an :class:`UnsupportedError` (exit
    2, as ``estimate infer`` and ``recommend`` refuse a prompt beyond it); the default (``default`` tokens)
    is capped at the context, so a plain call on a short-context model (gpt2, 1,024) sizes what it can run.
    """
    from gpufleet.errors import UnsupportedError

    limit = arch.max_position_embeddings
    if limit <= 0 or seq_len <= limit:
        return seq_len
    if not typed and seq_len == default:
        return limit
    raise UnsupportedError(
        f"--seq-len {seq_len:,} is beyond the {limit:,}-token maximum context of {arch.id} "
        f"(max_position_embeddings): the model cannot attend over it. Allowed: 1 to {limit:,} tokens. Lower "
        "--seq-len, choose a model with a longer context, or, if you extend its positions (RoPE scaling), "
        "pass that config.json (its max_position_embeddings) as the model."
    )
