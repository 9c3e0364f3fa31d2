"""The workload fields without pydantic: defaults, the bounds of the fields the CLI sets, the cross-field
rules and the conversion to a :class:`~gpufleet.recommend.types.Workload`.

:class:`gpufleet.recommend.workload.WorkloadSpec` (pydantic) validates workload files and mappings and reports
their errors. The CLI builds a workload from typed option values; :func:`fast_workload` checks them against
the same bounds here and builds the workload without importing pydantic (~0.07 s of a `gpufleet recommend`,
README "Speed"). It accepts a subset of what the spec accepts: anything it does not check, or any value out of
bounds, returns None and the caller validates with the spec, so every error message still comes from
pydantic. tests/recommend/test_workload_fields.py pins the tables here to the spec's fields.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from gpufleet.recommend.types import NEAR_TIE_FRACTION, CurrentDeployment, Workload
from gpufleet.units import HOURS_PER_MONTH, MS_PER_S, SECONDS_PER_HOUR
from gpufleet.validation import (
    MAX_CONCURRENCY,
    MAX_GPU_MEMORY_GIB,
    MAX_HOURS,
    MAX_PRICE_USD_PER_HOUR,
    MAX_REQUESTS_PER_S,
    MAX_TRAIN_TOKENS,
    MAX_USD,
    MAXIMA,
)

#: every field of the workload format with its default (None = optional; "model" has none: it is required)
DEFAULTS: dict[str, Any] = {
    "name": "workload",
    "description": "",
    "task": "inference",
    "precision": "bf16",
    "input_len_tokens": 512,
    "output_len_tokens": 256,
    "concurrency": None,
    "target_output_tokens_per_s": None,
    "target_requests_per_s": None,
    "target_requests_per_hour": None,
    "ttft_p95_ms": None,
    "tpot_p95_ms": None,
    "train_tokens": None,
    "dataset_tokens": None,
    "epochs": None,
    "deadline_h": None,
    "global_batch_sequences": 256,
    "seq_len_tokens": 4096,
    "schedule": None,
    "hours_per_month": None,
    "hours_per_day": None,
    "days_per_month": None,
    "pricing": "on_demand",
    "commitments_file": None,
    "providers": [],
    "regions": [],
    "gpu_vendors": [],
    "geos": [],
    "exclude_providers": [],
    "provider_classes": [],
    "gpus": [],
    "min_gpu_memory_gib": None,
    "gpus_per_node": [],
    "max_price_per_gpu_usd_per_hour": None,
    "max_nodes": 8,
    "runs_per_month": None,
    "tier": None,
    "confidence": "p90",
    "max_risk": None,
    "allow_fallback": False,
    "allow_marketplace": False,
    "allow_stale_prices": False,
    "allow_embargoed_countries": False,
    "budget_usd_per_month": None,
    "objective": "cheapest",
    "near_tie_pct": NEAR_TIE_FRACTION * 100,
    "current": None,
}

#: number fields the CLI sets: field -> (int or float, lower bound, lower bound inclusive, upper bound); the
#: upper bound is inclusive (pydantic ``le``). The budget's lower bound is its validator's (> 0).
NUMBERS: dict[str, tuple[type, float, bool, float]] = {
    "input_len_tokens": (int, 0, False, 2_000_000),
    "output_len_tokens": (int, 0, False, 2_000_000),
    "concurrency": (int, 0, False, MAX_CONCURRENCY),
    "target_output_tokens_per_s": (float, 0, False, MAX_REQUESTS_PER_S * 1e4),
    "target_requests_per_s": (float, 0, False, MAX_REQUESTS_PER_S),
    "ttft_p95_ms": (float, 0, False, MAX_HOURS * SECONDS_PER_HOUR * MS_PER_S),
    "tpot_p95_ms": (float, 0, False, MAX_HOURS * SECONDS_PER_HOUR * MS_PER_S),
    "train_tokens": (float, 0, False, MAX_TRAIN_TOKENS),
    "deadline_h": (float, 0, False, MAX_HOURS),
    "hours_per_month": (float, 0, False, HOURS_PER_MONTH),
    "min_gpu_memory_gib": (float, 0, False, MAX_GPU_MEMORY_GIB),
    "max_price_per_gpu_usd_per_hour": (float, 0, False, MAX_PRICE_USD_PER_HOUR),
    "max_nodes": (int, 1, True, 64),
    "budget_usd_per_month": (float, 0, False, MAX_USD),
    "near_tie_pct": (float, 0, True, 50),
}

#: text fields with a fixed set of values
CHOICES: dict[str, tuple[str, ...]] = {
    "task": ("inference", "pretrain", "full_finetune", "lora", "qlora"),
    "schedule": ("24/7",),
    "pricing": ("on_demand", "spot", "1y", "3y"),
    "tier": ("dev", "batch", "production"),
    "confidence": ("p50", "p90"),
    "max_risk": ("low", "medium", "high"),
    "objective": ("cheapest", "fastest", "throughput_per_dollar"),
}

#: text-list fields the CLI sets -> most items (None: no limit)
LISTS: dict[str, int | None] = {
    "providers": 1000,
    "regions": 1000,
    "gpu_vendors": 100,
    "geos": 1000,
    "exclude_providers": 1000,
    "provider_classes": 100,
    "gpus": None,
}

#: most entries of ``gpus_per_node``
MAX_GPUS_PER_NODE_ITEMS = 1000
#: longest model name (characters)
MAX_MODEL_CHARS = 4096

_DIGITS = re.compile(r"[0-9]+")


class _Fields:
    """The validated fields of one workload as attributes, like a WorkloadSpec (what :func:`fast_workload`
    checked)."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.__dict__.update(values)


