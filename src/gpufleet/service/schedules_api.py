"""``/api/v1/schedules`` (cron-scheduled jobs, :mod:`.scheduler`), ``/api/v1/catalog/changes`` (the price
changes of each refresh) and ``/api/v1/deliveries`` (every webhook delivery with its outcome)."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import func, select

from gpufleet.errors import InputError, UnknownNameError
from gpufleet.service import cron, scheduler
from gpufleet.service.auth import Principal
from gpufleet.service.db import Delivery, PriceChange, Schedule, ScheduleRun
from gpufleet.service.deps import State, bearer_principal, state
from gpufleet.service.schemas import ERROR_RESPONSES, Name

router = APIRouter(prefix="/api/v1", responses=ERROR_RESPONSES)
Who = Annotated[Principal, Depends(bearer_principal)]
St = Annotated[State, Depends(state)]

JobKind = Literal[
    "plan", "scenario_set", "catalog_refresh", "simulate", "sweep", "telemetry_pull", "findings"
]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class ScheduleRequest(_Body):
    """A job run on a cron schedule (UTC). ``scope`` global is for catalog refreshes (admin only)."""

    name: Name = Field(min_length=1, max_length=100)
    cron: str = Field(min_length=9, max_length=200, description="5 fields, UTC, e.g. '0 6 * * *'.")
    kind: JobKind
    params: dict[str, Any] = Field(default_factory=dict)
    scope: Literal["team", "global"] = "team"
    time_limit_s: float | None = Field(
        None, gt=0, le=24 * 3600, strict=True, description="Stop each job after [s]."
    )
    enabled: bool = True


class SchedulePatch(_Body):
    """Fields to change; the others stay."""

    name: Name | None = Field(None, min_length=1, max_length=100)
    cron: str | None = Field(None, min_length=9, max_length=200)
    params: dict[str, Any] | None = None
    time_limit_s: float | None = Field(None, gt=0, le=24 * 3600, strict=True)
    enabled: bool | None = None


class ScheduleOut(BaseModel):
    id: int
    name: str
    scope: str
    owner_team_id: int
    cron: str
    kind: str
    params: dict[str, Any]
    time_limit_s: float
    enabled: bool
    next_due_unix_s: float
    last_due_unix_s: float | None
    last_job_id: int | None
    created_unix_s: float

    @classmethod
    def of(cls, s: Schedule) -> ScheduleOut:
        return cls(
            id=s.id,
            name=s.name,
            scope=s.scope,
            owner_team_id=s.team_id,
            cron=s.cron,
            kind=s.kind,
            params=json.loads(s.params_json),
            time_limit_s=s.time_limit_s,
            enabled=s.enabled,
            next_due_unix_s=s.next_due_unix_s,
            last_due_unix_s=s.last_due_unix_s,
            last_job_id=s.last_job_id,
            created_unix_s=s.created_unix_s,
        )


class ScheduleRunOut(BaseModel):
    due_unix_s: float
    job_id: int | None
    claimed_by: str
    created_unix_s: float


class PriceChangeOut(BaseModel):
    id: int
    job_id: int | None
    provider: str
    region: str
    zone: str | None
    instance_type: str
    price_kind: str
    old_price_usd_per_hour: float
    new_price_usd_per_hour: float
    change_fraction: float = Field(description="(new - old) / old; 0.05 = +5 %.")
    previous_captured_at: str
    captured_at: str


class PriceChangePage(BaseModel):
    total: int
    changes: list[PriceChangeOut]


class DeliveryOut(BaseModel):
    id: int
    webhook_id: int | None
    event: str
    status: str
    attempts: int
    http_status: int | None
    error: str | None
    created_unix_s: float
    finished_unix_s: float | None
    body: dict[str, Any]


@router.get("/schedules", response_model=list[ScheduleOut], tags=["schedules"])
def list_schedules(who: Who, st: St) -> list[ScheduleOut]:
    """The team's schedules and the global ones (viewer)."""
    with st.sm() as db:
        rows = db.scalars(select(Schedule).where(scheduler.visible(who)).order_by(Schedule.id)).all()
        return [ScheduleOut.of(s) for s in rows]


