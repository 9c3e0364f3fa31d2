"""Where refreshed prices live, and how they are written: as a unit, switched by a manifest written last.

Directory: ``$GPUFLEET_DATA_DIR``, else ``$XDG_DATA_HOME/gpufleet``, else ``~/.local/share/gpufleet``; in its
``refreshed/`` folder, per provider:

- ``offers-<provider>-<sha12>.csv`` and ``commitments-<provider>-<sha12>.csv``: content-addressed data files
  (``sha12`` = the first 12 hex digits of the file's SHA-256), each written atomically and never overwritten;
- ``<provider>.manifest.json``: written last (atomically), it names the two files in force with their size
  and SHA-256, plus the refresh metadata (captured_at, regions, source).

An update writes the two new data files, then switches the manifest, then deletes the files the old manifest
named. Killed at any point, the manifest names either the old pair (still on disk) or the new pair (complete),
so the next read and the next update work; orphans of a killed update are removed by the next one.

Price history: ``refreshed/history/prices-<provider>-<sha12>.csv``, one immutable file per refresh (its dated
prices), written before the manifest; the manifest's ``history`` list names every one in refresh order, so
the switch commits the new point with the new prices. History files are never deleted: one a killed update
left unlisted stays on disk, unread.

Reading verifies every file against the manifest (size, SHA-256) and parses it; a truncated, edited or
foreign file, a bad manifest or unparseable content rejects that provider's refreshed data: the shipped
prices are used and a :class:`StoredDataWarning` says so. Nothing here runs at import; reading never creates
directories. A manifest that is valid JSON but not ours is never overwritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpufleet.catalog.fetch.rates import CommitmentRate, read_rates_csv
from gpufleet.errors import DataError, GpufleetError, InputError
from gpufleet.fileio import decode_user_bytes, read_user_bytes

MARKER = "gpufleet-refreshed-prices"
MANIFEST_SUFFIX = ".manifest.json"
MANIFEST_VERSION = 1
KINDS: tuple[str, ...] = ("offers", "commitments")
#: Largest manifest [bytes] and refreshed data file [bytes] read back.
MAX_MANIFEST_BYTES = 1024 * 1024
MAX_DATA_BYTES = 64 * 1024 * 1024
#: Test hook: the write step at which a child process exits (os._exit) to simulate a kill.
CRASH_ENV = "GPUFLEET_TEST_CRASH_AT_WRITE_STEP"
_SHA_CHARS = 12


class StoredDataWarning(UserWarning):
    """Refreshed data on disk was rejected (truncated, edited, foreign); the shipped data is used instead."""


def data_dir() -> Path:
    """The user data directory (not created here). A blank ``GPUFLEET_DATA_DIR`` is an error (it made a
    folder named by the spaces in the working directory); ``XDG_DATA_HOME`` is used only when absolute, as
    the XDG Base Directory specification says (a relative or empty value is ignored)."""
    own = os.environ.get("GPUFLEET_DATA_DIR", "")
    if own and not own.strip():
        raise InputError(
            f"GPUFLEET_DATA_DIR is set to the blank {own!r}. Set it to the directory gpufleet keeps its data "
            "in (refreshed prices, telemetry), or unset it for the default ~/.local/share/gpufleet."
        )
    if own:
        from gpufleet.fileio import check_path_text

        check_path_text(own, what="GPUFLEET_DATA_DIR")
        if own != own.strip() or not Path(own).expanduser().is_absolute():
            why = (
                "spaces around it"
                if own != own.strip()
                else "a relative path (it would follow the working directory)"
            )
            raise InputError(
                f"GPUFLEET_DATA_DIR is set to {own!r}, {why}. Set it to the absolute path of the directory "
                "gpufleet keeps its data in (e.g. ~/gpufleet-data), or unset it for the default "
                "~/.local/share/gpufleet."
            )
        return Path(own).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME", "")
    if xdg.strip() and Path(xdg).expanduser().is_absolute():
        return Path(xdg).expanduser() / "gpufleet"
    return Path.home() / ".local" / "share" / "gpufleet"


def refreshed_dir() -> Path:
    """``<data dir>/refreshed``."""
    return data_dir() / "refreshed"


def manifest_path(provider: str) -> Path:
    return refreshed_dir() / f"{provider}{MANIFEST_SUFFIX}"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _data_name(kind: str, provider: str, sha: str) -> str:
    return f"{kind}-{provider}-{sha[:_SHA_CHARS]}.csv"


# ------------------------------------------------------------------------------------------------ reading


@dataclass(frozen=True, slots=True, kw_only=True)
class _Manifest:
    provider: str
    files: dict[str, tuple[str, int, str]]  # kind -> (name, bytes, sha256)
    meta: dict[str, Any]


def _parse_manifest(provider: str, raw: bytes) -> _Manifest:
    """The manifest of ``provider`` from ``raw`` bytes; ValueError (with what is wrong) otherwise."""
    try:
        doc = json.loads(decode_user_bytes(raw, source="manifest"))
    except (ValueError, GpufleetError) as exc:
        raise ValueError(f"it is not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("marker") != MARKER:
        raise ValueError("it was not written by gpufleet (no gpufleet marker)")
    if doc.get("version") != MANIFEST_VERSION or doc.get("provider") != provider:
        raise ValueError(
            f"unknown manifest version {doc.get('version')!r} or provider {doc.get('provider')!r}"
        )
    files: dict[str, tuple[str, int, str]] = {}
    entries = doc.get("files")
    if not isinstance(entries, dict):
        raise ValueError("it lists no files")
    for kind in KINDS:
        e = entries.get(kind)
        if not isinstance(e, dict):
            raise ValueError(f"it lacks the {kind} file")
        name, size, sha = e.get("name"), e.get("bytes"), e.get("sha256")
        if (
            not isinstance(name, str)
            or name != Path(name).name
            or not isinstance(size, int)
            or size < 0
            or not isinstance(sha, str)
            or not re.fullmatch(r"[0-9a-f]{64}", sha)
        ):
            raise ValueError(f"its {kind} entry is malformed")
        files[kind] = (name, size, sha)
    meta = {k: v for k, v in doc.items() if k not in {"marker", "version", "files"}}
    return _Manifest(provider=provider, files=files, meta=meta)


def _providers_on_disk() -> list[str]:
    d = refreshed_dir()
    if not d.is_dir():
        return []
    return sorted(
        p.name.removesuffix(MANIFEST_SUFFIX)
        for p in d.glob(f"*{MANIFEST_SUFFIX}")
        if not p.name.startswith(".")
    )


def _warn(provider: str, why: str) -> None:
    warnings.warn(
        f"Refreshed {provider} prices rejected: {why}. Using the shipped {provider} prices instead; run "
        f"`gpufleet catalog update --provider {provider}` to fetch them again.",
        StoredDataWarning,
        stacklevel=3,
    )


def _load_manifest(provider: str) -> _Manifest | None:
    path = manifest_path(provider)
    try:
        raw = read_user_bytes(path, what="refreshed-price manifest", max_bytes=MAX_MANIFEST_BYTES)
        return _parse_manifest(provider, raw)
    except (GpufleetError, ValueError) as exc:
        _warn(provider, f"{path}: {exc}")
        return None


def _verified_text(m: _Manifest, kind: str) -> tuple[Path, str]:
    name, size, sha = m.files[kind]
    path = refreshed_dir() / name
    data = read_user_bytes(path, what=f"refreshed {kind} file", max_bytes=MAX_DATA_BYTES)
    if len(data) != size:
        raise ValueError(f"{path} has {len(data)} bytes, the manifest says {size} (truncated or edited)")
    if _sha256(data) != sha:
        raise ValueError(f"{path} does not match its SHA-256 in the manifest (edited or foreign)")
    return path, decode_user_bytes(data, source=str(path))


def read_refreshed(kind: str) -> list[tuple[str, Path, str]]:
    """``(provider, path, text)`` of every verified refreshed ``kind`` file (``offers``/``commitments``).

    A provider whose manifest or files fail verification is skipped with a :class:`StoredDataWarning`.
    """
    out: list[tuple[str, Path, str]] = []
    for provider in _providers_on_disk():
        m = _load_manifest(provider)
        if m is None:
            continue
        try:
            out.append((provider, *_verified_text(m, kind)))
        except (GpufleetError, ValueError) as exc:
            _warn(provider, str(exc))
    return out


def current_path(kind: str, provider: str) -> Path | None:
    """The ``kind`` file in force for ``provider`` per its manifest (not verified), or None."""
    try:
        raw = read_user_bytes(manifest_path(provider), what="manifest", max_bytes=MAX_MANIFEST_BYTES)
        m = _parse_manifest(provider, raw)
    except (GpufleetError, ValueError):
        return None
    return refreshed_dir() / m.files[kind][0]


def offers_path(provider: str) -> Path:
    """The offers file in force for ``provider`` (or where a first one would be named, for messages)."""
    return current_path("offers", provider) or refreshed_dir() / f"offers-{provider}-<sha>.csv"


def commitments_path(provider: str) -> Path:
    """The commitments file in force for ``provider`` (or a placeholder name, for messages)."""
    return current_path("commitments", provider) or refreshed_dir() / f"commitments-{provider}-<sha>.csv"


def refreshed_offer_files() -> list[Path]:
    """Verified refreshed offer CSVs in force, sorted by provider; [] when none."""
    return [p for _, p, _ in read_refreshed("offers")]


def refreshed_commitment_files() -> list[Path]:
    """Verified refreshed commitment CSVs in force, sorted by provider; [] when none."""
    return [p for _, p, _ in read_refreshed("commitments")]


def read_refreshed_commitments() -> list[CommitmentRate]:
    """All fetched commitment rates on disk (no network); a provider whose file does not parse is skipped
    with a :class:`StoredDataWarning`."""
    out: list[CommitmentRate] = []
    for provider, path, text in read_refreshed("commitments"):
        try:
            out.extend(read_rates_csv(text, source_name=str(path)))
        except GpufleetError as exc:
            _warn(provider, str(exc))
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshedStatus:
    """One provider's refreshed data on disk, for ``gpufleet config show``: in force, or rejected and why."""

    provider: str
    in_force: bool
    captured_at: str | None  # the refresh's capture time (manifest), None when unknown or rejected
    offer_rows: int | None
    rate_rows: int | None
    files: tuple[str, ...]  # the data files the manifest names (in force) or () when rejected
    rejected_because: str | None


