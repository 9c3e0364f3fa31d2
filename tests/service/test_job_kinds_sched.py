"""The scheduled-work job kinds: their parameters are checked before queueing (a 4xx, never a failed job
later), they give the CLI's documents, and telemetry_pull fills the team's own store from a real Prometheus
through the job runner (skipped where prometheus/promtool are not installed)."""

from __future__ import annotations

import importlib.util
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpufleet.errors import InputError
from gpufleet.service import scheduler
from gpufleet.service.job_kinds import check_params, execute

from .fixtures import Env, make_env

ROOT = Path(__file__).resolve().parents[2]
#: a valid spot simulate job and the base of a valid spot sweep, each case changing one field
SPOT: dict[str, Any] = {"simulator": "spot", "model": "llama-3.1-8b", "tokens": 1e9}
SWEEP_BASE: dict[str, Any] = {"model": "llama-3.1-8b", "tokens": 1e9}


@pytest.mark.parametrize(
    ("kind", "params", "says"),
    [
        ("catalog_refresh", {"provider": "ibm"}, "Allowed: aws, azure, gcp"),
        ("catalog_refresh", {"provider": "aws", "regions": "us-east-1"}, "regions is a list"),
        ("catalog_refresh", {"provider": "aws", "key": 1}, "Unknown catalog_refresh job parameter(s): key"),
        # accepted (202) before, the refresh failing later (or [] refreshing every shipped region)
        ("catalog_refresh", {"provider": "aws", "regions": []}, "regions is a list of one or more"),
        ("catalog_refresh", {"provider": "aws", "regions": ["  "]}, "regions is a list"),
        ("catalog_refresh", {"provider": "aws", "regions": ["80GB"]}, "regions = ['80GB']"),
        ("catalog_refresh", {"provider": "aws", "regions": ["us-east-1", "x" * 50]}, "lower-case region"),
        ("simulate", {"simulator": "autoscale", "trace": "/etc/passwd"}, "never a path"),
        ("simulate", {"simulator": "queueing"}, "Allowed: spot, autoscale"),
        ("simulate", {"simulator": "spot", "model": "llama-3.1-8b"}, "model and tokens are required"),
        (
            "simulate",
            {"simulator": "spot", "model": "llama-3.1-8b", "tokens": 1e9, "interruptions": "/etc/x"},
            "names a file",
        ),
        (
            "simulate",
            {"simulator": "spot", "model": "llama-3.1-8b", "tokens": "many"},
            "tokens = 'many' must be a int or float",
        ),
        (
            "simulate",
            {"simulator": "spot", "model": "llama-3.1-8b", "tokens": 1e9, "gpus": True},
            "gpus = True must be a int",
        ),
        ("simulate", {"simulator": "spot", "model": "/etc/hosts", "tokens": 1e9}, "looks like a file path"),
        (
            "simulate",
            {"simulator": "spot", "model": "cfg/config.json", "tokens": 1e9},
            "looks like a file path",
        ),
        (
            "simulate",
            {"simulator": "spot", "model": "llama-3.1-8b", "tokens": -5},
            "tokens = -5 must be a finite",
        ),
        (
            "simulate",
            {"simulator": "spot", "model": "llama-3.1-8b", "tokens": 1e9, "runs": 0},
            "runs = 0 must",
        ),
        ("sweep", {"kind": "spot", "grid": {"model": ["~/m"]}}, "looks like a file path"),
        ("sweep", {"kind": "batch", "grid": {}, "upload_sha256": {}}, "jobs is required"),
        ("sweep", {"kind": "queue", "grid": {}}, "Allowed: spot, autoscale"),
        ("sweep", {"kind": "spot", "base": {"fleet": "f.yaml"}, "grid": {}}, "names a file"),
        ("sweep", {"kind": "spot", "grid": {"gpus": []}}, "non-empty list"),
        ("sweep", {"kind": "spot", "grid": {"runs": list(range(1, 1002))}}, "1001 runs; at most 1000"),
        # accepted (202) before, the job failing later (or a 500: the name too long for the file system)
        ("simulate", {**SPOT, "model": "x" * 5000}, "Unknown model"),
        ("simulate", {**SPOT, "gpu": "h1000"}, "Unknown GPU"),
        ("simulate", {**SPOT, "gpu": " "}, "gpu is blank"),
        ("simulate", {**SPOT, "precision": "fp7"}, "precision = 'fp7'. Allowed: fp32"),
        ("simulate", {**SPOT, "precision": ""}, "precision = ''"),
        ("simulate", {**SPOT, "task": "inference"}, "prices a training run"),
        ("simulate", {**SPOT, "task": ""}, "task = ''"),
        ("simulate", {**SPOT, "provider": "awss"}, "Did you mean: aws"),
        ("simulate", {**SPOT, "provider": ""}, "Unknown provider"),
        ("simulate", {**SPOT, "seed": -1}, "seed = -1 must be a whole number from 0"),
        ("sweep", {"kind": "spot", "base": {**SWEEP_BASE, "model": "x" * 5000}}, "Unknown model"),
        ("sweep", {"kind": "spot", "base": {**SWEEP_BASE, "gpu": "80GB"}}, "Unknown GPU"),
        (
            "sweep",
            {"kind": "spot", "base": SWEEP_BASE, "grid": {"task": ["lora", "serving"]}},
            "task = 'serving'",
        ),
        ("sweep", {"kind": "spot", "base": SWEEP_BASE, "seeds": 0}, "seeds = '0'"),
        ("sweep", {"kind": "spot", "base": SWEEP_BASE, "seeds": ""}, "non-empty list of integers"),
        ("sweep", {"kind": "spot", "base": SWEEP_BASE, "seeds": []}, "non-empty list of integers"),
        ("sweep", {"kind": "spot", "base": SWEEP_BASE, "seeds": [0, 0]}, "repeat a seed"),
        ("sweep", {"kind": "spot", "base": SWEEP_BASE, "seeds": [-1]}, "from 0 to 2^63 - 1"),
        ("sweep", {"kind": "spot", "base": SWEEP_BASE, "grid": 0}, "grid = '0'"),
        ("sweep", {"kind": "spot", "base": SWEEP_BASE, "grid": []}, "grid = '[]'"),
        ("sweep", {"kind": "spot", "base": ""}, "base = ''"),
        (
            "sweep",
            {"kind": "spot", "base": {}, "grid": {"gpus": [8, 16]}},
            "model and tokens are not in base",
        ),
        ("sweep", {"kind": "spot", "base": {"model": "llama-3.1-8b"}}, "tokens is not in base or grid"),
        ("telemetry_pull", {"url": "file:///etc/passwd"}, "http(s)://"),
        ("telemetry_pull", {"url": "http://prom:9090", "lookback_hours": 0}, "lookback_hours = 0"),
        ("telemetry_pull", {"url": "http://prom:9090", "_telemetry_dir": "/"}, "Unknown telemetry_pull job"),
        ("findings", {"lookback_days": -1}, "lookback_days = -1"),
        ("findings", {"_telemetry_dir": "/tmp"}, "Unknown findings job parameter(s): _telemetry_dir"),
    ],
)
def test_bad_parameters_are_refused_with_what_is_allowed(
    kind: str, params: dict[str, Any], says: str
) -> None:
    with pytest.raises(InputError) as err:
        check_params(kind, params)
    assert says in str(err.value)


