"""Markdown and JSON renderings of fixed, hand-built results against golden files."""

from __future__ import annotations

import json

import pytest

from gpufleet.report import render_json, render_markdown

from . import samples
from .golden_util import check_golden

CASES = {
    "recommendation": samples.recommendation,
    "infeasible": samples.infeasible,
    "cannot_fit": samples.cannot_fit,
    "migration": samples.migration,
    "scenario_set": samples.scenario_set,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_markdown_golden(name: str) -> None:
    check_golden(
        f"{name}.md", render_markdown(CASES[name](), assumptions=("commitment discount aws 3y: 66%",))
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_json_golden(name: str) -> None:
    check_golden(f"{name}.json", render_json(CASES[name](), assumptions=("commitment discount aws 3y: 66%",)))


def test_json_is_plain_and_keyed_by_unit_names() -> None:
    doc = json.loads(render_json(samples.migration()))
    assert doc["kind"] == "migration"
    assert list(doc) == ["kind", "gpufleet_version", "assumptions", "result"]
    cur = doc["result"]["current"]
    assert cur["cost_usd_per_month"] == pytest.approx(16030.8)
    assert cur["output_tokens_per_s"] == {"central": 14970.0, "p10": 11200.0, "p90": 18500.0}
    assert doc["result"]["recommended"]["spot"]["replicas_provisioned"] == 4


def test_json_nan_becomes_null() -> None:
    from dataclasses import replace

    rec = samples.recommendation()
    best = replace(rec.best, cost_usd_per_million_output_tokens_at_load=float("nan"))  # type: ignore[arg-type]
    doc = json.loads(render_json(replace(rec, best=best)))
    assert doc["result"]["best"]["cost_usd_per_million_output_tokens_at_load"] is None


def test_json_rejects_unknown_objects() -> None:
    from gpufleet.report import to_jsonable

    with pytest.raises(TypeError):
        to_jsonable(object())


def test_markdown_sections() -> None:
    md = render_markdown(samples.cannot_fit())
    assert "## Why it cannot fit" in md
    assert "Serve in fp8: 52.3 GiB per GPU" in md
    md = render_markdown(samples.infeasible())
    assert "INFEASIBLE" in md and "## Closest options" in md and "2,430 tok/s < target" in md
