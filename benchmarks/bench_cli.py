"""End-to-end CLI latency: a fresh `gpufleet` process per run, interpreter start included.

The project's target for a command that lists, estimates or recommends is about 0.2 s end to end on an idle
machine (a recommend with latency SLOs <= 1.5 s). Each command runs once to warm the disk cache, the
bytecode cache and gpufleet's user cache (offer table, profile validation mark), then ``--runs`` times. The
table shows, per command, the median CPU time of the process (user + sys, from ``wait4``: the steadier
figure on a shared machine) and the median wall time, and the 1-minute load average before and after.

``--baseline EXE`` times a second executable (e.g. a console script of an older checkout) in the same
conditions: runs alternate between the two, so a load change hits both alike. ``--output FILE`` also writes
the table (with the date and load) to FILE, e.g. ``benchmarks/results/`` for a record of a change.

    .venv/bin/python benchmarks/bench_cli.py [--runs 7] [--only estimate] [--baseline /path/to/gpufleet]
        [--output benchmarks/results/NAME.md]
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
    (
        "estimate infer 8B on H100, json",
        ["estimate", "infer", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--format", "json"],
    ),
    ("estimate memory 70B tp4", ["estimate", "memory", "-m", "llama-3.1-70b", "-g", "H100-SXM", "--tp", "4"]),
    ("estimate train 8B on 8x H100", ["estimate", "train", "-m", "llama-3.1-8b", "-g", "H100-SXM"]),
    ("catalog gpus", ["catalog", "gpus"]),
    ("catalog gpus json", ["catalog", "gpus", "--format", "json"]),
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
        "recommend 8B with SLOs, json",
        [
            "recommend",
            "--model",
            "llama-3.1-8b",
            "--task",
            "inference",
            "--ttft-ms",
            "500",
            "--tpot-ms",
            "50",
            "--format",
            "json",
        ],
    ),
    (
        "recommend 8B 5 req/s TTFT 500 ms (no TPOT)",
        ["recommend", "--model", "llama-3.1-8b", "--target-rps", "5", "--ttft-ms", "500"],
    ),
    (
        "migrate 8B from 2x p5.48xlarge",
        ["migrate", "--model", "llama-3.1-8b", "--current-instance", "p5.48xlarge", "--current-count", "2"],
    ),
    (
        "migrate 70B from p4d.24xlarge, 2 req/s",
        ["migrate", "--model", "llama-3.1-70b", "--current-instance", "p4d.24xlarge", "--target-rps", "2"],
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

#: what every run sees: plain output at a fixed width, and bytecode written on the warm-up run (as an
#: installed package has it; PYTHONDONTWRITEBYTECODE would re-compile gpufleet's modules on every run)
ENV = {"NO_COLOR": "1", "COLUMNS": "120", "PYTHONDONTWRITEBYTECODE": ""}


def run_once(exe: list[str], args: list[str]) -> tuple[float, float, int]:
    """(CPU s = user + sys, wall s, exit code) of one fresh process."""
    env = os.environ | ENV
    t0 = time.perf_counter()
    proc = subprocess.Popen([*exe, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    return usage.ru_utime + usage.ru_stime, wall, os.waitstatus_to_exitcode(status)


Timings = tuple[list[float], list[float], int]  # CPU times, wall times, last exit code


def time_commands(exes: list[list[str]], args: list[str], runs: int) -> list[Timings]:
    """Per executable: (CPU times, wall times, last exit code); runs alternate between the executables."""
    for exe in exes:
        run_once(exe, args)  # warm-up: disk cache, bytecode, gpufleet's user cache
    out: list[Timings] = [([], [], 0) for _ in exes]
    for _ in range(runs):
        for i, exe in enumerate(exes):
            cpu, wall, rc = run_once(exe, args)
            out[i][0].append(cpu)
            out[i][1].append(wall)
            out[i] = (out[i][0], out[i][1], rc)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--only", default="", help="run only the rows whose label contains this text")
    ap.add_argument("--baseline", default="", help="a second gpufleet executable to time alongside")
    ap.add_argument("--output", default="", help="also write the table to this file (markdown)")
    args = ap.parse_args()
    lines: list[str] = []

    def show(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    script = Path(sys.executable).with_name("gpufleet")
    exe = [str(script)] if script.exists() else [sys.executable, "-m", "gpufleet.cli.app"]
    exes = [exe, [args.baseline]] if args.baseline else [exe]
    load_before = os.getloadavg()[0]
    if args.baseline:
        show("| command | baseline CPU (wall) | this CPU (wall) | exit |")
        show("|---|---|---|---|")
    else:
        show("| command | CPU median | wall median (min-max) | exit |")
        show("|---|---|---|---|")
    for label, cmd in COMMANDS:
        if args.only and args.only not in label:
            continue
        results = time_commands(exes, cmd, args.runs)
        cpu, wall, rc = results[0]
        med = statistics.median
        if args.baseline:
            bcpu, bwall, brc = results[1]
            show(
                f"| `gpufleet {' '.join(cmd)}` ({label}) | {med(bcpu):.3f} s ({med(bwall):.3f} s) "
                f"| {med(cpu):.3f} s ({med(wall):.3f} s) | {brc} / {rc} |"
            )
        else:
            show(
                f"| `gpufleet {' '.join(cmd)}` ({label}) | {med(cpu):.3f} s "
                f"| {med(wall):.3f} s ({min(wall):.3f}-{max(wall):.3f}) | {rc} |"
            )
    show(f"\n1-minute load average: {load_before:.2f} before, {os.getloadavg()[0]:.2f} after "
         f"({os.cpu_count()} CPUs); median of {args.runs} runs per command; "
         f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.")  # fmt: skip
    if args.output:
        out = Path(args.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
