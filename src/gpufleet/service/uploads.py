"""Each team's simulation input files (a request trace for ``simulate autoscale``, a job file and a fleet file
for ``simulate batch``): uploaded, checked by the simulator's own reader (a bad file is a 4xx with the CLI's
message, before anything is kept), stored in the database as text, listed and deleted; a ``simulate`` or
``sweep`` job names them by id.

An uploaded file name is shown, never used as a path: it is reduced to a safe name (its suffix tells the
readers' layouts apart, as on the command line) and the text is written, when read, to that name inside a
private temporary folder. Another team's upload id is not found (404), like a missing one.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session as OrmSession
from sqlalchemy.orm import sessionmaker

from gpufleet.errors import ConfigFileError, GpufleetError, InputError
from gpufleet.service.auth import Principal
from gpufleet.service.db import Upload
from gpufleet.service.errors import Conflict, NotFound, PayloadTooLarge

#: what an upload is, and which reader checks it
UPLOAD_KINDS: dict[str, str] = {
    "trace": "a request trace for simulate autoscale (Azure CSV, Mooncake JSONL, BurstGPT or generic CSV)",
    "jobs": "a job file for simulate batch (generic CSV, Alibaba PAI/openb, Helios CSV, Philly JSON)",
    "batch_fleet": "a fleet file for simulate batch (YAML or JSON: pools, teams, off_peak)",
}
#: uploads a team may keep
MAX_UPLOADS_PER_TEAM = 50


def safe_upload_name(kind: str, name: str | None) -> str:
    """The uploaded name reduced to letters, digits, '.', '-' and '_' (its last path part only), with a suffix
    the reader understands: ``.csv`` added to a trace or job file without one, ``.yaml`` to a fleet file."""
    from gpufleet.service.telemetry_api import safe_file_name

    clean = safe_file_name(name)
    if clean == "telemetry" and (name or "").strip() in ("", "telemetry"):
        clean = kind
    suffixes = {
        "trace": (".csv", ".jsonl", ".ndjson"),
        "jobs": (".csv", ".json"),
        "batch_fleet": (".yaml", ".yml", ".json"),
    }[kind]
    if not clean.lower().endswith(suffixes):
        clean += ".yaml" if kind == "batch_fleet" else ".csv"
    return clean


@contextmanager
def written(files: Mapping[str, tuple[str, str]]) -> Iterator[dict[str, Path]]:
    """``{key: (safe name, text)}`` written to a private temporary folder (one sub-folder per key) as
    ``{key: path}``; a reader's error names the file, never the server's folder."""
    with tempfile.TemporaryDirectory(prefix="gpufleet-uploads-") as tmp:
        paths = {}
        for i, (key, (name, text)) in enumerate(files.items()):
            folder = Path(tmp) / str(i)
            folder.mkdir()
            path = folder / Path(name).name  # the name only, whatever it holds
            path.write_text(text, encoding="utf-8")
            paths[key] = path
        try:
            yield paths
        except GpufleetError as exc:
            text = str(exc)
            for i in range(len(files)):
                text = text.replace(f"{tmp}/{i}/", "")
            text = text.replace(tmp, "<upload>")
            if text == str(exc):
                raise
            if isinstance(exc, ConfigFileError):
                raise ConfigFileError(text) from None
            raise InputError(text) from None


def check_upload(kind: str, name: str, text: str, input_format: str = "auto") -> tuple[str, str]:
    """(layout, one-line summary) of an upload read by the simulator's reader (its one-paragraph error
    otherwise)."""
    with written({"f": (name, text)}) as paths:
        path = paths["f"]
        if kind == "trace":
            from gpufleet.simulate.traces import read_trace

            tr = read_trace(path, input_format)
            return tr.layout, f"{len(tr):,} requests over {tr.duration_s:,.0f} s ({tr.layout})"
        if kind == "jobs":
            from gpufleet.simulate.jobs import read_jobs

            queue = read_jobs(path, input_format)
            teams = sorted({j.team for j in queue})
            return input_format, f"{len(queue):,} jobs of {len(teams)} team(s)"
        from gpufleet.simulate.batch import read_fleet

        if input_format != "auto":
            raise InputError(
                f"input_format = {input_format!r}: a batch fleet file has one format (YAML, or JSON by its "
                ".json name). Leave input_format out."
            )
        fleet = read_fleet(path)
        gpus = sum(p.nodes * p.gpus_per_node for p in fleet.pools)
        return "yaml", f"{len(fleet.pools)} pool(s), {gpus:,} GPUs"


def save(
    sm: sessionmaker[OrmSession],
    who: Principal,
    *,
    kind: str,
    filename: str | None,
    data: bytes,
    max_bytes: int,
    input_format: str = "auto",
) -> Upload:
    """Check and keep an upload for the principal's team (editor)."""
    from gpufleet.fileio import decode_user_bytes

    who.require("editor")
    if kind not in UPLOAD_KINDS:
        listed = "; ".join(f"{k} ({v})" for k, v in UPLOAD_KINDS.items())
        raise InputError(f"Upload kind {kind!r} is unknown. Allowed: {listed}.")
    if len(data) > max_bytes:
        raise PayloadTooLarge(
            f"The upload is {len(data):,} bytes; uploads are limited to {max_bytes:,} bytes "
            f"({max_bytes / 1024**2:g} MiB, the service's upload limit). Cut the file (e.g. the first "
            "hours of a trace) or run the simulation with `gpufleet simulate` on your machine."
        )
    if not data.strip():
        raise InputError("The uploaded file is empty: give a file with a header line and rows.")
    name = safe_upload_name(kind, filename)
    text = decode_user_bytes(data, source=f"The uploaded file {name}")
    if "\x00" in text:  # past the first 4 KiB decode_user_bytes looks at; PostgreSQL text cannot hold it
        line = text[: text.index("\x00")].count("\n") + 1
        raise InputError(
            f"The uploaded file {name} has a NUL character on line {line}: it is not a text file. Give the "
            "CSV, JSON Lines, YAML or JSON text file the simulator reads."
        )
    layout, summary = check_upload(kind, name, text, input_format)
    with sm() as db:
        n = db.scalar(select(func.count()).select_from(Upload).where(Upload.team_id == who.team_id)) or 0
        if n >= MAX_UPLOADS_PER_TEAM:
            raise Conflict(
                f"Team {who.team_name!r} already keeps {MAX_UPLOADS_PER_TEAM} uploads, the most allowed. "
                "Delete some (DELETE /api/v1/uploads/ID) first."
            )
        row = Upload(
            team_id=who.team_id,
            kind=kind,
            name=name,
            format=layout,
            size_bytes=len(data),
            sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
            summary=summary[:300],
            text=text,
        )
        db.add(row)
        db.commit()
        return row


