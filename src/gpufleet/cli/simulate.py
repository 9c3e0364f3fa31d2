"""`gpufleet simulate autoscale|spot|batch|sweep`: the simulators (docs/simulate.md).

Thin: parse flags, call :mod:`gpufleet.simulate`, render with :mod:`gpufleet.report.simulation`. The
simulators (and SimPy) are imported inside the commands, so `gpufleet --help` stays fast.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from gpufleet.cli.console import console, err_console
from gpufleet.cli.given import reject_ignored
from gpufleet.cli.recommend import Format, FormatOpt, OutputOpt
from gpufleet.errors import InputError

DEFAULT_HTML_FILE = Path("gpufleet-simulation.html")

app = typer.Typer(
    help="Simulate autoscaling on a request trace, spot training runs, batch queues, and sweeps of them.",
    no_args_is_help=True,
)

SeedOpt = Annotated[int, typer.Option("--seed", help="Random seed: the same seed gives the same result.")]


def _emit(result: Any, fmt: Format, output: Path | None) -> None:
    from gpufleet.fileio import atomic_write_text, check_output_suffix
    from gpufleet.report.simulation import render_simulation, render_simulation_terminal

    if fmt is Format.html and output is None:
        output = DEFAULT_HTML_FILE
    if output is not None:
        check_output_suffix(output, fmt.value)
    if fmt is Format.table:
        renderable = render_simulation_terminal(result)
        if output is None:
            console.print(renderable)
            return
        buffer = io.StringIO()
        Console(file=buffer, width=200, color_system=None).print(renderable)
        text = buffer.getvalue()
    else:
        text = render_simulation(result, fmt.value)
        if output is None:
            typer.echo(text, nl=False)
            return
    if not output.parent.is_dir() or output.is_dir():
        raise InputError(f"Cannot write the report to {output}: give a file path in an existing folder.")
    atomic_write_text(output, text)
    err_console.print(f"Report written to {output}")


def _policy_params(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for raw in pairs:
        if "=" not in raw:
            raise InputError(f"--param {raw!r}: use NAME=VALUE, e.g. --param target_concurrency=12.")
        k, v = raw.split("=", 1)
        k = k.strip()
        if k in out:
            raise InputError(f"--param {k} is given twice; give each policy parameter once.")
        if k == "schedule":  # 0:2,9:6,18:3  (hour:replicas)
            try:
                if not v.isascii():
                    raise ValueError(v)
                out[k] = tuple((float(h), int(n)) for h, n in (x.split(":") for x in v.split(",")))
            except ValueError:
                raise InputError("--param schedule=HOUR:REPLICAS,...  e.g. schedule=0:2,9:6,18:3") from None
            continue
        if k == "metric":
            out[k] = v
            continue
        try:
            if not v.isascii():  # float() reads Arabic-Indic and full-width digits too
                raise ValueError(v)
            out[k] = float(v)
        except ValueError:
            raise InputError(
                f"--param {k}={v!r}: the value must be a plain number written with the ASCII digits 0-9, "
                f"e.g. --param {k}=12 (no unit)."
            ) from None
        if k == "replicas":
            if not out[k].is_integer():
                raise InputError(
                    f"--param replicas={v}: a replica count is a whole number; give e.g. --param replicas=3."
                )
            out[k] = int(out[k])
    return out


@app.command("autoscale")
def autoscale_cmd(
    trace: Annotated[
        Path, typer.Argument(help="Request trace: Azure CSV, Mooncake JSONL, BurstGPT or generic CSV.")
    ],
    model: Annotated[str, typer.Option("--model", "-m", help="Model served.")] = "llama-3.1-8b",
    gpu: Annotated[
        str | None, typer.Option("--gpu", "-g", help="GPU of a replica (default: recommend's pick).")
    ] = None,
    gpus_per_replica: Annotated[
        int | None, typer.Option("--gpus-per-replica", help="Tensor-parallel GPUs.")
    ] = None,
    precision: Annotated[str, typer.Option("--precision")] = "bf16",
    workload: Annotated[
        Path | None, typer.Option("--workload", help="Workload file (model, precision).")
    ] = None,
    policy: Annotated[
        str, typer.Option("--policy", "-p", help="static, scheduled, hpa, kpa, ray, queue.")
    ] = "kpa",
    param: Annotated[
        list[str] | None, typer.Option("--param", help="Policy parameter NAME=VALUE (repeat).")
    ] = None,
    min_replicas: Annotated[int, typer.Option("--min-replicas")] = 1,
    max_replicas: Annotated[int, typer.Option("--max-replicas")] = 64,
    spot_share: Annotated[float, typer.Option("--spot-share", help="Fraction of replicas on spot.")] = 0.0,
    rate: Annotated[float, typer.Option("--rate", help="Time-scale the trace: x k request rate.")] = 1.0,
    slo_ttft: Annotated[float, typer.Option("--slo-ttft", help="p95 TTFT SLO (s).")] = 2.0,
    slo_tpot: Annotated[float, typer.Option("--slo-tpot", help="p95 TPOT SLO (s).")] = 0.2,
    slo_attainment: Annotated[
        float | None,
        typer.Option(
            "--slo-attainment",
            help="Least fraction of requests meeting both TTFT and TPOT SLOs, e.g. 0.95 (default: not set).",
        ),
    ] = None,
    cold_start: Annotated[
        float | None,
        typer.Option("--cold-start", help="Override the cold start (s; at most 86400 = one day)."),
    ] = None,
    trace_format: Annotated[str, typer.Option("--trace-format")] = "auto",
    no_static: Annotated[
        bool, typer.Option("--no-static-peak", help="Skip the static-peak comparison.")
    ] = False,
    kv_mode: Annotated[
        str,
        typer.Option(
            "--kv-mode",
            help="paged (vLLM: KV grows per token, newest request preempted when full) or reserve "
            "(input + output tokens reserved at admission).",
        ),
    ] = "paged",
    tier: Annotated[
        str | None,
        typer.Option(
            "--tier",
            help="Deployment tier the replica is priced under: production (default: no marketplace or "
            "community host, no stale price), batch or dev; with --workload, the file's tier.",
        ),
    ] = None,
    seed: SeedOpt = 0,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
) -> None:
    """Replay a request trace through an autoscaled deployment: latency, SLO attainment, cost."""
    from gpufleet.simulate.autoscale import deployment_for, simulate_autoscale
    from gpufleet.simulate.coldstart import ColdStart
    from gpufleet.simulate.policies import make_policy
    from gpufleet.simulate.traces import read_trace, scale_rate

    if workload is not None:
        from gpufleet.recommend.api import as_workload

        reject_ignored(
            ["model", "precision"],
            why="with --workload (the workload file sets the model and the precision)",
            fix="Leave those options out, or drop --workload and give --model/--precision alone.",
            default_ok=False,  # the file's model replaces even the default typed out
        )
        w = as_workload(workload)
        if w.task != "inference":  # its model and precision would be served as if it were inference
            raise InputError(
                f"--workload {workload}: the workload is a {w.task} (training) workload, but autoscaling "
                "replays serving requests. Give a workload with task: inference, or --model/--precision."
            )
        model, precision = w.model, w.precision
        tier = tier or w.tier
    tr = read_trace(trace, trace_format)
    if rate != 1.0:
        tr = scale_rate(tr, rate)
    pol = make_policy(policy, **_policy_params(param or []))
    cs = (
        ColdStart(provisioning_s=cold_start, image_pull_s=0.0, warmup_s=0.0)
        if cold_start is not None
        else None
    )
    dep = deployment_for(
        tr,
        model=model,
        gpu=gpu,
        precision=precision,
        gpus_per_replica=gpus_per_replica,
        cold_start=cs,
        tier=tier or "production",
    )
    result = simulate_autoscale(
        tr,
        dep,
        pol,
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        spot_share=spot_share,
        slo_ttft_s=slo_ttft,
        slo_tpot_s=slo_tpot,
        slo_attainment=slo_attainment,
        seed=seed,
        rate_factor=rate,
        compare_static_peak=not no_static,
        kv_mode=kv_mode,
    )
    _emit(result, fmt, output)
    if not result.meets_slo:  # the question was "does this policy meet my SLOs?": no, after the replay
        from gpufleet.cli.exit_codes import ExitCode, exit_with

        exit_with(
            ExitCode.NO_CANDIDATE,
            f"the {policy} policy misses the SLO over this trace: {'; '.join(result.slo_gaps)}. Raise "
            "--min-replicas, tune --param, shorten the cold start, or relax --slo-ttft/--slo-tpot.",
        )


@app.command("spot")
def spot_cmd(
    model: Annotated[str, typer.Option("--model", "-m", help="Model trained.")],
    tokens: Annotated[float, typer.Option("--tokens", help="Training tokens, e.g. 2e10 or 20B.")],
    gpu: Annotated[str, typer.Option("--gpu", "-g")] = "h100",
    gpus: Annotated[
        int | None,
        typer.Option(
            "--gpus",
            help="GPUs of the job (default: search 1-512 GPUs, whole 8-GPU nodes beyond 8, for the "
            "cheapest layout meeting the deadline).",
        ),
    ] = None,
    deadline_hours: Annotated[float | None, typer.Option("--deadline-hours")] = None,
    interruptions: Annotated[
        Path | None, typer.Option("--interruptions", help="SkyPilot spot-traces JSON.")
    ] = None,
    provider: Annotated[str | None, typer.Option("--provider")] = None,
    checkpoint_hours: Annotated[
        float | None, typer.Option("--checkpoint-hours", help="tau (default Young).")
    ] = None,
    runs: Annotated[int, typer.Option("--runs", help="Monte-Carlo runs per strategy.")] = 100,
    seed: SeedOpt = 0,
    confidence: Annotated[
        str,
        typer.Option(
            "--confidence",
            help="Percentile of the estimate the work (and the deadline) is taken at: p90 (default, the "
            "slow end of the interval, as recommend) or p50 (central).",
        ),
    ] = "p90",
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
) -> None:
    """A training run on spot by strategy: expected cost, P(deadline miss), time distribution."""
    from gpufleet.cli.exit_codes import ExitCode, exit_with
    from gpufleet.errors import InfeasibleError
    from gpufleet.simulate.spot import simulate_spot

    try:
        result = simulate_spot(
            model=model,
            tokens=tokens,
            gpu=gpu,
            gpus=gpus,
            deadline_h=deadline_hours,
            interruptions=str(interruptions) if interruptions else None,
            provider=provider,
            interval_h=checkpoint_hours,
            runs=runs,
            seed=seed,
            confidence=confidence,
        )
    except InfeasibleError as exc:  # no layout could even be simulated: the answer is "no", with the reason
        exit_with(ExitCode.NO_CANDIDATE, str(exc))
    _emit(result, fmt, output)
    if result.best is None:
        exit_with(
            ExitCode.NO_CANDIDATE,
            f"no strategy meets the {result.deadline_h or 0:g} h deadline with P(miss) <= 5 % (the output "
            "shows each strategy's P(miss)); extend the deadline or add GPUs.",
        )


@app.command("batch")
def batch_cmd(
    jobs: Annotated[
        Path, typer.Argument(help="Job file: generic CSV, Alibaba PAI/openb, Helios CSV, Philly JSON.")
    ],
    fleet: Annotated[
        Path | None, typer.Option("--fleet", help="Fleet YAML (pools, teams, off_peak).")
    ] = None,
    policy: Annotated[
        str, typer.Option("--policy", "-p", help="fifo, priority, easy, deadline, offpeak, spot.")
    ] = "easy",
    jobs_format: Annotated[str, typer.Option("--jobs-format")] = "auto",
    seed: SeedOpt = 0,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
) -> None:
    """Schedule a job queue on a fleet: makespan, waits, utilisation, cost, deadline misses, per team."""
    from gpufleet.simulate.batch import check_policy_acts, read_fleet, simulate_batch
    from gpufleet.simulate.jobs import read_jobs

    queue, pools = read_jobs(jobs, jobs_format), read_fleet(fleet) if fleet else None
    check_policy_acts(policy, queue, pools)
    result = simulate_batch(queue, pools, policy=policy, seed=seed)
    _emit(result, fmt, output)


@app.command("sweep")
def sweep_cmd(
    spec: Annotated[Path, typer.Argument(help="Sweep spec YAML: kind, base, grid, seeds.")],
    engine: Annotated[str, typer.Option("--engine", help="local (processes) or ray.")] = "local",
    address: Annotated[
        str | None, typer.Option("--address", help="Ray cluster address (engine ray).")
    ] = None,
    workers: Annotated[int | None, typer.Option("--workers", help="Local processes (default: CPUs).")] = None,
    parquet: Annotated[
        Path | None, typer.Option("--parquet", help="Also write the results as Parquet.")
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Replace the spec's seeds by this one.")] = None,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
) -> None:
    """Run a simulator over policies x parameters x seeds (local processes or Ray), with a progress bar."""
    from dataclasses import replace

    from rich.progress import Progress

    from gpufleet.simulate.sweep import read_sweep_spec, run_sweep

    s = read_sweep_spec(spec)
    if seed is not None:
        s = replace(s, seeds=(seed,))
    with Progress(console=err_console, transient=True) as bar:
        task = bar.add_task("simulating", total=len(s.configs()))
        result = run_sweep(
            s,
            engine=engine,
            workers=workers,
            address=address,
            parquet=parquet,
            progress=lambda done, total: bar.update(task, completed=done),
        )
    _emit(result, fmt, output)
