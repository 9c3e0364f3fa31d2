"""The heavy routes (recommend, migrate, regions, estimate/*) in worker processes (``route_processes`` > 0,
the service's default): the same answers as on a thread (bytes), the team's user catalogs, model paths
refused, errors mapped to the same 4xx, the time limit (504, and the worker really stopped and replaced),
a worker that dies (503, replaced, never a hang), and the workers gone when the service stops."""

from __future__ import annotations

import importlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpufleet.service import heavy
from gpufleet.service.errors import TimedOut
from gpufleet.service.limits import WorkerDied
from gpufleet.service.pool import ProcessPool

from .fixtures import Env, make_env

WORKLOAD = {"model": "llama-3.1-8b", "target_requests_per_s": 2, "ttft_p95_ms": 500, "tpot_p95_ms": 50}
ONPREM = Path("tests/data/user_catalogs/onprem.yaml")


@pytest.fixture
def penv(tmp_path: Path) -> Iterator[Env]:
    """One worker process (the fewest that shows the behaviour), a 20 s request limit."""
    yield from make_env(f"sqlite:///{tmp_path / 'p.sqlite3'}", route_processes=1, request_time_limit_s=20.0)


def _pool(env: Env) -> ProcessPool:
    pool = env.app.state.gpufleet.heavy.processes
    assert pool is not None
    return pool


def _pids(env: Env) -> list[int]:
    return _pool(env).pids()


def _workers(env: Env) -> list[Any]:
    """The pool's worker processes (multiprocessing.Process: joined, never reaped behind its back)."""
    return [w.proc for w in _pool(env)._all]


def _post(env: Env, path: str, body: dict[str, Any], who: str = "a_viewer") -> Any:
    return env.client.post(path, json=body, headers=env.h(who))


def _shipped() -> heavy.CatalogRef:
    """The shipped catalog as a route passes it (no refresh in the test's database)."""
    from gpufleet.service.catalog_version import version_for_job

    cat = version_for_job([])
    return cat.version, cat.describe()


CALLS: tuple[tuple[str, dict[str, Any], Any], ...] = (
    ("/api/v1/recommend", WORKLOAD, lambda: heavy.recommend_json(dict(WORKLOAD), None, 10, (), _shipped())),
    (
        "/api/v1/migrate",
        WORKLOAD | {"current": {"provider": "aws", "instance_type": "g5.xlarge", "count": 2}},
        None,
    ),
    ("/api/v1/regions", WORKLOAD, lambda: heavy.regions_json(dict(WORKLOAD), 25, (), _shipped())),
    (
        "/api/v1/estimate/memory",
        {"model": "llama-3.1-8b", "gpu": "H100"},
        None,
    ),
    ("/api/v1/estimate/infer", {"model": "llama-3.1-8b", "gpu": "H100"}, None),
    (
        "/api/v1/estimate/train",
        {"model": "llama-3.1-8b", "gpu": "H100-SXM", "gpu_count": 8, "dp": 8, "batch": 256},
        None,
    ),
)


