"""The serving replay on the discrete-event core: a shared FIFO queue in front of autoscaled replicas.

Each replica runs continuous (iteration-level) batching, vLLM's default scheduler without chunked prefill:

1. when it has room it admits requests in order (first its own preempted requests, then the shared queue)
   while the KV cache, the batch cap and the prefill token budget allow (head-of-line: never skipping the
   head);
2. it prefills the admitted group in one pass (decode pauses; the first token comes out of the prefill:
   TTFT = queue wait + prefill);
3. it decodes all running sequences, one token each per iteration of ``step(b)`` seconds.

**Event skipping.** Between two events that change a replica (an arrival it admits, a completion, the KV
pool filling up, a scaling decision) its batch is constant, so the simulator never steps iterations one by
one: the replica keeps a virtual clock ``G`` (tokens decoded per running sequence), and one SimPy timeout
of ``(G_next - G) x step(b)`` seconds jumps to the next completion or KV-full point, both known in closed
form. Work is counted in tokens as real numbers: a sequence finishes after ``output - 1`` decode steps. An
arrival admitted mid-iteration keeps the fraction of the iteration already done. With a batch cap of 1
and zero prefill each replica is a single server whose service time is ``output x step``: the M/M/c check
(tests) replays exponential work through it.

**KV cache** (``kv_mode``):

* ``paged`` (default; vLLM's PagedAttention, Kwon et al., SOSP'23, section 4.5 "Scheduling and
  Preemption"): a request is admitted when its prompt, rounded up to whole KV blocks of
  :data:`KV_BLOCK_TOKENS`, fits in the free pool above a :data:`KV_WATERMARK` reserve; it then grows by
  one token per decoded token (the block rounding is charged once, at admission: within one block of
  vLLM's exact count). When the pool is full, the most recently admitted running request is preempted
  and recomputed (vLLM V1's default preemption mode is RECOMPUTE, docs.vllm.ai "Optimization and
  Tuning: Preemption"): its KV is freed, it goes to the front of that replica's waiting list, and when
  readmitted it prefills its prompt plus the tokens it had generated (its first token, and so TTFT, is
  kept). Preemptions are counted. The batch may then reach the engine's ``max_num_seqs``.
* ``reserve``: a request reserves ``input + output`` tokens of KV at admission and is never preempted
  (the conservative model of earlier releases; kept for comparisons).

A request whose ``input + output`` exceeds the KV pool can never finish on a replica (vLLM refuses a
``max_model_len`` above the pool); it is rejected on arrival and counted as unfinished.

The router is the shared queue: an arrival goes to the idle ready replica with the lowest index (one
request each, so that a burst spreads over the idle replicas), else to the decoding replica with the
fewest running sequences that can admit it now. Spot replicas get an interruption notice (drawn from the
hazard); they stop admitting, a replacement is started, and at the end of the notice their unfinished
requests return to the head of the queue (restarted; a first token already streamed is kept for TTFT).

Replicas are callback-driven state machines on SimPy events (a pending timeout per replica, superseded
ones ignored), the arrivals one feeder (a chain of timeouts), the controller one process that reads the
metrics at its decision times (:class:`gpufleet.simulate.policies.Metrics`): per request about four SimPy
events (arrival, prefill end, completion, and a superseded timeout when an arrival joins a decoding
batch). Per-request results are numpy arrays.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from gpufleet.errors import InputError
from gpufleet.simulate.core import make_rng, new_environment
from gpufleet.simulate.policies import Metrics, Policy, ScheduledPolicy
from gpufleet.simulate.serving import ServiceModel
from gpufleet.simulate.traces import RequestTrace

_STARTING, _READY, _DRAINING, _STOPPED = 0, 1, 2, 3
_IDLE, _PREFILL, _DECODE = 0, 1, 2
_EPS = 1e-9
#: the replay gives up this long after the last arrival [s]; unfinished requests count as SLO misses
HORIZON_AFTER_LAST_ARRIVAL_S = 6 * 3600.0
#: KV block size [tokens]: vLLM's default ``block_size`` on CUDA (16; vllm/config CacheConfig)
KV_BLOCK_TOKENS = 16
#: free KV kept at admission [fraction of the pool]: vLLM's block manager ``watermark`` 0.01 ("to avoid
#: frequent cache eviction", vllm/core/block_manager.py, V0); it also guarantees that a readmitted request
#: decodes some tokens before the pool can fill again
KV_WATERMARK = 0.01
KV_MODES = ("paged", "reserve")


@dataclass(frozen=True, slots=True, kw_only=True)
class SpotSetting:
    share: float = 0.0  # fraction of replicas on spot [0..1]
    mean_time_between_interruptions_s: float = math.inf
    notice_s: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class RawRun:
    """Everything the replay measured; summarised by :mod:`gpufleet.simulate.autoscale`."""

    admit_s: npt.NDArray[np.float64]  # first admission (queue wait = admit - arrival) [s]
    first_token_s: npt.NDArray[np.float64]
    done_s: npt.NDArray[np.float64]
    cold_hit: npt.NDArray[np.bool_]
    replica_seconds: float
    spot_replica_seconds: float
    scale_events: tuple[tuple[float, int, int], ...]  # (time [s], from, to)
    interruptions: int
    requeued: int
    preemptions: int  # KV-pool preemptions (recompute) [count]
    rejected: int  # requests larger than a replica's KV pool [count]
    sample_t: npt.NDArray[np.float64]  # times the fleet changed [s] (a step function from there)
    sample_replicas: npt.NDArray[np.float64]  # replicas billed (starting + ready + draining)
    sample_ready: npt.NDArray[np.float64]
    end_s: float


class _Replica:
    """One replica: a state machine driven by its pending SimPy timeout (module doc)."""

    __slots__ = (
        "G",
        "cb",
        "cl",
        "doomed",
        "g_next",
        "heap",
        "idx",
        "kv_base",
        "kv_pf",
        "limit",
        "n",
        "order",
        "pending",
        "phase",
        "prefilling",
        "spot",
        "started_s",
        "state",
        "t_g",
        "waiting",
    )

    def __init__(self, cl: _Cluster, idx: int, spot: bool, cold_s: float) -> None:
        self.cl = cl
        self.doomed = False  # a terminating decision (cancel, kill) was taken
        self.idx = idx
        self.spot = spot
        self.state = _STARTING
        self.phase = _IDLE
        self.G = 0.0  # tokens decoded per running sequence since the batch was last empty (virtual clock)
        self.t_g = cl.env.now  # when G was last brought up to date [s]
        self.g_next = 0.0  # G at the pending decode event
        self.n = 0  # running (decoding) sequences
        self.heap: list[tuple[float, int, int]] = []  # (finish G, request, stamp); stale stamps skipped
        self.order: list[tuple[int, int]] = []  # (request, stamp) in admission order: newest last
        self.kv_base = 0.0  # KV of running sequences at G = 0 (occupancy = kv_base + n G when paged) [tokens]
        self.kv_pf = 0.0  # KV held by the group being prefilled [tokens]
        self.prefilling: list[int] = []
        self.waiting: deque[int] = deque()  # this replica's preempted requests, to recompute
        self.limit = 0  # woken from idle for one arrival: admit at most that many at once
        self.pending: Any = None  # the one event this replica acts on
        self.started_s = cl.env.now
        self.cb = self.on_event
        if cold_s > 0:
            self.wait(cold_s)
        else:
            self.state = _READY

    def wait(self, delay: float) -> None:
        ev = self.cl.env.timeout(delay)
        ev.callbacks.append(self.cb)
        self.pending = ev

    def on_event(self, ev: Any) -> None:
        if ev is not self.pending:
            return  # superseded
        self.pending = None
        cl = self.cl
        if self.state == _STARTING:
            self.state = _READY
            self.t_g = cl.env.now
            cl.on_ready(self)
            cl.step(self)
        elif self.phase == _PREFILL:
            cl.prefill_done(self)
        else:
            self.G = self.g_next
            self.t_g = cl.env.now
            cl.step(self)


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
        kv_mode: str,
    ) -> None:
        if kv_mode not in KV_MODES:
            raise InputError(f"KV mode {kv_mode!r} is unknown. Allowed: {', '.join(KV_MODES)}.")
        self.env = new_environment()
        self.rng = make_rng(seed)
        self.trace = trace
        self.service = service
        self.policy = policy
        self.min_r = min_replicas
        self.max_r = max_replicas
        self.cold_start_s = cold_start_s
        self.spot = spot
        self.paged = kv_mode == "paged"
        n = len(trace)
        self.n_req = n
        self.arrival = trace.arrival_s.tolist()
        self.inp = trace.input_tokens.tolist()
        self.out = trace.output_tokens.tolist()
        self.need = (trace.input_tokens + trace.output_tokens).tolist()
        self.pf_first = service.prefill_time_s(np.asarray(trace.input_tokens, dtype=np.float64)).tolist()
        # per request, as it evolves: context to prefill [tokens], its prefill [s], decode steps left
        self.ctx = list(self.inp)
        self.pf = list(self.pf_first)
        self.rem = [o - 1.0 for o in self.out]
        self.resv = [0.0] * n  # KV charged at admission [tokens]
        self.g0 = [0.0] * n  # G when decoding started
        self.stamp = [-1] * n  # admission stamp of the live run (-1: not running)
        self.next_stamp = 0
        self.next_arrival = 0  # the feeder's position in the trace
        self.cap_b = service.seq_cap if self.paged else service.max_batch
        self.steps = service.step_table(self.cap_b)
        self.cap_kv = service.kv_capacity_tokens
        self.room_kv = self.cap_kv * (1.0 - KV_WATERMARK) if self.paged else self.cap_kv
        self.admit_s = np.full(n, np.nan)
        self.first_s = np.full(n, np.nan)
        self.done_s = np.full(n, np.nan)
        self.cold = np.zeros(n, dtype=bool)
        self.queue: deque[int] = deque()
        self.replicas: list[_Replica] = []
        self.live: list[_Replica] = []  # not stopped, in creation order
        self.in_flight = 0
        self.n_local = 0  # requests in replicas' preempted lists
        self.done_count = 0
        self.replica_s = 0.0
        self.spot_s = 0.0
        self.events: list[tuple[float, int, int]] = []
        self.interruptions = 0
        self.requeued = 0
        self.preemptions = 0
        self.rejected = 0
        self.metrics = Metrics()
        #: only the HPA on KV usage reads the KV gauge; the others skip computing it (0 is recorded)
        self.reads_kv = getattr(policy, "metric", None) == "kv_usage"
        self.m_t = 0.0  # metric integrals are up to date until here [s]
        self.i_flight = 0.0
        self.i_wait = 0.0
        self.fleet_log: list[tuple[float, int, int]] = []
        self.capacity = service.max_batch
        #: the replay stops this long after the last arrival even if requests are left (no capacity)
        self.horizon_s = trace.duration_s + HORIZON_AFTER_LAST_ARRIVAL_S
        self.finished = self.env.event()
        start = initial_replicas if initial_replicas is not None else policy.initial(self.capacity)
        for _ in range(self._clamp(start)):
            self.launch(initial=True)

    # --- metrics -----------------------------------------------------------------------------------------
    def acc(self) -> None:
        """Bring the in-flight and waiting integrals up to now (called before either changes)."""
        now = self.env.now
        dt = now - self.m_t
        if dt > 0:
            self.i_flight += self.in_flight * dt
            self.i_wait += (len(self.queue) + self.n_local) * dt
            self.m_t = now

    def occupancy(self, r: _Replica, g: float) -> float:
        """KV tokens held by ``r`` at virtual clock ``g``."""
        return r.kv_base + r.kv_pf + (r.n * g if self.paged else 0.0)

    def checkpoint(self) -> None:
        self.acc()
        ready = [r for r in self.live if r.state == _READY]
        if self.reads_kv and ready and self.cap_kv and math.isfinite(self.cap_kv):
            kv = sum(self.occupancy(r, self.g_now(r)) for r in ready) / (len(ready) * self.cap_kv)
        else:
            kv = 0.0
        self.metrics.checkpoint(
            self.env.now,
            in_flight_integral=self.i_flight,
            waiting_integral=self.i_wait,
            in_flight=self.in_flight,
            waiting=len(self.queue) + self.n_local,
            kv_usage=kv,
            ready=len(ready),
        )

    def log_fleet(self) -> None:
        self.fleet_log.append((self.env.now, len(self.live), sum(1 for r in self.live if r.state == _READY)))

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
        self.log_fleet()
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
            self.log_fleet()
            yield self.env.timeout(self.spot.notice_s)
        if r.state != _STOPPED and not r.doomed:
            self.kill(r)

    def on_ready(self, r: _Replica) -> None:
        for i in self.queue:
            self.cold[i] = True
        self.log_fleet()

    def stop(self, r: _Replica) -> None:
        if r.state == _STOPPED:
            return
        r.state = _STOPPED
        r.pending = None
        dt = self.env.now - r.started_s
        self.replica_s += dt
        if r.spot:
            self.spot_s += dt
        self.live.remove(r)
        self.log_fleet()

    def kill(self, r: _Replica) -> None:
        """Stop ``r`` now; its requests (running, prefilling, preempted) restart at the head of the queue."""
        r.doomed = True
        self.acc()
        lost = [i for _, i, st in r.heap if self.stamp[i] == st] + r.prefilling + list(r.waiting)
        self.n_local -= len(r.waiting)
        r.heap, r.order, r.prefilling, r.waiting = [], [], [], deque()
        r.n, r.kv_base, r.kv_pf = 0, 0.0, 0.0
        for i in sorted(lost, reverse=True):
            self.stamp[i] = -1
            self.ctx[i], self.pf[i], self.rem[i] = self.inp[i], self.pf_first[i], self.out[i] - 1.0
            self.admit_s[i] = math.nan
            self.queue.appendleft(i)
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
        for r in sorted(act, key=lambda r: (r.state != _STARTING, r.n, -r.idx)):
            if surplus == 0:
                break
            surplus -= 1
            if r.state == _STARTING:
                r.doomed = True
                self.stop(r)
            else:
                r.state = _DRAINING
                self.log_fleet()
                if r.phase == _IDLE:
                    self.step(r)

    # --- one replica's schedule --------------------------------------------------------------------------
    def g_now(self, r: _Replica) -> float:
        if r.phase == _DECODE and r.n:
            return float(r.G + (self.env.now - r.t_g) / self.steps[r.n])
        return float(r.G)

    def sync(self, r: _Replica) -> None:
        """Bring ``r``'s virtual clock to now (a decoding replica about to change its batch)."""
        if r.phase == _DECODE:
            r.G = self.g_now(r)
            r.t_g = self.env.now
            r.pending = None
            r.phase = _IDLE

    def step(self, r: _Replica) -> None:
        """``r`` is at an event, its clock current: finish, preempt, admit, then wait for the next event."""
        r.phase = _IDLE
        r.pending = None
        n = r.n
        if n:
            if r.heap[0][0] <= r.G + _EPS:
                self.complete(r)
                n = r.n
            if self.paged and n > 1 and r.kv_base + r.kv_pf + n * r.G >= self.cap_kv - 1e-6:
                self.preempt(r)
                n = r.n
        state = r.state
        if r.waiting or (state == _READY and self.queue):
            batch = self.admit(r)
            if batch:
                r.prefilling = batch
                r.phase = _PREFILL
                r.wait(self.prefill_group_s(batch))
                return
        if not n:
            if state == _DRAINING and not r.waiting:
                self.stop(r)
            return
        # decode until the next completion or the KV pool is full
        heap = r.heap
        stamp = self.stamp
        while stamp[heap[0][1]] != heap[0][2]:
            heapq.heappop(heap)
        g_next = heap[0][0]
        if self.paged and n > 1:
            g_full = (self.cap_kv - r.kv_base - r.kv_pf) / n
            if g_full < g_next:
                g_next = g_full
        if g_next < r.G:
            g_next = r.G
        r.g_next = g_next
        r.phase = _DECODE
        env = self.env
        r.t_g = env.now
        ev = env.timeout((g_next - r.G) * self.steps[n])
        ev.callbacks.append(r.cb)
        r.pending = ev

    def complete(self, r: _Replica) -> None:
        now = self.env.now
        heap = r.heap
        stamp = self.stamp
        limit = r.G + _EPS
        paged = self.paged
        finished = False
        while heap and heap[0][0] <= limit:
            _, i, st = heapq.heappop(heap)
            if stamp[i] != st:
                continue
            if not finished:
                self.acc()
                finished = True
            stamp[i] = -1
            self.done_s[i] = now
            r.kv_base -= self.resv[i] - self.g0[i] if paged else self.resv[i]
            r.n -= 1
            self.in_flight -= 1
            self.done_count += 1
        if not r.n:
            r.kv_base = 0.0
            r.G = 0.0
            r.heap = []
            r.order = []
        if finished and self.done_count == self.n_req and not self.finished.triggered:
            self.finished.succeed()

    def preempt(self, r: _Replica) -> None:
        """Free KV by recomputing the newest running requests while the pool is full (module doc)."""
        stamp = self.stamp
        while r.n > 1 and r.kv_base + r.kv_pf + r.n * r.G >= self.cap_kv - 1e-6:
            i, st = r.order.pop()
            if stamp[i] != st:
                continue
            self.acc()
            stamp[i] = -1
            r.kv_base -= self.resv[i] - self.g0[i]
            r.n -= 1
            finish = self.g0[i] + self.rem[i]
            left = max(finish - r.G, 0.0)
            self.ctx[i] = self.inp[i] + (self.out[i] - left)  # prompt + tokens generated so far
            self.pf[i] = float(self.service.prefill_time_s(np.asarray([self.ctx[i]], dtype=np.float64))[0])
            self.rem[i] = max(left - 1.0, 0.0)  # the recompute pass yields the next token
            r.waiting.appendleft(i)
            self.n_local += 1
            self.preemptions += 1

    def charge(self, i: int) -> float:
        """KV reserved when request ``i`` is admitted [tokens]."""
        if self.paged:
            return float(math.ceil((self.ctx[i] + 1.0) / KV_BLOCK_TOKENS) * KV_BLOCK_TOKENS)
        return float(self.need[i])

    def admit(self, r: _Replica) -> list[int]:
        """Admit in order from ``r``'s preempted list, then (ready replicas) the shared queue."""
        batch: list[int] = []
        tokens = 0.0
        occ = self.occupancy(r, r.G)
        now = self.env.now
        max_tokens = self.service.max_prefill_tokens
        for src in (r.waiting, self.queue):
            if src is self.queue and (r.state != _READY or r.waiting):
                break
            while src:
                i = src[0]
                c = self.charge(i)
                if r.n + len(batch) >= self.cap_b:
                    break
                if occ + c > self.room_kv and (r.n or batch):  # an empty replica takes any request
                    break
                if r.limit and len(batch) >= r.limit:
                    break
                if batch and tokens + self.ctx[i] > max_tokens:
                    break
                if not batch:
                    self.acc()
                src.popleft()
                if src is r.waiting:
                    self.n_local -= 1
                batch.append(i)
                tokens += self.ctx[i]
                occ += c
                self.resv[i] = c
                r.kv_pf += c
                if math.isnan(self.admit_s[i]):
                    self.admit_s[i] = now
            else:
                continue
            break
        r.limit = 0
        return batch

    def prefill_group_s(self, batch: list[int]) -> float:
        pf = self.pf
        return float(sum(pf[i] for i in batch) - (len(batch) - 1) * self.service.step_overhead_s)

    def prefill_done(self, r: _Replica) -> None:
        now = self.env.now
        first = self.first_s
        G = r.G
        for i in r.prefilling:
            if math.isnan(first[i]):
                first[i] = now
            st = self.next_stamp
            self.next_stamp += 1
            self.stamp[i] = st
            self.g0[i] = G
            heapq.heappush(r.heap, (G + self.rem[i], i, st))
            r.order.append((i, st))
            c = self.resv[i]
            r.kv_pf -= c
            r.kv_base += c - G if self.paged else c
            r.n += 1
        r.prefilling = []
        if not r.kv_pf or r.kv_pf < 1e-6:
            r.kv_pf = 0.0
        r.t_g = now
        self.step(r)

    def kick(self) -> None:
        """Give the head of the queue to a replica that can take it now (see module doc)."""
        queue = self.queue
        if not queue:
            return
        c = self.charge(queue[0])
        room = self.room_kv
        paged = self.paged
        steps = self.steps
        now = self.env.now
        best: _Replica | None = None
        best_n = self.cap_b  # fewer running sequences than the cap, and than the best so far
        for r in self.live:
            if r.state != _READY or r.waiting:
                continue
            n = r.n
            if r.phase == _IDLE:
                if not n:
                    r.limit = 1  # spread a burst over the idle replicas, one arrival each
                    r.t_g = now
                    self.step(r)
                    return
            elif r.phase == _DECODE and n < best_n:
                occ = r.kv_base + r.kv_pf
                if paged:
                    occ += n * (r.G + (now - r.t_g) / steps[n])
                if occ + c <= room:
                    best, best_n = r, n
        if best is not None:
            best.G += (now - best.t_g) / steps[best_n]
            best.t_g = now
            self.step(best)

    # --- processes ---------------------------------------------------------------------------------------
    def feed(self, ev: Any = None) -> None:
        """The arrival feeder: enqueue every request due now, then wait for the next arrival time."""
        env = self.env
        now = env.now
        arr = self.arrival
        need = self.need
        cap = self.cap_kv
        n = self.n_req
        k = self.next_arrival
        while k < n and arr[k] <= now:
            if need[k] > cap:  # can never fit in a replica's KV pool (module doc)
                self.rejected += 1
                self.done_count += 1
                if self.done_count == n and not self.finished.triggered:
                    self.finished.succeed()
            else:
                dt = now - self.m_t
                if dt > 0:
                    self.i_flight += self.in_flight * dt
                    self.i_wait += (len(self.queue) + self.n_local) * dt
                    self.m_t = now
                self.queue.append(k)
                self.in_flight += 1
                self.kick()
            k += 1
        self.next_arrival = k
        if k < n:
            env.timeout(arr[k] - now).callbacks.append(self.feed)

    def controller(self) -> Any:
        env = self.env
        ctl = self.policy.controller(self.capacity, self.trace.start_time_of_day_s)
        n = self.n_req
        self.checkpoint()
        if not isinstance(self.policy, ScheduledPolicy):
            yield env.timeout(self.policy.tick_s)  # the first decision needs a tick of metrics
        while self.done_count < n and env.now < self.horizon_s:
            self.checkpoint()
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
        for r in list(self.live):
            if r.state == _READY:
                self.step(r)
        self.feed()
        env.process(self.controller())
        env.process(self._horizon())
        if self.n_req:
            env.run(until=self.finished)
        end = env.now
        for r in list(self.live):
            self.stop(r)
        s = np.asarray(self.fleet_log, dtype=np.float64).reshape(-1, 3)
        return RawRun(
            admit_s=self.admit_s,
            first_token_s=self.first_s,
            done_s=self.done_s,
            cold_hit=self.cold,
            replica_seconds=self.replica_s,
            spot_replica_seconds=self.spot_s,
            scale_events=tuple(self.events),
            interruptions=self.interruptions,
            requeued=self.requeued,
            preemptions=self.preemptions,
            rejected=self.rejected,
            sample_t=s[:, 0],
            sample_replicas=s[:, 1],
            sample_ready=s[:, 2],
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
    kv_mode: str = "paged",
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
        kv_mode=kv_mode,
    )
    return cl.run()
