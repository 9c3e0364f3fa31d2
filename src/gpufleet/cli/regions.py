"""`gpufleet regions`: compare every region that can run a workload (price kinds, offer depth, spot signals,
egress, transfer time, latency from a user location, grid carbon). Takes a workload file or the flags of
`gpufleet recommend`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gpufleet.cli import recommend as rc
from gpufleet.cli.console import console
from gpufleet.errors import InputError

if TYPE_CHECKING:
    from gpufleet.fleet.regions import RegionRow


def register(app: typer.Typer) -> None:
    @app.command("regions")
    def regions_cmd(
        workload_file: rc.WorkloadArg = None,
        name: rc.NameOpt = None,
        model: rc.ModelOpt = None,
        task: rc.TaskOpt = None,
        precision: rc.PrecisionOpt = None,
        input_len: rc.InputLenOpt = None,
        output_len: rc.OutputLenOpt = None,
        seq_len: rc.SeqLenOpt = None,
        batch: rc.BatchOpt = None,
        concurrency: rc.ConcurrencyOpt = None,
        target_rps: rc.RpsOpt = None,
        target_tps: rc.TpsOpt = None,
        ttft_ms: rc.TtftOpt = None,
        tpot_ms: rc.TpotOpt = None,
        tokens: rc.TokensOpt = None,
        deadline_hours: rc.DeadlineOpt = None,
        recipe: rc.RecipeOpt = None,
        optimizer: rc.OptimizerOpt = None,
        hours_per_month: rc.HoursOpt = None,
        schedule: rc.ScheduleOpt = None,
        provider: rc.ProviderOpt = None,
        region: rc.RegionOpt = None,
        vendor: rc.VendorOpt = None,
        geo: rc.GeoOpt = None,
        tier: rc.TierOpt = None,
        provider_class: rc.ProviderClassOpt = None,
        exclude_provider: rc.ExcludeProviderOpt = None,
        gpu: rc.GpuOpt = None,
        min_gpu_memory: rc.MinGpuMemOpt = None,
        gpus_per_node: rc.GpusPerNodeOpt = None,
        max_nodes: rc.MaxNodesOpt = None,
        max_price_per_gpu_hour: rc.MaxPricePerGpuOpt = None,
        confidence: rc.ConfidenceOpt = None,
        allow_fallback: rc.FallbackOpt = None,
        user_lat: Annotated[float | None, typer.Option("--user-lat", help="Users' latitude (deg).")] = None,
        user_lon: Annotated[float | None, typer.Option("--user-lon", help="Users' longitude (deg).")] = None,
        user_location: Annotated[
            list[str] | None,
            typer.Option(
                "--user-location",
                help="Where users are, NAME or NAME:SHARE (repeatable): a city of the region table (Paris, "
                "Frankfurt, Tokyo, ...) or LAT,LON, with its share of the traffic (0.6 or 60%; none: equal). "
                "RTT is then traffic-weighted / worst location, and --max-rtt-ms holds for every location.",
            ),
        ] = None,
        data_provider: Annotated[
            str | None, typer.Option("--data-provider", help="Where the data lives.")
        ] = None,
        data_region: Annotated[str | None, typer.Option("--data-region", help="Region of the data.")] = None,
        data_gib: Annotated[float, typer.Option("--data-gib", help="Dataset to move in (GiB).")] = 0.0,
        serving_gib: Annotated[
            float | None,
            typer.Option(
                "--serving-gib",
                help="Responses served to the internet (GiB/month). Default: estimated from a serving "
                "workload's target (output tokens/s x hours x 4 B/token).",
            ),
        ] = None,
        max_rtt_ms: Annotated[
            float | None,
            typer.Option(
                "--max-rtt-ms",
                help="Leave out regions farther than this round trip from the users (ms; needs --user-lat/"
                "--user-lon; regions without coordinates are left out too).",
            ),
        ] = None,
        bandwidth: Annotated[
            float, typer.Option("--bandwidth-gbps", help="Transfer bandwidth (Gbit/s).")
        ] = 10.0,
        limit: Annotated[int, typer.Option("--limit", min=1, help="Regions shown per workload.")] = 25,
        catalog: rc.CatalogOpt = None,
        fmt: rc.FormatOpt = rc.Format.table,
        output: rc.OutputOpt = None,
    ) -> None:
        """Where to run for these users and this data: regions by total monthly cost, RTT, carbon.

        Regions ranked by total monthly cost (compute, egress, data transfer) within the filters of
        `recommend` and --max-rtt-ms of the users, with price kinds, depth, spot, transfer time, RTT and
        carbon (gCO2e/month); the data's region always shown."""
        from gpufleet.fleet.regions import analyze_regions
        from gpufleet.report import fleet_report as fr

        params = dict(locals())
        params["pricing"] = None
        fields = rc._flag_fields(params)
        w = rc.resolve_workload(workload_file, name, fields)
        if (user_lat is None) != (user_lon is None):
            raise InputError(
                "Give the user location as both --user-lat and --user-lon (degrees), or neither."
            )
        loc = (user_lat, user_lon) if user_lat is not None and user_lon is not None else None
        from gpufleet.fleet.locations import parse_user_locations

        users = parse_user_locations(user_location) if user_location else ()
        a = analyze_regions(
            [w],
            offers=rc.catalog_offers(catalog),
            user_lat_lon=loc,
            user_locations=users,
            data_provider=data_provider,
            data_region=data_region,
            data_size_gib=data_gib,
            serving_egress_gib_per_month=serving_gib,
            bandwidth_gbit_s=bandwidth,
            max_rtt_ms=max_rtt_ms,
            limit=limit,
        )
        if fmt is rc.Format.table and output is None:
            console.print(fr.render_regions_terminal(a))
            _exit_if_no_region(a.rows)
            return
        render = {
            rc.Format.json: fr.render_regions_json,
            rc.Format.markdown: fr.render_regions_markdown,
            rc.Format.html: fr.render_regions_html,
        }.get(fmt)
        if render is None:
            raise InputError("--format table writes to the terminal; use json, markdown or html with -o.")
        text = render(a)
        if fmt is rc.Format.html and output is None:
            output = Path("gpufleet-regions.html")
        if output is None:
            typer.echo(text, nl=False)
            _exit_if_no_region(a.rows)
            return
        from gpufleet.cli.plan import _write

        _write(output, text)
        _exit_if_no_region(a.rows)


def _exit_if_no_region(rows: Sequence[RegionRow]) -> None:
    """Exit 3 (gpufleet.cli.exit_codes) after the output where no region can run the workload, or none is
    ranked: every region that can is beyond --max-rtt-ms (the data's region may still be shown, unranked,
    for comparison; before the fourth review of 2026-11-29 that row alone made the answer exit 0)."""
    from gpufleet.cli.exit_codes import ExitCode, exit_with

    if not rows:
        exit_with(ExitCode.NO_CANDIDATE, "no region can run the workload with these filters (see the notes).")
    elif all(r.rank is None for r in rows):
        exit_with(
            ExitCode.NO_CANDIDATE,
            "no region that can run the workload is within --max-rtt-ms of the users (every location); the "
            "data's region is shown unranked for comparison (see the notes). Raise --max-rtt-ms or move the "
            "users' locations.",
        )
