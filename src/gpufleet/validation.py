"""Value checks at the boundary, and the output invariant check.

Every number a caller gives (CLI flag, workload field, Python argument) is checked here before any search or
estimate starts: a whole number or a finite number, positive, and no larger than a stated, physically
sensible maximum (:data:`MAXIMA`), so no input can hang a search or overflow a count. The maxima are far above
anything deployed today (sources in the comments) and only exist to bound the work and the arithmetic.

:func:`check_outputs` walks what the library returns (frozen dataclasses, tuples, mappings) and raises
:class:`~gpufleet.errors.GpufleetError` naming the inputs when a physical quantity is not finite or negative,
or an interval is out of order (p10 <= central <= p90).
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import math
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from gpufleet.errors import GpufleetError, InputError, UnsupportedError

F = TypeVar("F", bound=Callable[..., Any])

#: Largest GPU count anywhere [GPUs]: 10^6; the largest announced clusters are ~10^5 GPUs (xAI Colossus,
#: 200k H100/H200, 2025).
MAX_GPUS = 1_000_000
#: Longest sequence [tokens]: 10^7; the longest advertised context is 10M tokens (Llama 4 Scout, 2025).
MAX_SEQUENCE_TOKENS = 10_000_000
#: Largest batch [sequences]: per replica or global.
MAX_BATCH = 100_000_000
#: Largest training token budget [tokens]: 10^16; the largest published runs use ~3.6e13 (Qwen3, 2025).
MAX_TRAIN_TOKENS = 1e16
#: Largest request rate [requests/s]: 10^7 (a large web service at peak is ~10^5-10^6).
MAX_REQUESTS_PER_S = 1e7
#: Largest number of concurrent requests/users: 10^8.
MAX_CONCURRENCY = 100_000_000
#: Largest money amount [USD] (budgets per hour, month or total): 10^12.
MAX_USD = 1e12
#: Largest duration [hours]: 10^6 h (~114 years).
MAX_HOURS = 1e6
#: Largest model dimensions in a config (hidden size, FFN width [features]; layers, heads, experts, vocab).
MAX_HIDDEN_SIZE = 1_000_000
MAX_LAYERS = 10_000
MAX_HEADS = 100_000
MAX_EXPERTS = 100_000
MAX_VOCAB = 100_000_000

#: Most memory per GPU [GiB]: 4,096; the largest today is 288 GB (B300, 2025): a typo guard (bytes for GiB).
MAX_GPU_MEMORY_GIB = 4096
#: Largest price of one machine or one GPU [USD/h]: 10^5; the dearest cloud instances cost ~10^2 USD/h.
MAX_PRICE_USD_PER_HOUR = 1e5
#: Most ranked rows a ranking command returns (``--top``, ``limit``): 1,000; the whole catalog is ~10^4 rows
#: and a ranking is read by a person (use --format csv/json of `gpufleet catalog offers` for everything).
MAX_RANKED = 1000
#: Longest solver time limit [s]: one day (86,400 s); the fleet plans of docs/fleet.md solve in seconds.
MAX_TIME_LIMIT_S = 86_400.0
#: Most runs of one sweep (grid points x seeds): a 6-policy x 5 x 5 grid over 10 seeds is 1,500; a spec
#: listing 100,000 seeds ran for hours in local processes before this bound.
MAX_SWEEP_RUNS = 10_000
#: Longest simulated cold start [s]: one day; real ones take seconds to ~15 minutes (docs/simulate.md).
MAX_COLD_START_S = 86_400.0

#: Maximum per argument/field name (CLI flags map ``--input-len`` -> ``input_len``).
MAXIMA: dict[str, float] = {
    "gpu_count": MAX_GPUS,
    "gpus": MAX_GPUS,
    "gpus_per_node": 1024,
    "tp": MAX_GPUS,
    "pp": MAX_GPUS,
    "dp": MAX_GPUS,
    "ep": MAX_GPUS,
    "cp": MAX_GPUS,
    "batch": MAX_BATCH,
    "global_batch": MAX_BATCH,
    "micro_batch": MAX_BATCH,
    "input_len": MAX_SEQUENCE_TOKENS,
    "output_len": MAX_SEQUENCE_TOKENS,
    "seq_len": MAX_SEQUENCE_TOKENS,
    "train_tokens": MAX_TRAIN_TOKENS,
    "tokens": MAX_TRAIN_TOKENS,
    "target_rps": MAX_REQUESTS_PER_S,
    "requests_per_s": MAX_REQUESTS_PER_S,
    "concurrency": MAX_CONCURRENCY,
    "budget": MAX_USD,
    "budget_usd": MAX_USD,
    "budget_usd_per_hour": MAX_USD,
    "budget_usd_per_month": MAX_USD,
    "deadline_hours": MAX_HOURS,
    "deadline_h": MAX_HOURS,
    "hours": MAX_HOURS,
    "limit": 100_000,
    "top": MAX_RANKED,
    "time_limit": MAX_TIME_LIMIT_S,
    "time_limit_s": MAX_TIME_LIMIT_S,
    "cold_start": MAX_COLD_START_S,
    "cold_start_s": MAX_COLD_START_S,
    "min_gpu_memory": MAX_GPU_MEMORY_GIB,
    "min_gpu_memory_gib": MAX_GPU_MEMORY_GIB,
    "max_price": MAX_PRICE_USD_PER_HOUR,
    "max_price_per_gpu_usd_per_hour": MAX_PRICE_USD_PER_HOUR,
    "lora_rank": 100_000,
}

_UNITS: dict[str, str] = {
    "gpu_count": "GPUs",
    "gpus": "GPUs",
    "input_len": "tokens",
    "output_len": "tokens",
    "seq_len": "tokens",
    "train_tokens": "tokens",
    "tokens": "tokens",
    "target_rps": "requests/s",
    "requests_per_s": "requests/s",
    "budget": "USD",
    "deadline_hours": "hours",
    "deadline_h": "hours",
    "time_limit": "s",
    "time_limit_s": "s",
    "cold_start": "s",
    "min_gpu_memory": "GiB",
    "min_gpu_memory_gib": "GiB",
    "max_price": "USD/h",
    "max_price_per_gpu_usd_per_hour": "USD/h",
}


def _label(name: str, flag: str | None) -> str:
    return flag or name


def maximum_for(name: str) -> float | None:
    """The stated maximum for the argument ``name`` (None when unbounded by this module)."""
    return MAXIMA.get(name.lstrip("-").replace("-", "_"))


def _too_large(label: str, value: object, maximum: float, name: str) -> InputError:
    unit = _UNITS.get(name, "")
    shown = f"{maximum:,.0f}" if maximum >= 1 else f"{maximum:g}"
    return InputError(
        f"{label} is {value!r}, above the maximum of {shown}{' ' + unit if unit else ''} gpufleet accepts "
        "(far beyond any deployment today; the bound keeps every search finite). Pass a realistic value."
    )


def check_count(
    name: str,
    value: object,
    *,
    minimum: int = 1,
    maximum: float | None = None,
    flag: str | None = None,
    allow_none: bool = False,
) -> int | None:
    """``value`` as an int if it is a whole number in [minimum, maximum], else :class:`InputError`.

    ``maximum`` defaults to :data:`MAXIMA` [``name``]; the message names ``flag`` (or ``name``) and the limit.
    """
    if type(value) is int and value >= minimum:  # fast path for a valid int (estimators call this per call)
        limit = maximum if maximum is not None else (MAXIMA.get(name) or maximum_for(name))
        if limit is None or value <= limit:
            return value
    label = _label(name, flag)
    if value is None:
        if allow_none:
            return None
        raise InputError(f"{label} is required: pass a whole number >= {minimum}.")
    if _is_integer(value):
        value = int(value)  # type: ignore[call-overload]  # numpy integers are whole numbers too
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        else:
            raise InputError(f"{label} must be a whole number >= {minimum}, got {value!r}. Pass an integer.")
    if value < minimum:
        raise InputError(
            f"{label} must be a whole number >= {minimum}, got {value!r}. Pass for example {max(minimum, 1)}."
        )
    limit = maximum if maximum is not None else maximum_for(name)
    if limit is not None and value > limit:
        raise _too_large(label, value, limit, name)
    return value


def check_number(
    name: str,
    value: object,
    *,
    positive: bool = True,
    allow_zero: bool = False,
    maximum: float | None = None,
    flag: str | None = None,
    allow_none: bool = False,
) -> float | None:
    """``value`` as a float if it is finite, > 0 (or >= 0 with ``allow_zero``) and <= the maximum."""
    label = _label(name, flag)
    if value is None:
        if allow_none:
            return None
        raise InputError(f"{label} is required: pass a finite number.")
    if _is_bool(value) or not _is_real(value):
        raise InputError(f"{label} must be a number, got {value!r}.")
    try:
        x = float(value)  # type: ignore[arg-type]  # a real number (checked above)
    except OverflowError:
        x = math.inf
    except ValueError:  # Decimal('sNaN')
        x = math.nan
    if not math.isfinite(x):
        raise InputError(
            f"{label} must be a finite number, got {value!r} (NaN and infinity are not allowed)."
        )
    if positive and (x < 0 or (x == 0 and not allow_zero)):
        need = ">= 0" if allow_zero else "> 0"
        raise InputError(f"{label} must be {need}, got {value!r}. Pass a positive value.")
    limit = maximum if maximum is not None else maximum_for(name)
    if limit is not None and x > limit:
        raise _too_large(label, value, limit, name)
    return x


def check_context(model_id: str, max_context_tokens: int, input_len: int, output_len: int) -> None:
    """:class:`UnsupportedError` when a prompt plus its generated tokens exceed the model's maximum context.

    ``max_context_tokens`` is the config's ``max_position_embeddings``; an engine that extends it (RoPE
    scaling) serves a different model configuration: pass its config.json with the larger value. The last
    generated token is never fed back, so the positions used are ``input_len + output_len - 1`` (a
    2,048-token model answers a 2,048-token prompt with one token: the prompt fills every position).
    """
    total = input_len + output_len
    if max_context_tokens > 0 and total - 1 > max_context_tokens:
        raise UnsupportedError(
            f"The prompt ({input_len:,} tokens) plus the generated tokens ({output_len:,}) make {total:,} "
            f"tokens, beyond the {max_context_tokens:,}-token maximum context of {model_id}. Shorten "
            "--input-len/--output-len, choose a model with a longer context, or, if you serve it with an "
            "extended context (RoPE scaling), pass that config.json (its max_position_embeddings) as the "
            "model."
        )


def check_train_tokens(train_tokens: float | None, global_batch: int, seq_len: int) -> None:
    """:class:`InputError` when ``train_tokens`` do not fill one optimizer step of ``global_batch`` sequences
    of ``seq_len`` tokens: the run would end before its first step, and a time to train of a fraction of one
    step (microseconds for 1,000 tokens) is no answer (Megatron/DeepSpeed count training in whole steps)."""
    if train_tokens is None:
        return
    step = global_batch * seq_len
    if 0 < train_tokens < step:
        raise InputError(
            f"train_tokens ({train_tokens:,.0f}) is less than one optimizer step of global batch "
            f"{global_batch:,} x seq_len {seq_len:,} = {step:,} tokens: the run would not complete a single "
            f"step. Allowed: train_tokens >= global_batch x seq_len. Raise the training tokens (--tokens, "
            "train_tokens), or lower the global batch (--batch, global_batch_sequences) or the sequence "
            "length "
            "(--seq-len, seq_len_tokens)."
        )


def context_note(model_id: str, max_context_tokens: int, seq_len: int) -> str | None:
    """The warning for training sequences longer than the model's maximum context (its config's
    ``max_position_embeddings``), or None: the estimate is computed for the longer sequences, which the
    published model cannot attend over without extending its positions (RoPE scaling, a new config)."""
    if max_context_tokens <= 0 or seq_len <= max_context_tokens:
        return None
    return (
        f"WARNING: seq_len {seq_len:,} exceeds the {max_context_tokens:,}-token maximum context of "
        f"{model_id} "
        "(max_position_embeddings); the estimate assumes its positions are extended to that length. Lower "
        "--seq-len (seq_len_tokens) to at most the context, or pass a config.json with a larger "
        "max_position_embeddings as the model."
    )


# ------------------------------------------------------------------------------------------- outputs

_NOT_QUANTITIES = frozenset(
    {
        # signed quantities or indices that may legitimately be negative
        "savings_usd_per_hour",
        "savings_fraction",
        "delta",
        "error",
        "error_fraction",
        "log_error",
        "bias",
        "speedup_change",
        "z",
        # coordinates: south of the equator and west of Greenwich are negative
        "latitude_deg",
        "longitude_deg",
    }
)


def _is_signed(name: str) -> bool:
    return (
        name in _NOT_QUANTITIES
        or "saving" in name
        or "delta" in name
        or "change" in name
        or "error" in name
        or name.startswith("log")
        or "diff" in name
    )


def _field(obj: Any, name: str) -> Any:
    return getattr(obj, name)


def _violation(obj: Any, path: str) -> str | None:
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return None
    if isinstance(obj, int | float):
        x = float(obj)
        leaf = path.rsplit(".", 1)[-1].split("[", 1)[0]
        if math.isnan(x):
            return None if _is_signed(leaf) else f"{path} is NaN"
        if math.isinf(x):
            return None if _is_signed(leaf) else f"{path} is infinite"
        if x < 0 and not _is_signed(leaf):
            return f"{path} is negative ({x:g})"
        return None
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        names = [f.name for f in dataclasses.fields(obj)]
        if {"p10", "p90"} <= set(names):
            lo, hi = (_field(obj, n) for n in ("p10", "p90"))
            mid = next((_field(obj, n) for n in ("central", "p50", "value") if n in names), None)
            vals = [v for v in (lo, mid, hi) if isinstance(v, int | float)]
            if all(math.isfinite(v) for v in vals) and vals != sorted(vals):
                return f"{path} interval is out of order (p10={lo!r}, central={mid!r}, p90={hi!r})"
        for n in names:
            bad = _violation(getattr(obj, n), f"{path}.{n}")
            if bad:
                return bad
        return None
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            bad = _violation(v, f"{path}[{k!r}]")
            if bad:
                return bad
        return None
    if isinstance(obj, tuple | list):
        for i, v in enumerate(obj[:10_000]):
            bad = _violation(v, f"{path}[{i}]")
            if bad:
                return bad
    return None


_LAYOUT: dict[type, tuple[tuple[tuple[str, bool], ...], bool]] = {}


def _layout(tp: type) -> tuple[tuple[tuple[str, bool], ...], bool]:
    """Per dataclass type (cached): ((field name, signed), ...) and whether it is an interval."""
    out = _LAYOUT.get(tp)
    if out is None:
        names = [f.name for f in dataclasses.fields(tp)]
        out = (tuple((n, _is_signed(n)) for n in names), {"p10", "p90"} <= set(names))
        _LAYOUT[tp] = out
    return out


#: how :func:`_ok` treats each value type (by type alone, in the order of its checks), cached per type
_SCALAR, _SEQUENCE, _MAPPING, _NUMBER, _DATACLASS, _OTHER = range(1, 7)
_KINDS: dict[type, int] = {}


def _kind(t: type) -> int:
    """How :func:`_ok` checks a value of type ``t`` (cached): exact scalar types, exact tuple/list, a
    mapping, another number (numpy scalars), a dataclass instance, or anything else (not checked)."""
    k = _KINDS.get(t)
    if k is None:
        if t is int or t is bool or t is str or t is type(None):
            k = _SCALAR
        elif t is tuple or t is list:
            k = _SEQUENCE
        elif issubclass(t, Mapping):
            k = _MAPPING
        elif issubclass(t, int | float):
            k = _NUMBER
        elif dataclasses.is_dataclass(t) and not issubclass(t, type):
            k = _DATACLASS
        else:
            k = _OTHER
        _KINDS[t] = k
    return k


def _ok(obj: Any, signed: bool) -> bool:
    """Fast check (no messages): True when ``obj`` breaks no output invariant."""
    t = type(obj)
    if t is float:
        return signed or (obj >= 0 and obj != math.inf)  # NaN fails obj >= 0
    k = _KINDS.get(t) or _kind(t)
    if k == _SCALAR:
        return t is not int or signed or obj >= 0
    if k == _DATACLASS:
        fields, interval = _layout(t)
        if interval:
            lo, hi = _field(obj, "p10"), _field(obj, "p90")
            mid = getattr(obj, "central", None)
            if type(lo) is float and type(mid) is float and type(hi) is float:  # the usual Interval
                finite = math.isfinite(lo) and math.isfinite(mid) and math.isfinite(hi)
                if finite and not lo <= mid <= hi:
                    return False
            else:
                vals = [v for v in (lo, mid, hi) if isinstance(v, int | float)]
                if all(math.isfinite(v) for v in vals) and vals != sorted(vals):
                    return False
        for n, s in fields:
            v = getattr(obj, n)
            if type(v) is float:  # inline of the float case above
                if not (signed or s or (v >= 0 and v != math.inf)):
                    return False
            elif not _ok(v, signed or s):
                return False
        return True
    if k in (_SEQUENCE, _MAPPING):
        for v in obj[:10_000] if k == _SEQUENCE else obj.values():
            tv = type(v)
            if tv is str:
                continue
            if tv is float:
                if not (signed or (v >= 0 and v != math.inf)):
                    return False
            elif not _ok(v, signed):
                return False
        return True
    if k == _NUMBER:  # numpy scalars
        x = float(obj)
        return signed or (x >= 0 and x != math.inf)
    return True


def output_violation(result: Any, name: str = "result") -> str | None:
    """The first broken invariant in ``result`` (text), or None when all quantities are valid."""
    if _ok(result, False):
        return None
    return _violation(result, name) or f"{name} breaks an output invariant"


def check_outputs(result: Any, *, what: str, inputs: Mapping[str, Any]) -> None:
    """Raise :class:`GpufleetError` naming ``inputs`` if ``result`` breaks an output invariant.

    Invariants: every numeric field is finite and >= 0 (except signed fields such as savings and errors,
    which may be negative or NaN); every interval has p10 <= central <= p90.
    """
    bad = output_violation(result, what)
    if bad is not None:
        shown = ", ".join(f"{k}={v!r}" for k, v in inputs.items() if v is not None)
        raise GpufleetError(
            f"Internal check failed: {bad} for {shown}. This is a gpufleet bug: nothing was printed from "
            "this result. Report it with the inputs above; other GPUs, precisions or counts may still work."
        )


def _shown_input(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    for attr in ("id", "name", "path"):
        if hasattr(value, attr):
            return getattr(value, attr)
    return type(value).__name__


#: True while a checked public call runs (nested public calls skip their own check; the outer one covers it).
_DEPTH: contextvars.ContextVar[bool] = contextvars.ContextVar("gpufleet_checked_call", default=False)

_ARGUMENT_ERRORS = (
    TypeError,
    AttributeError,
    ValueError,
    KeyError,
    IndexError,
    ZeroDivisionError,
    OverflowError,
    RecursionError,
)


def _inputs(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    inputs = {f"arg{i}": _shown_input(a) for i, a in enumerate(args)}
    inputs.update({k: _shown_input(v) for k, v in kwargs.items()})
    return inputs


def _shown(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={str(v)[:80]!r}" for k, v in _inputs(args, kwargs).items())


def _guarded(fn: Callable[..., Any], what: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``fn(*args, **kwargs)`` as the outermost checked call (nested checked calls skip their checks), with
    the last guard on the arguments: a TypeError/ValueError/... escaping from bad arguments that no check
    above caught becomes an :class:`InputError` naming them."""
    token = _DEPTH.set(True)
    try:
        args, kwargs = check_argument_types(fn, args, kwargs)
        return fn(*args, **kwargs)
    except GpufleetError:
        raise
    except _ARGUMENT_ERRORS as exc:
        raise InputError(
            f"The {what} could not use the inputs {_shown(args, kwargs)} ({type(exc).__name__}: "
            f"{str(exc)[:200]}). Check each argument's type and range (see the docstring); if "
            "they are valid, this is a gpufleet bug: report it with these inputs."
        ) from exc
    finally:
        _DEPTH.reset(token)


