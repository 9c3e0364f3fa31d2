"""The service tests run when the service extra is installed (`pip install 'gpufleet[service]'`; the dev extra
includes it); without it they are not collected. Fixtures live in fixtures.py."""

from __future__ import annotations

import importlib.util

_EXTRA = ("fastapi", "uvicorn", "sqlalchemy", "alembic", "multipart")

if any(importlib.util.find_spec(m) is None for m in _EXTRA):
    collect_ignore_glob = ["test_*.py"]
else:
    from .fixtures import (  # noqa: F401
        Env,
        any_db_url,
        any_env,
        env,
        own_data_dir,
        pg_server,
        sqlite_url,
    )
