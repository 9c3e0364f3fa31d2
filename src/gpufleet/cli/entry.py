"""The ``gpufleet`` console script: ``gpufleet --version`` (or ``-V``) alone is answered without importing
typer (~0.1 s of CPU); everything else runs the typer app (:func:`gpufleet.cli.app.main`), whose eager
``--version`` option prints the same line.

OpenBLAS, which numpy loads on import, starts a thread per core that busy-waits for work; gpufleet does no
BLAS work of its own (no matrix products or linear algebra), so the console script asks for one thread unless
the user set ``OPENBLAS_NUM_THREADS``: `catalog offers --format json` took 0.39 s of CPU (0.29 s wall) with
the threads and 0.23 s (0.23 s wall) without them on the 2-core development machine (README "Speed")."""

from __future__ import annotations

import os
import sys


def main() -> None:
    """Console-script entry point."""
    if sys.argv[1:] in (["--version"], ["-V"]):
        from gpufleet import __version__

        sys.stdout.write(f"gpufleet {__version__}\n")
        sys.stdout.flush()
        return
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported (module doc)
    from gpufleet.cli.app import main as app_main

    app_main()
