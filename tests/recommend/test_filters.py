"""Offer filters: geo, GPU families, provider class, exclusions, GPU memory, GPUs per node, price per
GPU-hour, comma lists, ordered GPU preferences, commitment overrides; every bad value is a user error
(exit 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

import gpufleet
from gpufleet.catalog.offers import load_offers
from gpufleet.catalog.provider_class import PROVIDER_CLASSES, provider_class
from gpufleet.catalog.regions import GEOS, expand_geos, load_regions, location_columns, region_location
from gpufleet.cli.app import app
from gpufleet.errors import ConfigFileError, GpufleetError, UnknownNameError
from gpufleet.recommend.api import recommend
from gpufleet.recommend.filters import filter_mask, gpu_family, split_values
from gpufleet.recommend.types import Recommendation
from gpufleet.recommend.workload import read_workload_file, workload_from_dict

from .fakes import FakeEstimator

EST = FakeEstimator()
TABLE = load_offers()
runner = CliRunner()


def rec(**kw: Any) -> Recommendation:
    return recommend(offers=TABLE, estimator=EST, model="fake-7b", **kw)


# --- geography --------------------------------------------------------------------------------------------
def test_every_catalog_region_has_a_location() -> None:
    prov, region = TABLE.column("provider"), TABLE.column("region")
    pairs = {(str(p), str(r)) for p, r in zip(prov.tolist(), region.tolist(), strict=True)}
    missing = sorted(p for p in pairs - set(load_regions()) if p[1] != "unspecified")  # empty-region rows
    # AWS Local Zones (us-east-1-atl2) are not rows of regions.csv: they take their parent region's geo
    assert all(region_location(p, r).geo != "unknown" for p, r in missing), missing[:10]
    geo, _country, lat, lon = location_columns(prov, region)
    assert set(geo.tolist()) <= set(GEOS)
    assert np.all(np.isnan(lat) | ((lat >= -90) & (lat <= 90)))
    assert np.all(np.isnan(lon) | ((lon >= -180) & (lon <= 180)))


@pytest.mark.parametrize(
    ("provider", "region"),
    [("aws", "us-east-1"), ("azure", "eastus"), ("runpod", "US"), ("do", "nyc1")],
)
def test_us_geo_covers_every_spelling(provider: str, region: str) -> None:
    loc = region_location(provider, region)
    assert loc.geo == "us" and loc.country == "US"


def test_geo_eu_keeps_european_offers_of_several_providers() -> None:
    r = rec(geos=["eu"], target_requests_per_s=1, limit=20)
    assert r.status == "ok" and r.ranked
    assert all(region_location(c.provider, c.region).geo == "eu" for c in r.ranked)


def test_geo_groups_expand() -> None:
    assert expand_geos(["europe"]) == ("eu", "uk")
    assert expand_geos(["US", "north_america"]) == ("us", "ca")


def test_region_glob_that_misses_providers_says_so() -> None:
    r = rec(regions=["us-*"], target_requests_per_s=1)
    assert any("--geo us" in n and "azure" in n for n in r.notes)


# --- GPUs, classes, other filters ---------------------------------------------------------------------------
def test_gpu_family_names_cover_their_variants() -> None:
    assert set(gpu_family("H100")) == {"H100-SXM", "H100-PCIe", "H100-NVL"}
    assert gpu_family("NVIDIA H100") == gpu_family("h100")
    assert gpu_family("L40") == ("L40",)  # not L40S
    assert gpu_family("A100-80GB") == ("A100-SXM-80GB",)  # an alias names one spec


def test_gpu_filter_and_min_memory() -> None:
    r = rec(gpus=["H100", "A100"], min_gpu_memory_gib=70, target_requests_per_s=1, limit=20)
    assert r.status == "ok"
    assert all(c.gpu.startswith(("H100", "A100")) and c.mem_capacity_gib >= 70 for c in r.ranked)


def test_provider_class_and_exclusions() -> None:
    r = rec(provider_classes=["hyperscaler"], exclude_providers="aws,gcp", target_requests_per_s=1, limit=20)
    assert r.ranked and {c.provider for c in r.ranked} <= {"azure", "oci"}
    assert all(provider_class(c.provider) == "hyperscaler" for c in r.ranked)


def test_gpus_per_node_and_price_per_gpu_hour() -> None:
    r = rec(gpus_per_node=[8], max_price_per_gpu_usd_per_hour=2.5, target_requests_per_s=1, limit=20)
    assert r.ranked
    for c in r.ranked:
        assert c.gpus_per_node == 8 and c.price_usd_per_node_hour / 8 <= 2.5 + 1e-9


def test_filter_mask_is_all_rows_without_filters() -> None:
    w = workload_from_dict({"model": "fake-7b", "allow_embargoed_countries": True})
    assert filter_mask(TABLE, w).all()


# --- multi-value flags: repeats and comma lists ------------------------------------------------------------
@given(st.lists(st.sampled_from(["aws", "gcp", "azure", " lambda "]), min_size=1, max_size=6))
def test_comma_lists_and_repeats_mean_the_same(items: list[str]) -> None:
    assert split_values(items) == split_values(",".join(items))
    assert split_values(items) == tuple(dict.fromkeys(i.strip() for i in items))


def test_provider_comma_list_in_recommend_cli_equals_repeats() -> None:
    base = ["recommend", "--model", "llama-3.2-1b", "--top", "3", "--format", "json"]
    a = runner.invoke(app, [*base, "--provider", "aws,gcp"])
    b = runner.invoke(app, [*base, "--provider", "aws", "--provider", "gcp"])
    assert a.exit_code == b.exit_code == 0
    assert a.stdout == b.stdout and '"status": "ok"' in a.stdout


# --- ordered / any-of GPU preferences ----------------------------------------------------------------------
def test_ordered_preference_takes_the_first_feasible_choice() -> None:
    r = rec(gpus={"ordered": ["H100", "L4"]}, target_requests_per_s=1)
    assert r.status == "ok" and r.best is not None and r.best.gpu.startswith("H100")
    assert any("Ordered GPU preference" in n and "H100: chosen" in n for n in r.notes)


def test_ordered_preference_skips_an_infeasible_first_choice() -> None:
    # a 7B fp16 model cannot fit on one 16 GiB T4 within one node... use a GPU with no offer in the filters
    r = rec(gpus={"ordered": ["MI300X", "L4"]}, providers=["gcp"], target_requests_per_s=1)
    assert r.status == "ok" and r.best is not None and r.best.gpu == "L4"
    assert any("MI300X: no feasible plan" in n for n in r.notes)


def test_any_of_ranks_all_choices_together() -> None:
    r = rec(gpus={"any_of": ["H100", "L4"]}, target_requests_per_s=1, limit=30)
    assert {c.gpu for c in r.ranked} <= {"H100-SXM", "H100-PCIe", "H100-NVL", "L4"}


# --- commitments override ----------------------------------------------------------------------------------
def test_commitments_file_changes_committed_prices(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(
        "commitments:\n  - {provider: lambda, program: reserved, term_years: 1, discount_fraction: 0.5, "
        "source: test}\n"
    )
    r = rec(providers=["lambda"], pricing="1y", commitments=f, target_requests_per_s=1)
    assert r.status == "ok" and r.best is not None
    od = TABLE.filter(provider="lambda")
    match = (od.column("instance_type") == r.best.instance_type) & (od.column("region") == r.best.region)
    assert r.best.price_usd_per_node_hour == pytest.approx(
        float(od.column("price_on_demand_usd_per_hour")[match][0]) * 0.5
    )


# --- Python keyword names match the CLI's ------------------------------------------------------------------
def test_python_api_takes_the_cli_names() -> None:
    a = gpufleet.recommend(model="fake-7b", target_rps=2, ttft_ms=800, provider="aws,gcp", offers=TABLE,
                           estimator=EST, top=3)  # fmt: skip
    b = recommend(model="fake-7b", target_requests_per_s=2, ttft_p95_ms=800, providers=["aws", "gcp"],
                  offers=TABLE, estimator=EST, limit=3)  # fmt: skip
    assert a.workload == b.workload and a.best == b.best


def test_python_api_rejects_one_field_under_two_names() -> None:
    with pytest.raises(GpufleetError, match="same workload field"):
        gpufleet.recommend(
            model="fake-7b", target_rps=2, target_requests_per_s=2, offers=TABLE, estimator=EST
        )


def test_migrate_takes_current_names() -> None:
    m = gpufleet.migrate(
        model="fake-7b", current_instance="g5.xlarge", target_rps=1, offers=TABLE, estimator=EST
    )
    assert m.current.instance_type == "g5.xlarge"


# --- every bad filter value is a user error ----------------------------------------------------------------
BAD_FLAGS: list[tuple[tuple[str, ...], str]] = [
    (("--provider", "aws,gcpp"), "Unknown provider 'gcpp'"),
    (("--exclude-provider", "nope"), "Unknown provider 'nope'"),
    (("--region", "mars-*"), "Unknown region 'mars-*'"),
    (("--geo", "eu,mars"), "Unknown geo 'mars'"),
    (("--vendor", "nvidiaa"), "Unknown GPU vendor 'nvidiaa'"),
    (("--gpu", "H1000"), "Unknown GPU 'H1000'"),
    (("--provider-class", "hyperscalar"), "Did you mean: hyperscaler"),
    (("--min-gpu-memory", "0"), "--min-gpu-memory"),
    (("--gpus-per-node", "0"), "--gpus-per-node"),
    (("--gpus-per-node", "x"), "gpus_per_node"),
    (("--max-nodes", "0"), "--max-nodes"),
    (("--max-nodes", "65"), "--max-nodes"),
    (("--max-price-per-gpu-hour", "-1"), "--max-price-per-gpu-hour"),
    (("--commitments", "/nonexistent/c.yaml"), "c.yaml"),
]


@pytest.mark.parametrize("command", ["recommend", "migrate"])
@pytest.mark.parametrize(("flag", "expected"), BAD_FLAGS, ids=[" ".join(f) for f, _ in BAD_FLAGS])
def test_bad_filter_values_exit_2(command: str, flag: tuple[str, ...], expected: str) -> None:
    args = [command, "--model", "llama-3.2-1b", *flag]
    if command == "migrate":
        args += ["--current-instance", "g5.xlarge"]
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert expected in r.output and "Traceback" not in r.output


BAD_OFFER_FLAGS: list[tuple[tuple[str, ...], str]] = [
    (("--provider", "aws,gcpp"), "Unknown provider 'gcpp'"),
    (("--region", "mars-*"), "Unknown region 'mars-*'"),
    (("--geo", "mars"), "Unknown geo 'mars'"),
    (("--gpu", "H1000"), "Unknown GPU 'H1000'"),
    (("--provider-class", "cloud"), "Unknown provider class 'cloud'"),
]


@pytest.mark.parametrize(("flag", "expected"), BAD_OFFER_FLAGS, ids=[" ".join(f) for f, _ in BAD_OFFER_FLAGS])
def test_bad_catalog_offer_filters_exit_2(flag: tuple[str, ...], expected: str) -> None:
    r = runner.invoke(app, ["catalog", "offers", *flag])
    assert r.exit_code == 2 and expected in r.output


def test_catalog_offers_geo_and_gpu_family() -> None:
    r = runner.invoke(
        app, ["catalog", "offers", "--gpu", "H100", "--geo", "eu", "--region", "*", "--format", "json"]
    )
    assert r.exit_code == 0
    import json

    rows = json.loads(r.stdout)["offers"]
    assert rows and all(o["geo"] == "eu" and o["gpu"].startswith("H100") for o in rows)
    assert len({o["gpu"] for o in rows}) >= 2


BAD_FIELDS: list[tuple[dict[str, Any], str]] = [
    ({"geos": ["mars"]}, "Unknown geo 'mars'"),
    ({"gpus": ["H1000"]}, "Unknown GPU 'H1000'"),
    ({"gpus": {"ordered": []}}, "exactly one non-empty list"),
    ({"gpus": {"any_of": ["H100"], "ordered": ["A100"]}}, "exactly one non-empty list"),
    ({"provider_classes": "cloud"}, "Unknown provider class"),
    ({"gpu_vendors": ["acme"]}, "Unknown GPU vendor"),
    ({"gpus_per_node": [0]}, "GPUs per node"),
    ({"min_gpu_memory_gib": -1}, "min_gpu_memory_gib"),
    ({"max_price_per_gpu_usd_per_hour": 0}, "max_price_per_gpu_usd_per_hour"),
]


@pytest.mark.parametrize(
    ("fields", "expected"), BAD_FIELDS, ids=[next(iter(f)) + str(i) for i, (f, _) in enumerate(BAD_FIELDS)]
)
def test_bad_workload_file_filters(tmp_path: Path, fields: dict[str, Any], expected: str) -> None:
    import yaml

    f = tmp_path / "w.yaml"
    f.write_text(yaml.safe_dump({"model": "llama-3.2-1b", **fields}))
    with pytest.raises(ConfigFileError, match=r"w\.yaml") as err:
        read_workload_file(f)
    assert expected in str(err.value)
    r = runner.invoke(app, ["recommend", str(f)])
    assert r.exit_code == 2 and expected in r.output


def test_unknown_provider_in_a_workload_file_exits_2(tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"
    f.write_text("model: llama-3.2-1b\nproviders: [aws, nope]\n")
    r = runner.invoke(app, ["recommend", str(f)])
    assert r.exit_code == 2 and "Unknown provider 'nope'" in r.output


def test_provider_classes_cover_every_catalog_provider() -> None:
    assert {provider_class(p) for p in TABLE.providers()} <= set(PROVIDER_CLASSES)


def test_unknown_name_error_is_raised_for_bad_geo() -> None:
    with pytest.raises(UnknownNameError):
        expand_geos(["atlantis"])


def test_offers_in_embargoed_countries_are_not_recommended_unless_allowed() -> None:
    from gpufleet.recommend.filters import EMBARGOED_COUNTRIES, _table_locations

    country = _table_locations(TABLE)[1]
    in_embargo = np.isin(country, EMBARGOED_COUNTRIES)
    assert in_embargo.any()  # the shipped catalog has such rows (a few marketplace hosts)
    w = workload_from_dict({"model": "llama-3.1-8b", "task": "full_finetune", "train_tokens": 5e9})
    assert not (filter_mask(TABLE, w) & in_embargo).any()
    allowed = workload_from_dict({"model": "llama-3.1-8b", "task": "full_finetune", "train_tokens": 5e9,
                                  "allow_embargoed_countries": True})  # fmt: skip
    assert (filter_mask(TABLE, allowed) & in_embargo).any()


@pytest.mark.parametrize(
    "argv", [["catalog", "offers", "--gpu", ""], ["catalog", "offers", "--provider", " , "]]
)
def test_an_explicitly_empty_filter_exits_2_instead_of_keeping_everything(argv: list[str]) -> None:
    from typer.testing import CliRunner

    from gpufleet.cli.app import app

    r = CliRunner().invoke(app, argv)
    assert r.exit_code == 2 and "empty value" in r.output


def test_an_empty_list_is_no_filter_but_an_empty_string_is_an_error() -> None:
    from gpufleet.errors import InputError

    assert split_values([]) == ()
    with pytest.raises(InputError, match="empty value"):
        split_values("")
