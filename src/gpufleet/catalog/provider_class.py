"""Provider class (hyperscaler, gpu_cloud, marketplace, aggregator) from ``data/provider_capabilities.csv``.

The CSV is a verbatim copy of the sourced reference table (provenance in ``data/PROVENANCE_reference.md``;
class definitions in docs/nomenclature.md). Providers not in the table (user catalogs) have class ``unknown``.
"""

from __future__ import annotations

import csv
from functools import cache
from importlib import resources

from gpufleet.errors import DataError, UnknownNameError

_FILE = "provider_capabilities.csv"

#: the classes of provider_capabilities.csv
PROVIDER_CLASSES: tuple[str, ...] = ("hyperscaler", "gpu_cloud", "marketplace", "aggregator")
UNKNOWN_CLASS = "unknown"


@cache
def load_provider_classes() -> dict[str, str]:
    """Provider -> class, from the shipped table (cached)."""
    try:
        text = resources.files("gpufleet.catalog").joinpath("data", _FILE).read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"The shipped {_FILE} is missing or unreadable ({exc}). Reinstall gpufleet.") from exc
    out: dict[str, str] = {}
    for line, row in enumerate(csv.DictReader(text.splitlines()), start=2):
        cls = (row.get("class") or "").strip()
        if cls not in PROVIDER_CLASSES:
            raise DataError(
                f"{_FILE} line {line}: class {cls!r} is not one of {PROVIDER_CLASSES}. Reinstall."
            )
        out[(row.get("provider") or "").strip()] = cls
    return out


def provider_class(provider: str) -> str:
    """The class of ``provider``; ``unknown`` for providers outside the shipped table."""
    return load_provider_classes().get(provider.strip().lower(), UNKNOWN_CLASS)


def check_provider_classes(values: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """Normalised class names; :class:`UnknownNameError` with close matches for an unknown one."""
    out: list[str] = []
    for v in values:
        key = v.strip().lower().replace("-", "_").replace(" ", "_")
        if key not in PROVIDER_CLASSES:
            raise UnknownNameError(
                "provider class",
                v,
                PROVIDER_CLASSES,
                hint="hyperscaler (aws, gcp, azure, oci), gpu_cloud (lambda, runpod, ...), marketplace "
                "(vast, lium, hyperbolic), aggregator (shadeform).",
            )
        if key not in out:
            out.append(key)
    return tuple(out)
