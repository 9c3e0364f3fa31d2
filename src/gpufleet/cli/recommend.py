"""Top-level `gpufleet` commands of this group. (Being built: see the issue tracker.)"""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the root app."""
