"""`gpufleet config check [FILES...]`: validate user files (kind told by content), show the configuration.

Kinds: user catalogs (gpufleet YAML/JSON, GPU Fleet Optimizer ``gpu_instances.json``), normalised offer CSVs,
workload files, scenario files (gpufleet YAML, GFO ``workloads.json`` and ``model_config.json``), commitment
discount overrides, spot assumption CSVs, Hugging Face ``config.json`` files and calibration case CSVs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpufleet.cli.console import console, err_console, user_text
from gpufleet.errors import ConfigFileError, GpufleetError

if TYPE_CHECKING:
    from rich.table import Table

app = typer.Typer(help="Check configuration files and show the configuration in force.", no_args_is_help=True)

_KINDS_HELP = (
    "a user catalog (top-level 'offers'/'price_overrides', or 'gpu_instances' from GPU Fleet Optimizer), a "
    "workload file ('workload' or 'model' + 'task'), a scenario file ('scenarios'/'sets', GFO 'workloads' or "
    "GFO model_config.json 'models'), a commitment override ('commitments'), a Hugging Face config.json "
    "('model_type'/'architectures'), or a CSV of offers, spot assumptions or calibration cases"
)


def _read_document(path: Path) -> Any:
    from gpufleet.fileio import iter_csv_text, parse_yaml_or_json, read_user_text

    text = read_user_text(path, what="configuration file")
    if path.suffix.lower() == ".csv":
        return next((row for _, row in iter_csv_text(text, source=str(path))), [])
    return parse_yaml_or_json(
        path, text, lambda kind, error: f"{path}: the file is not valid {kind} ({error}). Fix the syntax."
    )


def detect_kind(path: Path) -> str:
    """The kind of configuration file ``path`` holds, told by its content (top-level keys or CSV header)."""
    from gpufleet.fileio import document_kind

    doc = _read_document(path)
    if path.suffix.lower() == ".csv":
        header = set(doc)
        if "mean_time_between_interruptions_h" in header:
            return "spot_assumptions"
        if "case_id" in header:
            return "calibration_cases"
        if {"provider", "instance_type", "price_on_demand_usd_per_hour"} <= header:
            return "offers_csv"
        raise ConfigFileError(
            f"{path}: cannot tell what this CSV holds (header {sorted(header)[:8]}). Allowed: {_KINDS_HELP}."
        )
    if not isinstance(doc, dict):
        raise ConfigFileError(
            f"{path}: the top level is {document_kind(doc)}, expected a mapping. Allowed: {_KINDS_HELP}."
        )
    keys = set(doc)
    from gpufleet.models import SIZE_CLASSES
    from gpufleet.recommend.gfo import is_gfo_workloads

    size_classes = {c.upper() for c in SIZE_CLASSES}
    rules: tuple[tuple[bool, str], ...] = (
        (bool(keys & {"gpu_instances", "offers", "price_overrides"}), "catalog"),
        ("commitments" in keys, "commitments"),
        (bool(keys & {"scenarios", "sets"}), "scenarios"),
        (is_gfo_workloads(doc), "gfo_workloads"),
        ("workloads" in keys or "model" in keys, "workload"),
        (
            bool(keys & {"models", "model_sizes"})
            or (bool(keys) and {str(k).upper() for k in keys} <= size_classes),
            "gfo_models",
        ),
        (bool(keys & {"model_type", "architectures"}), "hf_config"),
    )
    for hit, kind in rules:
        if hit:
            return kind
    raise ConfigFileError(
        f"{path}: cannot tell what this file holds (top-level keys {sorted(keys)[:8]}). "
        f"Allowed: {_KINDS_HELP}."
    )


# --- one checker per kind: validate with the owning loader, return summary lines ---------------------------
def _check_catalog(path: Path) -> list[str]:
    from gpufleet.catalog.user import read_user_catalog

    cat = read_user_catalog(path)
    providers = sorted({o.provider for o in cat.offers})
    lines = [
        f"{len(cat.offers)} offers" + (f" ({', '.join(providers)})" if providers else ""),
        f"{len(cat.price_overrides)} price overrides",
    ]
    if cat.family_prices:  # GPU Fleet Optimizer ids of AWS families: the family's current price per GPU
        keys = ", ".join(f"{fp.key} ${fp.on_demand_usd_per_gpu_hour:,.4g}/GPU-h" for fp in cat.family_prices)
        lines.append(f"{len(cat.family_prices)} AWS family prices ({keys})")
    return lines


def _check_offers_csv(path: Path) -> list[str]:
    from gpufleet.catalog.offers import read_offers_csv
    from gpufleet.fileio import read_user_text

    table = read_offers_csv(read_user_text(path, what="offers CSV"), source_name=str(path))
    return [f"{len(table)} offers ({', '.join(table.providers())})"]


def _check_commitments(path: Path) -> list[str]:
    from gpufleet.catalog.pricing import describe_assumptions, load_commitment_assumptions
    from gpufleet.report.assumptions import commitment_lines

    rows = describe_assumptions(load_commitment_assumptions(path, include_fetched=False))
    return [f"{len(rows)} commitment discounts in force with this override", *commitment_lines(rows)]


def _check_spot(path: Path) -> list[str]:
    from gpufleet.cost.spot import load_spot_assumptions
    from gpufleet.report.assumptions import spot_lines

    return spot_lines(load_spot_assumptions(path))


def _check_hf_config(path: Path) -> list[str]:
    from gpufleet.models.registry import model_from_config_file

    arch = model_from_config_file(path)
    return [f"model {arch.id}: {arch.num_layers} layers, hidden size {arch.hidden_size}"]


def _check_cases(path: Path) -> list[str]:
    from gpufleet.estimate.cases import read_cases

    cases = read_cases(path)
    return [f"{len(cases)} calibration cases ({len({c.metric for c in cases})} metrics)"]


def _check_workload(path: Path) -> list[str]:
    from gpufleet.recommend.workload import read_workload_file

    return [
        f"workload {w.name}: model {w.model}, task {w.task}, precision {w.precision}, pricing {w.pricing}, "
        f"{w.hours_per_month:g} h/month"
        for w in read_workload_file(path).values()
    ]


def _check_gfo_workloads(path: Path) -> list[str]:
    from gpufleet.models.registry import resolve_model
    from gpufleet.recommend.gfo import file_workload_ids, read_gfo_files

    workloads, sets = read_gfo_files(path)
    for wid, workload in workloads.items():
        try:
            resolve_model(workload.model)
        except GpufleetError as exc:
            raise ConfigFileError(f"{path}, workload {wid!r}: {exc}") from exc
    own = set(file_workload_ids(_read_document(path)))
    shipped = [w for w in workloads if w not in own]
    return [
        f"{len(workloads)} workloads: {', '.join(workloads)}",
        *(
            [
                f"{len(shipped)} of them named by its sets but defined by gpufleet's GFO scenarios: "
                f"{', '.join(shipped)}"
            ]
            if shipped
            else []
        ),
        f"{len(sets)} workload sets" + (f": {', '.join(sets)}" if sets else ""),
    ]


def _check_gfo_models(path: Path) -> list[str]:
    from gpufleet.models import resolve_model
    from gpufleet.recommend.gfo import parse_gfo_model_config

    mapping = parse_gfo_model_config(_read_document(path), source=str(path))
    lines = []
    for size_class, ref in mapping.items():
        try:
            arch = resolve_model(ref)
        except GpufleetError as exc:
            raise ConfigFileError(
                f"GPU Fleet Optimizer model config {path}, entry {size_class!r}: {exc}"
            ) from exc
        lines.append(f"{size_class} -> {arch.id}")
    return lines


def _check_scenarios(path: Path) -> list[str]:
    from gpufleet.recommend.scenarios import parse_scenarios

    data = _read_document(path)
    scenarios, sets = data.get("scenarios"), data.get("sets") or {}
    if not isinstance(scenarios, dict) or not scenarios:
        raise ConfigFileError(
            f"Scenario file {path}: 'scenarios' must map scenario names to workloads "
            f"(got {scenarios!r:.60}). "
            "Write `scenarios: {NAME: {model: ..., task: ...}}`."
        )
    if not isinstance(sets, dict):
        raise ConfigFileError(f"Scenario file {path}: 'sets' must map set names to lists of scenario names.")
    for name, ids in sets.items():
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ConfigFileError(
                f"Scenario file {path}, set {name!r}: expected a list of scenario names, got {ids!r:.60}."
            )
        unknown = [i for i in ids if i not in scenarios]
        if unknown:
            raise ConfigFileError(
                f"Scenario file {path}, set {name!r} names unknown scenarios {unknown}; the file defines "
                f"{', '.join(map(str, scenarios))}. Fix the names or add those scenarios."
            )
    lib = parse_scenarios(data, str(path))
    return [
        f"{len(lib.scenarios)} scenarios: {', '.join(lib.scenarios)}",
        f"{len(lib.sets)} sets: {', '.join(lib.sets)}",
    ]


CHECKERS: dict[str, tuple[str, Callable[[Path], list[str]]]] = {
    "catalog": ("user catalog", _check_catalog),
    "offers_csv": ("offers CSV", _check_offers_csv),
    "commitments": ("commitment discount override", _check_commitments),
    "spot_assumptions": ("spot assumptions", _check_spot),
    "hf_config": ("Hugging Face config.json", _check_hf_config),
    "calibration_cases": ("calibration cases", _check_cases),
    "workload": ("workload file", _check_workload),
    "scenarios": ("scenario file", _check_scenarios),
    "gfo_workloads": ("GPU Fleet Optimizer workloads.json", _check_gfo_workloads),
    "gfo_models": ("GPU Fleet Optimizer model_config.json", _check_gfo_models),
}


def check_file(path: Path) -> tuple[str, list[str]]:
    """(kind description, summary lines) for one file; the loader's ConfigFileError when it is invalid."""
    kind = detect_kind(path)
    title, checker = CHECKERS[kind]
    return title, checker(path)


