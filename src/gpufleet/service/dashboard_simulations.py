"""The dashboard's simulations page (``/simulations``): the team's uploaded simulation inputs (request traces,
batch job and fleet files) listed, uploaded and deleted, and two forms that run the autoscale and batch
simulators on them as jobs (the job's page then follows its progress and shows the simulation report).
Another team's upload never shows (404)."""

from __future__ import annotations

from html import escape
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from gpufleet.errors import GpufleetError, InputError
from gpufleet.service import jobs, uploads
from gpufleet.service.dashboard import PostedForm, Signed, SignedIn, _page, delete_cell, refused
from gpufleet.service.db import Upload
from gpufleet.service.deps import state

router = APIRouter(include_in_schema=False)

KIND_LABELS = {"trace": "Request trace", "jobs": "Batch job file", "batch_fleet": "Batch fleet file"}
AUTOSCALE_POLICIES = ("kpa", "hpa", "ray", "queue", "static", "scheduled")
BATCH_POLICIES = ("easy", "fifo", "priority", "deadline", "offpeak", "spot")


def _options(values: tuple[str, ...] | list[tuple[str, str]], selected: str = "") -> str:
    pairs = [(v, v) if isinstance(v, str) else v for v in values]
    return "".join(
        f'<option value="{escape(v)}"{" selected" if v == selected else ""}>{escape(t)}</option>'
        for v, t in pairs
    )


def _listing(rows: list[Upload], s: Signed) -> str:
    if not rows:
        return "<p class='muted'>Your team has no uploaded simulation input yet.</p>"
    editor = s.who.role != "viewer"
    body = "".join(
        f"<tr><td>{r.id}</td><td>{escape(KIND_LABELS.get(r.kind, r.kind))}</td><td>{escape(r.name)}</td>"
        f"<td>{escape(r.summary)}</td><td class='num'>{r.size_bytes:,}</td>"
        + delete_cell(f"/simulations/uploads/{r.id}/delete", r.name, s.csrf, editor, r.created_unix_s)
        + "</tr>"
        for r in rows
    )
    return (
        "<table><caption>Your team's simulation inputs (newest first)</caption><thead><tr><th>id</th>"
        "<th>kind</th><th>file</th><th>contents</th><th class='num'>bytes</th><th>uploaded</th>"
        f"<th>action</th></tr></thead><tbody>{body}</tbody></table>"
    )


def _upload_form(csrf: str) -> str:
    kinds = [(k, v) for k, v in KIND_LABELS.items()]
    return (
        '<h2 id="upload">Upload an input file</h2>'
        '<form method="post" action="/simulations/uploads" enctype="multipart/form-data"><div class="fields">'
        '<label for="upload_kind">Kind</label>'
        f'<select id="upload_kind" name="kind">{_options(kinds)}</select>'
        '<label for="upload_file">File (trace: Azure CSV, Mooncake JSONL, BurstGPT or generic CSV; jobs: '
        "generic CSV, PAI/openb, Helios CSV, Philly JSON; fleet: YAML or JSON)</label>"
        '<input id="upload_file" name="file" type="file" required>'
        '<label for="upload_format">Layout (auto: detected)</label>'
        '<input id="upload_format" name="input_format" value="auto">'
        f'</div><input type="hidden" name="csrf" value="{escape(csrf)}">'
        '<p><button type="submit">Upload</button></p></form>'
    )


def _choices(rows: list[Upload], kind: str) -> list[tuple[str, str]]:
    return [(str(r.id), f"#{r.id} {r.name} ({r.summary})") for r in rows if r.kind == kind]


