"""The exit codes of every gpufleet command, in one place (README "Exit codes", docs/contracts.md).

0 is an answer; 2 is a user error (bad input: unknown name, malformed file, bad value). The codes 3-6 are
valid questions whose answer is "no": the command prints its full output first (table, JSON, report, export
files), then says on stderr why it exits non-zero, so a script can read the output and test the code.
1 is left to Python and click (an unexpected crash, an interrupted run), so it never means one of these.
"""

from __future__ import annotations

from enum import IntEnum
from typing import NoReturn


class ExitCode(IntEnum):
    OK = 0
    #: bad input: the question cannot be asked as given (every GpufleetError)
    USER_ERROR = 2
    #: no candidate meets the workload: recommend/scenarios status other than ok (infeasible SLO, over budget,
    #: over risk, cannot fit, no offers), migrate with no alternative while the current deployment misses the
    #: workload, regions with no region able to run it, simulate spot with no strategy meeting the deadline
    NO_CANDIDATE = 3
    #: plan: no feasible fleet plan (status infeasible, or the solver failed: status error)
    INFEASIBLE_PLAN = 4
    #: estimate memory/infer/train: the configuration does not fit in the GPU memory
    DOES_NOT_FIT = 5
    #: plan -f skypilot: placements the export cannot express were left out (each one listed on stderr)
    INCOMPLETE_EXPORT = 6


def exit_with(code: ExitCode, reason: str) -> NoReturn:
    """Say on stderr why the command exits with ``code`` (after its output is printed), then exit."""
    import typer

    from gpufleet.cli.console import err_console, user_text

    err_console.print(f"Exit {int(code)} ({code.name.lower()}): {user_text(reason)}", highlight=False,
                      soft_wrap=True)  # fmt: skip
    raise typer.Exit(int(code))
