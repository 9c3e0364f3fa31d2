"""Spot optimizer: a training run under spot interruptions, by strategy, as a Monte-Carlo over seeds.

The run needs ``work_h`` hours of compute (tokens / the estimator's tokens per second) on one shape
(``nodes`` x an offer). Every start on a fresh instance costs the restart overhead R (provisioning + image
pull + checkpoint restore); on spot, progress since the last checkpoint is lost at an interruption, and a
checkpoint every tau hours of work costs C. Spot capacity per region comes from a hazard (memoryless:
up-times ~ Exp(MTBI / nodes); down-times ~ Exp(mean down), default 0: capacity is back at once) or from a
SkyPilot spot-traces availability file (:mod:`gpufleet.simulate.spot_traces`).

Strategies (SkyPilot managed jobs' recovery and "Can't Be Late", Wu et al. NSDI'24):

* ``on_demand``: R, then the work, no interruptions;
* ``spot``: spot only, checkpoints every tau (Young 1974 tau = sqrt(2 C M) unless given), waiting while no
  capacity; no deadline guard;
* ``greedy``: spot while available, else wait; switch to on-demand for good once the slack left cannot
  absorb another spot attempt (D - t - (remaining + R) <= tau + C + R): the safety net;
* ``uniform_progress``: Can't Be Late's Uniform Progress: spot when available; when not, on-demand in
  chunks of tau while the committed progress is behind the line W t / (D - R), otherwise wait; plus the
  same safety net;
* ``failover``: spot in the cheapest region with capacity at each (re)start (SkyPilot's
  ``EAGER_NEXT_REGION``), waiting only when none has capacity.

Cost: every hour on an instance is billed at its price (spot or on-demand), restarts and checkpoints
included; waiting costs nothing. The interruption notice is not used to checkpoint (conservative).

Checked by tests against the exact expectation under a memoryless hazard with no down time
(:func:`exact_expected_hours`) and against the recommender's first-order model (``cost/spot.py``).
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpufleet.errors import InputError
from gpufleet.simulate.core import make_rng, new_environment, percentile
from gpufleet.validation import MAX_HOURS, check_count, check_number, checked_arguments

STRATEGIES = ("on_demand", "spot", "greedy", "uniform_progress", "failover")
#: Monte-Carlo repetitions by default
DEFAULT_RUNS = 100
#: Most Monte-Carlo runs per strategy (bounds the work; 10^4 runs give < 1 % standard error on a share).
MAX_RUNS = 10_000
#: Most checkpoint intervals one run simulates (each is a few events; bounds the work of a run).
MAX_SEGMENTS_PER_RUN = 50_000
#: Most scheduling steps (segments, interruptions, restarts) of one run before it is declared not to progress.
MAX_STEPS_PER_RUN = 2 * MAX_SEGMENTS_PER_RUN


@dataclass(frozen=True, slots=True, kw_only=True)
class Region:
    """Spot capacity and prices of one region (or provider) for the job's shape."""

    name: str
    price_spot_usd_per_hour: float  # the whole job's nodes [USD/h]
    mtbi_h: float = math.inf  # mean time between interruptions of the job (all nodes) [h]
    mean_down_h: float = 0.0  # mean time without capacity after an interruption [h]
    availability: tuple[int, ...] = ()  # trace: capacity per tick (>= nodes = up); empty: use the hazard
    tick_h: float = 0.0  # trace tick [h]
    nodes: int = 1  # instances the job needs from the trace


@dataclass(frozen=True, slots=True, kw_only=True)
class SpotJob:
    work_h: float  # compute time on healthy instances [h]
    price_on_demand_usd_per_hour: float  # the whole job [USD/h]
    regions: tuple[Region, ...]
    restart_overhead_h: float  # R [h]
    checkpoint_cost_h: float  # C [h]
    interval_h: float | None = None  # tau [h]; None: Young's
    deadline_h: float | None = None

    def tau_h(self, region: Region) -> float:
        if self.interval_h is not None:
            return self.interval_h
        mtbi = region.mtbi_h if not region.availability else _trace_mtbi_h(region)
        if not math.isfinite(mtbi) or self.checkpoint_cost_h <= 0:
            return math.inf
        return math.sqrt(2.0 * self.checkpoint_cost_h * mtbi)


