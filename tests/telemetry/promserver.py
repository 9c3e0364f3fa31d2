"""A real Prometheus for the tests: an OpenMetrics text backfilled with ``promtool tsdb create-blocks-from
openmetrics``, then ``prometheus`` started on 127.0.0.1 with that storage (the Debian package, installed by
tools/system-deps.sh). Skips the test where the binaries are missing."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def prometheus_with(openmetrics: str, d: Path, *, timeout_s: float = 300) -> Iterator[str]:
    """The URL of a Prometheus serving ``openmetrics`` (ends with ``# EOF``), stopped on exit."""
    prom, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if prom is None or promtool is None:
        pytest.skip(
            "prometheus/promtool are not installed and could not be (tools/system-deps.sh needs root and apt)"
        )
    (d / "data.om").write_text(openmetrics, encoding="utf-8")
    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(d / "data.om"), str(d / "tsdb")],
        check=True,
        capture_output=True,
        timeout=timeout_s,
    )
    (d / "prometheus.yml").write_text("global:\n  scrape_interval: 1m\n", encoding="utf-8")
    port = free_port()
    proc = subprocess.Popen(
        [
            prom,
            f"--config.file={d / 'prometheus.yml'}",
            f"--storage.tsdb.path={d / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{url}/-/ready", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        else:
            pytest.fail("Prometheus did not become ready within 60 s")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
