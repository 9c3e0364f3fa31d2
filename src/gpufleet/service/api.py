"""``/api/v1``: the JSON API. Each route checks who asks, parses the body (the library's own types), calls
the library and returns the document ``gpufleet <command> --format json`` prints (the shipped JSON Schemas).
No arithmetic here."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Response
from sqlalchemy import select
from starlette.concurrency import run_in_threadpool

from gpufleet.errors import InputError
from gpufleet.recommend.workload import WorkloadSpec
from gpufleet.service import jobs
from gpufleet.service.auth import Principal, create_token, list_tokens, revoke_token
from gpufleet.service.catalog_version import CatalogVersion
from gpufleet.service.db import Fleet, Webhook
from gpufleet.service.deps import State, bearer_principal, state
from gpufleet.service.errors import Conflict, NotFound
from gpufleet.service.schemas import (
    ERROR_RESPONSES,
    FleetOut,
    FleetRequest,
    InferRequest,
    JobOut,
    JobPage,
    JobRequest,
    Me,
    MemoryRequest,
    NewTokenOut,
    PlanRequest,
    TokenOut,
    TokenRequest,
    TrainRequest,
    WebhookOut,
    WebhookRequest,
    shipped_schema_ref,
)

router = APIRouter(prefix="/api/v1", responses=ERROR_RESPONSES)

Who = Annotated[Principal, Depends(bearer_principal)]
St = Annotated[State, Depends(state)]
IdemKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key", max_length=200, description="Resend with the same key: the same job back."
    ),
]

#: the shipped JSON Schemas the API returns (published in the OpenAPI components)
API_KINDS: tuple[str, ...] = (
    "offers",
    "gpus",
    "recommendation",
    "migration",
    "scenario",
    "scenario_list",
    "estimate_memory",
    "estimate_inference",
    "estimate_training",
)


def _json(doc: dict[str, Any] | str, status: int = 200) -> Response:
    text = doc if isinstance(doc, str) else json.dumps(doc, ensure_ascii=False, allow_nan=False)
    return Response(text, status_code=status, media_type="application/json")


def _csv(values: list[str] | None) -> tuple[str, ...]:
    from gpufleet.recommend.filters import split_values

    return tuple(split_values(values)) if values else ()


# --- who am I --------------------------------------------------------------------------------------------
@router.get("/me", response_model=Me, tags=["auth"])
def me(who: Who) -> Me:
    """The team and role of the token."""
    return Me(team=who.team_name, token_name=who.token_name, role=who.role)


# --- catalog ---------------------------------------------------------------------------------------------
@router.get("/catalog/offers", responses={200: shipped_schema_ref("offers")}, tags=["catalog"])
async def catalog_offers(
    who: Who,
    st: St,
    gpu: Annotated[list[str] | None, Query(description="Spec id, alias or family (repeatable).")] = None,
    provider: Annotated[list[str] | None, Query(description="Provider (repeatable).")] = None,
    region: Annotated[list[str] | None, Query(description="Glob over region names (repeatable).")] = None,
    geo: Annotated[list[str] | None, Query(description="Geography: us, eu, apac ... (repeatable).")] = None,
    provider_class: Annotated[list[str] | None, Query(description="hyperscaler, gpu_cloud ...")] = None,
    min_gpu_memory_gib: Annotated[float | None, Query(ge=0, le=100_000)] = None,
    gpus: Annotated[int | None, Query(gt=0, le=1024, description="Exact GPU count per machine.")] = None,
    spot: Annotated[bool, Query(description="Only offers with a spot price; price by spot.")] = False,
    max_price_usd_per_hour: Annotated[float | None, Query(gt=0, le=1_000_000)] = None,
    sort: Annotated[
        str, Query(description="price, price_per_gpu or price_per_gpu_memory.")
    ] = "price_per_gpu",
    order: Annotated[str, Query(description="asc (cheapest first) or desc.")] = "asc",
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> Response:
    """Offers across providers, filtered, sorted and paged (``page``: total, limit, offset).

    The latest refreshed catalog (``catalog``: its version and capture times; header ``X-Gpufleet-Catalog``)
    with the team's user catalogs applied (its own machines, negotiated prices). The answer to a query
    already answered on the same catalog version and the same user catalogs is served from memory (the key
    is the digest of the team's catalog files and every parameter: a team never gets an answer computed with
    another team's catalogs)."""
    from gpufleet.service.user_catalogs import catalogs_version, files_of, offers_with

    if order not in ("asc", "desc"):
        raise InputError(f"order = {order!r} is not allowed: pass asc (cheapest first) or desc.")
    filters: dict[str, Any] = {
        "gpus": _csv(gpu),
        "providers": _csv(provider),
        "regions": _csv(region),
        "geos": _csv(geo),
        "provider_classes": _csv(provider_class),
        "min_gpu_memory_gib": min_gpu_memory_gib,
        "gpu_count": gpus,
        "spot": spot,
        "max_price_usd_per_hour": max_price_usd_per_hour,
        "sort": sort,
    }

    def catalog_and_files() -> tuple[CatalogVersion, Any]:
        return st.catalogs.current(), files_of(st.sm, who.team_id)

    cat, cats = await run_in_threadpool(catalog_and_files)  # the version in memory for catalog_check_s
    key = ("offers", catalogs_version(cats), *filters.values(), order, limit, offset)
    body = st.responses.get(key, cat.table)  # a new catalog version is a new table: never an old answer
    if body is None:

        def answer() -> bytes:
            mine = offers_with(cats, cat.table)
            table = cat.table if mine is None else mine
            return _offers_page(table, filters, order, limit, offset, cat)

        body = await run_in_threadpool(answer)
        st.responses.put(key, cat.table, body)
    return Response(body, media_type="application/json", headers=_catalog_header(cat))


def _offers_page(
    table: Any, filters: dict[str, Any], order: str, limit: int, offset: int, cat: CatalogVersion
) -> bytes:
    from gpufleet.catalog.listing import offer_rows, query_offer_index
    from gpufleet.report.json_report import envelope

    index = query_offer_index(table, **filters)
    n = len(index)
    page = index[offset : offset + limit] if order == "asc" else index[::-1][offset : offset + limit]
    doc = envelope("offers", offers=offer_rows(table.take(page)))
    doc["page"] = {"total": n, "limit": limit, "offset": offset, "sort": filters["sort"], "order": order}
    doc["catalog"] = cat.describe()
    return json.dumps(doc, ensure_ascii=False, allow_nan=False).encode()


def _catalog_header(cat: CatalogVersion) -> dict[str, str]:
    """``X-Gpufleet-Catalog``: the catalog version an answer was computed from (also in its ``catalog``)."""
    return {"X-Gpufleet-Catalog": cat.version}


def _with_catalog(text: str, cat: CatalogVersion) -> Response:
    """A library document with ``catalog`` (the version and capture times it was computed from) added."""
    doc = json.loads(text)
    doc["catalog"] = cat.describe()
    return Response(
        json.dumps(doc, ensure_ascii=False, allow_nan=False),
        media_type="application/json",
        headers=_catalog_header(cat),
    )


@router.get("/catalog/gpus", responses={200: shipped_schema_ref("gpus")}, tags=["catalog"])
def catalog_gpus(who: Who) -> Response:
    """Every accelerator spec (device-reported memory, dense peaks, interconnect)."""
    from gpufleet.catalog.listing import spec_rows
    from gpufleet.report.json_report import envelope

    return _json(envelope("gpus", gpus=spec_rows()))


@router.get("/catalog/history", tags=["catalog"])
def catalog_history(
    who: Who,
    provider: Annotated[str, Query(max_length=64, description="Provider, e.g. aws.")],
    instance: Annotated[str, Query(max_length=128, description="Instance type, e.g. p5.48xlarge.")],
    region: Annotated[str, Query(max_length=64, description="The provider's region, e.g. us-east-1.")],
    days: Annotated[int, Query(ge=1, le=3650, description="Refreshes of the last N days.")] = 90,
    kind: Annotated[str | None, Query(description="on_demand or spot (default: both).")] = None,
) -> Response:
    """Dated prices of one machine, as ``gpufleet catalog history --format json`` prints them (``points``
    empty, status 200, when the provider does not offer it there: the CLI's exit 3)."""
    from gpufleet.catalog.history import PRICE_KINDS, price_history_answer
    from gpufleet.errors import UnknownNameError
    from gpufleet.report.json_report import envelope, to_jsonable

    if kind is not None and kind not in PRICE_KINDS:
        raise UnknownNameError("price kind", kind, PRICE_KINDS)
    answer = price_history_answer(
        provider=provider,
        instance_type=instance,
        region=region,
        price_kind=kind,  # type: ignore[arg-type]  # checked against PRICE_KINDS above
        days=days,
    )
    return _json(envelope("price_history", **to_jsonable(answer)))


@router.get("/catalog/models", tags=["catalog"])
def catalog_models(who: Who) -> Response:
    """Every shipped model architecture (parameters counted from its config.json)."""
    from gpufleet.catalog.listing import model_rows
    from gpufleet.report.json_report import envelope

    return _json(envelope("models", models=model_rows()))


# --- estimates ---------------------------------------------------------------------------------------------
@router.post("/estimate/memory", responses={200: shipped_schema_ref("estimate_memory")}, tags=["estimate"])
async def estimate_memory(who: Who, st: St, body: MemoryRequest) -> Response:
    """Memory per GPU (weights, KV cache, activations, optimizer state) and whether it fits (504 past the
    request time limit)."""
    from gpufleet.estimate.memory import estimate_memory as run

    def answer() -> Response:
        return _flat(
            "estimate_memory",
            run(
                model=body.model,
                gpu=body.gpu,
                task=body.task,
                precision=body.precision,
                tp=body.tp,
                pp=body.pp,
                dp=body.dp,
                batch=body.batch,
                seq_len=body.seq_len_tokens,
            ),
        )

    return await st.heavy.run("POST /api/v1/estimate/memory", answer)


@router.post("/estimate/infer", responses={200: shipped_schema_ref("estimate_inference")}, tags=["estimate"])
async def estimate_infer(who: Who, st: St, body: InferRequest) -> Response:
    """Inference: TTFT, TPOT, tokens/s and requests/s with p10-p90 intervals (504 past the request time
    limit)."""
    from gpufleet.estimate.performance import estimate_inference

    def answer() -> Response:
        return _flat(
            "estimate_inference",
            estimate_inference(
                model=body.model,
                gpu=body.gpu,
                precision=body.precision,
                input_len=body.input_len_tokens,
                output_len=body.output_len_tokens,
                gpu_count=body.gpu_count,
                batch=body.batch,
                tp=body.tp,
                pp=body.pp,
            ),
        )

    return await st.heavy.run("POST /api/v1/estimate/infer", answer)


@router.post("/estimate/train", responses={200: shipped_schema_ref("estimate_training")}, tags=["estimate"])
async def estimate_train(who: Who, st: St, body: TrainRequest) -> Response:
    """Training: step time, tokens/s, MFU, time and GPU-hours with p10-p90 intervals (504 past the request
    time limit)."""
    from gpufleet.estimate.performance import estimate_training

    def answer() -> Response:
        return _flat(
            "estimate_training",
            estimate_training(
                model=body.model,
                task=body.task,
                gpu=body.gpu,
                precision=body.precision,
                gpu_count=body.gpu_count,
                global_batch=body.batch,
                seq_len=body.seq_len_tokens,
                tp=body.tp,
                pp=body.pp,
                dp=body.dp,
            ),
        )

    return await st.heavy.run("POST /api/v1/estimate/train", answer)


def _flat(kind: str, result: Any) -> Response:
    from gpufleet.report.json_report import envelope, to_jsonable

    return _json(envelope(kind) | to_jsonable(result))


# --- decisions -------------------------------------------------------------------------------------------
Objective = Annotated[str | None, Query(max_length=40, description="cost, speed ... (as --objective).")]
Limit = Annotated[int, Query(ge=1, le=1000, description="Ranked rows kept.")]


@router.post("/recommend", responses={200: shipped_schema_ref("recommendation")}, tags=["decisions"])
async def recommend(
    who: Who, st: St, body: WorkloadSpec, objective: Objective = None, limit: Limit = 10
) -> Response:
    """Rank where to run a workload: offers x GPU counts x parallelism, with cost, speed and risk (the
    shipped catalog with the team's user catalogs applied; 504 past the request time limit)."""
    from gpufleet.recommend.api import recommend as run
    from gpufleet.report import render_text
    from gpufleet.service.user_catalogs import team_offers

    def answer() -> Response:
        cat = st.catalogs.current()
        offers = team_offers(st.sm, who.team_id, cat.table)
        doc = render_text(run(_workload(body), objective=objective, limit=limit, offers=offers), "json")
        return _with_catalog(doc, cat)

    return await st.heavy.run("POST /api/v1/recommend", answer)


@router.post("/migrate", responses={200: shipped_schema_ref("migration")}, tags=["decisions"])
async def migrate(
    who: Who, st: St, body: WorkloadSpec, objective: Objective = None, limit: Limit = 10
) -> Response:
    """Compare the workload's ``current`` deployment with the best alternative meeting the same SLOs (the
    team's user catalogs applied; 504 past the request time limit)."""
    from gpufleet.recommend.api import migrate as run
    from gpufleet.report import render_text
    from gpufleet.service.user_catalogs import team_offers

    def answer() -> Response:
        cat = st.catalogs.current()
        offers = team_offers(st.sm, who.team_id, cat.table)
        doc = render_text(run(_workload(body), objective=objective, limit=limit, offers=offers), "json")
        return _with_catalog(doc, cat)

    return await st.heavy.run("POST /api/v1/migrate", answer)


@router.post("/regions", tags=["decisions"])
async def regions(
    who: Who, st: St, body: WorkloadSpec, limit: Annotated[int, Query(ge=1, le=1000)] = 25
) -> Response:
    """Compare regions for a workload: cost by price kind, depth, spot, egress, RTT, carbon (the team's
    user catalogs applied; 504 past the request time limit)."""
    from gpufleet.fleet.regions import analyze_regions
    from gpufleet.recommend.workload import workload_from_dict
    from gpufleet.report import fleet_report as fr
    from gpufleet.service.user_catalogs import team_offers

    def answer() -> Response:
        w = workload_from_dict(_workload(body), source="request body")
        cat = st.catalogs.current()
        offers = team_offers(st.sm, who.team_id, cat.table)
        return _with_catalog(fr.render_regions_json(analyze_regions([w], offers=offers, limit=limit)), cat)

    return await st.heavy.run("POST /api/v1/regions", answer)


def _workload(body: WorkloadSpec) -> dict[str, Any]:
    """The fields the caller gave (defaults stay the library's)."""
    return body.model_dump(exclude_unset=True)


@router.get("/scenarios", responses={200: shipped_schema_ref("scenario_list")}, tags=["scenarios"])
def scenarios(who: Who) -> Response:
    """Every shipped scenario and set."""
    from gpufleet.recommend.scenarios import scenario_summaries
    from gpufleet.report.json_report import envelope

    rows, sets_ = scenario_summaries()
    doc = envelope(
        "scenario_list",
        scenarios=[
            {
                "id": w.id,
                "model": w.model,
                "task": w.task,
                "pricing": w.pricing,
                "description": w.description,
                "current": None
                if w.current is None
                else {
                    "provider": w.current.provider,
                    "instance_type": w.current.instance_type,
                    "count": w.current.count,
                    "region": w.current.region,
                },
            }
            for w in rows
        ],
        sets=[{"name": name, "scenarios": list(members)} for name, members in sets_.items()],
    )
    return _json(doc)


@router.post("/scenarios/{name}/run", responses={200: shipped_schema_ref("scenario")}, tags=["scenarios"])
def run_scenario(who: Who, name: str, limit: Limit = 10) -> Response:
    """Run one shipped scenario (a set runs as a job: POST /api/v1/jobs with kind scenario_set)."""
    from gpufleet.recommend.api import run_scenario as run
    from gpufleet.report import render_text

    return _json(render_text(run(name, limit=limit), "json"))


# --- jobs ------------------------------------------------------------------------------------------------
def _submit(
    st: State, who: Principal, kind: str, params: dict[str, Any], limit_s: float | None, key: str | None
) -> Response:
    from gpufleet.service.job_kinds import check_params

    who.require("admin" if kind == "catalog_refresh" else "editor")  # a refresh changes every team's prices
    if kind == "plan":  # the team's user catalogs, whatever the body says
        from gpufleet.service.user_catalogs import with_team_catalogs

        params = with_team_catalogs(st.sm, who.team_id, params)
    if kind in ("simulate", "sweep"):  # the team's uploads it names (404 for another team's), by digest
        from gpufleet.service.uploads import with_upload_digests

        params = with_upload_digests(st.sm, who.team_id, kind, params)
    checked = check_params(kind, params)
    sub = jobs.submit(
        st.sm,
        team_id=who.team_id,
        kind=kind,
        params=checked,
        idempotency_key=key,
        time_limit_s=limit_s or st.settings.job_time_limit_s,
    )
    out = JobOut.of(sub.job, reused=sub.reused)
    return _json(out.model_dump(mode="json"), 200 if sub.reused else 202)


@router.post("/jobs", status_code=202, response_model=JobOut, tags=["jobs"])
def submit_job(who: Who, st: St, body: JobRequest, key: IdemKey = None) -> Response:
    """Queue a job (editor). 202 with the job; 200 with the earlier job for a reused Idempotency-Key."""
    return _submit(st, who, body.kind, body.params, body.time_limit_s, key)


@router.post("/plan", status_code=202, response_model=JobOut, tags=["jobs"])
def plan(who: Who, st: St, body: PlanRequest, key: IdemKey = None) -> Response:
    """Plan a fleet as a job (editor): the result is `gpufleet plan --format json`'s document."""
    params = {"fleet": body.fleet, "source": body.source, "solver_time_limit_s": body.solver_time_limit_s}
    return _submit(st, who, "plan", params, body.time_limit_s, key)


@router.get("/jobs", response_model=JobPage, tags=["jobs"])
def list_jobs(
    who: Who,
    st: St,
    status: Annotated[str | None, Query(pattern="^(queued|running|succeeded|failed|cancelled)$")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> JobPage:
    """The team's jobs, newest first."""
    rows, total = jobs.list_jobs(st.sm, who.team_id, status=status, limit=limit, offset=offset)
    return JobPage(jobs=[JobOut.of(j) for j in rows], total=total, limit=limit, offset=offset)


@router.get("/jobs/{job_id}", response_model=JobOut, tags=["jobs"])
def get_job(who: Who, st: St, job_id: int) -> JobOut:
    """One job of the team (another team's id: 404)."""
    return JobOut.of(jobs.get_job(st.sm, who.team_id, job_id))


@router.get("/jobs/{job_id}/result", tags=["jobs"])
def job_result(who: Who, st: St, job_id: int) -> Response:
    """The job's JSON document (409 until it has succeeded)."""
    job = jobs.get_job(st.sm, who.team_id, job_id)
    if job.status != "succeeded" or job.result_json is None:
        raise Conflict(
            f"Job {job_id} is {job.status}: it has no result. GET /api/v1/jobs/{job_id} to follow it."
        )
    return _json(job.result_json)


@router.get("/jobs/{job_id}/report", tags=["jobs"], response_class=Response)
def job_report(who: Who, st: St, job_id: int) -> Response:
    """The job's HTML report (409 until it has succeeded)."""
    job = jobs.get_job(st.sm, who.team_id, job_id)
    if job.status != "succeeded" or job.result_html is None:
        raise Conflict(f"Job {job_id} is {job.status}: it has no report yet.")
    return Response(job.result_html, media_type="text/html")


@router.post("/jobs/{job_id}/cancel", response_model=JobOut, tags=["jobs"])
def cancel_job(who: Who, st: St, job_id: int) -> JobOut:
    """Cancel a queued or running job (editor)."""
    who.require("editor")
    return JobOut.of(jobs.cancel(st.sm, who.team_id, job_id))


# --- fleets ----------------------------------------------------------------------------------------------
@router.post("/fleets", status_code=201, response_model=FleetOut, tags=["fleets"])
def save_fleet(who: Who, st: St, body: FleetRequest) -> FleetOut:
    """Keep a fleet file for the team (editor); it is validated first."""
    from gpufleet.fleet.spec import fleet_from_dict
    from gpufleet.service.job_kinds import parse_fleet_text

    who.require("editor")
    fleet = fleet_from_dict(parse_fleet_text(body.text, body.name), source=body.name)
    with st.sm() as db:
        row = Fleet(team_id=who.team_id, name=body.name, text=body.text)
        db.add(row)
        db.commit()
        return FleetOut(
            id=row.id, name=row.name, created_unix_s=row.created_unix_s, workloads=len(fleet.workloads)
        )


@router.get("/fleets", response_model=list[FleetOut], tags=["fleets"])
def list_fleets(who: Who, st: St) -> list[FleetOut]:
    """The team's fleet files, newest first."""
    from gpufleet.fleet.spec import fleet_from_dict
    from gpufleet.service.job_kinds import parse_fleet_text

    with st.sm() as db:
        rows = db.scalars(select(Fleet).where(Fleet.team_id == who.team_id).order_by(Fleet.id.desc())).all()
    return [
        FleetOut(
            id=r.id,
            name=r.name,
            created_unix_s=r.created_unix_s,
            workloads=len(fleet_from_dict(parse_fleet_text(r.text, r.name), source=r.name).workloads),
        )
        for r in rows
    ]


def _fleet(st: State, who: Principal, fleet_id: int) -> Fleet:
    with st.sm() as db:
        row = db.get(Fleet, fleet_id)
    if row is None or row.team_id != who.team_id:
        raise NotFound(f"No fleet with id {fleet_id} in your team. GET /api/v1/fleets lists them.")
    return row


@router.post("/fleets/{fleet_id}/plan", status_code=202, response_model=JobOut, tags=["fleets"])
def plan_fleet(
    who: Who,
    st: St,
    fleet_id: int,
    key: IdemKey = None,
    solver_time_limit_s: Annotated[float, Query(gt=0, le=3600)] = 60.0,
) -> Response:
    """Plan a kept fleet as a job (editor)."""
    from gpufleet.service.job_kinds import parse_fleet_text

    row = _fleet(st, who, fleet_id)
    params = {
        "fleet": parse_fleet_text(row.text, row.name),
        "source": row.name,
        "solver_time_limit_s": solver_time_limit_s,
    }
    return _submit(st, who, "plan", params, None, key)


# --- tokens (admin of the team) --------------------------------------------------------------------------
@router.get("/tokens", response_model=list[TokenOut], tags=["auth"])
def tokens(who: Who, st: St) -> list[TokenOut]:
    """The team's tokens (admin); never their secrets."""
    who.require("admin")
    with st.sm() as db:
        return [TokenOut(**_fields(t)) for t in list_tokens(db, who.team_id)]


@router.post("/tokens", status_code=201, response_model=NewTokenOut, tags=["auth"])
def new_token(who: Who, st: St, body: TokenRequest) -> NewTokenOut:
    """A new token for the team (admin): the secret is in this response only."""
    who.require("admin")
    with st.sm() as db:
        secret, info = create_token(db, team=who.team_name, name=body.name, role=body.role)
    return NewTokenOut(token=secret, **_fields(info))


@router.delete("/tokens/{token_id}", response_model=TokenOut, tags=["auth"])
def delete_token(who: Who, st: St, token_id: int) -> TokenOut:
    """Revoke a token of the team (admin); its dashboard sessions end too."""
    who.require("admin")
    with st.sm() as db:
        return TokenOut(**_fields(revoke_token(db, token_id, who.team_id)))


# --- webhooks (admin of the team) ------------------------------------------------------------------------
def _hook_out(h: Webhook) -> WebhookOut:
    return WebhookOut(
        id=h.id,
        url=h.url,
        format=h.format,
        events=h.events.split(","),
        created_unix_s=h.created_unix_s,
        last_delivery_unix_s=h.last_delivery_unix_s,
        last_status=h.last_status,
        last_error=h.last_error,
        min_saving_usd_per_month=h.min_saving_usd_per_month,
        min_price_change_fraction=h.min_price_change_fraction,
    )


@router.get("/webhooks", response_model=list[WebhookOut], tags=["notifications"])
def webhooks(who: Who, st: St) -> list[WebhookOut]:
    """The team's webhooks with their last delivery (admin)."""
    who.require("admin")
    with st.sm() as db:
        rows = db.scalars(select(Webhook).where(Webhook.team_id == who.team_id).order_by(Webhook.id)).all()
        return [_hook_out(h) for h in rows]


@router.post("/webhooks", status_code=201, response_model=WebhookOut, tags=["notifications"])
def new_webhook(who: Who, st: St, body: WebhookRequest) -> WebhookOut:
    """Notify a URL when the team's jobs end (admin): Slack-compatible ``{"text"}`` or generic JSON."""
    from gpufleet.service.webhooks import check_webhook

    who.require("admin")
    url, fmt, events = check_webhook(body.url, body.format, list(body.events))
    with st.sm() as db:
        hook = Webhook(
            team_id=who.team_id,
            url=url,
            format=fmt,
            events=events,
            min_saving_usd_per_month=body.min_saving_usd_per_month,
            min_price_change_fraction=body.min_price_change_fraction,
        )
        db.add(hook)
        db.commit()
        return _hook_out(hook)


@router.delete("/webhooks/{webhook_id}", response_model=WebhookOut, tags=["notifications"])
def delete_webhook(who: Who, st: St, webhook_id: int) -> WebhookOut:
    """Remove a webhook of the team (admin)."""
    who.require("admin")
    with st.sm() as db:
        hook = db.get(Webhook, webhook_id)
        if hook is None or hook.team_id != who.team_id:
            raise NotFound(f"No webhook with id {webhook_id} in your team. GET /api/v1/webhooks lists them.")
        out = _hook_out(hook)
        db.delete(hook)
        db.commit()
        return out


def _fields(info: Any) -> dict[str, Any]:
    import dataclasses

    return dataclasses.asdict(info)


__all__ = ["API_KINDS", "router"]
