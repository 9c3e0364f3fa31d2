"""`gpufleet scenarios` commands. (Being built: see the issue tracker.)"""

from __future__ import annotations

import typer

app = typer.Typer(help="scenarios commands.", no_args_is_help=True)
