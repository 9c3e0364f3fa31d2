"""The ``gpufleet`` console script: ``gpufleet --version`` (or ``-V``) alone is answered without importing
typer (~0.1 s of CPU); everything else runs the typer app (:func:`gpufleet.cli.app.main`), whose eager
``--version`` option prints the same line."""

from __future__ import annotations

import sys


def main() -> None:
    """Console-script entry point."""
    if sys.argv[1:] in (["--version"], ["-V"]):
        from gpufleet import __version__

        sys.stdout.write(f"gpufleet {__version__}\n")
        sys.stdout.flush()
        return
    from gpufleet.cli.app import main as app_main

    app_main()
