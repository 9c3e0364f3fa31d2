"""The pydantic-free CLI workload path (gpufleet/recommend/workload_fields.py) against the pydantic spec: the
same defaults, bounds and choices, never more permissive, and the same workload where both accept."""

from __future__ import annotations

import itertools
import math
from typing import Any, Literal, get_args, get_origin

import pytest

from gpufleet.errors import ConfigFileError, GpufleetError
from gpufleet.recommend.workload import WorkloadSpec, workload_from_dict
from gpufleet.recommend.workload_fields import CHOICES, DEFAULTS, LISTS, NUMBERS, fast_workload

FIELDS = WorkloadSpec.model_fields


def _bound(field: str, name: str) -> Any:
    return next((getattr(m, name) for m in FIELDS[field].metadata if hasattr(m, name)), None)


def test_defaults_are_the_specs() -> None:
    spec = {n: f.get_default(call_default_factory=True) for n, f in FIELDS.items() if not f.is_required()}
    assert spec == DEFAULTS
    assert [n for n, f in FIELDS.items() if f.is_required()] == ["model"]


@pytest.mark.parametrize("field", sorted(NUMBERS))
def test_number_bounds_are_the_specs(field: str) -> None:
    kind, low, inclusive, high = NUMBERS[field]
    assert kind in get_args(FIELDS[field].annotation) or FIELDS[field].annotation is kind
    assert _bound(field, "le") == high
    assert _bound(field, "lt") is None
    if field == "budget_usd_per_month":  # > 0 is its validator's rule (a message of its own)
        assert (_bound(field, "gt"), _bound(field, "ge"), low, inclusive) == (None, None, 0, False)
    elif inclusive:
        assert (_bound(field, "ge"), _bound(field, "gt")) == (low, None)
    else:
        assert (_bound(field, "gt"), _bound(field, "ge")) == (low, None)


@pytest.mark.parametrize("field", sorted(CHOICES))
def test_choices_are_the_specs(field: str) -> None:
    annotation = FIELDS[field].annotation
    literal = next(a for a in (*get_args(annotation), annotation) if get_origin(a) is Literal)
    assert CHOICES[field] == get_args(literal)


@pytest.mark.parametrize("field", sorted(LISTS))
def test_list_limits_are_the_specs(field: str) -> None:
    assert _bound(field, "max_length") == LISTS[field]


def _spec(data: dict[str, Any]) -> Any:
    try:
        return workload_from_dict(data, source="Command-line options", entry="workload", labels={})
    except (ConfigFileError, GpufleetError) as exc:
        return exc


VALID: list[dict[str, Any]] = [
    {"model": "llama-3.1-8b"},
    {"model": "llama-3.1-8b", "precision": "BF16", "target_requests_per_s": 5.0, "ttft_p95_ms": 500.0,
     "tpot_p95_ms": 50.0},
    {"model": "llama-3.1-70b", "target_requests_per_s": 2.0, "geos": ["eu"], "gpus": ["H100,A100"],
     "provider_classes": ["hyperscaler,gpu_cloud"]},
    {"model": "llama-3.1-8b", "task": "lora", "train_tokens": 1e9, "deadline_h": 24.0, "pricing": "spot",
     "gpu_vendors": ["nvidia"], "gpus_per_node": ["8,4", "2"], "budget_usd_per_month": 5e4},
    {"model": "llama-3.1-8b", "pricing": "1y", "max_nodes": 64, "near_tie_pct": 0.0, "tier": "dev",
     "confidence": "p50", "max_risk": "high", "allow_fallback": True, "exclude_providers": ["AWS"],
     "regions": ["us-*"], "providers": ["GCP, azure"], "min_gpu_memory_gib": 40.0,
     "max_price_per_gpu_usd_per_hour": 10.0, "hours_per_month": 200.0, "input_len_tokens": 2_000_000,
     "output_len_tokens": 1, "concurrency": 4},
    {"model": "qwen", "target_output_tokens_per_s": 1e11, "near_tie_pct": 50.0, "objective": "fastest"},
    {"model": "llama-3.1-8b", "schedule": "24/7", "max_nodes": 1, "geos": ["europe"]},
]  # fmt: skip

