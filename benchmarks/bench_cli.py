"""End-to-end CLI latency: a fresh `gpufleet` process per run, interpreter start included.

The project's target for a command that lists, estimates or recommends is about 0.2 s end to end on an idle
machine (a recommend with latency SLOs <= 1.5 s). Each command runs once to warm the disk cache, then `--runs`
times; the table shows the median and the spread, and the 1-minute load average before and after (other jobs
on a shared machine slow every row).

    .venv/bin/python benchmarks/bench_cli.py [--runs 7] [--only estimate]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS: list[tuple[str, list[str]]] = [
    ("--version", ["--version"]),
    ("--help", ["--help"]),
    ("usage error (unknown option)", ["estimate", "infer", "--bogus"]),
    ("estimate --help", ["estimate", "--help"]),
    ("estimate infer 8B on H100", ["estimate", "infer", "--model", "llama-3.1-8b", "--gpu", "H100-SXM"]),
    ("estimate memory 70B tp4", ["estimate", "memory", "-m", "llama-3.1-70b", "-g", "H100-SXM", "--tp", "4"]),
    ("catalog gpus", ["catalog", "gpus"]),
    ("catalog offers --gpu H100-SXM json", ["catalog", "offers", "--gpu", "H100-SXM", "--format", "json"]),
    ("scenarios list", ["scenarios", "list"]),
    (
        "recommend with SLOs (README tour)",
        [
            "recommend",
            "--model",
            "llama-3.1-8b",
            "--precision",
            "bf16",
            "--target-rps",
            "5",
            "--ttft-ms",
            "500",
            "--tpot-ms",
            "50",
        ],
    ),
    (
        "recommend 70B, eu, filters (README tour)",
        [
            "recommend",
            "--model",
            "llama-3.1-70b",
            "--target-rps",
            "2",
            "--geo",
            "eu",
            "--gpu",
            "H100,A100",
            "--provider-class",
            "hyperscaler,gpu_cloud",
        ],
    ),
]


def time_command(exe: list[str], args: list[str], runs: int) -> tuple[list[float], int]:
    env = os.environ | {"NO_COLOR": "1", "COLUMNS": "120"}
    proc = subprocess.run([*exe, *args], capture_output=True, env=env, check=False)  # warm the disk cache
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run([*exe, *args], capture_output=True, env=env, check=False)
        times.append(time.perf_counter() - t0)
    return times, proc.returncode


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--only", default="", help="run only the rows whose label contains this text")
    args = ap.parse_args()
    script = Path(sys.executable).with_name("gpufleet")
    exe = [str(script)] if script.exists() else [sys.executable, "-m", "gpufleet.cli.app"]
    load_before = os.getloadavg()[0]
    print("| command | median | min-max | exit |")
    print("|---|---|---|---|")
    for label, cmd in COMMANDS:
        if args.only and args.only not in label:
            continue
        times, rc = time_command(exe, cmd, args.runs)
        print(
            f"| `gpufleet {' '.join(cmd)}` ({label}) | {statistics.median(times):.3f} s "
            f"| {min(times):.3f}-{max(times):.3f} s | {rc} |",
            flush=True,
        )
    print(f"\n1-minute load average: {load_before:.2f} before, {os.getloadavg()[0]:.2f} after "
          f"({os.cpu_count()} CPUs); median of {args.runs} runs per command.")  # fmt: skip


if __name__ == "__main__":
    main()
