"""Number options accept plain ASCII numbers only, and float options finite ones only, on every command.

``nan``, ``inf``, ``-inf`` and ``1e400`` (which parses to inf) are a usage error (exit 2) that names the
option. Python's ``int()``/``float()`` (what click calls) also read Unicode digits (Arabic-Indic ``٥``,
full-width ``５``) as numbers: those are refused too, as a typo or paste rather than a number a person meant
to give a capacity tool. A value that is not a number gets a message saying what is allowed and the fix for
the usual mistakes (a unit after the number, a decimal comma, a decimal or exponent where a whole number is
wanted), not only click's bare "is not a valid int".

click's ``FLOAT`` (what typer < 0.29 gives a ``float`` option) accepts them, and a range
(``min=``/``max=``) lets ``nan`` through because every comparison with it is false. :func:`finite_floats`
swaps each float type of a built command tree for a finite one; ``cli/app.py`` applies it to every command
it builds, so a new float option is covered without a per-option ``click_type``
(tests/cli/test_finite_floats.py walks them all).
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Any

from typer._click.core import Context, Parameter
from typer._click.exceptions import UsageError
from typer._click.types import (
    File,
    FloatParamType,
    FloatRange,
    IntParamType,
    IntRange,
    ParamType,
    Tuple,
)
from typer.models import TyperPath

#: A number followed by a unit or suffix: ``5 GiB``, ``10ms``, ``2.5h``, ``80%``.
_WITH_UNIT = re.compile(r"^[-+]?(\d[\d_]*\.?\d*|\.\d+)([eE][-+]?\d+)?\s*([^\d\s.,+-].*)$")


def _non_ascii(value: Any, kind: ParamType, param: Parameter | None, ctx: Context | None) -> None:
    """Refuse a value with non-ASCII characters, naming them (Unicode digits read as numbers otherwise)."""
    if not isinstance(value, str) or value.isascii():
        return
    odd = sorted({ch for ch in value if not ch.isascii()})
    names = ", ".join(f"{ch!r} ({unicodedata.name(ch, f'U+{ord(ch):04X}')})" for ch in odd[:3])
    kind.fail(
        f"{value!r} contains non-ASCII characters: {names}. Numbers are written with the ASCII digits 0-9, "
        "an optional sign, a decimal point and an exponent (e.g. 8, 2.5, 1e9); retype the value.",
        param,
        ctx,
    )


def _not_a_number(value: Any, whole: bool) -> str:
    """The message for ``value``, which ``int()``/``float()`` refused: what is wrong, what is allowed and
    the fix."""
    name = "int" if whole else "float"
    allowed = (
        "a whole number written with the digits 0-9, such as 8"
        if whole
        else "a decimal number such as 2.5, 0.5 or 1e9"
    )
    text = str(value).strip()
    if not text:
        return (
            f"{value!r} is not a valid {name}: the value is empty. Give {allowed}, or leave the option out."
        )
    if whole:
        try:
            number = float(text)
        except ValueError:
            number = None
        if number is not None and math.isfinite(number):
            exact = f"; write it out as {int(number)}" if number == int(number) and abs(number) < 1e15 else ""
            return (
                f"{value!r} is not a valid int: this option takes {allowed} (no decimal point or "
                f"exponent){exact}."
            )
    unit = _WITH_UNIT.match(text)
    if unit:
        return (
            f"{value!r} is not a valid {name}: {unit.group(3)!r} after the number is not accepted. Give "
            f"{allowed} without a unit; the option's unit is fixed (its name or --help gives it)."
        )
    if "," in text:
        return (
            f"{value!r} is not a valid {name}: commas are not accepted (neither as decimal separator nor as "
            f"thousands separator). Give {allowed}, with a point for decimals (0.5, not 0,5)."
        )
    return f"{value!r} is not a valid {name}: this option takes {allowed}."


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


def _convert(
    kind: ParamType, base: Any, value: Any, whole: bool, param: Parameter | None, ctx: Context | None
) -> Any:
    """``base.convert`` (click's own type) on ``value`` after the ASCII and finiteness checks, with a message
    that says what is allowed when ``value`` is not a number at all."""
    _non_ascii(value, kind, param, ctx)
    if not whole:
        _require_finite(kind, value, param, ctx)
    if isinstance(value, str):
        try:
            (int if whole else float)(value)
        except ValueError:
            kind.fail(_not_a_number(value, whole), param, ctx)
    return base.convert(kind, value, param, ctx)


class FiniteFloat(FloatParamType):
    """click's FLOAT without nan, ±inf and non-ASCII digits."""

    def convert(self, value: Any, param: Parameter | None, ctx: Context | None) -> Any:
        return _convert(self, FloatParamType, value, False, param, ctx)


class FiniteFloatRange(FloatRange):
    """click's FloatRange without nan, ±inf and non-ASCII digits (the range check alone lets nan through)."""

    def convert(self, value: Any, param: Parameter | None, ctx: Context | None) -> Any:
        return _convert(self, FloatRange, value, False, param, ctx)


class AsciiInt(IntParamType):
    """click's INT without non-ASCII digits, with a message saying what is allowed."""

    def convert(self, value: Any, param: Parameter | None, ctx: Context | None) -> Any:
        return _convert(self, IntParamType, value, True, param, ctx)


class AsciiIntRange(IntRange):
    """click's IntRange without non-ASCII digits, with a message saying what is allowed."""

    def convert(self, value: Any, param: Parameter | None, ctx: Context | None) -> Any:
        return _convert(self, IntRange, value, True, param, ctx)


#: path types made to refuse a blank value, by the click type they extend (one subclass per type)
_NON_BLANK: dict[type[ParamType], type[ParamType]] = {}


def _refuse_blank(value: Any, kind: ParamType, param: Parameter | None, ctx: Context | None) -> None:
    """Refuse a blank path: click reads ``--store ""`` as ``Path("")``, which is ``.``, the working folder
    (a store was created there, an input was reported as "the folder ."), so the value is refused as typed."""
    if isinstance(value, str) and not value.strip():
        kind.fail(
            f"{value!r} is an empty path. Give the path of a file or folder, or leave the option out.",
            param,
            ctx,
        )


def _non_blank_path(kind: ParamType) -> ParamType:
    """``kind`` (typer's ``Path`` or click's ``File``) with a type that first refuses a blank value."""
    base = type(kind)
    sub = _NON_BLANK.get(base)
    if sub is None:

        def convert(self: Any, value: Any, param: Parameter | None, ctx: Context | None) -> Any:
            _refuse_blank(value, self, param, ctx)
            return base.convert(self, value, param, ctx)

        sub = type(f"NonBlank{base.__name__}", (base,), {"convert": convert, "__slots__": ()})
        _NON_BLANK[base] = sub
    kind.__class__ = sub
    return kind


def _finite(kind: ParamType) -> ParamType:
    if isinstance(kind, TyperPath | File) and type(kind) not in _NON_BLANK.values():
        return _non_blank_path(kind)
    if type(kind) is FloatParamType:
        return FiniteFloat()
    if type(kind) is FloatRange:
        return FiniteFloatRange(
            min=kind.min, max=kind.max, min_open=kind.min_open, max_open=kind.max_open, clamp=kind.clamp
        )
    if type(kind) is IntParamType:
        return AsciiInt()
    if type(kind) is IntRange:
        return AsciiIntRange(
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
                unit = _WITH_UNIT.match(text)
                what = f"the unit {unit.group(3)!r} is not accepted" if unit else "not a number"
                self.fail(
                    f"{value!r} is not a token count ({what}): pass a number such as 5e10, or one with a "
                    "suffix k, M, B or T such as 50B.",
                    param,
                    ctx,
                )
            return super().convert(number, param, ctx)
        return super().convert(value, param, ctx)


def _values_given(command: Any, args: list[str]) -> dict[str, list[str]]:
    """The values each single-value option of ``command`` gets in ``args`` (``--opt V`` and ``--opt=V``),
    by the option's longest spelling; flags, repeatable options and arguments after ``--`` are left out."""
    takes_value: dict[str, Any] = {}
    for param in command.params:
        if getattr(param, "param_type_name", "") != "option":
            continue
        if (
            getattr(param, "is_flag", False)
            or getattr(param, "multiple", False)
            or getattr(param, "count", False)
        ):
            continue
        if (getattr(param, "nargs", 1) or 1) != 1:
            continue
        for opt in param.opts:
            takes_value[opt] = param
    seen: dict[str, list[str]] = {}
    k = 0
    while k < len(args):
        token = args[k]
        if token == "--":
            break
        name, value = token, None
        if token.startswith("--") and "=" in token:
            name, value = token.split("=", 1)
        param = takes_value.get(name)
        if param is not None:
            if value is None:
                value = args[k + 1] if k + 1 < len(args) else ""
                k += 1
            seen.setdefault(max(param.opts, key=len), []).append(value)
        k += 1
    return seen


def _reject_repeated(command: Any) -> None:
    """Make ``command`` refuse a single-value option given twice (``--model a --model b``): click keeps the
    last value silently, as a YAML file with a duplicate key would (which the file readers refuse)."""
    parse = command.parse_args

    def parse_args(ctx: Context, args: list[str]) -> Any:
        for opt, values in _values_given(command, list(args)).items():
            if len(values) > 1:
                shown = ", then ".join(repr(v) for v in values[:4])
                raise UsageError(
                    f"{opt} is given {len(values)} times ({shown}); it takes one value and only the last "
                    f"would be used. Give {opt} once.",
                    ctx,
                )
        return parse(ctx, args)

    command.parse_args = parse_args


def finite_floats(command: Any) -> Any:
    """Give every float parameter of ``command`` and its subcommands a finite-only type (``--tokens``: a
    :class:`TokenCount`), and every int one an ASCII-only type (both with messages that say what is
    allowed); every command refuses a single-value option given twice. Returns ``command``."""
    for param in command.params:
        param.type = _finite(param.type)
        if type(param.type) is FiniteFloat and "--tokens" in getattr(param, "opts", ()):
            param.type = TokenCount()
    subs = getattr(command, "commands", None)
    if subs is None:
        _reject_repeated(command)
    for sub in (subs or {}).values():
        finite_floats(sub)
    return command