def test_an_unknown_model_is_a_404_with_close_matches(env: Env) -> None:
    body = {"kind": "simulate", "params": {"simulator": "spot", "model": "llama-3.1-8", "tokens": 1e9}}
    r = env.client.post("/api/v1/jobs", json=body, headers=env.h("a_editor"))
    assert r.status_code == 404 and "llama-3.1-8b" in r.json()["error"]["message"]


def test_job_routes_check_kinds_and_roles(env: Env) -> None:
    c = env.client
    body = {"kind": "catalog_refresh", "params": {"provider": "azure"}}
    r = c.post("/api/v1/jobs", json=body, headers=env.h("a_editor"))
    assert r.status_code == 403  # a refresh changes the prices every team sees
    assert c.post("/api/v1/jobs", json=body, headers=env.h("a_admin")).status_code == 202
    bad = c.post("/api/v1/jobs", json={"kind": "findings", "params": {"x": 1}}, headers=env.h("a_editor"))
    assert bad.status_code == 400 and "Unknown findings job parameter" in bad.json()["error"]["message"]
    ok = c.post("/api/v1/jobs", json={"kind": "findings", "params": {}}, headers=env.h("a_editor"))
    assert ok.status_code == 202, ok.text


def test_simulate_and_sweep_give_the_cli_documents() -> None:
    from gpufleet.report.simulation import render_simulation
    from gpufleet.simulate.spot import simulate_spot

    params = {"simulator": "spot", "model": "llama-3.1-8b", "tokens": 1e9, "runs": 10, "gpus": 8}
    doc, html = execute("simulate", check_params("simulate", params), lambda f, t: None)
    want = json.loads(
        render_simulation(simulate_spot(model="llama-3.1-8b", tokens=1e9, runs=10, gpus=8), "json")
    )
    assert doc == want and doc["kind"] == "simulation_spot"
    assert html is not None and "<html" in html
    sweep = {
        "kind": "spot",
        "base": {"model": "llama-3.1-8b", "tokens": 1e9, "runs": 5},
        "grid": {"gpus": [8, 16]},
    }
    seen: list[float] = []
    doc, _ = execute("sweep", check_params("sweep", sweep), lambda f, t: seen.append(f))
    assert doc["kind"] == "simulation_sweep" and [r[0] for r in doc["result"]["rows"]] == [8, 16]
    assert seen[-1] == 1.0


