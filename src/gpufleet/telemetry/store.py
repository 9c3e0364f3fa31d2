"""The telemetry store: Parquet files under a directory, queried with DuckDB.

Layout (``docs/telemetry.md``)::

    <store>/manifest.json                      written last, atomically: the only list of live files
    <store>/series/series-<batch>.parquet      one row per series (GPU x metric x workload labels)
    <store>/samples/day=<YYYY-MM-DD>/part-<batch>-<n>.parquet   (ts TIMESTAMP UTC, series_id INTEGER,
    value DOUBLE)

Samples reference series by an integer id (like a Prometheus TSDB), so the 10^8-row scans group on integers.
An ingest writes new files under names nobody reads yet, then replaces the manifest (rename); a killed
ingest leaves the previous manifest, so the previous data stays readable, and its stray files are ignored
and removed by the next ingest. One writer at a time (``fcntl`` lock on ``<store>/.lock``).
DuckDB is imported here only (lazily), never at ``import gpufleet``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from gpufleet.errors import ConfigFileError, InputError
from gpufleet.fileio import atomic_write_text, check_path_text, note_input
from gpufleet.telemetry.schema import (
    LABEL_COLUMNS,
    IngestReport,
    ProblemCounter,
    SampleBatch,
)
from gpufleet.units import US_PER_S

if TYPE_CHECKING:
    import duckdb

MANIFEST: Final = "manifest.json"
#: First and last 4 bytes of every Parquet file (Apache Parquet format specification, "File format").
_PARQUET_MAGIC: Final = b"PAR1"
FORMAT: Final = "gpufleet-telemetry-store"
VERSION: Final = 1
#: Samples more than this far in the future (relative to the ingest clock) are refused as clock skew [s].
DEFAULT_SKEW_TOLERANCE_S: Final = 300.0
#: Series attributes (besides the id) kept in the series table.
SERIES_COLUMNS: Final[tuple[str, ...]] = ("gpu_key", "metric", "host", "gpu_index", *LABEL_COLUMNS, "source")
#: Labels that make a new series on the same GPU and metric (a new pod = a new series).
SERIES_IDENTITY: Final[tuple[str, ...]] = ("gpu_key", "metric", "pod", "namespace", "job", "container", "le")


def _series_select(con: Any, files: Sequence[str]) -> str:
    """``SELECT`` of the series files with every column of :data:`SERIES_COLUMNS`: a store written before a
    label column existed (``le``, histogram buckets) reads it as NULL."""
    have = {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM read_parquet({_sql_list(files)})").fetchall()}
    cols = ", ".join(
        c if c in have else f"NULL::{'INTEGER' if c == 'gpu_index' else 'VARCHAR'} AS {c}"
        for c in ("series_id", *SERIES_COLUMNS)
    )
    return f"SELECT {cols} FROM read_parquet({_sql_list(files)})"


def default_store_dir() -> Path:
    """``<user data dir>/telemetry`` (the data dir of :func:`gpufleet.catalog.fetch.store.data_dir`)."""
    from gpufleet.catalog.fetch.store import data_dir

    return data_dir() / "telemetry"


def _duckdb() -> Any:
    import duckdb

    return duckdb


@dataclass(frozen=True, slots=True, kw_only=True)
class PartInfo:
    file: str  # relative to the store
    rows: int
    min_ts_us: int
    max_ts_us: int


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sql_text(path: str | Path) -> str:
    """``path`` as a DuckDB string literal, quotes doubled (a store under ``it's`` was a SQL syntax error)."""
    return "'" + str(path).replace("'", "''") + "'"


def _sql_list(paths: Sequence[str]) -> str:
    """``paths`` as a DuckDB list of string literals (Python's repr quotes ``it's`` with ", an identifier)."""
    return "[" + ", ".join(_sql_text(p) for p in paths) + "]"


sql_list = _sql_list  # for the readers of the store's files (analyze_workloads reads one time slab at a time)


def _store_file_problem(name: object, folder: str) -> str | None:
    """Why ``name`` is not a file of the store's ``folder`` (a relative path inside it), or None."""
    if not isinstance(name, str) or not name:
        return f"a file name is {name!r}, not a path"
    parts = Path(name).parts
    if Path(name).is_absolute() or ".." in parts or not parts or parts[0] != folder:
        return f"the file {name!r} is not inside the store's {folder}/ folder"
    return None


def _manifest_problem(doc: dict[str, Any]) -> str | None:
    """What is malformed in a manifest of the right format and version, or None: parts of
    ``{file, rows, min_ts_us, max_ts_us}`` (whole numbers, min <= max), series files and batches as lists."""
    parts, series, batches = doc.get("parts"), doc.get("series_files"), doc.get("batches")
    if not isinstance(parts, list) or not isinstance(series, list) or not isinstance(batches, list):
        return "parts, series_files and batches must be lists"
    for k, p in enumerate(parts):
        if not isinstance(p, dict) or set(p) != {"file", "rows", "min_ts_us", "max_ts_us"}:
            return f"part {k} is not a record of file, rows, min_ts_us and max_ts_us"
        ints = [p["rows"], p["min_ts_us"], p["max_ts_us"]]
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in ints):
            return f"part {k} ({p['file']!r}) has rows or timestamps that are not whole numbers"
        if p["rows"] < 0 or p["min_ts_us"] > p["max_ts_us"]:
            return f"part {k} ({p['file']!r}) has negative rows or its first timestamp after its last"
        if (why := _store_file_problem(p["file"], "samples")) is not None:
            return f"part {k}: {why}"
    for f in series:
        if (why := _store_file_problem(f, "series")) is not None:
            return f"series_files: {why}"
    if not all(isinstance(b, dict) for b in batches):
        return "a batch is not a record"
    return None


