"""The GPU Fleet Optimizer's named scenarios and sets, shipped as ``data/scenarios.yaml``.

Reasoning behind every parameter is in ``docs/scenarios.md``. Scenario entries use the workload format of
:mod:`gpufleet.recommend.workload`; the file is validated like a user file (errors name the entry and field).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from gpufleet.errors import DataError, GpufleetError, UnknownNameError
from gpufleet.recommend.types import Workload

_FILE = "scenarios.yaml"


@dataclass(frozen=True, slots=True, kw_only=True)
class ScenarioCatalog:
    scenarios: Mapping[str, Workload]
    sets: Mapping[str, tuple[str, ...]]


def parse_scenarios(data: Any, source: str) -> ScenarioCatalog:
    """Validate a parsed scenarios document (``scenarios:`` and ``sets:`` mappings)."""
    from gpufleet.recommend.workload import workload_from_dict  # pydantic: only where entries are validated

    if not isinstance(data, Mapping) or not isinstance(data.get("scenarios"), Mapping):
        raise DataError(
            f"{source} must hold a 'scenarios' mapping of names to workloads. Reinstall gpufleet."
        )
    scenarios = {
        str(k): workload_from_dict(v, source=source, entry=str(k)) for k, v in data["scenarios"].items()
    }
    sets: dict[str, tuple[str, ...]] = {}
    for name, ids in (data.get("sets") or {}).items():
        bad = [i for i in ids if i not in scenarios]
        if bad:
            raise DataError(f"{source}: set {name!r} names unknown scenarios {bad}. Reinstall gpufleet.")
        sets[str(name)] = tuple(ids)
    return ScenarioCatalog(scenarios=scenarios, sets=sets)


def _shipped_text() -> tuple[str, Any]:
    """The shipped file's text and its parsed document."""
    import yaml  # only where scenarios are read, not at every recommend start-up

    # libyaml's safe loader where PyYAML has it (~0.05 s faster; tests check it reads the shipped file alike)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        text = resources.files("gpufleet.recommend").joinpath("data", _FILE).read_text(encoding="utf-8")
        return text, yaml.load(text, Loader=loader)
    except (OSError, yaml.YAMLError) as exc:
        raise DataError(f"The shipped {_FILE} is missing or unreadable ({exc}). Reinstall gpufleet.") from exc


def _validation_namespace() -> str:
    from gpufleet import __version__

    return f"scenarios file {_FILE}, gpufleet {__version__}"


@cache
def load_scenarios() -> ScenarioCatalog:
    """The shipped scenarios and sets (cached). Leaves a validation mark for :func:`scenario_summaries`."""
    from gpufleet.cache import is_marked_valid, mark_valid

    text, data = _shipped_text()
    try:
        catalog = parse_scenarios(data, _FILE)
    except GpufleetError as exc:
        raise DataError(f"The shipped {_FILE} is invalid: {exc} Reinstall gpufleet.") from exc
    if not is_marked_valid("scenarios", _validation_namespace(), text):
        mark_valid("scenarios", _validation_namespace(), text)
    return catalog


@dataclass(frozen=True, slots=True, kw_only=True)
class ScenarioSummary:
    """What `gpufleet scenarios list` shows of one scenario (its workload's fields of these names)."""

    id: str
    model: str
    task: str
    pricing: str
    description: str
    current: CurrentSummary | None


@dataclass(frozen=True, slots=True, kw_only=True)
class CurrentSummary:
    provider: str
    instance_type: str
    count: int
    region: str | None


def _summary(sid: str, w: Workload) -> ScenarioSummary:
    cur = w.current
    return ScenarioSummary(
        id=sid,
        model=w.model,
        task=w.task,
        pricing=w.pricing,
        description=w.description,
        current=None
        if cur is None
        else CurrentSummary(
            provider=cur.provider, instance_type=cur.instance_type, count=cur.count, region=cur.region
        ),
    )


def _raw_summary(sid: str, entry: Mapping[str, Any]) -> ScenarioSummary:
    """The summary read straight from a validated entry: the workload format's defaults (task inference,
    pricing on_demand, no description; a current deployment on aws, 1 instance) and its one normalisation
    (the provider lower-cased). tests/recommend/test_scenarios.py checks it against :func:`_summary`."""
    cur = entry.get("current")
    return ScenarioSummary(
        id=sid,
        model=str(entry["model"]),
        task=str(entry.get("task", "inference")),
        pricing=str(entry.get("pricing", "on_demand")),
        description=str(entry.get("description", "")),
        current=None
        if cur is None
        else CurrentSummary(
            provider=str(cur.get("provider", "aws")).lower(),
            instance_type=str(cur["instance_type"]),
            count=int(cur.get("count", 1)),
            region=None if cur.get("region") is None else str(cur["region"]),
        ),
    )


def scenario_summaries() -> tuple[tuple[ScenarioSummary, ...], dict[str, tuple[str, ...]]]:
    """Every shipped scenario's summary and every set, without pydantic once the file's exact text has been
    validated by this gpufleet version (a validation mark in the user cache, :mod:`gpufleet.cache`; the first
    run validates every entry with :func:`load_scenarios` and leaves it)."""
    from gpufleet.cache import is_marked_valid

    text, data = _shipped_text()
    if not is_marked_valid("scenarios", _validation_namespace(), text):
        lib = load_scenarios()
        return tuple(_summary(sid, w) for sid, w in lib.scenarios.items()), dict(lib.sets)
    scenarios = tuple(_raw_summary(str(k), v) for k, v in data["scenarios"].items())
    sets = {str(name): tuple(ids) for name, ids in (data.get("sets") or {}).items()}
    return scenarios, sets


def get_scenario(name: str) -> Workload:
    cat = load_scenarios()
    if name not in cat.scenarios:
        raise UnknownNameError(
            "scenario",
            name,
            cat.scenarios,
            hint="Run `gpufleet scenarios list` to see every scenario and set.",
        )
    return cat.scenarios[name]


def get_scenario_set(name: str) -> tuple[str, ...]:
    cat = load_scenarios()
    if name not in cat.sets:
        raise UnknownNameError(
            "scenario set",
            name,
            cat.sets,
            hint="Run `gpufleet scenarios list` to see every scenario and set.",
        )
    return cat.sets[name]