def _promserver() -> Any:
    spec = importlib.util.spec_from_file_location(
        "promserver", ROOT / "tests" / "telemetry" / "promserver.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


NOW_S = int(time.time()) // 60 * 60
START_S = NOW_S - 3 * 3600


def _openmetrics() -> str:
    lines = ["# TYPE DCGM_FI_PROF_SM_ACTIVE gauge"]
    for gpu in range(2):
        for k in range(120):
            lines.append(
                f'DCGM_FI_PROF_SM_ACTIVE{{gpu="{gpu}",UUID="GPU-{gpu}",Hostname="node-a",'
                f'modelName="NVIDIA H100 80GB HBM3"}} {0.02 if gpu == 0 else 0.6} {START_S + 60 * k}'
            )
    return "\n".join([*lines, "# EOF", ""])


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with _promserver().prometheus_with(_openmetrics(), tmp_path_factory.mktemp("prom")) as url:
        yield url


def test_a_scheduled_telemetry_pull_fills_the_team_store(
    sqlite_url: str, tmp_path: Path, prometheus: str
) -> None:
    from gpufleet.telemetry.store import TelemetryStore

    for env in make_env(sqlite_url, run_jobs=True, job_workers=1, telemetry_dir=tmp_path / "tele"):
        st = env.app.state.gpufleet
        st.clock = lambda: 1_000_000.0
        r = env.client.post(
            "/api/v1/schedules",
            json={
                "name": "pull",
                "cron": "*/5 * * * *",
                "kind": "telemetry_pull",
                "params": {"url": prometheus, "lookback_hours": 4},
            },
            headers=env.h("a_editor"),
        )
        assert r.status_code == 201, r.text
        [job_id] = scheduler.tick(st.sm, r.json()["next_due_unix_s"], "test")
        end = time.monotonic() + 120
        while time.monotonic() < end:
            job = env.client.get(f"/api/v1/jobs/{job_id}", headers=env.h("a_viewer")).json()
            if job["status"] not in ("queued", "running"):
                break
            time.sleep(0.2)
        assert job["status"] == "succeeded", job
        doc = env.client.get(f"/api/v1/jobs/{job_id}/result", headers=env.h("a_viewer")).json()
        # 2 GPUs x 120 samples, plus up to 5 min after the last one (Prometheus's staleness lookback repeats
        # the last value at each 60 s step of a range query that ends later, here at the pull's "now")
        assert doc["kind"] == "telemetry_ingest" and doc["report"]["gpus"] == 2
        assert 2 * 120 <= doc["report"]["rows_stored"] <= 2 * 125
        team_dirs = sorted(p.name for p in (tmp_path / "tele").iterdir())
        assert len(team_dirs) == 1 and not TelemetryStore(tmp_path / "tele" / team_dirs[0]).is_empty()


_SPOT_FULL: dict[str, Any] = {
    **SPOT,
    "gpu": "h100",
    "gpus": 8,
    "precision": "bf16",
    "task": "pretrain",
    "deadline_h": 48,
    "provider": "aws",
    "interval_h": 1,
    "runs": 100,
    "seed": 0,
    "regions": 3,
}
_JUNK: list[Any] = [
    None, True, 0, -1, -0.0, 1.5, 1e308, 10**30, "", "  ", "80GB", "nan", [], {}, "x" * 5000, "\uff48100",
    "2999-01-01", -1e-300,
]  # fmt: skip


@pytest.mark.parametrize("value", _JUNK, ids=[f"v{k}" for k in range(len(_JUNK))])
@pytest.mark.parametrize("key", sorted(set(_SPOT_FULL) - {"simulator"}))
def test_generated_spot_job_parameters(key: str, value: Any) -> None:
    """Every junk value of every spot job parameter is refused at submission with a one-paragraph
    GpufleetError (a 4xx), never another exception (a 500) and never accepted when it names nothing."""
    from gpufleet.errors import GpufleetError

    params = {**_SPOT_FULL, key: value}
    try:
        check_params("simulate", params)
    except GpufleetError as err:
        assert "Traceback" not in str(err) and str(err).strip()
        return
    # what may pass: a number that is a valid value of that option (1.5 h, 1e308 is refused above)
    assert isinstance(value, int | float) and not isinstance(value, bool), (key, value)
    assert key in ("tokens", "deadline_h", "interval_h", "seed"), (key, value)