@router.post("/schedules", status_code=201, response_model=ScheduleOut, tags=["schedules"])
def new_schedule(who: Who, st: St, body: ScheduleRequest) -> ScheduleOut:
    """Run a job on a cron schedule (editor; a global catalog refresh: admin)."""
    s = scheduler.create(
        st.sm,
        who,
        name=body.name,
        cron_text=body.cron,
        kind=body.kind,
        params=body.params,
        scope=body.scope,
        time_limit_s=body.time_limit_s or st.settings.job_time_limit_s,
        enabled=body.enabled,
        now=st.clock(),
    )
    return ScheduleOut.of(s)


@router.get("/schedules/{schedule_id}", response_model=ScheduleOut, tags=["schedules"])
def get_schedule(who: Who, st: St, schedule_id: int) -> ScheduleOut:
    with st.sm() as db:
        return ScheduleOut.of(scheduler.get_schedule(db, who, schedule_id))


@router.patch("/schedules/{schedule_id}", response_model=ScheduleOut, tags=["schedules"])
def patch_schedule(who: Who, st: St, schedule_id: int, body: SchedulePatch) -> ScheduleOut:
    """Change a schedule (editor; a global one: admin). A new cron or re-enabling moves its next due time."""
    with st.sm() as db:
        s = scheduler.get_schedule(db, who, schedule_id)
        scheduler.may_change(who, s)
        params = json.loads(s.params_json) if body.params is None else body.params
        cron_text = s.cron if body.cron is None else body.cron
        checked = scheduler.check_schedule(
            who, scope=s.scope, kind=s.kind, params=params, cron_text=cron_text, sm=st.sm
        )
        reschedule = body.cron is not None or (body.enabled and not s.enabled)
        s.params_json = json.dumps(checked)
        s.cron = cron.parse(cron_text).text
        if reschedule:
            s.next_due_unix_s = cron.parse(cron_text).next_after(st.clock())
        if body.name is not None:
            s.name = body.name
        if body.time_limit_s is not None:
            s.time_limit_s = body.time_limit_s
        if body.enabled is not None:
            s.enabled = body.enabled
        db.commit()
        return ScheduleOut.of(s)


@router.delete("/schedules/{schedule_id}", response_model=ScheduleOut, tags=["schedules"])
def delete_schedule(who: Who, st: St, schedule_id: int) -> ScheduleOut:
    """Remove a schedule (editor; a global one: admin); its jobs stay."""
    with st.sm() as db:
        s = scheduler.get_schedule(db, who, schedule_id)
        scheduler.may_change(who, s)
        out = ScheduleOut.of(s)
        db.delete(s)
        db.commit()
        return out


@router.get("/schedules/{schedule_id}/runs", response_model=list[ScheduleRunOut], tags=["schedules"])
def schedule_runs(
    who: Who, st: St, schedule_id: int, limit: Annotated[int, Query(ge=1, le=500)] = 50
) -> list[ScheduleRunOut]:
    """The schedule's runs, newest first: each due time, the job it queued, the scheduler that claimed it."""
    with st.sm() as db:
        scheduler.get_schedule(db, who, schedule_id)
        rows = db.scalars(
            select(ScheduleRun)
            .where(ScheduleRun.schedule_id == schedule_id)
            .order_by(ScheduleRun.due_unix_s.desc())
            .limit(limit)
        ).all()
        return [
            ScheduleRunOut(
                due_unix_s=r.due_unix_s,
                job_id=r.job_id,
                claimed_by=r.claimed_by,
                created_unix_s=r.created_unix_s,
            )
            for r in rows
        ]


