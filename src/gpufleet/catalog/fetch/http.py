"""The only network code of gpufleet: GET JSON with timeouts and a few retries, errors as :class:`FetchError`.

Tests (and callers that need a proxy or a recorded replay) inject an ``httpx`` transport through
:data:`TRANSPORT` or the ``transport`` argument; nothing connects at import.
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from gpufleet.errors import FetchError

#: Injected transport (e.g. ``httpx.MockTransport``); None = the real network.
TRANSPORT: httpx.BaseTransport | None = None
TIMEOUT_S = httpx.Timeout(60.0, connect=15.0)
MAX_ATTEMPTS = 3  # one try plus two retries, on connection errors, 429 and 5xx only
BACKOFF_S = 1.0
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


def make_client(transport: httpx.BaseTransport | None = None) -> httpx.Client:
    """An ``httpx.Client`` with our timeouts, using ``transport`` or :data:`TRANSPORT` when given."""
    return httpx.Client(
        transport=transport or TRANSPORT,
        timeout=TIMEOUT_S,
        follow_redirects=True,
        headers={"User-Agent": "gpufleet (price refresh)"},
    )


def _redact(url: str) -> str:
    u = httpx.URL(url)
    return str(u.copy_remove_param("key")) if "key" in u.params else url


def get_json(client: httpx.Client, url: str, params: dict[str, str] | None = None, *, what: str) -> Any:
    """GET ``url`` and decode JSON. ``what`` names the API in error messages (API keys never appear)."""
    last = ""
    for attempt in range(MAX_ATTEMPTS):
        if attempt:
            time.sleep(BACKOFF_S * attempt)
        try:
            resp = client.get(url, params=params)
        except httpx.HTTPError as exc:
            last = f"{type(exc).__name__}: {exc}"
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


__all__ = ["BACKOFF_S", "MAX_ATTEMPTS", "TIMEOUT_S", "TRANSPORT", "get_json", "make_client"]
