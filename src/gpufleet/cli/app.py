"""Root of the ``gpufleet`` command. Each command group lives in its own module and registers here.

User errors (any :class:`gpufleet.errors.GpufleetError`) end as one paragraph on stderr and exit code 2,
with no traceback; this is done once, in :class:`_ErrorHandlingGroup`, for every command.
"""

from __future__ import annotations

import warnings
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from gpufleet.cli import calibrate as calibrate_cmd
from gpufleet.cli import catalog as catalog_cmd
from gpufleet.cli import config as config_cmd
from gpufleet.cli import estimate as estimate_cmd
from gpufleet.cli import plan as plan_cmd
from gpufleet.cli import recommend as recommend_cmd
from gpufleet.cli import regions as regions_cmd
from gpufleet.cli import scenarios as scenarios_cmd
from gpufleet.cli import simulate as simulate_cmd
from gpufleet.cli import telemetry as telemetry_cmd
from gpufleet.cli.console import err_console
from gpufleet.errors import GpufleetError

USER_ERROR_EXIT_CODE = 2


def _show_warning(message: Warning | str, *_args: Any, **_kwargs: Any) -> None:
    """Library warnings (UserWarning) as one 'Warning:' paragraph on stderr, without a source line."""
    err_console.print(f"[bold yellow]Warning:[/] {message}", highlight=False, soft_wrap=True)


class _ErrorHandlingGroup(TyperGroup):
    """Turns library errors into a clean message and exit code 2 for every subcommand."""

    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("always", UserWarning)
                warnings.showwarning = _show_warning  # e.g. refreshed prices rejected, shipped ones used
                return super().invoke(ctx)
        except GpufleetError as exc:
            err_console.print(f"[bold red]Error:[/] {exc}", highlight=False, soft_wrap=True)
            ctx.exit(USER_ERROR_EXIT_CODE)


app = typer.Typer(
    cls=_ErrorHandlingGroup,
    name="gpufleet",
    help="What GPU capacity an ML workload should run on, where, and at what cost.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, PowerShell)
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from gpufleet import __version__

        typer.echo(f"gpufleet {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_version, is_eager=True, help="Print the gpufleet version and exit."
        ),
    ] = False,
) -> None:
    """What GPU capacity an ML workload should run on, where, and at what cost."""


app.add_typer(catalog_cmd.app, name="catalog")
app.add_typer(estimate_cmd.app, name="estimate")
calibrate_cmd.register(app)  # `gpufleet calibrate`, `gpufleet validate`
recommend_cmd.register(app)  # `gpufleet recommend`, `gpufleet migrate`
app.add_typer(scenarios_cmd.app, name="scenarios")
app.add_typer(config_cmd.app, name="config")
app.add_typer(telemetry_cmd.app, name="telemetry")
app.add_typer(simulate_cmd.app, name="simulate")
plan_cmd.register(app)  # `gpufleet plan`
regions_cmd.register(app)  # `gpufleet regions`


def main() -> None:
    """Console-script entry point."""
    app()