def _check_change_filters(st: State, provider: str | None, instance_type: str | None) -> None:
    """An unknown provider or instance type is a 404 naming the allowed values (as ``catalog offers
    --provider`` and ``catalog history`` do), not a 200 with no changes, which reads as "prices unchanged".
    Known = in the catalog the offer routes answer from (shipped + refreshed rows)."""
    from gpufleet.errors import UnknownNameError

    if provider is None and instance_type is None:
        return
    cat = st.catalogs.cached() or st.catalogs.current()
    providers = cat.table.column("provider")
    if provider is not None and provider not in set(providers.tolist()):
        raise UnknownNameError(
            "provider",
            provider,
            set(providers.tolist()),
            "Provider names are lower case (aws, gcp, azure, ...).",
        )
    if instance_type is not None:
        types = cat.table.column("instance_type")
        if provider is not None:
            types = types[providers == provider]
        known = set(types.tolist())
        if instance_type not in known:
            raise UnknownNameError(
                f"{provider} instance type" if provider else "instance type",
                instance_type,
                known,
                "Instance types are the provider's own names (e.g. p5.48xlarge); "
                "GET /api/v1/catalog/offers lists them.",
            )


def _refreshed_provider(provider: str) -> str:
    """``provider`` as the refreshes record it (lower case); an :class:`UnknownNameError` for one no refresh
    covers (a typo or a blank filter answered an empty list, as if nothing had changed)."""
    from gpufleet.catalog.fetch.pipeline import PROVIDERS

    name = provider.strip().lower()
    if name not in PROVIDERS:
        raise UnknownNameError(
            "price-API provider",
            provider,
            PROVIDERS,
            hint="Price changes are recorded by the catalog refreshes of aws, azure and gcp; pass one of "
            "these as provider, or leave provider out for all three.",
        )
    return name


@router.get("/catalog/changes", response_model=PriceChangePage, tags=["catalog"])
def catalog_changes(
    who: Who,
    st: St,
    provider: Annotated[str | None, Query(max_length=20)] = None,
    instance_type: Annotated[str | None, Query(max_length=100)] = None,
    min_change_fraction: Annotated[
        float, Query(ge=0, le=10, description="0.05 = changes of 5 % or more.")
    ] = 0.0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> PriceChangePage:
    """Prices changed by the catalog refreshes (viewer): offer, old and new USD/h, relative change; newest
    refresh first, then largest change. An unknown provider or instance type is a 404 with the known ones."""
    if provider is not None:
        provider = _refreshed_provider(provider)
    if instance_type is not None:
        if not instance_type.strip():
            raise InputError(
                f"instance_type={instance_type!r} is blank. Give an instance type as the catalog writes it "
                "(e.g. p5.48xlarge), or leave instance_type out for every instance."
            )
        instance_type = instance_type.strip()
    _check_change_filters(st, provider, instance_type)
    q = select(PriceChange)
    if provider is not None:
        q = q.where(PriceChange.provider == provider)
    if instance_type is not None:
        q = q.where(PriceChange.instance_type == instance_type)
    if min_change_fraction > 0:
        q = q.where(func.abs(PriceChange.change_fraction) >= min_change_fraction)
    with st.sm() as db:
        total = int(db.scalar(select(func.count()).select_from(q.subquery())) or 0)
        rows = db.scalars(
            q.order_by(
                PriceChange.captured_at.desc(), func.abs(PriceChange.change_fraction).desc(), PriceChange.id
            )
            .limit(limit)
            .offset(offset)
        ).all()
        return PriceChangePage(
            total=total,
            changes=[PriceChangeOut(**{k: getattr(r, k) for k in PriceChangeOut.model_fields}) for r in rows],
        )


@router.get("/deliveries", response_model=list[DeliveryOut], tags=["notifications"])
def deliveries(
    who: Who,
    st: St,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> list[DeliveryOut]:
    """The team's webhook deliveries, newest first, with their outcome (admin)."""
    who.require("admin")
    with st.sm() as db:
        rows = db.scalars(
            select(Delivery)
            .where(Delivery.team_id == who.team_id)
            .order_by(Delivery.id.desc())
            .limit(limit)
            .offset(offset)
        ).all()
        return [
            DeliveryOut(
                id=d.id,
                webhook_id=d.webhook_id,
                event=d.event,
                status=d.status,
                attempts=d.attempts,
                http_status=d.http_status,
                error=d.error,
                created_unix_s=d.created_unix_s,
                finished_unix_s=d.finished_unix_s,
                body=json.loads(d.body_json),
            )
            for d in rows
        ]
