"""Root of the ``gpufleet`` command. Each command group lives in its own module and registers here.

User errors (any :class:`gpufleet.errors.GpufleetError`) end as one paragraph on stderr and exit code 2,
with no traceback; this is done once, in :class:`_ErrorHandlingGroup`, for every command.

Start-up is lazy: :data:`COMMANDS` names each top-level command, the module that defines it and its one-line
help. ``gpufleet --help`` lists that table; ``gpufleet NAME ...`` imports and builds only NAME's module
(building every typer command costs ~0.25 s; tests/cli/test_lazy_app.py keeps the table in sync). Every
command built gets finite-only float options (:mod:`gpufleet.cli.finite`: nan/inf exit 2).
"""

from __future__ import annotations

import importlib
import warnings
from dataclasses import dataclass
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

import gpufleet.cli.console  # noqa: F401  (the consoles' environment is the one at start-up; no rich yet)
from gpufleet.cli.console import user_text
from gpufleet.cli.exit_codes import ExitCode
from gpufleet.cli.finite import finite_floats
from gpufleet.errors import GpufleetError

USER_ERROR_EXIT_CODE = ExitCode.USER_ERROR

#: A click command or group (typer >= 0.26 vendors click as ``typer._click``; older typer uses ``click``).
Command = Any


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandEntry:
    """One top-level command: where it is defined and the one-line help ``gpufleet --help`` shows."""

    name: str
    module: str  # under gpufleet.cli
    group: bool  # True: the module's ``app`` (a typer group); False: a command its ``register(app)`` attaches
    help: str


#: Every top-level command in ``gpufleet --help`` order (commands, then groups: typer's order).
COMMANDS: tuple[CommandEntry, ...] = (
    CommandEntry(
        name="validate",
        module="calibrate",
        group=False,
        help=(
            "Predict every case in CASES_FILE and compare with its measured value (error, p10–p90 coverage)."
        ),
    ),
    CommandEntry(
        name="calibrate",
        module="calibrate",
        group=False,
        help="Fit a calibration profile to the cases in CASES_FILE and write it to --output.",
    ),
    CommandEntry(
        name="recommend",
        module="recommend",
        group=False,
        help="Rank where to run a workload: offers x GPU counts x parallelism, with cost, speed and risk.",
    ),
    CommandEntry(
        name="migrate",
        module="recommend",
        group=False,
        help="Compare the current deployment with the best alternative: savings, speed, risk, complexity.",
    ),
    CommandEntry(
        name="plan",
        module="plan",
        group=False,
        help=(
            "Plan every workload of a fleet under quotas, budgets, commitments and regions (proven optimal)."
        ),
    ),
    CommandEntry(
        name="regions",
        module="regions",
        group=False,
        help=("Where to run for these users and this data: regions by total monthly cost, RTT, carbon."),
    ),
    CommandEntry(
        name="catalog",
        module="catalog",
        group=True,
        help="Accelerator specs and the multi-cloud GPU offer catalog.",
    ),
    CommandEntry(
        name="estimate",
        module="estimate",
        group=True,
        help="Estimate memory, training and inference performance of a model on a GPU.",
    ),
    CommandEntry(
        name="scenarios",
        module="scenarios",
        group=True,
        help="Named scenarios (GPU Fleet Optimizer workloads) and sets of them.",
    ),
    CommandEntry(
        name="config",
        module="config",
        group=True,
        help="Check configuration files and show the configuration in force.",
    ),
    CommandEntry(
        name="telemetry",
        module="telemetry",
        group=True,
        help="Right-size a running GPU fleet from its telemetry; alert on thresholds.",
    ),
    CommandEntry(
        name="simulate",
        module="simulate",
        group=True,
        help="Simulate autoscaling on a request trace, spot training runs, batch queues, and sweeps of them.",
    ),
    CommandEntry(
        name="serve",
        module="serve",
        group=True,
        help="Run the HTTP service and dashboard (API, teams and tokens, jobs); manage its tokens.",
    ),
)
_BY_NAME = {entry.name: entry for entry in COMMANDS}


def build_command(entry: CommandEntry) -> Command:
    """Import ``entry``'s module and build its real command (with every option and subcommand)."""
    module = importlib.import_module(f"gpufleet.cli.{entry.module}")
    if entry.group:
        group = typer.main.get_group(module.app)
        group.name = entry.name
        return finite_floats(group)
    holder = typer.Typer()
    module.register(holder)
    # only the command asked for: a module may register several (recommend and migrate: ~90 options)
    holder.registered_commands = [
        c
        for c in holder.registered_commands
        if (c.name or typer.main.get_command_name(getattr(c.callback, "__name__", ""))) == entry.name
    ] or holder.registered_commands
    return finite_floats(typer.main.get_group(holder).commands[entry.name])


def _show_warning(message: Warning | str, *_args: Any, **_kwargs: Any) -> None:
    """Library warnings (UserWarning) as one 'Warning:' paragraph on stderr, without a source line."""
    from gpufleet.cli.console import err_console  # rich only when there is something to print

    err_console.print(f"[bold yellow]Warning:[/] {user_text(str(message))}", highlight=False, soft_wrap=True)


class _ErrorHandlingGroup(TyperGroup):
    """Turns library errors into a clean message and exit code 2 for every subcommand."""

    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]
        from gpufleet.fileio import tracking_inputs  # outputs may not overwrite the command's input files

        try:
            with warnings.catch_warnings(), tracking_inputs():
                warnings.simplefilter("always", UserWarning)
                warnings.showwarning = _show_warning  # e.g. refreshed prices rejected, shipped ones used
                return super().invoke(ctx)
        except GpufleetError as exc:
            from gpufleet.cli.console import err_console

            err_console.print(f"[bold red]Error:[/] {user_text(str(exc))}", highlight=False, soft_wrap=True)
            ctx.exit(USER_ERROR_EXIT_CODE)


class _LazyGroup(_ErrorHandlingGroup):
    """The root group: holds a help-only placeholder per :data:`COMMANDS` entry and builds the real command
    only when it is invoked (or completed), so one command's start-up does not pay for all the others."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for entry in COMMANDS:  # placeholders: name + one-line help, enough for `gpufleet --help`
            self.commands[entry.name] = TyperCommand(entry.name, help=entry.help)

    def load_command(self, name: str) -> Command | None:
        """The real command called ``name`` (built on first use), or None when there is none."""
        cmd = self.commands.get(name)
        entry = _BY_NAME.get(name)
        if cmd is None or entry is None or not isinstance(cmd, TyperCommand) or cmd.callback is not None:
            return cmd
        real = build_command(entry)
        self.commands[name] = real
        return real

    def load_all(self) -> None:
        """Build every command (tests and tools that walk the whole command tree)."""
        for entry in COMMANDS:
            self.load_command(entry.name)

    def resolve_command(  # type: ignore[override]
        self, ctx: typer.Context, args: list[str]
    ) -> tuple[str | None, Command | None, list[str]]:
        name, cmd, rest = super().resolve_command(ctx, args)
        if name is not None and cmd is not None:
            cmd = self.load_command(name)
        return name, cmd, rest


app = typer.Typer(
    cls=_LazyGroup,
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


def full_command() -> _LazyGroup:
    """The root click group with every command built (what walks the whole tree uses; the CLI does not)."""
    root = typer.main.get_command(app)
    assert isinstance(root, _LazyGroup)
    root.load_all()
    return root


def main() -> None:
    """Console-script entry point."""
    app()
