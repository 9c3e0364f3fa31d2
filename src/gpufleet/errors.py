"""The exception tree of gpufleet.

Every error raised on purpose by the library derives from :class:`GpufleetError`. Each message says what is
wrong, what is allowed, and how to fix it, in one paragraph. The CLI turns any ``GpufleetError`` into that
paragraph on stderr and exit code 2, without a traceback.

Tree::

    GpufleetError
    ├── InputError              a bad value given by the caller (flag, argument, workload field)
    │   ├── UnknownNameError    an unknown GPU, model, provider, scenario, ... (lists close matches)
    │   └── UnsupportedError    a combination the hardware or the model cannot do (bf16 on a T4, ...)
    ├── ConfigFileError         a user file (catalog, workload, scenarios, config.json) is malformed
    ├── DataError               a shipped data table is missing or corrupted (reinstall the package)
    ├── FetchError              a price API could not be reached or answered something unexpected
    └── InfeasibleError         nothing satisfies the request (raised only where a status won't do)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


class GpufleetError(Exception):
    """Root of every error gpufleet raises on purpose."""


class InputError(GpufleetError, ValueError):
    """A value given by the caller is not allowed."""


class UnknownNameError(InputError, KeyError):
    """A name (GPU, model, provider, scenario, ...) is not known.

    ``KeyError`` quotes its message in ``str()``; this class restores plain text.
    """

    def __init__(self, kind: str, name: str, known: Iterable[str], hint: str = "") -> None:
        known_list = sorted({str(k) for k in known} - {""})
        self.kind = kind
        self.name = name
        self.close_matches = close_matches(name, known_list)
        if self.close_matches:
            allowed = "Did you mean: " + ", ".join(self.close_matches) + "?"
        else:
            # a name holding a comma or a space is quoted, so the list reads unambiguously
            names = [repr(k) if ("," in k or k != k.strip() or " " in k) else k for k in known_list[:40]]
            shown = ", ".join(names) + (f" ... ({len(known_list)} in all)" if len(known_list) > 40 else "")
            plural = kind + ("es" if kind.endswith(("s", "x", "ch", "sh")) else "s")  # provider classes
            allowed = f"Known {plural}: {shown}."
        msg = f"Unknown {kind} {name!r}. {allowed}"
        if hint:
            msg += f" {hint}"
        super().__init__(msg)

    def __str__(self) -> str:
        return str(self.args[0])


class UnsupportedError(InputError):
    """A combination that the hardware, the model or the engine cannot do."""


class ConfigFileError(GpufleetError):
    """A user-supplied file is malformed. The message names the file, the entry and the field."""


class DataError(GpufleetError):
    """A data table shipped with the package is missing or corrupted."""


class FetchError(GpufleetError):
    """A provider price API could not be fetched or parsed."""


class InfeasibleError(GpufleetError):
    """Nothing satisfies the request."""


#: Most items a message lists (unknown keys, problems); the rest are counted. A file with 100,000 unknown keys
#: made a 78 MB message that took seconds to print and that nobody could read.
MAX_LISTED = 8


def capped_list(
    items: Sequence[str],
    *,
    sep: str = ", ",
    what: str = "more",
    limit: int = MAX_LISTED,
    total: int | None = None,
) -> str:
    """``items`` joined with ``sep``, the first ``limit`` of them and then "and N more" (``what``); ``total``:
    how many there are when ``items`` holds only the first few."""
    shown = sep.join(items[:limit])
    rest = (len(items) if total is None else total) - min(len(items), limit)
    return f"{shown}{sep}and {rest:,} {what}" if rest > 0 else shown


def close_matches(name: str, known: Iterable[str], n: int = 5) -> list[str]:
    """Return up to ``n`` known names close to ``name`` (case-insensitive, substring matches first)."""
    known_list = list(known)
    lower = {k.lower(): k for k in known_list}
    needle = name.lower().strip()
    subs = [k for k in known_list if needle and (needle in k.lower() or k.lower() in needle)]
    import difflib  # only when a name is unknown (~1 ms of start-up otherwise)

    fuzzy = [lower[m] for m in difflib.get_close_matches(needle, list(lower), n=n, cutoff=0.6)]
    out: list[str] = []
    for k in subs + fuzzy:
        if k not in out:
            out.append(k)
    return out[:n]


__all__ = [
    "MAX_LISTED",
    "ConfigFileError",
    "DataError",
    "FetchError",
    "GpufleetError",
    "InfeasibleError",
    "InputError",
    "UnknownNameError",
    "UnsupportedError",
    "capped_list",
    "close_matches",
]
