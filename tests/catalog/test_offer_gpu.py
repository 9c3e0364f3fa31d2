"""Per-provider GPU name exceptions (gpu_aliases.csv notes) in resolve_offer_gpu."""

from __future__ import annotations

import pytest

from gpufleet.catalog.offer_gpu import RULES, resolve_offer_gpu, rule_for
from gpufleet.catalog.specs import load_specs
from gpufleet.errors import UnknownNameError


@pytest.mark.parametrize(
    ("name", "provider", "instance", "mib", "expected"),
    [
        ("H100", "runpod", "1x_H100_SECURE", None, "H100-PCIe"),
        ("A100-80GB", "runpod", "1x_A100-80GB_SECURE", None, "A100-PCIe-80GB"),
        ("A100-80GB-SXM", "runpod", "1x_A100-80GB-SXM_SECURE", None, "A100-SXM-80GB"),
        ("H100", "cudo", "x", None, "H100-NVL"),
        ("A100", "cudo", "x", 81920, "A100-PCIe-80GB"),
        ("H100", "azure", "Standard_NC40ads_H100_v5", None, "H100-NVL"),
        ("H100", "azure", "Standard_NC80adis_H100_v5", None, "H100-NVL"),
        ("H100", "azure", "Standard_ND96isr_H100_v5", None, "H100-SXM"),
        ("A100-80GB", "azure", "Standard_NC24ads_A100_v4", None, "A100-PCIe-80GB"),
        ("A100-80GB", "azure", "Standard_ND96amsr_A100_v4", None, "A100-SXM-80GB"),
        ("V100", "azure", "Standard_NC6s_v3", None, "V100-PCIe-16GB"),
        ("V100", "azure", "Standard_NC24rs_v3", None, "V100-PCIe-16GB"),
        ("V100", "aws", "p3.2xlarge", 16384, "V100-SXM2-16GB"),
        ("H100", "lambda", "gpu_1x_h100_pcie", 81920, "H100-PCIe"),
        ("H100", "lambda", "gpu_8x_h100_sxm5", 81920, "H100-SXM"),
        ("H100", "vast", "1x-H100_NVL-32-65536", 95830, "H100-NVL"),
        ("H100", "vast", "1x-H100_SXM-32-65536", 81559, "H100-SXM"),
        ("A100", "vast", "1x-A100_PCIE-32-65536", 81920, "A100-PCIe-80GB"),
        ("A100", "vast", "1x-A100_SXM4-32-65536", 40960, "A100-SXM-40GB"),
        ("A100", "vast", "2x-A100_SXM4-32-65536", 81920, "A100-SXM-80GB"),
        ("A100", "seeweb", "ECS1GPU5", 81920, "A100-SXM-80GB"),
        ("A100-80GB", "fluidstack", "A100_PCIE_80GB::1", 81920, "A100-PCIe-80GB"),
        ("A100", "aws", "p4d.24xlarge", 40960, "A100-SXM-40GB"),
        ("A100", "gcp", "a2-highgpu-1g", None, "A100-SXM-40GB"),
        ("RTX3060", "vast", "2x-RTX_3060_Ti-32-65536", 8192, "RTX-3060-Ti"),
        ("RTX3060", "vast", "1x-RTX_3060-32-65536", 12288, "RTX-3060"),
        ("GH200", "lambda", "gpu_1x_gh200", 98304, "GH200"),
        ("GH200", "x", "y", 147456, "GH200-144GB"),
        ("H100-80G-PCIe", "hyperstack", "n3-H100x1", 81920, "H100-PCIe"),
        ("tpu-v5p-8", "gcp", "tpu-v5p-8", None, "TPU-v5p"),
    ],
)
def test_resolve_offer_gpu(name: str, provider: str, instance: str, mib: float | None, expected: str) -> None:
    assert resolve_offer_gpu(name, provider, instance, mib) == expected


def test_every_rule_targets_a_spec_and_cites_a_source() -> None:
    specs = load_specs()
    for rule in RULES:
        assert rule.spec_id in specs
        assert rule.cites


def test_rule_for_reports_the_deciding_rule() -> None:
    rule = rule_for("H100", "RunPod", "1x_H100_SECURE")
    assert rule is not None and "RunPod" in rule.cites
    assert rule_for("H100", "aws", "p5.48xlarge") is None


def test_unknown_name_lists_close_matches() -> None:
    with pytest.raises(UnknownNameError) as err:
        resolve_offer_gpu("H10O", "aws", "p5.48xlarge", None)
    msg = str(err.value)
    assert "H10O" in msg and "Did you mean" in msg and "aws" in msg


def test_shipped_fluidstack_a100_pcie_rows_are_pcie() -> None:
    """Issue 22: fluidstack A100_PCIE_80GB::N rows were labelled A100-SXM-80GB (NVLink/SXM figures)."""
    from gpufleet.catalog.offers import load_offers

    rows = [o for o in load_offers().records() if o.provider == "fluidstack" and "A100" in o.instance_type]
    assert rows and {o.gpu for o in rows} == {"A100-PCIe-80GB"}
