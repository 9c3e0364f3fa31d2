"""Where refreshed prices live, and how they are written: atomically, never over a file we did not write.

Directory: ``$GPUFLEET_DATA_DIR``, else ``$XDG_DATA_HOME/gpufleet``, else ``~/.local/share/gpufleet``; files
``refreshed/offers-<provider>.csv`` and ``refreshed/commitments-<provider>.csv``. Each file has a sidecar
``<file>.meta.json`` that we write with its SHA-256: a file is overwritten only when its sidecar is ours and
the hash still matches (the file was not edited since). Nothing here runs at import; reading never creates
directories.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from gpufleet.catalog.fetch.rates import CommitmentRate, read_rates_csv
from gpufleet.errors import DataError
from gpufleet.fileio import atomic_write_bytes

MARKER = "gpufleet-refreshed-prices"
META_SUFFIX = ".meta.json"


def data_dir() -> Path:
    """The user data directory (not created here)."""
    if os.environ.get("GPUFLEET_DATA_DIR"):
        return Path(os.environ["GPUFLEET_DATA_DIR"]).expanduser()
    if os.environ.get("XDG_DATA_HOME"):
        return Path(os.environ["XDG_DATA_HOME"]).expanduser() / "gpufleet"
    return Path.home() / ".local" / "share" / "gpufleet"


def refreshed_dir() -> Path:
    """``<data dir>/refreshed``."""
    return data_dir() / "refreshed"


def offers_path(provider: str) -> Path:
    return refreshed_dir() / f"offers-{provider}.csv"


def commitments_path(provider: str) -> Path:
    return refreshed_dir() / f"commitments-{provider}.csv"


def _meta_path(path: Path) -> Path:
    return path.with_name(path.name + META_SUFFIX)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_meta(path: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads(_meta_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) and meta.get("marker") == MARKER else None


def is_ours(path: Path) -> bool:
    """True when ``path`` carries our sidecar and was not modified since we wrote it."""
    meta = _read_meta(path)
    if meta is None:
        return False
    try:
        return meta.get("sha256") == _sha256(path.read_bytes())
    except OSError:
        return False


def check_writable(path: Path) -> None:
    """Raise :class:`DataError` if ``path`` exists and is not a file we wrote (or was edited since)."""
    if path.exists() and not is_ours(path):
        meta = _read_meta(path)
        why = "was edited after gpufleet wrote it" if meta else "was not written by gpufleet"
        raise DataError(
            f"Refusing to overwrite {path}: it {why} (no matching {path.name}{META_SUFFIX} sidecar). "
            "gpufleet only replaces its own refreshed files. Move or delete that file, or point "
            "GPUFLEET_DATA_DIR at another directory, then run `gpufleet catalog update` again."
        )


def write_refreshed(path: Path, text: str, meta: dict[str, Any]) -> None:
    """Atomically write ``text`` to ``path`` plus its sidecar; refuses a foreign or edited file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    check_writable(path)
    data = text.encode("utf-8")
    atomic_write_bytes(path, data)
    sidecar = {"marker": MARKER, "file": path.name, "sha256": _sha256(data), **meta}
    atomic_write_bytes(
        _meta_path(path), (json.dumps(sidecar, indent=2, sort_keys=True) + "\n").encode("utf-8")
    )


def _ours(pattern: str) -> list[Path]:
    d = refreshed_dir()
    if not d.is_dir():
        return []
    return sorted(p for p in d.glob(pattern) if p.is_file() and _read_meta(p) is not None)


def refreshed_offer_files() -> list[Path]:
    """Refreshed offer CSVs that we wrote (sidecar present), sorted; [] when none."""
    return _ours("offers-*.csv")


def refreshed_commitment_files() -> list[Path]:
    """Refreshed commitment CSVs that we wrote (sidecar present), sorted; [] when none."""
    return _ours("commitments-*.csv")


def read_refreshed_commitments() -> list[CommitmentRate]:
    """All fetched commitment rates on disk (no network)."""
    out: list[CommitmentRate] = []
    for p in refreshed_commitment_files():
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise DataError(
                f"Cannot read the refreshed file {p} ({exc}). Run `gpufleet catalog update`."
            ) from exc
        out.extend(read_rates_csv(text, source_name=str(p)))
    return out


__all__ = [
    "MARKER",
    "check_writable",
    "commitments_path",
    "data_dir",
    "is_ours",
    "offers_path",
    "read_refreshed_commitments",
    "refreshed_commitment_files",
    "refreshed_dir",
    "refreshed_offer_files",
    "write_refreshed",
]
