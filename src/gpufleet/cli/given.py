"""Options the user typed that the chosen mode would ignore are an error (exit 2), never silently dropped.

:func:`reject_ignored` asks click which of the named parameters came from the command line (not defaults);
a default value typed out is accepted where it changes nothing. The message names the options, why they do
not apply, and the fix.
"""

from __future__ import annotations

from collections.abc import Sequence

from typer._click.core import ParameterSource
from typer._click.globals import get_current_context

from gpufleet.errors import InputError


def given_options(names: Sequence[str], *, default_ok: bool = True) -> list[str]:
    """The command-line spellings (``--zero``) of the parameters ``names`` the user gave explicitly, with a
    value other than the default (any value when ``default_ok`` is False)."""
    ctx = get_current_context(silent=True)
    if ctx is None:  # called outside a CLI invocation (library use): nothing was typed
        return []
    by_name = {p.name: p for p in ctx.command.params}
    flags = []
    for name in names:
        param = by_name[name]
        typed = ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE
        if typed and (not default_ok or ctx.params.get(name) != param.default):
            flags.append(max(param.opts, key=len) if param.opts else name)
    return flags


def reject_ignored(names: Sequence[str], *, why: str, fix: str, default_ok: bool = True) -> None:
    """Raise :class:`InputError` when any of ``names`` was given: ``why`` says the mode that ignores them
    (e.g. "with --task inference"), ``fix`` how to proceed. ``default_ok``: the default value typed out is
    accepted (it changes nothing); False where the mode takes the value from elsewhere (a file)."""
    flags = given_options(names, default_ok=default_ok)
    if flags:
        raise InputError(
            f"{', '.join(flags)} {'has' if len(flags) == 1 else 'have'} no effect {why}, so "
            f"{'it' if len(flags) == 1 else 'they'} would be silently ignored. {fix}"
        )
