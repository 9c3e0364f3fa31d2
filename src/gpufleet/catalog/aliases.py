"""Accelerator name aliases: every spelling seen in provider catalogs mapped to a spec id.

The shipped ``data/gpu_aliases.csv`` holds the generic mapping; its ``notes`` column documents per-provider
exceptions (RunPod "H100" is PCIe, Cudo "A100" is 80 GB PCIe, ...), implemented in
:func:`gpufleet.catalog.offer_gpu.resolve_offer_gpu`.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from importlib import resources

from gpufleet.errors import DataError

_ALIAS_FILE = "gpu_aliases.csv"


@dataclass(frozen=True, slots=True, kw_only=True)
class Alias:
    alias: str
    spec_id: str
    notes: str


@cache
def load_aliases() -> dict[str, Alias]:
    """Alias table keyed by the exact spelling and by its lower-case form."""
    from gpufleet.catalog.specs import load_specs

    specs = load_specs()
    try:
        text = resources.files("gpufleet.catalog").joinpath("data", _ALIAS_FILE).read_text(encoding="utf-8")
    except (FileNotFoundError, OSError) as exc:
        raise DataError(f"The shipped alias table {_ALIAS_FILE} is missing. Reinstall gpufleet.") from exc
    out: dict[str, Alias] = {}
    for i, row in enumerate(csv.DictReader(text.splitlines()), start=2):
        alias, spec_id = (row.get("alias") or "").strip(), (row.get("id") or "").strip()
        if not alias or spec_id not in specs:
            raise DataError(
                f"{_ALIAS_FILE} line {i}: alias {alias!r} points to unknown spec id {spec_id!r}. "
                "Reinstall gpufleet to restore the shipped tables."
            )
        entry = Alias(alias=alias, spec_id=spec_id, notes=(row.get("notes") or "").strip())
        out[alias] = entry
        out.setdefault(alias.lower(), entry)
    return out
