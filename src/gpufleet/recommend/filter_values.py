"""Parsing and checking of filter values (comma lists, GPU families, vendors): what a workload file or the CLI
flags are checked with before any offer table is loaded. The table filters themselves (numpy masks) are in
:mod:`gpufleet.recommend.filters`, which re-exports these names; this module imports no numpy.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

from gpufleet.catalog.specs import get_spec, load_specs, strip_vendor_prefix
from gpufleet.errors import InputError, UnknownNameError


def split_values(values: str | Iterable[str] | None) -> tuple[str, ...]:
    """``["aws,gcp", "azure"]`` or ``"aws, gcp"`` -> ``("aws", "gcp", "azure")``: stripped, empty items of a
    comma list (``"aws,"``) and repeats dropped, order kept; :class:`InputError` when a value given is blank
    as a whole (``--gpu ""``, also next to another: ``--gpu H100 --gpu " "`` kept H100 alone, silently)."""
    if values is None:
        return ()
    items = [values] if isinstance(values, str) else list(values)
    if len(items) > 1 and any(not str(item).strip(" ,\t") for item in items):
        raise InputError(
            f"A filter was given an empty value among its values ({', '.join(repr(str(i)) for i in items)}): "
            "each value names at least one item (for example --gpu H100 --gpu A100, or --provider aws,gcp); "
            "remove the empty one."
        )
    out: list[str] = []
    for item in items:
        for part in str(item).split(","):
            part = part.strip()
            if part and part not in out:
                out.append(part)
    if items and not out:
        raise InputError(
            f"A filter was given an empty value ({', '.join(repr(str(i)) for i in items)}): name at least "
            "one value (for example --gpu H100 or --provider aws,gcp), or leave the filter out to keep "
            "everything."
        )
    return tuple(out)


@cache
def gpu_family(name: str) -> tuple[str, ...]:
    """Spec ids a GPU name stands for: its family (``H100`` -> H100-SXM, H100-PCIe, H100-NVL), else the one
    spec of an id or alias. :class:`UnknownNameError` (close matches) for anything else."""
    specs = load_specs()
    bare = strip_vendor_prefix(name).strip()
    key = bare.lower().replace(" ", "-")
    family = tuple(sorted(s for s in specs if s.lower() == key or s.lower().startswith(key + "-")))
    if family:
        return family
    return (get_spec(name).id,)


def expand_gpus(names: Iterable[str]) -> tuple[str, ...]:
    """Every spec id named by ``names`` (families expanded), in order, without repeats."""
    out: list[str] = []
    for n in names:
        out += [g for g in gpu_family(n) if g not in out]
    return tuple(out)


def check_vendors(values: Iterable[str]) -> tuple[str, ...]:
    """Vendor names as given; :class:`UnknownNameError` for a vendor no spec has."""
    known = sorted({s.vendor for s in load_specs().values()})
    lower = {k.lower() for k in known}
    for v in values:
        if v.strip().lower() not in lower:
            raise UnknownNameError("GPU vendor", v, known)
    return tuple(values)


__all__ = ["check_vendors", "expand_gpus", "gpu_family", "split_values"]
