"""`gpufleet serve` is lazy: its help and the other commands import nothing of the service (FastAPI,
SQLAlchemy, uvicorn, Alembic), so they stay fast and work without the service extra."""

from __future__ import annotations

from pathlib import Path

from .test_startup_imports import _run as _modules  # the same child process: exit code and modules

SERVICE = ("fastapi", "starlette", "uvicorn", "sqlalchemy", "alembic", "psycopg", "gpufleet.service")


def test_serve_help_and_other_commands_import_no_service_module(tmp_path: Path) -> None:
    for argv in (["serve", "--help"], ["serve", "token", "--help"], ["catalog", "gpus", "--format", "json"]):
        code, modules = _modules(argv, tmp_path)
        assert code == 0, argv
        loaded = sorted(m for m in modules if any(m == s or m.startswith(s + ".") for s in SERVICE))
        assert loaded == [], (argv, loaded)
