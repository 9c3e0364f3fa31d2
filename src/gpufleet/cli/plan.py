"""`gpufleet plan FLEET.yaml`: plan a whole fleet (MILP, HiGHS) and export it.

Formats: table (terminal), json, markdown, html (charts), csv (plan lines), focus (FOCUS-shaped CSV),
skypilot (one task YAML per placement, into the -o folder), k8s (Kubernetes manifests, one per cluster =
provider/region: into the -o folder, or one cluster's with --cluster). Exit codes (gpufleet.cli.exit_codes):
an infeasible fleet is reported with the binding constraints, then exits 4; a SkyPilot export that leaves
placements out (providers SkyPilot has no cloud for, on-premises sites) lists each on stderr and exits 6; a
bad fleet file exits 2, and so does a k8s export of a plan spanning several clusters into one file or stdout
without --cluster (nothing is written: applied to one cluster, that file would run every region there).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gpufleet.cli.console import console, err_console
from gpufleet.cli.given import reject_ignored
from gpufleet.errors import InputError

if TYPE_CHECKING:
    from gpufleet.catalog.offers import OfferTable
    from gpufleet.fleet.types import Fleet, FleetPlan


class PlanFormat(StrEnum):
    table = "table"
    json = "json"
    markdown = "markdown"
    html = "html"
    csv = "csv"
    focus = "focus"
    skypilot = "skypilot"
    k8s = "k8s"


def _period(text: str | None) -> date:
    if text is None:
        now = datetime.now(UTC)
        return date(now.year, now.month, 1)
    try:
        return datetime.strptime(text, "%Y-%m").date()
    except ValueError:
        raise InputError(f"--period {text!r} is not a month; write it as YYYY-MM, e.g. 2026-12.") from None


def _write(path: Path, text: str) -> None:
    from gpufleet.fileio import atomic_write_text

    if not path.parent.is_dir():
        raise InputError(f"Cannot write {path}: the folder {path.parent} does not exist. Create it first.")
    if path.is_dir():
        raise InputError(f"Cannot write {path}: it is a folder. Pass a file path with -o/--output.")
    atomic_write_text(path, text)
    err_console.print(f"Written to {path}", highlight=False)


def _skypilot_folder(output: Path) -> Path:
    """``output`` as the folder for the SkyPilot task files: an existing folder, or a new one in an existing
    folder (created when the tasks are written, as ``-o sky/`` in docs/fleet.md expects); checked before
    the solve so a bad path fails fast."""
    if output.is_dir():
        return output
    if output.exists():
        raise InputError(
            f"--output {output} is a file, but --format skypilot writes one task file per placement into a "
            "folder. Give a folder path (a new folder is created)."
        )
    if not output.parent.is_dir():
        raise InputError(
            f"--output {output}: the folder {output.parent} does not exist, so the SkyPilot task folder "
            f"cannot be created in it. Create it first (mkdir -p {output.parent}) or give a folder in an "
            "existing one."
        )
    return output


def _k8s_folder(output: Path | None) -> Path | None:
    """``output`` as the folder for one manifest per cluster (an existing folder, or a new path without a
    file extension in an existing folder), or None where it names a file (or is not given)."""
    if output is None or not (output.is_dir() or (not output.suffix and not output.exists())):
        return None
    if not output.parent.is_dir():
        raise InputError(
            f"--output {output}: the folder {output.parent} does not exist, so the manifest folder cannot be "
            f"created in it. Create it first (mkdir -p {output.parent}) or give a folder in an existing one."
        )
    return output


def register(app: typer.Typer) -> None:
    """Attach `gpufleet plan` to the root app."""

    @app.command("plan")
    def plan_cmd(
        fleet_file: Annotated[
            Path, typer.Argument(help="Fleet file (YAML/JSON): workloads and constraints.")
        ],
        fmt: Annotated[
            PlanFormat,
            typer.Option("--format", "-f", help="table, json, markdown, html, csv, focus, skypilot or k8s."),
        ] = PlanFormat.table,
        output: Annotated[
            Path | None,
            typer.Option(
                "--output",
                "-o",
                help="File to write (skypilot: a folder for the task files, created if missing; k8s: a "
                "file, or a folder (no extension) for one manifest per cluster).",
            ),
        ] = None,
        time_limit: Annotated[
            float,
            typer.Option("--time-limit", min=0.1, help="Solver time limit (s; 0.1 to 86400 = one day)."),
        ] = 60.0,
        gap: Annotated[
            float, typer.Option("--gap", min=0.0, max=0.5, help="Relative optimality gap to stop at.")
        ] = 1e-6,
        savings: Annotated[
            bool, typer.Option("--savings/--no-savings", help="Compute savings by lever.")
        ] = True,
        period: Annotated[str | None, typer.Option("--period", help="FOCUS billing month, YYYY-MM.")] = None,
        image: Annotated[str, typer.Option("--image", help="Container image for the k8s manifests.")] = "",
        cluster: Annotated[
            str,
            typer.Option(
                "--cluster",
                help="k8s: write only this cluster's manifest (provider-region, e.g. aws-us-east-1); needed "
                "for one file or stdout when the plan spans several clusters.",
            ),
        ] = "",
        kueue: Annotated[
            bool | None,
            typer.Option(
                "--kueue/--no-kueue",
                help="k8s: label Jobs with their team's Kueue LocalQueue and emit the Kueue queues and "
                "flavors (default: the fleet's `kueue:`).",
            ),
        ] = None,
        catalog: Annotated[
            list[Path] | None, typer.Option("--catalog", help="User catalog (repeatable).")
        ] = None,
        allow_unverified_commitments: Annotated[
            bool,
            typer.Option(
                "--allow-unverified-commitments",
                help="Also price new commitments with rates that have no per-offer source (the shipped "
                "providers' 'up to' ceilings); same as the fleet's allow_unverified_commitments: true.",
            ),
        ] = False,
    ) -> None:
        """Plan every workload of a fleet under quotas, budgets, commitments and regions (proven optimal)."""
        from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

        from gpufleet.catalog.offers import load_offers
        from gpufleet.fleet.plan import plan_fleet
        from gpufleet.fleet.spec import read_fleet_file

        if fmt is PlanFormat.skypilot and output is None:
            raise InputError(
                "--format skypilot writes one file per placement: give a folder with -o/--output."
            )
        start = _period(period)
        if fmt is PlanFormat.skypilot and output is not None:
            output = _skypilot_folder(output)
        if image and (not image.strip() or any(c.isspace() or not c.isprintable() for c in image)):
            raise InputError(
                f"--image {image!r} is not a container image reference: it holds spaces or control "
                "characters, which no registry accepts. Pass one like ghcr.io/org/server:1.2."
            )
        if fmt is not PlanFormat.k8s:
            reject_ignored(
                ["image", "cluster", "kueue"],
                why=f"with --format {fmt.value} (the image goes into the Kubernetes manifests only)",
                fix="Leave --image out, or pass --format k8s.",
            )
        if fmt is not PlanFormat.focus:
            reject_ignored(
                ["period"],
                why=f"with --format {fmt.value} (the billing month is a FOCUS export field only)",
                fix="Leave --period out, or pass --format focus.",
            )
        fleet = read_fleet_file(fleet_file)
        if allow_unverified_commitments:
            from dataclasses import replace

            fleet = replace(fleet, constraints=replace(fleet.constraints, allow_unverified_commitments=True))
        offers = load_offers(catalog) if catalog else None
        if kueue is not None:
            from dataclasses import replace

            fleet = replace(fleet, kueue=kueue)
        k8s_dir = _k8s_folder(output) if fmt is PlanFormat.k8s else None
        if output is not None and fmt is not PlanFormat.skypilot and k8s_dir is None:  # before the solve
            from gpufleet.fileio import check_output_suffix

            check_output_suffix(output, fmt.value)
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TimeElapsedColumn(),
            console=err_console,
            transient=True,
        ) as bar:
            tasks: dict[str, TaskID] = {}

            def progress(stage: str, done: int, total: int) -> None:
                if stage not in tasks:
                    label = "Sizing workloads" if stage == "options" else "Solving (HiGHS)"
                    tasks[stage] = bar.add_task(label, total=total)
                bar.update(tasks[stage], completed=done, total=total)

            plan = plan_fleet(
                fleet,
                offers=offers,
                time_limit_s=time_limit,
                mip_rel_gap=gap,
                savings=savings,
                progress=progress,
            )
        if fmt is PlanFormat.k8s:
            _output_k8s(plan, output, fleet, image=image, offers=offers, folder=k8s_dir, cluster=cluster)
        else:
            _output(plan, fmt, output, fleet, image=image, start=start, offers=offers)
        _exit_if_infeasible(plan)


def _exit_if_infeasible(plan: FleetPlan) -> None:
    """Exit 4 (after the output) where the solver found no feasible plan."""
    if plan.status in ("infeasible", "error"):
        from gpufleet.cli.exit_codes import ExitCode, exit_with

        exit_with(ExitCode.INFEASIBLE_PLAN, f"plan {plan.status}: {plan.message}")


def _output(
    plan: FleetPlan,
    fmt: PlanFormat,
    output: Path | None,
    fleet: Fleet,
    *,
    image: str,
    start: date,
    offers: OfferTable | None,
) -> None:
    """Print or write ``plan`` in ``fmt``; a SkyPilot export that left placements out exits 6 after listing
    them (an infeasible plan exits 4 first: it has no placements to export)."""
    from gpufleet import __version__
    from gpufleet.fleet import export
    from gpufleet.report import fleet_report as fr

    if fmt is PlanFormat.table:
        if output is None:
            console.print(fr.render_plan_terminal(plan))
            return
        from io import StringIO

        from rich.console import Console

        buf = StringIO()
        Console(file=buf, width=200, color_system=None).print(fr.render_plan_terminal(plan))
        _write(output, buf.getvalue())
        return
    if fmt is PlanFormat.skypilot:
        assert output is not None
        try:
            output.mkdir(exist_ok=True)
        except OSError as exc:
            raise InputError(
                f"Cannot create the SkyPilot task folder {output}: {exc.strerror or exc}. "
                "Give another folder."
            ) from None
        sky = export.skypilot_export(
            plan,
            jobs=export.job_names(fleet),
            zone_ids=export.catalog_zone_ids(offers) if offers is not None else None,
        )
        for name, text in sky.tasks.items():
            _write(output / name, text)
        if not sky.tasks and not sky.left_out:
            err_console.print("No placement in the plan: no SkyPilot task written.", highlight=False)
        if sky.left_out:
            from gpufleet.cli.console import user_text
            from gpufleet.cli.exit_codes import ExitCode, exit_with

            for line in sky.left_out:
                err_console.print(f"Left out: {user_text(line)}", highlight=False, soft_wrap=True)
            exit_with(
                ExitCode.INCOMPLETE_EXPORT,
                f"{len(sky.tasks)} SkyPilot task(s) written to {output}, {len(sky.left_out)} "
                "placement(s) left out (listed above).",
            )
        return
    text = {
        PlanFormat.json: lambda: fr.render_plan_json(plan),
        PlanFormat.markdown: lambda: fr.render_plan_markdown(plan),
        PlanFormat.html: lambda: fr.render_plan_html(plan),
        PlanFormat.csv: lambda: export.lines_csv(plan),
        PlanFormat.focus: lambda: export.focus_csv(plan, period_start=start, version=__version__),
    }[fmt]()
    if fmt is PlanFormat.html and output is None:
        output = Path("gpufleet-plan.html")
    if output is None:
        typer.echo(text, nl=False)
    else:
        _write(output, text)


def _output_k8s(
    plan: FleetPlan,
    output: Path | None,
    fleet: Fleet,
    *,
    image: str,
    offers: OfferTable | None,
    folder: Path | None,
    cluster: str,
) -> None:
    """One manifest per cluster (provider/region, or on-prem site: fleet.export_k8s): into ``folder``, or the
    one cluster's (``cluster``, or the plan's only one) to ``output`` / stdout. A plan spanning several
    clusters written to one file without ``cluster`` is refused (exit 2) before anything is written."""
    from gpufleet.fleet import export, export_k8s

    clusters = export_k8s.k8s_clusters(
        plan,
        image=image,
        jobs=export.job_names(fleet),
        zone_ids=export.catalog_zone_ids(offers) if offers is not None else None,
        kueue=fleet.kueue,
    )
    everyone = [c.name for c in clusters]
    names = ", ".join(everyone) or "none"
    if not clusters:  # an infeasible plan exits 4 next
        err_console.print("No placement in the plan: no Kubernetes manifest written.", highlight=False)
        return
    if fleet.kueue and not any(d["kind"] == "Job" for c in clusters for d in c.docs):
        err_console.print(
            "Kueue: the plan has no Job (training or `job: true` workloads), so no queue is written; "
            "Deployments and LeaderWorkerSets are not queued.",
            highlight=False,
        )
    if cluster:
        chosen = [c for c in clusters if c.name == cluster]
        if not chosen:
            raise InputError(
                f"--cluster {cluster!r} is not a cluster of this plan; its clusters (provider-region): "
                f"{names}. Pass one of them, or leave --cluster out with -o FOLDER for all."
            )
    elif folder is None and len(clusters) > 1:
        raise InputError(
            f"The plan places workloads in {len(clusters)} Kubernetes clusters ({names}): one manifest "
            "is applied to one cluster, where the other regions' pods would select nodes it lacks and stay "
            "Pending: the plan would run in one region (no HA). Nothing written. Pass -o FOLDER (one file "
            "per cluster) or --cluster NAME (that cluster's manifest only)."
        )
    else:
        chosen = clusters
    if not image:
        err_console.print(
            "Note: no --image: the manifests' containers have no image; set it before applying (each "
            "file's header says so).",
            highlight=False,
        )
    if folder is not None:
        try:
            folder.mkdir(exist_ok=True)
        except OSError as exc:
            raise InputError(
                f"Cannot create the manifest folder {folder}: {exc.strerror or exc}. Give another folder."
            ) from None
        for c in chosen:
            _write(folder / c.file_name, export_k8s.cluster_yaml(plan, c, clusters=everyone))
        return
    text = "".join(export_k8s.cluster_yaml(plan, c, clusters=everyone) for c in chosen)
    if output is None:
        typer.echo(text, nl=False)
    else:
        _write(output, text)