def refreshed_status() -> list[RefreshedStatus]:
    """Every provider with refreshed data in the data directory, verified and parsed as a query would read
    it: in force (with row counts), or rejected with the reason (the shipped prices are used instead)."""
    from gpufleet.catalog.offers_io import read_offers_csv  # lazy: another package

    out: list[RefreshedStatus] = []
    for provider in _providers_on_disk():
        path = manifest_path(provider)
        try:
            raw = read_user_bytes(path, what="refreshed-price manifest", max_bytes=MAX_MANIFEST_BYTES)
            m = _parse_manifest(provider, raw)
        except (GpufleetError, ValueError) as exc:
            out.append(_rejected(provider, f"{path}: {exc}"))
            continue
        try:
            offers_file, offers_text = _verified_text(m, "offers")
            rates_file, rates_text = _verified_text(m, "commitments")
            offers = read_offers_csv(offers_text, source_name=f"{offers_file} (refreshed)")
            rates = read_rates_csv(rates_text, source_name=str(rates_file))
        except (GpufleetError, ValueError) as exc:
            out.append(_rejected(provider, str(exc)))
            continue
        captured = m.meta.get("captured_at")
        out.append(
            RefreshedStatus(
                provider=provider,
                in_force=True,
                captured_at=str(captured) if captured is not None else None,
                offer_rows=len(offers),
                rate_rows=len(rates),
                files=(offers_file.name, rates_file.name),
                rejected_because=None,
            )
        )
    return out