def _autoscale_form(csrf: str, rows: list[Upload]) -> str:
    traces = _choices(rows, "trace")
    if not traces:
        return "<h2>Autoscale a trace</h2><p class='muted'>Upload a request trace first.</p>"
    return (
        "<h2>Autoscale a trace</h2>"
        '<form method="post" action="/simulations/autoscale"><div class="fields">'
        f'<label for="as_trace">Trace</label><select id="as_trace" name="trace">{_options(traces)}</select>'
        '<label for="as_model">Model served</label><input id="as_model" name="model" value="llama-3.1-8b">'
        '<label for="as_gpu">GPU of a replica (empty: recommend\'s pick)</label>'
        '<input id="as_gpu" name="gpu" value="">'
        f'<label for="as_policy">Policy</label><select id="as_policy" name="policy">'
        f"{_options(AUTOSCALE_POLICIES)}</select>"
        '<label for="as_min">Least replicas</label><input id="as_min" name="min_replicas" value="1" '
        'inputmode="numeric">'
        '<label for="as_max">Most replicas</label><input id="as_max" name="max_replicas" value="64" '
        'inputmode="numeric">'
        '<label for="as_ttft">p95 TTFT SLO [s]</label><input id="as_ttft" name="slo_ttft_s" value="2" '
        'inputmode="decimal">'
        '<label for="as_tpot">p95 TPOT SLO [s]</label><input id="as_tpot" name="slo_tpot_s" value="0.2" '
        'inputmode="decimal">'
        '<label for="as_seed">Seed</label><input id="as_seed" name="seed" value="0" inputmode="numeric">'
        f'</div><input type="hidden" name="csrf" value="{escape(csrf)}">'
        '<p><button type="submit">Simulate autoscaling</button></p></form>'
    )


def _batch_form(csrf: str, rows: list[Upload]) -> str:
    job_files = _choices(rows, "jobs")
    if not job_files:
        return "<h2>Schedule a batch queue</h2><p class='muted'>Upload a batch job file first.</p>"
    fleets = [("", "the default fleet"), *_choices(rows, "batch_fleet")]
    return (
        "<h2>Schedule a batch queue</h2>"
        '<form method="post" action="/simulations/batch"><div class="fields">'
        f'<label for="b_jobs">Job file</label><select id="b_jobs" name="jobs">{_options(job_files)}</select>'
        f'<label for="b_fleet">Fleet</label><select id="b_fleet" name="fleet">{_options(fleets)}</select>'
        f'<label for="b_policy">Policy</label><select id="b_policy" name="policy">'
        f"{_options(BATCH_POLICIES)}</select>"
        '<label for="b_seed">Seed</label><input id="b_seed" name="seed" value="0" inputmode="numeric">'
        f'</div><input type="hidden" name="csrf" value="{escape(csrf)}">'
        '<p><button type="submit">Simulate the queue</button></p></form>'
    )


def _body(request: Request, s: Signed) -> str:
    rows = uploads.team_uploads(state(request).sm, s.who.team_id)
    intro = (
        "<p>Replay a request trace through an autoscaled deployment (<code>gpufleet simulate "
        "autoscale</code>) or schedule a job queue on a fleet (<code>gpufleet simulate batch</code>) on "
        "files your team uploads. Each run is a job: its page follows its progress and shows the report.</p>"
    )
    if s.who.role == "viewer":
        return intro + _listing(rows, s)
    return (
        intro
        + _listing(rows, s)
        + _upload_form(s.csrf)
        + _autoscale_form(s.csrf, rows)
        + _batch_form(s.csrf, rows)
    )


@router.get("/simulations", response_class=HTMLResponse, response_model=None)
def simulations(request: Request, s: SignedIn) -> Response:
    return _page(request, "Simulations", _body(request, s), s.who, s.csrf)