def _check_json(files: list[Path], doc_kind: str = "config_check") -> None:
    """``config check --format json``: one JSON document on stdout; exit 2 when any file is invalid."""
    by_kind: dict[str, list[Path]] = {}
    results: list[dict[str, Any]] = []
    for path in files:
        try:
            kind = detect_kind(path)
            title, lines = CHECKERS[kind][0], CHECKERS[kind][1](path)
        except GpufleetError as exc:
            results.append({"path": str(path), "valid": False, "kind": None, "title": None, "summary": [],
                            "error": str(exc)})  # fmt: skip
            continue
        by_kind.setdefault(kind, []).append(path)
        results.append({"path": str(path), "valid": True, "kind": kind, "title": title, "summary": lines,
                        "error": None})  # fmt: skip
    invalid = sum(not r["valid"] for r in results)
    from gpufleet.report.json_report import envelope

    doc: dict[str, Any] = envelope(doc_kind, files=results, invalid_files=invalid)
    if not invalid:
        commitments = by_kind.get("commitments", [None])[-1]
        spot = by_kind.get("spot_assumptions", [None])[-1]
        doc["in_force"] = _in_force_json(by_kind.get("catalog", []), commitments, spot)
    typer.echo(json.dumps(doc, indent=2, allow_nan=False))
    if invalid:
        raise typer.Exit(2)


