"""Root of the ``gpufleet`` command. Each command group lives in its own module and registers here.

User errors (any :class:`gpufleet.errors.GpufleetError`) end as one paragraph on stderr and exit code 2,
with no traceback; this is done once, in :class:`_ErrorHandlingGroup`, for every command.
"""

from __future__ import annotations

from typing import Any

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
from gpufleet.cli.console import err_console
from gpufleet.errors import GpufleetError

USER_ERROR_EXIT_CODE = 2


class _ErrorHandlingGroup(TyperGroup):
    """Turns library errors into a clean message and exit code 2 for every subcommand."""

    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except GpufleetError as exc:
            err_console.print(f"[bold red]Error:[/] {exc}", highlight=False, soft_wrap=True)
            ctx.exit(USER_ERROR_EXIT_CODE)


app = typer.Typer(
    cls=_ErrorHandlingGroup,
    name="gpufleet",
    help="What GPU capacity an ML workload should run on, where, and at what cost.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(catalog_cmd.app, name="catalog")
app.add_typer(estimate_cmd.app, name="estimate")
calibrate_cmd.register(app)  # `gpufleet calibrate`, `gpufleet validate`
recommend_cmd.register(app)  # `gpufleet recommend`, `gpufleet migrate`
app.add_typer(scenarios_cmd.app, name="scenarios")
app.add_typer(config_cmd.app, name="config")
plan_cmd.register(app)  # `gpufleet plan`
regions_cmd.register(app)  # `gpufleet regions`


def main() -> None:
    """Console-script entry point."""
    app()
