"""Speed of the estimator: one estimate in-process, and `validate` on 100 cases in-process and via the CLI.

Targets: one estimate <= 1 ms (median of many calls, after a warm-up that fills the data caches); validate on
100 cases <= 2 s, both in-process and as a fresh `gpufleet validate` process (interpreter start included).
The 100 cases replicate the shipped published cases with distinct ids. Prints a Markdown table.

    .venv/bin/python benchmarks/bench_estimate.py [--calls 2000]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gpufleet.estimate.cases import CalibrationCase, read_cases, shipped_cases_path, write_cases_csv
from gpufleet.units import MS_PER_S

N_CASES = 100


def replicated_cases(n: int = N_CASES) -> list[CalibrationCase]:
    """``n`` cases cycling through the shipped ones, each with a distinct id."""
    base = read_cases(shipped_cases_path())
    return [dataclasses.replace(base[i % len(base)], case_id=f"B{i:03d}-{base[i % len(base)].case_id}")
            for i in range(n)]  # fmt: skip


def median_s(fn: Callable[[], object], calls: int) -> float:
    """Median wall time of ``calls`` calls of ``fn`` [s] (one untimed warm-up call first)."""
    fn()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_one_estimate(calls: int) -> list[tuple[str, float, str]]:
    from gpufleet.catalog.specs import get_spec
    from gpufleet.estimate.memory import estimate_memory
    from gpufleet.estimate.performance import estimate_inference, estimate_training
    from gpufleet.models import resolve_model

    arch, h100 = resolve_model("llama-3.1-8b"), get_spec("H100-SXM")
    rows = [
        ("estimate_memory (llama-3.1-8b, H100, bf16)", median_s(lambda: estimate_memory(
            model=arch, task="inference", precision="bf16", gpu=h100, seq_len=4096, batch=8), calls), "1 ms"),
        ("estimate_inference (llama-3.1-8b, H100, bf16, batch 8)", median_s(lambda: estimate_inference(
            model=arch, gpu=h100, precision="bf16", input_len=1024, output_len=256, batch=8), calls), "1 ms"),
        ("estimate_training (llama-3.1-8b, 8×H100, bf16)", median_s(lambda: estimate_training(
            model=arch, task="pretrain", gpu=h100, precision="bf16", gpu_count=8, global_batch=256,
            seq_len=4096), calls), "1 ms"),
    ]  # fmt: skip
    counter = itertools.count()

    def varied_inference() -> object:  # a new (batch, input_len) every call: no argument-keyed cache hits
        i = next(counter)
        return estimate_inference(model=arch, gpu=h100, precision="bf16", input_len=128 + i, output_len=256,
                                  batch=1 + i % 64)  # fmt: skip

    def varied_training() -> object:
        i = next(counter)
        return estimate_training(model=arch, task="pretrain", gpu=h100, precision="bf16", gpu_count=8,
                                 global_batch=8 * (1 + i % 512), seq_len=1024 + i)  # fmt: skip

    rows += [
        ("estimate_inference, new batch/input_len every call", median_s(varied_inference, calls), "1 ms"),
        ("estimate_training, new batch/seq_len every call", median_s(varied_training, calls), "1 ms"),
    ]
    return [(name, t * MS_PER_S, target) for name, t, target in rows]


def bench_validate(repeats: int) -> list[tuple[str, float, str]]:
    from gpufleet.estimate.validate import validate_cases

    cases = replicated_cases()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cases100.csv"
        path.write_text(write_cases_csv(cases), encoding="utf-8")
        t_lib = median_s(lambda: validate_cases(read_cases(path)), repeats)
        exe = Path(sys.executable).with_name("gpufleet")
        cmd = [str(exe), "validate", str(path), "--format", "json"]
        env = {**os.environ, "COLUMNS": "200"}

        def cli() -> None:
            subprocess.run(cmd, check=True, capture_output=True, env=env)

        t_cli = median_s(cli, repeats)
    return [
        (f"validate {N_CASES} cases, in-process (read + predict + score)", t_lib * MS_PER_S, "2000 ms"),
        (f"`gpufleet validate` {N_CASES} cases, fresh process", t_cli * MS_PER_S, "2000 ms"),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=2000, help="calls per single-estimate benchmark")
    ap.add_argument("--repeats", type=int, default=5, help="repeats of each validate benchmark")
    args = ap.parse_args()
    rows = bench_one_estimate(args.calls) + bench_validate(args.repeats)
    print("| benchmark | median [ms] | target |")
    print("|---|---:|---:|")
    for name, ms, target in rows:
        print(f"| {name} | {ms:.3f} | ≤ {target} |")


if __name__ == "__main__":
    main()
