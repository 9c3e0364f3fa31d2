"""Each command's JSON output validates against the shipped JSON Schema of its kind; the shipped schemas are
current (regenerate: .venv/bin/python tools/gen_json_schemas.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.report.json_schemas import KINDS, build_schemas, load_schema, schema_text

runner = CliRunner()
DATA = Path(__file__).parent.parent / "data"
SCHEMAS = Path(__file__).parent.parent.parent / "src" / "gpufleet" / "report" / "schemas"

#: kind -> a command printing it (cheap arguments)
COMMANDS: dict[str, list[str]] = {
    "recommendation": ["recommend", "--model", "llama-3.2-1b", "--provider", "lambda", "--top", "2"],
    "migration": [
        "migrate",
        "--model",
        "llama-3.2-1b",
        "--current-instance",
        "g5.xlarge",
        "--provider",
        "aws",
        "--top",
        "2",
    ],
    "scenario": ["scenarios", "run", "production_serving_g4dn"],
    "scenario_set": ["scenarios", "run-set", "cost_optimization_focus"],
    "offers": ["catalog", "offers", "--gpu", "H100", "--geo", "eu"],
    "gpus": ["catalog", "gpus"],
    "estimate_memory": ["estimate", "memory", "-m", "llama-3.1-8b", "-g", "H100"],
    "estimate_inference": ["estimate", "infer", "-m", "llama-3.1-8b", "-g", "H100"],
    "estimate_training": ["estimate", "train", "-m", "llama-3.2-1b", "-g", "H100", "--task", "lora"],
    "estimate_matrix": ["estimate", "matrix", "--models", "llama-3.1-8b", "--gpus", "H100,T4"],
    "validation": ["validate", str(DATA / "cases" / "small.csv")],
    "scenario_list": ["scenarios", "list"],
    "config_check": ["config", "check", str(DATA / "workloads" / "inference.yaml")],
    "config_show": ["config", "show"],
}


def test_every_kind_has_a_command_and_a_schema() -> None:
    assert set(COMMANDS) == set(KINDS)
    assert {p.name.removesuffix(".schema.json") for p in SCHEMAS.glob("*.schema.json")} == set(KINDS)


@pytest.fixture(scope="module")
def built() -> dict[str, dict[str, Any]]:
    return build_schemas()


@pytest.mark.parametrize("kind", KINDS)
def test_shipped_schema_is_current(kind: str, built: dict[str, dict[str, Any]]) -> None:
    schema = built[kind]
    jsonschema.Draft202012Validator.check_schema(schema)
    assert (SCHEMAS / f"{kind}.schema.json").read_text(encoding="utf-8") == schema_text(schema), (
        "stale schema: run .venv/bin/python tools/gen_json_schemas.py"
    )


@pytest.mark.parametrize("kind", KINDS)
def test_command_json_matches_its_schema(kind: str) -> None:
    r = runner.invoke(app, [*COMMANDS[kind], "--format", "json"])
    assert r.exit_code == 0, r.output
    doc: dict[str, Any] = json.loads(r.stdout)
    assert doc["kind"] == kind
    jsonschema.validate(doc, load_schema(kind), cls=jsonschema.Draft202012Validator)


def test_a_wrong_document_fails_its_schema() -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"kind": "offers", "gpufleet_version": "0", "offers": [{"provider": 1}]},
                            load_schema("offers"))  # fmt: skip
