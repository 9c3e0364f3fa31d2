"""`gpufleet catalog update`: refresh prices from the provider price APIs (Azure, AWS, GCP).

The only command that touches the network. It shows a progress bar while fetching, then a summary: rows read,
offers and commitment rates normalised, rows that could not be mapped (with the top instance types), the
files written and the capture time. ``--dry-run`` fetches and summarises but writes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gpufleet.cli.console import console, err_console
from gpufleet.errors import InputError, UnknownNameError
from gpufleet.validation import check_number

if TYPE_CHECKING:
    from rich.table import Table

    from gpufleet.catalog.fetch.normalise import RefreshResult
    from gpufleet.catalog.fetch.pipeline import WrittenFiles

_TOP_UNMAPPED = 10


def _summary(result: RefreshResult, written: WrittenFiles | None) -> Table:
    from rich.table import Table

    t = Table(title=f"Price refresh: {result.provider}", show_header=False, title_justify="left")
    t.add_column("what", style="bold")
    t.add_column("value")
    t.add_row("regions", ", ".join(result.regions))
    t.add_row("captured_at", result.captured_at)
    t.add_row("source", result.source)
    t.add_row("price rows read", str(result.rows_read))
    t.add_row("offers (GPU machines)", str(len(result.offers)))
    t.add_row("commitment rates", str(len(result.rates)))
    t.add_row("unmapped rows", str(result.unmapped_rows))
    t.add_row("rows left out on purpose", str(sum(result.skipped.values())))
    t.add_row("written", "nothing (--dry-run)" if written is None else "2 files (below)")
    return t


def _details(result: RefreshResult) -> Table:
    from rich.table import Table

    t = Table(title="Not mapped (no shape in the shipped catalog) and left out", title_justify="left")
    t.add_column("kind")
    t.add_column("what")
    t.add_column("rows", justify="right")
    for name, n in list(result.unmapped.items())[:_TOP_UNMAPPED]:
        t.add_row("unmapped", name, str(n))
    if len(result.unmapped) > _TOP_UNMAPPED:
        t.add_row("unmapped", f"... {len(result.unmapped) - _TOP_UNMAPPED} more", "")
    for reason, n in result.skipped.items():
        t.add_row("left out", reason, str(n))
    return t


def update(
    provider: Annotated[
        str, typer.Option("--provider", help="azure, aws or gcp (gcp needs GPUFLEET_GCP_API_KEY).")
    ],
    region: Annotated[
        list[str] | None,
        typer.Option(
            "--region", help="Region code (repeatable or comma-separated). Default: catalog regions."
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Fetch and summarise; write nothing.")] = False,
    network_budget: Annotated[
        float,
        typer.Option(
            "--network-budget",
            help="Total network time of this command (s; every request, retry and wait; each request also "
            "times out after 15 s to connect and 60 s without data). When spent, the update stops and "
            "writes nothing.",
        ),
    ] = 900.0,
) -> None:
    """Fetch current prices from a provider's public price API into the user data directory."""
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from gpufleet.catalog.fetch import store
    from gpufleet.catalog.fetch.pipeline import PROVIDERS, refresh, write_result  # httpx: only here

    check_number("network_budget", network_budget, maximum=86_400.0, flag="--network-budget")
    provider = provider.strip().lower()
    if provider not in PROVIDERS:
        raise UnknownNameError(
            "price-API provider", provider, PROVIDERS, hint="Refresh supports aws, azure, gcp."
        )
    regions = [r.strip() for item in region or () for r in item.split(",") if r.strip()]
    if region and not regions:  # `--region ""` fetched every catalog region
        raise InputError(
            f"--region {', '.join(map(repr, region))} names no region. Give region codes such as us-east-1 "
            "(repeatable or comma-separated), or leave --region out for the catalog's regions."
        )
    if not dry_run:  # refuse a foreign file before spending minutes on the network
        store.check_provider_writable(provider)
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} regions"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    ) as bar:
        task = bar.add_task(f"{provider}: starting", total=None)

        def progress(description: str, done: int, total: int | None) -> None:
            bar.update(task, description=description, completed=done, total=total)

        result = refresh(provider, regions or None, progress=progress, budget_s=network_budget)
    written = None if dry_run else write_result(result)
    console.print(_summary(result, written))
    if written is not None:
        for path, rows in (
            (written.offers_path, written.offer_rows),
            (written.commitments_path, written.rate_rows),
        ):
            console.print(f"Wrote {path} ({rows} rows)", soft_wrap=True, highlight=False)
    if result.unmapped or result.skipped:
        console.print(_details(result))


def commitments(
    override: Annotated[
        Path | None,
        typer.Option(
            "--override", help="YAML/JSON file overriding the discount table (see docs/pricing.md)."
        ),
    ] = None,
) -> None:
    """Show the commitment-discount assumptions in force (table defaults, overrides, fetched rates)."""
    from rich.table import Table

    from gpufleet.catalog.pricing import describe_assumptions, load_commitment_assumptions

    rows = describe_assumptions(load_commitment_assumptions(override))
    from rich.text import Text

    narrow = console.width < 140  # source and note go below the table, by reference number
    t = Table(title="Commitment assumptions (discount = 1 - committed / on-demand)", title_justify="left")
    cols = ("provider", "program", "term", "discount", "basis", "verified")
    for col in (*cols, "ref") if narrow else (*cols, "source", "note"):
        t.add_column(col, overflow="fold", no_wrap=col in ("term", "discount", "verified", "ref"))
    for i, r in enumerate(rows, 1):
        cells = [
            r.provider,
            r.program,
            f"{r.term_years} y",
            f"{r.discount_fraction:.0%}",
            r.basis,
            "yes" if r.verified else "[yellow]no[/]",
        ]
        t.add_row(*cells, *([Text(f"[{i}]")] if narrow else [Text(r.source), Text(r.note)]))
    console.print(t)
    if narrow:
        for i, r in enumerate(rows, 1):
            text = f"[{i}] Source: {r.source.rstrip('.')}." + (f" Note: {r.note}" if r.note else "")
            console.print(text, highlight=False, markup=False)
    console.print(
        "Providers and terms not listed have no commitment price (NaN), never an invented one.",
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    """Attach `update` and `commitments` to the `catalog` group."""
    app.command("update")(update)
    app.command("commitments")(commitments)