# --- the configuration in force ---------------------------------------------------------------------------
def _catalog_table(catalogs: list[Path]) -> Table:
    from rich.table import Table

    from gpufleet.catalog.offers import catalog_age, load_offers

    offers = load_offers(catalogs)
    counts: dict[str, int] = {}
    for p in offers.column("provider").tolist():
        counts[str(p)] = counts.get(str(p), 0) + 1
    extra = f" + {len(catalogs)} user catalog(s)" if catalogs else ""
    table = Table(
        title=f"Catalog: {len(offers)} offers, {len(counts)} providers{extra}", title_justify="left"
    )
    for col in ("Provider", "Offers", "Captured", "Age"):
        table.add_column(col, justify="right" if col == "Offers" else "left")
    for age in catalog_age(offers):
        table.add_row(age.provider, str(counts.get(age.provider, 0)), ", ".join(age.captured_at), age.human)
    return table


def _refreshed_lines() -> list[str]:
    """What ``gpufleet catalog update`` wrote that is in force, and what was rejected (and why)."""
    from gpufleet.catalog.fetch.store import refreshed_dir, refreshed_status

    status = refreshed_status()
    if not status:
        return [f"Refreshed prices: none ({refreshed_dir()} holds no `gpufleet catalog update` data)."]
    lines = [f"Refreshed prices in {refreshed_dir()}:"]
    for r in status:
        if r.in_force:
            lines.append(
                f"  {r.provider}: in force, captured {r.captured_at or 'at an unknown time'}: "
                f"{r.rate_rows} commitment rates (used by every query), {r.offer_rows} offers (used by "
                "`catalog offers --refreshed`)."
            )
        else:
            lines.append(
                f"  {r.provider}: REJECTED, the shipped prices are used instead: {r.rejected_because}"
            )
    return lines


def _refreshed_json() -> dict[str, Any]:
    from gpufleet.catalog.fetch.store import refreshed_dir, refreshed_status

    status = refreshed_status()
    return {
        "folder": str(refreshed_dir()),
        "in_force": [
            {"provider": r.provider, "captured_at": r.captured_at, "offers": r.offer_rows,
             "commitment_rates": r.rate_rows, "files": list(r.files)}
            for r in status
            if r.in_force
        ],
        "rejected": [
            {"provider": r.provider, "reason": r.rejected_because} for r in status if not r.in_force
        ],
    }  # fmt: skip


