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
from gpufleet.recommend.workload import workload_from_dict

_FILE = "scenarios.yaml"


@dataclass(frozen=True, slots=True, kw_only=True)
class ScenarioCatalog:
    scenarios: Mapping[str, Workload]
    sets: Mapping[str, tuple[str, ...]]


def parse_scenarios(data: Any, source: str) -> ScenarioCatalog:
    """Validate a parsed scenarios document (``scenarios:`` and ``sets:`` mappings)."""
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


@cache
def load_scenarios() -> ScenarioCatalog:
    """The shipped scenarios and sets (cached)."""
    import yaml  # only where scenarios are read, not at every recommend start-up

    # libyaml's safe loader where PyYAML has it (~0.05 s faster; tests check it reads the shipped file alike)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        text = resources.files("gpufleet.recommend").joinpath("data", _FILE).read_text(encoding="utf-8")
        data = yaml.load(text, Loader=loader)
    except (OSError, yaml.YAMLError) as exc:
        raise DataError(f"The shipped {_FILE} is missing or unreadable ({exc}). Reinstall gpufleet.") from exc
    try:
        return parse_scenarios(data, _FILE)
    except GpufleetError as exc:
        raise DataError(f"The shipped {_FILE} is invalid: {exc} Reinstall gpufleet.") from exc


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
