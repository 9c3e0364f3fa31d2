"""Alembic migrations of the service database (``gpufleet.service.db.upgrade`` runs them)."""
