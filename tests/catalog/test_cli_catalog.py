"""`gpufleet catalog gpus|offers` through CliRunner against the root app."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.catalog.offers import OFFER_COLUMNS
from gpufleet.catalog.regions import GEOS
from gpufleet.cli.app import app

DATA = Path(__file__).resolve().parents[1] / "data" / "user_catalogs"
runner = CliRunner()


@pytest.fixture(autouse=True)
def _wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rich wraps at 80 columns under CliRunner; widen so that assertions see whole words."""
    from gpufleet.cli.console import console

    monkeypatch.setattr(console, "_width", 200)


def _ok(*args: str) -> str:
    res = runner.invoke(app, ["catalog", *args])
    assert res.exit_code == 0, res.output
    return res.stdout


def _user_error(*args: str) -> str:
    res = runner.invoke(app, ["catalog", *args])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    return res.output


def test_gpus_table_shows_uncertain() -> None:
    out = _ok("gpus")
    assert "H100-SXM" in out and "uncertain" in out


def test_gpus_json_and_csv() -> None:
    rows = json.loads(_ok("gpus", "--format", "json"))["gpus"]
    assert {"id", "memory_gib", "uncertain", "source"} <= set(rows[0])
    text = _ok("gpus", "--format", "csv")
    assert next(csv.reader(io.StringIO(text)))[0] == "id"


def test_offers_json_h100_sxm_from_8_providers() -> None:
    rows = json.loads(_ok("offers", "--gpu", "H100-SXM", "--format", "json"))["offers"]
    assert all(list(r)[: len(OFFER_COLUMNS)] == list(OFFER_COLUMNS) for r in rows)
    assert all(r["geo"] in GEOS for r in rows)
    assert len({r["provider"] for r in rows}) >= 8
    assert all(r["gpu"] == "H100-SXM" for r in rows)
    per_gpu = [r["price_on_demand_usd_per_hour"] / r["gpu_count"] for r in rows]
    assert per_gpu == sorted(per_gpu)  # default sort: price per GPU-hour


def test_offers_filters_and_csv() -> None:
    text = _ok(
        "offers",
        "--gpu",
        "A100",
        "--gpus",
        "8",
        "--provider",
        "aws",
        "--provider",
        "gcp",
        "--region",
        "us-*",
        "--spot",
        "--max-price",
        "40",
        "--sort",
        "price",
        "--format",
        "csv",
    )
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows and tuple(rows[0]) == OFFER_COLUMNS
    spots = [float(r["price_spot_usd_per_hour"]) for r in rows]
    assert spots == sorted(spots) and max(spots) <= 40
    assert {r["provider"] for r in rows} <= {"aws", "gcp"} and all(
        r["region"].startswith("us-") for r in rows
    )


def test_offers_table_limit_and_footer() -> None:
    out = _ok("offers", "--gpu", "L4", "--provider", "aws,gcp", "--limit", "3")
    assert "showing the first 3" in out and "Catalog age" in out and "$/GPU-h" in out


def test_offers_with_user_catalogs() -> None:
    rows = json.loads(
        _ok(
            "offers",
            "--provider",
            "onprem",
            "--format",
            "json",
            "--catalog",
            str(DATA / "onprem.yaml"),
            "--catalog",
            str(DATA / "gpu_instances.json"),
        )
    )["offers"]
    assert {r["instance_type"] for r in rows} == {"dgx-h100", "l40s-box"}


def test_offers_no_match_is_not_an_error() -> None:
    res = runner.invoke(app, ["catalog", "offers", "--gpu", "H100-SXM", "--max-price", "0.01"])
    assert res.exit_code == 0 and "No offer matches" in res.output


def test_refreshed_uses_fetch_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import sys
    import types

    from gpufleet.catalog.offers import load_shipped_offers, write_offers_csv

    one = load_shipped_offers().filter(provider="lambda", gpu="H100-SXM", gpus=8).records()[0]
    from dataclasses import replace

    f = tmp_path / "offers-lambda.csv"
    f.write_text(write_offers_csv([replace(one, price_on_demand_usd_per_hour=1.5, captured_at="2026-11-22")]))
    from gpufleet.catalog.fetch import store as real

    store = types.ModuleType("gpufleet.catalog.fetch.store")
    store.read_refreshed = lambda kind: [("lambda", f, f.read_text())]  # type: ignore[attr-defined]
    store.StoredDataWarning = real.StoredDataWarning  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gpufleet.catalog.fetch.store", store)
    rows = json.loads(_ok("offers", "--provider", "lambda", "--refreshed", "--format", "json"))["offers"]
    assert [(r["price_on_demand_usd_per_hour"], r["captured_at"]) for r in rows] == [(1.5, "2026-11-22")]


# --- user errors: exit 2, no traceback, clear message -------------------------------------------------------
def test_unknown_gpu() -> None:
    out = _user_error("offers", "--gpu", "H1000")
    assert "Unknown GPU 'H1000'" in out and "Did you mean" in out


def test_unknown_provider() -> None:
    out = _user_error("offers", "--provider", "awz")
    assert "Unknown provider 'awz'" in out and "aws" in out


def test_bad_format() -> None:
    assert "--format" in _user_error("offers", "--format", "xml")


def test_bad_sort() -> None:
    assert "--sort" in _user_error("offers", "--sort", "cheapest")


def test_bad_gpus_count() -> None:
    err = _user_error("offers", "--gpus", "0")
    assert "--gpus = 0 is not allowed" in err and "positive GPU count" in err


def test_negative_max_price() -> None:
    err = _user_error("offers", "--max-price", "-1")
    assert "--max-price = -1 is not allowed" in err and "USD per hour" in err


def test_non_numeric_max_price() -> None:
    assert "--max-price" in _user_error("offers", "--max-price", "cheap")


def test_bad_limit() -> None:
    assert "--limit must be a positive integer" in _user_error("offers", "--limit", "0")


def test_missing_user_catalog(tmp_path: Path) -> None:
    out = _user_error("offers", "--catalog", str(tmp_path / "nope.yaml"))
    assert "does not exist" in out


def test_bad_user_catalog(tmp_path: Path) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text(
        "offers:\n  - {provider: x, region: r, instance_type: m, gpu: L4, gpu_count: 1, "
        "price_on_demand_usd_per_hour: -3}\n"
    )
    out = _user_error("offers", "--catalog", str(p))
    assert "bad.yaml" in out and "price_on_demand_usd_per_hour" in out