INVALID: list[dict[str, Any]] = [
    {"task": "inference"},  # no model
    {"model": "  "},
    {"model": "x" * 4097},
    {"model": "m", "precision": "bf17"},
    {"model": "m", "task": "finetune"},
    {"model": "m", "input_len_tokens": 0},
    {"model": "m", "input_len_tokens": 2_000_001},
    {"model": "m", "max_nodes": 0},
    {"model": "m", "max_nodes": 65},
    {"model": "m", "near_tie_pct": 50.5},
    {"model": "m", "near_tie_pct": -1.0},
    {"model": "m", "budget_usd_per_month": 0.0},
    {"model": "m", "budget_usd_per_month": -5.0},
    {"model": "m", "budget_usd_per_month": 2e12},
    {"model": "m", "target_requests_per_s": 0.0},
    {"model": "m", "target_requests_per_s": math.nan},
    {"model": "m", "target_requests_per_s": 2.0, "concurrency": 3},
    {"model": "m", "ttft_p95_ms": 4e12},
    {"model": "m", "hours_per_month": 731.0},
    {"model": "m", "min_gpu_memory_gib": 5000.0},
    {"model": "m", "train_tokens": 1e9},  # training field on inference
    {"model": "m", "task": "lora"},  # no tokens
    {"model": "m", "task": "lora", "train_tokens": 1e9, "ttft_p95_ms": 100.0},
    {"model": "m", "schedule": "24/7", "hours_per_month": 100.0},
    {"model": "m", "geos": ["atlantis"]},
    {"model": "m", "provider_classes": ["cloudy"]},
    {"model": "m", "gpu_vendors": ["acme"]},
    {"model": "m", "gpus": ["H999"]},
    {"model": "m", "gpus": [" "]},
    {"model": "m", "providers": [","]},
    {"model": "m", "gpus_per_node": ["0"]},
    {"model": "m", "gpus_per_node": ["eight"]},
    {"model": "m", "gpus_per_node": ["-1"]},
    {"model": "m", "providers": [f"p{i}" for i in range(1001)]},
    {"model": "m", "pricing": "yearly"},
    {"model": "m", "confidence": "p99"},
    {"model": "m", "input_len_tokens": True},
    {"model": "m", "input_len_tokens": 5.0},
    {"model": "m", "current": {"instance_type": "p5.48xlarge"}},  # the spec validates a current deployment
]


@pytest.mark.parametrize("data", VALID, ids=range(len(VALID)))
def test_valid_cli_values_build_the_specs_workload_without_it(data: dict[str, Any]) -> None:
    fast = fast_workload(data)
    assert fast is not None
    assert fast == _spec(data)


@pytest.mark.parametrize("data", INVALID, ids=range(len(INVALID)))
def test_anything_in_doubt_is_left_to_the_spec(data: dict[str, Any]) -> None:
    assert fast_workload(data) is None


def test_never_more_permissive_than_the_spec() -> None:
    """Edge values of every number field, alone and in pairs: where the fast path answers, the spec gives
    the same workload."""
    edges: list[tuple[str, Any]] = []
    for field, (kind, low, _, high) in NUMBERS.items():
        for v in (low, high, low + 1, high + 1, (low + high) / 2, -1, 0.5):
            edges.append((field, kind(v) if kind is int and float(v).is_integer() else v))
    answered = 0
    for (f1, v1), (f2, v2) in itertools.combinations(edges[::3], 2):
        data = {"model": "llama-3.1-8b", f1: v1, f2: v2}
        fast = fast_workload(data)
        if fast is not None:
            answered += 1
            assert fast == _spec(data), data
    for field, value in edges:
        data = {"model": "llama-3.1-8b", field: value}
        fast = fast_workload(data)
        if fast is not None:
            answered += 1
            assert fast == _spec(data), data
        else:
            spec = _spec(data)
            assert isinstance(spec, Exception), data
    assert answered > 50