def test_answers_are_byte_identical_to_the_thread_path_and_come_from_the_worker(
    penv: Env, env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``env`` runs the routes on threads (``route_processes`` 0), ``penv`` in a worker process."""
    (pid,) = _pids(penv)
    assert pid != os.getpid()
    for path, body, direct in CALLS:
        on_thread = _post(env, path, body)
        in_worker = _post(penv, path, body)
        assert in_worker.status_code == on_thread.status_code == 200, (path, in_worker.text)
        assert in_worker.content == on_thread.content, path
        if direct is not None:  # and the same as the library's JSON made here
            assert in_worker.text == direct()

    # a library function replaced in this process does not reach the worker: the answer is made there
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("ran in the service process")

    monkeypatch.setattr(importlib.import_module("gpufleet.recommend.api"), "recommend", broken)
    assert _post(penv, "/api/v1/recommend", WORKLOAD).status_code == 200
    assert _pids(penv) == [pid]  # one worker, reused


def test_user_errors_keep_their_status_type_and_message(penv: Env, env: Env, tmp_path: Path) -> None:
    config = tmp_path / "m" / "config.json"
    config.parent.mkdir()
    config.write_text('{"model_type": "llama"}')
    bad = (
        ("/api/v1/recommend", WORKLOAD | {"model": "no-such-model-xyz"}),
        ("/api/v1/recommend", WORKLOAD | {"model": str(config)}),  # a path: never read by the worker
        ("/api/v1/regions", WORKLOAD | {"model": "/etc/passwd"}),
        ("/api/v1/estimate/memory", {"model": "llama-3.1-8b", "gpu": "NO-SUCH-GPU"}),
        ("/api/v1/recommend", WORKLOAD | {"providers": ["nosuchcloud"]}),
    )
    for path, body in bad:
        want, got = _post(env, path, body), _post(penv, path, body)
        assert got.status_code == want.status_code, (path, got.text)
        assert 400 <= got.status_code < 500
        assert got.json() == want.json()
        assert "Traceback" not in got.text
    r = _post(penv, "/api/v1/recommend", WORKLOAD | {"model": str(config)})
    assert r.status_code == 404 and "does not read model config files" in r.json()["error"]["message"]


def test_the_team_catalogs_reach_the_worker_and_no_other_team(penv: Env, env: Env) -> None:
    body = {"model": "llama-3.1-8b", "target_requests_per_s": 2, "providers": ["onprem"]}
    for e in (env, penv):
        r = e.client.post(
            "/api/v1/catalogs",
            json={"name": "acme.yaml", "text": ONPREM.read_text()},
            headers=e.h("a_editor"),
        )
        assert r.status_code == 201, r.text
    for path in ("/api/v1/regions", "/api/v1/recommend"):
        mine = _post(penv, path, body)
        assert mine.status_code == 200, mine.text
        assert mine.content == _post(env, path, body).content
        assert "onprem" in mine.text
        other = _post(penv, path, body, who="b_admin")  # team b has no catalog: onprem is unknown to it
        assert other.status_code == 404 and "dc-frankfurt" not in other.text
        assert mine.content == _post(penv, path, body).content  # the team's table, now cached, same answer


def test_past_the_limit_a_504_and_the_worker_is_replaced(penv: Env) -> None:
    st = penv.app.state.gpufleet
    st.heavy.limit_s = 0.5
    (before,) = _workers(penv)
    t0 = time.monotonic()
    with pytest.raises(TimedOut, match=r"within the service's limit of 0\.5 s"):
        penv.client.portal.call(st.heavy.run, "POST /api/v1/recommend", time.sleep, 30.0)
    assert time.monotonic() - t0 < 5.0
    (after,) = _workers(penv)
    assert after.pid != before.pid and after.is_alive()
    assert not before.is_alive()  # the sleeping worker was killed, not left running
    st.heavy.limit_s = 20.0
    r = _post(penv, "/api/v1/recommend", WORKLOAD)
    assert r.status_code == 200, r.text
    assert st.heavy.timed_out == 1


def test_a_worker_that_dies_gives_a_503_and_is_replaced(penv: Env) -> None:
    st = penv.app.state.gpufleet
    (first,) = _pids(penv)
    t0 = time.monotonic()
    with pytest.raises(WorkerDied, match="worker process that died") as died:
        penv.client.portal.call(st.heavy.run, "POST /api/v1/recommend", os._exit, 3)
    assert died.value.status == 503
    assert "Retry the request" in str(died.value) and "exit code 3" in str(died.value)
    assert time.monotonic() - t0 < 30.0
    (second,) = _pids(penv)
    assert second != first
    assert _post(penv, "/api/v1/recommend", WORKLOAD).status_code == 200
    # a worker found dead while idle is replaced before it gets the request: no error at all
    (proc,) = _workers(penv)
    os.kill(second, signal.SIGKILL)
    proc.join(10.0)
    r = _post(penv, "/api/v1/recommend", WORKLOAD)
    assert r.status_code == 200, r.text
    assert _pids(penv)[0] not in (first, second)
    assert _pool(penv).replaced == 2


def test_workers_ignore_ctrl_c_and_stop_with_the_service(tmp_path: Path) -> None:
    gen = make_env(f"sqlite:///{tmp_path / 'q.sqlite3'}", route_processes=2)
    e = next(gen)
    assert _post(e, "/api/v1/estimate/memory", {"model": "llama-3.1-8b", "gpu": "H100"}).status_code == 200
    procs = _workers(e)
    assert len(procs) == 2
    for p in procs:
        assert p.pid is not None
        os.kill(p.pid, signal.SIGINT)  # as Ctrl+C in a terminal reaches the process group
    time.sleep(0.5)
    assert all(p.is_alive() for p in procs)
    with pytest.raises(StopIteration):
        next(gen)  # the service stops (lifespan end)
    assert not any(p.is_alive() for p in procs)
    assert not _pool(e).pids()


@pytest.mark.parametrize(
    "flag, size",
    [((), min(2, os.cpu_count() or 1)), (("--route-processes", "3"), 3), (("--route-processes", "0"), 0)],
)
def test_serve_sizes_the_pool_from_route_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: tuple[str, ...], size: int
) -> None:
    import uvicorn
    from typer.testing import CliRunner

    from gpufleet.cli.app import app as cli_app

    apps: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: apps.append(app))
    r = CliRunner().invoke(cli_app, ["serve", *flag, "--db", f"{tmp_path}/s.sqlite3"])
    assert r.exit_code == 0, r.output
    heavy_routes = apps[0].state.gpufleet.heavy
    assert (heavy_routes.processes.size if heavy_routes.processes else 0) == size


class _BadInWorker:
    """Pickles here, fails to unpickle in the worker (``int("x")`` runs there)."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (int, ("x",))


def test_a_call_the_worker_cannot_read_is_a_500_and_the_worker_lives_on(penv: Env) -> None:
    st = penv.app.state.gpufleet
    (pid,) = _pids(penv)
    with pytest.raises(RuntimeError, match="internal error \\(ValueError\\)"):
        penv.client.portal.call(st.heavy.run, "POST /api/v1/recommend", heavy.recommend_json, _BadInWorker())
    assert _pids(penv) == [pid] and _pool(penv).replaced == 0
    assert _post(penv, "/api/v1/recommend", WORKLOAD).status_code == 200
