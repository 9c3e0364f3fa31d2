"""`gpufleet catalog gpus|models|offers` (and `update`, from :mod:`gpufleet.cli.catalog_update`)."""

from __future__ import annotations

import csv
import io
import math
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box

from gpufleet.cli import catalog_update
from gpufleet.cli.console import console, err_console
from gpufleet.errors import InputError

if TYPE_CHECKING:
    from rich.table import Table

    from gpufleet.catalog.offers import OfferTable
    from gpufleet.catalog.specs import AcceleratorSpec

app = typer.Typer(help="Accelerator specs and the multi-cloud GPU offer catalog.", no_args_is_help=True)
catalog_update.register(app)


class Format(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


class SortBy(StrEnum):
    price = "price"
    price_per_gpu = "price_per_gpu"
    price_per_gpu_memory = "price_per_gpu_memory"


def _num(v: float | None, digits: int = 2) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:,.{digits}f}"


def _echo_rows(kind: str, rows: list[dict[str, Any]], fmt: Format) -> bool:
    """Print ``rows`` as JSON (envelope ``kind``) or CSV (lists joined by spaces); False for a table."""
    if fmt is Format.json:
        from gpufleet.report.json_report import dump_json, envelope

        typer.echo(dump_json(envelope(kind, **{kind: rows})), nl=False)
        return True
    if fmt is Format.csv:
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows({k: " ".join(v) if isinstance(v, list) else v for k, v in r.items()} for r in rows)
        typer.echo(buf.getvalue(), nl=False)
        return True
    return False


# --- gpus ---------------------------------------------------------------------------------------------------
def _spec_rows() -> list[dict[str, Any]]:
    from gpufleet.catalog.listing import spec_rows

    return spec_rows()


@app.command("gpus")
def gpus(
    fmt: Annotated[Format, typer.Option("--format", help="Output format.")] = Format.table,
) -> None:
    """List every accelerator spec (device-reported memory, dense peaks, interconnect, `uncertain` flag)."""
    from gpufleet.catalog.specs import load_specs

    rows = _spec_rows()
    if _echo_rows("gpus", rows, fmt):
        return
    from rich.table import Table

    narrow = console.width < 120  # drop the long marketing name; the id is what every flag takes
    table = Table(
        title=f"{len(rows)} accelerators (dense peaks; memory as the device reports it)",
        title_justify="left",
        box=box.SIMPLE_HEAD if narrow else box.HEAVY_HEAD,
        show_edge=not narrow,
        pad_edge=not narrow,
    )
    for col, justify in (
        ("id", "left"),
        ("name", "left"),
        ("mem GiB", "right"),
        ("BW GB/s", "right"),
        ("bf16 TFLOPS", "right"),
        ("fp8 TFLOPS", "right"),
        ("scale-up", "left"),
        ("uncertain", "center"),
    ):
        if narrow and col == "name":
            continue
        table.add_column(col, justify=justify, min_width=len(col) if col == "uncertain" else None)  # type: ignore[arg-type]
    for s in sorted(load_specs().values(), key=lambda s: (s.vendor, s.id)):
        table.add_row(
            s.id,
            *(() if narrow else (s.name,)),
            _num(s.memory_gib),
            _num(s.mem_bw_gb_per_s, 0),
            _num(s.bf16_tflops, 0),
            _num(s.fp8_tflops, 0),
            _interconnect(s),
            "[yellow]yes[/]" if s.uncertain else "no",
        )
    console.print(table)
    console.print("uncertain = some figures unconfirmed; see the source column (`--format csv`).")


def _interconnect(s: AcceleratorSpec | None) -> str:
    if s is None:
        return "-"
    if not s.has_scaleup_fabric:
        return s.host_link or "PCIe"
    return f"{s.scaleup_interconnect} ({s.scaleup_bw_gb_per_s:,.0f} GB/s)"


# --- models -------------------------------------------------------------------------------------------------
def _model_rows() -> list[dict[str, Any]]:
    from gpufleet.catalog.listing import model_rows

    return model_rows()


