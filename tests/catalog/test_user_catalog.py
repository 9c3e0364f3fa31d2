"""User catalogs: gpufleet format, GPU Fleet Optimizer format, and every bad input its own test."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gpufleet.catalog.offers import load_offers, load_shipped_offers
from gpufleet.catalog.user import apply_user_catalog, read_user_catalog
from gpufleet.errors import ConfigFileError

DATA = Path(__file__).resolve().parents[1] / "data" / "user_catalogs"


def _write(tmp_path: Path, text: str, name: str = "cat.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def _err(path: Path) -> str:
    with pytest.raises(ConfigFileError) as err:
        load_offers(user_catalogs=[path])
    msg = str(err.value)
    assert str(path) in msg
    return msg


# --- good files ---------------------------------------------------------------------------------------------
def test_gfo_example_reads_nine_families() -> None:
    cat = read_user_catalog(DATA / "gpu_instances.json")
    by_type = {o.instance_type: o for o in cat.offers}
    assert len(by_type) == 9
    assert by_type["p4d.24xlarge"].gpu == "A100-SXM-40GB"
    assert by_type["p4de.24xlarge"].gpu == "A100-SXM-80GB"
    assert by_type["p5.48xlarge"].gpu == "H100-SXM"
    assert by_type["p5e.48xlarge"].gpu == "H200-SXM"
    assert by_type["p6-b200.48xlarge"].gpu == "B200"
    assert {o.gpu for o in cat.offers} >= {"T4", "A10G", "L4", "L40S"}
    assert all(o.provider == "aws" and o.region == "unspecified" for o in cat.offers)
    assert by_type["p4de.24xlarge"].price_spot_usd_per_hour is None


def test_onprem_yaml_adds_offers_and_overrides() -> None:
    base = load_shipped_offers()
    t = load_offers(user_catalogs=[DATA / "onprem.yaml"])
    assert len(t) == len(base) + 2
    onprem = t.filter(provider="onprem").records()
    assert {o.instance_type for o in onprem} == {"dgx-h100", "l40s-box"}
    p5_before = base.filter(provider="aws", region_glob="us-*").column("instance_type") == "p5.48xlarge"
    before = base.filter(provider="aws", region_glob="us-*").column("price_on_demand_usd_per_hour")[p5_before]
    after_t = t.filter(provider="aws", region_glob="us-*")
    after = after_t.column("price_on_demand_usd_per_hour")[after_t.column("instance_type") == "p5.48xlarge"]
    assert np.allclose(after, before * 0.7)
    lam = t.filter(provider="lambda", gpu="H100-SXM", gpus=8)
    assert np.all(lam.column("price_on_demand_usd_per_hour") == 20.0)


def test_override_region_glob_limits_scope(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        "price_overrides:\n  - {provider: aws, instance_type: p5.48xlarge, region: eu-*, "
        "price_spot_usd_per_hour: 9.5}\n",
    )
    t = apply_user_catalog(load_shipped_offers(), read_user_catalog(p))
    p5 = t.filter(provider="aws").take(t.filter(provider="aws").column("instance_type") == "p5.48xlarge")
    eu = np.array([r.startswith("eu-") for r in p5.column("region").tolist()])
    assert np.all(p5.column("price_spot_usd_per_hour")[eu] == 9.5)
    assert not np.any(p5.column("price_spot_usd_per_hour")[~eu] == 9.5)


def test_json_gpufleet_format(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        json.dumps(
            {
                "offers": [
                    {
                        "provider": "neocloud",
                        "region": "r1",
                        "instance_type": "8xB200",
                        "gpu": "B200",
                        "gpu_count": 8,
                        "price_on_demand_usd_per_hour": 30,
                    }
                ]
            }
        ),
        "c.json",
    )
    (o,) = read_user_catalog(p).offers
    assert (o.gpu, o.gpu_memory_gib, o.captured_at) == ("B200", 179.06, "user")


# --- bad files: each its own test ---------------------------------------------------------------------------
def test_missing_file(tmp_path: Path) -> None:
    assert "does not exist" in _err(tmp_path / "nope.yaml")


def test_malformed_yaml(tmp_path: Path) -> None:
    msg = _err(_write(tmp_path, "offers:\n  - provider: [unclosed\n"))
    assert "malformed YAML" in msg and "line" in msg


def test_malformed_json(tmp_path: Path) -> None:
    msg = _err(_write(tmp_path, '{"offers": [}', "c.json"))
    assert "malformed JSON" in msg and "line 1" in msg


def test_top_level_not_mapping(tmp_path: Path) -> None:
    assert "expected a mapping" in _err(_write(tmp_path, "- 1\n- 2\n"))


def test_missing_field(tmp_path: Path) -> None:
    msg = _err(
        _write(tmp_path, "offers:\n  - {provider: x, region: r, instance_type: m, gpu: L4, gpu_count: 1}\n")
    )
    assert "offers / 0" in msg and "price_on_demand_usd_per_hour" in msg and "missing" in msg


def test_negative_price(tmp_path: Path) -> None:
    msg = _err(
        _write(
            tmp_path,
            "offers:\n  - {provider: x, region: r, instance_type: m, gpu: L4, gpu_count: 1, "
            "price_on_demand_usd_per_hour: -2}\n",
        )
    )
    assert "-2" in msg and "> 0" in msg


def test_zero_spot_price(tmp_path: Path) -> None:
    msg = _err(
        _write(
            tmp_path,
            "offers:\n  - {provider: x, region: r, instance_type: m, gpu: L4, gpu_count: 1, "
            "price_on_demand_usd_per_hour: 2, price_spot_usd_per_hour: 0}\n",
        )
    )
    assert "price_spot_usd_per_hour" in msg and "null when unknown" in msg


def test_nan_price(tmp_path: Path) -> None:
    msg = _err(
        _write(
            tmp_path,
            "offers:\n  - {provider: x, region: r, instance_type: m, gpu: L4, gpu_count: 1, "
            "price_on_demand_usd_per_hour: .nan}\n",
        )
    )
    assert "nan" in msg and "price_on_demand_usd_per_hour" in msg


def test_unknown_gpu(tmp_path: Path) -> None:
    msg = _err(
        _write(
            tmp_path,
            "offers:\n  - {provider: x, region: r, instance_type: m, gpu: H1000, gpu_count: 1, "
            "price_on_demand_usd_per_hour: 2}\n",
        )
    )
    assert "H1000" in msg and "offers[0]" in msg and "Did you mean" in msg


def test_gpu_without_count(tmp_path: Path) -> None:
    msg = _err(
        _write(
            tmp_path,
            "offers:\n  - {provider: x, region: r, instance_type: m, gpu: L4, "
            "price_on_demand_usd_per_hour: 2}\n",
        )
    )
    assert "gpu_count must be > 0" in msg


def test_unknown_field_typo(tmp_path: Path) -> None:
    msg = _err(
        _write(
            tmp_path,
            "offers:\n  - {provider: x, region: r, instance_type: m, price_usd: 2, "
            "price_on_demand_usd_per_hour: 2}\n",
        )
    )
    assert "price_usd" in msg


def test_override_both_price_and_discount(tmp_path: Path) -> None:
    msg = _err(
        _write(
            tmp_path,
            "price_overrides:\n  - {provider: aws, instance_type: p5.48xlarge, "
            "price_on_demand_usd_per_hour: 50, discount_fraction: 0.2}\n",
        )
    )
    assert "not both" in msg


def test_override_discount_out_of_range(tmp_path: Path) -> None:
    msg = _err(
        _write(
            tmp_path,
            "price_overrides:\n  - {provider: aws, instance_type: p5.48xlarge, discount_fraction: 1.5}\n",
        )
    )
    assert "discount_fraction" in msg and "1.5" in msg


def test_override_without_change(tmp_path: Path) -> None:
    msg = _err(_write(tmp_path, "price_overrides:\n  - {provider: aws, instance_type: p5.48xlarge}\n"))
    assert "discount_fraction" in msg


def test_override_matching_nothing(tmp_path: Path) -> None:
    msg = _err(
        _write(
            tmp_path,
            "price_overrides:\n  - {provider: aws, instance_type: p5.48xlarg, discount_fraction: 0.1}\n",
        )
    )
    assert "matches no offer" in msg and "p5.48xlarg" in msg


def test_gfo_missing_field(tmp_path: Path) -> None:
    data = json.loads((DATA / "gpu_instances.json").read_text())
    del data["gpu_instances"]["p5_48xlarge"]["on_demand_cost_per_hour"]
    msg = _err(_write(tmp_path, json.dumps(data), "gpu_instances.json"))
    assert "p5_48xlarge" in msg and "on_demand_cost_per_hour" in msg and "missing" in msg


def test_gfo_zero_price(tmp_path: Path) -> None:
    data = json.loads((DATA / "gpu_instances.json").read_text())
    data["gpu_instances"]["g5_xlarge"]["on_demand_cost_per_hour"] = 0
    msg = _err(_write(tmp_path, json.dumps(data), "gpu_instances.json"))
    assert "g5_xlarge" in msg and "on_demand_cost_per_hour" in msg and "= 0" in msg


def test_gfo_unknown_gpu_type(tmp_path: Path) -> None:
    data = json.loads((DATA / "gpu_instances.json").read_text())
    data["gpu_instances"]["g5_xlarge"]["gpu_type"] = "A10X"
    msg = _err(_write(tmp_path, json.dumps(data), "gpu_instances.json"))
    assert "g5_xlarge" in msg and "gpu_type" in msg and "A10X" in msg