def checked_output(what: str) -> Callable[[F], F]:
    """Decorator for public functions: check the result with :func:`check_outputs` (naming the inputs), and
    turn a TypeError/ValueError/... escaping from bad arguments into an :class:`InputError` naming them."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            if _DEPTH.get():  # called inside another checked call: the outermost one checks its result
                return fn(*args, **kwargs)
            result = _guarded(fn, what, args, kwargs)
            if not _ok(result, False):  # the inputs are only named when the check fails
                check_outputs(result, what=what, inputs=_inputs(args, kwargs))
            return result

        return cast(F, inner)

    return wrap


def checked_arguments(what: str) -> Callable[[F], F]:
    """Decorator for public functions whose results :func:`checked_output` cannot judge (plans, simulations,
    file readers: signed savings, empty tables): only the last guard on the arguments, so a wrong type
    (``read_fleet_file(None)``, ``plan_fleet("fleet.yaml")``) is an :class:`InputError` naming the inputs,
    never a bare TypeError/AttributeError."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            if _DEPTH.get():
                return fn(*args, **kwargs)
            return _guarded(fn, what, args, kwargs)

        return cast(F, inner)

    return wrap


# --------------------------------------------------------------------------------------------- argument types
# A public function's annotations say what each argument is; Python checks none of them, and duck typing reads
# a wrong type as something else: ``ignore_memory="no"`` is true, ``zero_stage=True`` is stage 1, a text where
# a list of names is wanted iterates its characters ("aws" -> providers a, w, s). The checks below read the
# annotation text (``from __future__ import annotations`` keeps it a string) and refuse such values by name.