@app.command("models")
def models(
    fmt: Annotated[Format, typer.Option("--format", help="Output format.")] = Format.table,
) -> None:
    """List every shipped model architecture (parameters counted from its config, attention, MoE, context,
    aliases); any Hugging Face config.json path works too wherever a model is asked for."""
    rows = _model_rows()
    if _echo_rows("models", rows, fmt):
        return
    from rich.table import Table

    table = Table(
        title=f"{len(rows)} models (parameters counted from each config.json; aliases resolve to the id)",
        title_justify="left", box=box.SIMPLE_HEAD,
    )  # fmt: skip
    for col in ("id", "params B", "active B", "layers", "attention", "experts", "context", "aliases"):
        table.add_column(col, justify="left" if col in ("id", "attention", "aliases") else "right")
    for r in rows:
        moe = f"{r['experts']} (top {r['experts_per_token']})" if r["experts"] else "-"
        heads = f"{r['attention']} {r['attention_heads']}/{r['kv_heads']}"
        table.add_row(r["id"], _num(r["params_b"]), _num(r["active_params_b"]), str(r["layers"]), heads, moe,
                      f"{r['context_tokens']:,}", ", ".join(r["aliases"]) or "-")  # fmt: skip
    console.print(table)
    console.print(
        "attention: kind query-heads/KV-heads; `--format csv` adds the Hugging Face repo and sources."
    )


# --- offers -------------------------------------------------------------------------------------------------
def _offers_json(table: OfferTable) -> str:
    from gpufleet.catalog.listing import offer_rows
    from gpufleet.report.json_report import dump_json, envelope

    return dump_json(envelope("offers", offers=offer_rows(table)))


def _extra_filters(
    table: OfferTable, gpus: list[str], regions: list[str], geos: list[str], provider_classes: list[str]
) -> OfferTable:
    from gpufleet.catalog.listing import extra_filters

    return extra_filters(table, gpus, regions, geos, provider_classes)


def _check_flag(
    flag: str, value: float | None, allowed: str, *, maximum: float, zero_ok: bool = False
) -> None:
    from gpufleet.catalog.listing import check_filter_value

    check_filter_value(flag, value, allowed, maximum=maximum, zero_ok=zero_ok)


def _offers_table(table: OfferTable, shown: OfferTable, spot: bool, *, narrow: bool = False) -> Table:
    """Offers as a terminal table; ``narrow`` (under 140 columns) drops interconnect, capture date and the
    price the sort does not use (spot without --spot, on-demand with it)."""
    from rich.table import Table

    from gpufleet.catalog.regions import region_text
    from gpufleet.catalog.specs import load_specs

    specs = load_specs()
    t = Table(
        title=f"{len(table)} offers, prices in USD"
        + (f" (showing the first {len(shown)}; use --limit)" if len(shown) < len(table) else ""),
        title_justify="left",
        box=box.SIMPLE_HEAD if narrow else box.HEAVY_HEAD,
        show_edge=not narrow,
        pad_edge=not narrow,
    )
    per_gpu_col = "spot $/GPU-h" if spot else "$/GPU-h"
    numeric = ("GiB/GPU", "$/h", per_gpu_col, "spot $/h")
    cols = (
        "provider",
        "region",
        "instance",
        "GPUs",
        "GiB/GPU",
        "interconnect",
        "$/h",
        per_gpu_col,
        "spot $/h",
        "date",
    )
    # narrow: keep the price the sort uses (spot with --spot) and drop interconnect and capture date
    dropped = ("interconnect", "date", "$/h" if spot else "spot $/h") if narrow else ()
    for col in cols:
        if col in dropped:
            continue
        justify = "right" if col in numeric else "left"
        fixed = col in numeric or col in ("provider", "GPUs")
        t.add_column(col, justify=justify, overflow="fold", no_wrap=fixed)  # type: ignore[arg-type]
    keeps = [c not in dropped for c in cols]
    for o in shown.records():
        per_gpu = o.price_per_gpu_usd_per_hour
        if spot and o.price_spot_usd_per_hour is not None and o.gpu_count > 0:
            per_gpu = o.price_spot_usd_per_hour / o.gpu_count
        cells = [
            o.provider,
            region_text(o.region) + (f" ({o.zone})" if o.zone else ""),
            o.instance_type,
            f"{o.gpu_count:g}x {o.gpu}" if o.gpu else "CPU only",
            _num(o.gpu_memory_gib) if o.gpu else "-",
            _interconnect(specs.get(o.gpu)) if o.gpu else "-",
            _num(o.price_on_demand_usd_per_hour, 3),
            _num(per_gpu, 3),
            _num(o.price_spot_usd_per_hour, 3),
            o.captured_at,
        ]
        t.add_row(*(c for c, keep in zip(cells, keeps, strict=True) if keep))
    return t


