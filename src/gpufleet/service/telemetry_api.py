"""``/api/v1/telemetry``: each team's telemetry store (DuckDB over Parquet, one directory per team), its
findings and alerts, through the same library calls as `gpufleet telemetry ingest|findings|alerts`."""

from __future__ import annotations

import json
import re
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from fastapi import APIRouter, Depends, File, Form, Query, Response, UploadFile

from gpufleet.errors import InputError
from gpufleet.service.auth import Principal
from gpufleet.service.deps import State, bearer_principal, state
from gpufleet.service.errors import NotFound
from gpufleet.service.schemas import ERROR_RESPONSES

if TYPE_CHECKING:
    from gpufleet.telemetry.finding_types import FleetFindings
    from gpufleet.telemetry.store import TelemetryStore
    from gpufleet.telemetry.summary import FleetSummary

router = APIRouter(prefix="/api/v1/telemetry", responses=ERROR_RESPONSES, tags=["telemetry"])
Who = Annotated[Principal, Depends(bearer_principal)]
St = Annotated[State, Depends(state)]

_LOCKS: dict[int, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _team_lock(team_id: int) -> threading.Lock:
    """One ingest or analysis at a time per team store in this process (the store also locks its files)."""
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(team_id, threading.Lock())


def _store(st: State, who: Principal, *, filled: bool = False) -> TelemetryStore:
    """The team's store; with ``filled``, :class:`NotFound` when it holds nothing yet (the library's message
    would name the server's folder)."""
    from gpufleet.telemetry.store import TelemetryStore

    store = TelemetryStore(st.settings.team_telemetry_dir(who.team_id))
    if filled and store.is_empty():
        raise NotFound(
            f"Team {who.team_name!r} has no telemetry yet. Upload a file first: POST "
            "/api/v1/telemetry/ingest (nvidia-smi CSV, dcgm-exporter text, Prometheus JSON, CloudWatch CSV)."
        )
    return store


def safe_file_name(name: str | None) -> str:
    """An upload's file name reduced to its last part, in letters, digits, '.', '-' and '_' (path tricks and
    odd characters removed); ``telemetry`` when nothing is left."""
    base = re.split(r"[\\/]", name or "")[-1]
    clean = re.sub(r"[^A-Za-z0-9._-]", "_", base).lstrip(".")
    return clean[:100] or "telemetry"


@router.post("/ingest")
async def ingest(
    who: Who,
    st: St,
    file: Annotated[
        UploadFile, File(description="nvidia-smi CSV, dcgm-exporter text, Prometheus JSON, CloudWatch CSV.")
    ],
    input_format: Annotated[
        str, Form(description="auto, nvidia-smi, exposition, prom-json, cloudwatch.")
    ] = "auto",
    host: Annotated[str | None, Form(max_length=200, description="Host of an nvidia-smi CSV.")] = None,
    timezone: Annotated[
        str | None, Form(max_length=60, description="Time zone of nvidia-smi timestamps.")
    ] = None,
) -> Response:
    """Append a telemetry file to the team's store (editor): `gpufleet telemetry ingest FILE --format json`
    does the same."""
    from starlette.concurrency import run_in_threadpool

    who.require("editor")
    data = await file.read()
    text = await run_in_threadpool(ingest_upload, st, who, file.filename, data, input_format, host, timezone)
    return Response(text, media_type="application/json")


Lookback = Annotated[float, Query(gt=0, le=3650, description="Days of telemetry analysed.")]


@router.get("/findings")
def findings(
    who: Who,
    st: St,
    lookback_days: Lookback = 14,
    percentile: Annotated[float, Query(ge=0.5, lt=1.0)] = 0.95,
    headroom: Annotated[float, Query(ge=0, le=2, description="0.2 = 20 % added to observed needs.")] = 0.2,
) -> Response:
    """Idle / over- / under-provisioned GPUs with priced options and the fleet summary (viewer):
    `gpufleet telemetry findings --format json`."""
    from gpufleet.report.telemetry import to_json
    from gpufleet.telemetry.analyze import gpu_stats, resolve_window
    from gpufleet.telemetry.findings import Thresholds, find
    from gpufleet.telemetry.summary import summarize

    store = _store(st, who, filled=True)
    with _team_lock(who.team_id):
        window = resolve_window(store, lookback_days, None, percentile)
        ff = find(gpu_stats(store, window), window, Thresholds(headroom=headroom), ())
    return Response(
        to_json("telemetry_findings", {"summary": summarize(ff), "findings": ff}),
        media_type="application/json",
    )


def findings_report_html(st: State, who: Principal, lookback_days: float = 14) -> str:
    """The team's findings report (`gpufleet telemetry report --format html`); NotFound when it has none."""
    from gpufleet.report import telemetry as rt
    from gpufleet.telemetry.analyze import gpu_stats, resolve_window
    from gpufleet.telemetry.findings import Thresholds, find
    from gpufleet.telemetry.summary import summarize

    store = _store(st, who, filled=True)
    with _team_lock(who.team_id):
        window = resolve_window(store, lookback_days, None, 0.95)
        ff = find(gpu_stats(store, window), window, Thresholds(headroom=0.2), ())
        s = summarize(ff)
        return rt.render_findings_html(ff, s, rt.findings_heat(store, window, s))


def team_findings(st: State, who: Principal, lookback_days: float = 14) -> tuple[FleetFindings, FleetSummary]:
    """The team's findings over the last ``lookback_days`` (p95, 20 % headroom: the defaults of
    `gpufleet telemetry findings`) and their summary; NotFound when the team has no telemetry."""
    from gpufleet.telemetry.analyze import gpu_stats, resolve_window
    from gpufleet.telemetry.findings import Thresholds, find
    from gpufleet.telemetry.summary import summarize

    store = _store(st, who, filled=True)
    with _team_lock(who.team_id):
        window = resolve_window(store, lookback_days, None, 0.95)
        ff = find(gpu_stats(store, window), window, Thresholds(headroom=0.2), ())
    return ff, summarize(ff)


def ingest_upload(
    st: State,
    who: Principal,
    filename: str | None,
    data: bytes,
    input_format: str = "auto",
    host: str | None = None,
    timezone: str | None = None,
) -> str:
    """Ingest an uploaded file into the team's store (editor); the ``telemetry_ingest`` JSON document."""
    from gpufleet.errors import ConfigFileError
    from gpufleet.report.telemetry import to_json
    from gpufleet.telemetry.ingest import ingest_files

    who.require("editor")
    name = safe_file_name(filename)
    with tempfile.TemporaryDirectory(prefix="gpufleet-upload-") as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        try:
            with _team_lock(who.team_id):
                report = ingest_files(
                    [path], store=_store(st, who), input_format=input_format, host=host, timezone=timezone
                )
        except (ConfigFileError, InputError) as exc:  # name the upload, not the server's temporary folder
            text = str(exc).replace(str(path), name).replace(tmp, "<upload>")
            raise (ConfigFileError if isinstance(exc, ConfigFileError) else InputError)(text) from None
    if (
        report.rows_stored == 0
        and report.rows_read > 0
        and not any(p.kind == "duplicate_sample" for p in report.problems)
    ):
        raise InputError(
            f"No sample of {name} could be stored: {len(report.problems)} problems, e.g. "
            f"{report.problems[0].kind if report.problems else 'unknown'}. Check the file."
        )
    # the report's sources name the upload, not the server's temporary folder
    return to_json("telemetry_ingest", {"report": report}).replace(json.dumps(str(path))[1:-1], name)


@router.get("/alerts")
def alerts(
    who: Who,
    st: St,
    lookback_days: Lookback = 14,
    step_s: Annotated[float, Query(ge=1, le=86400, description="Evaluation step [s].")] = 60,
) -> Response:
    """The shipped alert rules evaluated over the team's telemetry (viewer): `gpufleet telemetry alerts
    --format json`."""
    from gpufleet.report.telemetry import to_json
    from gpufleet.telemetry.alerts import evaluate, load_rules
    from gpufleet.telemetry.analyze import resolve_window

    store = _store(st, who, filled=True)
    rules = load_rules(None)
    with _team_lock(who.team_id):
        window = resolve_window(store, lookback_days, None, 0.95)
        events = evaluate(store, window, rules, step_s=step_s)
    return Response(
        to_json("telemetry_alerts", {"window": window, "rules": list(rules), "events": list(events)}),
        media_type="application/json",
    )


@router.get("/alerts/export", response_class=Response)
def alerts_export(who: Who, st: St) -> Response:
    """The shipped alert rules as a Prometheus rule file (viewer): `gpufleet telemetry alerts --export
    prometheus` (without the team's mean price)."""
    from gpufleet.telemetry.alerts import load_rules, prometheus_rules

    return Response(prometheus_rules(load_rules(None)), media_type="application/yaml")
