"""Fuzz the library functions of the fleet, telemetry and simulate packages (their ``__all__``, beyond the
top-level API of ``test_api_fuzz.py``): only GpufleetErrors escape, nothing hangs, every returned quantity
is finite and non-negative where it should be (:func:`gpufleet.validation.output_violation`).

Each argument is drawn valid most of the time and junk otherwise (wrong types, NaN, infinity, huge numbers,
blank and control-character texts), so calls get past the first check. Before issue 26, 18 of these
functions let a TypeError/AttributeError/ValueError escape on a wrongly typed argument (e.g.
``simulate_batch(["x"])``, ``scale_rate(trace, "x")``, ``ingest_prometheus(3, ...)``,
``prometheus_rules(rules, price_usd_per_gpu_hour="x")``); they now carry the library's argument guard
(:func:`gpufleet.validation.checked_arguments`). ``deployment_for(cold_start=-1)`` returned a deployment with
a negative cold start, and a 3,000-character store path an OSError.
"""

from __future__ import annotations

import importlib
import inspect
import math
import signal
import tempfile
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from gpufleet.errors import GpufleetError
from gpufleet.validation import output_violation

PACKAGES = ("gpufleet.simulate", "gpufleet.fleet", "gpufleet.telemetry")
JUNK_VALUES: list[Any] = [
    "x", "", " ", "\x00", "x" * 3000, 3, 0, -1, 2.5, math.nan, math.inf, -math.inf, 10**30, True, b"ab",
    [], {}, ["x"], {"a": 1}, (1, 2), None, object(),
]  # fmt: skip
JUNK = st.sampled_from(JUNK_VALUES)
#: few junk values for the calls that write a store or solve a MILP (each call costs 50-300 ms)
FEW_JUNK: list[Any] = ["x", "", math.nan, -1, None, ["x"], object()]
T0_MS = 1_780_000_200_000
SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate],  # no shrinking: a failure is reported as generated
)


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A junk store path such as "x" is a valid relative path: the store is made in the working folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GPUFLEET_DATA_DIR", str(tmp_path / "data"))


@pytest.fixture(autouse=True)
def _alarm() -> Iterator[None]:
    def hang(*_: object) -> None:
        raise TimeoutError("a library call ran over 20 s")

    old = signal.signal(signal.SIGALRM, hang)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _call(fn: Callable[..., Any], **kwargs: Any) -> Any:
    """Call under the alarm; a GpufleetError is a fine answer (None); anything else fails the test."""
    signal.alarm(20)
    try:
        result = fn(**kwargs)
    except GpufleetError:
        return None
    finally:
        signal.alarm(0)
    if not isinstance(result, str):
        bad = output_violation(result, fn.__name__)
        assert bad is None, f"{fn.__name__}({kwargs}): {bad}"
    return result


@cache
def _fixtures() -> dict[str, Any]:
    """Small valid inputs, built once: a trace, a deployment, jobs, fleets, a telemetry store."""
    sim = importlib.import_module("gpufleet.simulate")
    fleet = importlib.import_module("gpufleet.fleet")
    tel = importlib.import_module("gpufleet.telemetry")
    store_mod = importlib.import_module("gpufleet.telemetry.store")
    d = Path(tempfile.mkdtemp(prefix="gpufleet-fuzz-"))
    rows = "\n".join(f"{k * 0.7:.1f},{200 + 37 * k % 500},{20 + 11 * k % 90}" for k in range(40))
    (d / "t.csv").write_text("timestamp_s,input_tokens,output_tokens\n" + rows + "\n")
    (d / "jobs.csv").write_text(
        "job_id,submit_s,gpus,duration_s,priority,deadline_s,preemptible,team\n"
        "j1,0,8,7200,1,,false,research\nj2,60,1,3600,0,,true,prod\n"
    )
    (d / "fleet.yaml").write_text(
        "name: fz\nworkloads:\n  chat:\n    workload: {model: llama-3.1-8b, target_requests_per_s: 2}\n"
        "    demand: {schedule: '24/7'}\n    providers: [lambda]\n"
    )
    (d / "batch_fleet.yaml").write_text(
        "pools:\n  - {name: a, gpu: h100, gpus_per_node: 8, nodes: 2, kind: on_demand}\n"
    )
    (d / "sweep.yaml").write_text(f"kind: batch\nbase:\n  jobs: {d / 'jobs.csv'}\ngrid:\n  policy: [fifo]\n")
    (d / "s.prom").write_text(
        "\n".join(
            f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",UUID="GPU-{g}",Hostname="a"}} {40 + g} {T0_MS + 60_000 * k}'
            for k in range(10)
            for g in (0, 1)
        )
        + "\n"
    )
    trace = sim.read_trace(d / "t.csv")
    store = store_mod.TelemetryStore(d / "store")
    tel.ingest_files([d / "s.prom"], store=store)
    ff = tel.analyze_fleet(store)
    parsed = fleet.read_fleet_file(d / "fleet.yaml")
    return {
        "dir": d,
        "trace": trace,
        "deployment": sim.deployment_for(trace, model="llama-3.1-8b", gpu="l4"),
        "policy": sim.make_policy("kpa"),
        "jobs": sim.read_jobs(d / "jobs.csv"),
        "batch_fleet": sim.read_fleet(d / "batch_fleet.yaml"),
        "fleet": parsed,
        "fleet_dict": {
            "name": "x",
            "workloads": {
                "chat": {
                    "workload": {"model": "llama-3.1-8b", "target_requests_per_s": 2},
                    "demand": {"schedule": "24/7"},
                    "providers": ["lambda"],
                }
            },
        },
        "store": store,
        "findings": ff,
        "rules": tel.load_rules(),
        "sweep_spec": sim.read_sweep_spec(d / "sweep.yaml"),
    }