def _age_footer(table: OfferTable) -> str:
    """One line: providers grouped by the age of their prices."""
    from gpufleet.catalog.offers import catalog_age

    groups: dict[str, list[str]] = {}
    for a in catalog_age(table):
        dated = [c for c in a.captured_at if c != "old"]
        key = f"{', '.join(dated)} ({a.human})" if dated else a.human
        groups.setdefault(key, []).append(a.provider)
    return "Catalog age: " + "; ".join(f"{k}: {', '.join(v)}" for k, v in groups.items()) + "."


@app.command("offers")
def offers(
    gpu: Annotated[
        list[str] | None,
        typer.Option(
            "--gpu",
            help="Spec id, alias or family, e.g. H100 (SXM, PCIe and NVL), A100-80GB (repeatable or "
            "comma-separated).",
        ),
    ] = None,
    min_gpu_memory: Annotated[
        float | None, typer.Option("--min-gpu-memory", help="Minimum memory per GPU (GiB).")
    ] = None,
    gpu_count: Annotated[float | None, typer.Option("--gpus", help="Exact GPU count per machine.")] = None,
    provider: Annotated[
        list[str] | None, typer.Option("--provider", help="Provider (repeatable or comma-separated).")
    ] = None,
    region: Annotated[
        list[str] | None,
        typer.Option(
            "--region",
            help="Glob over the provider's own region names, e.g. 'us-*' (repeatable or comma-separated).",
        ),
    ] = None,
    geo: Annotated[
        list[str] | None,
        typer.Option(
            "--geo",
            help="Geography across providers: us, ca, latam, eu, uk, me, africa, india, apac, cn, oceania, "
            "europe, north_america, americas, asia (repeatable or comma-separated).",
        ),
    ] = None,
    provider_class: Annotated[
        list[str] | None,
        typer.Option(
            "--provider-class",
            help="hyperscaler, gpu_cloud, marketplace or aggregator (repeatable or comma-separated).",
        ),
    ] = None,
    spot: Annotated[
        bool, typer.Option("--spot", help="Only offers with a spot price; price by spot.")
    ] = False,
    max_price: Annotated[
        float | None,
        typer.Option("--max-price", help="Maximum machine price (USD/h; the spot price with --spot)."),
    ] = None,
    sort: Annotated[SortBy, typer.Option("--sort", help="Sort key, cheapest first.")] = SortBy.price_per_gpu,
    fmt: Annotated[Format, typer.Option("--format", help="Output format.")] = Format.table,
    catalog: Annotated[
        list[Path] | None, typer.Option("--catalog", help="User catalog YAML/JSON (repeatable).")
    ] = None,
    refreshed: Annotated[
        bool, typer.Option("--refreshed", help="Use prices from `gpufleet catalog update` where present.")
    ] = False,
    limit: Annotated[
        int, typer.Option("--limit", help="Rows shown in the table (JSON/CSV are unlimited).")
    ] = 50,
) -> None:
    """List GPU offers across providers, filtered and sorted (prices in USD per hour)."""
    from gpufleet.validation import MAX_GPU_MEMORY_GIB, MAX_PRICE_USD_PER_HOUR, MAXIMA

    if limit < 1:
        raise InputError(f"--limit must be a positive integer; got {limit}. Use e.g. --limit 20.")
    _check_flag("--limit", limit, "a positive number of rows, e.g. --limit 20", maximum=MAXIMA["limit"])
    _check_flag("--gpus", gpu_count, "a positive GPU count per machine, e.g. --gpus 8", maximum=1024)
    _check_flag(
        "--max-price",
        max_price,
        "a positive machine price in USD per hour, e.g. --max-price 10",
        maximum=MAX_PRICE_USD_PER_HOUR,
    )
    _check_flag(
        "--min-gpu-memory",
        min_gpu_memory,
        "zero or more GiB per GPU, e.g. --min-gpu-memory 80",
        zero_ok=True,
        maximum=MAX_GPU_MEMORY_GIB,
    )
    from gpufleet.catalog.listing import query_offers
    from gpufleet.catalog.offers import load_offers, write_offers_csv
    from gpufleet.recommend.filters import split_values

    gpus, regions, geos = split_values(gpu), split_values(region), split_values(geo)
    classes = split_values(provider_class)
    table = load_offers(user_catalogs=tuple(catalog or ()), include_refreshed=refreshed)
    result = query_offers(
        table, gpus=gpus, providers=split_values(provider), regions=regions, geos=geos,
        provider_classes=classes, min_gpu_memory_gib=min_gpu_memory, gpu_count=gpu_count, spot=spot,
        max_price_usd_per_hour=max_price, sort=sort.value,
    )  # fmt: skip
    extra = _extra_filters(table, list(gpus), list(regions), list(geos), list(classes))
    if fmt is Format.json:
        typer.echo(_offers_json(result), nl=False)
        return
    if fmt is Format.csv:
        typer.echo(write_offers_csv(result), nl=False)
        return
    if len(result) == 0:
        without_spot = extra.filter(
            min_gpu_memory_gib=min_gpu_memory, gpus=gpu_count, provider=list(split_values(provider)) or None
        )
        if spot and len(without_spot):
            spot_providers = sorted(set(table.filter(spot=True).column("provider").tolist()))
            msg = (
                f"No offer matches: {len(without_spot)} offers pass the other filters but none has a spot "
                f"price{' under --max-price' if max_price is not None else ''}. Providers with spot prices: "
                f"{', '.join(spot_providers)}. Drop --spot (on-demand prices) or pick one of those providers."
            )
        else:
            msg = "No offer matches these filters. Loosen them (e.g. drop --region, --gpus or --max-price)."
        err_console.print(msg, highlight=False, soft_wrap=True)
        return
    console.print(_offers_table(result, result.take(slice(0, limit)), spot, narrow=console.width < 140))
    console.print(_age_footer(result), highlight=False)


