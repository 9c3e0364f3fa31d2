"""Public entry points: ``recommend``, ``migrate``, ``run_scenario``, ``run_scenario_set``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gpufleet.catalog.offers import OfferTable, load_offers
from gpufleet.cost.spot import SpotAssumption, load_spot_assumptions
from gpufleet.errors import GpufleetError, InputError
from gpufleet.recommend.engine import recommend_on
from gpufleet.recommend.migrate import migrate_on
from gpufleet.recommend.perf import DefaultEstimator, Estimator
from gpufleet.recommend.scenarios import get_scenario, get_scenario_set
from gpufleet.recommend.types import Migration, Recommendation, ScenarioResult, ScenarioSetResult, Workload
from gpufleet.recommend.workload import read_workload_file, workload_from_dict
from gpufleet.validation import check_context, checked_output

#: progress callback: (done, total, scenario name)
Progress = Callable[[int, int, str], None]

_DEFAULT_ESTIMATOR: DefaultEstimator | None = None


def _estimator(est: Estimator | None) -> Estimator:
    global _DEFAULT_ESTIMATOR
    if est is not None:
        return est
    if _DEFAULT_ESTIMATOR is None:
        _DEFAULT_ESTIMATOR = DefaultEstimator()
    return _DEFAULT_ESTIMATOR


def _engine_inputs(
    offers: OfferTable | None, estimator: Estimator | None, spot_assumptions: Path | None
) -> tuple[OfferTable, Estimator, dict[str, SpotAssumption]]:
    """The offer table (default: the shipped catalog), the estimator and the spot assumptions."""
    table = offers if offers is not None else load_offers()
    return table, _estimator(estimator), load_spot_assumptions(spot_assumptions)


def as_workload(workload: Workload | Mapping[str, Any] | str | Path | None, **fields: Any) -> Workload:
    """A :class:`Workload` from a Workload, a mapping, a file path (one workload) or keyword fields."""
    if isinstance(workload, Workload):
        if fields:
            raise InputError(
                "Pass either a Workload or keyword fields, not both; build a new Workload instead."
            )
        return workload
    if isinstance(workload, (str, Path)):
        loaded = read_workload_file(workload)
        if len(loaded) != 1:
            raise InputError(
                f"Workload file {workload} holds {len(loaded)} workloads ({', '.join(loaded)}); "
                "recommend() takes one. Use run_scenario_set or pass one workload."
            )
        if fields:
            raise InputError(
                f"Pass either a workload file ({workload}) or keyword fields, not both; edit the file."
            )
        return next(iter(loaded.values()))
    data = dict(workload or {})
    data.update(fields)
    return workload_from_dict(data)


def _check_workload_context(w: Workload) -> None:
    """An inference workload whose prompt + output exceed the model's context is an InputError."""
    if w.task != "inference":
        return
    from gpufleet.models import resolve_model

    try:
        arch = resolve_model(w.model)
    except GpufleetError:
        return  # an estimator of its own may know the model; the engine reports unknown ones
    check_context(arch.id, arch.max_position_embeddings, w.input_len_tokens, w.output_len_tokens)


@checked_output("recommendation")
def recommend(
    workload: Workload | Mapping[str, Any] | str | Path | None = None,
    *,
    objective: str | None = None,
    offers: OfferTable | None = None,
    estimator: Estimator | None = None,
    spot_assumptions: Path | None = None,
    limit: int = 10,
    **fields: Any,
) -> Recommendation:
    """Rank every catalog offer for ``workload`` (a Workload, a mapping, a file path, or keyword fields).

    Never raises for an unmet SLO, budget or memory: those are statuses of the :class:`Recommendation`.
    """
    if limit < 1:
        raise InputError(f"limit = {limit}; it must be >= 1 (the number of ranked candidates returned).")
    w = as_workload(workload, **fields)
    _check_workload_context(w)
    table, est, spot = _engine_inputs(offers, estimator, spot_assumptions)
    return recommend_on(table, w, est, spot, objective=objective, limit=limit, full_table=table)


@checked_output("migration")
def migrate(
    workload: Workload | Mapping[str, Any] | str | Path | None = None,
    *,
    objective: str | None = None,
    offers: OfferTable | None = None,
    estimator: Estimator | None = None,
    spot_assumptions: Path | None = None,
    limit: int = 10,
    **fields: Any,
) -> Migration:
    """Compare the workload's current deployment with the best alternative: savings, performance, risk."""
    w = as_workload(workload, **fields)
    _check_workload_context(w)
    table, est, spot = _engine_inputs(offers, estimator, spot_assumptions)
    return migrate_on(table, w, est, spot, objective=objective, limit=limit, full_table=table)


def evaluate_workload(
    w: Workload,
    *,
    description: str = "",
    offers: OfferTable | None = None,
    estimator: Estimator | None = None,
    spot_assumptions: Path | None = None,
    limit: int = 10,
) -> ScenarioResult:
    """Recommendation (and migration when ``w.current`` is set) for one workload, errors kept as text."""
    table, est, spot = _engine_inputs(offers, estimator, spot_assumptions)
    try:
        if w.current is not None:
            mig = migrate_on(table, w, est, spot, limit=limit, full_table=table)
            return ScenarioResult(
                name=w.name,
                description=description or w.description,
                recommendation=mig.recommendation,
                migration=mig,
            )
        rec = recommend_on(table, w, est, spot, limit=limit, full_table=table)
        return ScenarioResult(name=w.name, description=description or w.description, recommendation=rec)
    except GpufleetError as exc:
        return ScenarioResult(
            name=w.name, description=description or w.description, recommendation=None, error=str(exc)
        )


@checked_output("scenario run")
def run_scenario(
    name: str,
    *,
    offers: OfferTable | None = None,
    estimator: Estimator | None = None,
    spot_assumptions: Path | None = None,
    limit: int = 10,
) -> ScenarioResult:
    """Run one shipped scenario (``UnknownNameError`` with close matches for an unknown name)."""
    w = get_scenario(name)
    return evaluate_workload(
        w, offers=offers, estimator=estimator, spot_assumptions=spot_assumptions, limit=limit
    )


@checked_output("scenario-set run")
def run_scenario_set(
    name: str,
    *,
    offers: OfferTable | None = None,
    estimator: Estimator | None = None,
    spot_assumptions: Path | None = None,
    limit: int = 10,
    progress: Progress | None = None,
) -> ScenarioSetResult:
    """Run every scenario of a shipped set; ``progress(done, total, name)`` is called after each."""
    names = get_scenario_set(name)
    table = offers if offers is not None else load_offers()
    results = []
    for i, n in enumerate(names, start=1):
        results.append(
            run_scenario(n, offers=table, estimator=estimator, spot_assumptions=spot_assumptions, limit=limit)
        )
        if progress is not None:
            progress(i, len(names), n)
    return ScenarioSetResult(name=name, results=tuple(results))
