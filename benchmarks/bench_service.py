"""Load test of `gpufleet serve` on this machine, beside the same calls in process.

Starts `gpufleet serve` (uvicorn, one process, a fresh SQLite file, no rate limit) on 127.0.0.1 only, takes
the admin token it prints, then drives it with ``--clients`` concurrent async httpx clients for ``--seconds``:
each client loops over catalog queries (GET /api/v1/catalog/offers, a few filter sets) and, one call in
``--recommend-every``, a recommend (POST /api/v1/recommend). Reports per route: requests, errors, p50/p95/p99
latency [ms] and throughput [requests/s]; the service's resident memory [MiB] at start, after warm-up and at
the end; and the 1-minute load average before and after (the figures depend on it: label them with it). The
same catalog query and recommend run in process first (median of 20) for the side-by-side.

``--jobs N`` then submits N plan jobs (the assessment-platform fleet) and times the queue draining with
``--job-workers`` worker processes; every job must succeed.

    .venv/bin/python benchmarks/bench_service.py [--clients 200] [--seconds 20] [--jobs 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parent.parent
FLEET = ROOT / "examples" / "fleets" / "assessment-platform.yaml"
QUERIES: tuple[dict[str, str | int], ...] = (
    {"gpu": "H100", "limit": 50},
    {"gpu": "A100", "provider": "aws,gcp,azure", "limit": 20, "sort": "price"},
    {"geo": "eu", "spot": "true", "limit": 50},
    {"min_gpu_memory_gib": 80, "gpus": 8, "limit": 100, "offset": 20},
)
#: what went wrong, by exception or HTTP status
ERROR_KINDS: dict[str, int] = {}
RECOMMEND = {"model": "llama-3.1-8b", "target_requests_per_s": 2, "ttft_p95_ms": 500, "tpot_p95_ms": 50}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def in_process() -> dict[str, float]:
    """Median wall time [ms] of the same calls made in process (library, no HTTP)."""
    from gpufleet.catalog.listing import offer_rows, query_offers
    from gpufleet.catalog.offers import load_offers
    from gpufleet.recommend.api import recommend
    from gpufleet.recommend.filters import split_values
    from gpufleet.report import render_text

    def catalog() -> None:
        q = QUERIES[0]
        offer_rows(query_offers(load_offers(), gpus=split_values(str(q["gpu"]))).take(slice(0, 50)))

    def rec() -> None:
        render_text(recommend(dict(RECOMMEND)), "json")

    out = {}
    for name, fn in (("catalog offers", catalog), ("recommend", rec)):
        fn()
        times = []
        for _ in range(20):
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1000)
        out[name] = statistics.median(times)
    return out


async def drive(base: str, token: str, clients: int, seconds: float, every: int) -> dict[str, list[float]]:
    lat: dict[str, list[float]] = {"catalog offers": [], "recommend": [], "errors": []}
    kinds = ERROR_KINDS
    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=60) as c:
        end = time.monotonic() + seconds

        async def client(i: int) -> None:
            n = i
            while time.monotonic() < end:
                n += 1
                t = time.perf_counter()
                try:
                    if every and n % every == 0:
                        r = await c.post("/api/v1/recommend", json=RECOMMEND)
                        name = "recommend"
                    else:
                        r = await c.get("/api/v1/catalog/offers", params=QUERIES[n % len(QUERIES)])
                        name = "catalog offers"
                    ok = r.status_code == 200
                except httpx.HTTPError as exc:
                    ok, name = False, "errors"
                    kinds[type(exc).__name__] = kinds.get(type(exc).__name__, 0) + 1
                else:
                    if not ok:
                        kinds[f"HTTP {r.status_code}"] = kinds.get(f"HTTP {r.status_code}", 0) + 1
                ms = (time.perf_counter() - t) * 1000
                lat[name if ok else "errors"].append(ms)

        await asyncio.gather(*(client(i) for i in range(clients)))
    return lat


def drain(base: str, token: str, jobs: int) -> tuple[float, dict[str, int]]:
    fleet = yaml.safe_load(FLEET.read_text())
    h = {"Authorization": f"Bearer {token}"}
    t = time.monotonic()
    with httpx.Client(base_url=base, headers=h, timeout=300) as c:
        ids = [
            c.post("/api/v1/plan", json={"fleet": fleet, "source": f"bench-{i}.yaml"}).json()["id"]
            for i in range(jobs)
        ]
        while True:
            page = c.get("/api/v1/jobs", params={"limit": 500}).json()
            status = [j["status"] for j in page["jobs"] if j["id"] in ids]
            if all(s in ("succeeded", "failed", "cancelled") for s in status) and len(status) == len(ids):
                break
            time.sleep(0.5)
    counts: dict[str, int] = {}
    for s in status:
        counts[s] = counts.get(s, 0) + 1
    return time.monotonic() - t, counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--recommend-every", type=int, default=20, help="one recommend per N calls (0: none)")
    ap.add_argument("--jobs", type=int, default=0, help="plan jobs to queue and drain afterwards")
    ap.add_argument("--job-workers", type=int, default=2)
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    local = in_process()
    port = _free_port()
    tmp = Path(tempfile.mkdtemp(prefix="gpufleet-bench-"))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from gpufleet.cli.entry import main; main()",
            "serve",
            "--port",
            str(port),
            "--db",
            str(tmp / "bench.sqlite3"),
            "--rate-limit",
            "0",
            "--job-workers",
            str(args.job_workers),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=os.environ | {"PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    try:
        text = ""
        while "admin token" not in text:
            line = proc.stdout.readline()
            if not line:
                raise SystemExit("the service did not start")
            text += line
        m = re.search(r"(gpf_\S+)", text)
        assert m
        token, base = m.group(1), f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                httpx.get(base + "/healthz", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        rss_start = _rss_mib(proc.pid)
        asyncio.run(drive(base, token, min(args.clients, 20), 3.0, args.recommend_every))  # warm-up
        rss_warm = _rss_mib(proc.pid)
        t = time.monotonic()
        lat = asyncio.run(drive(base, token, args.clients, args.seconds, args.recommend_every))
        wall = time.monotonic() - t
        rss_end = _rss_mib(proc.pid)
        print(
            f"# gpufleet serve under load: {args.clients} clients for {args.seconds:g} s, 127.0.0.1, "
            f"{os.cpu_count()} cores; 1-min load {load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
        )
        print("| route | requests | errors | req/s | p50 ms | p95 ms | p99 ms | in process (median ms) |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name in ("catalog offers", "recommend"):
            v = lat[name]
            print(
                f"| {name} | {len(v)} | - | {len(v) / wall:.1f} | {_pct(v, 0.5):.0f} | {_pct(v, 0.95):.0f} | "
                f"{_pct(v, 0.99):.0f} | {local[name]:.1f} |"
            )
        print(f"errors (non-200 or transport): {len(lat['errors'])} {ERROR_KINDS or ''}")
        print(
            f"service memory [MiB]: {rss_start:.0f} at start, {rss_warm:.0f} after warm-up, "
            f"{rss_end:.0f} at end"
        )
        if args.jobs:
            seconds, counts = drain(base, token, args.jobs)
            print(
                f"{args.jobs} plan jobs drained in {seconds:.1f} s with {args.job_workers} workers: {counts}"
            )
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    main()
