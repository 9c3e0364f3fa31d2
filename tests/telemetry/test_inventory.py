"""Inventory files, model-name mapping and the estimator check on options."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.catalog.pricing import allow_unverified_commitments
from gpufleet.errors import ConfigFileError
from gpufleet.telemetry.analyze import gpu_stats, resolve_window
from gpufleet.telemetry.findings import find
from gpufleet.telemetry.inventory import load_inventory, resolve_cost, spec_for_model
from gpufleet.telemetry.schema import ProblemCounter
from gpufleet.telemetry.store import TelemetryStore
from gpufleet.telemetry.synth import synthetic_fleet


@pytest.mark.parametrize(
    ("name", "spec"),
    [("NVIDIA H100 80GB HBM3", "H100-SXM"), ("NVIDIA A100-SXM4-80GB", "A100-SXM-80GB"),
     ("NVIDIA A100 80GB PCIe", "A100-PCIe-80GB"), ("NVIDIA A100-PCIE-40GB", "A100-PCIe-40GB"),
     ("Tesla T4", "T4"), ("NVIDIA L4", "L4"), ("NVIDIA A10G", "A10G"), ("NVIDIA L40S", "L40S"),
     ("NVIDIA H200", "H200-SXM"), ("NVIDIA H100 PCIe", "H100-PCIe"), ("Tesla V100-SXM2-16GB",
     "V100-SXM2-16GB")],
)  # fmt: skip
def test_model_names_map_to_specs(name: str, spec: str) -> None:
    s = spec_for_model(name)
    assert s is not None and s.id == spec


def test_inventory_yaml_csv_and_errors(tmp_path: Path) -> None:
    y = tmp_path / "inv.yaml"
    y.write_text(
        "hosts:\n  - host: 'gpu-*'\n    provider: aws\n    instance_type: g5.xlarge\n    region: us-east-1\n"
        "    price_kind: commit_3y\n    team: vision\n",
        encoding="utf-8",
    )
    inv = load_inventory(y)
    with pytest.raises(ConfigFileError, match="no verified rate"):  # the shipped 3y rate is a ceiling
        resolve_cost(host="gpu-7", gpu_uuid=None, labels={}, model=None, inventory=inv)
    with allow_unverified_commitments():
        c = resolve_cost(host="gpu-7", gpu_uuid=None, labels={}, model=None, inventory=inv)
    assert c.price_basis == "inventory" and c.team == "vision" and c.gpu == "A10G"
    assert c.price_usd_per_gpu_hour is not None and c.on_demand_usd_per_gpu_hour is not None
    assert c.price_usd_per_gpu_hour < c.on_demand_usd_per_gpu_hour  # the commitment price
    cs = tmp_path / "inv.csv"
    cs.write_text("gpu_uuid,provider,instance_type\nGPU-1,aws,p5.48xlarge\n", encoding="utf-8")
    assert (
        resolve_cost(
            host="x", gpu_uuid="GPU-1", labels={}, model=None, inventory=load_inventory(cs)
        ).gpus_per_instance
        == 8
    )
    for body, msg in [
        ("hosts:\n  - provider: aws\n    instance_type: g5.xlarge\n", "give 'host'"),
        (
            "hosts:\n  - host: a\n    provider: aws\n    instance_type: g5.xlarge\n    price_kind: cheap\n",
            "price_kind",
        ),
        ("hosts:\n  - host: a\n    provider: aws\n    instance_type: g5.xlarge\n    colour: red\n", "colour"),
        (
            "hosts:\n  - host: a\n    provider: aws\n    instance_type: g5.xlarge\n    model: "
            "no-such-model\n",
            "model",
        ),
        ("machines: []\n", "list under 'hosts:'"),
    ]:
        y.write_text(body, encoding="utf-8")
        with pytest.raises(ConfigFileError, match=msg):
            load_inventory(y)
    y.write_text(
        "hosts:\n  - host: a\n    provider: aws\n    instance_type: g5.xlarge\n    price_kind: reserved_1y\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigFileError, match="no reserved_1y price"):
        resolve_cost(host="a", gpu_uuid=None, labels={}, model=None, inventory=load_inventory(y))
    with pytest.raises(ConfigFileError, match="no catalog offer"):
        resolve_cost(
            host="gpu-1", gpu_uuid=None, labels={"provider": "aws", "instance_type": "zz.huge"}, model=None
        )


def test_labelled_model_must_fit_a_smaller_gpu(tmp_path: Path) -> None:
    b, truth = synthetic_fleet(seed=5, counts={"over": 1}, days=2.0)
    s = TelemetryStore(tmp_path / "s")
    s.append(b, ProblemCounter(), sources=["t"], rows_read=len(b), now_us=1_900_000_000_000_000)
    w = resolve_window(s, 14, None, 0.95)
    host = truth[0].host
    inv_path = tmp_path / "inv.yaml"

    def options(model: str) -> list[str]:
        inv_path.write_text(
            f"hosts:\n  - host: {host}\n    provider: aws\n    instance_type: p5.48xlarge\n"
            f"    region: us-east-1\n    model: {model}\n",
            encoding="utf-8",
        )
        (g,) = find(gpu_stats(s, w), w, inventory=load_inventory(inv_path)).gpus
        return [o.target for o in g.options if o.kind == "smaller_gpu"]

    small = options("llama-3.1-8b")
    assert small and "RTX-PRO-6000" in small[0]
    big = options("llama-3.1-70b")  # 70B in bf16 fits no single GPU cheaper than the H100: no smaller GPU
    assert big == []


@given(st.floats(0.0, 1.0), st.floats(0.0, 200.0))
def test_smallest_mig_profile_fits_and_is_smallest(compute: float, mem_gib: float) -> None:
    from gpufleet.telemetry.mig import mig_profiles, smallest_fitting

    for gpu, profiles in mig_profiles().items():
        p = smallest_fitting(gpu, compute_fraction=compute, memory_gib=mem_gib)
        fitting = [
            q
            for q in profiles
            if q.sm_fraction >= compute
            and q.memory_gib >= mem_gib
            and q.compute_slices < q.compute_slices_total
        ]
        if p is None:
            assert not fitting
        else:
            assert p.sm_fraction >= compute and p.memory_gib >= mem_gib
            assert p.compute_slices == min(q.compute_slices for q in fitting)


@given(st.floats(0.0, 2.0), st.floats(0.0, 2.0))
def test_performance_risk_is_monotonic_and_bounded(a: float, b: float) -> None:
    from gpufleet.telemetry.findings import _risk

    lo, hi = sorted((a, b))
    assert 0 <= _risk(lo) <= _risk(hi) <= 4
