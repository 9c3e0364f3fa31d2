"""`gpufleet serve` is lazy: its help and the other commands import nothing of the service (FastAPI,
SQLAlchemy, uvicorn, Alembic), so they stay fast and work without the service extra."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SERVICE = ("fastapi", "starlette", "uvicorn", "sqlalchemy", "alembic", "psycopg", "gpufleet.service")

_CHILD = """
import io, json, sys, contextlib
from gpufleet.cli.entry import main
sys.argv = ["gpufleet", *json.loads(sys.argv[1])]
code = 0
try:
    with contextlib.redirect_stdout(io.StringIO()):
        main()
except SystemExit as exc:
    code = exc.code or 0
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def _modules(argv: list[str], tmp_path: Path) -> tuple[int, set[str]]:
    env = os.environ | {"GPUFLEET_CACHE_DIR": str(tmp_path), "COLUMNS": "120", "NO_COLOR": "1"}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(argv)], capture_output=True, text=True, env=env, check=False
    )
    doc = json.loads(out.stderr.strip().splitlines()[-1])
    return int(doc["code"]), set(doc["modules"])


def test_serve_help_and_other_commands_import_no_service_module(tmp_path: Path) -> None:
    for argv in (["serve", "--help"], ["serve", "token", "--help"], ["catalog", "gpus", "--format", "json"]):
        code, modules = _modules(argv, tmp_path)
        assert code == 0, argv
        loaded = sorted(m for m in modules if any(m == s or m.startswith(s + ".") for s in SERVICE))
        assert loaded == [], (argv, loaded)