def _valid(name: str) -> dict[str, Any]:
    """Valid keyword arguments of the library function ``name`` (paths under the fixture folder)."""
    f = _fixtures()
    d: Path = f["dir"]
    return {
        "default_fleet": {},
        "deployment_for": {"trace": f["trace"], "model": "llama-3.1-8b", "gpu": "l4"},
        "make_policy": {"name": "kpa"},
        "read_fleet": {"path": d / "batch_fleet.yaml"},
        "read_jobs": {"path": d / "jobs.csv"},
        "read_sweep_spec": {"path": d / "sweep.yaml"},
        "read_trace": {"path": d / "t.csv"},
        "result_kind": {"result": None},
        "run_sweep": {"spec": f["sweep_spec"], "workers": 1},
        "scale_rate": {"trace": f["trace"], "factor": 2.0},
        "simulate_autoscale": {"trace": f["trace"], "deployment": f["deployment"], "policy": f["policy"]},
        "simulate_batch": {"jobs": f["jobs"], "fleet": f["batch_fleet"]},
        "simulate_spot": {"model": "gpt2", "tokens": 1e9, "gpus": 8, "runs": 2},
        "static_peak": {"trace": f["trace"], "dep": f["deployment"], "slo_ttft_s": 2.0},
        "check_plan": {"fleet": f["fleet"], "options": {}, "lines": []},
        "fleet_from_dict": {"data": f["fleet_dict"]},
        "plan_fleet": {"fleet": f["fleet"], "time_limit_s": 5.0, "savings": False},
        "read_fleet_file": {"path": d / "fleet.yaml"},
        "solve_fleet": {"fleet": f["fleet"], "options": {}},
        "analyze_fleet": {"store": f["store"]},
        "default_store_dir": {},
        "evaluate_alerts": {"store": f["store"]},
        "ingest_files": {"paths": [d / "s.prom"], "store": f["store"]},
        # port 9 (discard) on the loopback: refused at once, no network
        "ingest_prometheus": {"url": "http://127.0.0.1:9/", "start_s": 0.0, "end_s": 600.0, "timeout_s": 0.5},
        "ingest_telemetry": {"paths": [d / "s.prom"], "store": f["store"].root},
        "load_rules": {},
        "prometheus_rules": {"rules": f["rules"]},
        "summarize": {"ff": f["findings"]},
    }[name]


def _functions() -> list[tuple[str, Callable[..., Any]]]:
    out = []
    for pkg in PACKAGES:
        mod = importlib.import_module(pkg)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if callable(obj) and not isinstance(obj, type):
                out.append((f"{pkg}.{name}", obj))
    return out


FUNCTIONS = _functions()


def test_every_library_function_is_fuzzed() -> None:
    names = {qual.rsplit(".", 1)[1] for qual, _ in FUNCTIONS}
    for name in names:
        _valid(name)  # a KeyError names a new function the fuzz does not cover yet


@pytest.mark.parametrize(("qual", "fn"), FUNCTIONS, ids=[q for q, _ in FUNCTIONS])
def test_wrong_type_of_each_argument(qual: str, fn: Callable[..., Any]) -> None:
    """Each parameter in turn gets each junk value, the others valid (a deterministic sweep)."""
    name = qual.rsplit(".", 1)[1]
    valid = _valid(name)
    params = [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in {"progress", "address"}
    ]
    if name in ("plan_fleet", "solve_fleet", "run_sweep", "simulate_spot", "ingest_files", "ingest_telemetry",
                "ingest_prometheus", "evaluate_alerts", "analyze_fleet"):  # fmt: skip
        junk = FEW_JUNK
    else:
        junk = JUNK_VALUES
    for p in params:
        for j in junk:
            if p.name == "engine" and j == "ray":
                continue
            _call(fn, **{**valid, p.name: j})


@SETTINGS
@given(data=st.data())
@pytest.mark.parametrize(
    "name",
    [
        "deployment_for",
        "make_policy",
        "scale_rate",
        "static_peak",
        "simulate_batch",
        "check_plan",
        "fleet_from_dict",
        "ingest_files",
        "prometheus_rules",
        "evaluate_alerts",
        "analyze_fleet",
    ],
)
def test_mixed_junk(name: str, data: st.DataObject) -> None:
    """Several arguments junk at once (each 1 in 4), drawn by hypothesis."""
    mods = {q.rsplit(".", 1)[1]: fn for q, fn in FUNCTIONS}
    fn = mods[name]
    kwargs = dict(_valid(name))
    extra = {
        "deployment_for": {"gpus_per_replica": 1, "precision": "bf16", "software": "vllm"},
        "make_policy": {},
        "scale_rate": {},
        "static_peak": {"seed": 0, "max_replicas": 8},
        "simulate_batch": {"policy": "fifo", "seed": 0, "checkpoint_h": 0.5, "restart_h": 0.1},
        "check_plan": {"total_usd_per_month": 0.0},
        "fleet_from_dict": {"source": "f"},
        "ingest_files": {"input_format": "auto", "host": "h", "timezone": "UTC"},
        "prometheus_rules": {"price_usd_per_gpu_hour": 2.0},
        "evaluate_alerts": {"lookback_days": 1.0, "step_s": 60.0},
        "analyze_fleet": {"lookback_days": 1.0, "percentile": 0.9},
    }[name]
    kwargs |= extra
    for key in list(kwargs):
        if data.draw(st.integers(0, 3)) == 0:
            kwargs[key] = data.draw(JUNK)
    _call(fn, **kwargs)
