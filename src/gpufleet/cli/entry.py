"""The ``gpufleet`` console script: ``gpufleet --version`` (or ``-V``) alone is answered without importing
typer (~0.1 s of CPU); everything else runs the typer app (:func:`gpufleet.cli.app.main`), whose eager
``--version`` option prints the same line.

OpenBLAS, which numpy loads on import, starts a thread per core that busy-waits for work; gpufleet does no
BLAS work of its own (no matrix products or linear algebra), so the console script asks for one thread unless
the user set ``OPENBLAS_NUM_THREADS``: `catalog offers --format json` took 0.39 s of CPU (0.29 s wall) with
the threads and 0.23 s (0.23 s wall) without them on the 2-core development machine (README "Speed").

Python's cyclic garbage collector is tuned for long-running programs. A command builds ~55,000 container
objects (modules, classes, estimates) that mostly live until the process ends: at the default
first-generation threshold (700 allocations) `gpufleet recommend` ran ~130 collections (~33 ms of CPU), and
the interpreter's shutdown collections walked every object again. The console script raises the threshold to
:data:`GC_GEN0_THRESHOLD` (collections still run, so long commands stay bounded) and, when the command is
done and the process about to exit, freezes the surviving objects (``gc.freeze``) so that shutdown does not
traverse them: 0.47-0.50 s -> 0.41 s of CPU for that command (medians of 9 fresh processes), same output."""

from __future__ import annotations

import contextlib
import gc
import os
import sys

#: first-generation collection threshold of the console-script process (Python's default: 700)
GC_GEN0_THRESHOLD = 10_000


def _replace_unencodable() -> None:
    """Output streams whose encoding lacks characters gpufleet prints (``×``, ``–``, box drawing) replace
    them with ``?`` instead of failing: with ``PYTHONIOENCODING=ascii`` (or a legacy code page) every table
    ended in a UnicodeEncodeError traceback. UTF-8 streams are left as they are."""
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
        if encoding and not encoding.startswith("utf") and hasattr(stream, "reconfigure"):
            # a closed or detached stream (ValueError, OSError): nothing to print to anyway
            with contextlib.suppress(ValueError, OSError):
                stream.reconfigure(errors="replace")


def main() -> None:
    """Console-script entry point."""
    if sys.argv[1:] in (["--version"], ["-V"]):
        from gpufleet import __version__

        sys.stdout.write(f"gpufleet {__version__}\n")
        sys.stdout.flush()
        return
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported (module doc)
    gen0, *older = gc.get_threshold()
    gc.set_threshold(max(gen0, GC_GEN0_THRESHOLD), *older)  # fewer collections of short-lived objects
    _replace_unencodable()
    from gpufleet.cli.app import main as app_main

    try:
        app_main()
    finally:
        gc.freeze()  # the process exits next: shutdown need not traverse what is still alive (module doc)