_NUMPY_BOOL_NAMES = frozenset({"bool", "bool_"})


def _is_bool(value: object) -> bool:
    """True for True/False and numpy's bool scalars (not a Python int subclass)."""
    return isinstance(value, bool) or (
        type(value).__module__ == "numpy" and type(value).__name__ in _NUMPY_BOOL_NAMES
    )


def _is_integer(value: object) -> bool:
    """A whole-number type other than bool: int and numpy integers (numbers.Integral)."""
    import numbers

    return isinstance(value, numbers.Integral) and not _is_bool(value)


def _is_real(value: object) -> bool:
    """A real-number type other than bool: int, float, numpy numbers, Decimal and Fraction."""
    import decimal
    import numbers

    return isinstance(value, numbers.Real | decimal.Decimal) and not _is_bool(value)


_SEQUENCES = ("Sequence[", "list[", "tuple[", "Iterable[", "Collection[", "set[", "frozenset[")


@functools.cache
def _annotation_parts(text: str) -> frozenset[str]:
    """The members of a union annotation, split at the top level (``Sequence[Path | str] | None`` -> two)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "[") - (ch == "]")
        if ch == "|" and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return frozenset(p.strip() for p in parts)


def _check_value(name: str, annotation: object, value: Any, *, required: bool = False) -> Any:
    """``value`` for the argument or field ``name`` annotated ``annotation`` (text), normalised (numpy and
    Decimal numbers -> int/float), else :class:`InputError` naming ``name``. Annotations other than plain
    bool/int/float/str and tuples of them pass unchecked."""
    if not isinstance(annotation, str):
        return value
    parts = _annotation_parts(annotation)
    if value is None:
        if "None" in parts or "Any" in parts:
            return None
        raise InputError(f"{name} is required (got None). Pass a value; see the docstring for its type.")
    if "Any" in parts:
        return value
    kinds = parts - {"None"}
    if isinstance(value, str) and not value.strip() and any(k.endswith("Path") for k in kinds):
        raise InputError(  # Path("") is the working directory: "the file . is a directory" said nothing
            f"{name} is the blank text {value!r}, which names no file. Pass a path or a name."
        )
    if isinstance(value, str | bytes) and kinds and all(k.startswith(_SEQUENCES) for k in kinds):
        raise InputError(
            f"{name} must be a list of values such as [{value!r}], got the single text {str(value)[:60]!r} "
            "(a text would be read letter by letter)."
        )
    if kinds == {"bool"}:
        if not _is_bool(value):
            raise InputError(
                f"{name} must be True or False, got {value!r} (a text such as 'no' would read as true). "
                "Pass a boolean."
            )
        return bool(value)
    if kinds == {"str"}:
        if not isinstance(value, str):
            raise InputError(f"{name} must be a text, got {type(value).__name__} {str(value)[:60]!r}.")
        if required and not value.strip():
            raise InputError(f"{name} is blank; it names nothing. Pass a value.")
        return value
    if kinds in ({"int"}, {"float"}, {"int", "float"}):
        if _is_bool(value):
            raise InputError(f"{name} must be a number, got the boolean {value!r}. Pass a number.")
        if "float" in kinds and _is_real(value):
            try:
                x = float(value)
            except (OverflowError, ValueError):  # a huge int; Decimal('sNaN')
                x = math.nan
            if not math.isfinite(x):
                raise InputError(
                    f"{name} must be a finite number, got {value!r} (NaN and infinity are not allowed)."
                )
            return x if not isinstance(value, int) else value
        if _is_integer(value):
            return int(value)
        return value  # floats and others for an int: the function's own check names them
    if kinds in ({"tuple[str, ...]"}, {"tuple[int, ...]"}, {"tuple[tuple[str, ...], ...]"}):
        if isinstance(value, str | bytes) or not isinstance(value, tuple | list):
            raise InputError(
                f"{name} must be a list of values such as ({value!r},), got the single "
                f"{type(value).__name__} {str(value)[:60]!r}"
                + (" (a text would be read letter by letter)." if isinstance(value, str) else ".")
            )
        inner = next(iter(kinds))[len("tuple[") : -len(", ...]")]
        return tuple(_check_value(f"{name}[{i}]", inner, v, required=True) for i, v in enumerate(value))
    return value


@functools.cache
def _signature(fn: Callable[..., Any]) -> tuple[tuple[str, object, bool, bool], ...]:
    """(name, annotation text, positional, required) per parameter of ``fn``."""
    import inspect

    out = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        positional = p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        out.append((p.name, p.annotation, positional, p.default is p.empty))
    return tuple(out)


def check_argument_types(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``args`` and ``kwargs`` for ``fn`` checked against its bool/int/float/str annotations (see
    :func:`_check_value`); numpy and Decimal numbers come back as int/float."""
    params = _signature(fn)
    new_args = list(args)
    positional = [p for p in params if p[2]]
    for i, value in enumerate(args[: len(positional)]):
        name, annotation, _, required = positional[i]
        new_args[i] = _check_value(name, annotation, value, required=required)
    by_name = {p[0]: p for p in params}
    new_kwargs = dict(kwargs)
    for key, value in kwargs.items():
        if key in by_name:
            _, annotation, _, required = by_name[key]
            new_kwargs[key] = _check_value(key, annotation, value, required=required)
    return tuple(new_args), new_kwargs


