"""User files: atomic writes, and YAML/JSON parsing whose syntax errors name the line and column."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from gpufleet.errors import ConfigFileError


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file in the same folder, fsynced, then renamed."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic_write_bytes`)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def syntax_error_text(exc: Exception) -> str:
    """A JSON/YAML parser error on one line: what is wrong and where (line, column; 1-based)."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno}, column {exc.colno}"
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"{problem}{where}"


def parse_yaml_or_json(path: Path, text: str, describe: Callable[[str, str], str]) -> Any:
    """``text`` parsed as JSON when ``path`` ends in ``.json``, else as YAML.

    A syntax error raises :class:`ConfigFileError` with the message ``describe(kind, error)``: ``kind`` is
    ``"JSON"`` or ``"YAML"``, ``error`` is :func:`syntax_error_text` of the parser error.
    """
    is_json = path.suffix.lower() == ".json"
    try:
        return json.loads(text) if is_json else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigFileError(describe("JSON" if is_json else "YAML", syntax_error_text(exc))) from exc


__all__ = ["atomic_write_bytes", "atomic_write_text", "parse_yaml_or_json", "syntax_error_text"]
