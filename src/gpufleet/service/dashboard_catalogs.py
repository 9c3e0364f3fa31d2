"""The dashboard's user catalogs page: the team's own catalogs (negotiated prices, own machines) listed,
uploaded and deleted; the team's recommend and plan apply them. Another team's never shows (404)."""

from __future__ import annotations

from html import escape

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from gpufleet.errors import GpufleetError, InputError
from gpufleet.service import user_catalogs as uc
from gpufleet.service.dashboard import PostedForm, SignedIn, _page, delete_cell, refused
from gpufleet.service.deps import state

router = APIRouter(include_in_schema=False)


def _upload_form(csrf: str) -> str:
    return (
        '<form method="post" action="/catalogs" enctype="multipart/form-data"><div class="fields">'
        '<label for="catalog_file">User catalog (YAML or JSON, the format of --catalog)</label>'
        '<input id="catalog_file" name="file" type="file" accept=".yaml,.yml,.json" required>'
        f'</div><input type="hidden" name="csrf" value="{escape(csrf)}">'
        '<p><button type="submit">Upload catalog</button></p></form>'
    )


def _listing(request: Request, s: SignedIn) -> str:
    with state(request).sm() as db:
        rows = uc.team_catalogs(db, s.who.team_id)
    editor = s.who.role != "viewer"
    if not rows:
        return (
            "<p class='muted'>Your team has no user catalog: recommend and plan use the shipped catalog.</p>"
        )
    body = "".join(
        f'<tr><td><a href="/catalogs/{r.id}">{escape(r.name)}</a></td><td class="num">{r.offers}</td>'
        f'<td class="num">{r.price_overrides}</td>'
        + delete_cell(f"/catalogs/{r.id}/delete", r.name, s.csrf, editor, r.created_unix_s)
        + "</tr>"
        for r in rows
    )
    return (
        "<table><caption>Your team's user catalogs, applied in this order on top of the shipped catalog by "
        "your team's recommend and plan</caption><thead><tr><th>file</th><th class='num'>offers added</th>"
        "<th class='num'>prices overridden</th><th>uploaded</th><th>action</th></tr></thead>"
        f"<tbody>{body}</tbody></table>"
    )


def _page_body(request: Request, s: SignedIn) -> str:
    intro = (
        "<p>Your own machines and negotiated prices (confidential: only your team sees them). The format is "
        "the CLI's <code>--catalog</code> file (<code>offers</code>, <code>price_overrides</code>).</p>"
    )
    return intro + _listing(request, s) + (_upload_form(s.csrf) if s.who.role != "viewer" else "")


@router.get("/catalogs", response_class=HTMLResponse, response_model=None)
def catalogs(request: Request, s: SignedIn) -> Response:
    return _page(request, "User catalogs", _page_body(request, s), s.who, s.csrf)


@router.post("/catalogs", response_class=HTMLResponse, response_model=None)
async def upload(request: Request, s: SignedIn, form: PostedForm) -> Response:
    try:
        s.who.require("editor")
        file = form.get("file")
        if file is None or isinstance(file, str):
            raise InputError("Choose a user catalog file (YAML or JSON) to upload.")
        try:
            text = (await file.read()).decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("The catalog is not UTF-8 text. Save it as UTF-8 YAML or JSON.") from None
        await run_in_threadpool(uc.save, state(request).sm, s.who, file.filename or "catalog.yaml", text)
    except GpufleetError as exc:
        return refused(request, "User catalogs", s, exc, _page_body(request, s))
    return RedirectResponse("/catalogs", status_code=303)


@router.get("/catalogs/{catalog_id}", response_class=HTMLResponse, response_model=None)
def catalog_text(request: Request, s: SignedIn, catalog_id: int) -> Response:
    try:
        row = uc.get(state(request).sm, s.who, catalog_id)
    except GpufleetError as exc:
        return refused(request, "User catalog", s, exc)
    body = (
        f"<p>{row.offers} offers added, {row.price_overrides} prices overridden. "
        '<a href="/catalogs">All your catalogs</a></p>'
        f'<pre aria-label="Catalog text">{escape(row.text)}</pre>'
    )
    return _page(request, f"User catalog {row.name}", body, s.who, s.csrf)


@router.post("/catalogs/{catalog_id}/delete", response_class=HTMLResponse, response_model=None)
def delete(request: Request, s: SignedIn, _: PostedForm, catalog_id: int) -> Response:
    try:
        uc.delete(state(request).sm, s.who, catalog_id)
    except GpufleetError as exc:
        return refused(request, "User catalogs", s, exc, _page_body(request, s))
    return RedirectResponse("/catalogs", status_code=303)
