"""`gpufleet catalog history` (issue 24 item 5): the dated prices of one machine, its exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpufleet.catalog.fetch import store
from gpufleet.catalog.history import history_csv, price_history
from gpufleet.catalog.offers import load_shipped_offers

from .clirun import run_cli

P5 = ["catalog", "history", "--provider", "aws", "--instance", "p5.48xlarge", "--region", "us-east-1"]


@pytest.fixture(autouse=True)
def _data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GPUFLEET_DATA_DIR", str(tmp_path))
    return tmp_path


def _record_refresh(captured_at: str, factor: float) -> None:
    """A refresh's history entry, written by the store as ``gpufleet catalog update`` writes it."""
    shipped = [o for o in load_shipped_offers().records() if o.provider == "aws" and o.region == "us-east-1"]
    raised = [
        type(o)(**{**{f: getattr(o, f) for f in o.__dataclass_fields__},
                   "price_on_demand_usd_per_hour": o.price_on_demand_usd_per_hour * factor})
        for o in shipped
    ]  # fmt: skip
    store.write_provider(
        "aws", {"offers": "o\n", "commitments": "c\n"}, {}, history_text=history_csv(raised, captured_at)
    )


def test_shipped_point_then_refreshes_json() -> None:
    from datetime import UTC, datetime

    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    _record_refresh(now, 1.0)
    r = run_cli(*P5, "--kind", "on_demand", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["kind"] == "price_history" and doc["window_days"] == 90
    pts = doc["points"]
    assert pts[0]["source"] == "shipped" and pts[-1]["source"] == "refresh"
    assert pts[-1]["captured_at"] == now
    lib = price_history(
        provider="aws", instance_type="p5.48xlarge", region="us-east-1", price_kind="on_demand"
    )
    assert [p["price_usd_per_hour"] for p in pts] == [p.price_usd_per_hour for p in lib]
    table = run_cli(*P5)
    assert table.exit_code == 0 and "shipped" in table.stdout and "refresh" in table.stdout


@pytest.mark.parametrize(
    ("flag", "value", "close"),
    [
        ("--provider", "awz", "aws"),
        ("--instance", "p5.48xlarg", "p5.48xlarge"),
        ("--region", "us-east-l", "us-east-1"),
    ],
)
def test_unknown_names_exit_2_with_close_matches(flag: str, value: str, close: str) -> None:
    args = list(P5)
    args[args.index(flag) + 1] = value
    r = run_cli(*args)
    assert r.exit_code == 2
    assert "Did you mean" in r.output and close in r.output


def test_bad_days_exit_2() -> None:
    assert run_cli(*P5, "--days", "0").exit_code == 2


def test_no_offer_exits_3() -> None:
    args = [*P5[:-1], "eu-west-3", "--format", "json"]  # aws offers no p5.48xlarge in eu-west-3
    r = run_cli(*args)
    assert r.exit_code == 3, r.output
    assert json.loads(r.stdout)["points"] == []
    assert "Exit 3" in r.stderr