@router.post("/simulations/uploads", response_class=HTMLResponse, response_model=None)
async def upload(request: Request, s: SignedIn, form: PostedForm) -> Response:
    st = state(request)
    try:
        s.who.require("editor")
        file = form.get("file")
        if file is None or isinstance(file, str):
            raise InputError("Choose a file to upload.")
        data = await file.read(st.settings.upload_max_bytes + 1)
        kind, fmt = str(form.get("kind") or ""), str(form.get("input_format") or "auto").strip() or "auto"
        await run_in_threadpool(
            lambda: uploads.save(
                st.sm,
                s.who,
                kind=kind,
                filename=file.filename,
                data=data,
                max_bytes=st.settings.upload_max_bytes,
                input_format=fmt,
            )
        )
    except GpufleetError as exc:
        return refused(request, "Simulations", s, exc, _body(request, s))
    return RedirectResponse("/simulations", status_code=303)


@router.post("/simulations/uploads/{upload_id}/delete", response_class=HTMLResponse, response_model=None)
def delete(request: Request, s: SignedIn, _: PostedForm, upload_id: int) -> Response:
    try:
        uploads.delete(state(request).sm, s.who, upload_id)
    except GpufleetError as exc:
        return refused(request, "Simulations", s, exc, _body(request, s))
    return RedirectResponse("/simulations", status_code=303)


def _int(form: Any, name: str, label: str) -> int:
    raw = str(form.get(name) or "").strip()
    if not raw.isascii() or not raw.isdigit():
        raise InputError(f"{label} = {raw[:40]!r}: give a whole number written with the digits 0-9.")
    return int(raw)


def _number(form: Any, name: str, label: str) -> float:
    raw = str(form.get(name) or "").strip()
    try:
        if not raw.isascii():
            raise ValueError(raw)
        return float(raw)
    except ValueError:
        raise InputError(f"{label} = {raw[:40]!r}: give a plain number, e.g. 2 or 0.2.") from None


def _submit(request: Request, s: Signed, params: dict[str, Any]) -> Response:
    from gpufleet.service.job_kinds import check_params

    st = state(request)
    s.who.require("editor")
    params = uploads.with_upload_digests(st.sm, s.who.team_id, "simulate", params)
    checked = check_params("simulate", params)
    sub = jobs.submit(
        st.sm,
        team_id=s.who.team_id,
        kind="simulate",
        params=checked,
        time_limit_s=st.settings.job_time_limit_s,
    )
    return RedirectResponse(f"/jobs/{sub.job.id}", status_code=303)


@router.post("/simulations/autoscale", response_class=HTMLResponse, response_model=None)
def autoscale(request: Request, s: SignedIn, form: PostedForm) -> Response:
    try:
        params: dict[str, Any] = {
            "simulator": "autoscale",
            "trace": _int(form, "trace", "Trace"),
            "model": str(form.get("model") or "llama-3.1-8b").strip(),
            "policy": str(form.get("policy") or "kpa"),
            "min_replicas": _int(form, "min_replicas", "Least replicas"),
            "max_replicas": _int(form, "max_replicas", "Most replicas"),
            "slo_ttft_s": _number(form, "slo_ttft_s", "p95 TTFT SLO [s]"),
            "slo_tpot_s": _number(form, "slo_tpot_s", "p95 TPOT SLO [s]"),
            "seed": _int(form, "seed", "Seed"),
        }
        gpu = str(form.get("gpu") or "").strip()
        if gpu:
            params["gpu"] = gpu
        return _submit(request, s, params)
    except GpufleetError as exc:
        return refused(request, "Simulations", s, exc, _body(request, s))


@router.post("/simulations/batch", response_class=HTMLResponse, response_model=None)
def batch(request: Request, s: SignedIn, form: PostedForm) -> Response:
    try:
        params: dict[str, Any] = {
            "simulator": "batch",
            "jobs": _int(form, "jobs", "Job file"),
            "policy": str(form.get("policy") or "easy"),
            "seed": _int(form, "seed", "Seed"),
        }
        if str(form.get("fleet") or "").strip():
            params["fleet"] = _int(form, "fleet", "Fleet")
        return _submit(request, s, params)
    except GpufleetError as exc:
        return refused(request, "Simulations", s, exc, _body(request, s))
