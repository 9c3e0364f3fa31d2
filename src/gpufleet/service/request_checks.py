"""Checks every route's query string and path ids get before its own parameters (an app-level dependency).

- A path id (``/api/v1/jobs/{job_id}``) beyond the database's 64-bit integers cannot name anything: it is a
  400 saying so (it was a 500: SQLite and PostgreSQL refuse to compare with it); so is one that is not
  plain ASCII digits (``1%20``, ``+1``: pydantic's lax int read them as 1, and ``DELETE`` acted on it).
- On ``/api/`` routes, a query key the route does not take (``?limt=5``) is refused with the keys it takes,
  and a key given twice (``?limit=1&limit=2``) is refused unless the route takes a list for it
  (``?gpu=H100&gpu=A100``): both were silently ignored or the last value won, an answer to another
  question."""

from __future__ import annotations

import typing
from collections import Counter
from typing import Any

from fastapi import Request

from gpufleet.errors import InputError

#: the largest id a row can have (signed 64-bit, SQLite INTEGER and PostgreSQL BIGINT)
MAX_ID = 2**63 - 1


def _is_list(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, set, frozenset):
        return True
    return any(_is_list(arg) for arg in typing.get_args(annotation))


def _params(dependant: Any, kind: str) -> list[Any]:
    """The ``kind`` ("query_params", "path_params") of a route's dependant and of its dependencies."""
    out = list(getattr(dependant, kind, ()))
    for sub in getattr(dependant, "dependencies", ()):
        out += _params(sub, kind)
    return out


def _int_param(annotation: Any) -> bool:
    return annotation is int or int in typing.get_args(annotation)


def _lax_int(text: str) -> bool:
    """``text`` is read as an int by pydantic's lax mode (padded, signed, ``1.0``, ``1_0``): the route would
    act on that id (``DELETE /api/v1/tokens/1%20`` revoked token 1). Text it refuses gets its own 422."""
    from pydantic import TypeAdapter, ValidationError

    try:
        TypeAdapter(int).validate_python(text)
    except ValidationError:
        return False
    return True


async def check_request(request: Request) -> None:
    """Raise :class:`InputError` (400) for an out-of-range path id, or an unknown or repeated query key."""
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    if dependant is None:
        return
    for field in _params(dependant, "path_params"):
        raw = request.path_params.get(field.alias)
        if not isinstance(raw, str) or not _int_param(field.field_info.annotation):
            continue
        text = raw.strip()
        if text.lstrip("+-").isdigit() and text.isascii() and abs(int(text)) > MAX_ID:
            raise InputError(
                f"{field.alias} = {text[:40]} is out of range: ids are whole numbers from 1 to {MAX_ID:,}. "
                "List the objects (the route without the id) to find theirs."
            )
        if not (raw.isascii() and raw.lstrip("-").isdigit()) and _lax_int(raw):  # "1 ", "+1", "1.0", "1_0"
            raise InputError(
                f"{field.alias} = {raw[:40]!r} is not an id: ids are whole numbers written with the digits "
                "0-9 only (no plus sign, space, decimal point or underscore). List the objects (the route "
                "without the id) to find theirs."
            )
    if not request.url.path.startswith("/api/"):
        return
    fields = _params(dependant, "query_params")
    takes = {f.alias: _is_list(f.field_info.annotation) for f in fields}
    counts = Counter(key for key, _ in request.query_params.multi_items())
    unknown = sorted(k for k in counts if k not in takes)
    if unknown:
        allowed = ", ".join(sorted(takes)) or "none"
        raise InputError(
            f"Query parameter {', '.join(repr(k[:40]) for k in unknown[:5])} is not taken by "
            f"{request.method} {getattr(route, 'path', request.url.path)}. Allowed: {allowed}. Fix the "
            "name (/openapi.json lists each route's parameters)."
        )
    repeated = sorted(k for k, n in counts.items() if n > 1 and not takes.get(k, False))
    if repeated:
        raise InputError(
            f"Query parameter {repeated[0]!r} is given {counts[repeated[0]]} times; it takes one value. "
            "Give it once (only list filters such as gpu or provider may repeat)."
        )
    ints = {f.alias for f in fields if _int_param(f.field_info.annotation)}  # ?limit=5.0 was read as 5
    for key, value in request.query_params.multi_items():
        if key in ints and not (value.isascii() and value.lstrip("-").isdigit()) and _lax_int(value):
            raise InputError(
                f"Query parameter {key}={value[:40]!r} is not a whole number as written: give it with the "
                "digits 0-9 only (no plus sign, space, decimal point or underscore), e.g. "
                f"{key}={value.strip().lstrip('+').split('.')[0].replace('_', '') or '1'}."
            )
