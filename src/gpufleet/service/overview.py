"""The figures of the dashboard's overview, read from what the service keeps: the plan jobs' stored results
(each the `gpufleet plan --format json` document) and the team's telemetry findings. Typed data, no HTML;
no arithmetic beyond picking stored figures (every cost and saving is the plan's or the findings' own).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session as OrmSession
from sqlalchemy.orm import sessionmaker

from gpufleet.service.db import Job, Team

#: plan jobs read for the trend (newest first); older ones are left out of the chart
TREND_PLANS = 60


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanPoint:
    """One succeeded plan job: its fleet plan's total cost at the plan's prices [USD/month]."""

    job_id: int
    team_name: str
    source: str
    finished_unix_s: float
    cost_usd_per_month: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Lever:
    """One lever of the latest plan's savings waterfall: before -> after [USD/month]; ``None`` when the plan
    did not evaluate it (its note says why)."""

    name: str
    savings_usd_per_month: float | None
    note: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LatestPlan:
    point: PlanPoint
    message: str
    levers: tuple[Lever, ...]
    #: the fleet file's own teams (its workloads' ``team``), as the plan splits its cost [USD/month]
    cost_by_fleet_team_usd_per_month: tuple[tuple[str, float], ...]


def _plans(db: OrmSession, team_id: int | None, limit: int) -> list[tuple[Job, str]]:
    q = (
        select(Job, Team.name)
        .join(Team, Team.id == Job.team_id)
        .where(Job.kind == "plan", Job.status == "succeeded", Job.result_json.is_not(None))
        .order_by(Job.id.desc())
        .limit(limit)
    )
    if team_id is not None:
        q = q.where(Job.team_id == team_id)
    return [(j, name) for j, name in db.execute(q).all()]


def _result(job: Job) -> dict[str, Any]:
    doc = json.loads(job.result_json or "{}")
    res = doc.get("result", {})
    return res if isinstance(res, dict) else {}


def _point(job: Job, team_name: str, res: dict[str, Any]) -> PlanPoint | None:
    cost = res.get("cost_usd_per_month")
    if not isinstance(cost, int | float) or job.finished_unix_s is None:
        return None  # an infeasible plan has no cost
    return PlanPoint(
        job_id=job.id,
        team_name=team_name,
        source=job.params_source(),
        finished_unix_s=job.finished_unix_s,
        cost_usd_per_month=float(cost),
    )


def plan_trend(sm: sessionmaker[OrmSession], team_id: int) -> tuple[tuple[PlanPoint, ...], LatestPlan | None]:
    """The team's plan costs, oldest first (the latest :data:`TREND_PLANS` plans), and its latest plan."""
    with sm() as db:
        rows = _plans(db, team_id, TREND_PLANS)
    points: list[PlanPoint] = []
    latest: LatestPlan | None = None
    for job, team_name in rows:
        res = _result(job)
        p = _point(job, team_name, res)
        if p is None:
            continue
        points.append(p)
        if latest is None:
            latest = LatestPlan(
                point=p,
                message=str(res.get("message", "")),
                levers=tuple(
                    Lever(
                        name=str(lv.get("name", "")),
                        savings_usd_per_month=(
                            None
                            if lv.get("savings_usd_per_month") is None
                            else float(lv["savings_usd_per_month"])
                        ),
                        note=str(lv.get("note", "")),
                    )
                    for lv in res.get("levers", [])
                ),
                cost_by_fleet_team_usd_per_month=tuple(
                    (str(t), float(c)) for t, c in res.get("cost_by_team_usd_per_month", [])
                ),
            )
    return tuple(reversed(points)), latest


def cost_by_team(sm: sessionmaker[OrmSession], team_id: int) -> tuple[tuple[str, PlanPoint | None], ...]:
    """(team name, its latest succeeded plan with a cost, or None) of team ``team_id`` (a team never sees
    another team's figures, whatever its role)."""
    with sm() as db:
        teams = db.execute(select(Team.id, Team.name).order_by(Team.name)).all()
        out: list[tuple[str, PlanPoint | None]] = []
        for tid, name in teams:
            if tid != team_id:
                continue
            latest = None
            for job, team_name in _plans(db, tid, 5):  # the newest plan with a cost
                latest = _point(job, team_name, _result(job))
                if latest is not None:
                    break
            out.append((str(name), latest))
    return tuple(out)