@dataclass(frozen=True, slots=True, kw_only=True)
class StrategyOutcome:
    strategy: str
    runs: int
    expected_cost_usd: float
    cost_p95_usd: float
    expected_hours: float
    hours_p50: float
    hours_p95: float
    p_deadline_miss: float | None
    expected_interruptions: float
    expected_on_demand_hours: float
    #: 1 - expected cost / on-demand cost [fraction]; None when a deadline is set and this strategy or the
    #: on-demand run misses it (P(miss) > MAX_DEADLINE_MISS): a saving is stated only at equal service
    savings_vs_on_demand: float | None
    hours_samples: tuple[float, ...] = field(repr=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class SpotLayout:
    """One GPU count tried by the layout search of :func:`simulate_spot` (``gpus`` None)."""

    gpus: int
    nodes: int
    offer: str  # the spot offer priced ("" when the layout was not simulated)
    work_h: float | None  # None: not simulated
    best: str | None  # cheapest strategy with P(miss) <= 5 % (None: none meets the deadline, or skipped)
    expected_cost_usd: float | None  # of ``best`` (or of the strategy missing least, when none meets)
    p_deadline_miss: float | None  # of that strategy
    status: str  # meets | misses | skipped
    why: str  # one line: what decided the status


@dataclass(frozen=True, slots=True, kw_only=True)
class SpotResult:
    model: str
    offer: str
    gpus: int
    nodes: int
    work_h: float
    deadline_h: float | None
    restart_overhead_h: float
    checkpoint_cost_h: float
    interval_h: float
    seed: int
    interruption_source: str
    outcomes: tuple[StrategyOutcome, ...]
    best: str | None  # cheapest strategy with P(miss) <= 5 % (or no deadline)
    # cost/spot.py first-order E[T]/W for the first region; None where it does not apply (no finite value)
    closed_form_wall_time_factor: float | None
    notes: tuple[str, ...]
    #: the GPU counts searched (empty when the caller fixed ``gpus``); the result is the cheapest that meets
    #: the deadline
    layouts: tuple[SpotLayout, ...] = ()
    #: the percentile of the estimate ``work_h`` is taken at: p90 = its slow end (the deadline holds there)
    confidence: str = "p90"


#: What is derived from a trace, by the identity of its tuple (hashing a 2,000,000-tick tuple per run and
#: region cost seconds): id -> (the tuple itself, kept to rule out a reused id; nodes -> derived values).
_PER_TRACE: dict[int, tuple[tuple[int, ...], dict[int, _TraceRuns]]] = {}


@dataclass(frozen=True, slots=True)
class _TraceRuns:
    up: tuple[bool, ...]  # capacity >= nodes, per tick
    starts: tuple[int, ...]  # ticks where a cyclic run of equal states starts (empty: constant trace)
    up_ticks: int
    interruptions: int  # up -> down changes (not wrapping around)


def _trace_runs(availability: tuple[int, ...], nodes: int) -> _TraceRuns:
    """The runs of a trace, computed once per trace and node count: scanning it per run, region and strategy
    made a constant trace of 300,000 ticks (208 days at 60 s) take 90 s for 100 runs (now 5 s, the reading
    included)."""
    held = _PER_TRACE.get(id(availability))
    if held is None or held[0] is not availability:
        if len(_PER_TRACE) >= 16:
            _PER_TRACE.clear()
        held = _PER_TRACE[id(availability)] = (availability, {})
    runs = held[1].get(nodes)
    if runs is None:
        up = tuple(x >= nodes for x in availability)
        runs = held[1][nodes] = _TraceRuns(
            up=up,
            starts=tuple(i for i in range(len(up)) if up[i] != up[i - 1]),
            up_ticks=sum(up),
            interruptions=sum(1 for a, b in itertools.pairwise(up) if a and not b),
        )
    return runs


def _trace_mtbi_h(r: Region) -> float:
    runs = _trace_runs(r.availability, r.nodes)
    return runs.up_ticks * r.tick_h / runs.interruptions if runs.interruptions else math.inf


class _Availability:
    """Up/down boundaries of one region, generated lazily (hazard) or from a trace (random start)."""

    def __init__(self, region: Region, rng: np.random.Generator) -> None:
        self.r = region
        self.rng = rng
        self.bounds: list[float] = []  # times where the state flips; up on [0, b0), down on [b0, b1), ...
        self.first_up = True
        if region.availability:
            runs = _trace_runs(region.availability, region.nodes)
            self.starts = runs.starts
            k0 = int(rng.integers(len(runs.up)))
            self.first_up = runs.up[k0]
            # the cyclic run holding k0 (the last one when k0 is before the first change: it wraps around)
            self.run = (bisect.bisect_right(self.starts, k0) - 1) % max(len(self.starts), 1)
            self.pos = k0  # the tick the next run length is counted from
        self._extend(1.0)

    def _next_run_ticks(self) -> int:
        """Ticks from ``pos`` to the start of the next cyclic run (the first call: the rest of k0's run)."""
        starts, n_ticks = self.starts, len(self.r.availability)
        self.run = (self.run + 1) % len(starts)
        ticks = (starts[self.run] - self.pos) % n_ticks or n_ticks
        self.pos = starts[self.run]
        return ticks

    def _extend(self, until: float) -> None:
        r = self.r
        while not self.bounds or self.bounds[-1] <= until:
            last = self.bounds[-1] if self.bounds else 0.0
            if r.availability:
                if not self.starts:  # constant trace
                    self.bounds.append(math.inf)
                    return
                self.bounds.append(last + self._next_run_ticks() * r.tick_h)
            else:
                up = len(self.bounds) % 2 == 0
                mean = r.mtbi_h if up else r.mean_down_h
                if up and not math.isfinite(mean):
                    self.bounds.append(math.inf)
                    return
                self.bounds.append(last + (float(self.rng.exponential(mean)) if mean > 0 else 0.0))

    def up(self, t: float) -> bool:
        self._extend(t)
        k = bisect.bisect_right(self.bounds, t)
        return (k % 2 == 0) == self.first_up

    def next_change(self, t: float) -> float:
        self._extend(t)
        return self.bounds[bisect.bisect_right(self.bounds, t)]


@dataclass(slots=True)
class _Run:
    t: float = 0.0
    cost: float = 0.0
    od_h: float = 0.0
    interruptions: int = 0


def _simulate_one(job: SpotJob, strategy: str, rng: np.random.Generator) -> _Run:
    env = new_environment()
    avail = [_Availability(r, rng) for r in job.regions]
    run = _Run()
    env.process(_job(env, job, strategy, avail, run))
    env.run()
    return run


def _job(env, job: SpotJob, strategy: str, avail: list[_Availability], run: _Run):  # type: ignore[no-untyped-def]
    W, R, C = job.work_h, job.restart_overhead_h, job.checkpoint_cost_h
    D = job.deadline_h if job.deadline_h is not None else math.inf
    p_od = job.price_on_demand_usd_per_hour
    done = 0.0
    mode: str | int | None = None  # "od", region index, or None (no instance)
    forever_od = strategy == "on_demand"

    def spend(hours: float, price: float) -> object:
        run.cost += hours * price
        return env.timeout(hours)

    steps = 0
    while done < W - 1e-12:
        steps += 1
        if steps > MAX_STEPS_PER_RUN:
            raise InputError(
                f"The {strategy} run made {done:,.1f} of {W:,.1f} h of progress in {MAX_STEPS_PER_RUN:,} "
                "steps: interruptions outpace the checkpoints. Pass a shorter --checkpoint-hours (or none: "
                "Young's interval), or fewer tokens / more GPUs."
            )
        t = env.now
        rem = W - done
        if strategy in ("greedy", "uniform_progress") and not forever_od:
            region = avail[0].r
            tau0 = min(job.tau_h(region), rem)
            if D - t - (rem + R) <= tau0 + C + R:
                forever_od = True
        # choose a region with capacity
        pick: int | None = None
        if not forever_od:
            order = range(len(avail)) if strategy == "failover" else range(1)
            ups = [i for i in order if avail[i].up(t)]
            if ups:
                pick = min(ups, key=lambda i: (job.regions[i].price_spot_usd_per_hour, i))
        if forever_od or (
            pick is None and strategy == "uniform_progress" and done < W * t / max(D - R, 1e-9)
        ):
            if mode != "od":  # spot work is committed at checkpoints, so switching loses nothing
                yield spend(R, p_od)
                run.od_h += R
                mode = "od"
            # Uniform Progress: stay on demand until spot capacity changes (at least one interval tau)
            chunk = (
                rem if forever_od else min(rem, max(job.tau_h(job.regions[0]), avail[0].next_change(t) - t))
            )
            yield spend(chunk, p_od)
            run.od_h += chunk
            done += chunk
            continue
        if pick is None:  # no capacity: wait for it (or for the safety net / the progress line)
            wake = min(a.next_change(t) for a in (avail if strategy == "failover" else avail[:1]))
            if strategy in ("greedy", "uniform_progress"):
                tau0 = min(job.tau_h(avail[0].r), rem)
                wake = min(wake, D - (rem + R) - tau0 - C - R)
                if strategy == "uniform_progress":
                    wake = min(wake, done * max(D - R, 1e-9) / W)
            mode = None  # the instance is released while waiting (on-demand chunks end committed)
            if not math.isfinite(wake):
                raise InputError("spot capacity never returns in the trace and no fallback was chosen.")
            yield env.timeout(max(wake - t, 1e-9))
            continue
        region = job.regions[pick]
        price = region.price_spot_usd_per_hour
        a = avail[pick]
        lost_at = a.next_change(t)
        if mode != pick:  # a fresh instance: restart overhead first
            if t + R > lost_at:
                yield spend(lost_at - t, price)
                run.interruptions += 1
                mode = None
                continue
            yield spend(R, price)
            mode = pick
            t = env.now
        tau = job.tau_h(region)
        # fast-forward the whole segments (work tau + checkpoint C) that end before the interruption, before
        # the last segment, and (greedy / uniform progress) before the safety net could trigger
        k = math.ceil(rem / tau) - 1 if math.isfinite(tau) else 0
        if k > 0 and math.isfinite(lost_at):
            k = min(k, math.floor((lost_at - t) / (tau + C)))
        if k > 0 and strategy in ("greedy", "uniform_progress") and C > 0 and math.isfinite(D):
            k = min(k, math.floor((D - t - rem - R - tau - C - R) / C) + 1)
        if k >= 1:
            yield spend(k * (tau + C), price)
            done += k * tau
            continue
        seg = min(tau, rem)
        phase = seg + (C if seg < rem else 0.0)
        if t + phase > lost_at:  # interrupted before the checkpoint: the segment is lost
            yield spend(lost_at - t, price)
            run.interruptions += 1
            mode = None
            continue
        yield spend(phase, price)
        done += seg
    run.t = env.now


def exact_expected_hours(job: SpotJob) -> float:
    """E[T] of the ``spot`` strategy under a memoryless hazard with no down time (first region).

    Standard renewal argument (e.g. Daly 2006; Bougeret et al. 2011): the time to get a failure-free span
    X is (e^(l X) - 1)/l. The run starts with R, so the first segment takes (e^(l (R + L)) - 1)/l, with
    L = w + C (no checkpoint after the last segment). A later segment starts right after a checkpoint on a
    running instance: it fails with probability p = 1 - e^(-l L) after E[min(Exp, L)] = p / l on average,
    and is then retried with R in front: E0(L) = p / l + p (e^(l (R + L)) - 1) / l.
    """
    r = job.regions[0]
    lam = 1.0 / r.mtbi_h if math.isfinite(r.mtbi_h) else 0.0
    R, C, W = job.restart_overhead_h, job.checkpoint_cost_h, job.work_h
    tau = min(job.tau_h(r), W)
    n_full = int(W // tau) if math.isfinite(tau) else 0
    segs = [tau] * n_full
    if W - n_full * tau > 1e-12:
        segs.append(W - n_full * tau)
    if lam == 0:
        return R + W + C * (len(segs) - 1)

    def fresh(x: float) -> float:  # with restart R in front, retried until R + x is failure-free
        return math.expm1(lam * x) / lam

    total = 0.0
    for k, w in enumerate(segs):
        L = w + (C if k < len(segs) - 1 else 0.0)
        if k == 0:
            total += fresh(R + L)
        else:
            p_fail = -math.expm1(-lam * L)
            total += p_fail / lam + p_fail * fresh(R + L)
    return total


#: Most interruptions a run may expect (closed form, memoryless hazard) before it is refused as not
#: progressing: a checkpoint interval far beyond the MTBI loses the work again and again (E[T] grows as
#: e^(interval / MTBI)), and simulating each loss made ``--checkpoint-hours 1000`` on a 2.25 h MTBI run for a
#: minute (10,000 h of expected wall time for 19 h of work) before answering.
MAX_EXPECTED_INTERRUPTIONS = 1_000


def _check_progress(job: SpotJob, strategies: Sequence[str]) -> None:
    """Refuse a job whose spot runs expect more than :data:`MAX_EXPECTED_INTERRUPTIONS` interruptions (first
    region, memoryless hazard: :func:`exact_expected_hours`); a trace-driven region is simulated as is."""
    r0 = job.regions[0] if job.regions else None
    if r0 is None or r0.availability or not math.isfinite(r0.mtbi_h):
        return
    if not {"spot", "failover"} & set(strategies):
        return
    try:
        expected_h = exact_expected_hours(job)
    except OverflowError:
        expected_h = math.inf
    if expected_h / r0.mtbi_h <= MAX_EXPECTED_INTERRUPTIONS:
        return
    tau = job.tau_h(r0)
    shown = f"{expected_h:,.0f} h" if math.isfinite(expected_h) else "beyond any bound"
    raise InputError(
        f"Checkpointing every {tau:g} h of work with a mean of {r0.mtbi_h:.2f} h between interruptions: "
        f"a spot run of {job.work_h:,.1f} h of work expects {shown} of wall time (more than "
        f"{MAX_EXPECTED_INTERRUPTIONS:,} interruptions, each losing the work since the last checkpoint). "
        "Pass a --checkpoint-hours below the MTBI (or none: Young's interval), or more GPUs / fewer tokens."
    )


#: the percentiles of the estimate the work (and so the deadline) is taken at, as recommend's --confidence
CONFIDENCES = ("p90", "p50")


#: the largest P(deadline miss) a strategy may have to count as meeting the deadline (the best pick and the
#: savings column use it)
MAX_DEADLINE_MISS = 0.05


def simulate_spot_job(
    job: SpotJob, *, strategies: Sequence[str] = STRATEGIES, runs: int = DEFAULT_RUNS, seed: int = 0
) -> tuple[StrategyOutcome, ...]:
    """Monte-Carlo of ``job`` under each strategy; run k of every strategy uses the same stream (common
    random numbers), so differences between strategies are not noise between seeds."""
    if runs < 1:
        raise InputError(f"runs = {runs}; at least 1 Monte-Carlo run is needed.")
    if job.work_h <= 0 or job.restart_overhead_h < 0 or job.checkpoint_cost_h < 0:
        raise InputError("work must be > 0 h; restart overhead and checkpoint cost >= 0 h.")
    if job.deadline_h is not None and job.deadline_h <= 0:
        raise InputError(f"deadline {job.deadline_h} h must be > 0.")
    if job.interval_h is not None and job.interval_h <= 0:
        raise InputError(f"checkpoint interval {job.interval_h} h must be > 0.")
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown:
        raise InputError(f"unknown spot strategies {unknown}. Allowed: {', '.join(STRATEGIES)}.")
    segments = max(job.work_h / job.tau_h(r) for r in job.regions) if job.regions else 0.0
    if segments > MAX_SEGMENTS_PER_RUN:
        raise InputError(
            f"{segments:,.0f} checkpoint intervals per run ({job.work_h:,.1f} h of work, interval "
            f"{min(job.tau_h(r) for r in job.regions):g} h) is more than the {MAX_SEGMENTS_PER_RUN:,} a run "
            "simulates; pass a longer --checkpoint-hours, or fewer tokens / more GPUs."
        )
    _check_progress(job, strategies)
    od_cost = (job.work_h + job.restart_overhead_h) * job.price_on_demand_usd_per_hour
    # the on-demand run is deterministic: it meets the deadline or it does not
    od_meets = job.deadline_h is None or job.work_h + job.restart_overhead_h <= job.deadline_h + 1e-9
    out = []
    for s in strategies:
        hours, costs, od_h, ints = [], [], [], []
        for k in range(1 if s == "on_demand" else runs):
            r = _simulate_one(job, s, make_rng(seed, k))
            hours.append(r.t)
            costs.append(r.cost)
            od_h.append(r.od_h)
            ints.append(r.interruptions)
        h = np.asarray(hours)
        c = np.asarray(costs)
        miss = float(np.mean(h > job.deadline_h + 1e-9)) if job.deadline_h is not None else None
        # a saving against on-demand only where both meet the deadline: a spot run finishing after it is
        # not a cheaper way to do the same job (was: "68.7 %" beside P(miss) 100 %)
        comparable = od_meets and (miss is None or miss <= MAX_DEADLINE_MISS)
        saving: float | None
        if not comparable:
            saving = None
        elif od_cost > 0 and abs(float(c.mean()) - od_cost) > 1e-9 * od_cost:
            saving = 1.0 - float(c.mean()) / od_cost
        else:  # the on-demand row against itself is 0, not a float residue shown as "-0.0 %"
            saving = 0.0
        out.append(
            StrategyOutcome(
                strategy=s,
                runs=len(h),
                expected_cost_usd=float(c.mean()),
                cost_p95_usd=percentile(c, 95),
                expected_hours=float(h.mean()),
                hours_p50=percentile(h, 50),
                hours_p95=percentile(h, 95),
                p_deadline_miss=miss,
                expected_interruptions=float(np.mean(ints)),
                expected_on_demand_hours=float(np.mean(od_h)),
                savings_vs_on_demand=saving,
                hours_samples=tuple(h.tolist()),
            )
        )
    return tuple(out)


def best_strategy(outcomes: Sequence[StrategyOutcome], max_miss: float = MAX_DEADLINE_MISS) -> str | None:
    ok = [o for o in outcomes if o.p_deadline_miss is None or o.p_deadline_miss <= max_miss]
    return min(ok, key=lambda o: o.expected_cost_usd).strategy if ok else None


# ------------------------------------------------------------------------------------------ from the catalog
#: bytes a training checkpoint holds per parameter: bf16 weights (2) + fp32 master weights (4) + Adam
#: moments (8); ZeRO (Rajbhandari et al. 2020) counts 16 B/param with the fp16 gradients, which a checkpoint
#: does not keep
CHECKPOINT_BYTES_PER_PARAM = 14.0
#: checkpoint write and restore bandwidth per node [bytes/s]: 2 GB/s, the cold-start load prior
#: (fleet-anchors F: 7B weights from fast NVMe in ~8 s); remote object stores are often slower: override it
CHECKPOINT_BANDWIDTH_BYTES_PER_S_PER_NODE = 2.0e9
#: tokens per optimizer step assumed when sizing the estimator's training step
DEFAULT_GLOBAL_BATCH = 256
DEFAULT_SEQ_LEN = 4096


@checked_arguments("spot simulation")
def simulate_spot(
    *,
    model: str,
    tokens: float,
    gpu: str = "h100",
    gpus: int | None = None,
    precision: str = "bf16",
    task: str = "pretrain",
    deadline_h: float | None = None,
    interruptions: str | None = None,
    provider: str | None = None,
    interval_h: float | None = None,
    strategies: Sequence[str] = STRATEGIES,
    runs: int = DEFAULT_RUNS,
    seed: int = 0,
    regions: int = 3,
    confidence: str = "p90",
) -> SpotResult:
    """Price a training run on spot by simulation (module doc): work from the estimator, prices from the
    catalog, hazards from ``cost/spot.py``'s assumptions or a SkyPilot availability trace.

    ``gpus`` None searches the layouts (:mod:`gpufleet.simulate.spot_search`): every count that fits is
    simulated (unless it provably cannot meet the deadline or beat a cheaper one found); the result is the
    cheapest that meets the deadline with P(miss) <= 5 % (without a deadline: the cheapest); ``layouts``
    lists them all with why each was chosen, missed or skipped."""
    kw: dict[str, Any] = {
        "model": model, "tokens": tokens, "gpu": gpu, "precision": precision, "task": task,
        "deadline_h": deadline_h, "interruptions": interruptions, "provider": provider,
        "interval_h": interval_h, "strategies": strategies, "runs": runs, "seed": seed, "regions": regions,
        "confidence": confidence,
    }  # fmt: skip
    kw.update(_checked_options(kw))  # once for every layout: each layout used to report the same bad option
    if gpus is not None:
        out = _spot_layout(gpus=gpus, **kw)
        assert isinstance(out, SpotResult)
        return out
    from gpufleet.simulate.spot_search import search_layouts

    return search_layouts(kw)


def _checked_options(kw: Mapping[str, Any]) -> dict[str, Any]:
    """The options every layout of :func:`simulate_spot` shares (``kw``: its arguments but ``gpus``), checked
    once before any layout and returned normalised (tokens, runs, regions, seed, deadline, checkpoint
    interval): checked per layout, ``--runs 0`` was reported ten times ("1 GPUs: --runs must be ...")."""
    strategies = kw["strategies"]
    if (
        isinstance(strategies, str)
        or not isinstance(strategies, Sequence)
        or not all(isinstance(s, str) for s in strategies)
    ):
        raise InputError(
            f"strategies must be a list of names, got {strategies!r}. Allowed: {', '.join(STRATEGIES)}."
        )
    for name in ("model", "gpu", "precision", "task"):
        if not isinstance(kw[name], str):
            raise InputError(f"{name} must be a name (string), got {kw[name]!r}.")
    provider = kw["provider"]
    if provider is not None and (not isinstance(provider, str) or not provider.strip()):
        raise InputError(
            f"provider must be a provider name such as aws (see `gpufleet catalog offers`), got "
            f"{provider!r}; leave it out to search every provider."
        )
    if kw["confidence"] not in CONFIDENCES:
        raise InputError(
            f"confidence {kw['confidence']!r} is not allowed: p90 (the default: the work at the slow end of "
            "the estimate's interval, as recommend checks deadlines) or p50 (the central estimate)."
        )
    return {
        "tokens": check_number("tokens", kw["tokens"], flag="--tokens"),
        "runs": check_count("runs", kw["runs"], maximum=MAX_RUNS, flag="--runs"),
        "regions": check_count("regions", kw["regions"], maximum=1000),
        "seed": check_count("seed", kw["seed"], minimum=0, maximum=2**63 - 1, flag="--seed"),
        "deadline_h": check_number("deadline_h", kw["deadline_h"], flag="--deadline-hours", allow_none=True),
        "interval_h": check_number(
            "interval_h", kw["interval_h"], flag="--checkpoint-hours", maximum=MAX_HOURS, allow_none=True
        ),
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class _Dry:
    """What a layout needs before simulating it: work, nodes, restart, and the cheapest price any strategy
    pays per hour of work (the least of the on-demand and the regions' spot prices) [USD/h]."""

    work_h: float
    nodes: int
    restart_overhead_h: float
    spot_floor_usd_per_hour: float


def _spot_layout(
    *,
    model: str,
    tokens: float,
    gpu: str = "h100",
    gpus: int = 8,
    dry: bool = False,
    node_gpus: int | None = None,
    precision: str = "bf16",
    task: str = "pretrain",
    deadline_h: float | None = None,
    interruptions: str | None = None,
    provider: str | None = None,
    interval_h: float | None = None,
    strategies: Sequence[str] = STRATEGIES,
    runs: int = DEFAULT_RUNS,
    seed: int = 0,
    regions: int = 3,
    confidence: str = "p90",
) -> SpotResult | _Dry:
    """One layout of :func:`simulate_spot`; ``dry``: only what it needs (no simulation)."""
    from gpufleet.catalog.offers import Offer, load_offers
    from gpufleet.cost.spot import assumption_for, expected_wall_time_factor, load_spot_assumptions
    from gpufleet.cost.startup import DEFAULT_IMAGE_PULL_S, DEFAULT_PROVISIONING_S
    from gpufleet.estimate.performance import estimate_training
    from gpufleet.models import count_params, resolve_model
    from gpufleet.simulate.spot_traces import read_spot_trace
    from gpufleet.units import SECONDS_PER_HOUR

    # the shared options were checked and normalised once by simulate_spot (_checked_options)
    gpus = check_count("gpus", gpus, flag="--gpus")  # type: ignore[assignment]
    arch = resolve_model(model)
    est = estimate_training(
        model=arch,
        task=task,
        gpu=gpu,
        precision=precision,
        gpu_count=gpus,
        global_batch=DEFAULT_GLOBAL_BATCH,
        seq_len=DEFAULT_SEQ_LEN,
        train_tokens=tokens,  # fewer tokens than one step of the assumed batch is refused there
    )
    if not est.fits or est.tokens_per_s is None:
        raise InputError(
            f"{arch.id} ({task}, {precision}) does not fit on {gpus} x {gpu}. Use more GPUs (--gpus) or a "
            "larger GPU (--gpu)."
        )
    # the deadline is met at the stated confidence, as recommend checks it (README "SLOs at a stated
    # percentile"): p90 = the work at the slow end of the estimate's interval (its p10 throughput)
    rate = est.tokens_per_s.p10 if confidence == "p90" else est.tokens_per_s.central
    work_h = tokens / rate / SECONDS_PER_HOUR
    work_central_h = tokens / est.tokens_per_s.central / SECONDS_PER_HOUR
    table = (
        load_offers().filter(gpu=gpu, spot=True, provider=provider)
        if provider
        else load_offers().filter(gpu=gpu, spot=True)
    )
    offers = [o for o in table.records() if o.gpu_count >= 1 and o.price_spot_usd_per_hour is not None]
    if not offers:
        raise InputError(
            f"no catalog offer of {gpu} has a spot price{' at ' + provider if provider else ''}."
        )

    def per_gpu_spot(o: Offer) -> float:
        return (o.price_spot_usd_per_hour or 0.0) / o.gpu_count

    if node_gpus is not None:  # the layout search: whole nodes of this size only
        offers = [o for o in offers if int(o.gpu_count) == node_gpus]
        if not offers:
            raise InputError(f"no catalog spot offer of a {node_gpus}-GPU {gpu} node")
    # prefer one node of exactly ``gpus`` GPUs (no cross-node interruptions), else whole nodes of the largest
    # size dividing ``gpus`` (fewest nodes: 16 GPUs as two 8-GPU nodes, not sixteen 1-GPU machines), then
    # the cheapest per GPU
    offers.sort(
        key=lambda o: (
            int(o.gpu_count) != gpus,
            gpus % int(o.gpu_count) != 0,
            -int(o.gpu_count) if gpus % int(o.gpu_count) == 0 else 0,
            per_gpu_spot(o),
            o.provider,
            o.region,
            o.instance_type,
        )
    )
    first = offers[0]
    per_node = int(first.gpu_count)
    nodes = math.ceil(gpus / per_node)
    picked = [first]
    for o in offers[1:]:
        if len(picked) >= regions:
            break
        if int(o.gpu_count) == per_node and all(
            (o.provider, o.region) != (p.provider, p.region) for p in picked
        ):
            picked.append(o)
    od_price = first.price_on_demand_usd_per_hour * nodes
    ckpt_bytes = count_params(arch).total * CHECKPOINT_BYTES_PER_PARAM
    io_h = ckpt_bytes / (nodes * CHECKPOINT_BANDWIDTH_BYTES_PER_S_PER_NODE) / SECONDS_PER_HOUR
    restart_h = (DEFAULT_PROVISIONING_S + DEFAULT_IMAGE_PULL_S) / SECONDS_PER_HOUR + io_h
    if dry:
        return _Dry(
            work_h=work_h,
            nodes=nodes,
            restart_overhead_h=restart_h,
            spot_floor_usd_per_hour=min(
                first.price_on_demand_usd_per_hour * nodes,
                *((o.price_spot_usd_per_hour or 0.0) * nodes for o in picked),
            ),
        )
    assumptions = load_spot_assumptions()
    trace = read_spot_trace(interruptions) if interruptions else None
    region_list = []
    for o in picked:
        a = assumption_for(o.provider, assumptions)
        spot_price = (o.price_spot_usd_per_hour or 0.0) * nodes
        if trace is not None:
            region_list.append(
                Region(
                    name=f"{o.provider}/{o.region}",
                    price_spot_usd_per_hour=spot_price,
                    availability=trace.capacity,
                    tick_h=trace.gap_s / SECONDS_PER_HOUR,
                    nodes=nodes,
                )
            )
        else:
            region_list.append(
                Region(
                    name=f"{o.provider}/{o.region}",
                    price_spot_usd_per_hour=spot_price,
                    mtbi_h=1.0 / (a.interruptions_per_h * nodes),
                )
            )
    job = SpotJob(
        work_h=work_h,
        price_on_demand_usd_per_hour=od_price,
        regions=tuple(region_list),
        restart_overhead_h=restart_h,
        checkpoint_cost_h=io_h,
        interval_h=interval_h,
        deadline_h=deadline_h,
    )
    outcomes = simulate_spot_job(job, strategies=strategies, runs=runs, seed=seed)
    tau = job.tau_h(region_list[0])
    r0 = region_list[0]
    closed = None
    if trace is None and math.isfinite(r0.mtbi_h) and math.isfinite(tau):
        closed = expected_wall_time_factor(
            interruptions_per_h=1.0 / r0.mtbi_h,
            checkpoint_cost_h=io_h,
            restart_overhead_h=restart_h,
            interval_h=tau,
        )
        if not math.isfinite(closed):  # the first-order model breaks down: interruptions outpace progress
            closed = None
    notes = [
        (
            f"Work {work_h:.1f} h on {gpus} x {gpu} at the p90 of the estimate ({rate:,.0f} tokens/s, its "
            f"p10; central {work_central_h:.1f} h at {est.tokens_per_s.central:,.0f} tokens/s): the deadline "
            "and the on-demand fallback hold if the run is as slow as the estimate's pessimistic end "
            "(--confidence p50: the central)."
            if confidence == "p90"
            else f"Work {work_h:.1f} h on {gpus} x {gpu} from the estimator's central "
            f"{est.tokens_per_s.central:,.0f} tokens/s (--confidence p50: a slower run than the central "
            "estimate can miss the deadline; p90 is the default)."
        ),
        f"Checkpoint {ckpt_bytes / 1e9:.0f} GB ({CHECKPOINT_BYTES_PER_PARAM:g} B/param) at "
        f"{CHECKPOINT_BANDWIDTH_BYTES_PER_S_PER_NODE / 1e9:g} GB/s per node: C = {io_h * 60:.1f} min; "
        f"restart R = provisioning + image pull + restore = {restart_h * 60:.1f} min.",
        "Interruptions: "
        + (
            f"trace {interruptions}"
            if trace
            else f"memoryless hazard, MTBI {r0.mtbi_h:.2f} h for the job "
            f"({nodes} node(s); cost/spot.py assumptions)."
        ),
    ]
    no_saving = [o.strategy for o in outcomes if o.savings_vs_on_demand is None]
    if no_saving:
        notes.append(
            f"Savings n/a for {', '.join(no_saving)}: "
            + (
                f"on demand needs {work_h + restart_h:.1f} h, past the {deadline_h:g} h deadline, so no "
                "saving is stated against it."
                if deadline_h is not None and work_h + restart_h > deadline_h + 1e-9
                else f"P(miss) above {MAX_DEADLINE_MISS:.0%}: a run that finishes after the {deadline_h:g} h "
                "deadline is not a cheaper way to do the same job."
            )
        )
    return SpotResult(
        confidence=confidence,
        model=arch.id,
        offer=f"{first.provider}/{first.region}/{first.instance_type}",
        gpus=gpus,
        nodes=nodes,
        work_h=work_h,
        deadline_h=deadline_h,
        restart_overhead_h=restart_h,
        checkpoint_cost_h=io_h,
        interval_h=tau,
        seed=seed,
        interruption_source=interruptions or "hazard",
        outcomes=outcomes,
        best=best_strategy(outcomes),
        closed_form_wall_time_factor=closed,
        notes=tuple(notes),
    )
