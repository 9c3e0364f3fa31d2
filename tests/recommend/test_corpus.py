"""Regression corpus: realistic workloads on the shipped catalog, asserting on the top 5 of each.

Every workload checks the engine's deployability rules on what it ranks first (issue 7 "done when"): host
RAM and vCPUs meet the host rules; no precision fallback unless allowed; several nodes only on offers whose
provider and instance form clusters, with their documented fabric; no placeholder-region rows; production tier
excludes marketplace hosts and keeps >= 2 replicas; Pareto fronts are non-dominated by brute force on the
axes shown; training $/run x runs/month = $/month within 1 %; risk within max_risk.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from gpufleet.catalog.capabilities import fabric_for, offer_class
from gpufleet.catalog.offers import OfferTable, load_offers
from gpufleet.recommend.api import recommend
from gpufleet.recommend.candidates import NO_REGION
from gpufleet.recommend.deploy import DEFAULT_HOST_RULES
from gpufleet.recommend.risk import within
from gpufleet.recommend.types import Candidate, Recommendation

TOP = 5

CORPUS: dict[str, dict[str, Any]] = {
    # --- small serving
    "readme_8b_slo": dict(model="llama-3.1-8b", precision="bf16", target_requests_per_s=5, ttft_p95_ms=500,
                          tpot_p95_ms=50),
    "8b_dev_concurrency": dict(model="llama-3.1-8b", precision="bf16", concurrency=32, tier="dev"),
    "8b_fp8_high_rps": dict(model="llama-3.1-8b", precision="fp8", target_requests_per_s=50, ttft_p95_ms=800,
                            tpot_p95_ms=40),
    "1b_chat": dict(model="llama-3.2-1b", precision="bf16", concurrency=8, ttft_p95_ms=300, tpot_p95_ms=30),
    "qwen7b_int4_dev": dict(model="qwen2.5-7b", precision="int4", concurrency=16, tier="dev"),
    "mistral7b_p50": dict(model="mistral-7b", precision="bf16", target_requests_per_s=2, tpot_p95_ms=60,
                          confidence="p50"),
    # --- large serving
    "70b_prod": dict(model="llama-3.1-70b", precision="bf16", target_requests_per_s=2, ttft_p95_ms=1500,
                     tpot_p95_ms=80),
    "70b_fp8_prod": dict(model="llama-3.1-70b", precision="fp8", target_requests_per_s=5, ttft_p95_ms=1500,
                         tpot_p95_ms=80),
    "qwen72b_dev": dict(model="qwen2.5-72b", precision="bf16", concurrency=16, tier="dev"),
    "405b_fp8_prod": dict(model="llama-3.1-405b", precision="fp8", concurrency=16, ttft_p95_ms=3000,
                          tpot_p95_ms=120),
    # --- MoE serving
    "mixtral_8x7b": dict(model="mixtral-8x7b", precision="bf16", target_requests_per_s=3, tpot_p95_ms=60),
    "mixtral_8x22b_fp8": dict(model="mixtral-8x22b", precision="fp8", concurrency=32, tier="dev"),
    "deepseek_v3_fp8": dict(model="deepseek-v3", precision="fp8", concurrency=32, ttft_p95_ms=5000,
                            tpot_p95_ms=150),
    # --- filters, tiers, risk, fallback
    "8b_aws_gcp_prod": dict(model="llama-3.1-8b", precision="bf16", target_requests_per_s=5, ttft_p95_ms=500,
                            tpot_p95_ms=50, providers=["aws", "gcp"]),
    "8b_us_regions": dict(model="llama-3.1-8b", precision="bf16", concurrency=16, regions=["us-*"]),
    "8b_amd_only": dict(model="llama-3.1-8b", precision="bf16", concurrency=16, gpu_vendors=["AMD"]),
    "8b_max_risk_low": dict(model="llama-3.1-8b", precision="bf16", concurrency=16, max_risk="low"),
    "8b_fallback_allowed": dict(model="llama-3.1-8b", precision="bf16", concurrency=4, providers=["aws"],
                                allow_fallback=True, tier="dev"),
    "8b_budget": dict(model="llama-3.1-8b", precision="bf16", concurrency=8, budget_usd_per_month=2000),
    "8b_office_hours": dict(model="llama-3.1-8b", precision="bf16", concurrency=8, hours_per_day=10,
                            days_per_month=22),
    "8b_prod_marketplace_allowed": dict(model="llama-3.1-8b", precision="bf16", target_requests_per_s=2,
                                        tpot_p95_ms=50, allow_marketplace=True),
    # --- batch inference
    "batch_8b_spot": dict(model="llama-3.1-8b", precision="bf16", target_output_tokens_per_s=20000,
                          pricing="spot", tier="batch"),
    "batch_70b": dict(model="llama-3.1-70b", precision="fp8", target_output_tokens_per_s=5000, tier="batch",
                      input_len_tokens=2048, output_len_tokens=512),
    # --- training
    "qlora_8b": dict(model="llama-3.1-8b", task="qlora", precision="bf16", train_tokens=2e7,
                     seq_len_tokens=4096, global_batch_sequences=16, max_nodes=1),
    "lora_8b": dict(model="llama-3.1-8b", task="lora", precision="bf16", train_tokens=1e8,
                    global_batch_sequences=64, max_nodes=2),
    "lora_70b": dict(model="llama-3.1-70b", task="lora", precision="bf16", train_tokens=5e7,
                     global_batch_sequences=64, max_nodes=2),
    "full_ft_8b": dict(model="llama-3.1-8b", task="full_finetune", precision="bf16", train_tokens=2e8,
                       global_batch_sequences=128, max_nodes=2),
    "full_ft_8b_runs": dict(model="llama-3.1-8b", task="full_finetune", precision="bf16", train_tokens=2e8,
                            global_batch_sequences=128, max_nodes=2, runs_per_month=4),
    "full_ft_8b_spot": dict(model="llama-3.1-8b", task="full_finetune", precision="bf16", train_tokens=2e8,
                            global_batch_sequences=128, max_nodes=2, pricing="spot"),
    "pretrain_1b": dict(model="llama-3.2-1b", task="pretrain", precision="bf16", train_tokens=2e10,
                        global_batch_sequences=256, max_nodes=4),
    "pretrain_8b_deadline": dict(model="llama-3.1-8b", task="pretrain", precision="bf16", train_tokens=1e11,
                                 global_batch_sequences=512, max_nodes=4, deadline_h=720,
                                 providers=["aws", "gcp", "azure", "lambda", "nebius"]),
    "pretrain_8b_aws": dict(model="llama-3.1-8b", task="pretrain", precision="bf16", train_tokens=1e11,
                            global_batch_sequences=512, max_nodes=4, providers=["aws"]),
}  # fmt: skip

#: GPUs of 24 GB class: "QLoRA on one 24 GB GPU"
GPU_24GB = ("RTX-4090", "A10G", "L4", "RTX-3090", "A10", "RTX-A5000")


def _qlora_table() -> OfferTable:
    t = load_offers()
    keep = np.isin(t.column("gpu").astype(str), GPU_24GB) & (t.column("gpu_count") == 1)
    return t.take(np.flatnonzero(keep))


CORPUS_TABLES: dict[str, Callable[[], OfferTable]] = {"qlora_8b": _qlora_table}


@pytest.fixture(scope="module", params=sorted(CORPUS))
def case(request: pytest.FixtureRequest) -> tuple[str, Recommendation]:
    name = str(request.param)
    fields = dict(CORPUS[name])
    offers = CORPUS_TABLES[name]() if name in CORPUS_TABLES else None
    return name, recommend(offers=offers, limit=TOP, **fields)


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 30


def test_top5_deployable(case: tuple[str, Recommendation]) -> None:
    name, r = case
    assert r.status == "ok", f"{name}: {r.status} {r.message}"
    assert r.ranked
    w = r.workload
    rules = DEFAULT_HOST_RULES
    for c in r.ranked[:TOP]:
        where = f"{name}: {c.provider} {c.instance_type} ({c.region})"
        # no placeholder-region rows
        assert c.region.strip().lower() not in NO_REGION, where
        # host RAM / vCPUs meet the rules (unknown hosts only outside production)
        if c.vcpus is not None:
            assert c.vcpus >= rules.vcpus_needed(c.gpus_per_node, training=w.is_training) - 1e-9, where
        if c.host_memory_gib is not None:
            assert c.host_memory_gib >= rules.ram_base_gib, where
        if w.tier == "production":
            assert c.vcpus is not None and c.host_memory_gib is not None, where
            assert c.provider_class != "marketplace" or w.allow_marketplace, where
            assert c.replicas >= 2, where
            assert c.price_age_days is not None and c.price_age_days <= 365, where
        # no precision fallback unless allowed
        assert w.allow_fallback or not c.precision_fallback, where
        # several nodes only on offers whose provider and instance form clusters, with their fabric
        fab = fabric_for(c.provider, c.instance_type, c.gpu)
        assert c.fabric == fab.label and c.provider_class == offer_class(c.provider, c.instance_type), where
        if c.nodes_per_replica > 1:
            assert fab.multi_node and c.multi_node_capable, where
        # every candidate carries its provenance fields
        assert c.price_date or c.price_age_days is None, where
        # risk within the filter
        assert within(c.risk, w.max_risk), where
        # training: one cost semantics
        if w.is_training:
            assert c.cost_usd_per_run is not None and c.runs_per_month is not None, where
            month = c.cost_usd_per_run * c.runs_per_month
            assert math.isclose(month, c.cost_usd_per_month, rel_tol=0.01), where
            if w.budget_usd_per_month is not None:
                assert c.cost_usd_per_month <= w.budget_usd_per_month, where
        elif w.budget_usd_per_month is not None:
            assert c.cost_usd_per_month <= w.budget_usd_per_month, where
    # inference: a replica is not split over nodes when a single node holds it
    if not w.is_training and any(c.nodes_per_replica == 1 for c in r.ranked):
        assert all(c.nodes_per_replica == 1 for c in r.ranked), name


def _cost(c: Candidate, training: bool) -> float:
    return c.cost_usd_per_run if training and c.cost_usd_per_run is not None else c.cost_usd_per_month


def _tput(c: Candidate) -> float:
    iv = c.output_tokens_per_s if c.output_tokens_per_s is not None else c.tokens_per_s
    assert iv is not None
    return iv.central


def _dominates(b: Candidate, a: Candidate, benefit: Callable[[Candidate], float], training: bool) -> bool:
    cb, ca = _cost(b, training), _cost(a, training)
    return cb <= ca and benefit(b) >= benefit(a) and (cb < ca or benefit(b) > benefit(a))


def test_pareto_fronts_non_dominated(case: tuple[str, Recommendation]) -> None:
    name, r = case
    training = r.workload.is_training
    pool = (*r.ranked, *r.pareto, *r.pareto_latency)
    for front, benefit in ((r.pareto, _tput), (r.pareto_latency, lambda c: c.speed)):
        assert front, name
        for a in front:
            assert not any(_dominates(b, a, benefit, training) for b in pool), (name, a.instance_type)
        costs = [_cost(c, training) for c in front]
        assert costs == sorted(costs), name
