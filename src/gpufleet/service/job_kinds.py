"""What a job does, by kind: check its parameters when it is submitted (a bad body is a 422 then, not a failed
job later) and run it in a worker process. Each kind calls the library and renders with the report module, as
the CLI does; the JSON result is the document ``gpufleet <command> --format json`` prints.

Kinds:

- ``plan``: ``{"fleet": <fleet file as a mapping>, "source": name, "solver_time_limit_s": s}`` and, set by
  the service from the team's user catalogs, ``"catalogs": [{"name": file name, "text": ...}]`` ->
  :func:`gpufleet.fleet.plan.plan_fleet` over the shipped catalog with them applied (the fleet plan JSON and
  HTML report);
- ``scenario_set``: ``{"name": set name}`` -> :func:`gpufleet.recommend.api.run_scenario_set`;
- ``catalog_refresh``, ``simulate``, ``sweep``, ``telemetry_pull``, ``findings``: :mod:`.job_kinds_sched`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gpufleet.errors import ConfigFileError, InputError
from gpufleet.service.job_kinds_sched import KINDS as SCHED_KINDS

#: (fraction done in [0, 1], what is happening)
ProgressFn = Callable[[float, str], None]

KINDS: tuple[str, ...] = ("plan", "scenario_set", *SCHED_KINDS)

#: the MILP's own time limit when none is given [s] (the CLI's `gpufleet plan --time-limit` default)
DEFAULT_SOLVER_TIME_LIMIT_S = 60.0


def parse_fleet_text(text: str, filename: str) -> Any:
    """A fleet file's text (YAML, or JSON by its ``.json`` name) parsed with the input layer's rules."""
    from gpufleet.fileio import parse_yaml_or_json

    name = Path(filename).name or "fleet.yaml"  # the name only: a path in an upload's file name is ignored
    return parse_yaml_or_json(
        Path(name),
        text,
        lambda kind, error: f"Fleet file {name} is not valid {kind}: {error}. Fix the syntax.",
    )


def check_params(kind: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` checked for ``kind`` (the library's own validation) and normalised; raises a
    :class:`~gpufleet.errors.GpufleetError` with the one-paragraph message otherwise."""
    if kind == "plan":
        from gpufleet.fleet.spec import fleet_from_dict

        unknown = sorted(set(params) - {"fleet", "source", "solver_time_limit_s", "catalogs"})
        if unknown:
            raise InputError(
                f"Unknown plan job parameter(s): {', '.join(unknown)}. Allowed: fleet (the fleet file as a "
                "mapping), source (a name for messages), solver_time_limit_s (seconds), catalogs (the team's "
                "user catalogs, set by the service)."
            )
        source = str(params.get("source") or "<fleet>")[:200]
        fleet_from_dict(params.get("fleet"), source=source)  # raises ConfigFileError naming entry and field
        limit = params.get("solver_time_limit_s", DEFAULT_SOLVER_TIME_LIMIT_S)
        if isinstance(limit, bool) or not isinstance(limit, int | float) or not 0 < limit <= 3600:
            raise InputError(
                f"solver_time_limit_s = {limit!r} is not allowed: give seconds in (0, 3600], e.g. 60."
            )
        out = {"fleet": params["fleet"], "source": source, "solver_time_limit_s": float(limit)}
        catalogs = _check_catalogs(params.get("catalogs", []))
        return out | ({"catalogs": catalogs} if catalogs else {})
    if kind == "scenario_set":
        from gpufleet.recommend.scenarios import get_scenario_set

        if set(params) != {"name"} or not isinstance(params["name"], str):
            raise InputError('A scenario_set job takes exactly {"name": <set name>}; see /api/v1/scenarios.')
        get_scenario_set(params["name"])  # UnknownNameError with close matches
        return {"name": params["name"]}
    if kind in SCHED_KINDS:
        from gpufleet.service import job_kinds_sched

        return job_kinds_sched.check(kind, params)
    raise InputError(f"Unknown job kind {kind!r}. Allowed: {', '.join(KINDS)}.")


def _check_catalogs(value: Any) -> list[dict[str, str]]:
    """A plan's user catalogs: each ``{"name", "text"}`` read by the library's catalog reader."""
    from gpufleet.service.user_catalogs import check_catalog

    if not isinstance(value, list) or not all(
        isinstance(c, dict) and set(c) == {"name", "text"} and all(isinstance(v, str) for v in c.values())
        for c in value
    ):
        raise InputError('catalogs must be a list of {"name": file name, "text": catalog text}.')
    out = []
    for c in value:
        name, _, _ = check_catalog(c["name"], c["text"])
        out.append({"name": name, "text": c["text"]})
    return out


def execute(kind: str, params: Mapping[str, Any], progress: ProgressFn) -> tuple[dict[str, Any], str | None]:
    """Run a checked job: (its JSON document, its HTML report or None)."""
    if kind == "plan":
        from gpufleet.fleet.plan import plan_fleet
        from gpufleet.fleet.spec import fleet_from_dict
        from gpufleet.report import fleet_report as fr

        fleet = fleet_from_dict(params["fleet"], source=str(params["source"]))

        def on_plan(stage: str, done: int, total: int) -> None:
            # two stages: sizing each workload's options, then the MILP (HiGHS); half the bar each
            base, label = (0.0, "Sizing workloads") if stage == "options" else (0.5, "Solving (HiGHS)")
            progress(base + 0.5 * (done / total if total else 1.0), f"{label} {done}/{total}")

        from gpufleet.service.catalog_version import version_for_job
        from gpufleet.service.user_catalogs import CatalogFile, offers_with

        cat = version_for_job(params.get("_refreshes"))  # the latest refreshed prices, set by the worker
        cats = params.get("catalogs", [])
        offers = offers_with([CatalogFile(name=c["name"], text=c["text"]) for c in cats], cat.table)
        plan = plan_fleet(
            fleet, offers=offers, time_limit_s=float(params["solver_time_limit_s"]), progress=on_plan
        )
        doc: dict[str, Any] = json.loads(fr.render_plan_json(plan))
        doc["catalog"] = cat.describe()
        return doc, fr.render_plan_html(plan)
    if kind == "scenario_set":
        from gpufleet.recommend.api import run_scenario_set
        from gpufleet.report import render_text

        def on_set(done: int, total: int, name: str) -> None:
            progress(done / total if total else 1.0, f"Scenario {done}/{total}: {name}")

        result = run_scenario_set(str(params["name"]), progress=on_set)
        return json.loads(render_text(result, "json")), render_text(result, "html")
    if kind in SCHED_KINDS:
        from gpufleet.service import job_kinds_sched

        return job_kinds_sched.execute(kind, params, progress)
    raise ConfigFileError(f"Unknown job kind {kind!r}. Allowed: {', '.join(KINDS)}.")
