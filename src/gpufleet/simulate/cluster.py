"""The serving replay on the discrete-event core: a shared FIFO queue in front of autoscaled replicas.

Each replica runs continuous (iteration-level) batching, vLLM's default scheduler without chunked prefill:

1. when it has room it admits queued requests in arrival order while the KV cache (``input + output``
   tokens reserved per request), the batch cap and the prefill token budget allow (head-of-line: never
   skipping the head);
2. it prefills the admitted group in one pass (decode pauses; the first token comes out of the prefill:
   TTFT = queue wait + prefill);
3. it decodes all running sequences, one token each per step of ``step(b)`` seconds, until the next one
   finishes or an arrival it can admit interrupts the step (progress is kept as a fraction of a step).

Work is counted in tokens as real numbers: a sequence finishes after ``output - 1`` decode steps. With a
batch cap of 1 and zero prefill, each replica is a single server whose service time is ``output x step``:
the M/M/c check (tests) replays exponential work through it.

The router is the shared queue: an arrival wakes the idle ready replica with the lowest index (which
then admits that one request, so that a burst spreads over the idle replicas), or
interrupts the decoding replica with the fewest running sequences that can admit it. Spot replicas get an
interruption notice (drawn from the hazard); they stop admitting, a replacement is started, and at the end
of the notice their unfinished requests return to the head of the queue (restarted; a first token already
streamed is kept for TTFT).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from gpufleet.simulate.core import interrupt_type, make_rng, new_environment
from gpufleet.simulate.policies import Metrics, Policy, ScheduledPolicy
from gpufleet.simulate.serving import ServiceModel
from gpufleet.simulate.traces import RequestTrace

_STARTING, _READY, _DRAINING, _STOPPED = 0, 1, 2, 3
_EPS = 1e-9
#: the replay gives up this long after the last arrival [s]; unfinished requests count as SLO misses
HORIZON_AFTER_LAST_ARRIVAL_S = 6 * 3600.0


@dataclass(frozen=True, slots=True, kw_only=True)
class SpotSetting:
    share: float = 0.0  # fraction of replicas on spot [0..1]
    mean_time_between_interruptions_s: float = math.inf
    notice_s: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class RawRun:
    """Everything the replay measured; summarised by :mod:`gpufleet.simulate.autoscale`."""

    admit_s: npt.NDArray[np.float64]
    first_token_s: npt.NDArray[np.float64]
    done_s: npt.NDArray[np.float64]
    cold_hit: npt.NDArray[np.bool_]
    replica_seconds: float
    spot_replica_seconds: float
    scale_events: tuple[tuple[float, int, int], ...]  # (time [s], from, to)
    interruptions: int
    requeued: int
    sample_t: npt.NDArray[np.float64]  # per-second samples
    sample_replicas: npt.NDArray[np.float64]  # replicas billed (starting + ready + draining)
    sample_ready: npt.NDArray[np.float64]
    sample_in_flight: npt.NDArray[np.float64]
    end_s: float


class _Replica:
    __slots__ = (
        "G",
        "cl",
        "cold_s",
        "decoding",
        "doomed",
        "idx",
        "kicked",
        "kv",
        "limit",
        "proc",
        "running",
        "spot",
        "started_s",
        "state",
        "wake",
    )

    def __init__(self, cl: _Cluster, idx: int, spot: bool, cold_s: float) -> None:
        self.cl = cl
        self.cold_s = cold_s
        self.doomed = False  # a terminating interrupt (cancel, kill) was sent
        self.idx = idx
        self.spot = spot
        self.state = _STARTING
        self.G = 0.0  # tokens decoded per running sequence since start (a virtual clock)
        self.kv = 0.0  # KV tokens reserved
        self.running: list[tuple[float, int]] = []  # heap of (finish G, request)
        self.wake: Any = None
        self.decoding = False
        self.kicked = False
        self.limit = 0  # woken from idle for this many arrivals: admit at most that many at once
        self.started_s = cl.env.now
        self.proc = cl.env.process(self.run())

    def run(self) -> Any:
        cl = self.cl
        env = cl.env
        Interrupt = cl.Interrupt
        if self.cold_s > 0:
            try:
                yield env.timeout(self.cold_s)
            except Interrupt:
                cl.stop(self)
                return
        self.state = _READY
        cl.on_ready(self)
        steps = cl.steps
        while True:
            batch = cl.admit(self) if self.state == _READY else None
            if batch:
                try:
                    yield env.timeout(cl.prefill_group_s(batch))
                except Interrupt:
                    cl.kill(self, batch)
                    return
                cl.first_tokens(self, batch)
                continue
            if not self.running:
                if self.state == _DRAINING:
                    cl.stop(self)
                    return
                self.wake = env.event()
                try:
                    yield self.wake
                except Interrupt as exc:
                    self.wake = None
                    if getattr(exc, "cause", None) == "kill":
                        cl.kill(self, [])
                        return
                continue
            st = steps[len(self.running)]
            t0 = env.now
            self.decoding = True
            try:
                yield env.timeout((self.running[0][0] - self.G) * st)
            except Interrupt as exc:
                self.decoding = False
                self.kicked = False
                self.G += (env.now - t0) / st
                if getattr(exc, "cause", None) == "kill":
                    cl.kill(self, [])
                    return
                continue
            self.decoding = False
            self.G = self.running[0][0]
            cl.complete(self)


class _Cluster:
    def __init__(
        self,
        trace: RequestTrace,
        service: ServiceModel,
        policy: Policy,
        *,
        min_replicas: int,
        max_replicas: int,
        cold_start_s: float,
        spot: SpotSetting,
        seed: int,
        initial_replicas: int | None,
    ) -> None:
        self.env = new_environment()
        self.Interrupt = interrupt_type()
        self.rng = make_rng(seed)
        self.trace = trace
        self.service = service
        self.policy = policy
        self.min_r = min_replicas
        self.max_r = max_replicas
        self.cold_start_s = cold_start_s
        self.spot = spot
        n = len(trace)
        self.arrival = trace.arrival_s.tolist()
        self.out = trace.output_tokens.tolist()
        self.need = (trace.input_tokens + trace.output_tokens).tolist()
        self.prefill_alone = service.prefill_time_s(np.asarray(trace.input_tokens)).tolist()
        self.inp = trace.input_tokens.tolist()
        self.steps = service.step_table()
        self.cap_kv = service.kv_capacity_tokens
        self.cap_b = service.max_batch
        self.admit_s = [math.nan] * n
        self.first_s = [math.nan] * n
        self.done_s = [math.nan] * n
        self.cold = [False] * n
        self.queue: deque[int] = deque()
        self.replicas: list[_Replica] = []
        self.live: list[_Replica] = []  # not stopped, in creation order
        self.in_flight = 0
        self.done_count = 0
        self.replica_s = 0.0
        self.spot_s = 0.0
        self.events: list[tuple[float, int, int]] = []
        self.interruptions = 0
        self.requeued = 0
        self.metrics = Metrics()
        self.samples: list[tuple[float, int, int, int]] = []
        self.capacity = service.max_batch
        #: the replay stops this long after the last arrival even if requests are left (no capacity)
        self.horizon_s = trace.duration_s + HORIZON_AFTER_LAST_ARRIVAL_S
        self.finished = self.env.event()
        start = initial_replicas if initial_replicas is not None else policy.initial(self.capacity)
        for _ in range(self._clamp(start)):
            self.launch(initial=True)

    # --- replicas ----------------------------------------------------------------------------------------
    def _clamp(self, n: int) -> int:
        return max(self.min_r, min(self.max_r, n))

    def active(self) -> list[_Replica]:
        """Replicas that count toward the desired number (starting or ready; not draining)."""
        return [r for r in self.live if r.state in (_STARTING, _READY) and not r.doomed]

    def launch(self, initial: bool = False) -> None:
        act = self.active()
        n_spot = sum(r.spot for r in act)
        spot = n_spot < round(self.spot.share * (len(act) + 1))
        # a deployment that exists when the trace starts is already warm
        r = _Replica(self, len(self.replicas), spot, 0.0 if initial else self.cold_start_s)
        self.replicas.append(r)
        self.live.append(r)
        if spot and math.isfinite(self.spot.mean_time_between_interruptions_s):
            self.env.process(self._interrupter(r))

    def _interrupter(self, r: _Replica) -> Any:
        t = float(self.rng.exponential(self.spot.mean_time_between_interruptions_s))
        yield self.env.timeout(t)
        if r.doomed or r.state == _STOPPED:
            return
        self.interruptions += 1
        if r.state == _READY:  # the notice: stop admitting; the controller starts a replacement
            r.state = _DRAINING
            yield self.env.timeout(self.spot.notice_s)
        self.terminate(r, "kill")

    def terminate(self, r: _Replica, cause: str) -> None:
        if not r.doomed and r.state != _STOPPED:
            r.doomed = True
            r.proc.interrupt(cause)

    def on_ready(self, r: _Replica) -> None:
        for i in self.queue:
            self.cold[i] = True

    def stop(self, r: _Replica) -> None:
        if r.state == _STOPPED:
            return
        r.state = _STOPPED
        dt = self.env.now - r.started_s
        self.replica_s += dt
        if r.spot:
            self.spot_s += dt
        self.live.remove(r)

    def kill(self, r: _Replica, prefilling: list[int]) -> None:
        lost = sorted([i for _, i in r.running] + prefilling)
        r.running = []
        r.kv = 0.0
        for i in reversed(lost):
            self.queue.appendleft(i)
            self.admit_s[i] = math.nan
        self.requeued += len(lost)
        self.stop(r)
        for _ in lost:
            self.kick()

    def scale_to(self, want: int) -> None:
        act = self.active()
        cur = len(act)
        want = self._clamp(want)
        if want == cur:
            return
        self.events.append((self.env.now, cur, want))
        if want > cur:
            for _ in range(want - cur):
                self.launch()
            return
        surplus = cur - want
        # cancel starting replicas first (newest first), then drain the least busy ready ones
        for r in sorted(act, key=lambda r: (r.state != _STARTING, len(r.running), -r.idx)):
            if surplus == 0:
                break
            surplus -= 1
            if r.state == _STARTING:
                self.terminate(r, "cancel")
            else:
                r.state = _DRAINING
                if r.wake is not None and not r.running:
                    ev, r.wake = r.wake, None
                    ev.succeed()

    # --- requests ----------------------------------------------------------------------------------------
    def admit(self, r: _Replica) -> list[int]:
        q = self.queue
        if not q:
            return []
        batch: list[int] = []
        tokens = 0.0
        n_run = len(r.running)
        need = self.need
        while q:
            i = q[0]
            if r.kv + need[i] > self.cap_kv or n_run + len(batch) >= self.cap_b:
                break
            if r.limit and len(batch) >= r.limit:
                break
            if batch and tokens + self.inp[i] > self.service.max_prefill_tokens:
                break
            q.popleft()
            batch.append(i)
            tokens += self.inp[i]
            r.kv += need[i]
            self.admit_s[i] = self.env.now
        r.limit = 0
        return batch

    def prefill_group_s(self, batch: list[int]) -> float:
        pa = self.prefill_alone
        return float(sum(pa[i] for i in batch) - (len(batch) - 1) * self.service.step_overhead_s)

    def first_tokens(self, r: _Replica, batch: list[int]) -> None:
        now = self.env.now
        for i in batch:
            if math.isnan(self.first_s[i]):
                self.first_s[i] = now
            heapq.heappush(r.running, (r.G + self.out[i] - 1.0, i))
        if r.running and r.running[0][0] <= r.G + _EPS:
            self.complete(r)

    def complete(self, r: _Replica) -> None:
        now = self.env.now
        run = r.running
        limit = r.G + _EPS
        while run and run[0][0] <= limit:
            _, i = heapq.heappop(run)
            self.done_s[i] = now
            r.kv -= self.need[i]
            self.in_flight -= 1
            self.done_count += 1
        if self.done_count == len(self.arrival) and not self.finished.triggered:
            self.finished.succeed()
        if not run:
            r.kv = 0.0
            r.G = 0.0

    def kick(self) -> None:
        """Give the head of the queue to a replica that can take it now (see module doc)."""
        if not self.queue:
            return
        head = self.queue[0]
        need = self.need[head]
        best: _Replica | None = None
        for r in self.live:
            if r.state != _READY:
                continue
            if r.wake is not None:
                ev, r.wake = r.wake, None
                r.limit = 1  # spread a burst over the idle replicas, one arrival each
                ev.succeed()
                return
            if (
                r.decoding
                and not r.kicked
                and r.kv + need <= self.cap_kv
                and len(r.running) < self.cap_b
                and (best is None or len(r.running) < len(best.running))
            ):
                best = r
        if best is not None:
            best.kicked = True
            best.proc.interrupt("admit")

    # --- processes ---------------------------------------------------------------------------------------
    def arrivals(self) -> Any:
        env = self.env
        arr = self.arrival
        n = len(arr)
        k = 0
        while k < n:
            t = arr[k]
            if t > env.now:
                yield env.timeout(t - env.now)
            while k < n and arr[k] <= env.now:
                self.queue.append(k)
                self.in_flight += 1
                k += 1
                self.kick()

    def sampler(self) -> Any:
        env = self.env
        n = len(self.arrival)
        while self.done_count < n and env.now < self.horizon_s:
            ready = [r for r in self.live if r.state == _READY]
            kv = sum(r.kv for r in ready) / (len(ready) * self.cap_kv) if ready and self.cap_kv else 0.0
            self.metrics.add(env.now, self.in_flight, len(self.queue), kv, len(ready))
            self.samples.append((env.now, len(self.live), len(ready), self.in_flight))
            yield env.timeout(1.0)

    def controller(self) -> Any:
        env = self.env
        ctl = self.policy.controller(self.capacity, self.trace.start_time_of_day_s)
        n = len(self.arrival)
        if not isinstance(self.policy, ScheduledPolicy):
            yield env.timeout(self.policy.tick_s)  # the first decision needs a tick of metrics
        while self.done_count < n and env.now < self.horizon_s:
            act = self.active()
            ready = sum(r.state == _READY for r in act)
            self.scale_to(ctl.desired(env.now, len(act), ready, self.metrics))
            yield env.timeout(self.policy.tick_s)

    def _horizon(self) -> Any:
        yield self.env.timeout(self.horizon_s)
        if not self.finished.triggered:
            self.finished.succeed()

    def run(self) -> RawRun:
        env = self.env
        env.process(self.arrivals())
        env.process(self.sampler())
        env.process(self.controller())
        env.process(self._horizon())
        env.run(until=self.finished)
        end = env.now
        for r in list(self.live):
            self.stop(r)
        s = np.asarray(self.samples, dtype=np.float64).reshape(-1, 4)
        return RawRun(
            admit_s=np.asarray(self.admit_s),
            first_token_s=np.asarray(self.first_s),
            done_s=np.asarray(self.done_s),
            cold_hit=np.asarray(self.cold, dtype=bool),
            replica_seconds=self.replica_s,
            spot_replica_seconds=self.spot_s,
            scale_events=tuple(self.events),
            interruptions=self.interruptions,
            requeued=self.requeued,
            sample_t=s[:, 0],
            sample_replicas=s[:, 1],
            sample_ready=s[:, 2],
            sample_in_flight=s[:, 3],
            end_s=end,
        )


def replay(
    trace: RequestTrace,
    service: ServiceModel,
    policy: Policy,
    *,
    min_replicas: int = 1,
    max_replicas: int = 1000,
    cold_start_s: float = 0.0,
    spot: SpotSetting | None = None,
    seed: int = 0,
    initial_replicas: int | None = None,
) -> RawRun:
    """Replay ``trace`` through replicas of ``service`` scaled by ``policy`` (module doc)."""
    cl = _Cluster(
        trace,
        service,
        policy,
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        cold_start_s=cold_start_s,
        spot=spot or SpotSetting(),
        seed=seed,
        initial_replicas=initial_replicas,
    )
    return cl.run()
