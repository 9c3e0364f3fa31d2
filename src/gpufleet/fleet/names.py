"""Names in a fleet file that must exist in the offer table the plan uses: providers, instance types and
regions of current deployments and existing commitments, the data's location, and the globs of quotas.

The fleet file is parsed without the catalog (``--catalog`` may add offers), so these checks run in
:func:`gpufleet.fleet.plan.plan_fleet` against the table in force. An unknown name would otherwise be a
silent no-op (a quota that matches nothing, a commitment that covers nothing, a data location with no egress
price) and the plan an answer to a different question.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

import numpy as np

from gpufleet.catalog.offers import OfferTable
from gpufleet.errors import UnknownNameError
from gpufleet.fleet.refdata import cpu_offers
from gpufleet.fleet.refdata import regions as located_regions
from gpufleet.fleet.types import Fleet


def _unknown(where: str, kind: str, name: str, known: list[str], hint: str) -> UnknownNameError:
    """:class:`UnknownNameError` whose message starts with where in the fleet file the name is."""
    err = UnknownNameError(kind, name, known, hint=hint)
    err.args = (f"{where}: {err}",)
    return err


def check_data_location(table: OfferTable, provider: str, region: str, where: str = "data location") -> None:
    """``provider``/``region`` (one region, no glob) must be known to the offer table or regions.csv."""
    located = located_regions()
    providers = sorted(set(table.providers()) | {p for p, _ in located})
    if provider not in providers:
        raise _unknown(where, "provider", provider, providers, "Provider names are lower case.")
    offered = {str(r) for r in table.column("region")[table.column("provider") == provider].tolist()}
    names = sorted((offered | {r for p, r in located if p == provider}) - {""})
    if region not in names:
        raise _unknown(
            where,
            "region",
            region,
            names,
            f"A region is one {provider} region name (no glob), as `gpufleet catalog offers --provider "
            f"{provider}` shows it.",
        )


def _instance_regions(table: OfferTable, provider: str) -> dict[str, set[str]]:
    """instance type -> regions of ``provider``: the GPU offers plus, for AWS, the CPU offers."""
    rows = table.column("provider") == provider
    out: dict[str, set[str]] = {}
    for t, r in zip(
        table.column("instance_type")[rows].tolist(), table.column("region")[rows].tolist(), strict=True
    ):
        out.setdefault(str(t), set()).add(str(r))
    if provider == "aws":
        for c in cpu_offers():
            out.setdefault(c.instance_type, set()).add(c.region)
    return out


def _instance(table: OfferTable, provider: str, instance_type: str, region: str | None, where: str) -> None:
    if provider == "onprem":
        return  # on-prem sites are the fleet file's own
    known = table.providers()
    if provider not in known:
        raise _unknown(where, "provider", provider, known, "Provider names are lower case.")
    by_type = _instance_regions(table, provider)
    if instance_type not in by_type:
        raise _unknown(
            where,
            "instance type",
            instance_type,
            sorted(by_type),
            f"See `gpufleet catalog offers --provider {provider}` for its instance types.",
        )
    if region is not None and region not in by_type[instance_type]:
        raise _unknown(
            where,
            "region",
            region,
            sorted(by_type[instance_type]),
            f"{provider} lists {instance_type} in these regions.",
        )


def _glob_matches(values: np.ndarray, glob: str) -> bool:
    g = glob.lower()
    return g == "*" or any(fnmatchcase(str(v).lower(), g) for v in set(values.tolist()))


def check_fleet_names(fleet: Fleet, table: OfferTable) -> None:
    """Raise :class:`UnknownNameError` for the first fleet-file name the offer table does not know."""
    for fw in fleet.workloads:
        where = f"workload {fw.name!r}"
        if fw.current is not None:
            cur = fw.current
            _instance(table, cur.provider, cur.instance_type, cur.region, f"{where}, current")
        if fw.data is not None:
            check_data_location(table, fw.data.provider, fw.data.region, f"{where}, data")
    c = fleet.constraints
    for e in c.existing:
        _instance(table, e.provider, e.instance_type, e.region, f"existing commitment {e.name!r}")
    provs = table.column("provider")
    for q in c.quotas:
        if q.provider == "onprem":
            continue
        known = table.providers()
        if q.provider not in known:
            raise _unknown(
                f"quota {q.name!r}", "provider", q.provider, known, "Provider names are lower case."
            )
        rows = provs == q.provider
        for field, column in (("region", "region"), ("gpu", "gpu"), ("instance_family", "instance_type")):
            glob = getattr(q, field)
            values = table.column(column)[rows]
            if not _glob_matches(values, glob):
                raise _unknown(
                    f"quota {q.name!r}",
                    {"region": "region", "gpu": "GPU", "instance_family": "instance type"}[field],
                    glob,
                    sorted({str(v) for v in values.tolist() if v}),
                    f"The glob matches no {q.provider} offer, so the quota would bind nothing. Use a "
                    "glob that matches (e.g. 'p5*', 'us-*', 'H100*'), or '*' for all.",
                )
