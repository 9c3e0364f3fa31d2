"""Shared rich consoles for the CLI (stdout for results, stderr for errors and progress).

Each is created on first use: importing ``rich.console`` costs ~0.06 s of CPU, which a command that prints
JSON or CSV (through ``typer.echo``) never needs. Attribute reads and writes go to the real console, so
``console.print(...)``, ``console.width``, ``with console:`` (rich's Progress) and
``monkeypatch.setattr(console, "_width", 200)`` work as on a :class:`rich.console.Console`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from rich.console import Console


def _safe_console_class() -> type[Console]:
    """rich's Console whose text that is not valid markup prints as plain text: a user's name such as
    ``[/]`` in a table cell or message would otherwise raise rich's MarkupError (a traceback)."""
    from rich.console import Console
    from rich.errors import MarkupError

    class SafeConsole(Console):
        def render_str(self, text: str, **kwargs: Any) -> Any:
            try:
                return super().render_str(text, **kwargs)
            except MarkupError:
                return super().render_str(text, **(kwargs | {"markup": False}))

    return SafeConsole


def user_text(message: str) -> str:
    """``message`` safe to print with rich markup on: user input such as ``[/]`` is escaped (rich would
    raise MarkupError, or eat ``[red]...[/red]``), and very long tokens are shortened (see _LONG_TOKEN)."""
    import re

    from rich.markup import escape

    def shorten(m: re.Match[str]) -> str:
        token = m.group()
        return f"{token[:80]}... ({len(token):,} characters)"

    return escape(re.sub(rf"\S{{{_LONG_TOKEN},}}", shorten, message))


#: a run of this many characters without a space in a message is user input echoed back (a 100 kB option
#: value, a minified file): it is shortened so the message stays one readable paragraph
_LONG_TOKEN = 400


class _LazyConsole:
    """A :class:`rich.console.Console` built with ``kwargs`` on first attribute access, as if it had been
    built here: what rich reads from the environment when a Console is made (COLUMNS and LINES fix its size,
    NO_COLOR, FORCE_COLOR, TERM ...) comes from a copy of the environment taken now, and later reads (the
    size of a console without a fixed one) see the live environment, as a Console made here would."""

    __slots__ = ("_environ", "_kwargs", "_real")

    def __init__(self, **kwargs: Any) -> None:
        object.__setattr__(self, "_kwargs", kwargs)
        object.__setattr__(self, "_environ", dict(os.environ))
        object.__setattr__(self, "_real", None)

    def _console(self) -> Console:
        real: Console | None = object.__getattribute__(self, "_real")
        if real is None:
            kwargs = object.__getattribute__(self, "_kwargs")
            real = _safe_console_class()(**kwargs, _environ=object.__getattribute__(self, "_environ"))
            real._environ = os.environ  # as Console() with no _environ keeps it
            object.__setattr__(self, "_real", real)
        return real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._console(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._console(), name, value)

    def __delattr__(self, name: str) -> None:
        delattr(self._console(), name)

    # dunders are looked up on the type, not through __getattr__: the ones Console defines (rich's Live uses
    # ``with console:``)
    def __enter__(self) -> Console:
        return self._console().__enter__()

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        self._console().__exit__(exc_type, exc_value, traceback)

    def __repr__(self) -> str:
        return repr(self._console())


console = cast("Console", _LazyConsole())
err_console = cast("Console", _LazyConsole(stderr=True))
