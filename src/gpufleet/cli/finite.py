"""Float options accept finite numbers only: ``nan``, ``inf``, ``-inf`` and ``1e400`` (which parses to
inf) are a usage error (exit 2) that names the option, on every command.

click's ``FLOAT`` (what typer < 0.29 gives a ``float`` option) accepts them, and a range
(``min=``/``max=``) lets ``nan`` through because every comparison with it is false. :func:`finite_floats`
swaps each float type of a built command tree for a finite one; ``cli/app.py`` applies it to every command
it builds, so a new float option is covered without a per-option ``click_type``
(tests/cli/test_finite_floats.py walks them all).
"""

from __future__ import annotations

import math
from typing import Any

from typer._click.core import Context, Parameter
from typer._click.types import FloatParamType, FloatRange, ParamType, Tuple


def _require_finite(kind: ParamType, value: Any, param: Parameter | None, ctx: Context | None) -> None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return  # not a number at all: the float type's own message says so
    if not math.isfinite(number):
        kind.fail(
            f"{value!r} is not a finite number: pass a decimal number such as 2.5 or 1e12 "
            "(nan, inf and magnitudes beyond 1.8e308 are not allowed).",
            param,
            ctx,
        )


class FiniteFloat(FloatParamType):
    """click's FLOAT without nan and ±inf."""

    def convert(self, value: Any, param: Parameter | None, ctx: Context | None) -> Any:
        _require_finite(self, value, param, ctx)
        return super().convert(value, param, ctx)


class FiniteFloatRange(FloatRange):
    """click's FloatRange without nan and ±inf (the range check alone lets nan through)."""

    def convert(self, value: Any, param: Parameter | None, ctx: Context | None) -> Any:
        _require_finite(self, value, param, ctx)
        return super().convert(value, param, ctx)


def _finite(kind: ParamType) -> ParamType:
    if type(kind) is FloatParamType:
        return FiniteFloat()
    if type(kind) is FloatRange:
        return FiniteFloatRange(
            min=kind.min, max=kind.max, min_open=kind.min_open, max_open=kind.max_open, clamp=kind.clamp
        )
    if isinstance(kind, Tuple):
        kind.types = [_finite(item) for item in kind.types]
    return kind


#: token counts are written with a scale suffix as often as in e-notation ("50B tokens", "200M", "15T" in
#: model cards and Chinchilla-style budgets); these suffixes scale ``--tokens`` only (a memory or a price
#: option taking "80G" would be ambiguous)
TOKEN_SUFFIXES: dict[str, float] = {"k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}


class TokenCount(FiniteFloat):
    """A finite float that also takes a k/M/B/T suffix (``50B`` = 5e10 tokens)."""

    def convert(self, value: Any, param: Parameter | None, ctx: Context | None) -> Any:
        if isinstance(value, str) and value.strip()[-1:].lower() in TOKEN_SUFFIXES:
            text = value.strip()
            try:
                number = float(text[:-1]) * TOKEN_SUFFIXES[text[-1].lower()]
            except ValueError:
                self.fail(
                    f"{value!r} is not a token count: pass a number such as 5e10, or one with a suffix "
                    "k, M, B or T such as 50B.",
                    param,
                    ctx,
                )
            return super().convert(number, param, ctx)
        return super().convert(value, param, ctx)


def finite_floats(command: Any) -> Any:
    """Give every float parameter of ``command`` and its subcommands a finite-only type (``--tokens``: a
    :class:`TokenCount`); returns it."""
    for param in command.params:
        param.type = _finite(param.type)
        if type(param.type) is FiniteFloat and "--tokens" in getattr(param, "opts", ()):
            param.type = TokenCount()
    for sub in getattr(command, "commands", {}).values():
        finite_floats(sub)
    return command
