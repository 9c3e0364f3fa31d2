"""Drop options that another option of the same workload dominates, before the MILP is built.

Option A dominates B when swapping B for A in any plan keeps it feasible and costs no more: A touches the
same coupled rows (quotas, on-prem site, existing commitments; the same provider when the number of providers
is limited; the same region when the workload is spread for HA), A's highest possible cost is at most B's
lowest possible cost, and A's highest possible use of every quota is at most B's lowest. Equal options keep
the first. The rule is exact: the optimum over the pruned set equals the optimum over all options.
"""

from __future__ import annotations

import math
from collections import defaultdict

from gpufleet.fleet.model import (
    Levers,
    matching_existing,
    quota_matches,
    quota_units_per_node,
    regular_kind,
    spot_usd_per_node_month,
)
from gpufleet.fleet.types import Fleet, FleetWorkload, Option


def _profile(
    fleet: Fleet, fw: FleetWorkload, o: Option, levers: Levers
) -> tuple[tuple[object, ...], float, float, list[tuple[float, float]]]:
    """(signature, cost_min, cost_max, [(lowest use, use when all-regular) per coupled row]).

    A dominating option is swapped in paying every node the regular way (cost_max, its all-regular use).
    """
    c = fleet.constraints
    existing = c.existing if levers.existing else ()
    ex = tuple(matching_existing(o, existing))
    regs = [
        regular_kind(fw, o, b, c.commitment_terms, levers, c.commitment_margin_fraction) for b in o.blocks
    ]
    cost_max = sum(b.nodes * r[1] for b, r in zip(o.blocks, regs, strict=True)) + o.transfer_usd_per_month
    spot_ok = [spot_usd_per_node_month(fw, o, b, levers) for b in o.blocks]
    save = 0.0
    share = math.floor(fw.preemptible_fraction * o.nodes_peak + 1e-9)
    gains = []
    spot_capable = 0
    for b, r, sc in zip(o.blocks, regs, spot_ok, strict=True):
        if sc is not None:
            spot_capable += b.nodes
        if ex:
            gains += [r[1]] * b.nodes
        elif sc is not None:
            gains += [max(0.0, r[1] - sc)] * b.nodes
    if ex:
        save = sum(gains)  # existing capacity could cover everything
    else:
        gains.sort(reverse=True)
        save = sum(gains[:share])
    spot_nodes_max = min(share, spot_capable)
    cost_min = cost_max - save
    quotas = []
    qsig = []
    for qi, q in enumerate(c.quotas):
        if not quota_matches(q, o):
            continue
        u = quota_units_per_node(q, o)
        if u <= 0:
            continue
        qsig.append(qi)
        if q.spot:
            quotas.append((0.0, 0.0))  # A is swapped in all-regular: no spot use
        else:
            quotas.append((u * (o.nodes_peak - spot_nodes_max), u * o.nodes_peak))
    sig: tuple[object, ...] = (
        tuple(qsig),
        ex,
        o.on_prem_site,
        o.provider if c.max_providers is not None else None,
        (o.provider, o.region) if fw.ha_regions > 1 else None,
    )
    if o.on_prem_site is not None:
        quotas.append((float(o.nodes_peak), float(o.nodes_peak)))
    return sig, cost_min, cost_max, quotas


def _mirror_key(
    fleet: Fleet, fw: FleetWorkload, o: Option, levers: Levers
) -> tuple[tuple[object, ...], list[float]]:
    """(shape key, cost vector): options with the same key can copy each other's pay split node for node."""
    c = fleet.constraints
    regs = [
        regular_kind(fw, o, b, c.commitment_terms, levers, c.commitment_margin_fraction)[1] for b in o.blocks
    ]
    spots = [spot_usd_per_node_month(fw, o, b, levers) for b in o.blocks]
    has_spot = tuple(sc is not None for sc in spots)
    units = tuple((qi, quota_units_per_node(q, o)) for qi, q in enumerate(c.quotas) if quota_matches(q, o))
    key = (
        tuple((b.nodes, round(b.hours_per_month, 9)) for b in o.blocks),
        max(1, o.nodes_per_replica),  # spot goes in whole replicas: only equal replica widths copy a split
        units,
        has_spot,
        tuple(matching_existing(o, c.existing if levers.existing else ())),
        o.on_prem_site,
        o.provider if c.max_providers is not None else None,
        (o.provider, o.region) if fw.ha_regions > 1 else None,
    )
    vec = regs + [sc if sc is not None and ok else 0.0 for sc, ok in zip(spots, has_spot, strict=True)]
    return key, [*vec, o.transfer_usd_per_month]


def _mirror_prune(fleet: Fleet, fw: FleetWorkload, options: list[Option], levers: Levers) -> list[Option]:
    """Options no same-shape option beats on every cost component (regular and spot per block, transfer)."""
    groups: dict[tuple[object, ...], list[tuple[int, list[float]]]] = defaultdict(list)
    for i, o in enumerate(options):
        key, vec = _mirror_key(fleet, fw, o, levers)
        groups[key].append((i, vec))
    keep: list[int] = []
    for members in groups.values():
        members.sort(key=lambda m: (sum(m[1]), m[0]))
        front: list[tuple[int, list[float]]] = []
        for m in members:
            if not any(all(a <= b + 1e-9 for a, b in zip(f[1], m[1], strict=True)) for f in front):
                front.append(m)
        keep += [m[0] for m in front]
    return [options[i] for i in sorted(keep)]


def prune_options(
    fleet: Fleet, fw: FleetWorkload, options: list[Option], levers: Levers | None = None
) -> list[Option]:
    """The options of ``fw`` that no other option dominates (order kept).

    Two exact rules: *mirror* dominance between options of the same shape (same blocks, quota units,
    spot availability, coupled rows), where A beats B on every cost component so A can copy any pay split
    of B for less; then *bound* dominance across shapes (A all-regular costs and uses no more than B's best
    case).
    """
    levers = levers or Levers()
    options = _mirror_prune(fleet, fw, options, levers)
    groups: dict[tuple[object, ...], list[tuple[int, float, float, list[tuple[float, float]]]]] = defaultdict(
        list
    )
    for i, o in enumerate(options):
        sig, lo, hi, q = _profile(fleet, fw, o, levers)
        groups[sig].append((i, lo, hi, q))
    keep: list[int] = []
    for members in groups.values():
        members.sort(key=lambda m: (m[2], m[1], m[0]))
        front: list[tuple[int, float, float, list[tuple[float, float]]]] = []
        for m in members:
            _, lo, _hi, q = m
            dominated = any(
                f[2] <= lo + 1e-9 and all(fq[1] <= mq[0] + 1e-9 for fq, mq in zip(f[3], q, strict=True))
                for f in front
            )
            if not dominated:
                front.append(m)
        keep += [m[0] for m in front]
    return [options[i] for i in sorted(keep)]
