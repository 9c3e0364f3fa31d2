"""A price API that accepts and never answers cannot hold `catalog update` beyond its network budget."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from gpufleet.catalog.fetch import azure
from gpufleet.catalog.fetch import http as fetch_http
from gpufleet.cli.app import app


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A TCP server on 127.0.0.1 that accepts connections and never sends a byte."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        srv.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
                held.append(conn)
            except OSError:
                continue

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.getsockname()[1]}/api/retail/prices"
    stop.set()
    t.join(timeout=2)
    for c in held:
        c.close()
    srv.close()


def test_silent_server_stops_at_budget(
    silent_server: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GPUFLEET_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(azure, "API_URL", silent_server, raising=False)
    monkeypatch.setattr(fetch_http, "TRANSPORT", None)
    t0 = time.monotonic()
    res = CliRunner().invoke(
        app, ["catalog", "update", "--provider", "azure", "--region", "eastus", "--network-budget", "1.5"]
    )
    elapsed = time.monotonic() - t0
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert "budget of 1.5 s" in res.output
    assert elapsed < 8
    assert not tmp_path.exists() or not any(tmp_path.rglob("*.csv"))


def test_budget_in_help() -> None:
    res = CliRunner().invoke(app, ["catalog", "update", "--help"], env={"COLUMNS": "200"})
    assert "--network-budget" in res.output and "Total network time" in res.output


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "inf", "1e9"])
def test_bad_budget_exit_2(bad: str) -> None:
    res = CliRunner().invoke(
        app, ["catalog", "update", "--provider", "azure", "--dry-run", "--network-budget", bad]
    )
    assert res.exit_code == 2 and "--network-budget" in res.output and "Traceback" not in res.output


def test_make_client_budget_spent() -> None:
    client = fetch_http.make_client(
        httpx.MockTransport(lambda r: httpx.Response(200, json={})), budget_s=0.01
    )
    time.sleep(0.02)
    with pytest.raises(fetch_http.FetchError, match="budget"):
        fetch_http.get_json(client, "http://x.invalid/", what="test API")
