"""A real Prometheus: backfilled from an OpenMetrics fixture with promtool, started on 127.0.0.1 with its own
storage, and queried over HTTP by gpufleet. Also a Prometheus that is down, slow or answers an error."""

from __future__ import annotations

import contextlib
import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpufleet.errors import FetchError
from gpufleet.telemetry.ingest import ingest_prometheus
from gpufleet.telemetry.store import TelemetryStore

from .promserver import free_port, prometheus_with

NOW_S = int(time.time()) // 60 * 60
START_S = NOW_S - 3 * 3600  # inside Prometheus's default 15-day retention


def _openmetrics() -> str:
    lines = [
        "# HELP DCGM_FI_PROF_SM_ACTIVE The ratio of cycles an SM has at least 1 warp assigned.",
        "# TYPE DCGM_FI_PROF_SM_ACTIVE gauge",
    ]
    for gpu in range(2):
        for k in range(120):
            v = 0.02 if gpu == 0 else 0.6
            lines.append(
                f'DCGM_FI_PROF_SM_ACTIVE{{gpu="{gpu}",UUID="GPU-{gpu}",Hostname="node-a",'
                f'modelName="NVIDIA H100 80GB HBM3"}} {v} {START_S + 60 * k}'
            )
    lines += [
        "# HELP dcgm_fi_dev_fb_used Framebuffer memory used (in MiB).",
        "# TYPE dcgm_fi_dev_fb_used gauge",
    ]
    for k in range(120):
        lines.append(
            f'dcgm_fi_dev_fb_used{{gpu="1",uuid="GPU-1",hostname="node-a"}} 40000 {START_S + 60 * k}'
        )
    return "\n".join([*lines, "# EOF", ""])


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with prometheus_with(_openmetrics(), tmp_path_factory.mktemp("prom")) as url:
        yield url


def test_ingest_from_live_prometheus(prometheus: str, tmp_path: Path) -> None:
    store = TelemetryStore(tmp_path)
    r = ingest_prometheus(prometheus, start_s=START_S, end_s=START_S + 119 * 60, step_s=60, store=store)
    assert r.rows_stored == 3 * 120 and r.gpus == 2
    con = store.connect()
    rows = dict(
        con.execute("SELECT gpu_key || ' ' || metric, avg(value) FROM samples_l GROUP BY 1").fetchall()
    )
    assert rows == {
        "GPU-0 sm_active_ratio": pytest.approx(0.02),
        "GPU-1 sm_active_ratio": pytest.approx(0.6),
        "GPU-1 fb_used_mib": pytest.approx(40000),
    }
    again = ingest_prometheus(prometheus, start_s=START_S, end_s=START_S + 119 * 60, step_s=60, store=store)
    assert again.rows_stored == 0 and {p.kind for p in again.problems} == {"duplicate_sample"}


def test_prometheus_down() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(FetchError, match="cannot be reached"):
        ingest_prometheus(
            url, start_s=START_S, end_s=NOW_S, step_s=60, store=TelemetryStore("/nonexistent-unused")
        )


class _Handler(http.server.BaseHTTPRequestHandler):
    delay_s = 0.0
    body = b'{"status":"error","errorType":"bad_data","error":"exceeded maximum resolution"}'

    def do_GET(self) -> None:
        time.sleep(self.delay_s)
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
            self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def fake_server() -> Iterator[tuple[str, type[_Handler]]]:
    handler = type("H", (_Handler,), {})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", handler
    finally:
        srv.shutdown()
        srv.server_close()


def test_prometheus_slow(fake_server: tuple[str, type[_Handler]]) -> None:
    url, handler = fake_server
    handler.delay_s = 2.0
    with pytest.raises(FetchError, match=r"did not answer within 0\.3 s"):
        ingest_prometheus(
            url,
            start_s=START_S,
            end_s=NOW_S,
            step_s=60,
            timeout_s=0.3,
            store=TelemetryStore("/nonexistent-unused"),
        )


def test_prometheus_error_answer(fake_server: tuple[str, type[_Handler]]) -> None:
    url, _ = fake_server
    with pytest.raises(FetchError, match=r"refused the query.*exceeded maximum resolution"):
        ingest_prometheus(
            url, start_s=START_S, end_s=NOW_S, step_s=60, store=TelemetryStore("/nonexistent-unused")
        )
