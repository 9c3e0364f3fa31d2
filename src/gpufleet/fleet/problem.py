"""A small solver-independent MILP: named variables with bounds, integrality and cost; named linear rows.

``minimise c x  s.t.  lo_r <= sum_j a_rj x_j <= hi_r,  lb <= x <= ub,  x_j integer where marked``.
:mod:`gpufleet.fleet.solve` hands it to HiGHS; tests and the brute-force enumerator read it directly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass(slots=True)
class Row:
    name: str
    group: str  # quota | budget | capacity | choice | spot_share | block | providers | existing | ha
    lo: float
    hi: float
    cols: list[int] = field(default_factory=list)
    vals: list[float] = field(default_factory=list)
    elastic: bool = True  # may be relaxed with a slack when explaining infeasibility
    unit: str = ""  # what the row sums (a shortfall is stated in it): "USD/month", "gpus", "nodes", ...


@dataclass(slots=True)
class Problem:
    names: list[str] = field(default_factory=list)
    lb: list[float] = field(default_factory=list)
    ub: list[float] = field(default_factory=list)
    integer: list[bool] = field(default_factory=list)
    cost: list[float] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    constant: float = 0.0  # objective offset

    def add_var(
        self, name: str, *, lb: float = 0.0, ub: float = math.inf, integer: bool = True, cost: float = 0.0
    ) -> int:
        self.names.append(name)
        self.lb.append(lb)
        self.ub.append(ub)
        self.integer.append(integer)
        self.cost.append(cost)
        return len(self.names) - 1

    def add_row(
        self,
        name: str,
        group: str,
        terms: list[tuple[int, float]],
        *,
        lo: float = -math.inf,
        hi: float = math.inf,
        elastic: bool = True,
        unit: str = "",
    ) -> Row:
        row = Row(name=name, group=group, lo=lo, hi=hi, elastic=elastic, unit=unit)
        for j, v in terms:
            row.cols.append(j)
            row.vals.append(v)
        self.rows.append(row)
        return row

    @property
    def n_vars(self) -> int:
        return len(self.names)

    def objective(self, x: list[float]) -> float:
        return self.constant + sum(c * v for c, v in zip(self.cost, x, strict=True))

    def violated_rows(self, x: list[float], tol: float = 1e-6) -> list[str]:
        """Names of rows ``x`` violates (bounds included), for tests and sanity checks."""
        bad = [
            f"bound {self.names[j]}" for j, v in enumerate(x) if v < self.lb[j] - tol or v > self.ub[j] + tol
        ]
        for r in self.rows:
            s = sum(x[j] * a for j, a in zip(r.cols, r.vals, strict=True))
            scale = tol * max(
                1.0, abs(r.lo) if math.isfinite(r.lo) else 0.0, abs(r.hi) if math.isfinite(r.hi) else 0.0
            )
            if s < r.lo - scale or s > r.hi + scale:
                bad.append(r.name)
        return bad
