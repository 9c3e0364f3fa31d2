"""A telemetry ingest killed with SIGKILL at any moment, or two ingests into one store at once, leave a
readable store holding either the old or the new data, never half (issue 26; as ``test_store_kill.py`` does
for ``catalog update``).

The store publishes a batch by replacing its manifest (written last, atomically); files a killed ingest left
are not in the manifest, are never read, and are removed by the next ingest (``gpufleet.telemetry.store``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpufleet.telemetry.store import TelemetryStore

ROOT = Path(__file__).parents[2]
T0_MS = 1_780_000_200_000


def _expo(first_minute: int, minutes: int, gpus: int) -> bytes:
    """dcgm-exporter text: ``gpus`` GPUs x ``minutes`` samples of one metric, from ``first_minute``."""
    return "".join(
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g % 8}",UUID="GPU-{g}",Hostname="node-{g // 8}"}} {g % 100} '
        f"{T0_MS + 60_000 * (first_minute + k)}\n"
        for k in range(minutes)
        for g in range(gpus)
    ).encode()


def _count(store: Path) -> int:
    """Samples in the store, read as a query reads them (manifest, file checks, DuckDB)."""
    con = TelemetryStore(store).connect()
    try:
        row = con.execute("SELECT count(*) FROM samples").fetchone()
    finally:
        con.close()
    assert row is not None
    return int(row[0])


def _ingest(path: Path, store: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    code = "from gpufleet.cli.entry import main; main()"
    return subprocess.Popen(
        [sys.executable, "-c", code, "telemetry", "ingest", str(path), "--store", str(store)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "GPUFLEET_DATA_DIR": str(tmp_path / "data")}


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_kill_9_during_ingest_leaves_old_or_new(tmp_path: Path, env: dict[str, str]) -> None:
    store = tmp_path / "store"
    old = tmp_path / "old.prom"
    old.write_bytes(_expo(0, 10, 16))  # 160 samples
    new = tmp_path / "new.prom"
    new.write_bytes(_expo(100, 400, 64))  # 25,600 samples: an ingest of ~1-2 s to kill inside
    res = subprocess.run(
        [sys.executable, "-c", "from gpufleet.cli.entry import main; main()", "telemetry", "ingest", str(old),
         "--store", str(store)],
        env=env, capture_output=True, check=False, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr.decode()[-800:]
    before = _count(store)
    assert before == 160
    outcomes = []
    for delay in (0.3, 0.6, 0.9, 1.2, 1.6, 2.2):  # from interpreter start-up to the manifest switch
        proc = _ingest(new, store, env)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        n = _count(store)  # readable after every kill ...
        assert n in (before, before + 25_600), (delay, n)  # ... holding the old or the new data, never half
        outcomes.append(n)
        if n != before:
            break
    # the next ingest works, cleans what the killed ones left, and stores the new data exactly once
    res = subprocess.run(
        [sys.executable, "-c", "from gpufleet.cli.entry import main; main()", "telemetry", "ingest", str(new),
         "--store", str(store)],
        env=env, capture_output=True, check=False, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr.decode()[-800:]
    assert _count(store) == before + 25_600
    assert not list(store.glob(".staging-*"))
    live = {p["file"] for p in TelemetryStore(store).manifest()["parts"]}
    on_disk = {str(p.relative_to(store)) for p in (store / "samples").rglob("*.parquet")}
    assert on_disk == live, "files of a killed ingest were left behind"


def test_two_concurrent_ingests_into_one_store(tmp_path: Path, env: dict[str, str]) -> None:
    """Both started at once: each either stores its batch whole or exits 2 saying another ingest is
    writing; the store then holds exactly the batches that succeeded."""
    store = tmp_path / "store"
    a, b = tmp_path / "a.prom", tmp_path / "b.prom"
    a.write_bytes(_expo(0, 200, 32))  # 6,400 samples
    b.write_bytes(_expo(1000, 200, 32))
    procs = [_ingest(a, store, env), _ingest(b, store, env)]
    results = [(p.wait(timeout=120), p.stdout.read().decode() + p.stderr.read().decode()) for p in procs]  # type: ignore[union-attr]
    for code, out in results:
        assert "Traceback" not in out, out[-1500:]
        assert code == 0 or (code == 2 and "Another gpufleet ingest is writing" in out), out[-800:]
    stored = sum(code == 0 for code, _ in results)
    assert stored >= 1
    assert _count(store) == 6_400 * stored