def _models_line() -> str:
    from gpufleet.models import SIZE_CLASSES, load_model_entries

    ids = sorted(load_model_entries())
    return (
        f"Models: {len(ids)} shipped ({', '.join(ids)}); size classes {', '.join(SIZE_CLASSES)}; "
        "or the path of "
        "any Hugging Face config.json."
    )


def _scenarios_table() -> Table:
    from rich.table import Table

    from gpufleet.recommend.scenarios import load_scenarios

    lib = load_scenarios()
    table = Table(
        title=f"Built-in scenarios: {len(lib.scenarios)}, sets: {len(lib.sets)}", title_justify="left"
    )
    table.add_column("Set")
    table.add_column("Scenarios", overflow="fold")
    for name, members in lib.sets.items():
        table.add_row(name, ", ".join(members))
    return table


def _assumptions_tables(commitments: Path | None, spot: Path | None) -> list[Table]:
    from rich.table import Table

    from gpufleet.catalog.pricing import describe_assumptions, load_commitment_assumptions
    from gpufleet.cost.spot import load_spot_assumptions

    rows = describe_assumptions(load_commitment_assumptions(commitments))
    narrow = console.width < 140  # sources are long: shown by `gpufleet catalog commitments` instead
    ct = Table(
        title="Commitment discounts in force",
        title_justify="left",
        caption="Sources and notes: `gpufleet catalog commitments`." if narrow else None,
        caption_justify="left",
    )
    cols = ("Provider", "Program", "Term", "Discount", "Basis", "Verified")
    for col in cols if narrow else (*cols, "Source"):
        ct.add_column(col, overflow="fold", max_width=60 if col == "Source" else None)
    for r in rows:
        ct.add_row(
            r.provider,
            r.program,
            f"{r.term_years}y",
            f"{r.discount_fraction:.0%}",
            r.basis,
            "yes" if r.verified else "no",
            *(() if narrow else (r.source,)),
        )
    st = Table(title="Spot interruption model in force", title_justify="left")
    for col in (
        "Provider",
        "Mean time between interruptions",
        "Interruptions/h",
        "Notice",
        "Restart",
        "Verified",
    ):
        st.add_column(col)
    for key, a in sorted(load_spot_assumptions(spot).items(), key=lambda kv: (kv[0] == "*", kv[0])):
        st.add_row(
            "other" if key == "*" else key,
            f"{a.mean_time_between_interruptions_h:g} h",
            f"{a.interruptions_per_h:.2f}",
            f"{a.notice_s:g} s",
            f"{a.restart_overhead_s:g} s",
            a.verified or "no",
        )
    return [ct, st]


class CheckFormat(StrEnum):
    table = "table"
    json = "json"


def _in_force_json(catalogs: list[Path], commitments: Path | None, spot: Path | None) -> dict[str, Any]:
    """The configuration in force as plain data (stable keys) for ``config check --format json``."""
    from gpufleet.catalog.offers import catalog_age, load_offers
    from gpufleet.catalog.pricing import describe_assumptions, load_commitment_assumptions
    from gpufleet.cost.spot import load_spot_assumptions
    from gpufleet.models import SIZE_CLASSES, load_model_entries
    from gpufleet.recommend.scenarios import load_scenarios

    offers = load_offers(catalogs)
    counts: dict[str, int] = {}
    for p in offers.column("provider").tolist():
        counts[str(p)] = counts.get(str(p), 0) + 1
    lib = load_scenarios()
    return {
        "catalog": {
            "offers": len(offers),
            "user_catalogs": [str(c) for c in catalogs],
            "providers": [
                {
                    "provider": age.provider,
                    "offers": counts.get(age.provider, 0),
                    "captured_at": list(age.captured_at),
                    "newest_age_days": age.newest_age_days,
                    "oldest_age_days": age.oldest_age_days,
                    "age": age.human,
                }
                for age in catalog_age(offers)
            ],
        },
        "refreshed": _refreshed_json(),
        "models": {"shipped": sorted(load_model_entries()), "size_classes": list(SIZE_CLASSES)},
        "scenarios": {
            "ids": list(lib.scenarios),
            "sets": [{"name": n, "scenarios": list(m)} for n, m in lib.sets.items()],
        },
        "commitment_discounts": [
            {
                "provider": r.provider,
                "program": r.program,
                "term_years": r.term_years,
                "discount_fraction": r.discount_fraction,
                "basis": r.basis,
                "verified": bool(r.verified),
                "source": r.source,
            }
            for r in describe_assumptions(load_commitment_assumptions(commitments))
        ],
        "spot_model": [
            {
                "provider": "other" if key == "*" else key,
                "mean_time_between_interruptions_h": a.mean_time_between_interruptions_h,
                "interruptions_per_h": a.interruptions_per_h,
                "notice_s": a.notice_s,
                "restart_overhead_s": a.restart_overhead_s,
                "verified": a.verified or "no",
            }
            for key, a in sorted(load_spot_assumptions(spot).items(), key=lambda kv: (kv[0] == "*", kv[0]))
        ],
    }


