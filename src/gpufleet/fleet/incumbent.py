"""A starting plan for the fleet MILP: solve the LP relaxation, then round it with two small sub-MILPs.

Why: on 10,000 distinct workloads with binding quotas HiGHS (as bundled in scipy 1.17) spent its whole time
limit in presolve and found no plan; the user got nothing. Starting from a feasible plan, HiGHS can stop at
the root as soon as that plan is within the gap, and a time limit always leaves a plan with its gap stated.

The LP optimum of this model is almost integral: each workload's placement row sums its options to one, and a
vertex of the relaxation has at most as many fractional choices as there are coupling rows (quotas, budgets,
commitments, providers) at their bound; on the 10,000-workload benchmark with binding AWS quotas, 5 of 54k
integer variables were fractional. Two sub-MILPs round it (Berthold, "RENS: the optimal rounding",
Math. Prog. Comp. 6, 2014; Danna, Rothberg, Le Pape, "Exploring relaxation induced neighborhoods", Math.
Prog. 102, 2005):

1. *RENS*: every integer variable the LP set to an integer is fixed there; each fractional one may take its
   floor or its ceiling. Tiny, and its optimum is the best rounding of the LP.
2. *Support*: every integer variable the LP set to zero stays zero and the others are free within their
   bounds: the LP's choices re-mixed (it finds a plan where no rounding is feasible, e.g. a quota the LP
   filled to its limit, and improves on RENS where a rounding is); the cheaper of the two is the start.

Both are ordinary MILPs over the same rows, so whatever they return satisfies every row; it is checked again
(``Problem.violated_rows``) before it is used. The LP optimum is also a valid lower bound on the plan's cost.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpufleet.fleet.problem import Problem
from gpufleet.fleet.solve import highs_lp, highs_model

#: an LP value this close to an integer counts as integral
INTEGRAL_TOL = 1e-6
#: relative gap the sub-MILPs stop at (they are small: HiGHS proves it at the root on the benchmarks)
SUB_MIP_GAP = 1e-6


@dataclass(frozen=True, slots=True, kw_only=True)
class Incumbent:
    x: tuple[float, ...] | None  # a plan satisfying every row (None: no rounding found)
    objective: float | None  # its cost, constant included
    lp_bound: float | None  # the LP relaxation's optimum, constant included (None: LP not solved)
    lp_infeasible: bool  # the relaxation itself is infeasible, so the MILP is too
    fractional: int  # integer variables the LP left fractional
    stage: str  # rens | support | none
    time_s: float


def _sub_mip(lp: Any, lb: np.ndarray, ub: np.ndarray, *, time_limit_s: float) -> np.ndarray | None:
    """The best feasible point of the MILP ``lp`` with column bounds ``lb``/``ub`` found within the limit."""
    h = highs_model(lp, lb=lb, ub=ub)
    h.setOptionValue("time_limit", max(time_limit_s, 0.01))
    h.setOptionValue("mip_rel_gap", SUB_MIP_GAP)
    h.run()
    if h.getInfo().primal_solution_status != 2:  # kSolutionStatusFeasible: none found
        return None
    return np.array(h.getSolution().col_value, dtype=float)


def lp_round(p: Problem, lp: Any | None = None, *, time_limit_s: float) -> Incumbent:
    """A feasible point of ``p`` from its LP relaxation (see the module docstring), within ``time_limit_s``
    (``lp``: ``p`` already built by :func:`gpufleet.fleet.solve.highs_lp`)."""
    import highspy

    t0 = time.perf_counter()

    def left() -> float:
        return time_limit_s - (time.perf_counter() - t0)

    def done(
        points: list[tuple[np.ndarray, str]], bound: float | None, frac: int, infeasible: bool = False
    ) -> Incumbent:
        """The cheapest of ``points`` that satisfies every row (checked again here), or none."""
        integer = np.array(p.integer, dtype=bool)
        best: tuple[float, np.ndarray, str] | None = None
        for x, stage in points:
            x = np.round(x, 9)
            x[integer] = np.round(x[integer])
            if p.violated_rows(x.tolist()):  # never hand out a point that breaks a row
                continue
            obj = p.objective(x.tolist())
            if best is None or obj < best[0]:
                best = (obj, x, stage)
        return Incumbent(
            x=None if best is None else tuple(float(v) for v in best[1]),
            objective=None if best is None else best[0],
            lp_bound=bound,
            lp_infeasible=infeasible,
            fractional=frac,
            stage="none" if best is None else best[2],
            time_s=time.perf_counter() - t0,
        )

    lb0, ub0 = np.array(p.lb, dtype=float), np.array(p.ub, dtype=float)
    if lp is None:
        lp = highs_lp(p)
    h = highs_model(lp, relaxation=True)
    h.setOptionValue("time_limit", max(left(), 0.01))
    h.run()
    status = h.getModelStatus()
    if status == highspy.HighsModelStatus.kInfeasible:
        return done([], None, 0, infeasible=True)
    if status != highspy.HighsModelStatus.kOptimal:
        return done([], None, 0)
    x = np.array(h.getSolution().col_value, dtype=float)
    bound = float(h.getInfo().objective_function_value) + p.constant
    integer = np.array(p.integer, dtype=bool)
    frac_mask = integer & (np.abs(x - np.round(x)) > INTEGRAL_TOL)
    frac = int(frac_mask.sum())
    if frac == 0:
        return done([(x, "rens")], bound, 0)
    # 1. RENS: integral values fixed, fractional ones between floor and ceiling
    lb = np.where(integer, np.where(frac_mask, np.floor(x), np.round(x)), lb0)
    ub = np.where(integer, np.where(frac_mask, np.ceil(x), np.round(x)), ub0)
    y = None
    if left() > 0:
        y = _sub_mip(lp, np.maximum(lb, lb0), np.minimum(ub, ub0), time_limit_s=left())
    # 2. the LP's support: integer variables at zero stay there, the others are free (a superset of RENS's
    # choices; on 10,000 distinct binding workloads 2.4 s and $334/month less). Not started from the RENS
    # point: with it as a start HiGHS 1.16 stopped at that point (1,000 distinct binding: $9,808,271 vs
    # $9,806,938/month without)
    zero = integer & (np.abs(x) <= INTEGRAL_TOL) & (lb0 <= 0.0)
    z = None
    if left() > 0:
        z = _sub_mip(lp, lb0, np.where(zero, 0.0, ub0), time_limit_s=left())
    return done([(v, stage) for v, stage in ((z, "support"), (y, "rens")) if v is not None], bound, frac)


def relative_gap(objective: float, bound: float) -> float:
    """HiGHS's relative gap: (primal - dual) / |primal| (0 when both are 0)."""
    if objective == bound:
        return 0.0
    return max(0.0, objective - bound) / max(abs(objective), 1e-9) if math.isfinite(bound) else math.inf
