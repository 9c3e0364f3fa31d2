"""The only network code of gpufleet: GET JSON with timeouts and a few retries, errors as :class:`FetchError`.

Tests (and callers that need a proxy or a recorded replay) inject an ``httpx`` transport through
:data:`TRANSPORT` or the ``transport`` argument; nothing connects at import.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

import httpx

from gpufleet.errors import FetchError, InputError

#: Injected transport (e.g. ``httpx.MockTransport``); None = the real network.
TRANSPORT: httpx.BaseTransport | None = None
TIMEOUT_S = httpx.Timeout(60.0, connect=15.0)
#: Total network time of one command [s] (every request, retry and back-off of a `catalog update`): 15 min,
#: enough for the AWS bulk files of every shipped region; a server that accepts and never answers cannot hold
#: a command longer.
DEFAULT_BUDGET_S = 900.0
MAX_ATTEMPTS = 3  # one try plus two retries, on connection errors, 429 and 5xx only
BACKOFF_S = 1.0
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


class BudgetClient(httpx.Client):
    """An ``httpx.Client`` with a total time budget: :func:`get_json` stops when it is spent."""

    budget_s: float = DEFAULT_BUDGET_S
    deadline: float = math.inf  # time.monotonic() value


def make_client(
    transport: httpx.BaseTransport | None = None, *, budget_s: float = DEFAULT_BUDGET_S
) -> httpx.Client:
    """An ``httpx.Client`` with our timeouts and a total budget of ``budget_s`` seconds from now."""
    if not (math.isfinite(budget_s) and budget_s > 0):
        raise InputError(f"The network time budget must be a positive number of seconds, got {budget_s!r}.")
    client = BudgetClient(
        transport=transport or TRANSPORT,
        timeout=TIMEOUT_S,
        follow_redirects=True,
        headers={"User-Agent": "gpufleet (price refresh)"},
    )
    client.budget_s = budget_s
    client.deadline = time.monotonic() + budget_s
    return client


def _remaining(client: httpx.Client, what: str) -> float:
    deadline = getattr(client, "deadline", math.inf)
    left = deadline - time.monotonic()
    if left <= 0:
        budget = getattr(client, "budget_s", DEFAULT_BUDGET_S)
        raise FetchError(
            f"The network time budget of {budget:g} s for this command is spent (waiting for the {what}). "
            "The API is slow or not answering; try again later, or raise the budget with --network-budget. "
            "Nothing was written."
        )
    return left


def _redact(url: str) -> str:
    u = httpx.URL(url)
    return str(u.copy_remove_param("key")) if "key" in u.params else url


def get_json(client: httpx.Client, url: str, params: dict[str, str] | None = None, *, what: str) -> Any:
    """GET ``url`` and decode JSON. ``what`` names the API in error messages (API keys never appear)."""
    last = ""
    for attempt in range(MAX_ATTEMPTS):
        if attempt:
            time.sleep(min(BACKOFF_S * attempt, _remaining(client, what)))
        left = _remaining(client, what)
        timeout = httpx.Timeout(
            min(TIMEOUT_S.read or 60.0, left),
            connect=min(TIMEOUT_S.connect or 15.0, left),
            write=min(TIMEOUT_S.write or 60.0, left),
            pool=min(TIMEOUT_S.pool or 60.0, left),
        )
        try:
            resp = client.get(url, params=params, timeout=timeout)
        except httpx.HTTPError as exc:
            last = f"{type(exc).__name__}: {exc}"
            _remaining(client, what)  # a timeout that spent the budget ends here, said so
            continue
        if resp.status_code in _RETRY_STATUS:
            last = f"HTTP {resp.status_code}"
            continue
        if resp.status_code != 200:
            raise FetchError(
                f"The {what} answered HTTP {resp.status_code} for {_redact(str(resp.request.url))}: "
                f"{resp.text[:200]!r}. Check the --region values and the API key (if any); if the API "
                "changed, report it. Nothing was written."
            )
        try:
            return resp.json()
        except ValueError as exc:
            raise FetchError(
                f"The {what} returned something that is not JSON for {_redact(str(resp.request.url))} "
                f"({exc}). Try again later; nothing was written."
            ) from exc
    raise FetchError(
        f"Could not reach the {what} at {_redact(url)} after {MAX_ATTEMPTS} attempts ({last}). Check the "
        "network connection (or proxy) and try again; nothing was written."
    )


#: Largest hourly price accepted from an API [USD/h]: 10^5 (the dearest GPU VMs cost ~10^2 USD/h).
MAX_API_PRICE_USD = 1e5

F = TypeVar("F", bound=Callable[..., Any])


def api_number(value: Any, *, api: str, where: str, field: str, maximum: float = MAX_API_PRICE_USD) -> float:
    """``value`` as a finite number in [0, ``maximum``], else :class:`FetchError` naming it."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        x = math.nan
    else:
        try:
            x = float(value)
        except (ValueError, OverflowError):
            x = math.nan
    if not (math.isfinite(x) and 0 <= x <= maximum):
        raise FetchError(
            f"The {api} returned {field} = {str(value)[:60]!r} for {where}: not a price (a finite number "
            f"between 0 and {maximum:g}). The API format may have changed; nothing was "
            "written. Try again later or report it."
        )
    return x


def api_parser(api: str) -> Callable[[F], F]:
    """Decorator for a pure API-response parser: a missing field or a value of the wrong type (a scalar where
    an object belongs, ...) becomes a :class:`FetchError` naming ``api`` instead of a traceback."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
                raise FetchError(
                    f"The {api} returned data of an unexpected shape ({type(exc).__name__}: "
                    f"{str(exc)[:120]}); the API format may have changed. Nothing was written; try again "
                    "later or report it."
                ) from None

        return cast(F, inner)

    return wrap


__all__ = [
    "BACKOFF_S",
    "DEFAULT_BUDGET_S",
    "MAX_ATTEMPTS",
    "TIMEOUT_S",
    "TRANSPORT",
    "BudgetClient",
    "api_number",
    "api_parser",
    "get_json",
    "make_client",
]
