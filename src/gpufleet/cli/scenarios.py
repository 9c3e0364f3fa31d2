"""`gpufleet scenarios list | run ID | run-set NAME`: the shipped GPU Fleet Optimizer scenarios and sets."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any

import typer

from gpufleet.cli.console import console, err_console
from gpufleet.cli.recommend import (
    CatalogOpt,
    Format,
    FormatOpt,
    OutputOpt,
    TopOpt,
    assumption_notes,
    catalog_offers,
    emit,
    exit_if_no_candidate,
)

app = typer.Typer(
    help="Named scenarios (GPU Fleet Optimizer workloads) and sets of them.", no_args_is_help=True
)


class ListFormat(StrEnum):
    table = "table"
    json = "json"


@app.command("list")
def list_cmd(
    fmt: Annotated[
        ListFormat, typer.Option("--format", "-f", help="table (terminal) or json (stable keys).")
    ] = ListFormat.table,
) -> None:
    """List every scenario (id, model, task, pricing, description) and every set."""
    from gpufleet.recommend.scenarios import scenario_summaries

    scenarios, sets_ = scenario_summaries()  # no pydantic once the shipped file is marked valid
    if fmt is ListFormat.json:
        from gpufleet.report.json_report import envelope

        doc: dict[str, Any] = envelope(
            "scenario_list",
            scenarios=[
                {
                    "id": w.id,
                    "model": w.model,
                    "task": w.task,
                    "pricing": w.pricing,
                    "current": None
                    if w.current is None
                    else {
                        "provider": w.current.provider,
                        "instance_type": w.current.instance_type,
                        "count": w.current.count,
                        "region": w.current.region,
                    },
                    "description": w.description,
                }
                for w in scenarios
            ],
            sets=[{"name": name, "scenarios": list(members)} for name, members in sets_.items()],
        )
        typer.echo(json.dumps(doc, indent=2, allow_nan=False))
        return
    from rich import box
    from rich.table import Table
    from rich.text import Text

    narrow = console.width < 120  # at 80 columns the description goes on its own line under each row
    table = Table(
        title=f"Scenarios ({len(scenarios)})",
        title_justify="left",
        header_style="bold",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        show_edge=False,
    )
    table.add_column("ID", no_wrap=True)
    for col in ("Model", "Task", "Pricing"):
        table.add_column(col, overflow="fold")
    table.add_column("Current", no_wrap=True)
    if not narrow:
        table.add_column("Description", overflow="fold", min_width=20)
    for w in scenarios:
        cur = f"{w.current.count}x {w.current.instance_type}" if w.current else "-"
        table.add_row(w.id, w.model, w.task, w.pricing, cur, *(() if narrow else (w.description,)))
    sets = Table(title=f"Sets ({len(sets_)})", title_justify="left", header_style="bold")
    sets.add_column("Set")
    sets.add_column("Scenarios", overflow="fold")
    for name, members in sets_.items():
        sets.add_row(name, ", ".join(members))
    console.print(table)
    if narrow:
        console.print("[bold]Descriptions[/]")
        for w in scenarios:
            console.print(Text.assemble("  ", (w.id, "bold"), ": ", w.description))
        console.print()
    console.print(sets)


@app.command("run")
def run_cmd(
    scenario_id: Annotated[
        str, typer.Argument(metavar="ID", help="Scenario id (see `gpufleet scenarios list`).")
    ],
    top: TopOpt = 5,
    catalog: CatalogOpt = None,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
) -> None:
    """Run one scenario: its recommendation and, when it has a current deployment, the migration."""
    from gpufleet.recommend.api import run_scenario
    from gpufleet.recommend.scenarios import get_scenario

    workload = get_scenario(scenario_id)
    result = run_scenario(scenario_id, offers=catalog_offers(catalog), limit=top)
    emit(result, fmt, output, assumption_notes([workload]))
    exit_if_no_candidate(result)


@app.command("run-set")
def run_set_cmd(
    name: Annotated[str, typer.Argument(help="Set name (see `gpufleet scenarios list`).")],
    top: TopOpt = 5,
    catalog: CatalogOpt = None,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr.")
    ] = True,
) -> None:
    """Run every scenario of a set, with a progress bar on stderr, and report them together."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from gpufleet.recommend.api import run_scenario_set
    from gpufleet.recommend.scenarios import get_scenario, get_scenario_set

    members = get_scenario_set(name)
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        disable=not progress,
    )
    with bar:
        task = bar.add_task(f"Running {name}", total=len(members))

        def advance(done: int, total: int, scenario: str) -> None:
            bar.update(task, completed=done, total=total, description=f"{name}: {scenario}")

        result = run_scenario_set(name, offers=catalog_offers(catalog), limit=top, progress=advance)
    emit(result, fmt, output, assumption_notes([get_scenario(s) for s in members]))
    exit_if_no_candidate(result)