def team_uploads(sm: sessionmaker[OrmSession], team_id: int, kind: str | None = None) -> list[Upload]:
    """The team's uploads, newest first."""
    with sm() as db:
        q = select(Upload).where(Upload.team_id == team_id)
        if kind is not None:
            q = q.where(Upload.kind == kind)
        return list(db.scalars(q.order_by(Upload.id.desc())).all())


def get(sm: sessionmaker[OrmSession], team_id: int, upload_id: int) -> Upload:
    """One of the team's uploads; another team's is :class:`NotFound`, like a missing one."""
    with sm() as db:
        row = db.get(Upload, upload_id)
    if row is None or row.team_id != team_id:
        raise NotFound(f"No upload with id {upload_id} in your team. GET /api/v1/uploads lists your team's.")
    return row


def delete(sm: sessionmaker[OrmSession], who: Principal, upload_id: int) -> Upload:
    """Delete one of the team's uploads (editor); a queued job naming it then fails, saying so."""
    who.require("editor")
    row = get(sm, who.team_id, upload_id)
    with sm() as db:
        db.query(Upload).filter(Upload.id == row.id, Upload.team_id == who.team_id).delete()
        db.commit()
    return row


# --- the uploads of a job ------------------------------------------------------------------------------
def with_upload_digests(sm: sessionmaker[OrmSession], team_id: int, kind: str, params: dict[str, Any]) -> Any:
    """A simulate or sweep job's parameters with ``upload_sha256`` = {id: SHA-256} of every upload it names
    (whatever the body said): each id must be one of the team's uploads of the right kind (404 otherwise). The
    digest makes the job's parameters, and so its idempotency key, follow the file's content."""
    from gpufleet.service.job_kinds_sim import referenced_uploads

    refs = referenced_uploads(kind, params)
    if refs is None:
        return params
    digests = {}
    for upload_id, want in refs:
        row = get(sm, team_id, upload_id)
        if row.kind != want:
            raise InputError(
                f"Upload {upload_id} ({row.name}) is a {row.kind} upload; here a {want} upload is needed "
                f"({UPLOAD_KINDS[want]}). GET /api/v1/uploads?kind={want} lists yours."
            )
        digests[str(upload_id)] = row.sha256
    return {k: v for k, v in params.items() if k != "upload_sha256"} | {"upload_sha256": digests}


def job_files(sm: sessionmaker[OrmSession], team_id: int, digests: Mapping[str, str]) -> dict[str, Any]:
    """What the job process gets for the uploads a job names: ``{id: {"name", "text"}}``, each checked to
    still be the team's and unchanged (:class:`InputError` naming it otherwise: the job then fails)."""
    out = {}
    with sm() as db:
        for key, sha in digests.items():
            row = db.get(Upload, int(key))
            if row is None or row.team_id != team_id or row.sha256 != sha:
                raise InputError(
                    f"Upload {key} was deleted or replaced after the job was submitted. Upload the file "
                    "again and submit the job with its new id."
                )
            out[key] = {"name": row.name, "text": row.text}
    return out
