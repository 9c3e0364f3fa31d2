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
from datetime import UTC, datetime
from functools import cache
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
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
#: new packages: no shrinking (a failure is reported as generated; shrinking store-backed cases takes minutes)
FAST = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate],
)


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


# ---- telemetry, simulate, fleet ------------------------------------------------------------------------


def _mostly(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``valid`` 6 times in 7, else junk: calls with many arguments still often get through validation."""
    return st.integers(0, 6).flatmap(lambda k: valid if k else JUNK)


H100 = "NVIDIA H100 80GB HBM3"
SMI_HEADER = (
    "timestamp, index, uuid, name, memory.total [MiB], memory.used [MiB], utilization.gpu [%], "
    "power.draw [W], mig.mode.current\n"
)
SMI_ROWS = st.lists(
    st.sampled_from(
        [
            "2026/07/14 08:12:38.696, 0, GPU-aaaa, " + H100 + ", 81559 MiB, 0 MiB, 0 %, 69.85 W, Disabled",
            "2026/07/14 08:13:38.696, 0, GPU-aaaa, " + H100 + ", 81559 MiB, 900 MiB, 100 %, 600 W, Disabled",
            "2026/07/14 08:14:00.000, 1, GPU-bbbb, "
            + H100
            + ", 81559 MiB, [N/A], [Not Supported], nan W, Enabled",
            "2026/07/14 08:15:00.000, 1, GPU-bbbb, " + H100 + ", -5 MiB, 1e400 MiB, -3 %, inf W, Disabled",
            "1970/01/01 00:00:00.000, 2, GPU-cccc, Tesla T4, 0 MiB, 0 MiB, 0 %, 0 W, Disabled",
            "9999/12/31 23:59:59.999, 2, GPU-cccc, Tesla T4, 15360 MiB, 99999999 MiB, 1000 %, 70 W, Disabled",
            "this line is broken",
            "",
        ]
    ),
    min_size=1,
    max_size=5,
)
EXPO_LINES = st.lists(
    st.sampled_from(
        [
            'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",Hostname="a"} 100 1784009558000',
            'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",Hostname="a"} NaN 1784009618000',
            'DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-1",Hostname="a"} -1 1784009558000',
            'DCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-1",Hostname="a"} +Inf 1784009558000',
            'DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-1",Hostname="a"} 1e308 99999999999999999',
            'DCGM_FI_PROF_SM_ACTIVE{gpu="1",UUID="GPU-2",Hostname="b"} 0.5 0',
            'DCGM_FI_DEV_GPU_UTIL{gpu="0" 7',
        ]
    ),
    min_size=1,
    max_size=6,
)
END = st.one_of(
    st.none(),
    st.sampled_from([datetime(2026, 7, 14, 9, tzinfo=UTC), datetime(1970, 1, 1), datetime(9999, 1, 1)]),
    JUNK,
)


@FAST
@given(
    smi=SMI_ROWS,
    expo=EXPO_LINES,
    fmt=_mostly(st.just("auto")),
    timezone=_mostly(st.sampled_from(["UTC", "Europe/Berlin", "Mars/Olympus"])),
    lookback=_mostly(st.sampled_from([14, 1, 0.001, 93, 36_500])),
    percentile=_mostly(st.sampled_from([0.5, 0.95, 0.99])),
    end=_mostly(st.sampled_from([None, None, datetime(2026, 7, 14, 9, tzinfo=UTC), datetime(1970, 1, 1)])),
    step=_mostly(st.sampled_from([60.0, 1.0, 3600.0])),
)
def test_telemetry(tmp_path_factory: pytest.TempPathFactory, **kw: Any) -> None:
    d = tmp_path_factory.mktemp("tel")
    (d / "node1.csv").write_text(SMI_HEADER + "\n".join(kw["smi"]) + "\n", encoding="utf-8")
    (d / "scrape.prom").write_text("\n".join(kw["expo"]) + "\n", encoding="utf-8")
    store = d / "store"
    _call(
        gpufleet.ingest_telemetry,
        [d / "node1.csv", d / "scrape.prom"],
        store=store,
        input_format=kw["fmt"],
        timezone=kw["timezone"],
    )
    _call(
        gpufleet.analyze_fleet,
        store,
        lookback_days=kw["lookback"],
        percentile=kw["percentile"],
        end=kw["end"],
    )
    _call(gpufleet.evaluate_alerts, store, lookback_days=kw["lookback"], end=kw["end"], step_s=kw["step"])


@FAST
@given(junk=st.one_of(JUNK, st.lists(JUNK, max_size=2)))
def test_telemetry_junk_arguments(tmp_path_factory: pytest.TempPathFactory, junk: Any) -> None:
    store = tmp_path_factory.mktemp("tel") / "store"
    _call(gpufleet.ingest_telemetry, junk, store=store)
    _call(gpufleet.ingest_telemetry, [junk], store=store)
    _call(gpufleet.analyze_fleet, store, inventory=junk if isinstance(junk, str) and junk else None)
    _call(gpufleet.evaluate_alerts, store, rules=junk if isinstance(junk, str) and junk else None)


TRACE_ROWS = st.lists(
    st.sampled_from(
        ["0,100,20", "0.5,50,5", "3,2000,300", "10,1,1", "1e9,10,10", "-1,5,5", "2,nan,3", "4,0,0"]
    ),
    min_size=0,
    max_size=6,
)


@cache
def _deployment() -> Any:
    sim = importlib.import_module("gpufleet.simulate")
    trace = _tiny_trace()
    return sim.deployment_for(trace, model="llama-3.1-8b", gpu="l4")


@cache
def _tiny_trace() -> Any:
    import tempfile
    from pathlib import Path

    sim = importlib.import_module("gpufleet.simulate")
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "t.csv"
        rows = "\n".join(f"{k * 0.7:.1f},{200 + 37 * k % 500},{20 + 11 * k % 90}" for k in range(60))
        f.write_text("timestamp_s,input_tokens,output_tokens\n" + rows + "\n")
        return sim.read_trace(f)


@FAST
@given(
    rows=TRACE_ROWS,
    policy=_mostly(st.sampled_from(["static", "scheduled", "hpa", "kpa", "ray", "queue"])),
    min_replicas=_mostly(st.integers(0, 4)),
    max_replicas=_mostly(st.integers(1, 8)),
    spot_share=_mostly(st.sampled_from([0.0, 0.0, 0.5, 1.0])),
    slo_ttft_s=_mostly(st.sampled_from([2.0, 1e-6, 3600.0])),
    rate_factor=_mostly(st.sampled_from([1.0, 0.5, 4.0])),
    initial_replicas=_mostly(st.one_of(st.none(), st.integers(0, 8))),
    seed=_mostly(st.integers(0, 5)),
)
def test_simulate_autoscale(tmp_path_factory: pytest.TempPathFactory, **kw: Any) -> None:
    sim = importlib.import_module("gpufleet.simulate")
    f = tmp_path_factory.mktemp("trace") / "t.csv"
    f.write_text("timestamp_s,input_tokens,output_tokens\n" + "\n".join(kw.pop("rows")) + "\n")
    trace = _call(sim.read_trace, f) or _tiny_trace()
    policy = _call(sim.make_policy, kw.pop("policy"))
    if policy is None:
        policy = sim.make_policy("kpa")
    _call(gpufleet.simulate_autoscale, trace, _deployment(), policy, **kw)


@FAST
@given(
    model=_mostly(st.sampled_from(["llama-3-8b", "gpt2", "llama-2-7b"])),
    tokens=_mostly(st.sampled_from([1e8, 1e9, 1e13])),
    gpu=_mostly(st.sampled_from(["h100", "a100", "l4"])),
    gpus=_mostly(st.sampled_from([1, 8, 16, 64])),
    deadline_h=_mostly(st.sampled_from([None, 0.01, 1.0, 100.0])),
    interval_h=_mostly(st.sampled_from([None, None, 1e-9, 0.5, 2.0, 1e5])),
    strategies=st.one_of(st.just(("on_demand", "spot")), st.lists(JUNK_STR, max_size=2)),
    runs=_mostly(st.integers(1, 3)),
    regions=_mostly(st.integers(1, 3)),
    provider=_mostly(st.sampled_from([None, None, "aws", "gcp", "azure"])),
)
def test_simulate_spot(**kw: Any) -> None:
    _call(gpufleet.simulate_spot, seed=0, **kw)


JOB_ROWS = st.lists(
    st.sampled_from(
        [
            "j1,0,8,7200,1,,false,research",
            "j2,60,16,3600,0,,true,research",
            "j3,120,1,10800,2,43200,false,prod",
            "j4,1e12,1,1e12,0,,true,prod",
            "j5,-5,1,60,0,,false,x",
            "j6,0,1,nan,0,,false,x",
            "j7,0,1,60,0,-1,maybe,x",
        ]
    ),
    max_size=5,
)


@FAST
@given(
    rows=JOB_ROWS,
    policy=_mostly(st.sampled_from(["fifo", "priority", "easy", "deadline", "offpeak", "spot"])),
    checkpoint_h=_mostly(st.sampled_from([1.0, 1e-9, 1e5])),
    restart_h=_mostly(st.sampled_from([0.1, 0.0, 1e5])),
    seed=_mostly(st.integers(0, 5)),
)
def test_simulate_batch(tmp_path_factory: pytest.TempPathFactory, **kw: Any) -> None:
    sim = importlib.import_module("gpufleet.simulate")
    f = tmp_path_factory.mktemp("jobs") / "jobs.csv"
    f.write_text(
        "job_id,submit_s,gpus,duration_s,priority,deadline_s,preemptible,team\n"
        + "\n".join(kw.pop("rows"))
        + "\n"
    )
    jobs = _call(sim.read_jobs, f)
    _call(gpufleet.simulate_batch, jobs if jobs is not None else (), **kw)


@FAST
@given(
    kind=_mostly(st.sampled_from(["batch", "autoscale", "spot"])),
    base=st.one_of(st.just({}), st.dictionaries(JUNK_STR, JUNK, max_size=2)),
    grid=st.one_of(
        st.just({"policy": ["fifo"]}),
        st.dictionaries(JUNK_STR, st.lists(JUNK, min_size=1, max_size=2), max_size=2),
    ),
    engine=_mostly(st.just("local")),
)
def test_run_sweep(tmp_path_factory: pytest.TempPathFactory, **kw: Any) -> None:
    sim = importlib.import_module("gpufleet.simulate")
    d = tmp_path_factory.mktemp("sweep")
    (d / "jobs.csv").write_text(
        "job_id,submit_s,gpus,duration_s,priority,deadline_s,preemptible,team\nj,0,1,60,0,,false,t\n"
    )
    base = {"jobs": str(d / "jobs.csv"), **kw["base"]} if kw["kind"] == "batch" else kw["base"]
    spec = sim.SweepSpec(kind=kw["kind"], base=base, grid=kw["grid"])
    engine = kw["engine"] if kw["engine"] != "ray" else "local"
    _call(gpufleet.run_sweep, spec, engine=engine, workers=1)


FLEET_VALUES = st.one_of(
    st.sampled_from(["1", "4", "730"]),
    st.sampled_from(["1", "4", "730"]),
    st.sampled_from(["0", "-2", ".nan", ".inf", "1e400", "x", "[]", "{}", "null", "2.5"]),
)


@FAST
@given(
    replicas=FLEET_VALUES,
    rps=FLEET_VALUES,
    hours=FLEET_VALUES,
    gpu=st.sampled_from(["L4", "L4", "H100*", "A10*", "H1000", "", "'*'"]),
    junk=st.one_of(
        st.just(b""), st.binary(max_size=40), st.sampled_from([b"- 1\n", b"workloads: 3\n", b"\xff\xfe"])
    ),
)
def test_read_and_plan_fleet(tmp_path_factory: pytest.TempPathFactory, **kw: Any) -> None:
    d = tmp_path_factory.mktemp("fleet")
    good = d / "fleet.yaml"
    good.write_text(
        "name: fz\nworkloads:\n"
        f"  chat:\n    workload: {{model: llama-3.1-8b, target_requests_per_s: {kw['rps']}}}\n"
        f"    demand: {{hours_per_week: {kw['hours']}}}\n    providers: [lambda]\n"
        f"  rag:\n    resources: {{gpus: [{kw['gpu']}], gpus_per_replica: 1, replicas: {kw['replicas']}}}\n"
        "    providers: [lambda]\n"
    )
    (d / "junk.yaml").write_bytes(kw["junk"])
    _call(gpufleet.read_fleet_file, d / "junk.yaml")
    fleet = _call(gpufleet.read_fleet_file, good)
    if fleet is not None:
        _call(gpufleet.plan_fleet, fleet, offers=_small_offers(), time_limit_s=5.0, savings=False)


@FAST
@given(
    model=_mostly(st.sampled_from(["llama-3-8b", "gpt2", "mixtral-8x7b", "SMALL"])),
    data_size_gib=_mostly(st.sampled_from([0.0, 100.0, 1e9])),
    egress=_mostly(st.sampled_from([0.0, 50.0, 1e9])),
    bandwidth=_mostly(st.sampled_from([10.0, 0.001])),
    limit=_mostly(st.integers(1, 5)),
    loc=_mostly(st.sampled_from([None, (48.8, 2.3), (-90.0, 180.0), (91.0, 0.0), (math.nan, 0.0)])),
    data=st.sampled_from(
        [
            (None, None),
            (None, None),
            ("aws", "us-east-1"),
            ("lambda", "us-east-1"),
            ("awz", "x"),
            ("aws", None),
        ]
    ),
)
def test_analyze_regions(**kw: Any) -> None:
    wl = importlib.import_module("gpufleet.recommend.workload")
    w = _call(wl.workload_from_dict, {"model": kw["model"], "concurrency": 4})
    if w is None:
        return
    _call(
        gpufleet.analyze_regions,
        [w],
        offers=_small_offers(),
        user_lat_lon=kw["loc"],
        data_provider=kw["data"][0],
        data_region=kw["data"][1],
        data_size_gib=kw["data_size_gib"],
        serving_egress_gib_per_month=kw["egress"],
        bandwidth_gbit_s=kw["bandwidth"],
        limit=kw["limit"],
    )


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
        "ingest_telemetry",
        "analyze_fleet",
        "evaluate_alerts",
        "simulate_autoscale",
        "simulate_spot",
        "simulate_batch",
        "run_sweep",
        "read_fleet_file",
        "plan_fleet",
        "analyze_regions",
    }
    assert functions == fuzzed
