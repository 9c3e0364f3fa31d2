"""Autoscaling policies as the real controllers compute them (parameters and defaults: fleet-anchors F).

Every policy is a frozen config; :meth:`controller` makes the per-run state. The simulator asks the
controller for a desired replica count every ``tick_s``, handing it the metrics at that instant and exact
time-weighted window means (:class:`Metrics`); min/max replicas are applied by the simulator.

* ``static``: a fixed count.
* ``scheduled``: a count by hour of day (the trace's clock), optionally ``lead_s`` early to hide cold starts.
* ``hpa`` (Kubernetes HPA): ``desired = ceil(current x metric / target)``, no change within the tolerance
  (0.1), scale-down to the highest recommendation of the stabilisation window (300 s), sync period 15 s;
  scale-up limited per 15 s period to the larger of +100 % and +4 pods (the default ``behavior.scaleUp``).
  Metric ``kv_usage`` (vLLM ``kv_cache_usage_perc``, mean over ready replicas) or ``concurrency``
  (in-flight requests per ready replica); replicas not yet ready count as 0 for scale-up, as the HPA
  treats unready pods.
* ``kpa`` (Knative KPA): desired = ceil(mean concurrency over the stable window 60 s / target); panic
  window 10 % of it (6 s): when the panic desired count >= 200 % of ready replicas, panic mode scales on the
  panic window and never down until a stable window passes without panic; max scale-up rate 1000x, max
  scale-down rate 2x per 2 s tick. Target = container concurrency x target utilisation 70 %.
* ``ray`` (Ray Serve): desired = ceil(mean ongoing requests over ``look_back_period_s`` 30 s /
  ``target_ongoing_requests``); a change upward is applied only after it persisted ``upscale_delay_s`` 30 s,
  downward after ``downscale_delay_s`` 600 s; decisions every ``metrics_interval_s`` 10 s.
* ``queue`` (KEDA on ``vllm:num_requests_waiting``): add ceil(waiting / per-replica capacity) replicas when
  the mean queue over 30 s exceeds ``target_waiting`` per ready replica; after ``cooldown_s`` (KEDA
  ``cooldownPeriod`` 300 s) with an empty queue, scale down to the replicas that hold the in-flight work at
  ``scale_down_utilisation`` 0.5 of the batch cap.

Concurrency targets default (None) to 70 % of the replica's batch cap (KV / engine bound), the Knative
target-utilisation rule applied to an LLM replica's real concurrency limit; Ray Serve's generic default
``target_ongoing_requests = 2`` suits non-batching deployments and is available by passing it.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field, fields
from typing import Protocol

from gpufleet.errors import InputError
from gpufleet.units import SECONDS_PER_HOUR
from gpufleet.validation import MAX_GPUS, checked_arguments

#: Knative ``container-concurrency-target-percentage`` default 70 %
KNATIVE_TARGET_UTILISATION = 0.7
POLICIES = ("static", "scheduled", "hpa", "kpa", "ray", "queue")


class Metrics:
    """What the controllers read, recorded only at decision times (no per-second sampler).

    ``in_flight`` (running + waiting requests) and ``waiting`` (queued, not running) are piecewise constant
    between simulator events; the simulator keeps their time integrals and hands them over at each decision
    (:meth:`checkpoint`), so a window mean is the exact time-weighted mean over ``[now - w, now]`` (Knative
    and Ray Serve average per-second scrapes of the same signal; the exact mean is their limit).
    ``kv_usage`` (vLLM's ``kv_cache_usage_perc`` gauge) and ``ready`` are read at the decision instant, as a
    Prometheus scrape of a gauge would be; their window mean is over the decisions inside the window.
    """

    __slots__ = ("_i_flight", "_i_wait", "_kv", "_now_flight", "_now_wait", "_ready", "_t")

    def __init__(self) -> None:
        self._t: deque[float] = deque(maxlen=4000)
        self._i_flight: deque[float] = deque(maxlen=4000)  # integral of in-flight requests [request s]
        self._i_wait: deque[float] = deque(maxlen=4000)  # integral of waiting requests [request s]
        self._kv: deque[float] = deque(maxlen=4000)  # mean KV-cache fill of ready replicas [0..1]
        self._ready: deque[float] = deque(maxlen=4000)  # ready replicas [count]
        self._now_flight = 0.0
        self._now_wait = 0.0

    def checkpoint(
        self,
        t: float,
        *,
        in_flight_integral: float,
        waiting_integral: float,
        in_flight: float,
        waiting: float,
        kv_usage: float,
        ready: float,
    ) -> None:
        """Record the state at decision time ``t`` [s] (integrals from time 0 [request s])."""
        self._t.append(t)
        self._i_flight.append(in_flight_integral)
        self._i_wait.append(waiting_integral)
        self._kv.append(kv_usage)
        self._ready.append(ready)
        self._now_flight = in_flight
        self._now_wait = waiting

    def add(self, t: float, in_flight: float, waiting: float, kv_usage: float, ready: float) -> None:
        """A sample held constant since the previous one (for controllers driven outside the simulator)."""
        prev_t = self._t[-1] if self._t else t
        dt = t - prev_t
        self.checkpoint(
            t,
            in_flight_integral=(self._i_flight[-1] if self._t else 0.0) + self._now_flight * dt,
            waiting_integral=(self._i_wait[-1] if self._t else 0.0) + self._now_wait * dt,
            in_flight=in_flight,
            waiting=waiting,
            kv_usage=kv_usage,
            ready=ready,
        )

    def _integral_at(self, series: deque[float], t: float) -> float | None:
        """The integral at time ``t`` (linear between checkpoints; None before the first one)."""
        times = self._t
        k = len(times) - 1
        while k >= 0 and times[k] > t:
            k -= 1
        if k < 0:
            return None
        if k == len(times) - 1 or times[k] == t:
            return series[k]
        t0, t1 = times[k], times[k + 1]
        return series[k] + (series[k + 1] - series[k]) * (t - t0) / (t1 - t0)

    def mean(self, series: str, window_s: float, now: float) -> float:
        """Mean of ``series`` over the last ``window_s`` [s] before ``now`` (the latest checkpoint)."""
        if not self._t:
            return 0.0
        if series in ("in_flight", "waiting"):
            data = self._i_flight if series == "in_flight" else self._i_wait
            first = self._t[0]
            start = max(now - window_s, first)
            if now - start <= 0:
                return self._now_flight if series == "in_flight" else self._now_wait
            lo = self._integral_at(data, start)
            if lo is None:
                return 0.0
            return (data[-1] - lo) / (now - start)
        values = self._kv if series == "kv_usage" else self._ready
        total = 0.0
        n = 0
        for t, v in zip(reversed(self._t), reversed(values), strict=False):
            if t <= now - window_s:
                break
            total += v
            n += 1
        return total / n if n else 0.0


class Controller(Protocol):
    def desired(self, now: float, current: int, ready: int, m: Metrics) -> int: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class StaticPolicy:
    replicas: int = 1
    tick_s: float = 60.0
    name: str = "static"

    def controller(self, capacity: int, time_of_day_s: float) -> Controller:
        n = self.replicas
        return _Fixed(n)

    def initial(self, capacity: int) -> int:
        return self.replicas


@dataclass(slots=True)
class _Fixed:
    n: int

    def desired(self, now: float, current: int, ready: int, m: Metrics) -> int:
        return self.n


@dataclass(frozen=True, slots=True, kw_only=True)
class ScheduledPolicy:
    schedule: tuple[tuple[float, int], ...] = ((0.0, 1),)  # (hour of day it starts, replicas)
    lead_s: float = 0.0
    tick_s: float = 60.0
    name: str = "scheduled"

    def __post_init__(self) -> None:
        if not self.schedule or any(not 0 <= h < 24 or not 0 <= n <= MAX_GPUS for h, n in self.schedule):
            raise InputError(
                f"a schedule is (hour 0-24, replicas 0 to {MAX_GPUS:,}) pairs, e.g. 0:2,9:6,18:3."
            )
        hours = [h for h, _ in self.schedule]
        if len(set(hours)) != len(hours):
            raise InputError(
                f"the schedule names an hour twice ({sorted(h for h in set(hours) if hours.count(h) > 1)}); "
                "give each starting hour once, e.g. 0:2,9:6,18:3."
            )

    def count_at(self, clock_s: float) -> int:
        hour = (clock_s / SECONDS_PER_HOUR) % 24.0
        ordered = sorted(self.schedule)
        count = ordered[-1][1]  # before the first start of the day: the previous day's last entry
        for h, n in ordered:
            if h <= hour:
                count = n
        return count

    def controller(self, capacity: int, time_of_day_s: float) -> Controller:
        return _Scheduled(self, time_of_day_s)

    def initial(self, capacity: int) -> int:
        return 0  # the controller sets it at t = 0


@dataclass(slots=True)
class _Scheduled:
    p: ScheduledPolicy
    t0: float

    def desired(self, now: float, current: int, ready: int, m: Metrics) -> int:
        return self.p.count_at(self.t0 + now + self.p.lead_s)


@dataclass(frozen=True, slots=True, kw_only=True)
class HpaPolicy:
    metric: str = "concurrency"  # concurrency | kv_usage
    target: float | None = None  # in-flight requests per replica (None: 70 % of the batch cap) or KV fraction
    tolerance: float = 0.1
    scale_down_stabilisation_s: float = 300.0
    #: default ``behavior.scaleUp`` (kubernetes.io "Horizontal Pod Autoscaling", Default Behavior): policies
    #: Percent 100 and Pods 4 per periodSeconds 15, selectPolicy Max, so at most max(2x, +4) replicas more
    #: than at the start of each 15 s period (1 -> 5 -> 10 -> 20, not 1 -> 20 in one sync)
    scale_up_percent: float = 100.0
    scale_up_pods: float = 4.0
    scale_up_period_s: float = 15.0
    tick_s: float = 15.0
    name: str = "hpa"

    def __post_init__(self) -> None:
        if self.metric not in ("kv_usage", "concurrency"):
            raise InputError(f"HPA metric {self.metric!r}: allowed kv_usage, concurrency.")
        if (self.target is not None and self.target <= 0) or self.tolerance < 0:
            raise InputError("HPA target must be > 0 and tolerance >= 0.")
        if self.metric == "kv_usage" and self.target is not None and self.target > 1:
            raise InputError(
                f"HPA target {self.target:g} with metric kv_usage: the KV-cache usage is a fraction 0-1, so "
                "the target is never reached and the policy never scales up. Give a fraction such as "
                "target=0.8."
            )
        if self.scale_up_percent < 0 or self.scale_up_pods < 0 or self.scale_up_period_s <= 0:
            raise InputError(
                "HPA scale-up policy: scale_up_percent and scale_up_pods must be >= 0 and scale_up_period_s "
                "> 0 (Kubernetes defaults: 100, 4, 15)."
            )

    def controller(self, capacity: int, time_of_day_s: float) -> Controller:
        default = KNATIVE_TARGET_UTILISATION * (capacity if self.metric == "concurrency" else 1.0)
        return _Hpa(self, self.target or default)

    def initial(self, capacity: int) -> int:
        return 1


@dataclass(slots=True)
class _Hpa:
    p: HpaPolicy
    target: float
    recs: deque[tuple[float, int]] = field(default_factory=deque)
    #: (time, replicas) at each sync within the last scale-up period: the period's starting count
    seen: deque[tuple[float, int]] = field(default_factory=deque)

    def _up_limit(self, now: float, current: int) -> int:
        """Most replicas the default scale-up policies allow now: the larger of start x (1 + percent) and
        start + pods, where start is the count at the beginning of the current period (Kubernetes HPA
        ``behavior.scaleUp``, selectPolicy Max)."""
        self.seen.append((now, current))
        while self.seen and self.seen[0][0] <= now - self.p.scale_up_period_s:
            self.seen.popleft()
        start = min(c for _, c in self.seen)
        by_percent = math.ceil(start * (1.0 + self.p.scale_up_percent / 100.0))
        return max(by_percent, start + math.floor(self.p.scale_up_pods), current)

    def desired(self, now: float, current: int, ready: int, m: Metrics) -> int:
        limit = self._up_limit(now, current)
        if self.p.metric == "kv_usage":
            per_ready = m.mean("kv_usage", self.p.tick_s, now)
        else:
            per_ready = m.mean("in_flight", self.p.tick_s, now) / max(ready, 1)
        # pods not yet ready count as 0 % for scale-up (the HPA's conservative rule for unready pods)
        usage = per_ready * ready / max(current, 1)
        ratio = usage / self.target
        rec = current if abs(ratio - 1.0) <= self.p.tolerance else math.ceil(max(current, 1) * ratio)
        self.recs.append((now, rec))
        while self.recs and self.recs[0][0] < now - self.p.scale_down_stabilisation_s:
            self.recs.popleft()
        if rec < current:  # scale down only to the highest recommendation of the window
            return min(current, max(r for _, r in self.recs))
        return min(rec, limit)


@dataclass(frozen=True, slots=True, kw_only=True)
class KpaPolicy:
    target_concurrency: float | None = None  # per replica; None: 70 % of the batch cap
    stable_window_s: float = 60.0
    panic_window_percentage: float = 10.0
    panic_threshold_percentage: float = 200.0
    max_scale_up_rate: float = 1000.0
    max_scale_down_rate: float = 2.0
    tick_s: float = 2.0
    name: str = "kpa"

    def controller(self, capacity: int, time_of_day_s: float) -> Controller:
        target = self.target_concurrency or KNATIVE_TARGET_UTILISATION * capacity
        return _Kpa(self, max(target, 1e-9))

    def initial(self, capacity: int) -> int:
        return 1


@dataclass(slots=True)
class _Kpa:
    p: KpaPolicy
    target: float
    panic_until: float = -math.inf

    def desired(self, now: float, current: int, ready: int, m: Metrics) -> int:
        stable = m.mean("in_flight", self.p.stable_window_s, now)
        panic = m.mean("in_flight", self.p.stable_window_s * self.p.panic_window_percentage / 100.0, now)
        want_stable = math.ceil(stable / self.target)
        want_panic = math.ceil(panic / self.target)
        if ready and want_panic / ready >= self.p.panic_threshold_percentage / 100.0:
            self.panic_until = now + self.p.stable_window_s
        base = max(ready, 1)
        up_cap = math.ceil(base * self.p.max_scale_up_rate)
        down_floor = math.floor(base / self.p.max_scale_down_rate)
        if now < self.panic_until:  # panic: scale on the short window, never down
            return max(current, min(want_panic, up_cap))
        if now < self.p.stable_window_s:  # no full window of data yet: scale up only
            return max(current, min(want_stable, up_cap))
        return max(min(want_stable, up_cap), down_floor)


@dataclass(frozen=True, slots=True, kw_only=True)
class RayServePolicy:
    target_ongoing_requests: float | None = None  # None: 70 % of the batch cap
    look_back_period_s: float = 30.0
    upscale_delay_s: float = 30.0
    downscale_delay_s: float = 600.0
    tick_s: float = 10.0  # metrics_interval_s
    name: str = "ray"

    def controller(self, capacity: int, time_of_day_s: float) -> Controller:
        target = self.target_ongoing_requests or KNATIVE_TARGET_UTILISATION * capacity
        return _Ray(self, max(target, 1e-9))

    def initial(self, capacity: int) -> int:
        return 1


@dataclass(slots=True)
class _Ray:
    p: RayServePolicy
    target: float
    up_since: float | None = None
    down_since: float | None = None

    def desired(self, now: float, current: int, ready: int, m: Metrics) -> int:
        want = math.ceil(m.mean("in_flight", self.p.look_back_period_s, now) / self.target)
        if want > current:
            self.down_since = None
            self.up_since = now if self.up_since is None else self.up_since
            return want if now - self.up_since >= self.p.upscale_delay_s else current
        if want < current and now >= self.p.look_back_period_s:
            self.up_since = None
            self.down_since = now if self.down_since is None else self.down_since
            return want if now - self.down_since >= self.p.downscale_delay_s else current
        self.up_since = self.down_since = None
        return current


@dataclass(frozen=True, slots=True, kw_only=True)
class QueuePolicy:
    target_waiting: float = 1.0  # queued requests per ready replica tolerated
    window_s: float = 30.0
    cooldown_s: float = 300.0
    scale_down_utilisation: float = 0.5
    tick_s: float = 15.0
    name: str = "queue"

    def controller(self, capacity: int, time_of_day_s: float) -> Controller:
        return _Queue(self, capacity)

    def initial(self, capacity: int) -> int:
        return 1


@dataclass(slots=True)
class _Queue:
    p: QueuePolicy
    capacity: int
    quiet_since: float | None = None

    def desired(self, now: float, current: int, ready: int, m: Metrics) -> int:
        waiting = m.mean("waiting", self.p.window_s, now)
        if waiting > self.p.target_waiting * max(ready, 1):
            self.quiet_since = None
            return current + max(1, math.ceil(waiting / self.capacity))
        if m.mean("waiting", self.p.window_s, now) > 0:
            self.quiet_since = None
            return current
        self.quiet_since = now if self.quiet_since is None else self.quiet_since
        needed = math.ceil(
            m.mean("in_flight", self.p.window_s, now) / (self.p.scale_down_utilisation * self.capacity)
        )
        if now - self.quiet_since >= self.p.cooldown_s and needed < current:
            return needed
        return current


Policy = StaticPolicy | ScheduledPolicy | HpaPolicy | KpaPolicy | RayServePolicy | QueuePolicy


#: Largest value of a numeric policy parameter: 10^9 (seconds: ~30 years; requests per replica: far beyond any
#: engine's batch cap); a bound against typos such as 1e300.
MAX_POLICY_PARAM = 1e9
#: Shortest controller tick accepted [s]. The controller wakes every ``tick_s`` until the trace is served:
#: ``tick_s=0`` never advanced the clock (the command hung) and 1e-9 s made ~10^10 wake-ups. Controllers tick
#: every 2 s (Knative KPA) to 15 s (Kubernetes HPA sync period); 1 s is finer than any of them.
MIN_TICK_S = 1.0
#: Parameters that divide or set a window, a rate or a target: 0 is no setting of theirs (``target_concurrency
#: = 0`` silently meant the default, ``scale_down_utilisation = 0`` divided by zero), so they must be > 0.
POSITIVE_POLICY_PARAMS = frozenset(
    {
        "target",
        "target_concurrency",
        "target_ongoing_requests",
        "stable_window_s",
        "panic_window_percentage",
        "panic_threshold_percentage",
        "max_scale_up_rate",
        "max_scale_down_rate",
        "look_back_period_s",
        "window_s",
        "scale_down_utilisation",
    }
)


_POLICY_CLASSES: dict[str, type] = {}


def policy_parameters(name: str, *, spot: bool = False) -> tuple[str, ...]:
    """The parameters policy ``name`` acts on (empty for an unknown name). A static policy's ``tick_s`` only
    paces replacements of interrupted spot replicas, so it acts only with ``spot`` (a spot share > 0)."""
    if not _POLICY_CLASSES:
        _POLICY_CLASSES.update(
            static=StaticPolicy,
            scheduled=ScheduledPolicy,
            hpa=HpaPolicy,
            kpa=KpaPolicy,
            ray=RayServePolicy,
            queue=QueuePolicy,
        )
    cls = _POLICY_CLASSES.get(name)
    if cls is None:
        return ()
    out = tuple(f.name for f in fields(cls) if f.name != "name")
    if name == "static" and not spot:
        out = tuple(k for k in out if k != "tick_s")
    return out


@checked_arguments("autoscaling policy")
def make_policy(name: str, **params: float | str | tuple[tuple[float, int], ...] | None) -> Policy:
    """A policy by name with keyword parameters (the dataclass fields)."""
    classes: dict[str, type] = {
        "static": StaticPolicy,
        "scheduled": ScheduledPolicy,
        "hpa": HpaPolicy,
        "kpa": KpaPolicy,
        "ray": RayServePolicy,
        "queue": QueuePolicy,
    }
    if not isinstance(name, str) or name not in classes:
        raise InputError(f"autoscaling policy {name!r} is unknown. Allowed: {', '.join(POLICIES)}.")
    cls = classes[name]
    allowed = [f.name for f in fields(cls) if f.name != "name"]
    unknown = [k for k in params if k not in allowed]
    if unknown:
        raise InputError(f"policy {name}: unknown parameters {unknown}. Allowed: {', '.join(allowed)}.")
    for k, v in params.items():
        if isinstance(v, bool) or (
            isinstance(v, int | float) and not (math.isfinite(v) and 0 <= v <= MAX_POLICY_PARAM)
        ):
            raise InputError(
                f"policy {name}: parameter {k} = {v!r} must be a finite number from 0 to "
                f"{MAX_POLICY_PARAM:g} (seconds, requests per replica or a fraction)."
            )
        if isinstance(v, int | float) and k == "tick_s" and v < MIN_TICK_S:
            raise InputError(
                f"policy {name}: parameter tick_s = {v!r} is below the shortest controller tick of "
                f"{MIN_TICK_S:g} s (KPA ticks every 2 s, HPA every 15 s). Give tick_s >= {MIN_TICK_S:g}."
            )
        if isinstance(v, int | float) and k in POSITIVE_POLICY_PARAMS and v <= 0:
            raise InputError(
                f"policy {name}: parameter {k} = {v!r} must be > 0 (0 sets no {k}); give a positive value, "
                "or leave the parameter out for its default."
            )
    policy: Policy = cls(**params)
    return policy
