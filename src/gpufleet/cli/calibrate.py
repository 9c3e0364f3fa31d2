"""`gpufleet validate CASES.csv` (score the estimator against measurements) and `gpufleet calibrate CASES.csv
-o PROFILE.json` (fit a profile of efficiency parameters to your own measurements)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from gpufleet.cli.console import console
from gpufleet.cli.profile_option import ProfileOption, load_profile_option
from gpufleet.cli.validate_render import render_json, render_markdown, render_tables, summary_items
from gpufleet.errors import InputError


class ValidateFormat(StrEnum):
    table = "table"
    json = "json"
    markdown = "markdown"


CasesArg = Annotated[
    Path, typer.Argument(help="CSV of measured cases in the calibration schema (docs/calibration-schema.md).")
]


def validate(
    cases_file: CasesArg,
    output_format: Annotated[
        ValidateFormat, typer.Option("--format", "-f", help="table, json or markdown.")
    ] = ValidateFormat.table,
    profile: ProfileOption = None,
) -> None:
    """Predict every case in CASES_FILE and compare with its measured value (error, p10–p90 coverage)."""
    from gpufleet.estimate.cases import read_cases
    from gpufleet.estimate.validate import validate_cases

    cases = read_cases(cases_file)
    report = validate_cases(cases, load_profile_option(profile))
    if not any(r.predicted is not None for r in report.rows):
        reasons = sorted({(r.reason or "").split(": ", 1)[-1][:300] for r in report.rows})
        raise InputError(
            f"None of the {len(report.rows)} case(s) in {cases_file} can be estimated, so there is nothing "
            f"to compare: {'; '.join(reasons[:3])}{' ...' if len(reasons) > 3 else ''}. Fix the rows (the "
            "allowed values are in docs/calibration-schema.md) and run again."
        )
    if output_format is ValidateFormat.json:
        typer.echo(render_json(report), nl=False)
    elif output_format is ValidateFormat.markdown:
        typer.echo(render_markdown(report), nl=False)
    else:
        for table in render_tables(report):
            console.print(table)


def calibrate(
    cases_file: CasesArg,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Where to write the profile JSON.", dir_okay=False)
    ],
) -> None:
    """Fit a calibration profile to the cases in CASES_FILE and write it to --output."""
    from rich.table import Table

    from gpufleet.estimate.calibration import PRIORS, fit_profile, save_profile
    from gpufleet.estimate.cases import read_cases
    from gpufleet.estimate.validate import validate_cases
    from gpufleet.fileio import check_output_suffix

    cases = read_cases(cases_file)
    # before the fit, not after it (after reading the cases: -o onto them is named as such); a profile is
    # JSON (-o profile.csv wrote JSON into a CSV name)
    check_output_suffix(output, "json", what="profile file (-o/--output)", fixed="a JSON calibration profile")
    before = validate_cases(cases).summary
    fitted = fit_profile(cases)
    try:
        save_profile(fitted, output)
    except OSError as exc:
        raise InputError(
            f"Cannot write the profile to {str(output)!r} ({exc.strerror}). Pass -o with a writable path."
        ) from None
    after = validate_cases(cases, fitted).summary

    params = Table(title=f"Fitted parameters ({fitted.case_count} cases)", title_justify="left")
    params.add_column("parameter")
    params.add_column("value", justify="right")
    params.add_column("prior", justify="right")
    params.add_column("moved by the fit")
    for name, value in sorted(fitted.params.items()):
        prior = PRIORS.get(name)
        params.add_row(
            name,
            f"{value:.4g}",
            "—" if prior is None else f"{prior.value:.4g}",
            "yes" if name in fitted.fitted else "",
        )
    console.print(params)

    err = Table(title="Fit error on these cases (in-sample)", title_justify="left")
    err.add_column("profile")
    for label, _ in summary_items(after):
        err.add_column(label, justify="right")
    err.add_row("shipped", *(v for _, v in summary_items(before)))
    err.add_row("fitted", *(v for _, v in summary_items(after)))
    console.print(err)
    console.print(f"Profile written to {output}. Use it with --profile {output}.", highlight=False)


def register(app: typer.Typer) -> None:
    """Attach `validate` and `calibrate` to the root app."""
    app.command("validate")(validate)
    app.command("calibrate")(calibrate)
