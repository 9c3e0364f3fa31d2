"""Migration analysis with the fake estimator: savings, performance change, risk, 'stay' verdicts."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.errors import InputError, UnknownNameError
from gpufleet.recommend.api import migrate
from gpufleet.recommend.types import CurrentDeployment, Migration, Workload

from .fakes import FakeEstimator, offer, small_table

EST = FakeEstimator()


def mig(**kw: Any) -> Migration:
    return migrate(offers=small_table(), estimator=EST, **kw)


def test_overprovisioned_p5_moves_to_cheaper_gpu_with_numbers() -> None:
    m = mig(model="fake-13b", precision="fp16", target_requests_per_s=2, ttft_p95_ms=1000,
            current={"instance_type": "p5.48xlarge", "gpu_count": 1, "region": "us-east-1"})  # fmt: skip
    assert m.current.instance_type == "p5.4xlarge"  # "1x P5" -> the 1-GPU p5
    assert m.recommended is not None
    assert m.new_cost_usd_per_month is not None and m.savings_usd_per_month is not None
    assert m.savings_usd_per_month == pytest.approx(m.current_cost_usd_per_month - m.new_cost_usd_per_month)
    assert m.savings_pct == pytest.approx(100 * m.savings_usd_per_month / m.current_cost_usd_per_month)
    assert m.savings_usd_per_month > 0
    assert m.performance is not None and m.performance.tpot_ratio is not None
    assert m.risk in ("low", "medium", "high") and m.risk_reasons
    assert "saves" in m.verdict


def test_gpu_count_above_instance_scales_count() -> None:
    m = mig(model="fake-7b", precision="fp16", current={"instance_type": "g5.xlarge", "gpu_count": 3})
    assert m.current.total_nodes == 3
    assert any("3 instance(s)" in n for n in m.recommendation.notes)


def test_no_target_means_like_for_like() -> None:
    m = mig(model="fake-7b", precision="fp16", current={"instance_type": "g6e.xlarge"})
    assert any("like-for-like" in n for n in m.recommendation.notes)
    if m.recommended is not None:
        assert m.recommended.output_tokens_per_s is not None and m.current.output_tokens_per_s is not None
        assert m.recommended.output_tokens_per_s.central >= m.current.output_tokens_per_s.central * (1 - 1e-9)


def test_stay_when_current_is_the_cheapest() -> None:
    only = [offer("aws", "g4dn.xlarge", "T4", 1, 0.526), offer("aws", "p5.4xlarge", "H100-SXM", 1, 6.88)]
    from gpufleet.catalog.offers import OfferTable

    table = OfferTable.from_offers(only)
    m = migrate(model="fake-1b", precision="fp16", target_output_tokens_per_s=50, offers=table, estimator=EST,
                current={"instance_type": "g4dn.xlarge"})  # fmt: skip
    assert m.recommended is None and m.savings_usd_per_month is None
    assert m.verdict.startswith("Stay on aws g4dn.xlarge")


def test_vendor_change_is_high_risk() -> None:
    m = mig(model="fake-70b", precision="fp16", concurrency=64, gpu_vendors=["AMD"], max_risk="high",
            current={"instance_type": "p5.48xlarge", "count": 2})  # fmt: skip
    if m.recommended is not None:
        assert m.recommended.gpu_vendor == "AMD"
        assert m.risk == "high" and any("CUDA -> ROCm" in r for r in m.risk_reasons)
        assert m.complexity == "high"


def test_cross_provider_reasons() -> None:
    m = mig(model="fake-13b", precision="fp16", target_requests_per_s=1, providers=["gcp"],
            current={"instance_type": "p5.4xlarge"})  # fmt: skip
    assert m.recommended is not None and m.recommended.provider == "gcp"
    assert any("cross-provider" in r for r in m.risk_reasons) and any("egress" in r for r in m.risk_reasons)
    assert m.complexity in ("medium", "high")


def test_training_migration_reports_time_to_train() -> None:
    m = mig(model="fake-7b", task="full_finetune", train_tokens=5e9, objective="fastest", max_nodes=2,
            current={"instance_type": "p4d.24xlarge", "count": 1})  # fmt: skip
    assert m.recommended is not None and m.performance is not None
    assert m.performance.time_to_train_ratio is not None and m.performance.time_to_train_ratio < 1


def test_no_current_is_an_error() -> None:
    with pytest.raises(InputError, match="no current deployment"):
        migrate(Workload(name="x", model="fake-7b", task="inference", precision="fp16"), offers=small_table(),
                estimator=EST)  # fmt: skip


def test_unknown_current_instance() -> None:
    with pytest.raises(UnknownNameError, match=r"p5\.4xlarg"):
        mig(model="fake-7b", current={"instance_type": "p5.4xlarg"})


def test_unknown_current_region() -> None:
    with pytest.raises(UnknownNameError, match="region"):
        mig(model="fake-7b", current={"instance_type": "p5.4xlarge", "region": "mars-1"})


def test_current_cannot_hold_model() -> None:
    with pytest.raises(InputError, match="cannot hold"):
        mig(model="fake-400b", current={"instance_type": "g4dn.xlarge"})


def test_current_deployment_dataclass_defaults() -> None:
    c = CurrentDeployment(provider="aws", instance_type="g5.xlarge")
    assert c.count == 1 and c.region is None and c.gpu_count is None
