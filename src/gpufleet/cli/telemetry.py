"""``gpufleet telemetry``: ingest GPU telemetry, find idle/over/under-provisioned GPUs, alert, report."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gpufleet.cli.console import console, err_console
from gpufleet.cli.given import reject_ignored
from gpufleet.errors import InputError

if TYPE_CHECKING:
    from gpufleet.telemetry.analyze import Window
    from gpufleet.telemetry.findings import FleetFindings, Thresholds
    from gpufleet.telemetry.inventory import InventoryEntry
    from gpufleet.telemetry.store import TelemetryStore

app = typer.Typer(
    help="Right-size a running GPU fleet from its telemetry; alert on thresholds.", no_args_is_help=True
)


class Format(StrEnum):
    table = "table"
    json = "json"
    markdown = "markdown"
    html = "html"
    csv = "csv"


StoreOpt = Annotated[
    Path | None, typer.Option("--store", help="Telemetry store directory (default: user data dir).")
]
LookbackOpt = Annotated[
    float, typer.Option("--lookback", help="Days before the latest sample (presets 14, 32, 93).")
]
PctOpt = Annotated[float, typer.Option("--percentile", help="Percentile ranked on (0.5-0.99).")]
HeadroomOpt = Annotated[
    float, typer.Option("--headroom", help="Headroom added to observed needs (0.2 = 20 %).")
]
InvOpt = Annotated[
    Path | None, typer.Option("--inventory", help="Inventory YAML/CSV mapping hosts to offers.")
]
EndOpt = Annotated[
    str | None, typer.Option("--end", help="End of the window (ISO 8601, UTC); default: latest sample.")
]
OutOpt = Annotated[Path | None, typer.Option("-o", "--output", help="Write to this file instead of stdout.")]
TierOpt = Annotated[
    str,
    typer.Option(
        "--tier",
        help="Recommender tier the options obey: auto (production for serving workloads, else batch), dev, "
        "batch, production (never a marketplace host). An inventory entry's tier wins.",
    ),
]
TtftOpt = Annotated[
    float,
    typer.Option(
        "--ttft-slo",
        help="TTFT SLO (s) at the findings percentile of the engine's TTFT histogram (default 2 s).",
    ),
]
PromOpt = Annotated[
    str | None,
    typer.Option(
        "--prometheus",
        help="Compute the statistics inside this Prometheus, Thanos or Mimir (PromQL pushdown), not --store.",
    ),
]
StepMetricOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--step-time-metric",
        help="Name of your training job's step-time gauge (seconds) when it is none of "
        "train_step_duration_seconds, training_step_time_seconds, trainer_step_time_seconds, "
        "step_time_seconds (repeatable).",
    ),
]
PromTimeoutOpt = Annotated[float, typer.Option("--timeout", help="With --prometheus: seconds per query.")]
ChunkHostsOpt = Annotated[
    int, typer.Option("--chunk-hosts", help="With --prometheus: hosts (or namespaces) per query.")
]
ChunkDaysOpt = Annotated[
    float | None,
    typer.Option(
        "--chunk-days", help="With --prometheus: days per query range (default: the whole lookback)."
    ),
]
TpotOpt = Annotated[
    float,
    typer.Option(
        "--tpot-slo",
        help="TPOT SLO (s) at the findings percentile of the engine's TPOT histogram (default 0.2 s).",
    ),
]


def _store(path: Path | None) -> TelemetryStore:
    from gpufleet.telemetry.store import TelemetryStore

    return TelemetryStore(path)


def _time(text: str | None, flag: str) -> datetime | None:
    if text is None:
        return None
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(
            f"{flag} {text!r} is not an ISO 8601 time; give e.g. 2026-07-14T08:00:00Z."
        ) from None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def _emit(text: str, output: Path | None, fmt: str | None = None) -> None:
    if output is not None and fmt is not None:
        from gpufleet.fileio import check_output_suffix

        check_output_suffix(output, fmt)
    if output is None:
        console.print(text, markup=False, highlight=False, soft_wrap=True)
    else:
        from gpufleet.fileio import atomic_write_text

        atomic_write_text(output, text)
        err_console.print(f"Wrote {output}")


def _duration_s(text: str, flag: str) -> float:
    from gpufleet.telemetry.alerts import parse_duration_s

    try:
        return parse_duration_s(text)
    except ValueError as exc:
        raise InputError(f"{flag}: {exc}.") from None


@app.command()
def ingest(
    files: Annotated[
        list[Path] | None,
        typer.Argument(help="nvidia-smi CSV, dcgm-exporter text, Prometheus JSON, CloudWatch CSV."),
    ] = None,
    prometheus: Annotated[
        str | None, typer.Option("--prometheus", help="Query a live Prometheus at this URL.")
    ] = None,
    start: Annotated[str | None, typer.Option("--start", help="With --prometheus: start (ISO 8601).")] = None,
    end: Annotated[
        str | None, typer.Option("--end", help="With --prometheus: end (ISO 8601; default now).")
    ] = None,
    step: Annotated[str, typer.Option("--step", help="With --prometheus: resolution, e.g. 60s.")] = "60s",
    timeout: Annotated[
        float, typer.Option("--timeout", help="With --prometheus: seconds per request.")
    ] = 30.0,
    input_format: Annotated[
        str, typer.Option("--input-format", help="auto, nvidia-smi, exposition, prom-json, cloudwatch.")
    ] = "auto",
    timezone: Annotated[
        str | None, typer.Option("--timezone", help="Time zone of nvidia-smi timestamps (e.g. UTC).")
    ] = None,
    host: Annotated[
        str | None, typer.Option("--host", help="Host of an nvidia-smi CSV (default: the file name).")
    ] = None,
    store: StoreOpt = None,
    fmt: Annotated[Format, typer.Option("--format", help="table or json.")] = Format.table,
    step_time_metric: StepMetricOpt = None,
) -> None:
    """Read telemetry into the store (atomic append; bad lines counted, never silently dropped)."""
    from gpufleet.telemetry.readers.common import metric_aliases

    with metric_aliases(step_time=step_time_metric or ()):
        _ingest(files, prometheus, start, end, step, timeout, input_format, timezone, host, store, fmt)


def _no_blank_url(prometheus: str | None) -> None:
    """``--prometheus ""`` was read as not given (the files or the local store were used instead)."""
    if prometheus is not None and not prometheus.strip():
        raise InputError(
            f"--prometheus {prometheus!r} is blank. Give the server's base URL (e.g. "
            "http://prometheus:9090), or leave --prometheus out to use telemetry files or the local store."
        )


def _ingest(
    files: list[Path] | None,
    prometheus: str | None,
    start: str | None,
    end: str | None,
    step: str,
    timeout: float,
    input_format: str,
    timezone: str | None,
    host: str | None,
    store: Path | None,
    fmt: Format,
) -> None:
    from gpufleet.report.telemetry import ingest_lines, to_json
    from gpufleet.telemetry.ingest import ingest_files, ingest_prometheus

    if fmt not in (Format.table, Format.json):
        raise InputError(f"ingest prints table or json, not {fmt.value}.")
    _no_blank_url(prometheus)
    if bool(files) == bool(prometheus):
        raise InputError("Give telemetry files or --prometheus URL (one of the two).")
    if prometheus:
        reject_ignored(
            ["input_format", "host", "timezone"],
            why="with --prometheus (they describe telemetry files; Prometheus labels name the hosts)",
            fix="Leave those options out, or ingest files instead of --prometheus.",
        )
        s = _time(start, "--start")
        if s is None:
            raise InputError("--prometheus needs --start (ISO 8601, e.g. 2026-07-01T00:00:00Z).")
        e = _time(end, "--end") or datetime.now(UTC)
        report = ingest_prometheus(
            prometheus,
            start_s=s.timestamp(),
            end_s=e.timestamp(),
            step_s=_duration_s(step, "--step"),
            store=_store(store),
            timeout_s=timeout,
        )
    else:
        reject_ignored(
            ["start", "end", "step", "timeout"],
            why="when ingesting files (they set the range, resolution and timeout of a --prometheus query)",
            fix="Leave those options out, or pass --prometheus URL instead of files.",
        )
        report = ingest_files(
            files or [], store=_store(store), input_format=input_format, host=host, timezone=timezone
        )
    if fmt == Format.json:
        _emit(to_json("telemetry_ingest", {"report": report}), None)
    else:
        console.print("\n".join(ingest_lines(report)), markup=False, highlight=False)
    if (
        report.rows_stored == 0
        and report.rows_read > 0
        and not any(p.kind == "duplicate_sample" for p in report.problems)
    ):
        raise InputError("No sample could be stored from the input (see the problems above).")


def _thresholds(headroom: float, ttft_slo: float, tpot_slo: float) -> Thresholds:
    from gpufleet.telemetry.findings import Thresholds

    if not 0 <= headroom <= 2:
        raise InputError(f"--headroom {headroom} must be between 0 and 2 (0.2 = 20 %).")
    for flag, v in (("--ttft-slo", ttft_slo), ("--tpot-slo", tpot_slo)):
        if not 0 < v <= 3600:
            raise InputError(f"{flag} {v} must be a latency in seconds above 0 (e.g. 2 or 0.2).")
    return Thresholds(headroom=headroom, ttft_slo_s=ttft_slo, tpot_slo_s=tpot_slo)


def _findings(
    store: Path | None,
    lookback: float,
    percentile: float,
    headroom: float,
    inventory: Path | None,
    end: str | None,
    tier: str = "auto",
    ttft_slo: float = 2.0,
    tpot_slo: float = 0.2,
) -> tuple[TelemetryStore, Window, FleetFindings, tuple[InventoryEntry, ...]]:
    """Findings from the local store."""
    from gpufleet.telemetry.analyze import gpu_stats, resolve_window
    from gpufleet.telemetry.analyze_workloads import workload_and_serving_stats
    from gpufleet.telemetry.findings import find
    from gpufleet.telemetry.inventory import inventory_for

    th = _thresholds(headroom, ttft_slo, tpot_slo)
    st = _store(store)
    window = resolve_window(st, lookback, _time(end, "--end"), percentile)
    inv, rules, used = inventory_for(st.root, inventory)
    if used is not None and inventory is None:
        err_console.print(f"Inventory: {used} (kept in the store by an earlier --inventory)")
    workloads, serving = workload_and_serving_stats(st, window, rules)
    ff = find(
        gpu_stats(st, window),
        window,
        th,
        inv,
        workloads=workloads,
        serving=serving,
        rules=rules,
        tier=tier,
    )
    return st, window, ff, inv


@app.command()
def findings(
    store: StoreOpt = None,
    lookback: LookbackOpt = 14,
    percentile: PctOpt = 0.95,
    headroom: HeadroomOpt = 0.2,
    inventory: InvOpt = None,
    end: EndOpt = None,
    fmt: Annotated[
        Format, typer.Option("--format", help="table, json, markdown, html or csv.")
    ] = Format.table,
    output: OutOpt = None,
    tier: TierOpt = "auto",
    ttft_slo: TtftOpt = 2.0,
    tpot_slo: TpotOpt = 0.2,
    prometheus: PromOpt = None,
    timeout: PromTimeoutOpt = 60.0,
    chunk_hosts: ChunkHostsOpt = 50,
    chunk_days: ChunkDaysOpt = None,
    step_time_metric: StepMetricOpt = None,
) -> None:
    """Idle / over- / under-provisioned / optimized GPUs and workloads with priced options."""
    report(
        store=store,
        lookback=lookback,
        percentile=percentile,
        headroom=headroom,
        inventory=inventory,
        end=end,
        fmt=fmt,
        output=output,
        tier=tier,
        ttft_slo=ttft_slo,
        tpot_slo=tpot_slo,
        prometheus=prometheus,
        timeout=timeout,
        chunk_hosts=chunk_hosts,
        chunk_days=chunk_days,
        step_time_metric=step_time_metric,
    )


@app.command()
def report(
    store: StoreOpt = None,
    lookback: LookbackOpt = 14,
    percentile: PctOpt = 0.95,
    headroom: HeadroomOpt = 0.2,
    inventory: InvOpt = None,
    end: EndOpt = None,
    fmt: Annotated[
        Format, typer.Option("--format", help="table, json, markdown, html or csv.")
    ] = Format.table,
    output: OutOpt = None,
    tier: TierOpt = "auto",
    ttft_slo: TtftOpt = 2.0,
    tpot_slo: TpotOpt = 0.2,
    prometheus: PromOpt = None,
    timeout: PromTimeoutOpt = 60.0,
    chunk_hosts: ChunkHostsOpt = 50,
    chunk_days: ChunkDaysOpt = None,
    step_time_metric: StepMetricOpt = None,
) -> None:
    """Fleet summary (GPU-hours, idle share, cost, savings by finding and team), findings and charts."""
    from gpufleet.report import telemetry as rt
    from gpufleet.telemetry.readers.common import metric_aliases
    from gpufleet.telemetry.summary import summarize

    st: TelemetryStore | None = None
    _no_blank_url(prometheus)
    if prometheus:
        from gpufleet.telemetry.api import analyze_prometheus

        reject_ignored(
            ["store"],
            why="with --prometheus (the statistics are computed by that server, not read from a store)",
            fix="Leave --store out, or drop --prometheus to analyse the store.",
        )
        if not 0 < timeout <= 3600:
            raise InputError(f"--timeout {timeout} must be between 0 and 3600 seconds.")
        with metric_aliases(step_time=step_time_metric or ()):
            ff = analyze_prometheus(
                prometheus,
                lookback_days=lookback,
                percentile=percentile,
                thresholds=_thresholds(headroom, ttft_slo, tpot_slo),
                inventory=inventory,
                end=_time(end, "--end"),
                tier=tier,
                timeout_s=timeout,
                chunk_hosts=chunk_hosts,
                chunk_days=chunk_days,
            )
        window = ff.window
    else:
        reject_ignored(
            ["timeout", "chunk_hosts", "chunk_days", "step_time_metric"],
            why="without --prometheus (they size and name the queries sent to a Prometheus server; the "
            "store holds the step time under the name given to telemetry ingest --step-time-metric)",
            fix="Leave those options out, or add --prometheus URL.",
        )
        st, window, ff, _ = _findings(
            store, lookback, percentile, headroom, inventory, end, tier, ttft_slo, tpot_slo
        )
    s = summarize(ff)
    if fmt == Format.table:
        if output is not None:
            raise InputError(
                f"-o/--output {output} writes a file, but --format table prints to the terminal. Pick "
                "--format json, markdown, html or csv with -o, or drop -o."
            )
        for part in rt.render_findings_terminal(ff, s):
            console.print(part)
        return
    if fmt == Format.json:
        text = rt.to_json("telemetry_findings", {"summary": s, "findings": ff})
    elif fmt == Format.markdown:
        text = rt.render_findings_markdown(ff, s)
    elif fmt == Format.csv:
        text = rt.render_findings_csv(ff)
    else:
        heat = rt.findings_heat(st, window, s, prometheus=prometheus, timeout=timeout)
        text = rt.render_findings_html(ff, s, heat)
    _emit(text, output, fmt.value)


@app.command()
def alerts(
    rules: Annotated[
        Path | None, typer.Option("--rules", help="Alert rule YAML (default: the seed's thresholds).")
    ] = None,
    store: StoreOpt = None,
    lookback: LookbackOpt = 14,
    end: EndOpt = None,
    inventory: InvOpt = None,
    step: Annotated[str, typer.Option("--step", help="Evaluation step, e.g. 60s.")] = "60s",
    export: Annotated[
        str | None, typer.Option("--export", help="'prometheus': print Prometheus alerting rules.")
    ] = None,
    show_defaults: Annotated[
        bool, typer.Option("--show-defaults", help="Print the default rule file.")
    ] = False,
    fmt: Annotated[Format, typer.Option("--format", help="table, json, markdown or csv.")] = Format.table,
    output: OutOpt = None,
) -> None:
    """Evaluate alert rules over stored telemetry, or export them as Prometheus alerting rules."""
    from rich.table import Table

    from gpufleet.report import telemetry as rt
    from gpufleet.telemetry.alerts import default_rules_text, evaluate, load_rules, prometheus_rules
    from gpufleet.telemetry.analyze import resolve_window
    from gpufleet.telemetry.inventory import inventory_for

    if show_defaults:
        reject_ignored(
            ["rules", "store", "lookback", "end", "inventory", "step", "export", "fmt"],
            why="with --show-defaults (it prints the default rule file and nothing else)",
            fix="Leave those options out, or drop --show-defaults to evaluate or export the rules.",
        )
        _emit(default_rules_text(), output)
        return
    rs = load_rules(rules)
    inv = inventory_for(_store(store).root, inventory)[0]
    if export is not None:
        if export != "prometheus":
            raise InputError(f"--export {export!r}: only 'prometheus' is supported.")
        reject_ignored(
            ["step", "fmt"],
            why="with --export prometheus (it prints Prometheus alerting rules; nothing is evaluated)",
            fix="Leave those options out, or drop --export to evaluate the rules over the store.",
        )
        price = None
        st = _store(store)
        if not st.is_empty():
            _, _, ff, _ = _findings(store, lookback, 0.95, 0.2, inventory, end)
            prices = [
                g.cost.price_usd_per_gpu_hour for g in ff.gpus if g.cost.price_usd_per_gpu_hour is not None
            ]
            price = sum(prices) / len(prices) if prices else None
        _emit(prometheus_rules(rs, price_usd_per_gpu_hour=price), output, "prometheus")
        return
    if fmt == Format.table and output is not None:
        raise InputError(
            f"-o/--output {output} writes a file, but --format table prints to the terminal. Pick --format "
            "json, markdown or csv with -o, or drop -o."
        )
    st = _store(store)
    window = resolve_window(st, lookback, _time(end, "--end"), 0.95)
    events = evaluate(st, window, rs, step_s=_duration_s(step, "--step"), inventory=inv)
    rows = rt.alert_rows(events)
    if fmt == Format.json:
        _emit(
            rt.to_json("telemetry_alerts", {"window": window, "rules": list(rs), "events": list(events)}),
            output,
            "json",
        )
    elif fmt == Format.markdown:
        _emit(rt._md_table(rt.ALERT_COLUMNS, rows), output, "markdown")
    elif fmt == Format.csv:
        import csv
        import io

        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(rt.ALERT_COLUMNS)
        w.writerows(rows)
        _emit(buf.getvalue(), output, "csv")
    elif fmt == Format.table:
        t = Table(title=f"Alerts ({len(events)} events, {len(rs)} rules)")
        for c in rt.ALERT_COLUMNS:
            t.add_column(c)
        for r in rows:
            t.add_row(*r)
        console.print(t)
    else:
        raise InputError("alerts prints table, json, markdown or csv.")
