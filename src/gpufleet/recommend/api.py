"""Public entry points: ``recommend``, ``migrate``, ``run_scenario``, ``run_scenario_set``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar, cast

from gpufleet.catalog.offers import OfferTable, load_offers
from gpufleet.cost.spot import SpotAssumption, load_spot_assumptions
from gpufleet.errors import GpufleetError, InputError
from gpufleet.recommend.deploy import DEFAULT_HOST_RULES, HostRules
from gpufleet.recommend.engine import recommend_on
from gpufleet.recommend.filters import check_against_table, region_glob_note
from gpufleet.recommend.migrate import migrate_on
from gpufleet.recommend.names import CLI_NAMES, CURRENT_NAMES
from gpufleet.recommend.perf import DefaultEstimator, Estimator
from gpufleet.recommend.types import Migration, Recommendation, ScenarioResult, ScenarioSetResult, Workload
from gpufleet.recommend.workload import read_workload_file, workload_from_dict
from gpufleet.validation import MAX_RANKED, check_context, check_count, check_train_tokens, checked_output

R = TypeVar("R", Recommendation, Migration)

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
        from gpufleet.validation import check_dataclass_fields

        # built by the caller, not by the validated reader: a text for a list, a NaN or a bool is named here
        return cast(Workload, check_dataclass_fields(workload, what="Workload"))
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
    return workload_from_dict(cli_names_to_fields(data))


def cli_names_to_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments named as on the CLI -> workload fields (unknown keys pass through to validation,
    which names them). ``None`` values are dropped, as an omitted flag. Giving a field under both of its
    names is an error."""
    out: dict[str, Any] = {}
    current: dict[str, Any] = {}
    for key, value in data.items():
        if value is None:
            continue
        if key in CURRENT_NAMES:
            current[CURRENT_NAMES[key]] = value
            continue
        field = CLI_NAMES.get(key, key)
        if field in out:
            raise InputError(
                f"{key} and {field} name the same workload field; pass one of them ({field}={value!r})."
            )
        out[field] = value
    if current:
        base = dict(out.get("current") or {})
        out["current"] = base | current
    return out


def _with_notes(result: R, notes: tuple[str, ...]) -> R:
    """``result`` with ``notes`` added to its recommendation's notes."""
    if not notes:
        return result
    if isinstance(result, Migration):
        rec = result.recommendation
        return replace(result, recommendation=replace(rec, notes=rec.notes + notes))
    assert isinstance(result, Recommendation)
    return replace(result, notes=result.notes + notes)


def _status(result: Recommendation | Migration) -> str:
    return (result.recommendation if isinstance(result, Migration) else result).status


def run_filtered(table: OfferTable, w: Workload, run: Callable[[Workload], R]) -> R:
    """``run(w)`` after checking the workload's provider/region filters against ``table``; with an ordered
    GPU preference, ``run`` per choice in order and keep the first with a feasible plan (status ``ok``), else
    the result over all choices together. Notes say what was tried and which region globs miss providers."""
    check_against_table(table, w)
    notes: tuple[str, ...] = region_glob_note(table, w)
    if w.gpu_order == "ordered" and len(w.gpu_choices) > 1:
        tried: list[str] = []
        for choice in w.gpu_choices:
            result = run(replace(w, gpu_choices=(choice,), gpu_order="any_of"))
            label = choice[0].split("-")[0] if len(choice) > 1 else choice[0]
            if _status(result) == "ok":
                done: list[str] = [f"{t}: no feasible plan" for t in tried]
                pref = "; ".join([*done, f"{label}: chosen"])
                return _with_notes(result, (f"Ordered GPU preference: {pref}.", *notes))
            tried.append(label)
        result = run(replace(w, gpu_order="any_of"))
        return _with_notes(
            result,
            (f"Ordered GPU preference: no choice ({', '.join(tried)}) has a feasible plan on its own; "
             "showing all of them ranked together.", *notes),
        )  # fmt: skip
    return _with_notes(run(w), notes)


def _commitments(path: str | Path | None, allow_unverified: bool = False) -> AbstractContextManager[object]:
    """The override file in force and, on opt-in, unverified table rates (docs/pricing.md)."""
    if path is None and not allow_unverified:
        return nullcontext()
    from contextlib import ExitStack

    from gpufleet.catalog.pricing import (
        allow_unverified_commitments,
        commitments_in_force,
        load_commitment_assumptions,
    )

    stack = ExitStack()
    stack.enter_context(allow_unverified_commitments(allow_unverified))
    if path is not None:
        stack.enter_context(commitments_in_force(load_commitment_assumptions(Path(path))))
    return stack


def _check_commitments_used(w: Workload, path: str | Path | None) -> None:
    """A commitment override only moves 1y/3y prices: with any other pricing it would be silently ignored."""
    given = path if path is not None else w.commitments_file
    if given is not None and w.pricing not in ("1y", "3y"):
        from gpufleet.catalog.pricing import load_commitment_assumptions

        load_commitment_assumptions(Path(given))  # a malformed file is reported as such first
        raise InputError(
            f"The commitment override {given} has no effect with pricing {w.pricing!r}: it sets 1-year and "
            "3-year commitment discounts only, so it would be silently ignored. Pass --pricing 1y or 3y "
            "(workload field pricing), or drop --commitments (commitments_file)."
        )


def _check_workload_context(w: Workload) -> None:
    """An inference workload whose prompt + output exceed the model's context, or a training workload whose
    tokens do not fill one optimizer step, or a fine-tuning recipe or optimizer that is unknown or on a task
    other than fine-tuning (a Workload built in Python skips the file reader's checks), is an InputError."""
    _check_fine_tuning(w)
    if w.task != "inference":
        check_train_tokens(w.train_tokens, w.global_batch_sequences, w.seq_len_tokens)
        return
    from gpufleet.models import resolve_model

    try:
        arch = resolve_model(w.model)
    except GpufleetError:
        return  # an estimator of its own may know the model; the engine reports unknown ones
    check_context(arch.id, arch.max_position_embeddings, w.input_len_tokens, w.output_len_tokens)


