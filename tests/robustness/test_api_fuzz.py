"""Fuzz every public function of ``gpufleet.__all__``: only GpufleetErrors escape, nothing hangs, and every
returned quantity is finite and non-negative (intervals ordered), checked by the library's own invariant
checker (:func:`gpufleet.validation.output_violation`).

Arguments mix valid values with junk (unknown names, 0, negatives, huge numbers, NaN, infinity, wrong types).
Each call runs under a 10 s alarm.
"""

from __future__ import annotations

import importlib
import math
import signal
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpufleet
from gpufleet.errors import GpufleetError
from gpufleet.validation import output_violation

MODELS = ["llama-3-8b", "mixtral-8x7b", "llama-2-7b", "deepseek-v3", "bert-base-cased", "SMALL", "gpt2"]
GPUS = ["h100", "H200-SXM", "A100-SXM-80GB", "T4", "L4", "MI300X", "B200"]
PRECISIONS = ["bf16", "fp16", "fp32", "tf32", "fp8", "int8", "int4", "fp4", "nf4"]
JUNK_STR = st.sampled_from(
    ["", " ", "nope", "x" * 3000, "llama-3-8bb", "h1000", "fp7", "\x00", "../etc/passwd"]
)
JUNK = st.one_of(
    JUNK_STR,
    st.none(),
    st.sampled_from([0, -1, -(2**63), 2**40, 2**100, 1.5, math.nan, math.inf, -math.inf, True, [], {}]),
)


def _name(valid: list[str]) -> st.SearchStrategy[Any]:
    return st.one_of(st.sampled_from(valid), st.sampled_from(valid), JUNK)


def _count(lo: int = 1, hi: int = 64) -> st.SearchStrategy[Any]:
    return st.one_of(st.integers(lo, hi), st.integers(lo, hi), JUNK)


def _length() -> st.SearchStrategy[Any]:
    return st.one_of(st.sampled_from([1, 16, 128, 1024, 4096, 32768]), JUNK)


@cache
def _small_offers() -> gpufleet.OfferTable:
    return gpufleet.load_offers().filter(provider="lambda")


@cache
def _scenarios() -> tuple[list[str], list[str]]:
    cat = importlib.import_module("gpufleet.recommend.scenarios").load_scenarios()
    return list(cat.scenarios)[:3], list(cat.sets)[:1]