def consistency_error(w: Any) -> str | None:
    """The first rule across fields that ``w`` breaks (as the spec reports it), or None."""
    targets = [
        w.concurrency,
        w.target_output_tokens_per_s,
        w.target_requests_per_s,
        w.target_requests_per_hour,
    ]
    if sum(t is not None for t in targets) > 1:
        return (
            "give at most one of concurrency, target_output_tokens_per_s, target_requests_per_s, "
            "target_requests_per_hour"
        )
    sched = [
        w.schedule is not None,
        w.hours_per_month is not None,
        w.hours_per_day is not None or w.days_per_month is not None,
    ]
    if sum(sched) > 1:
        return "give one schedule: schedule: 24/7, hours_per_month, or hours_per_day with days_per_month"
    if (w.hours_per_day is None) != (w.days_per_month is None):
        return "hours_per_day and days_per_month go together (e.g. 8 and 22)"
    if w.task != "inference" and w.train_tokens is None and w.dataset_tokens is None:
        return f"a {w.task} workload needs train_tokens (or dataset_tokens with epochs)"
    if w.runs_per_month is not None and w.task == "inference":
        return "runs_per_month applies to training tasks only (inference runs on the schedule)"
    if w.train_tokens is not None and w.dataset_tokens is not None:
        return "give train_tokens or dataset_tokens (x epochs), not both"
    if w.epochs is not None and w.dataset_tokens is None:
        return "epochs multiply dataset_tokens: give dataset_tokens with epochs, or train_tokens"
    training = [
        n for n in ("train_tokens", "dataset_tokens", "epochs", "deadline_h") if getattr(w, n) is not None
    ]
    if w.task == "inference" and training:
        return (
            f"an inference workload takes no {', '.join(training)} (training fields): remove them, "
            "or set task to pretrain, full_finetune, lora or qlora"
        )
    serving_fields = (
        "concurrency",
        "target_output_tokens_per_s",
        "target_requests_per_s",
        "target_requests_per_hour",
        "ttft_p95_ms",
        "tpot_p95_ms",
    )
    serving = [n for n in serving_fields if getattr(w, n) is not None]
    if w.task != "inference" and serving:
        return (
            f"a {w.task} workload takes no {', '.join(serving)} (serving targets): remove them, "
            "or set task: inference"
        )
    return None


