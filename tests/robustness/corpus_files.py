"""Files of the bad-input corpora: bytes written as given, or a callable that makes the path itself."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

Content = bytes | Callable[[Path], object]


def materialise(tmp_path: Path, files: dict[str, Content]) -> dict[str, str]:
    """Write ``files`` under ``tmp_path``; the substitutions for the argv templates: ``tmp`` and each file's
    stem -> its path."""
    subs = {"tmp": str(tmp_path)}
    for name, content in files.items():
        path = tmp_path / name
        if callable(content):
            content(path)
        else:
            path.write_bytes(content)
        subs[Path(name).stem] = str(path)
    return subs


def substituted(tmp_path: Path, argv: list[str], files: dict[str, Content]) -> list[str]:
    """``argv`` with ``{tmp}`` and each file's ``{stem}`` replaced by its path, the files written first."""
    subs = materialise(tmp_path, files)
    for key, value in subs.items():
        argv = [a.replace("{" + key + "}", value) for a in argv]
    return argv


def invoke_good(runner: Any, app: Any, tmp_path: Path, argv: list[str], files: dict[str, Content]) -> Any:
    """Run a valid corpus neighbour (files written, paths substituted); its result, for the caller's
    assertions (exit 0, no traceback)."""
    return runner.invoke(app, substituted(tmp_path, argv, files))
