"""Node prices for a workload's pricing choice, over a whole offer table at once (numpy)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from gpufleet.errors import InputError

#: workload pricing -> catalog price kind (commit_* = the provider's cheapest 1y/3y program)
PRICE_KIND: dict[str, str] = {"on_demand": "on_demand", "spot": "spot", "1y": "commit_1y", "3y": "commit_3y"}


def price_kind_for(pricing: str) -> str:
    """The catalog price kind for a workload ``pricing`` (on_demand, spot, 1y, 3y)."""
    if pricing not in PRICE_KIND:
        raise InputError(
            f"Unknown pricing {pricing!r}. Allowed: {', '.join(PRICE_KIND)}. "
            "Use on_demand, spot, 1y or 3y (1y/3y = the provider's cheapest commitment program)."
        )
    return PRICE_KIND[pricing]


def node_prices_usd_per_hour(
    table: Any, price_kind: str, commitments_file: str | None = None
) -> npt.NDArray[np.float64]:
    """Price of one node (instance) for ``price_kind`` [USD/h]; NaN where the offer has no such price.

    On-demand and spot read the table columns (spot NaN = unknown, never 0); commitment kinds come from
    :func:`gpufleet.catalog.pricing.prices_usd_per_hour` and its sourced discount assumptions, with the
    user's ``commitments_file`` (YAML/JSON override, docs/pricing.md) applied when given.
    """
    if price_kind == "on_demand":
        return np.asarray(table.column("price_on_demand_usd_per_hour"), dtype=float)
    if price_kind == "spot":
        return np.asarray(table.column("price_spot_usd_per_hour"), dtype=float)
    from pathlib import Path

    from gpufleet.catalog.pricing import load_commitment_assumptions, prices_usd_per_hour

    assumptions = load_commitment_assumptions(Path(commitments_file)) if commitments_file else None
    return np.asarray(prices_usd_per_hour(table, price_kind, assumptions), dtype=float)
