"""Load test of `gpufleet serve` on this machine, beside the same calls in process.

Starts `gpufleet serve` (uvicorn, one process, a fresh SQLite file, no rate limit: all clients share one admin
token) on 127.0.0.1 only, takes the admin token it prints (its log goes to a file: a pipe nobody reads would
fill after ~64 KiB of access log and stall the server), then drives it with ``--clients`` keep-alive HTTP/1.1
clients on asyncio streams for ``--seconds``. Each client loops: a catalog query (GET
/api/v1/catalog/offers, four filter sets in turn) or, one call in ``--recommend-every``, a recommend (POST
/api/v1/recommend). Two load models:

- ``--think-s 0`` (closed loop): each client sends its next request as soon as the last one is answered. The
  clients always have a request in flight, so by Little's law the mean latency is ``clients / throughput``:
  at 200 clients a p99 of 150 ms needs well over 1,300 answers per second.
- ``--think-s 1`` (users): each client waits a random time, uniform between 0.5x and 1.5x the mean, between
  requests (Locust's ``between(0.5, 1.5)``), so 200 users offer at most ~200 requests per second.

``--distinct-queries`` gives every catalog request its own filter values (offset and price cap vary), so the
service's answer cache never hits: the cost of a query computed afresh.

Reports per route: requests, errors, throughput [requests/s], p50/p95/p99 latency [ms]; the service's CPU
time per request [ms] (from /proc, user + system); its resident memory [MiB]; the 1-minute load average
before and after (the figures depend on it: label them with it); the same calls in process (median of 20).

CPU and memory are the service's plus its children's: the route worker processes that compute recommend,
migrate, regions and estimates (``--route-processes``, default min(2, CPUs); 0 puts them back on threads of
the service, for an A/B), and job processes while jobs run.

``--soak-minutes M`` then runs the same load for M more minutes in the same service, sampling the RSS of the
service and of its workers every ``--sample-s`` (30 s), and prints the least-squares slope over the last 5
minutes [MiB/min]. ``--jobs N`` submits N plan jobs (a one-workload fleet, quick to plan) and times the queue
draining with ``--job-workers`` worker processes; every job must end succeeded, and none may be lost.

The README "Service" load row, exactly (200 users with a think time of 0.5-1.5 s, one recommend in 20, 45 s
measured after a 3 s warm-up, then the 10-minute soak; ~12 minutes; note the 1-minute load it prints: the
latencies depend on what else the machine runs):

    PYTHONPATH=src .venv/bin/python benchmarks/bench_service.py --readme

Other runs:

    .venv/bin/python benchmarks/bench_service.py [--clients 200] [--seconds 20] [--think-s 0] [--jobs 20]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

QUERIES: tuple[dict[str, str | int], ...] = (
    {"gpu": "H100", "limit": 50},
    {"gpu": "A100", "provider": "aws,gcp,azure", "limit": 20, "sort": "price"},
    {"geo": "eu", "spot": "true", "limit": 50},
    {"min_gpu_memory_gib": 80, "gpus": 8, "limit": 100, "offset": 20},
)
RECOMMEND = {"model": "llama-3.1-8b", "target_requests_per_s": 2, "ttft_p95_ms": 500, "tpot_p95_ms": 50}
#: the plan job of the queue drain: one small inference workload (a plan takes ~1 s of CPU)
SMALL_FLEET: dict[str, Any] = {
    "name": "bench-small",
    "workloads": {
        "svc": {
            "resources": {"gpus": ["L4", "A10G"], "gpus_per_replica": 1, "replicas": 2},
            "demand": {"schedule": "24/7"},
        }
    },
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _cpu_s(pid: int) -> float:
    """User + system CPU time of a process [s] (fields 14-15 of /proc/PID/stat, in clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (the service's route workers; job processes while jobs run)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d.name))
    return out


def _tree_rss_mib(pid: int) -> tuple[float, float]:
    """(the service's RSS, its children's RSS summed) [MiB]."""
    kids = 0.0
    for c in _children(pid):
        with contextlib.suppress(OSError):  # ended meanwhile
            kids += _rss_mib(c)
    return _rss_mib(pid), kids


def _tree_cpu_s(pid: int, seen: dict[int, float]) -> float:
    """CPU time [s] of the service and of its children, ``seen`` keeping each child's last reading (a child
    that ends keeps what it had spent when last read)."""
    for c in _children(pid):
        with contextlib.suppress(OSError):
            seen[c] = _cpu_s(c)
    return _cpu_s(pid) + sum(seen.values())


def _slope_mib_per_min(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MiB) samples [MiB/min]."""
    if len(samples) < 2:
        return float("nan")
    n = len(samples)
    mt = sum(t for t, _ in samples) / n
    mr = sum(r for _, r in samples) / n
    den = sum((t - mt) ** 2 for t, _ in samples)
    return 60.0 * sum((t - mt) * (r - mr) for t, r in samples) / den if den else float("nan")


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def in_process() -> dict[str, float]:
    """Median wall time [ms] of the same calls made in process (library, JSON text; no HTTP, no cache)."""
    from gpufleet.catalog.listing import offer_rows, query_offers
    from gpufleet.catalog.offers import load_offers
    from gpufleet.recommend.api import recommend
    from gpufleet.recommend.filters import split_values
    from gpufleet.report import render_text
    from gpufleet.report.json_report import envelope

    def catalog() -> None:
        q = QUERIES[0]
        rows = offer_rows(query_offers(load_offers(), gpus=split_values(str(q["gpu"]))).take(slice(0, 50)))
        json.dumps(envelope("offers", offers=rows))

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


class Load:
    """Latencies [ms] by route, and what went wrong, by exception or HTTP status."""

    def __init__(self) -> None:
        self.lat: dict[str, list[float]] = {"catalog offers": [], "recommend": []}
        self.errors: dict[str, int] = {}

    def error(self, kind: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1


class Conn:
    """One keep-alive HTTP/1.1 connection (the load driver's client: a few lines of asyncio, so that the
    driver, which shares the cores with the service, spends far less CPU per request than httpx would)."""

    def __init__(self, host: str, port: int, token: str) -> None:
        self.host, self.port, self.token = host, port, token
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Authorization: Bearer {self.token}\r\nAccept: application/json\r\n"
        )
        if body:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        try:
            self.writer.write(head.encode() + b"\r\n" + body)
            status_line = await self.reader.readline()
            if not status_line:
                raise ConnectionError("the server closed the connection")
            status = int(status_line.split()[1])
            length, close = -1, False
            while True:
                line = await self.reader.readline()
                if line in (b"\r\n", b""):
                    break
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    length = int(value)
                elif name == b"connection" and value.strip().lower() == b"close":
                    close = True
                elif name == b"transfer-encoding":
                    raise ConnectionError("chunked answers are not expected here")
            data = await self.reader.readexactly(length) if length >= 0 else await self.reader.read()
        except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
            self.close()
            raise
        if close:
            self.close()
        return status, data

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


async def drive(
    base: str,
    token: str,
    clients: int,
    seconds: float,
    every: int,
    think_s: float = 0.0,
    distinct: bool = False,
    on_tick: Any = None,
    tick_s: float = 30.0,
) -> Load:
    from urllib.parse import urlencode, urlsplit

    load = Load()
    url = urlsplit(base)
    rng = random.Random(1)
    rec_body = json.dumps(RECOMMEND).encode()
    end = time.monotonic() + seconds

    async def client(i: int) -> None:
        conn = Conn(url.hostname or "127.0.0.1", url.port or 80, token)
        n = i
        if think_s:  # users arrive spread over one think time, not all at once
            await asyncio.sleep(rng.uniform(0, think_s))
        while time.monotonic() < end:
            n += 1
            t = time.perf_counter()
            name = "catalog offers"
            try:
                if every and n % every == 0:
                    name = "recommend"
                    async with asyncio.timeout(60):
                        status, _ = await conn.request("POST", "/api/v1/recommend", rec_body)
                else:
                    params: dict[str, str | int | float] = dict(QUERIES[n % len(QUERIES)])
                    if distinct:  # a query never asked before: computed afresh
                        params["offset"] = rng.randrange(0, 500)
                        params["max_price_usd_per_hour"] = round(rng.uniform(50, 500), 3)
                    path = "/api/v1/catalog/offers?" + urlencode(params)
                    async with asyncio.timeout(60):
                        status, _ = await conn.request("GET", path)
            except (OSError, asyncio.IncompleteReadError, ValueError, IndexError, TimeoutError) as exc:
                conn.close()
                load.error(type(exc).__name__)
            else:
                if status == 200:
                    load.lat[name].append((time.perf_counter() - t) * 1000)
                else:
                    load.error(f"HTTP {status}")
            if think_s:
                await asyncio.sleep(rng.uniform(0.5 * think_s, 1.5 * think_s))
        conn.close()

    async def ticker() -> None:
        while on_tick is not None and time.monotonic() < end:
            on_tick()
            await asyncio.sleep(tick_s)

    await asyncio.gather(ticker(), *(client(i) for i in range(clients)))
    return load


def drain(base: str, token: str, jobs: int) -> dict[str, Any]:
    """Submit ``jobs`` plan jobs, wait until none is queued or running; what became of each."""
    h = {"Authorization": f"Bearer {token}"}
    t = time.monotonic()
    with httpx.Client(base_url=base, headers=h, timeout=300) as c:
        ids = set()
        for i in range(jobs):
            r = c.post("/api/v1/plan", json={"fleet": SMALL_FLEET, "source": f"bench-{i}.yaml"})
            r.raise_for_status()
            ids.add(r.json()["id"])
        submitted_s = time.monotonic() - t
        while True:
            open_ = sum(
                c.get("/api/v1/jobs", params={"status": s, "limit": 1}).json()["total"]
                for s in ("queued", "running")
            )
            if open_ == 0:
                break
            time.sleep(1.0)
        seconds = time.monotonic() - t
        seen: dict[int, str] = {}
        offset = 0
        while True:
            page = c.get("/api/v1/jobs", params={"limit": 500, "offset": offset}).json()
            seen |= {j["id"]: j["status"] for j in page["jobs"]}
            offset += 500
            if offset >= page["total"]:
                break
    counts: dict[str, int] = {}
    for i in ids:
        s = seen.get(i, "lost")
        counts[s] = counts.get(s, 0) + 1
    return {"seconds": seconds, "submitted_s": submitted_s, "counts": counts, "lost": counts.get("lost", 0)}


def start_server(
    tmp: Path, job_workers: int, route_processes: int | None = None
) -> tuple[subprocess.Popen[bytes], str, str]:
    port = _free_port()
    log = (tmp / "serve.log").open("wb")
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
            str(job_workers),
            *(() if route_processes is None else ("--route-processes", str(route_processes))),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=os.environ | {"PYTHONUNBUFFERED": "1"},
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(600):
        if proc.poll() is not None:
            raise SystemExit("the service did not start:\n" + (tmp / "serve.log").read_text()[-2000:])
        m = re.search(r"(gpf_\S+)", (tmp / "serve.log").read_text())
        if m:
            try:
                httpx.get(base + "/healthz", timeout=1)
                return proc, m.group(1), base
            except httpx.HTTPError:
                pass
        time.sleep(0.1)
    raise SystemExit("the service did not answer within 60 s")


def report(load: Load, wall_s: float, cpu_s: float, local: dict[str, float], label: str) -> None:
    n_all = sum(len(v) for v in load.lat.values()) + sum(load.errors.values())
    print(f"# {label}")
    print("| route | requests | req/s | p50 ms | p95 ms | p99 ms | in process (median ms) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, v in load.lat.items():
        if v:
            print(
                f"| {name} | {len(v)} | {len(v) / wall_s:.1f} | {_pct(v, 0.5):.0f} | {_pct(v, 0.95):.0f} | "
                f"{_pct(v, 0.99):.0f} | {local[name]:.1f} |"
            )
    print(f"errors (non-200 or transport): {sum(load.errors.values())} {load.errors or ''}")
    per_ms = 1000 * cpu_s / max(n_all, 1)
    print(
        f"service CPU (its route workers included): {cpu_s:.1f} s over {wall_s:.1f} s, "
        f"{per_ms:.2f} ms per request"
    )


def _commit() -> str:
    """The checked-out commit (short), for the row's code column."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True, timeout=10
        )
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


def readme_row(
    load: Load,
    wall_s: float,
    cpu_s: float,
    main_cpu_s: float,
    loads: tuple[float, float],
    soak: dict[str, Any],
) -> str:
    """The README "Service" table row of a ``--readme`` run (its columns), then the soak's memory."""
    cat, rec = load.lat["catalog offers"], load.lat["recommend"]
    n_all = max(1, sum(len(v) for v in load.lat.values()) + sum(load.errors.values()))
    errors = sum(load.errors.values()) + soak["errors"]
    cells = [
        f"200 users, think time 0.5-1.5 s, {wall_s:.0f} s, then {soak['minutes']:g} minutes "
        "(`bench_service.py --readme`)",
        _commit(),
        f"{loads[0]:.1f}-{loads[1]:.1f}",
        f"{len(cat) / wall_s:.1f}",
        f"{_pct(cat, 0.5):.0f} / {_pct(cat, 0.99):,.0f} (p95 {_pct(cat, 0.95):,.0f})",
        f"{_pct(rec, 0.99):,.0f} (p50 {_pct(rec, 0.5):,.0f})",
        str(errors),
        f"{1000 * cpu_s / n_all:.1f} ms (service process {1000 * main_cpu_s / n_all:.2f})",
    ]
    return (
        "| " + " | ".join(cells) + " |\n"
        f"memory over the soak: {soak['rss_first']:.0f} -> {soak['rss_end']:.0f} MiB (service + route "
        f"workers), {soak['slope_last5']:+.2f} MiB/min over the last 5 minutes"
    )


def soak(proc: subprocess.Popen[bytes], base: str, token: str, args: argparse.Namespace) -> dict[str, Any]:
    """``--soak-minutes`` of the same load, RSS of the service and of its workers every ``--sample-s``."""
    samples: list[tuple[float, float, float, float]] = []  # (s, service MiB, workers MiB, 1-min load)
    t0 = time.monotonic()

    def tick() -> None:
        svc, kids = _tree_rss_mib(proc.pid)
        samples.append((time.monotonic() - t0, svc, kids, os.getloadavg()[0]))

    load = asyncio.run(
        drive(
            base,
            token,
            args.clients,
            args.soak_minutes * 60,
            args.recommend_every,
            args.think_s,
            args.distinct_queries,
            tick,
            args.sample_s,
        )
    )
    tick()
    last = [(t, svc + kids) for t, svc, kids, _ in samples if t >= samples[-1][0] - 300.0]
    print(f"# soak: {args.soak_minutes:g} min, RSS every {args.sample_s:g} s [MiB]")
    print("service:         " + " ".join(f"{r:.0f}" for _, r, _, _ in samples))
    print("route workers:   " + " ".join(f"{k:.0f}" for _, _, k, _ in samples))
    print("1-min load:      " + " ".join(f"{la:.1f}" for _, _, _, la in samples))
    slope = _slope_mib_per_min(last)
    slope_svc = _slope_mib_per_min([(t, svc) for t, svc, _, _ in samples if t >= samples[-1][0] - 300.0])
    print(
        f"slope over the last 5 min: {slope:+.2f} MiB/min (service + workers), {slope_svc:+.2f} MiB/min "
        f"(service alone); {sum(len(v) for v in load.lat.values())} answers, "
        f"{sum(load.errors.values())} errors {load.errors or ''}"
    )
    for name, v in load.lat.items():
        if v:
            print(f"soak {name}: p50 {_pct(v, 0.5):.0f} ms, p99 {_pct(v, 0.99):.0f} ms")
    return {
        "minutes": args.soak_minutes,
        "errors": sum(load.errors.values()),
        "rss_first": samples[0][1] + samples[0][2],
        "rss_end": samples[-1][1] + samples[-1][2],
        "slope_last5": slope,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--think-s", type=float, default=0.0, help="mean think time per client [s] (0: none)")
    ap.add_argument("--distinct-queries", action="store_true", help="no two catalog queries alike")
    ap.add_argument("--recommend-every", type=int, default=20, help="one recommend per N calls (0: none)")
    ap.add_argument("--soak-minutes", type=float, default=0.0, help="then a long run sampling RSS")
    ap.add_argument("--sample-s", type=float, default=30.0, help="RSS sample interval of the soak [s]")
    ap.add_argument("--jobs", type=int, default=0, help="plan jobs to queue and drain afterwards")
    ap.add_argument("--job-workers", type=int, default=2)
    ap.add_argument(
        "--route-processes",
        type=int,
        default=None,
        help="the service's --route-processes (0: heavy routes on threads; default: the service's)",
    )
    ap.add_argument(
        "--readme",
        action="store_true",
        help="the README row: --clients 200 --think-s 1 --seconds 45 --soak-minutes 10 --recommend-every 20",
    )
    args = ap.parse_args()
    if args.readme:
        args.clients, args.think_s, args.seconds, args.soak_minutes = 200, 1.0, 45.0, 10.0
        args.recommend_every, args.distinct_queries = 20, False
    load_before = os.getloadavg()[0]
    local = in_process()
    tmp = Path(tempfile.mkdtemp(prefix="gpufleet-bench-"))
    proc, token, base = start_server(tmp, args.job_workers, args.route_processes)
    try:
        rss_start = _tree_rss_mib(proc.pid)
        asyncio.run(drive(base, token, min(args.clients, 20), 3.0, args.recommend_every))  # warm-up
        rss_warm = _tree_rss_mib(proc.pid)
        model = f"think time {args.think_s:g} s mean" if args.think_s else "closed loop, no think time"
        if args.distinct_queries:
            model += ", every catalog query distinct (no cache hit)"
        seen: dict[int, float] = {}
        main0 = _cpu_s(proc.pid)
        cpu0, t, own0 = _tree_cpu_s(proc.pid, seen), time.monotonic(), time.process_time()
        load = asyncio.run(
            drive(
                base,
                token,
                args.clients,
                args.seconds,
                args.recommend_every,
                args.think_s,
                args.distinct_queries,
            )
        )
        wall = time.monotonic() - t
        cpu = _tree_cpu_s(proc.pid, seen) - cpu0
        main_cpu = _cpu_s(proc.pid) - main0
        own = time.process_time() - own0
        load_after = os.getloadavg()[0]
        label = (
            f"gpufleet serve under load: {args.clients} clients ({model}) for {args.seconds:g} s, 127.0.0.1, "
            f"{os.cpu_count()} cores; 1-min load {load_before:.1f} before, {load_after:.1f} after"
        )
        report(load, wall, cpu, local, label)
        n_all = sum(len(v) for v in load.lat.values()) + sum(load.errors.values())
        print(
            f"of which the service process itself (event loop, catalog, tokens): {main_cpu:.1f} s, "
            f"{1000 * main_cpu / max(n_all, 1):.2f} ms per request"
        )
        print(f"driver CPU: {own:.1f} s (this process, sharing the cores)")
        rss_end = _tree_rss_mib(proc.pid)
        print(
            "memory [MiB] (service + route workers): "
            + ", ".join(
                f"{a:.0f} + {b:.0f} {when}"
                for (a, b), when in (
                    (rss_start, "at start"),
                    (rss_warm, "after warm-up"),
                    (rss_end, "at end"),
                )
            )
        )
        if args.soak_minutes:
            s = soak(proc, base, token, args)
            if args.readme:
                print("README row:")
                print(readme_row(load, wall, cpu, main_cpu, (load_before, load_after), s))
        if args.jobs:
            d = drain(base, token, args.jobs)
            print(
                f"{args.jobs} plan jobs (one-workload fleet) submitted in {d['submitted_s']:.1f} s, "
                f"drained in {d['seconds']:.1f} s with {args.job_workers} workers: {d['counts']}; "
                f"lost: {d['lost']}; "
                f"1-min load at end {os.getloadavg()[0]:.1f}"
            )
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    main()
