"""Shared test fixtures."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("default", deadline=None, max_examples=50)
settings.register_profile("ci", deadline=None, max_examples=100)
settings.load_profile("ci" if os.environ.get("CI") else "default")
