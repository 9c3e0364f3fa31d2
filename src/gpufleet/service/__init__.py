"""``gpufleet serve``: the HTTP service and dashboard, a third skin over the library (beside the CLI and the
reports), never a second engine. A route parses a body (the library's own pydantic types), calls the library
and returns the JSON the CLI prints; it holds no arithmetic.

Layout: :mod:`.settings` (what the process is told), :mod:`.db` (SQLAlchemy models, engine, Alembic
upgrade), :mod:`.auth` (teams, roles, hashed tokens, sessions), :mod:`.jobs` (DB-backed queue, worker
processes), :mod:`.api` (``/api/v1``), :mod:`.dashboard` (server-rendered HTML), :mod:`.ops` (health, metrics,
limits, headers), :mod:`.app` (assembles the ASGI app). Needs the ``service`` extra
(``pip install 'gpufleet[service]'``); nothing here is imported by the other commands.
"""