def _rejected(provider: str, why: str) -> RefreshedStatus:
    return RefreshedStatus(
        provider=provider,
        in_force=False,
        captured_at=None,
        offer_rows=None,
        rate_rows=None,
        files=(),
        rejected_because=why,
    )


# ------------------------------------------------------------------------------------------------ writing


def _crash_point() -> None:
    """Test hook: count write steps; exit the process at step ``$GPUFLEET_TEST_CRASH_AT_WRITE_STEP``."""
    target = os.environ.get(CRASH_ENV)
    if not target:
        return
    global _STEP
    _STEP += 1
    if str(_STEP) == target:
        os._exit(99)


_STEP = 0


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data[: len(data) // 2])
            _crash_point()  # half written
            fh.write(data[len(data) // 2 :])
            fh.flush()
            os.fsync(fh.fileno())
        _crash_point()  # written, not yet renamed
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _crash_point()  # renamed


def check_provider_writable(provider: str) -> None:
    """Raise :class:`DataError` if ``provider``'s manifest is valid JSON that gpufleet did not write."""
    path = manifest_path(provider)
    if not path.exists():
        return
    try:
        doc = json.loads(read_user_bytes(path, what="manifest", max_bytes=MAX_MANIFEST_BYTES))
    except (GpufleetError, ValueError):
        return  # ours by name but damaged (e.g. truncated by a disk error): replaced by the next update
    if not isinstance(doc, dict) or doc.get("marker") != MARKER:
        raise DataError(
            f"Refusing to overwrite {path}: it was not written by gpufleet (no gpufleet marker). "
            "gpufleet only replaces its own refreshed files. Move or delete that file, or point "
            "GPUFLEET_DATA_DIR at another directory, then run `gpufleet catalog update` again."
        )


def _is_our_data_file(path: Path, provider: str) -> bool:
    m = re.fullmatch(
        rf"(?:offers|commitments)-{re.escape(provider)}-([0-9a-f]{{{_SHA_CHARS}}})\.csv", path.name
    )
    if m is None or not path.is_file():
        return False
    try:
        return _sha256(path.read_bytes())[:_SHA_CHARS] == m.group(1)
    except OSError:
        return False


def _cleanup(provider: str, keep: set[str]) -> None:
    """Delete ``provider``'s data files (ours: name matches content) and temp files not in ``keep``."""
    d = refreshed_dir()
    for p in sorted(d.glob(f"*-{provider}-*.csv")):
        if p.name not in keep and _is_our_data_file(p, provider):
            p.unlink(missing_ok=True)
            _crash_point()
    for p in sorted(d.glob(f".*-{provider}-*.tmp")) + sorted(d.glob(f".{provider}{MANIFEST_SUFFIX}.*.tmp")):
        p.unlink(missing_ok=True)


def history_dir() -> Path:
    """``<data dir>/refreshed/history``: one immutable price file per refresh (never deleted)."""
    return refreshed_dir() / "history"


def _history_name(provider: str, sha: str) -> str:
    return f"prices-{provider}-{sha[:_SHA_CHARS]}.csv"


def _history_entries(provider: str) -> list[dict[str, Any]]:
    """The history list to carry into the next manifest: the one in force, or (manifest unreadable) every
    history file on disk whose content matches its name, so a damaged manifest never loses history."""
    try:
        raw = read_user_bytes(manifest_path(provider), what="manifest", max_bytes=MAX_MANIFEST_BYTES)
        m = _parse_manifest(provider, raw)
    except (GpufleetError, ValueError):
        m = None
    if m is not None:
        return _history_list(m)
    out: list[dict[str, Any]] = []
    hd = history_dir()
    for p in sorted(hd.glob(f"prices-{provider}-*.csv")) if hd.is_dir() else []:
        data = p.read_bytes()
        sha = _sha256(data)
        if p.name == _history_name(provider, sha):
            out.append({"name": p.name, "bytes": len(data), "sha256": sha})
    return out


def _history_list(m: _Manifest) -> list[dict[str, Any]]:
    entries = m.meta.get("history", [])
    if not isinstance(entries, list):
        return []
    return [
        e
        for e in entries
        if isinstance(e, dict)
        and isinstance(e.get("name"), str)
        and e["name"] == Path(e["name"]).name
        and isinstance(e.get("bytes"), int)
        and isinstance(e.get("sha256"), str)
    ]


def read_history(provider: str) -> list[tuple[Path, str]]:
    """``(path, text)`` of every verified history file of ``provider``, in refresh order; [] when none.

    A file that fails verification (missing, truncated, edited) is skipped with a :class:`StoredDataWarning`.
    """
    if not manifest_path(provider).is_file():
        return []
    m = _load_manifest(provider)
    if m is None:
        return []
    out: list[tuple[Path, str]] = []
    for e in _history_list(m):
        path = history_dir() / e["name"]
        try:
            data = read_user_bytes(path, what="price-history file", max_bytes=MAX_DATA_BYTES)
            if len(data) != e["bytes"] or _sha256(data) != e["sha256"]:
                raise ValueError(f"{path} does not match its size and SHA-256 in the manifest (edited)")
            out.append((path, decode_user_bytes(data, source=str(path))))
        except (GpufleetError, ValueError) as exc:
            _warn(provider, f"price history: {exc}")
    return out


def write_provider(
    provider: str, texts: dict[str, str], meta: dict[str, Any], history_text: str | None = None
) -> dict[str, Path]:
    """Write ``provider``'s refreshed ``texts`` (kind -> CSV text) as a unit; returns kind -> path in force.

    Data files first, the manifest last, old files removed after the switch (module doc). ``history_text``
    (this refresh's dated prices) is written as a new immutable file under :func:`history_dir` before the
    manifest, which appends it to the history list it carries over: the switch commits both at once.
    """
    d = refreshed_dir()
    d.mkdir(parents=True, exist_ok=True)
    check_provider_writable(provider)
    if history_text is not None:
        history = _history_entries(provider)
        hd = history_dir()
        hd.mkdir(exist_ok=True)
        for p in sorted(hd.glob(f".prices-{provider}-*.tmp")):
            p.unlink(missing_ok=True)  # temp files of a killed update
        data = history_text.encode("utf-8")
        sha = _sha256(data)
        hpath = hd / _history_name(provider, sha)
        if not (hpath.is_file() and _sha256(hpath.read_bytes()) == sha):
            _write_atomic(hpath, data)
        if hpath.name not in {e["name"] for e in history}:
            history.append({"name": hpath.name, "bytes": len(data), "sha256": sha})
        meta = {**meta, "history": history}
    old = current_path("offers", provider), current_path("commitments", provider)
    _cleanup(provider, keep={p.name for p in old if p is not None})  # orphans of a killed update
    files: dict[str, dict[str, Any]] = {}
    paths: dict[str, Path] = {}
    for kind in KINDS:
        data = texts[kind].encode("utf-8")
        sha = _sha256(data)
        path = d / _data_name(kind, provider, sha)
        if not (path.is_file() and _is_our_data_file(path, provider)):
            _write_atomic(path, data)
        files[kind] = {"name": path.name, "bytes": len(data), "sha256": sha}
        paths[kind] = path
    manifest = {"marker": MARKER, "version": MANIFEST_VERSION, "provider": provider, "files": files, **meta}
    _write_atomic(manifest_path(provider), (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode())
    _cleanup(provider, keep={p.name for p in paths.values()})
    return paths


def manifest_stamp() -> tuple[tuple[str, int, int], ...]:
    """``(path, mtime_ns, size)`` of every manifest: changes whenever an update switches a provider."""
    out = []
    for provider in _providers_on_disk():
        try:
            st = manifest_path(provider).stat()
        except OSError:
            continue
        out.append((str(manifest_path(provider)), st.st_mtime_ns, st.st_size))
    return tuple(out)


__all__ = [
    "CRASH_ENV",
    "KINDS",
    "MARKER",
    "RefreshedStatus",
    "StoredDataWarning",
    "check_provider_writable",
    "commitments_path",
    "current_path",
    "data_dir",
    "history_dir",
    "manifest_path",
    "manifest_stamp",
    "offers_path",
    "read_history",
    "read_refreshed",
    "read_refreshed_commitments",
    "refreshed_commitment_files",
    "refreshed_dir",
    "refreshed_offer_files",
    "refreshed_status",
    "write_provider",
]