def _check_fine_tuning(w: Workload) -> None:
    """The workload's recipe and optimizer are known names (InputError naming the allowed ones) and given
    only on a fine-tuning task (:data:`~gpufleet.estimate.types.FINE_TUNING_TASKS`)."""
    if w.recipe is None and w.optimizer is None:
        return
    from gpufleet.estimate.recipes import check_optimizer, get_recipe
    from gpufleet.estimate.types import FINE_TUNING_TASKS

    if w.task not in FINE_TUNING_TASKS:
        given = " and ".join(f"{n} {getattr(w, n)!r}" for n in ("recipe", "optimizer") if getattr(w, n))
        raise InputError(
            f"Workload {w.name!r} is a {w.task} workload but names {given}: the recipe presets and their "
            f"optimizer are fine-tuning settings. Allowed with task {', '.join(FINE_TUNING_TASKS)}; remove "
            "them or set the fine-tuning task."
        )
    if w.recipe is not None:
        get_recipe(w.recipe)  # an unknown name raises, naming the allowed ones
    if w.optimizer is not None:
        check_optimizer(w.optimizer)


def _ranked_rows(top: int | None, limit: int) -> int:
    """The number of ranked candidates to return: ``top`` (the CLI's name) or ``limit``, 1 to MAX_RANKED."""
    value = check_count("top", top if top is not None else limit, maximum=MAX_RANKED, flag="--top (limit)")
    assert value is not None
    return value


@checked_output("recommendation")
def recommend(
    workload: Workload | Mapping[str, Any] | str | Path | None = None,
    *,
    objective: str | None = None,
    offers: OfferTable | None = None,
    estimator: Estimator | None = None,
    spot_assumptions: Path | None = None,
    commitments: str | Path | None = None,
    limit: int = 10,
    host_rules: HostRules | None = None,
    top: int | None = None,
    allow_unverified_commitments: bool = False,
    **fields: Any,
) -> Recommendation:
    """Rank every catalog offer for ``workload`` (a Workload, a mapping, a file path, or keyword fields).

    ``host_rules`` overrides the host RAM / vCPU minimums (:class:`HostRules`, docs/recommend.md).
    Keyword fields take the workload file's names or the CLI's (``target_rps=2``, ``ttft_ms=500``,
    ``provider="aws,gcp"``; see :data:`CLI_NAMES`). ``commitments``: a commitment-discount override file
    (the format of `gpufleet catalog commitments`). ``allow_unverified_commitments``: price 1y/3y with table
    rates that have no per-offer source (provider ceilings; off by default, the answer's notes say when on).
    ``top`` is the CLI's name for ``limit``.
    Never raises for an unmet SLO, budget or memory: those are statuses of the :class:`Recommendation`.
    """
    limit = _ranked_rows(top, limit)
    w = as_workload(workload, **fields)
    _check_workload_context(w)
    _check_commitments_used(w, commitments)
    table, est, spot = _engine_inputs(offers, estimator, spot_assumptions)
    if w.current is not None:  # recommend does not use it, but a misspelt one is named, not ignored
        from gpufleet.recommend.migrate import check_current_names

        check_current_names(table, w.current)
    rules = host_rules or DEFAULT_HOST_RULES
    with _commitments(commitments, allow_unverified_commitments):
        return run_filtered(
            table,
            w,
            lambda x: recommend_on(
                table, x, est, spot, objective=objective, limit=limit, full_table=table, host_rules=rules
            ),
        )


@checked_output("migration")
def migrate(
    workload: Workload | Mapping[str, Any] | str | Path | None = None,
    *,
    objective: str | None = None,
    offers: OfferTable | None = None,
    estimator: Estimator | None = None,
    spot_assumptions: Path | None = None,
    commitments: str | Path | None = None,
    limit: int = 10,
    host_rules: HostRules | None = None,
    top: int | None = None,
    allow_unverified_commitments: bool = False,
    **fields: Any,
) -> Migration:
    """Compare the workload's current deployment with the best alternative: savings, performance, risk.

    Takes the same keywords as :func:`recommend`, plus ``current_instance``, ``current_provider``,
    ``current_count`` and ``current_region`` (the CLI's names) for the deployment of today."""
    limit = _ranked_rows(top, limit)
    w = as_workload(workload, **fields)
    _check_workload_context(w)
    _check_commitments_used(w, commitments)
    table, est, spot = _engine_inputs(offers, estimator, spot_assumptions)
    with _commitments(commitments, allow_unverified_commitments):
        return run_filtered(
            table,
            w,
            lambda x: migrate_on(
                table, x, est, spot, objective=objective, limit=limit, full_table=table, host_rules=host_rules
            ),
        )


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
            mig = run_filtered(
                table, w, lambda x: migrate_on(table, x, est, spot, limit=limit, full_table=table)
            )
            return ScenarioResult(
                name=w.name,
                description=description or w.description,
                recommendation=mig.recommendation,
                migration=mig,
            )
        rec = run_filtered(
            table, w, lambda x: recommend_on(table, x, est, spot, limit=limit, full_table=table)
        )
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
    from gpufleet.recommend.scenarios import get_scenario  # the scenario catalogue: only for scenarios

    limit = _ranked_rows(None, limit)
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
    from gpufleet.recommend.scenarios import get_scenario_set

    limit = _ranked_rows(None, limit)
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
