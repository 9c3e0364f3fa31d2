"""Inventory: which offer (provider, instance type, region, price kind) each GPU runs on, and its price.

Sources, first match wins: (1) an inventory file (YAML or CSV) whose entries match a host (glob) or a GPU
UUID; (2) the series labels (``provider``, ``instance_type``, ``region`` from node labels such as
``node_kubernetes_io_instance_type``); (3) the GPU model alone: then the price is the median on-demand price
per GPU of that GPU in the catalog and the finding says so (``price_basis = "catalog median"``).

Inventory file (YAML: a list under ``hosts:``; CSV: the same keys as columns)::

    hosts:
      - host: "gpu-node-*"          # glob on the host label, or `gpu_uuid: GPU-...`
        provider: aws
        instance_type: p5.48xlarge
        region: us-east-1
        price_kind: on_demand        # any gpufleet price kind (on_demand, spot, reserved_1y, commit_3y, ...)
        team: ml-platform            # optional: the team its workloads are charged to
        model: llama-3.1-8b          # optional: the model served, checked by the estimator
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

import numpy as np
from pydantic import ConfigDict, ValidationError

from gpufleet.catalog.pricing import PRICE_KINDS, prices_usd_per_hour, unverified_allowed
from gpufleet.catalog.specs import AcceleratorSpec, get_spec
from gpufleet.errors import ConfigFileError, GpufleetError, close_matches
from gpufleet.fileio import check_top_level, load_structured_file, read_csv_file
from gpufleet.strict_model import NoBoolNumbers

# nvidia-smi / DCGM model names -> spec ids (gpufleet.catalog gpu_specs.csv). Order matters (specific first).
_MODEL_RULES: Final[tuple[tuple[str, str], ...]] = (
    (r"H200.*NVL", "H200-NVL"),
    (r"H200", "H200-SXM"),
    (r"H100.*NVL", "H100-NVL"),
    (r"H100.*PCIE", "H100-PCIe"),
    (r"H100", "H100-SXM"),
    (r"H800", "H800"),
    (r"GH200", "GH200"),
    (r"B200", "B200"),
    (r"A100.*(SXM|HGX).*80", "A100-SXM-80GB"),
    (r"A100.*80.*(SXM|HGX)", "A100-SXM-80GB"),
    (r"A100.*PCIE.*80|A100.*80.*PCIE", "A100-PCIe-80GB"),
    (r"A100.*PCIE", "A100-PCIe-40GB"),
    (r"A100.*80", "A100-SXM-80GB"),
    (r"A100", "A100-SXM-40GB"),
    (r"A10G", "A10G"),
    (r"A30", "A30"),
    (r"A40", "A40"),
    (r"A10\b", "A10"),
    (r"L40S", "L40S"),
    (r"L40", "L40"),
    (r"\bL4\b", "L4"),
    (r"\bT4\b", "T4"),
    (r"V100.*SXM2.*32", "V100-SXM2-32GB"),
    (r"V100.*PCIE", "V100-PCIe-16GB"),
    (r"V100", "V100-SXM2-16GB"),
)


def spec_for_model(model: str | None) -> AcceleratorSpec | None:
    """The accelerator spec of an nvidia-smi/DCGM model name (``NVIDIA H100 80GB HBM3`` -> H100-SXM)."""
    if not model:
        return None
    up = model.upper().replace("_", " ")
    for pattern, spec_id in _MODEL_RULES:
        if re.search(pattern, up):
            try:
                return get_spec(spec_id)
            except GpufleetError:
                return None
    try:
        return get_spec(model)
    except GpufleetError:
        return None


class _Entry(NoBoolNumbers):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    host: str | None = None
    gpu_uuid: str | None = None
    provider: str
    instance_type: str
    region: str | None = None
    price_kind: str = "on_demand"
    team: str | None = None
    model: str | None = None
    tier: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class InventoryEntry:
    host: str | None
    gpu_uuid: str | None
    provider: str
    instance_type: str
    region: str | None
    price_kind: str
    team: str | None
    model: str | None
    tier: str | None = None  # the recommender's tier its options are filtered at (dev, batch, production)


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuCost:
    """What one GPU costs and where that number comes from."""

    provider: str | None
    instance_type: str | None
    region: str | None
    price_kind: str
    gpu: str | None  # spec id
    gpus_per_instance: float | None
    price_usd_per_gpu_hour: float | None  # at price_kind
    on_demand_usd_per_gpu_hour: float | None
    price_basis: str  # "inventory", "labels", "catalog median", "unknown"
    team: str | None
    model: str | None
    tier: str | None = None


def load_inventory(path: Path | str) -> tuple[InventoryEntry, ...]:
    """Read an inventory file (YAML/JSON with ``hosts:``, or CSV with the same columns)."""
    p = Path(path)
    rows: list[dict[str, Any]]
    if p.suffix.lower() == ".csv":
        _, records = read_csv_file(
            p,
            what="inventory file",
            required_columns=("provider", "instance_type"),
            allowed_columns=tuple(_Entry.model_fields),
        )
        rows = [{k: v for k, v in r.items() if v.strip()} for _, r in records]
    else:
        doc = load_structured_file(p, what="inventory file")
        check_top_level(
            doc,
            source=f"The inventory file {p}",
            allowed=("hosts", "workloads"),
            lists=("hosts",) if not isinstance(doc, dict) or "workloads" not in doc else (),
            fix="Each hosts entry gives a host (or gpu_uuid), its provider and instance_type; each workloads "
            "entry a pod glob and its workload (docs/telemetry.md).",
        )
        if "hosts" not in doc:
            return ()  # workloads only (gpufleet.telemetry.workloads.load_workload_rules reads them)
        rows = doc["hosts"]
        if not isinstance(rows, list):
            raise ConfigFileError(f"The inventory file {p}: 'hosts:' must be a list of entries.")
    if not rows:
        raise ConfigFileError(
            f"The inventory file {p} has no entries; give at least one host (or gpu_uuid) with its provider "
            "and instance_type, or leave --inventory out."
        )
    out = []
    seen: dict[tuple[str | None, str | None], int] = {}
    for i, row in enumerate(rows, start=1):
        try:
            e = _Entry.model_validate(row)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise ConfigFileError(
                f"The inventory file {p}, entry {i}: {'.'.join(str(x) for x in err['loc']) or 'entry'}: "
                f"{str(err['msg']).removeprefix('Value error, ')}. "
                "Allowed keys: host, gpu_uuid, provider, instance_type, region, price_kind, team, model, "
                "tier."
            ) from None
        if not e.host and not e.gpu_uuid:
            raise ConfigFileError(f"The inventory file {p}, entry {i}: give 'host' (a glob) or 'gpu_uuid'.")
        key = (e.host, e.gpu_uuid)
        if key in seen:
            raise ConfigFileError(
                f"The inventory file {p}, entry {i} repeats entry {seen[key]} (host {e.host!r}, gpu_uuid "
                f"{e.gpu_uuid!r}): only the first would ever match. Keep one."
            )
        seen[key] = i
        if e.price_kind not in PRICE_KINDS:
            raise ConfigFileError(
                f"The inventory file {p}, entry {i}: price_kind {e.price_kind!r} is not one of "
                f"{', '.join(PRICE_KINDS)}."
            )
        if e.tier is not None and e.tier not in ("dev", "batch", "production"):
            raise ConfigFileError(
                f"The inventory file {p}, entry {i}: tier {e.tier!r} is not one of dev, batch, production "
                "(the recommender's tiers; production never moves work to a marketplace host)."
            )
        if e.model:
            from gpufleet.models import resolve_model

            try:
                resolve_model(e.model)
            except GpufleetError as exc:
                raise ConfigFileError(f"The inventory file {p}, entry {i}: model: {exc}") from None
        out.append(InventoryEntry(**e.model_dump()))
    return tuple(out)


#: Name of the inventory copy kept in a telemetry store (suffix of the file given).
STORED_INVENTORY: Final = "inventory"


def inventory_for(
    store_root: Path, path: Path | str | None
) -> tuple[tuple[InventoryEntry, ...], tuple[Any, ...], Path | None]:
    """One pricing path for every command on a store: the inventory given (checked, then kept in the store
    as ``<store>/inventory.<suffix>``), else the one kept there by an earlier command, else none.

    Returns (host entries, workload rules, the file used). Before this, ``findings --inventory`` and
    ``report`` without it priced the same host differently (inventory vs catalog median)."""
    from gpufleet.fileio import atomic_write_text, read_user_text
    from gpufleet.telemetry.workloads import load_workload_rules

    used: Path | None
    if path is not None:
        used = Path(path)
        entries, rules = load_inventory(used), load_workload_rules(used)
        if (store_root / "manifest.json").exists():
            for old in store_root.glob(f"{STORED_INVENTORY}.*"):
                old.unlink(missing_ok=True)
            atomic_write_text(
                store_root / f"{STORED_INVENTORY}{used.suffix.lower() or '.yaml'}",
                read_user_text(used, what="inventory file"),
            )
        return entries, rules, used
    kept = sorted(store_root.glob(f"{STORED_INVENTORY}.*")) if store_root.is_dir() else []
    if not kept:
        return (), (), None
    used = kept[0]
    return load_inventory(used), load_workload_rules(used), used


@cache
def _offers() -> Any:
    from gpufleet.catalog.offers import load_offers

    return load_offers()


@cache
def _match_offer(provider: str, instance_type: str, region: str | None) -> Any:
    table = _offers()
    mask = (table.column("provider") == provider) & (table.column("instance_type") == instance_type)
    if region:
        reg = mask & (table.column("region") == region)
        if reg.any():
            mask = reg
    idx = np.flatnonzero(mask)
    return table.take(idx) if len(idx) else None


@cache
def _per_gpu_cached(
    provider: str, instance_type: str, region: str | None, kind: str, unverified: bool = False
) -> tuple[float | None, float | None, float | None, str | None]:
    """Per-GPU prices; ``unverified`` (whether unverified commitment rates are allowed) keys the cache."""
    return _per_gpu(_match_offer(provider, instance_type, region), kind)


def _per_gpu(table: Any, kind: str) -> tuple[float | None, float | None, float | None, str | None]:
    counts = np.asarray(table.column("gpu_count"), dtype=float)
    kind_p = prices_usd_per_hour(table, kind) / counts
    od = np.asarray(table.column("price_on_demand_usd_per_hour"), dtype=float) / counts
    gpu = str(table.column("gpu")[0]) or None
    k = float(np.nanmedian(kind_p)) if np.isfinite(kind_p).any() else None
    return k, float(np.nanmedian(od)), float(counts[0]), gpu


@cache
def catalog_median_usd_per_gpu_hour(spec_id: str) -> float | None:
    """Median on-demand price of one GPU of ``spec_id`` over the catalog (whole-GPU offers only)."""
    t = _offers()
    mask = (t.column("gpu") == spec_id) & (np.asarray(t.column("gpu_count"), dtype=float) >= 1)
    if not mask.any():
        return None
    per = (
        np.asarray(t.column("price_on_demand_usd_per_hour"), dtype=float)[mask]
        / np.asarray(t.column("gpu_count"), dtype=float)[mask]
    )
    return float(np.median(per))


def _family(spec_id: str) -> str:
    """The GPU generation of a spec id, its first dash-separated part (``A100-SXM-80GB`` -> ``A100``): the
    same GPU in another form factor or memory size is not a contradiction between inventory and telemetry."""
    return spec_id.split("-", 1)[0].upper()


def check_inventory_matches(
    inventory: Sequence[InventoryEntry], gpus: Sequence[tuple[str, str | None]], source: str = ""
) -> None:
    """:class:`ConfigFileError` when no entry of ``inventory`` matches any of ``gpus`` (host, GPU UUID):
    the file then prices nothing (a glob like ``node-[``, another cluster's host names) and every GPU fell
    back silently to its labels or the catalog median. Entries for hosts not in the window are fine."""
    if not inventory or not gpus:
        return
    for e in inventory:
        for host, uuid in gpus:
            if (e.gpu_uuid and e.gpu_uuid == uuid) or (e.host and fnmatch.fnmatchcase(host, e.host)):
                return
    pats = sorted({e.host or e.gpu_uuid or "" for e in inventory})
    hosts = sorted({h for h, _ in gpus})
    raise ConfigFileError(
        f"The inventory{' ' + source if source else ''} matches none of the GPUs in the window: its host "
        f"globs / GPU UUIDs {pats[:5]} match no host of {hosts[:5]}{' ...' if len(hosts) > 5 else ''}. "
        "Globs are case-sensitive shell patterns ('node-*'); fix them, or leave --inventory out."
    )


def resolve_cost(
    *,
    host: str,
    gpu_uuid: str | None,
    labels: Mapping[str, str | None],
    model: str | None,
    inventory: Sequence[InventoryEntry] = (),
) -> GpuCost:
    """Offer and price per GPU for one GPU (inventory, then labels, then the catalog median of its model)."""
    entry = next(
        (
            e
            for e in inventory
            if (e.gpu_uuid and e.gpu_uuid == gpu_uuid) or (e.host and fnmatch.fnmatchcase(host, e.host))
        ),
        None,
    )
    spec = spec_for_model(model)
    provider: str | None
    itype: str | None
    region: str | None
    if entry is not None:
        provider, itype, region, kind, basis = (
            entry.provider,
            entry.instance_type,
            entry.region,
            entry.price_kind,
            "inventory",
        )
    elif labels.get("provider") and labels.get("instance_type"):
        provider, itype, region, kind, basis = (
            str(labels["provider"]),
            str(labels["instance_type"]),
            labels.get("region"),
            "on_demand",
            "labels",
        )
    else:
        provider, itype, region = None, None, None
        kind, basis = "on_demand", "catalog median"
    if provider and itype:
        table = _match_offer(provider, itype, region)
        if (
            table is not None
            and basis == "inventory"
            and region
            and not (table.column("region") == region).any()
        ):
            listed = sorted({str(r) for r in table.column("region")})
            near = close_matches(region, listed, n=5) or listed[:5]
            raise ConfigFileError(
                f"Host {host}: the inventory puts {provider} {itype} in region {region!r}, where the catalog "
                f"lists none (did you mean {', '.join(near)}? it is listed in {len(listed)} regions). Fix "
                "the region, or leave it out to price the instance type in any region."
            )
        if table is None:
            raise ConfigFileError(
                f"Host {host}: no catalog offer for {provider} {itype}"
                + (f" in {region}" if region else "")
                + ". Check the instance type (gpufleet catalog offers --provider ...) or add it with a "
                "user catalog."
            )
        price, od, count, gpu = _per_gpu_cached(provider, itype, region, kind, unverified_allowed())
        if basis == "inventory" and spec is not None and gpu and _family(gpu) != _family(spec.id):
            raise ConfigFileError(
                f"Host {host}: the inventory puts it on {provider} {itype}, whose GPU is {gpu}, but its "
                f"telemetry reports {model!r} ({spec.id}); the GPU would be priced as a {gpu}. Allowed: an "
                f"instance type whose GPU is the one the host reports. Fix instance_type (`gpufleet catalog "
                f"offers --gpu {spec.id}` lists instances of that GPU) or the host glob of the entry."
            )
        if price is None:
            raise ConfigFileError(
                f"Host {host}: the catalog has no {kind} price for {provider} {itype}"
                + (f" in {region}" if region else "")
                + " (no verified rate for that program and term: the shipped table holds unverified "
                "ceilings only, used within gpufleet.catalog.pricing.allow_unverified_commitments()). Run "
                "`gpufleet catalog update --provider "
                f"{provider}` to fetch real rates, or give a price_kind with a known rate (e.g. on_demand, "
                "commit_3y)."
            )
        return GpuCost(
            provider=provider,
            instance_type=itype,
            region=region,
            price_kind=kind,
            gpu=gpu or (spec.id if spec else None),
            gpus_per_instance=count,
            price_usd_per_gpu_hour=price,
            on_demand_usd_per_gpu_hour=od,
            price_basis=basis,
            team=entry.team if entry else None,
            model=entry.model if entry else None,
            tier=entry.tier if entry else None,
        )
    median = catalog_median_usd_per_gpu_hour(spec.id) if spec else None
    return GpuCost(
        provider=None,
        instance_type=None,
        region=None,
        price_kind="on_demand",
        gpu=spec.id if spec else None,
        gpus_per_instance=None,
        price_usd_per_gpu_hour=median,
        on_demand_usd_per_gpu_hour=median,
        price_basis=basis if median is not None else "unknown",
        team=None,
        model=None,
    )


__all__ = [
    "STORED_INVENTORY",
    "GpuCost",
    "InventoryEntry",
    "catalog_median_usd_per_gpu_hour",
    "check_inventory_matches",
    "inventory_for",
    "load_inventory",
    "resolve_cost",
    "spec_for_model",
]