def check_dataclass_fields(obj: Any, *, what: str) -> Any:
    """``obj`` (a dataclass instance built by the caller, not by a gpufleet reader) with each field checked
    against its annotation as :func:`check_argument_types` checks arguments; numbers must also be >= 0.
    Returns ``obj``, or a copy with numpy/Decimal numbers made int/float."""
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        new = _check_value(f"{what} field {f.name}", f.type, value, required=required)
        if isinstance(new, int | float) and not isinstance(new, bool) and new < 0:
            raise InputError(f"{what} field {f.name} must be >= 0, got {value!r}.")
        if type(new) is not type(value) or new != value:
            changes[f.name] = new
    return dataclasses.replace(obj, **changes) if changes else obj


__all__ = [
    "MAXIMA",
    "MAX_BATCH",
    "MAX_COLD_START_S",
    "MAX_CONCURRENCY",
    "MAX_GPUS",
    "MAX_GPU_MEMORY_GIB",
    "MAX_HOURS",
    "MAX_PRICE_USD_PER_HOUR",
    "MAX_RANKED",
    "MAX_REQUESTS_PER_S",
    "MAX_SEQUENCE_TOKENS",
    "MAX_TIME_LIMIT_S",
    "MAX_TRAIN_TOKENS",
    "MAX_USD",
    "check_argument_types",
    "check_context",
    "check_count",
    "check_dataclass_fields",
    "check_number",
    "check_outputs",
    "check_train_tokens",
    "checked_arguments",
    "checked_output",
    "context_note",
    "maximum_for",
    "output_violation",
]
