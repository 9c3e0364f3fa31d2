"""Results as plain JSON: dataclasses -> objects (fields in declaration order), tuples -> lists, NaN -> null.

The top-level object carries ``kind`` (``recommendation``, ``migration``, ``scenario``, ``scenario_set``) and
``gpufleet_version`` so that consumers can tell documents apart. Keys are the dataclass field names, which
carry their units (``cost_usd_per_month``, ``ttft_s``).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gpufleet import __version__

if TYPE_CHECKING:
    from gpufleet.report.common import Result


#: how :func:`to_jsonable` converts a value of each type (worked out once per type)
_DATACLASS, _MAPPING, _SEQUENCE, _FLOAT, _SCALAR, _OTHER = range(6)
_HOW: dict[type, tuple[int, tuple[str, ...]]] = {}


def _how(t: type) -> tuple[int, tuple[str, ...]]:
    """The conversion of values of type ``t`` (the order of the checks is :func:`to_jsonable`'s contract)."""
    how = _HOW.get(t)
    if how is None:
        if dataclasses.is_dataclass(t) and not issubclass(t, type):
            how = (_DATACLASS, tuple(f.name for f in dataclasses.fields(t)))
        elif issubclass(t, Mapping):
            how = (_MAPPING, ())
        elif issubclass(t, list | tuple):
            how = (_SEQUENCE, ())
        elif issubclass(t, float):
            how = (_FLOAT, ())
        elif t is type(None) or issubclass(t, str | int | bool):
            how = (_SCALAR, ())
        else:
            how = (_OTHER, ())
        _HOW[t] = how
    return how


def to_jsonable(value: Any) -> Any:
    """Convert a result (or any part of it) into JSON-compatible Python values: dataclass -> object (fields in
    declaration order), mapping -> object (keys as text), list or tuple -> array, non-finite float -> None,
    numpy scalar -> its Python value (the kind of each type is worked out once: results hold many rows of
    the same few types)."""
    kind, names = _HOW.get(type(value)) or _how(type(value))
    if kind == _FLOAT:
        return value if math.isfinite(value) else None
    if kind == _SCALAR:
        return value
    if kind == _DATACLASS:
        return {n: to_jsonable(getattr(value, n)) for n in names}
    if kind == _SEQUENCE:
        return [to_jsonable(v) for v in value]
    if kind == _MAPPING:
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if hasattr(value, "item"):  # numpy scalar
        return to_jsonable(value.item())
    raise TypeError(f"cannot convert {type(value).__name__} to JSON")


def result_kind(result: Result) -> str:
    from gpufleet.recommend.types import Migration, Recommendation, ScenarioResult, ScenarioSetResult

    kinds: tuple[tuple[type, str], ...] = (
        (Recommendation, "recommendation"),
        (Migration, "migration"),
        (ScenarioResult, "scenario"),
        (ScenarioSetResult, "scenario_set"),
    )
    for cls, name in kinds:
        if isinstance(result, cls):
            return name
    raise TypeError(f"not a gpufleet result: {type(result).__name__}")


def envelope(kind: str, **payload: Any) -> dict[str, Any]:
    """A JSON document of ``kind``: ``{"kind": ..., "gpufleet_version": ..., **payload}`` (payload made
    JSON-safe). Every command's JSON output is one of these; ``gpufleet/report/schemas/<kind>.schema.json``
    describes each kind."""
    doc: dict[str, Any] = {"kind": kind, "gpufleet_version": __version__}
    doc |= {k: to_jsonable(v) for k, v in payload.items()}
    return doc


def dump_json(doc: dict[str, Any]) -> str:
    """``doc`` as JSON text (2-space indent, no NaN, trailing newline)."""
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def render_json(result: Result, *, assumptions: tuple[str, ...] = ()) -> str:
    """The JSON document for ``result`` (2-space indent, trailing newline)."""
    doc: dict[str, Any] = {"kind": result_kind(result), "gpufleet_version": __version__}
    doc["assumptions"] = list(assumptions)
    doc["result"] = to_jsonable(result)
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
