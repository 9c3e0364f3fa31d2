"""`gpufleet catalog update`: refresh prices from provider APIs. (Being built: see the issue tracker.)"""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Attach `update` to the `catalog` group."""
