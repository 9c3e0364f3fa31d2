"""A refresh killed at any write step leaves the previous refreshed data readable and the next update working.

A forked child runs :func:`store.write_provider` with ``$GPUFLEET_TEST_CRASH_AT_WRITE_STEP=N``: it exits
(``os._exit``, no cleanup, as a kill would) at the N-th write step (half-written temp file, written temp file,
rename, old-file removal). After each kill the parent reads the store (old or new data, never a mix, never
nothing) and runs the next update in-process.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest

from gpufleet.catalog.fetch import store

OLD = {"offers": "o,p\n" + "1,old\n" * 500, "commitments": "c\n" + "old\n" * 300}
NEW = {"offers": "o,p\n" + "2,new\n" * 700, "commitments": "c\n" + "new\n" * 200}


def _run_child(step: int) -> int:
    """Fork; the child writes NEW with the crash hook at ``step``; returns the child's exit status."""
    pid = os.fork()
    if pid == 0:  # child
        code = 0
        try:
            os.environ[store.CRASH_ENV] = str(step)
            store._STEP = 0
            store.write_provider("azure", NEW, {"provider": "azure"})
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _state() -> tuple[str, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a rejected file would be a failure here
        offers = {p: t for p, _, t in store.read_refreshed("offers")}
        commitments = {p: t for p, _, t in store.read_refreshed("commitments")}
    return offers["azure"], commitments["azure"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_kill_at_every_write_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUFLEET_DATA_DIR", str(tmp_path))
    store.write_provider("azure", OLD, {"provider": "azure"})
    killed_at = []
    for step in range(1, 40):
        code = _run_child(step)
        if code == 0:
            break
        assert code == 99, code
        killed_at.append(step)
        state = _state()  # the previous state, or (after the switch) the new one: never a mix
        assert state in {(OLD["offers"], OLD["commitments"]), (NEW["offers"], NEW["commitments"])}, step
        store.write_provider("azure", OLD, {"provider": "azure"})  # the next update works...
        assert _state() == (OLD["offers"], OLD["commitments"])
        leftovers = sorted(p.name for p in store.refreshed_dir().iterdir())
        assert len(leftovers) == 3, leftovers  # ...and removes what the killed one left behind
    assert len(killed_at) >= 9  # 3 files x (half written, written, renamed) + removals of the old files
    assert _state() == (NEW["offers"], NEW["commitments"])