# --- history ------------------------------------------------------------------------------------------------
class HistoryFormat(StrEnum):
    table = "table"
    json = "json"


class HistoryKind(StrEnum):
    on_demand = "on_demand"
    spot = "spot"


@app.command("history")
def history(
    provider: Annotated[str, typer.Option("--provider", help="Provider, e.g. aws.")],
    instance: Annotated[str, typer.Option("--instance", help="Instance type, e.g. p5.48xlarge.")],
    region: Annotated[str, typer.Option("--region", help="The provider's region name, e.g. us-east-1.")],
    days: Annotated[
        int, typer.Option("--days", help="Show refreshes captured in the last N days (1-3650).")
    ] = 90,
    kind: Annotated[
        HistoryKind | None, typer.Option("--kind", help="Only on_demand or spot prices (default: both).")
    ] = None,
    fmt: Annotated[HistoryFormat, typer.Option("--format", help="Output format.")] = HistoryFormat.table,
) -> None:
    """Dated prices of one machine: the shipped snapshot's, then each `gpufleet catalog update` (USD/h).

    Exits 3 when the provider does not offer that instance type in that region.
    """
    from gpufleet.catalog.history import price_history_answer
    from gpufleet.cli.exit_codes import ExitCode, exit_with

    answer = price_history_answer(
        provider=provider,
        instance_type=instance,
        region=region,
        price_kind=None if kind is None else kind.value,
        days=days,
    )
    if fmt is HistoryFormat.json:
        from gpufleet.report.json_report import dump_json, envelope, to_jsonable

        typer.echo(dump_json(envelope("price_history", **to_jsonable(answer))), nl=False)
    elif answer.points:
        from rich.table import Table

        table = Table(
            title=f"{provider} {instance} in {region}: price history (USD per machine-hour)",
            title_justify="left",
            box=box.SIMPLE_HEAD,
        )
        for col, justify in (("captured at", "left"), ("zone", "left"), ("kind", "left"),
                             ("USD/h", "right"), ("source", "left")):  # fmt: skip
            table.add_column(col, justify=justify)  # type: ignore[arg-type]
        for p in answer.points:
            table.add_row(p.captured_at, p.zone or "-", p.price_kind, _num(p.price_usd_per_hour, 4), p.source)
        console.print(table)
        console.print(
            f"Refreshes from the last {days} days (`gpufleet catalog update` adds one point each); the "
            "shipped snapshot's price comes first, dated by its own capture period.",
            highlight=False,
        )
    if not answer.points:
        exit_with(
            ExitCode.NO_CANDIDATE,
            f"{provider} lists no {instance} in {region}"
            + (f" with a {kind.value} price" if kind is not None else "")
            + ". `gpufleet catalog offers --provider "
            + f"{provider}` lists what it offers.",
        )
