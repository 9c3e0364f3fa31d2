"""`gpufleet catalog models`: every shipped architecture, counted from its config, with aliases."""

from __future__ import annotations

import csv
import io
import json

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.models import count_params, resolve_model
from gpufleet.models.registry import load_model_entries

runner = CliRunner()


def _ok(*args: str) -> str:
    res = runner.invoke(app, ["catalog", "models", *args])
    assert res.exit_code == 0, res.output
    return res.output


def test_json_lists_every_shipped_model_with_counted_parameters() -> None:
    rows = {r["id"]: r for r in json.loads(_ok("--format", "json"))["models"]}
    assert set(rows) == set(load_model_entries())
    for mid, r in rows.items():
        n = count_params(resolve_model(mid))
        assert r["params_b"] == pytest.approx(n.total / 1e9)
        assert 0 < r["active_params_b"] <= r["params_b"]
        assert (r["experts"] > 0) == (r["active_params_b"] < r["params_b"])  # only MoE models differ
        for alias in r["aliases"]:  # every alias shown resolves to the row's model
            assert resolve_model(alias) == resolve_model(mid)
    assert "deepseek-r1" in rows["deepseek-v3"]["aliases"]
    assert rows["deepseek-v3"]["attention"] == "MLA"
    assert rows["llama-3.1-8b"]["attention"] == "GQA" and rows["llama-3.1-8b"]["kv_heads"] == 8
    assert rows["qwen3-30b-a3b"]["experts"] == 128 and rows["qwen3-30b-a3b"]["experts_per_token"] == 8


def test_table_and_csv(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpufleet.cli.console import console

    monkeypatch.setattr(console, "_width", 200)  # rich wraps at 80 columns under CliRunner
    out = _ok()
    assert "gpt-oss-120b" in out and "128 (top 4)" in out and "MLA" in out
    rows = list(csv.DictReader(io.StringIO(_ok("--format", "csv"))))
    assert len(rows) == len(load_model_entries())
    assert {"hf_repo", "config_source", "aliases"} <= set(rows[0])


def test_bad_format_exits_2() -> None:
    res = runner.invoke(app, ["catalog", "models", "--format", "xml"])
    assert res.exit_code == 2
