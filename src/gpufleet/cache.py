"""The user cache directory, and "this exact text already passed validation" marks kept in it.

A cache is only a speed-up: the directory is ``$GPUFLEET_CACHE_DIR``, else ``$XDG_CACHE_HOME/gpufleet``,
else ``~/.cache/gpufleet``; one that cannot be created or written (read-only home, no home) means no cache,
never an error. Writes are atomic (:func:`gpufleet.fileio.atomic_write_text`).

A *validation mark* lets a fresh process skip importing and running a validator (pydantic costs ~0.1 s of CPU
at start-up) for a shipped data file it has validated before: the mark's name and content carry the SHA-256
of a namespace (what was validated, by which format and gpufleet version) and the file's full text, so an
edited, reinstalled or upgraded file never matches a stale mark, and a truncated or foreign mark file is
simply not a mark. Used by the calibration profile (:mod:`gpufleet.estimate.profile`); the offer table keeps
parsed columns instead (:mod:`gpufleet.catalog.offers_cache`).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def cache_dir() -> Path:
    """The user cache directory (not created here). Blank values are unset (a cache is never an error);
    ``GPUFLEET_CACHE_DIR`` and ``XDG_CACHE_HOME`` count only when absolute (XDG Base Directory specification):
    a relative value, or one with spaces around it, made a cache folder in every working directory."""
    own = os.environ.get("GPUFLEET_CACHE_DIR", "")
    if own.strip() and own == own.strip() and Path(own).expanduser().is_absolute():
        return Path(own).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg.strip() and Path(xdg).expanduser().is_absolute():
        return Path(xdg).expanduser() / "gpufleet"
    return Path.home() / ".cache" / "gpufleet"


def validation_key(namespace: str, text: str) -> str:
    """Hex SHA-256 over ``namespace`` (what validated it: kind, format and code version) and ``text``."""
    h = hashlib.sha256(f"gpufleet validation mark\n{namespace}\n".encode())
    h.update(text.encode("utf-8"))
    return h.hexdigest()


def _mark_path(kind: str, key: str) -> Path:
    return cache_dir() / f"{kind}-{key[:24]}.validated"


def is_marked_valid(kind: str, namespace: str, text: str) -> bool:
    """True when ``text`` was marked valid under ``namespace`` (the mark file holds the full key)."""
    key = validation_key(namespace, text)
    try:
        return _mark_path(kind, key).read_text(encoding="ascii").strip() == key
    except (OSError, RuntimeError, UnicodeDecodeError, ValueError):  # none, unreadable, no home, foreign
        return False


def mark_valid(kind: str, namespace: str, text: str) -> None:
    """Record that ``text`` passed validation under ``namespace``; silently skipped where nothing can be
    written."""
    key = validation_key(namespace, text)
    try:
        path = _mark_path(kind, key)
        from gpufleet.fileio import atomic_write_text

        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, key + "\n")
    except (OSError, RuntimeError):  # read-only or full disk, no home directory: the mark is only a speed-up
        pass


__all__ = ["cache_dir", "is_marked_valid", "mark_valid", "validation_key"]