def default_tier(w: Any) -> str:
    """``production`` for serving with a latency SLO (users wait on it), ``batch`` otherwise."""
    slo = w.ttft_p95_ms is not None or w.tpot_p95_ms is not None
    return "production" if w.task == "inference" and slo else "batch"


def build_workload(w: Any) -> Workload:
    """The library's :class:`Workload` from validated fields (schedule, units and defaults resolved)."""
    from gpufleet.cost.schedule import Schedule
    from gpufleet.recommend.filter_values import gpu_family

    if w.hours_per_day is not None and w.days_per_month is not None:
        hours = Schedule.daily(hours_per_day=w.hours_per_day, days_per_month=w.days_per_month)
    else:
        hours = Schedule(hours_per_month=w.hours_per_month or HOURS_PER_MONTH)
    rps = w.target_requests_per_s
    if w.target_requests_per_hour is not None:
        rps = w.target_requests_per_hour / SECONDS_PER_HOUR
    tokens = w.train_tokens
    if w.dataset_tokens is not None:
        tokens = w.dataset_tokens * (w.epochs or 1.0)
    cur = w.current
    g = w.gpus
    gpu_names = g if isinstance(g, list) else (g.any_of or g.ordered or [])
    tier = w.tier or default_tier(w)
    return Workload(
        name=w.name,
        description=w.description,
        model=w.model,
        task=w.task,
        precision=w.precision,
        input_len_tokens=w.input_len_tokens,
        output_len_tokens=w.output_len_tokens,
        concurrency=w.concurrency,
        target_output_tokens_per_s=w.target_output_tokens_per_s,
        target_requests_per_s=rps,
        ttft_p95_s=w.ttft_p95_ms / MS_PER_S if w.ttft_p95_ms else None,
        tpot_p95_s=w.tpot_p95_ms / MS_PER_S if w.tpot_p95_ms else None,
        train_tokens=tokens,
        deadline_h=w.deadline_h,
        global_batch_sequences=w.global_batch_sequences,
        seq_len_tokens=w.seq_len_tokens,
        hours_per_month=hours.hours_per_month,
        pricing=w.pricing,
        commitments_file=w.commitments_file,
        providers=tuple(p.lower() for p in w.providers),
        regions=tuple(w.regions),
        gpu_vendors=tuple(w.gpu_vendors),
        geos=tuple(w.geos),
        exclude_providers=tuple(p.lower() for p in w.exclude_providers),
        provider_classes=tuple(w.provider_classes),
        gpu_choices=tuple(gpu_family(name) for name in gpu_names),
        gpu_order="ordered" if not isinstance(g, list) and g.ordered else "any_of",
        min_gpu_memory_gib=w.min_gpu_memory_gib,
        gpus_per_node=tuple(w.gpus_per_node),
        max_price_per_gpu_usd_per_hour=w.max_price_per_gpu_usd_per_hour,
        max_nodes=w.max_nodes,
        runs_per_month=w.runs_per_month,
        tier=tier,
        confidence=w.confidence,
        max_risk=w.max_risk or ("medium" if tier == "production" else None),
        allow_fallback=w.allow_fallback,
        allow_marketplace=w.allow_marketplace,
        allow_stale_prices=w.allow_stale_prices,
        allow_embargoed_countries=w.allow_embargoed_countries,
        budget_usd_per_month=w.budget_usd_per_month,
        objective=w.objective,
        near_tie_fraction=w.near_tie_pct / 100,
        current=CurrentDeployment(
            provider=cur.provider.lower(),
            instance_type=cur.instance_type,
            count=cur.count,
            region=cur.region,
            gpu_count=cur.gpu_count,
        )
        if cur
        else None,
    )


def _blank(value: Any) -> bool:
    return isinstance(value, str) and not value.strip()


def _number(field: str, value: Any) -> int | float | None:
    """``value`` within the field's bounds (a float field's value as float), else None."""
    kind, low, inclusive, high = NUMBERS[field]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if kind is int and not isinstance(value, int):
        return None
    if not math.isfinite(value) or value > high or value < low or (value == low and not inclusive):
        return None
    return float(value) if kind is float else value


