"""The job process: ``python -m gpufleet.service.job_child`` reads ``{"kind": ..., "params": ...}`` on stdin,
runs the job and writes one JSON message per line on stdout: ``{"progress": f, "text": ...}`` while it runs,
then ``{"done": <document>, "html": ...}``, ``{"error": <one-paragraph message>}`` (a user error) or
``{"crash": <exception type>}`` (a bug; its traceback goes to stderr, the service's log).

A separate interpreter rather than a fork: nothing of the service's threads, locks or database connections
is inherited, and ending the process (cancel, time limit) cannot corrupt the service."""

from __future__ import annotations

import json
import sys
import time
import traceback
from typing import Any, TextIO

#: at most one progress message per this long [s]
PROGRESS_EVERY_S = 0.25


def _send(out: TextIO, msg: dict[str, Any]) -> None:
    out.write(json.dumps(msg, allow_nan=False) + "\n")
    out.flush()


def main(stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> int:
    from gpufleet.errors import GpufleetError
    from gpufleet.models.registry import forbid_model_files
    from gpufleet.service.job_kinds import execute

    forbid_model_files()  # a job's parameters come over HTTP: no model config file of the server is read

    try:
        request = json.loads(stdin.read())
        last = [0.0]

        def progress(fraction: float, text: str) -> None:
            now = time.monotonic()
            if now - last[0] >= PROGRESS_EVERY_S or fraction >= 1.0:  # a database write per message
                last[0] = now
                _send(stdout, {"progress": fraction, "text": text[:200]})

        doc, html = execute(str(request["kind"]), request["params"], progress)
        _send(stdout, {"done": doc, "html": html})
    except GpufleetError as exc:
        _send(stdout, {"error": str(exc)})
    except Exception as exc:
        traceback.print_exc()
        _send(stdout, {"crash": type(exc).__name__})
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