#: DuckDB errors that reading a damaged Parquet file raises (found by corrupting stored files at random:
#: tests/robustness/test_store_damage.py); others (bad SQL, values out of range) are re-raised as they are
_DAMAGE_ERRORS: Final = ("Error", "IOException", "InvalidInputException")


class _StoreConnection:
    """A DuckDB connection over a store's files: an error reading them (a Parquet file damaged inside, with
    its magic bytes intact) is a :class:`ConfigFileError` naming the store, not a DuckDB traceback."""

    def __init__(self, con: Any, root: Path) -> None:
        self._con = con
        self._root = root

    def execute(self, query: str, parameters: Any = None) -> Any:
        duckdb = _duckdb()
        try:
            self._con.execute(query, parameters) if parameters is not None else self._con.execute(query)
        except duckdb.Error as exc:
            if type(exc).__name__ not in _DAMAGE_ERRORS:
                raise
            raise ConfigFileError(
                f"The telemetry store {self._root} is damaged: reading its files failed "
                f"({str(exc).splitlines()[0][:200]}). The store is written atomically, so a file was edited, "
                "copied in part or the disk failed; restore the directory from a backup, or start a new "
                "store with --store and ingest again."
            ) from None
        return self._con

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


class TelemetryStore:
    """A telemetry store directory (created on first ingest)."""

    def __init__(self, root: Path | str | None = None) -> None:
        if root is not None and not isinstance(root, str | os.PathLike):
            raise InputError(
                f"The telemetry store must be a directory path (str or Path), got {type(root).__name__} "
                f"{str(root)[:60]!r}. Pass the store's directory, or None for the default one."
            )
        self.root = Path(root) if root is not None else default_store_dir()
        check_path_text(self.root, what="telemetry store (--store)")
        try:
            is_file = self.root.exists() and not self.root.is_dir()
        except OSError as exc:  # a name over the file system's limit, a folder that may not be entered
            raise InputError(
                f"The telemetry store path {str(self.root)[:80]!r} cannot be used ({exc.strerror or exc}). "
                "Pass --store with a directory path of normal length in a folder you can read."
            ) from None
        if is_file:
            raise InputError(
                f"The telemetry store {self.root} is a file, not a directory. A store is a directory that "
                "gpufleet creates on the first ingest: pass --store with a new or empty directory path."
            )

    def _check_files(self, files: Sequence[str]) -> None:
        """Each of ``files`` (listed in the manifest) is a whole Parquet file: present, a regular file,
        with the ``PAR1`` magic at both ends (a truncated copy lacks its footer and made DuckDB raise)."""
        for name in files:
            path = Path(name)
            note_input(path)
            try:
                size = path.stat().st_size if path.is_file() else -1
                if size >= 8:
                    with path.open("rb") as fh:
                        head = fh.read(4)
                        fh.seek(size - 4)
                        tail = fh.read(4)
                else:
                    head = tail = b""
            except OSError:
                size, head, tail = -1, b"", b""
            if size < 0 or head != _PARQUET_MAGIC or tail != _PARQUET_MAGIC:
                what = "is missing" if size < 0 else "is not a whole Parquet file (truncated or overwritten)"
                raise ConfigFileError(
                    f"The telemetry store {self.root} is damaged: {path} {what}. The store is written "
                    "atomically, so it was edited, copied in part or the disk failed; restore the directory "
                    "from a backup, or start a new store with --store and ingest again."
                )

    # ----------------------------------------------------------------------------------------- manifest
    def manifest(self) -> dict[str, Any]:
        path = self.root / MANIFEST
        if not path.exists():
            return {"format": FORMAT, "version": VERSION, "parts": [], "series_files": [], "batches": []}
        note_input(
            path
        )  # `-o` onto the manifest would destroy the store (telemetry findings -o manifest.json)
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigFileError(
                f"The telemetry store manifest {path} cannot be read ({exc}). It is written atomically, so "
                "this means it was edited or the disk failed; restore it or start a new store with --store."
            ) from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != VERSION:
            raise ConfigFileError(
                f"{path} is not a gpufleet telemetry store manifest (format {FORMAT} v{VERSION}). Point "
                "--store "
                "at a directory gpufleet created, or at an empty one."
            )
        problem = _manifest_problem(doc)
        if problem is not None:  # a field of the wrong shape made a KeyError/TypeError traceback
            raise ConfigFileError(
                f"The telemetry store manifest {path} is damaged: {problem}. It is written atomically, so it "
                "was edited or the disk failed; restore the store from a backup, or start a new store with "
                "--store and ingest again."
            )
        return doc

    def parts(self, start_us: int | None = None, end_us: int | None = None) -> list[PartInfo]:
        """Live sample files overlapping ``[start_us, end_us)`` (file pruning by the manifest's time
        range)."""
        out = []
        for p in self.manifest()["parts"]:
            part = PartInfo(**p)
            if start_us is not None and part.max_ts_us < start_us:
                continue
            if end_us is not None and part.min_ts_us >= end_us:
                continue
            out.append(part)
        return out

    def is_empty(self) -> bool:
        return not self.manifest()["parts"]

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file on the path (NotADirectoryError), no permission, read-only disk
            raise InputError(
                f"Cannot create the telemetry store {self.root}: {exc.strerror or exc}. Pass --store with a "
                "directory path that can be created (or set GPUFLEET_DATA_DIR to a writable directory)."
            ) from None
        with (self.root / ".lock").open("a") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise InputError(
                    f"Another gpufleet ingest is writing to {self.root}. Wait for it to finish, then retry."
                ) from None
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    # ------------------------------------------------------------------------------------------ queries
    def connect(self, start_us: int | None = None, end_us: int | None = None) -> duckdb.DuckDBPyConnection:
        """A DuckDB connection with views ``samples`` (ts, series_id, value), ``series`` and ``samples_l``
        (samples joined with their series labels), limited to files overlapping the time range."""
        duckdb = _duckdb()
        con = _StoreConnection(duckdb.connect(), self.root)
        con.execute(f"SET threads={max(os.cpu_count() or 1, 1)}")
        doc = self.manifest()
        parts = [str(self.root / p.file) for p in self.parts(start_us, end_us)]
        series = [str(self.root / f) for f in doc["series_files"]]
        self._check_files([*parts, *series[-1:]])
        if parts:
            con.execute(
                f"CREATE VIEW samples AS SELECT ts, series_id, value FROM read_parquet({_sql_list(parts)})"
            )
        else:
            con.execute(
                "CREATE VIEW samples AS SELECT NULL::TIMESTAMP ts, NULL::INTEGER series_id, "
                "NULL::DOUBLE value WHERE false"
            )
        if series:
            con.execute(f"CREATE VIEW series AS {_series_select(con, series[-1:])}")
        else:
            cols = ", ".join(
                f"NULL::{'INTEGER' if c == 'gpu_index' else 'VARCHAR'} {c}" for c in SERIES_COLUMNS
            )
            con.execute(f"CREATE VIEW series AS SELECT NULL::INTEGER series_id, {cols} WHERE false")
        con.execute(
            "CREATE VIEW samples_l AS SELECT s.ts, s.value, r.* FROM samples s JOIN series r USING "
            "(series_id)"
        )
        return con  # type: ignore[return-value]

    # ------------------------------------------------------------------------------------------- ingest
    def append(
        self,
        batch: SampleBatch,
        problems: ProblemCounter,
        *,
        sources: Sequence[str],
        rows_read: int,
        now_us: int | None = None,
        skew_tolerance_s: float = DEFAULT_SKEW_TOLERANCE_S,
    ) -> IngestReport:
        """Store ``batch`` atomically after the duplicate, order and clock-skew checks (counted in the
        report)."""
        duckdb = _duckdb()
        import numpy as np

        now_us = int(time.time() * US_PER_S) if now_us is None else now_us
        where = ", ".join(sources)[:200] or "input"
        with self._lock():
            self._remove_strays()
            doc = self.manifest()
            con = _StoreConnection(duckdb.connect(), self.root)
            data = {
                "rn": np.arange(len(batch), dtype=np.int64),
                "lid": np.asarray(batch.label_idx, dtype=np.int64),
                "ts_us": np.asarray(batch.ts_us, dtype=np.int64),
                "metric": np.asarray(batch.metric, dtype=object),
                "value": np.asarray(batch.value, dtype=np.float64),
            }
            names = ("gpu_key", "host", "gpu_index", *LABEL_COLUMNS, "source")
            labels = {
                n: np.asarray(
                    [r[i] for r in batch.label_rows], dtype=np.int32 if n == "gpu_index" else object
                )
                for i, n in enumerate(names)
            }
            labels["lid"] = np.arange(len(batch.label_rows), dtype=np.int64)
            con.register("incoming", data)
            con.register("incoming_labels", labels)
            label_sql = ", ".join(f"NULLIF(l.{c}, '') AS {c}" for c in LABEL_COLUMNS)
            con.execute(
                f"CREATE TEMP TABLE raw AS SELECT i.rn, i.ts_us, l.gpu_key, i.metric, l.host, l.gpu_index, "
                f"i.value, {label_sql}, l.source FROM incoming i JOIN incoming_labels l USING (lid)"
            )
            con.unregister("incoming")
            con.unregister("incoming_labels")
            # Clock skew: timestamps in the future beyond the tolerance.
            limit_us = now_us + int(skew_tolerance_s * US_PER_S)
            skew = con.execute(
                "SELECT count(*), any_value(gpu_key || ' ' || metric || ' at ' || "
                "CAST(make_timestamp(ts_us) AS VARCHAR)) FROM raw WHERE ts_us > ?",
                [limit_us],
            ).fetchone()
            if skew and skew[0]:
                problems.add(
                    where,
                    "clock_skew",
                    f"{skew[1]} is more than {skew_tolerance_s:.0f} s after the ingest clock",
                    n=skew[0],
                )
                con.execute("DELETE FROM raw WHERE ts_us > ?", [limit_us])
            # Out of order within a series (input order): warned, then sorted on store.
            ooo = con.execute(
                "SELECT count(*), any_value(gpu_key || ' ' || metric) FROM (SELECT gpu_key, metric, ts_us, "
                "lag(ts_us) OVER (PARTITION BY gpu_key, metric, le ORDER BY rn) AS prev FROM raw) "
                "WHERE ts_us < prev"
            ).fetchone()
            if ooo and ooo[0]:
                problems.add(where, "out_of_order", f"timestamps go backwards in {ooo[1]}", n=ooo[0])
            # Duplicates inside the input: keep the first.
            dup = con.execute(
                "SELECT count(*), any_value(gpu_key || ' ' || metric || ' ' || CAST(ts_us AS VARCHAR)) FROM "
                "(SELECT gpu_key, metric, ts_us, row_number() OVER (PARTITION BY gpu_key, metric, le, ts_us "
                "ORDER BY rn) AS k FROM raw) WHERE k > 1"
            ).fetchone()
            if dup and dup[0]:
                problems.add(where, "duplicate_sample", f"{dup[1]} given more than once", n=dup[0])
                con.execute(
                    "DELETE FROM raw WHERE rn IN (SELECT rn FROM (SELECT rn, row_number() OVER (PARTITION BY "
                    "gpu_key, metric, le, ts_us ORDER BY rn) AS k FROM raw) WHERE k > 1)"
                )
            # Series ids: reuse existing ones, number new ones after the largest.
            old_series = [str(self.root / f) for f in doc["series_files"][-1:]]
            self._check_files(old_series)
            if old_series:
                con.execute(f"CREATE TEMP TABLE series AS {_series_select(con, old_series)}")
            else:
                con.execute(
                    "CREATE TEMP TABLE series AS SELECT 0::INTEGER series_id, "
                    + ", ".join(f"raw.{c}" for c in SERIES_COLUMNS)
                    + " FROM raw WHERE false"
                )
            ident = " AND ".join(f"s.{c} IS NOT DISTINCT FROM r.{c}" for c in SERIES_IDENTITY)
            con.execute(
                f"""INSERT INTO series
                SELECT (SELECT coalesce(max(series_id), 0) FROM series) + row_number() OVER (ORDER BY
                gpu_key, metric)
                       AS series_id, {", ".join(SERIES_COLUMNS)}
                FROM (SELECT {
                    ", ".join(
                        f"any_value({c}) AS {c}" if c not in SERIES_IDENTITY else c for c in SERIES_COLUMNS
                    )
                }
                      FROM raw r WHERE NOT EXISTS (SELECT 1 FROM series s WHERE {ident})
                      GROUP BY {", ".join(SERIES_IDENTITY)})"""
            )
            con.execute(
                "CREATE TEMP TABLE new_samples AS SELECT make_timestamp(r.ts_us) AS ts, s.series_id, "
                "r.value "
                f"FROM raw r JOIN series s ON {ident}"
            )
            # Duplicates of samples already stored (same series and timestamp).
            bounds = con.execute(
                "SELECT min(epoch_us(ts)), max(epoch_us(ts)), count(*) FROM new_samples"
            ).fetchone()
            assert bounds is not None
            lo, hi, n_new = bounds
            if n_new:
                overlap = [str(self.root / p.file) for p in self.parts(lo, hi + 1)]
                self._check_files(overlap)
                if overlap:
                    stored_dup = con.execute(
                        "SELECT count(*) FROM new_samples n WHERE EXISTS (SELECT 1 FROM "
                        f"read_parquet({_sql_list(overlap)}) o "
                        "WHERE o.series_id = n.series_id AND o.ts = n.ts)"
                    ).fetchone()
                    if stored_dup and stored_dup[0]:
                        problems.add(
                            where,
                            "duplicate_sample",
                            "samples already in the store (re-ingested file?)",
                            n=stored_dup[0],
                        )
                        con.execute(
                            "DELETE FROM new_samples n WHERE EXISTS (SELECT 1 FROM "
                            f"read_parquet({_sql_list(overlap)}) o "
                            "WHERE o.series_id = n.series_id AND o.ts = n.ts)"
                        )
            batch_id = None
            stored = con.execute(
                "SELECT count(*), min(epoch_us(ts)), max(epoch_us(ts)), count(DISTINCT s.gpu_key) "
                "FROM new_samples n JOIN series s USING (series_id)"
            ).fetchone()
            assert stored is not None
            n_stored, first, last, gpus = stored
            if n_stored:
                batch_id = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + uuid.uuid4().hex[:8]
                doc = self._write_batch(con, doc, batch_id, sources)
            report = IngestReport(
                sources=tuple(sources),
                rows_read=rows_read,
                rows_stored=int(n_stored),
                gpus=int(gpus or 0),
                first_ts_us=int(first) if n_stored else None,
                last_ts_us=int(last) if n_stored else None,
                problems=problems.problems(),
                batch_id=batch_id,
            )
            if batch_id:
                doc["batches"].append(
                    {
                        "id": batch_id,
                        "sources": list(sources),
                        "rows": int(n_stored),
                        "problems": sum(p.count for p in report.problems),
                    }
                )
                atomic_write_text(self.root / MANIFEST, json.dumps(doc, indent=1), replaces_input=True)
            con.close()
            return report

    def _write_batch(
        self, con: Any, doc: dict[str, Any], batch_id: str, sources: Sequence[str]
    ) -> dict[str, Any]:
        """Write the batch's files under names not in the manifest; returns the manifest to publish."""
        staging = self.root / f".staging-{batch_id}"
        staging.mkdir(parents=True)
        try:
            return self._write_staged(con, doc, batch_id, sources, staging)
        finally:  # published files were moved out; a failed write leaves no staging folder behind
            shutil.rmtree(staging, ignore_errors=True)

    def _write_staged(
        self, con: Any, doc: dict[str, Any], batch_id: str, sources: Sequence[str], staging: Path
    ) -> dict[str, Any]:
        series_rel = f"series/series-{batch_id}.parquet"
        (self.root / "series").mkdir(exist_ok=True)
        con.execute(
            "COPY (SELECT * FROM series ORDER BY series_id) TO "
            f"{_sql_text(staging / 'series.parquet')} (FORMAT parquet)"
        )
        days = [
            r[0]
            for r in con.execute(
                "SELECT DISTINCT strftime(ts, '%Y-%m-%d') FROM new_samples ORDER BY 1"
            ).fetchall()
        ]
        new_parts = []
        for i, day in enumerate(days):
            tmp = staging / f"part-{i}.parquet"
            con.execute(
                f"COPY (SELECT ts, series_id, value FROM new_samples WHERE strftime(ts, '%Y-%m-%d') = ? "
                f"ORDER BY series_id, ts) TO {_sql_text(tmp)} (FORMAT parquet)",
                [day],
            )
            row = con.execute(
                f"SELECT count(*), min(epoch_us(ts)), max(epoch_us(ts)) FROM read_parquet({_sql_text(tmp)})"
            ).fetchone()
            rel = f"samples/day={day}/part-{batch_id}-{i}.parquet"
            new_parts.append((tmp, rel, row))
        # Move into place (names not yet in the manifest, so readers do not see them), fsync, then publish.
        for tmp in [*(t for t, _, _ in new_parts), staging / "series.parquet"]:
            _fsync(tmp)  # on disk before the manifest names them (a power cut must not publish holes)
        for tmp, rel, _ in new_parts:
            (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, self.root / rel)
        os.replace(staging / "series.parquet", self.root / series_rel)
        shutil.rmtree(staging, ignore_errors=True)
        new = dict(doc)
        new["parts"] = [
            *doc["parts"],
            *(
                {"file": rel, "rows": int(r[0]), "min_ts_us": int(r[1]), "max_ts_us": int(r[2])}
                for _, rel, r in new_parts
            ),
        ]
        new["series_files"] = [*doc["series_files"], series_rel][-1:]
        return new

    def _remove_strays(self) -> None:
        """Files left by a killed ingest (not in the manifest): removed under the lock."""
        if not self.root.exists():
            return
        doc = self.manifest()
        live = {p["file"] for p in doc["parts"]} | set(doc["series_files"])
        for st in self.root.glob(".staging-*"):
            shutil.rmtree(st, ignore_errors=True)
        for sub in ("samples", "series"):
            for f in (self.root / sub).rglob("*.parquet") if (self.root / sub).exists() else ():
                if str(f.relative_to(self.root)) not in live:
                    f.unlink(missing_ok=True)

    def register_parts(self, files: Sequence[Path], series_file: Path) -> None:
        """Adopt Parquet files already in the store layout (used by the benchmark's direct generator)."""
        duckdb = _duckdb()
        with self._lock():
            doc = self.manifest()
            con = duckdb.connect()
            for f in files:
                row = con.execute(
                    f"SELECT count(*), min(epoch_us(ts)), max(epoch_us(ts)) FROM read_parquet({_sql_text(f)})"
                ).fetchone()
                assert row is not None
                doc["parts"].append(
                    {
                        "file": str(f.relative_to(self.root)),
                        "rows": int(row[0]),
                        "min_ts_us": int(row[1]),
                        "max_ts_us": int(row[2]),
                    }
                )
            doc["series_files"] = [str(series_file.relative_to(self.root))]
            atomic_write_text(self.root / MANIFEST, json.dumps(doc, indent=1), replaces_input=True)


__all__ = ["SERIES_COLUMNS", "IngestReport", "PartInfo", "TelemetryStore", "default_store_dir"]
