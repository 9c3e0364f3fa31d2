"""Files of the bad-input corpora: bytes written as given, or a callable that makes the path itself."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

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