#: the GPU Fleet Optimizer's configuration files, as its config/ folder holds them
GFO_CONFIG_FILES: tuple[str, ...] = ("gpu_instances.json", "model_config.json", "workloads.json")


@app.command("show")
def show(
    gfo_config: Annotated[
        Path | None,
        typer.Option(
            "--gfo-config",
            help="GPU Fleet Optimizer config folder (gpu_instances.json, model_config.json, workloads.json). "
            "Default: ./config when it holds any of them.",
        ),
    ] = None,
    fmt: Annotated[
        CheckFormat, typer.Option("--format", "-f", help="table (terminal) or json (kind config_show).")
    ] = CheckFormat.table,
) -> None:
    """Show the configuration in force: the GPU Fleet Optimizer's config files (as config_viewer.py did),
    the catalog, models, scenarios and sets, commitment discounts and the spot model."""
    folder = gfo_config if gfo_config is not None else Path("config")
    if gfo_config is not None and not folder.is_dir():
        raise ConfigFileError(
            f"--gfo-config {folder}: not a folder. Pass the folder holding {', '.join(GFO_CONFIG_FILES)}."
        )
    # a named folder's entries that are not regular files (FIFO, folder) go to the reader, which says so
    files = [
        folder / n
        for n in GFO_CONFIG_FILES
        if (folder / n).is_file() or (gfo_config is not None and (folder / n).exists())
    ]
    if gfo_config is not None and not files:
        raise ConfigFileError(
            f"--gfo-config {folder} holds none of {', '.join(GFO_CONFIG_FILES)}. Pass the optimizer's "
            "config folder, or leave the option out to show gpufleet's own configuration."
        )
    if fmt is CheckFormat.json:
        _check_json(files, doc_kind="config_show")
        return
    if not files:
        console.print("No GPU Fleet Optimizer config folder (./config); gpufleet's configuration in force:")
    check(files=files, fmt=fmt)


@app.command("check")
def check(
    files: Annotated[
        list[Path] | None,
        typer.Argument(help="Files to validate; the kind is told by content. None: built-ins."),
    ] = None,
    fmt: Annotated[
        CheckFormat,
        typer.Option(
            "--format", "-f", help="table (terminal) or json (stable keys: files, catalog, models, ...)."
        ),
    ] = CheckFormat.table,
) -> None:
    """Validate configuration files and summarise the configuration in force.

    The summary covers the catalog (providers, offers, age), the models, the scenarios and sets, the
    commitment discounts and the spot model."""
    files = files or []
    if fmt is CheckFormat.json:
        _check_json(files)
        return
    by_kind: dict[str, list[Path]] = {}
    failures = 0
    for path in files:
        try:
            kind = detect_kind(path)
            title, lines = CHECKERS[kind][0], CHECKERS[kind][1](path)
        except GpufleetError as exc:
            failures += 1
            err_console.print(f"[bold red]Invalid:[/] {user_text(str(exc))}", highlight=False, soft_wrap=True)
            continue
        by_kind.setdefault(kind, []).append(path)
        console.print(f"[bold green]OK[/] {user_text(str(path))} [dim]({title})[/]", highlight=False)
        for line in lines:
            console.print(f"   {line}", highlight=False, markup=False)
    if failures:
        err_console.print(f"{failures} of {len(files)} file(s) invalid.", highlight=False)
        raise typer.Exit(2)
    console.print()
    console.print(_catalog_table(by_kind.get("catalog", [])))
    for line in _refreshed_lines():
        console.print(line, highlight=False, markup=False)
    console.print(_models_line(), highlight=False)
    console.print(_scenarios_table())
    commitments = by_kind.get("commitments", [None])[-1]
    spot = by_kind.get("spot_assumptions", [None])[-1]
    for table in _assumptions_tables(commitments, spot):
        console.print(table)
