"""Issue 22 item 1: every numeric field of every JSON kind gpufleet prints has a documented definition
(unit, load, period) in docs/contracts.md "Figures and labels". The kinds with a shipped JSON Schema are
walked through their schema; the others (fleet plan, region analysis, simulations, telemetry) through the
result dataclasses their JSON is made of."""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path
from typing import Any

import pytest

from gpufleet.estimate.types import Interval
from gpufleet.report.json_schemas import KINDS, load_schema

ROOT = Path(__file__).resolve().parents[2]
CONTRACTS = ROOT / "docs" / "contracts.md"
SECTION = "## Figures and labels (every numeric JSON field)"
TEXT_ONLY_KINDS = frozenset({"estimate_matrix"})


def _roots() -> dict[str, tuple[type, ...]]:
    """The result types of the JSON kinds without a shipped schema (their JSON is ``to_jsonable`` of them)."""
    from gpufleet.catalog.history import PriceHistory
    from gpufleet.fleet.regions import RegionAnalysis
    from gpufleet.fleet.types import FleetPlan
    from gpufleet.simulate.api import AutoscaleResult, BatchResult, SpotResult, SweepResult
    from gpufleet.telemetry.alerts import AlertEvent, AlertRule
    from gpufleet.telemetry.analyze import Window
    from gpufleet.telemetry.finding_types import FleetFindings
    from gpufleet.telemetry.schema import IngestReport
    from gpufleet.telemetry.summary import FleetSummary

    return {
        "fleet_plan": (FleetPlan,),
        "price_history": (PriceHistory,),
        "region_analysis": (RegionAnalysis,),
        "simulation_autoscale": (AutoscaleResult,),
        "simulation_spot": (SpotResult,),
        "simulation_batch": (BatchResult,),
        "simulation_sweep": (SweepResult,),
        "telemetry_ingest": (IngestReport,),
        "telemetry_findings": (FleetSummary, FleetFindings),
        "telemetry_alerts": (Window, AlertRule, AlertEvent),
    }


def _schema_numeric(v: Any) -> bool:
    """A schema property holds numbers: its type (or a variant, its items, its map values) is number/integer,
    or it is an Interval; a nested object's own properties are walked on their own."""
    if not isinstance(v, dict):
        return False
    t = v.get("type")
    if {"number", "integer"} & set(t if isinstance(t, list) else [t]):
        return True
    if str(v.get("$ref", "")).endswith("/Interval"):
        return True
    if any(_schema_numeric(x) for k in ("anyOf", "oneOf", "allOf", "prefixItems") for x in v.get(k, [])):
        return True
    return any(_schema_numeric(v.get(k)) for k in ("items", "additionalProperties"))


def _schema_fields(node: Any, out: set[str]) -> None:
    if isinstance(node, dict):
        props = node.get("properties")
        if isinstance(props, dict):
            out.update(k for k, v in props.items() if _schema_numeric(v))
        for v in node.values():
            _schema_fields(v, out)
    elif isinstance(node, list):
        for v in node:
            _schema_fields(v, out)


def _numeric_type(tp: Any) -> bool:
    if tp is bool:
        return False
    if tp in (int, float) or tp is Interval:
        return True
    if typing.get_origin(tp) is None:
        return False
    return any(_numeric_type(a) for a in typing.get_args(tp) if a is not Ellipsis and a is not type(None))


def _dataclass_fields(roots: tuple[type, ...]) -> set[str]:
    out: set[str] = set()
    seen: set[type] = set()

    def inner(tp: Any) -> list[type]:
        if dataclasses.is_dataclass(tp) and isinstance(tp, type):
            return [tp]
        return [c for a in typing.get_args(tp) if a is not Ellipsis for c in inner(a)]

    def walk(cls: type) -> None:
        if cls in seen or cls is Interval:
            return
        seen.add(cls)
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if _numeric_type(hints[f.name]):
                out.add(f.name)
            for sub in inner(hints[f.name]):
                walk(sub)

    for r in roots:
        walk(r)
    return out


def numeric_fields() -> dict[str, set[str]]:
    """Kind -> the names of its numeric JSON fields."""
    out: dict[str, set[str]] = {}
    for kind in KINDS:
        out[kind] = set()
        _schema_fields(load_schema(kind), out[kind])
    for kind, roots in _roots().items():
        out[kind] = _dataclass_fields(roots)
    return out


def documented() -> dict[str, tuple[str, str, str]]:
    """Field -> (unit, load / period, definition) from the table of docs/contracts.md's section."""
    text = CONTRACTS.read_text(encoding="utf-8")
    assert SECTION in text, f"docs/contracts.md has no section {SECTION!r}"
    body = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows: dict[str, tuple[str, str, str]] = {}
    for line in body.splitlines():
        m = re.match(r"^\| `([a-z0-9_]+)` \|(.*)\|\s*$", line)
        if m:
            cells = [c.strip() for c in m.group(2).split(" | ")]
            assert len(cells) == 3, f"row {m.group(1)}: want unit | load / period | definition"
            assert m.group(1) not in rows, f"{m.group(1)} documented twice"
            rows[m.group(1)] = (cells[0], cells[1], cells[2])
    return rows


def test_every_json_kind_is_walked() -> None:
    """The kinds the commands print: the schema kinds, the simulation kinds and those the renderers name."""
    from gpufleet.simulate.api import _KINDS as SIM_KINDS

    walked = set(KINDS) | set(_roots())
    assert {name for _, name in SIM_KINDS} <= walked
    src = ROOT / "src" / "gpufleet"
    named = set(
        re.findall(r'to_json\(\s*"([a-z_]+)"', (src / "cli" / "telemetry.py").read_text(encoding="utf-8"))
    )
    named |= set(
        re.findall(r'"kind": "([a-z_]+)"', (src / "report" / "fleet_report.py").read_text(encoding="utf-8"))
    )
    assert named and named <= walked, named - walked


@pytest.mark.parametrize("kind", [*KINDS, *_roots()])
def test_every_numeric_field_has_a_documented_definition(kind: str) -> None:
    docs = documented()
    fields = numeric_fields()[kind]
    # estimate_matrix prints formatted text cells only (the numbers are in estimate_* JSON)
    assert fields or kind in TEXT_ONLY_KINDS, f"{kind}: no numeric field found (walker broken?)"
    missing = sorted(f for f in fields if f not in docs)
    assert not missing, f"{kind}: numeric fields without a row in docs/contracts.md {SECTION!r}: {missing}"
    empty = sorted(f for f in fields if not all(docs[f]))
    assert not empty, f"{kind}: rows without a unit, load/period or definition: {empty}"


def test_no_stale_rows() -> None:
    """A documented field that no kind prints any more is removed from the table."""
    printed = set().union(*numeric_fields().values())
    assert sorted(set(documented()) - printed) == []


def test_unit_cost_rows_say_load_and_period() -> None:
    docs = documented()
    at_load = docs["cost_usd_per_million_output_tokens_at_load"]
    assert "load" in at_load[1] and "hours_per_month" in at_load[1]
    assert "full capacity" in docs["cost_usd_per_million_output_tokens_saturated"][1]
    assert "not the load" in docs["output_tokens_per_s"][1]
