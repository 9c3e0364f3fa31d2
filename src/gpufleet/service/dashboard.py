"""The dashboard: server-rendered HTML pages over the same library calls as the API, with the report module's
own HTML and SVG charts. No script at all (the CSP forbids it), nothing from another origin: it works offline.

Sign-in takes a token and opens a session (an HttpOnly, SameSite=Strict cookie; its hash in the database).
Every form that changes something carries the session's CSRF token, compared in constant time; the sign-in
form uses a double-submit cookie. A viewer sees no editor action, and the routes refuse one anyway (403).

Every page takes the session through the :data:`SignedIn` dependency (no session: a redirect to /login) and
every form post through :data:`PostedForm` (the form, its CSRF token checked). This module keeps the shared
helpers (``_page``, ``_signed_in``, ``_check_csrf``, ...) and the sign-in, recommend, plan, jobs and telemetry
pages; the others live in ``dashboard_*.py``.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from html import escape
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from gpufleet.errors import GpufleetError, InputError
from gpufleet.service import jobs
from gpufleet.service.auth import Principal, close_session, open_session, session_principal
from gpufleet.service.db import Job
from gpufleet.service.deps import State, state
from gpufleet.service.errors import Forbidden, NotAuthenticated, http_status

router = APIRouter(include_in_schema=False)

SESSION_COOKIE = "gpufleet_session"
LOGIN_CSRF_COOKIE = "gpufleet_login_csrf"
PAGE_SIZE = 50

_CSS = """
:root{--fg:#1f2933;--muted:#52606d;--line:#d9dde3;--accent:#0b5cad;--bad:#b42318;--ok:#1b7f3b}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg)}
header{display:flex;gap:24px;align-items:center;padding:10px 24px;flex-wrap:wrap;
 border-bottom:1px solid var(--line)}
header nav a{margin-right:16px}
header .who{margin-left:auto;color:var(--muted)}
main{padding:16px 24px;max-width:1400px}
a{color:var(--accent)}
a:focus,button:focus,input:focus,select:focus{outline:3px solid #ffbf47;outline-offset:1px}
table{border-collapse:collapse;margin:8px 0}
th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
form.inline{display:inline}
.fields{display:grid;grid-template-columns:max-content minmax(12em,24em);gap:6px 12px;align-items:center}
.error{color:var(--bad);border:1px solid var(--bad);padding:8px;margin:8px 0}
.muted{color:var(--muted)}
.skip{position:absolute;left:-999px}.skip:focus{left:8px;top:8px;background:#fff;padding:4px}
button{padding:4px 12px}
"""


def _cookie_secure(request: Request) -> bool:
    return request.url.scheme == "https"


def _session(request: Request) -> tuple[Principal, str] | None:
    secret = request.cookies.get(SESSION_COOKIE)
    if not secret:
        return None
    with state(request).sm() as db:
        return session_principal(db, secret)


def _page(
    request: Request,
    title: str,
    body: str,
    who: Principal | None,
    csrf: str = "",
    status: int = 200,
    head: str = "",
    refresh_s: int | None = None,
) -> HTMLResponse:
    nav = ""
    if who is not None:
        links = [
            ("/", "Overview"),
            ("/catalog", "Catalog"),
            ("/catalog/history", "Price history"),
            ("/catalogs", "User catalogs"),
            ("/recommend", "Recommend"),
        ]
        if who.role != "viewer":
            links.append(("/plan", "Plan"))
        links += [
            ("/jobs", "Jobs"),
            ("/simulations", "Simulations"),
            ("/findings", "Findings"),
            ("/telemetry", "Telemetry"),
            ("/schedules", "Schedules"),
            ("/notifications", "Notifications"),
        ]
        items = "".join(f'<a href="{h}">{t}</a>' for h, t in links)
        nav = (
            f'<nav aria-label="Main">{items}</nav><span class="who">team {escape(who.team_name)} · '
            f"{escape(who.token_name)} ({escape(who.role)})</span>"
            f'<form class="inline" method="post" action="/logout"><input type="hidden" name="csrf" '
            f'value="{escape(csrf)}"><button type="submit">Sign out</button></form>'
        )
    meta = f'<meta http-equiv="refresh" content="{refresh_s}">' if refresh_s else ""
    html = (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<link rel="icon" href="data:,">{meta}<title>{escape(title)} · gpufleet</title>'
        f"<style>{_CSS}</style>{head}</head><body>"
        '<a class="skip" href="#main">Skip to content</a>'
        f"<header><strong>gpufleet</strong>{nav}</header>"
        f'<main id="main"><h1>{escape(title)}</h1>{body}</main></body></html>'
    )
    return HTMLResponse(html, status_code=status)


def delete_cell(action: str, name: str, csrf: str, editor: bool, created_unix_s: float) -> str:
    """A listed object's "uploaded" and "action" cells: its upload time (UTC) and, for an editor, a Delete
    button posting to ``action`` with the session's CSRF token (a viewer gets an empty cell)."""
    from datetime import UTC, datetime

    button = (
        f'<form class="inline" method="post" action="{action}">'
        f'<input type="hidden" name="csrf" value="{escape(csrf)}">'
        f'<button type="submit" aria-label="Delete {escape(name)}">Delete</button></form>'
    )
    when = datetime.fromtimestamp(created_unix_s, UTC)
    return f"<td>{when:%Y-%m-%d %H:%M} UTC</td><td>{button if editor else ''}</td>"


def _error(text: str) -> str:
    return f'<p class="error" role="alert">{escape(text)}</p>'


def _signed_in(request: Request) -> tuple[Principal, str]:
    got = _session(request)
    if got is None:
        raise NotAuthenticated("Sign in with a token.")
    return got


def _check_csrf(expected: str, form: Any) -> None:
    given = str(form.get("csrf") or "")
    if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
        raise Forbidden("The form's CSRF token is missing or wrong: reload the page and submit again.")


def _to_login() -> RedirectResponse:
    return RedirectResponse("/login", status_code=303)


class SignInRequired(NotAuthenticated):
    """A page was asked for without a live session: the app answers with a redirect to /login
    (:func:`to_login`, registered in :func:`gpufleet.service.app.create_app`; without it, a 401)."""

    def __init__(self) -> None:
        super().__init__("Sign in with a token at /login.")


async def to_login(_: Request, __: Exception) -> Response:
    return _to_login()


@dataclass(frozen=True, slots=True)
class Signed:
    """The signed-in principal of a page and its session's CSRF token."""

    who: Principal
    csrf: str


def signed_in(request: Request) -> Signed:
    """FastAPI dependency of every dashboard page: the session's principal, else a redirect to /login."""
    got = _session(request)
    if got is None:
        raise SignInRequired
    request.state.team = got[0].team_name  # for the request log line
    return Signed(*got)


SignedIn = Annotated[Signed, Depends(signed_in)]


async def posted_form(request: Request, s: SignedIn) -> Any:
    """FastAPI dependency of every dashboard form post: the form, once its CSRF token matches the session's
    (else :class:`Forbidden`, 403)."""
    form = await request.form()
    _check_csrf(s.csrf, form)
    return form


PostedForm = Annotated[Any, Depends(posted_form)]


def refused(request: Request, title: str, s: Signed, exc: GpufleetError, extra: str = "") -> HTMLResponse:
    """A page that states what went wrong (the error's own HTTP status), with ``extra`` below it."""
    return _page(request, title, _error(str(exc)) + extra, s.who, s.csrf, status=http_status(exc))


def _embed_report(html: str) -> tuple[str, str]:
    """(the report's <style> for the head, its body) from a whole report page of the report module."""
    head = ""
    if "<style>" in html and "</style>" in html:
        head = "<style>" + html.split("<style>", 1)[1].split("</style>", 1)[0] + "</style>"
    body = html.split("<body>", 1)[-1].rsplit("</body>", 1)[0]
    return head, f'<section class="report" aria-label="Report">{body}</section>'


# --- sign in / out ----------------------------------------------------------------------------------------
@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, error: str = "") -> HTMLResponse:
    token = secrets.token_urlsafe(24)
    body = (_error(error) if error else "") + (
        '<form method="post" action="/login"><div class="fields">'
        '<label for="token">API token</label>'
        '<input id="token" name="token" type="password" autocomplete="off" required>'
        f'</div><input type="hidden" name="csrf" value="{token}">'
        '<p><button type="submit">Sign in</button></p></form>'
        '<p class="muted">A token comes from <code>gpufleet serve token create</code> or from your team\'s '
        "admin. It is kept only as a hash; the session cookie ends when the token is revoked.</p>"
    )
    resp = _page(request, "Sign in", body, None, status=401 if error else 200)
    resp.set_cookie(
        LOGIN_CSRF_COOKIE,
        token,
        httponly=True,
        samesite="strict",
        path="/login",
        secure=_cookie_secure(request),
    )
    return resp


@router.post("/login", response_model=None)
async def login(request: Request) -> Response:
    form = await request.form()
    expected = request.cookies.get(LOGIN_CSRF_COOKIE, "")
    try:
        _check_csrf(expected, form)
        st = state(request)
        with st.sm() as db:
            secret, _, _ = open_session(db, str(form.get("token") or "").strip(), st.settings.session_ttl_s)
    except GpufleetError as exc:
        return login_form(request, error=str(exc))
    resp = RedirectResponse("/", status_code=303)
    resp.set_cookie(
        SESSION_COOKIE,
        secret,
        httponly=True,
        samesite="strict",
        path="/",
        max_age=int(state(request).settings.session_ttl_s),
        secure=_cookie_secure(request),
    )
    resp.delete_cookie(LOGIN_CSRF_COOKIE, path="/login")
    return resp


@router.post("/logout", response_model=None)
async def logout(request: Request) -> Response:
    got = _session(request)
    if got is not None:
        _check_csrf(got[1], await request.form())
        with state(request).sm() as db:
            close_session(db, request.cookies.get(SESSION_COOKIE, ""))
    resp = _to_login()
    resp.delete_cookie(SESSION_COOKIE, path="/")
    return resp


# --- catalog form helpers -----------------------------------------------------------------------------
def _opt(name: str, value: str, label: str, hint: str = "") -> str:
    return (
        f'<label for="{name}">{label}</label><input id="{name}" name="{name}" value="{escape(value)}"'
        + (f' placeholder="{escape(hint)}"' if hint else "")
        + ">"
    )


def _values(text: str) -> tuple[str, ...]:
    """A filter field: comma-separated values; an empty field is no filter (a browser sends every field)."""
    from gpufleet.recommend.filters import split_values

    return tuple(split_values(text)) if text.strip() else ()


def _money(v: Any) -> str:
    return "-" if v is None or v != v else f"{v:,.2f}"


# --- recommend ---------------------------------------------------------------------------------------------
_REC_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("model", "Model (id, alias or Hugging Face config)", "llama-3.1-8b"),
    ("target_requests_per_s", "Target requests per second [1/s]", "2"),
    ("input_len_tokens", "Input length [tokens]", "512"),
    ("output_len_tokens", "Output length [tokens]", "256"),
    ("ttft_p95_ms", "TTFT p95 SLO [ms]", "500"),
    ("tpot_p95_ms", "TPOT p95 SLO [ms]", "50"),
)


#: the recommend form's number fields and their types (the others are text)
_REC_NUMBERS: dict[str, type[float] | type[int]] = {
    "target_requests_per_s": float,
    "ttft_p95_ms": float,
    "tpot_p95_ms": float,
    "input_len_tokens": int,
    "output_len_tokens": int,
}


def _rec_form(csrf: str, values: dict[str, str]) -> str:
    fields = "".join(_opt(n, values.get(n, ""), label, hint) for n, label, hint in _REC_FIELDS)
    pricing = values.get("pricing", "on_demand")
    opts = "".join(
        f'<option value="{p}"{" selected" if p == pricing else ""}>{p}</option>'
        for p in ("on_demand", "spot", "1y", "3y")
    )
    return (
        '<form method="post" action="/recommend"><div class="fields">'
        + fields
        + f'<label for="pricing">Pricing</label><select id="pricing" name="pricing">{opts}</select></div>'
        f'<input type="hidden" name="csrf" value="{escape(csrf)}">'
        '<p><button type="submit">Recommend</button></p></form>'
    )


@router.get("/recommend", response_class=HTMLResponse, response_model=None)
def recommend_form(request: Request, s: SignedIn) -> Response:
    who, csrf = s.who, s.csrf
    return _page(request, "Recommend", _rec_form(csrf, {"model": "llama-3.1-8b"}), who, csrf)


@router.post("/recommend", response_class=HTMLResponse, response_model=None)
async def recommend(request: Request, s: SignedIn, form: PostedForm) -> Response:
    who, csrf = s.who, s.csrf
    values = {k: str(v) for k, v in form.items() if k != "csrf" and isinstance(v, str)}
    workload: dict[str, Any] = {k: v.strip() for k, v in values.items() if v.strip()}
    from starlette.concurrency import run_in_threadpool

    from gpufleet.recommend.api import recommend as run
    from gpufleet.report import render_text
    from gpufleet.service.user_catalogs import team_offers

    try:
        fields = {n: (label, hint) for n, label, hint in _REC_FIELDS}
        for k, kind in _REC_NUMBERS.items():
            if k in workload:
                try:
                    workload[k] = kind(workload[k])
                except ValueError:
                    label, hint = fields[k]
                    whole = "whole " if kind is int else ""
                    raise InputError(
                        f"{label}: {workload[k][:40]!r} is not a {whole}number. Give a plain number, e.g. "
                        f"{hint}, or leave it empty for the default."
                    ) from None
        st = state(request)  # the latest refreshed catalog, with the team's catalogs applied
        offers = await run_in_threadpool(lambda: team_offers(st.sm, who.team_id, st.catalogs.current().table))
        result = await run_in_threadpool(lambda: run(workload, offers=offers))
    except GpufleetError as exc:
        body = _error(str(exc)) + _rec_form(csrf, values)
        return _page(request, "Recommend", body, who, csrf, status=http_status(exc))
    head, report = _embed_report(render_text(result, "html"))
    return _page(request, "Recommendation", _rec_form(csrf, values) + report, who, csrf, head=head)


# --- plan --------------------------------------------------------------------------------------------------
def _plan_form(csrf: str) -> str:
    return (
        '<form method="post" action="/plan" enctype="multipart/form-data"><div class="fields">'
        '<label for="fleet">Fleet file (YAML or JSON)</label>'
        '<input id="fleet" name="fleet" type="file" accept=".yaml,.yml,.json" required>'
        '<label for="solver_time_limit_s">Solver time limit [s]</label>'
        '<input id="solver_time_limit_s" name="solver_time_limit_s" value="60" inputmode="decimal">'
        f'</div><input type="hidden" name="csrf" value="{escape(csrf)}">'
        '<p><button type="submit">Plan</button></p></form>'
        '<p class="muted">The plan runs as a job; its page follows its progress.</p>'
    )


@router.get("/plan", response_class=HTMLResponse, response_model=None)
def plan_form(request: Request, s: SignedIn) -> Response:
    who, csrf = s.who, s.csrf
    try:
        who.require("editor")
    except Forbidden as exc:
        return _page(request, "Plan", _error(str(exc)), who, csrf, status=403)
    return _page(request, "Plan a fleet", _plan_form(csrf), who, csrf)


@router.post("/plan", response_class=HTMLResponse, response_model=None)
async def plan(request: Request, s: SignedIn, form: PostedForm) -> Response:
    who, csrf = s.who, s.csrf
    from gpufleet.service.job_kinds import check_params, parse_fleet_text

    st: State = state(request)
    try:
        who.require("editor")
        upload = form.get("fleet")
        if upload is None or isinstance(upload, str):
            raise InputError("Choose a fleet file (YAML or JSON) to upload.")
        raw = await upload.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("The fleet file is not UTF-8 text. Save it as UTF-8 YAML or JSON.") from None
        try:
            limit = float(str(form.get("solver_time_limit_s") or "60"))
        except ValueError:
            raise InputError("Solver time limit must be a number of seconds, e.g. 60.") from None
        name = upload.filename or "fleet.yaml"
        from gpufleet.service.user_catalogs import with_team_catalogs

        raw_params = {
            "fleet": parse_fleet_text(text, name),
            "source": name.rsplit("/", 1)[-1],
            "solver_time_limit_s": limit,
        }
        params = check_params("plan", with_team_catalogs(st.sm, who.team_id, raw_params))
        sub = jobs.submit(
            st.sm, team_id=who.team_id, kind="plan", params=params, time_limit_s=st.settings.job_time_limit_s
        )
    except GpufleetError as exc:
        return _page(
            request, "Plan a fleet", _error(str(exc)) + _plan_form(csrf), who, csrf, status=http_status(exc)
        )
    return RedirectResponse(f"/jobs/{sub.job.id}", status_code=303)


# --- jobs --------------------------------------------------------------------------------------------------
def _jobs_table(rows: list[Job]) -> str:
    if not rows:
        return "<p class='muted'>No jobs yet.</p>"
    body = "".join(
        f'<tr><td><a href="/jobs/{j.id}">#{j.id}</a></td><td>{escape(j.kind)}</td><td>{escape(j.status)}</td>'
        f"<td class='num'>{j.progress_fraction:.0%}</td><td>{escape(j.progress_text)}</td></tr>"
        for j in rows
    )
    return (
        "<table><thead><tr><th>job</th><th>kind</th><th>status</th><th class='num'>progress</th>"
        f"<th>step</th></tr></thead><tbody>{body}</tbody></table>"
    )


@router.get("/jobs", response_class=HTMLResponse, response_model=None)
def jobs_page(request: Request, s: SignedIn) -> Response:
    who, csrf = s.who, s.csrf
    rows, total = jobs.list_jobs(state(request).sm, who.team_id, limit=100)
    body = f"<p>{total} jobs (the latest 100 shown).</p>" + _jobs_table(rows)
    return _page(request, "Jobs", body, who, csrf)


@router.get("/jobs/{job_id}", response_class=HTMLResponse, response_model=None)
def job_page(request: Request, s: SignedIn, job_id: int) -> Response:
    who, csrf = s.who, s.csrf
    try:
        job = jobs.get_job(state(request).sm, who.team_id, job_id)
    except GpufleetError as exc:
        return _page(request, "Job", _error(str(exc)), who, csrf, status=http_status(exc))
    running = job.status in ("queued", "running")
    parts = [
        f"<p>Kind <strong>{escape(job.kind)}</strong>, status <strong>{escape(job.status)}</strong>"
        f" ({escape(job.progress_text)}).</p>",
        f'<label for="progress">Progress</label> <progress id="progress" max="1" '
        f'value="{job.progress_fraction:.3f}">{job.progress_fraction:.0%}</progress>',
        f"<p>{_job_times(job)}</p>",
    ]
    if running:
        parts.append("<p class='muted'>This page reloads every 2 s until the job ends.</p>")
    if job.error:
        parts.append(_error(job.error))
    if running and who.role != "viewer":
        parts.append(
            f'<form method="post" action="/jobs/{job.id}/cancel"><input type="hidden" name="csrf" '
            f'value="{escape(csrf)}"><button type="submit">Cancel job</button></form>'
        )
    head = ""
    if job.status == "succeeded" and job.result_json:
        parts.append(
            f'<p><a href="/jobs/{job.id}/result.json" download>Download the result (JSON, the document '
            f"<code>GET /api/v1/jobs/{job.id}/result</code> gives)</a></p>"
        )
    if job.status == "succeeded" and job.result_html:
        head, report = _embed_report(job.result_html)
        parts.append(report)
    return _page(
        request, f"Job #{job.id}", "".join(parts), who, csrf, head=head, refresh_s=2 if running else None
    )


def _job_times(job: Job) -> str:
    """When the job was queued, started and finished [UTC], and how long it ran [s]."""
    from datetime import UTC, datetime

    def utc(t: float) -> str:
        return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")

    out = f"Queued {utc(job.created_unix_s)}"
    if job.started_unix_s is not None:
        out += f"; started {utc(job.started_unix_s)}"
    if job.finished_unix_s is not None:
        out += f"; ended {utc(job.finished_unix_s)}"
        if job.started_unix_s is not None:
            out += f" (ran {job.finished_unix_s - job.started_unix_s:,.1f} s)"
    return out + "."


@router.get("/jobs/{job_id}/result.json", response_model=None)
def job_result(request: Request, s: SignedIn, job_id: int) -> Response:
    """A succeeded job's result document, downloaded with the session (the API's needs a bearer token)."""
    try:
        job = jobs.get_job(state(request).sm, s.who.team_id, job_id)
        if job.status != "succeeded" or not job.result_json:
            from gpufleet.service.errors import Conflict

            raise Conflict(
                f"Job #{job_id} is {job.status}: a result exists once it succeeded. Its page follows it."
            )
    except GpufleetError as exc:
        return refused(request, "Job", s, exc)
    return Response(
        job.result_json,
        media_type="application/json",
        headers={"content-disposition": f'attachment; filename="job-{job.id}-{job.kind}.json"'},
    )


@router.post("/jobs/{job_id}/cancel", response_class=HTMLResponse, response_model=None)
async def cancel_job(request: Request, s: SignedIn, _: PostedForm, job_id: int) -> Response:
    who, csrf = s.who, s.csrf
    try:
        who.require("editor")
        jobs.cancel(state(request).sm, who.team_id, job_id)
    except GpufleetError as exc:
        return _page(request, "Job", _error(str(exc)), who, csrf, status=http_status(exc))
    return RedirectResponse(f"/jobs/{job_id}", status_code=303)


# --- telemetry ---------------------------------------------------------------------------------------------
#: the upload form's input formats (`gpufleet telemetry ingest --input-format`), with what each reads
_TELEMETRY_FORMATS: tuple[tuple[str, str], ...] = (
    ("auto", "auto (from the file's content)"),
    ("exposition", "dcgm-exporter / Prometheus text"),
    ("nvidia-smi", "nvidia-smi CSV"),
    ("prom-json", "Prometheus query JSON"),
    ("cloudwatch", "CloudWatch CSV"),
)


def _telemetry_form(csrf: str, max_body_bytes: int, values: dict[str, str] | None = None) -> str:
    from gpufleet.units import MIB

    v = values or {}
    opts = "".join(
        f'<option value="{k}"{" selected" if v.get("input_format") == k else ""}>{escape(t)}</option>'
        for k, t in _TELEMETRY_FORMATS
    )
    return (
        '<h2>Upload telemetry</h2><form method="post" action="/telemetry" enctype="multipart/form-data">'
        '<div class="fields">'
        '<label for="telemetry_file">Telemetry file (nvidia-smi CSV, dcgm-exporter text, Prometheus JSON, '
        'CloudWatch CSV)</label><input id="telemetry_file" name="file" type="file" required>'
        '<label for="input_format">Format</label>'
        f'<select id="input_format" name="input_format">{opts}</select>'
        '<label for="host">Host (nvidia-smi CSV only: the machine it was logged on)</label>'
        f'<input id="host" name="host" maxlength="200" value="{escape(v.get("host", ""))}">'
        '<label for="timezone">Time zone of nvidia-smi timestamps (e.g. Europe/Berlin; default UTC)</label>'
        f'<input id="timezone" name="timezone" maxlength="60" value="{escape(v.get("timezone", ""))}">'
        f'</div><input type="hidden" name="csrf" value="{escape(csrf)}">'
        '<p><button type="submit">Ingest</button></p></form>'
        f"<p class='muted'>At most {max_body_bytes / MIB:,.0f} MiB per upload; samples already stored are "
        "skipped, so uploading a file twice is harmless.</p>"
    )


def _ingested(report: dict[str, Any], name: str) -> str:
    """What an upload stored, said in one line (role=status), with the problems the library counted."""
    problems = "; ".join(
        f"{p['count']:,} x {p['kind']} ({'dropped' if p['dropped'] else 'stored, warned'})"
        for p in report.get("problems", [])
    )
    return (
        f'<p role="status">Ingested {escape(name)}: {report["rows_stored"]:,} of {report["rows_read"]:,} '
        f"samples stored, {report['gpus']:,} GPUs"
        + (f"; problems: {escape(problems)}" if problems else "")
        + ".</p>"
    )


def _telemetry_body(request: Request, s: Signed, status_line: str = "") -> tuple[str, str, str, int]:
    """(title, head, body, HTTP status) of the telemetry page."""
    from gpufleet.service.errors import NotFound
    from gpufleet.service.telemetry_api import findings_report_html

    who, csrf = s.who, s.csrf
    upload = _telemetry_form(csrf, state(request).settings.max_body_bytes) if who.role != "viewer" else ""
    try:
        html = findings_report_html(state(request), who)
    except NotFound:
        from gpufleet.service.dashboard_overview import no_telemetry

        return "Telemetry", "", status_line + no_telemetry(who, upload_below=True) + upload, 200
    except GpufleetError as exc:
        return "Telemetry", "", status_line + _error(str(exc)) + upload, http_status(exc)
    head, report = _embed_report(html)
    return "Telemetry findings (last 14 days)", head, status_line + upload + report, 200


@router.get("/telemetry", response_class=HTMLResponse, response_model=None)
def telemetry_page(request: Request, s: SignedIn) -> Response:
    title, head, body, status = _telemetry_body(request, s)
    return _page(request, title, body, s.who, s.csrf, head=head, status=status)


@router.post("/telemetry", response_class=HTMLResponse, response_model=None)
async def telemetry_upload(request: Request, s: SignedIn, form: PostedForm) -> Response:
    """Ingest an uploaded file into the team's store (editor), then the page with what was stored (the
    request's size is limited by the service's body limit, 413 past it)."""
    import json

    who, csrf = s.who, s.csrf
    from starlette.concurrency import run_in_threadpool

    from gpufleet.service.telemetry_api import ingest_upload, safe_file_name

    values = {k: str(form.get(k) or "").strip() for k in ("input_format", "host", "timezone")}
    try:
        who.require("editor")
        upload = form.get("file")
        if upload is None or isinstance(upload, str) or not upload.filename:
            raise InputError("Choose a telemetry file to upload.")
        text = await run_in_threadpool(
            ingest_upload,
            state(request),
            who,
            upload.filename,
            await upload.read(),
            values["input_format"] or "auto",
            values["host"] or None,
            values["timezone"] or None,
        )
    except GpufleetError as exc:
        form_html = _telemetry_form(csrf, state(request).settings.max_body_bytes, values)
        return _page(request, "Telemetry", _error(str(exc)) + form_html, who, csrf, status=http_status(exc))
    line = _ingested(json.loads(text)["report"], safe_file_name(upload.filename))
    title, head, body, status = await run_in_threadpool(_telemetry_body, request, s, line)
    return _page(request, title, body, who, csrf, head=head, status=status)
