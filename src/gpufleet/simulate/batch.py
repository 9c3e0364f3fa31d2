"""Batch scheduler: a job queue on a fleet of GPU pools, Kueue-like team quotas, spot and off-peak windows.

Fleet (YAML/JSON, :func:`read_fleet`)::

    pools:
      - {name: od, gpu: h100, gpus_per_node: 8, nodes: 4, kind: on_demand}      # price: an 8-GPU node offer
      - {name: sp, gpu: h100, gpus_per_node: 8, nodes: 4, kind: spot}
      - {name: rs, gpu: a100, gpus_per_node: 8, nodes: 2, kind: reserved, price_usd_per_node_hour: 12}
    teams:                      # Kueue ClusterQueues in one cohort: nominal quota and borrowing limit [GPUs]
      research: {nominal_gpus: 32, borrowing_limit_gpus: 16}
    off_peak: {start_hour: 22, end_hour: 6, price_factor: 0.6}

A job runs as a gang (all its GPUs at once, in one pool). Kueue semantics: a team may use its nominal quota
and borrow unused nominal quota of the cohort up to its borrowing limit; the cohort never runs more than the
sum of the nominal quotas, and there is no preemption to reclaim (Kueue's default ``reclaimWithinCohort:
Never``), so a team under its nominal quota waits while others' borrowed jobs hold the cohort.
Each team queues on its own: a job over its quota waits without holding the other teams back.
Non-preemptible jobs never run on spot pools.

Policies: ``fifo`` (strict order, head-of-line blocking), ``priority`` (higher first), ``easy`` (EASY
backfill, Lifka 1995: the head job gets a reservation at the earliest time enough GPUs free up; later jobs
start now if they fit and end before it), ``deadline`` (earliest deadline first), ``offpeak`` (preemptible
jobs whose deadline allows wait for the off-peak window; else FIFO) and ``spot`` (FIFO, preemptible jobs go
to spot pools first). Without ``spot`` policy, preemptible jobs still use spot pools only when no other
pool fits.

Spot interruptions: a memoryless hazard per node (cost/spot.py assumptions); an interrupted job returns to
the queue keeping the work up to its last checkpoint (every ``checkpoint_h``) and pays ``restart_h`` again.

Costs: on-demand and spot pools bill the nodes' share a job uses while it runs; reserved pools bill all
their nodes for the whole makespan. The off-peak factor multiplies on-demand and spot prices inside the
window (on-premise power tariffs, or providers with time-of-day pricing).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from gpufleet.errors import ConfigFileError, InputError, UnknownNameError
from gpufleet.fileio import check_top_level, load_structured_file
from gpufleet.simulate.core import make_rng, new_environment, percentile
from gpufleet.simulate.jobs import Job
from gpufleet.validation import MAX_HOURS, check_count, check_number, checked_arguments

BATCH_POLICIES = ("fifo", "priority", "easy", "deadline", "offpeak", "spot")
POOL_KINDS = ("on_demand", "spot", "reserved")
#: checkpoint interval and restart overhead of preemptible jobs on spot [h] (gpufleet assumptions; see
#: cost/spot.py: restart 600 s, checkpoint cost folded into the interval)
DEFAULT_CHECKPOINT_H = 0.5
DEFAULT_RESTART_H = 600.0 / 3600.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Pool:
    name: str
    gpu: str
    gpus_per_node: int
    nodes: int
    kind: str  # on_demand | spot | reserved
    price_usd_per_node_hour: float
    mtbi_h: float = math.inf  # per node, spot only
    price_source: str = "given"  # the catalog offer the price comes from (provider/region/instance), or given

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes


@dataclass(frozen=True, slots=True, kw_only=True)
class Quota:
    nominal_gpus: float = math.inf
    borrowing_limit_gpus: float = math.inf


@dataclass(frozen=True, slots=True, kw_only=True)
class Fleet:
    pools: tuple[Pool, ...]
    teams: dict[str, Quota] = field(default_factory=dict)
    off_peak: tuple[float, float, float] | None = None  # (start hour, end hour, price factor)
    name: str = "fleet"


@dataclass(frozen=True, slots=True, kw_only=True)
class TeamStats:
    team: str
    jobs: int
    wait_p50_h: float
    wait_p95_h: float
    gpu_hours: float
    cost_usd: float
    deadline_misses: int


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchResult:
    jobs: int
    policy: str
    fleet: str
    seed: int
    makespan_h: float
    wait_p50_h: float
    wait_p95_h: float
    utilisation: float  # busy GPU-hours / (fleet GPUs x makespan) [fraction]
    cost_usd: float
    deadline_misses: int
    preemptions: int
    teams: tuple[TeamStats, ...]
    notes: tuple[str, ...]


def default_fleet() -> Fleet:
    """4 on-demand + 2 spot nodes of 8 x H100 at catalog prices, no quotas."""
    return _resolve_fleet(
        {
            "pools": [
                {"name": "on-demand", "gpu": "h100", "gpus_per_node": 8, "nodes": 4, "kind": "on_demand"},
                {"name": "spot", "gpu": "h100", "gpus_per_node": 8, "nodes": 2, "kind": "spot"},
            ]
        },
        "default fleet",
    )


@checked_arguments("batch fleet reader")
def read_fleet(path: str | Path) -> Fleet:
    p = Path(path)
    # labelled by the file's name: the folder is the caller's (a server's temporary folder for an upload)
    return _resolve_fleet(load_structured_file(p, what="fleet file"), str(p), p.name)


def _catalog_price(gpu: str, per_node: int, spot: bool, tier: str, provider: str) -> tuple[float, str]:
    """(price per node-hour, offer) of the cheapest catalog offer of a whole node of ``per_node`` x ``gpu``
    that passes the recommender's deployability rules for ``tier``
    (:func:`gpufleet.recommend.candidates.eligible_mask`: production takes no marketplace or community host
    and no stale or undated price). A node is one machine: a 1-GPU offer times 8 is not an 8-GPU node (no
    NVLink between them, and a marketplace host at that)."""
    from gpufleet.catalog.offers import load_offers
    from gpufleet.recommend.candidates import eligible_mask
    from gpufleet.recommend.types import Workload

    table = (
        load_offers().filter(gpu=gpu, provider=provider) if provider != "*" else load_offers().filter(gpu=gpu)
    )
    w = Workload(name="batch pool", model="llama-3.1-8b", task="pretrain", precision="bf16", tier=tier)
    ok = eligible_mask(table, w)
    best: tuple[float, str] | None = None
    sizes: set[int] = set()
    for o, keep in zip(table.records(), ok, strict=True):
        if not keep:
            continue
        sizes.add(int(o.gpu_count))
        price = o.price_spot_usd_per_hour if spot else o.price_on_demand_usd_per_hour
        if o.gpu_count != per_node or price is None:
            continue
        cand = (price, f"{o.provider}/{o.region}/{o.instance_type}")
        if best is None or cand < best:
            best = cand
    if best is None:
        where = f" at {provider}" if provider != "*" else ""
        have = ", ".join(str(n) for n in sorted(sizes)) or "none"
        raise ConfigFileError(
            f"no catalog {'spot ' if spot else ''}offer of a {per_node}-GPU {gpu} node{where} passes the "
            f"{tier} tier (node sizes offered under it: {have} GPUs). Set gpus_per_node to an offered size, "
            "tier: batch to allow marketplace hosts, or give price_usd_per_node_hour."
        )
    return best


def _resolve_fleet(doc: Any, source: str, name: str | None = None) -> Fleet:
    """The fleet of a fleet file's document; ``source`` names it in messages, ``name`` (default: ``source``)
    labels the result (it was the last pool's price source: "given" or a catalog offer)."""
    from pydantic import ValidationError

    from gpufleet.cost.spot import assumption_for, load_spot_assumptions
    from gpufleet.simulate.batch_fleet_file import FleetFileIn, describe

    check_top_level(
        doc,
        source=f"The fleet file {source}",
        allowed=("pools", "teams", "off_peak"),
        lists=("pools",),
        fix="See docs/simulate.md for every key and its unit.",
    )
    try:
        spec = FleetFileIn.model_validate(doc)
    except ValidationError as exc:
        raise ConfigFileError(
            f"The fleet file {source}: {describe(exc)}. Pools need gpu, nodes and kind "
            f"({', '.join(POOL_KINDS)}); see docs/simulate.md for every key and its unit."
        ) from None
    pools = []
    from gpufleet.catalog.specs import get_spec

    for k, raw in enumerate(spec.pools):
        try:
            get_spec(raw.gpu)  # a misspelt GPU with its own price was simulated under that name, unchecked
        except UnknownNameError as exc:
            raise ConfigFileError(f"The fleet file {source}, pool {raw.name or k}: {exc}") from None
        price, price_source = raw.price_usd_per_node_hour, "given"
        if price is None:
            price, price_source = _catalog_price(
                raw.gpu, raw.gpus_per_node, raw.kind == "spot", raw.tier, raw.provider
            )
        # the interruption hazard of the provider the spot price comes from (a given price: the pool's)
        hazard_provider = price_source.split("/")[0] if price_source != "given" else raw.provider
        a = assumption_for(hazard_provider, load_spot_assumptions())
        pools.append(
            Pool(
                name=raw.name or f"pool{k}",
                gpu=raw.gpu,
                gpus_per_node=raw.gpus_per_node,
                nodes=raw.nodes,
                kind=raw.kind,
                price_usd_per_node_hour=price,
                mtbi_h=1.0 / a.interruptions_per_h if raw.kind == "spot" else math.inf,
                price_source=price_source,
            )
        )
    names = [p.name for p in pools]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigFileError(
            f"The fleet file {source}: pool names {dupes} repeat; give each pool its own name."
        )
    teams = {
        str(name): Quota(
            nominal_gpus=q.nominal_gpus if q.nominal_gpus is not None else math.inf,
            borrowing_limit_gpus=q.borrowing_limit_gpus if q.borrowing_limit_gpus is not None else math.inf,
        )
        for name, q in (spec.teams or {}).items()
    }
    op = spec.off_peak
    off = None if op is None else (op.start_hour, op.end_hour, op.price_factor)
    return Fleet(pools=tuple(pools), teams=teams, off_peak=off, name=name or source)


def _in_window(hour: float, off: tuple[float, float, float]) -> bool:
    s, e, _ = off
    h = hour % 24.0
    return s <= h < e if s < e else (h >= s or h < e)


def _next_window_start(t: float, off: tuple[float, float, float]) -> float:
    s = off[0]
    base = math.floor(t / 24.0) * 24.0 + s
    return base if base >= t else base + 24.0


def _price_factor_integral(a: float, b: float, off: tuple[float, float, float] | None) -> float:
    """Integral of the price factor over [a, b] hours (1 outside the off-peak window)."""
    if off is None or b <= a:
        return max(b - a, 0.0)
    total = 0.0
    t = a
    while t < b:
        nxt = min(b, math.floor(t) + 1.0)
        total += (nxt - t) * (off[2] if _in_window(t, off) else 1.0)
        t = nxt
    return total


@dataclass(slots=True)
class _State:
    remaining_h: float
    started: float | None = None
    first_start: float | None = None
    end: float | None = None
    pool: int | None = None
    run_start: float = 0.0
    token: int = 0  # invalidates a stale completion after an interruption
    interruptions: int = 0
    stalled: int = 0  # consecutive interruptions that left at least as much work as the best so far
    least_remaining_h: float = math.inf
    cost: float = 0.0
    gpu_h: float = 0.0


#: consecutive interruptions of one job that leave no less work than before: the restart costs at least what
#: each run keeps (restart_h or checkpoint_h at or beyond the spot pool's MTBI), so the job never completes
MAX_STALLED_INTERRUPTIONS = 100
#: interruptions one job may take in total: a job that does progress but needs more (centuries of work on a
#: pool interrupted every few hours; 20,000 x a 2-3 h MTBI is years of work) would keep the simulation running
#: for hours; it stops with an error
MAX_INTERRUPTIONS_PER_JOB = 20_000


def check_policy_acts(policy: str, jobs: Sequence[Job], fleet: Fleet | None = None) -> None:
    """:class:`InputError` when ``policy`` has nothing to act on in this queue and fleet, so that it would
    run as plain fifo: ``offpeak`` without an off-peak window, ``spot`` without a spot pool, ``deadline``
    without a deadline (``simulate batch`` asks this; a sweep over every policy may include such runs)."""
    fl = fleet or default_fleet()
    idle_policy = {
        "offpeak": (
            fl.off_peak is None,
            "the fleet has no off_peak window",
            "add off_peak to the fleet file",
        ),
        "spot": (
            all(p.kind != "spot" for p in fl.pools),
            "the fleet has no spot pool",
            "add a pool with kind: spot",
        ),
        "deadline": (all(j.deadline_h is None for j in jobs), "no job has a deadline", "fill deadline_s"),
    }.get(policy)
    if idle_policy is not None and idle_policy[0]:  # the policy would silently run as plain FIFO
        raise InputError(
            f"--policy {policy} has nothing to act on: {idle_policy[1]}, so it would run as plain fifo. "
            f"Pass --policy fifo (or easy, priority), or {idle_policy[2]}."
        )


#: Most jobs waiting at once: a trace that overloads its fleet this much says only "overloaded", and the
#: scheduler's passes over the queue make each event cost O(waiting jobs) (100,000 waiting: minutes).
MAX_WAITING_JOBS = 5_000


@checked_arguments("batch simulation")
def simulate_batch(
    jobs: Sequence[Job],
    fleet: Fleet | None = None,
    *,
    policy: str = "fifo",
    seed: int = 0,
    checkpoint_h: float = DEFAULT_CHECKPOINT_H,
    restart_h: float = DEFAULT_RESTART_H,
) -> BatchResult:
    """Schedule ``jobs`` on ``fleet`` under ``policy`` (module doc)."""
    seed = check_count("seed", seed, minimum=0, maximum=2**63 - 1, flag="--seed")  # type: ignore[assignment]
    checkpoint_h = check_number("checkpoint_h", checkpoint_h, maximum=MAX_HOURS)  # type: ignore[assignment]
    restart_h = check_number("restart_h", restart_h, allow_zero=True, maximum=MAX_HOURS)  # type: ignore[assignment]
    if isinstance(jobs, str | bytes) or not isinstance(jobs, Sequence):
        raise InputError(f"jobs must be a list of Job records (see read_jobs), got {jobs!r}.")
    if not isinstance(policy, str) or policy not in BATCH_POLICIES:
        raise InputError(f"batch policy {policy!r} is unknown. Allowed: {', '.join(BATCH_POLICIES)}.")
    if not jobs:
        raise InputError("no jobs to schedule.")
    wrong = next((j for j in jobs if not isinstance(j, Job)), None)
    if wrong is not None:  # checked here: a string in the list failed deep in the scheduler
        raise InputError(
            f"jobs must hold Job records (read_jobs gives them), got {type(wrong).__name__} {wrong!r:.60}."
        )
    if fleet is not None and not isinstance(fleet, Fleet):
        raise InputError(
            "fleet must be a Fleet (read_fleet gives one from a fleet file) or None for the default fleet, "
            f"got {type(fleet).__name__} {fleet!r:.60}."
        )
    fl = fleet or default_fleet()
    jobs = _with_durations(jobs, fl)
    biggest = max(p.gpus for p in fl.pools)
    too_big = [j.job_id for j in jobs if j.gpus > biggest]
    if too_big:
        raise InputError(f"jobs {too_big[:5]} need more GPUs than the largest pool ({biggest}); add nodes.")
    unqueued = sorted({j.team for j in jobs if fl.teams and j.team not in fl.teams})
    if unqueued:  # Kueue admits no workload of a queue it does not have; quotas were silently skipped
        raise InputError(
            f"jobs of the team(s) {unqueued[:5]} have no queue in the fleet file's teams "
            f"({', '.join(sorted(fl.teams))}), so no quota would apply to them. Add those teams under "
            "teams: (an entry with no quota keys is unlimited), or fix the job file's team names."
        )
    env = new_environment()
    rng = make_rng(seed)
    st = [_State(remaining_h=j.duration_h or 0.0) for j in jobs]
    free = [p.gpus for p in fl.pools]
    used_by_team: dict[str, float] = defaultdict(float)
    queue: list[int] = []
    running: set[int] = set()
    counters = {"preempt": 0, "done": 0}
    wakeups: set[float] = set()
    nominal_total = sum(q.nominal_gpus for q in fl.teams.values()) if fl.teams else math.inf

    def quota_ok(j: Job) -> bool:
        q = fl.teams.get(j.team)
        if q is None:
            return True
        use = used_by_team[j.team] + j.gpus
        if use - q.nominal_gpus > q.borrowing_limit_gpus:
            return False
        # Kueue: the cohort never admits past the sum of its ClusterQueues' nominal quotas, and a queue back
        # under its own nominal quota does not take back what others borrowed unless preemption reclaims it
        # (`preemption.reclaimWithinCohort`, default Never): it waits like any other (kueue.sigs.k8s.io
        # "Cluster Queue", Cohort and Preemption; fleet-anchors B.2). Teams without a quota are not in it.
        cohort_used = sum(used_by_team[t] for t in fl.teams)
        return cohort_used + j.gpus <= nominal_total

    def _pool_order(preemptible: bool) -> list[int]:
        idx = [k for k, p in enumerate(fl.pools) if preemptible or p.kind != "spot"]
        if policy == "spot" and preemptible:
            return sorted(
                idx,
                key=lambda k: (
                    fl.pools[k].kind != "spot",
                    fl.pools[k].price_usd_per_node_hour / fl.pools[k].gpus_per_node,
                    k,
                ),
            )
        return sorted(
            idx,
            key=lambda k: (
                fl.pools[k].kind == "spot",
                fl.pools[k].kind != "reserved",
                fl.pools[k].price_usd_per_node_hour / fl.pools[k].gpus_per_node,
                k,
            ),
        )

    pool_orders: dict[bool, list[int]] = {}

    def pool_order(j: Job) -> list[int]:
        """The pools ``j`` may use, in the order tried: it depends only on ``j.preemptible`` (the fleet and
        the policy are fixed), so it is computed once per kind, not per queued job and event (a queue of
        10,000 jobs spent most of its 50 s here)."""
        if j.preemptible not in pool_orders:
            pool_orders[j.preemptible] = _pool_order(j.preemptible)
        return pool_orders[j.preemptible]

    #: queued jobs by preemptible (False/True): with the free GPUs of the pools each kind may use, a
    #: schedule pass stops as soon as no queued job could start (EASY scanned the whole queue at every event)
    queued_kind = {False: 0, True: 0}

    def room() -> dict[bool, int]:
        """The most free GPUs in one pool that a job of each kind (preemptible or not) may use."""
        out = {}
        for pre in (False, True):
            if pre not in pool_orders:
                pool_orders[pre] = _pool_order(pre)
            out[pre] = max((free[k] for k in pool_orders[pre]), default=0)
        return out

    def fits(i: int) -> int | None:
        j = jobs[i]
        if not quota_ok(j):
            return None
        for k in pool_order(j):
            if free[k] >= j.gpus:
                return k
        return None

    def start(i: int, k: int) -> None:
        j, s, pool = jobs[i], st[i], fl.pools[k]
        now = env.now
        free[k] -= j.gpus
        used_by_team[j.team] += j.gpus
        s.pool, s.run_start, s.token = k, now, s.token + 1
        if s.first_start is None:
            s.first_start = now
        running.add(i)
        env.process(_finish(i, s.token, s.remaining_h))
        if pool.kind == "spot" and math.isfinite(pool.mtbi_h):
            nodes = math.ceil(j.gpus / pool.gpus_per_node)
            env.process(_interrupt(i, s.token, float(rng.exponential(pool.mtbi_h / nodes))))

    def stop(i: int) -> float:
        j, s = jobs[i], st[i]
        k = s.pool
        assert k is not None
        pool = fl.pools[k]
        ran = env.now - s.run_start
        free[k] += j.gpus
        used_by_team[j.team] -= j.gpus
        running.discard(i)
        share = j.gpus / pool.gpus_per_node
        if pool.kind != "reserved":
            s.cost += (
                share
                * pool.price_usd_per_node_hour
                * _price_factor_integral(s.run_start, env.now, fl.off_peak)
            )
        s.gpu_h += j.gpus * ran
        return float(ran)

    def _finish(i: int, token: int, hours: float) -> Any:
        yield env.timeout(hours)
        if st[i].token != token or i not in running:
            return
        stop(i)
        st[i].end = env.now
        counters["done"] += 1
        schedule()

    def _interrupt(i: int, token: int, after: float) -> Any:
        yield env.timeout(after)
        if st[i].token != token or i not in running:
            return
        ran = stop(i)
        s = st[i]
        s.token += 1
        kept = math.floor(ran / checkpoint_h) * checkpoint_h if checkpoint_h > 0 else 0.0
        s.remaining_h = s.remaining_h - min(kept, s.remaining_h) + restart_h
        counters["preempt"] += 1
        s.interruptions += 1
        s.stalled = 0 if s.remaining_h < s.least_remaining_h else s.stalled + 1
        s.least_remaining_h = min(s.least_remaining_h, s.remaining_h)
        if s.stalled >= MAX_STALLED_INTERRUPTIONS or s.interruptions > MAX_INTERRUPTIONS_PER_JOB:
            mtbi = fl.pools[s.pool].mtbi_h if s.pool is not None else math.nan
            why = (
                f"{MAX_STALLED_INTERRUPTIONS} interruptions in a row left no less work: with restart_h="
                f"{restart_h:g} h and checkpoint_h={checkpoint_h:g} h against a mean time between "
                f"interruptions of {mtbi:.3g} h it never completes"
                if s.stalled >= MAX_STALLED_INTERRUPTIONS
                else f"it was interrupted {MAX_INTERRUPTIONS_PER_JOB:,} times (mean time between "
                f"interruptions {mtbi:.3g} h) and at this rate never completes within that limit"
            )
            raise InputError(
                f"job {jobs[i].job_id} cannot be simulated on spot ({s.remaining_h:.3g} h of work left): "
                f"{why}. Checkpoint more often (lower checkpoint_h), shorten restart_h below the MTBI, split "
                "the job, or mark it preemptible=false so it runs on-demand."
            )
        queue.append(i)
        queued_kind[jobs[i].preemptible] += 1
        schedule()

    def order() -> list[int]:
        if policy == "priority":
            return sorted(queue, key=lambda i: (-jobs[i].priority, jobs[i].submit_h, i))
        if policy == "deadline":
            return sorted(
                queue,
                key=lambda i: (
                    jobs[i].deadline_h if jobs[i].deadline_h is not None else math.inf,
                    jobs[i].submit_h,
                    i,
                ),
            )
        return sorted(queue, key=lambda i: (jobs[i].submit_h, i))

    def defer_offpeak(i: int) -> float | None:
        """The off-peak window start a job should wait for, or None to run now."""
        j = jobs[i]
        if (
            policy != "offpeak"
            or fl.off_peak is None
            or not j.preemptible
            or _in_window(env.now, fl.off_peak)
        ):
            return None
        w = _next_window_start(env.now, fl.off_peak)
        if j.deadline_h is not None and w + st[i].remaining_h > j.deadline_h:
            return None
        return w

    def shadow_time(i: int) -> float:
        """EASY: earliest time the head job i fits in some pool, from the running jobs' expected ends."""
        j = jobs[i]
        best = math.inf
        for k in pool_order(j):
            avail = free[k]
            if avail >= j.gpus:
                return float(env.now)
            ends = sorted(
                (st[r].run_start + st[r].remaining_h, jobs[r].gpus) for r in running if st[r].pool == k
            )
            for t_end, g in ends:
                avail += g
                if avail >= j.gpus:
                    best = min(best, t_end)
                    break
        return best

    def schedule() -> None:
        head_blocked = False
        shadow = math.inf
        free_room = room()
        #: teams whose queue is held by a job over the team's quota (strict policies: its later jobs wait)
        quota_held: set[str] = set()
        for i in order():
            if policy != "offpeak" and all(free_room[p] == 0 for p in (False, True) if queued_kind[p]):
                break  # no queued job can start or backfill until a job ends
            if jobs[i].team in quota_held:
                continue
            if not quota_ok(jobs[i]):
                # Kueue: each team is its own ClusterQueue; a workload over its quota (or the cohort's)
                # waits there while the other queues' heads are admitted (kueue.sigs.k8s.io "Cluster
                # Queue"). It neither blocks the other teams nor takes EASY's reservation (its pool may
                # have room: the reservation at "now" stopped every backfill). Strict policies keep the
                # order inside the team: its later jobs wait behind it.
                if policy != "easy":
                    quota_held.add(jobs[i].team)
                continue
            w = defer_offpeak(i)
            if w is not None:
                if w not in wakeups:
                    wakeups.add(w)
                    env.process(_wake(w))
                continue
            # a job wider than every usable pool's free GPUs cannot fit: fits() would say None
            k = fits(i) if jobs[i].gpus <= free_room[jobs[i].preemptible] else None
            if k is not None and (not head_blocked or env.now + st[i].remaining_h <= shadow):
                queue.remove(i)
                queued_kind[jobs[i].preemptible] -= 1
                start(i, k)
                free_room = room()
                continue
            if policy == "easy":
                if not head_blocked:
                    head_blocked, shadow = True, shadow_time(i)
                continue
            if policy in ("fifo", "priority", "deadline", "spot", "offpeak"):
                break  # strict order: the head blocks the queue

    def _wake(t: float) -> Any:
        yield env.timeout(t - env.now)
        schedule()

    def _submit() -> Any:
        for i, j in enumerate(jobs):
            if j.submit_h > env.now:
                yield env.timeout(j.submit_h - env.now)
            queue.append(i)
            queued_kind[j.preemptible] += 1
            if len(queue) > MAX_WAITING_JOBS:
                raise InputError(
                    f"{len(queue):,} jobs are waiting at {env.now:.1f} h into the trace (job {j.job_id}): "
                    f"the fleet's {sum(p.gpus for p in fl.pools):,} GPUs cannot keep up with it, and a queue "
                    f"beyond {MAX_WAITING_JOBS:,} waiting jobs makes the simulation run for minutes while "
                    "saying only that. Add pools or nodes (--fleet), or simulate a shorter or thinner slice "
                    "of the trace."
                )
            if i + 1 < len(jobs) and jobs[i + 1].submit_h <= env.now:
                continue
            schedule()

    env.process(_submit())
    env.run()
    if counters["done"] < len(jobs):
        raise InputError(
            f"{len(jobs) - counters['done']} jobs never ran: their team quota can never admit them."
        )
    makespan = max(s.end or 0.0 for s in st)
    reserved = sum(p.price_usd_per_node_hour * p.nodes for p in fl.pools if p.kind == "reserved") * makespan
    waits = np.asarray([(s.first_start or 0.0) - j.submit_h for s, j in zip(st, jobs, strict=True)])
    misses = [
        j.deadline_h is not None and (s.end or 0.0) > j.deadline_h + 1e-9
        for s, j in zip(st, jobs, strict=True)
    ]
    busy = sum(s.gpu_h for s in st)
    total_gpus = sum(p.gpus for p in fl.pools)
    reserved_gpus = sum(p.gpus for p in fl.pools if p.kind == "reserved")
    teams = []
    for team in sorted({j.team for j in jobs}):
        idx = [k for k, j in enumerate(jobs) if j.team == team]
        gh = sum(st[k].gpu_h for k in idx)
        share = reserved * (
            sum(st[k].gpu_h for k in idx if fl.pools[st[k].pool or 0].kind == "reserved")
            / max(sum(s.gpu_h for s in st if fl.pools[s.pool or 0].kind == "reserved"), 1e-12)
        )
        teams.append(
            TeamStats(
                team=team,
                jobs=len(idx),
                wait_p50_h=percentile(waits[idx], 50),
                wait_p95_h=percentile(waits[idx], 95),
                gpu_hours=gh,
                cost_usd=sum(st[k].cost for k in idx) + (share if reserved_gpus else 0.0),
                deadline_misses=sum(misses[k] for k in idx),
            )
        )
    notes = [
        f"{len(jobs)} jobs; pools: "
        + "; ".join(
            f"{p.name} {p.nodes} x {p.gpus_per_node} {p.gpu} {p.kind} ${p.price_usd_per_node_hour:.2f}/node-h"
            f" ({p.price_source})"
            for p in fl.pools
        )
    ]
    return BatchResult(
        jobs=len(jobs),
        policy=policy,
        fleet=fl.name,
        seed=seed,
        makespan_h=makespan,
        wait_p50_h=percentile(waits, 50),
        wait_p95_h=percentile(waits, 95),
        utilisation=busy / (total_gpus * makespan) if makespan > 0 else 0.0,
        cost_usd=sum(s.cost for s in st) + reserved,
        deadline_misses=sum(misses),
        preemptions=counters["preempt"],
        teams=tuple(teams),
        notes=tuple(notes),
    )


def _with_durations(jobs: Sequence[Job], fleet: Fleet) -> list[Job]:
    """Fill ``duration_h`` of model + tokens jobs from the estimator on the first pool's GPU."""
    out = []
    cache: dict[tuple[str, int, str], float] = {}
    gpu = fleet.pools[0].gpu
    for j in jobs:
        if j.duration_h is None:
            from gpufleet.estimate.performance import estimate_training

            key = (j.model or "", j.gpus, gpu)
            if key not in cache:
                est = estimate_training(
                    model=j.model or "",
                    task="pretrain",
                    gpu=gpu,
                    precision="bf16",
                    gpu_count=j.gpus,
                    global_batch=256,
                    seq_len=4096,
                )
                if est.tokens_per_s is None:
                    raise InputError(
                        f"job {j.job_id}: {j.model} does not fit on {j.gpus} x {gpu}; give duration_s."
                    )
                cache[key] = est.tokens_per_s.central
            j = replace(j, duration_h=(j.tokens or 0.0) / cache[key] / 3600.0)
        out.append(j)
    return out