@pytest.fixture(autouse=True)
def _alarm() -> Iterator[None]:
    def hang(*_: object) -> None:
        raise TimeoutError("a public API call ran over 10 s")

    old = signal.signal(signal.SIGALRM, hang)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call under the alarm; a GpufleetError is a fine answer (None); anything else fails the test."""
    signal.alarm(10)
    try:
        result = fn(*args, **kwargs)
    except GpufleetError:
        return None
    finally:
        signal.alarm(0)
    bad = output_violation(result, fn.__name__)
    assert bad is None, f"{fn.__name__}({args}, {kwargs}): {bad}"
    return result


FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
FEW = settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))


@FUZZ
@given(
    model=_name(MODELS),
    gpu=_name(GPUS),
    precision=_name(PRECISIONS),
    input_len=_length(),
    output_len=_length(),
    gpu_count=_count(),
    batch=st.one_of(st.none(), _count(1, 512)),
    tp=st.one_of(st.none(), _count(1, 16)),
    software=st.one_of(st.none(), _name(["vllm", "trtllm", "tgi", "transformers"])),
    allow_fallback=st.booleans(),
)
def test_estimate_inference(**kw: Any) -> None:
    _call(gpufleet.estimate_inference, **kw)


@FUZZ
@given(
    model=_name(MODELS),
    gpu=_name(GPUS),
    precision=_name(PRECISIONS),
    task=_name(["pretrain", "full_finetune", "lora", "qlora"]),
    gpu_count=_count(1, 4096),
    global_batch=_count(1, 4096),
    seq_len=_length(),
    train_tokens=st.one_of(st.none(), st.sampled_from([1e9, 1e12]), JUNK),
    tp=st.one_of(st.none(), _count(1, 16)),
    software=st.one_of(st.none(), _name(["megatron", "nemo", "deepspeed"])),
    allow_fallback=st.booleans(),
)
def test_estimate_training(**kw: Any) -> None:
    _call(gpufleet.estimate_training, **kw)


@FUZZ
@given(
    model=_name(MODELS),
    gpu=_name(GPUS),
    precision=_name(PRECISIONS),
    task=_name(["inference", "pretrain", "lora", "qlora", "full_finetune", "load"]),
    seq_len=_length(),
    batch=_count(1, 512),
    tp=_count(1, 16),
    pp=_count(1, 8),
    zero_stage=st.one_of(st.sampled_from([0, 1, 2, 3]), JUNK),
    engine=_name(["vllm", "trtllm", "transformers"]),
)
def test_estimate_memory(**kw: Any) -> None:
    _call(gpufleet.estimate_memory, **kw)


@FUZZ
@given(name=st.one_of(_name(MODELS), JUNK))
def test_resolve_model_and_count_params(name: Any) -> None:
    arch = _call(gpufleet.resolve_model, name)
    if arch is not None:
        _call(gpufleet.count_params, arch)


@FUZZ
@given(name=st.one_of(_name(GPUS), JUNK))
def test_get_spec(name: Any) -> None:
    _call(gpufleet.get_spec, name)


@FUZZ
@given(kind=_name(["on_demand", "spot", "reserved_1y", "reserved_3y", "cud_3y", "commit_1y"]))
def test_prices(kind: Any) -> None:
    prices = _call(gpufleet.prices_usd_per_hour, _small_offers(), kind)
    if prices is not None:
        known = prices[~np.isnan(prices)]  # NaN = no such price for that offer
        assert np.all(np.isfinite(known)) and np.all(known > 0)


@FEW
@given(catalogs=st.one_of(st.just(()), st.lists(JUNK_STR, max_size=2)), refreshed=st.booleans())
def test_load_offers(catalogs: Any, refreshed: bool) -> None:
    _call(gpufleet.load_offers, catalogs, include_refreshed=refreshed)


@FEW
@given(
    model=_name(MODELS),
    task=_name(["inference", "pretrain", "lora"]),
    input_len_tokens=_length(),
    concurrency=st.one_of(st.none(), _count(1, 10_000), JUNK),
    train_tokens=st.one_of(st.none(), st.sampled_from([1e9, 1e12]), JUNK),
    pricing=_name(["on_demand", "spot", "1y", "3y"]),
    objective=st.one_of(st.none(), _name(["cheapest", "fastest", "throughput_per_dollar"])),
)
def test_recommend_and_migrate(**kw: Any) -> None:
    fields = {k: v for k, v in kw.items() if v is not None and k != "objective"}
    _call(gpufleet.recommend, offers=_small_offers(), objective=kw["objective"], limit=3, **fields)
    _call(
        gpufleet.migrate,
        offers=_small_offers(),
        limit=3,
        current={"provider": "lambda", "instance_type": "gpu_8x_h100_sxm5"},
        **fields,
    )


@FEW
@given(data=st.data())
def test_scenarios(data: st.DataObject) -> None:
    names, sets = _scenarios()
    name = data.draw(st.one_of(st.sampled_from(names), JUNK))
    _call(gpufleet.run_scenario, name, offers=_small_offers(), limit=2)
    set_name = data.draw(st.one_of(st.sampled_from(sets), JUNK))
    _call(gpufleet.run_scenario_set, set_name, offers=_small_offers(), limit=1)


@FEW
@given(cases=st.one_of(st.just([]), st.lists(JUNK, max_size=2)))
def test_validate_cases(cases: Any) -> None:
    _call(gpufleet.validate_cases, cases)


def test_every_public_function_is_fuzzed() -> None:
    functions = {
        n
        for n in gpufleet.__all__
        if callable(getattr(gpufleet, n)) and not isinstance(getattr(gpufleet, n), type)
    }
    fuzzed = {
        "estimate_inference",
        "estimate_training",
        "estimate_memory",
        "resolve_model",
        "count_params",
        "get_spec",
        "prices_usd_per_hour",
        "load_offers",
        "recommend",
        "migrate",
        "run_scenario",
        "run_scenario_set",
        "validate_cases",
    }
    assert functions == fuzzed