def _names(values: Any, most: int | None, check: Callable[[list[str]], Iterable[str]] | None) -> Any:
    """A comma-split list of names within ``most`` items and accepted by ``check``, else None."""
    from gpufleet.recommend.filter_values import split_values

    if not isinstance(values, list) or not all(isinstance(v, str) and not _blank(v) for v in values):
        return None
    items = list(split_values(values))
    if most is not None and len(items) > most:
        return None
    return list(check(items)) if check is not None else items


def _gpus_per_node(values: Any) -> list[int] | None:
    from gpufleet.recommend.filter_values import split_values

    if not isinstance(values, list):
        return None
    counts: list[int] = []
    for item in values:
        if isinstance(item, str):
            for part in split_values(item):
                if not _DIGITS.fullmatch(part):
                    return None
                counts.append(int(part))
        elif isinstance(item, int) and not isinstance(item, bool):
            counts.append(item)
        else:
            return None
    if len(counts) > MAX_GPUS_PER_NODE_ITEMS or not all(1 <= c <= MAXIMA["gpus_per_node"] for c in counts):
        return None
    return counts


def _check_gpus(names: list[str]) -> list[str]:
    from gpufleet.recommend.filter_values import gpu_family

    for name in names:
        gpu_family(name)
    return names


def _checks() -> dict[str, Callable[[list[str]], Iterable[str]] | None]:
    from gpufleet.catalog.provider_class import check_provider_classes
    from gpufleet.catalog.regions import expand_geos
    from gpufleet.recommend.filter_values import check_vendors

    return {
        "providers": None,
        "regions": None,
        "exclude_providers": None,
        "geos": expand_geos,
        "provider_classes": check_provider_classes,
        "gpu_vendors": check_vendors,
        "gpus": _check_gpus,
    }


def _validated(data: Mapping[str, Any]) -> dict[str, Any] | None:
    """The fields of ``data`` checked and normalised as the spec does, or None at the first doubt."""
    from gpufleet.precision import check_precision

    values = dict(DEFAULTS)
    checks = _checks()
    for key, value in data.items():
        if key == "model":
            if not isinstance(value, str) or _blank(value) or len(value) > MAX_MODEL_CHARS:
                return None
            values[key] = value
        elif key == "precision":
            if not isinstance(value, str) or _blank(value):
                return None
            values[key] = check_precision(value)
        elif key in CHOICES:
            if value not in CHOICES[key] or not isinstance(value, str):
                return None
            values[key] = value
        elif key in NUMBERS:
            number = _number(key, value)
            if number is None:
                return None
            values[key] = number
        elif key in LISTS:
            names = _names(value, LISTS[key], checks[key])
            if names is None:
                return None
            values[key] = names
        elif key == "gpus_per_node":
            counts = _gpus_per_node(value)
            if counts is None:
                return None
            values[key] = counts
        elif key == "allow_fallback" and isinstance(value, bool):
            values[key] = value
        else:  # a field the CLI does not set (name, description, current, ...): the spec validates it
            return None
    return values if "model" in values else None


def fast_workload(data: Mapping[str, Any]) -> Workload | None:
    """The :class:`Workload` for CLI option values (workload field -> typed value), built without pydantic;
    None when any value needs the spec's validation (out of bounds, unknown name, a field not covered here).

    Never more permissive than :class:`~gpufleet.recommend.workload.WorkloadSpec`: a value this accepts, the
    spec accepts and turns into the same workload (tests/recommend/test_workload_fields.py).
    """
    try:
        values = _validated(data)
        if values is None:
            return None
        fields = _Fields(values)
        if consistency_error(fields) is not None:
            return None
        return build_workload(fields)
    except Exception:  # any error: the spec validates again and reports it
        return None


__all__ = ["CHOICES", "DEFAULTS", "LISTS", "NUMBERS", "build_workload", "consistency_error", "fast_workload"]
