"""Fourth review (2026-11-29): a move onto an arm64 host says so.

The seed's production_serving_g4dn scenario (8B chat on 4 x g4dn.12xlarge, x86_64) moves to Lambda's
gpu_1x_gh200: a Grace Hopper superchip, whose host CPU is NVIDIA Grace (72 Arm Neoverse V2 cores). Before,
the migration's complexity read "different provider, different GPU" only: nothing said the serving image
and its wheels must be rebuilt for aarch64.
"""

from __future__ import annotations

import pytest

from gpufleet.recommend.host_arch import arch_change, host_arch


def test_host_arch_from_the_catalog_or_the_superchip() -> None:
    assert host_arch("aws", "g5g.xlarge", "T4G") == "arm64"  # Graviton2 (catalog arch column)
    assert host_arch("aws", "g4dn.12xlarge", "T4") == "x86_64"
    assert host_arch("lambda", "gpu_1x_gh200", "GH200") == "arm64"  # no catalog arch: Grace superchip
    assert host_arch("lambda", "gpu_1x_a100", "A100-SXM-40GB") is None


@pytest.mark.parametrize(
    ("cur", "new", "said"),
    [
        (("aws", "g4dn.12xlarge", "T4"), ("lambda", "gpu_1x_gh200", "GH200"), True),
        (("aws", "g4dn.12xlarge", "T4"), ("aws", "g5g.2xlarge", "T4G"), True),
        (("aws", "g5g.2xlarge", "T4G"), ("aws", "g4dn.xlarge", "T4"), True),
        (("aws", "g4dn.12xlarge", "T4"), ("lambda", "gpu_1x_a100", "A100-SXM-40GB"), False),
    ],
)
def test_arch_change(cur: tuple[str, str, str], new: tuple[str, str, str], said: bool) -> None:
    assert bool(arch_change(cur, new)) is said


def test_the_seed_scenario_names_the_arm64_port() -> None:
    import gpufleet

    mig = gpufleet.run_scenario("production_serving_g4dn").migration
    assert mig is not None and mig.recommended is not None
    if host_arch(mig.recommended.provider, mig.recommended.instance_type, mig.recommended.gpu) != "arm64":
        pytest.skip("the scenario no longer moves to an arm64 host")
    assert any("x86_64 -> arm64" in c for c in mig.complexity_reasons)
    assert mig.complexity in ("medium", "high")
