"""Per-workload statistics (across a workload's pods) and serving-engine statistics, from the local store.

Definitions shared with the Prometheus path (:mod:`gpufleet.telemetry.promql`, which computes the same
quantities in PromQL), so both paths judge a workload alike:

- per 60-second step, a workload's value of a GPU metric is the **busiest replica's** (max over its GPUs:
  sizing one replica's GPU must hold the busiest one) and its mean the mean over its GPUs; percentiles and
  the peak are over those steps (PromQL: ``quantile_over_time(p, max by (namespace, workload) (X)[w:1m])``);
- observed hours = 5-minute steps with at least one sample x 5 min (PromQL: ``count_over_time(... [w:5m])``);
  GPU-hours the same per GPU, summed; replicas = GPU-hours / observed hours;
- queue and KV-cache usage: the percentile and peak of the per-step max over the workload's pods;
- preemptions: the increase of the counter over the window, summed over pods (a drop is a restart);
- TTFT and TPOT: the percentile of the workload's histogram, the per-bucket increases summed over pods and
  interpolated within the bucket as Prometheus's ``histogram_quantile`` does;
- training step time (a per-rank gauge): per 60-second step the slowest rank's (a synchronous step waits
  for it); its median and percentile over the window, and its median over the first and the last quarter
  of the span the workload exported it (its own baseline: a step time that grows over the run).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC
from typing import Any, Final

import numpy as np

from gpufleet.telemetry.analyze import GpuStats, MetricStats, Window
from gpufleet.telemetry.schema import SERVICE_METRICS
from gpufleet.telemetry.store import TelemetryStore
from gpufleet.telemetry.workloads import WorkloadId, WorkloadRule, workload_of
from gpufleet.units import SECONDS_PER_HOUR, US_PER_S

#: Step of the per-workload series [s] and of the coverage count [s].
STEP_S: Final = 60.0
COVERAGE_STEP_S: Final = 300.0
#: Prometheus path: hosts (GPU queries) or namespaces (workload queries) per query (docs/telemetry.md).
DEFAULT_CHUNK_HOSTS: Final = 50
#: Prometheus path with --chunk-days shorter than the lookback: how quantiles were merged.
TIME_CHUNK_CAVEAT: Final = (
    "percentiles merged over time chunks (--chunk-days): each is the largest chunk's percentile, an upper "
    "bound of the window's"
)
_GAUGES: Final = ("queue_requests", "kv_cache_usage_ratio", "running_requests")
_COUNTERS: Final = ("preemptions_total", "ttft_s_bucket", "tpot_s_bucket")
#: Share of a workload's step-time span whose median is its baseline (first) and its latest (last) value.
TREND_SHARE: Final = 0.25


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadStats:
    """A workload across its pods: ``replica`` holds the per-replica view (metrics of the busiest replica
    per step, hours = the workload's observed hours, labels of one of its GPUs for pricing)."""

    id: WorkloadId
    pods: int
    gpus: int
    gpu_hours: float
    replica: GpuStats

    @property
    def replicas(self) -> float:
        """Mean GPUs in use at once (GPU-hours / observed hours)."""
        return self.gpu_hours / self.replica.hours if self.replica.hours > 0 else 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ServingStats:
    """What the serving engines (vLLM, TGI, SGLang) or the training job of one workload exported over the
    window."""

    queue_p: float | None = None  # requests waiting, at the window's percentile (busiest pod per step)
    queue_max: float | None = None
    kv_cache_p: float | None = None  # 0-1
    preemptions: float | None = None  # over the window, all pods
    ttft_p_s: float | None = None  # at the window's percentile
    tpot_p_s: float | None = None
    requests: float | None = None  # requests in the TTFT histogram over the window
    #: training step time [s]: slowest rank per 60 s step; median and at the window's percentile
    step_time_p50_s: float | None = None
    step_time_p_s: float | None = None
    #: median over the first and the last quarter (TREND_SHARE) of the span it was exported [s]
    step_time_first_s: float | None = None
    step_time_last_s: float | None = None
    step_time_span_h: float | None = None  # first to last step-time sample [h]

    @property
    def is_serving(self) -> bool:
        """Any serving-engine signal (queue, KV cache, preemptions, TTFT, TPOT)."""
        return any(
            x is not None
            for x in (self.queue_p, self.kv_cache_p, self.preemptions, self.ttft_p_s, self.tpot_p_s)
        )

    @property
    def is_training(self) -> bool:
        """The workload exported a training step time."""
        return self.step_time_p50_s is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetStats:
    gpus: tuple[GpuStats, ...]
    workloads: tuple[WorkloadStats, ...]
    serving: dict[str, ServingStats]  # workload key -> its serving statistics
    observed_start: Any = None  # datetime of the first sample in the window
    observed_end: Any = None


def histogram_quantile(q: float, buckets: Sequence[tuple[float, float]]) -> float | None:
    """Prometheus ``histogram_quantile``: ``buckets`` are (upper bound ``le``, cumulative count); linear
    interpolation inside the bucket holding the rank; a rank in the +Inf bucket gives the largest finite
    bound. None when the histogram holds no observation."""
    b = sorted(buckets)
    if not b or b[-1][1] <= 0:
        return None
    total = b[-1][1]
    rank = q * total
    prev_le, prev_c = 0.0, 0.0
    for le, c in b:
        if c >= rank:
            if math.isinf(le):
                return prev_le
            if c == prev_c:
                return le
            return prev_le + (le - prev_le) * (rank - prev_c) / (c - prev_c)
        prev_le, prev_c = le, c
    return prev_le


def _naive(dt: Any) -> Any:
    return dt.astimezone(UTC).replace(tzinfo=None)


def _register_map(con: Any, rules: Sequence[WorkloadRule]) -> dict[str, WorkloadId]:
    """Register table ``wmap`` (series_id, wkey) for every series with a pod or job; returns key -> id."""
    rows = con.execute("SELECT series_id, namespace, pod, job FROM series").fetchall()
    ids: dict[str, WorkloadId] = {}
    sid: list[int] = []
    keys: list[str] = []
    cache: dict[tuple[Any, Any, Any], WorkloadId | None] = {}
    for series_id, ns, pod, job in rows:
        k = (ns, pod, job)
        if k not in cache:
            cache[k] = workload_of(namespace=ns, pod=pod, job=job, rules=rules)
        w = cache[k]
        if w is None:
            continue
        ids.setdefault(w.key, w)
        sid.append(int(series_id))
        keys.append(w.key)
    con.register(
        "wmap", {"series_id": np.asarray(sid, dtype=np.int64), "wkey": np.asarray(keys, dtype=object)}
    )
    return ids


def workload_and_serving_stats(
    store: TelemetryStore, window: Window, rules: Sequence[WorkloadRule] = ()
) -> tuple[tuple[WorkloadStats, ...], dict[str, ServingStats]]:
    """Per-workload GPU statistics and serving statistics over ``window`` (module docstring)."""
    start_us = int(window.start.timestamp() * US_PER_S)
    end_us = int(window.end.timestamp() * US_PER_S)
    con = store.connect(start_us, end_us)
    try:
        ids = _register_map(con, rules)
        if not ids:
            return (), {}
        span = [_naive(window.start), _naive(window.end)]
        svc = ", ".join(f"'{m}'" for m in sorted(SERVICE_METRICS))
        p = window.percentile
        gpu_sql = f"""
            WITH m AS (SELECT s.series_id, s.gpu_key, s.metric, w.wkey FROM series s JOIN wmap w USING
                       (series_id) WHERE s.metric NOT IN ({svc})),
            b AS (SELECT m.wkey, m.metric, time_bucket(INTERVAL '{STEP_S:g} seconds', x.ts) AS t,
                         max(x.value) AS mx, avg(x.value) AS av
                  FROM samples x JOIN m USING (series_id) WHERE x.ts >= ? AND x.ts < ? GROUP BY ALL)
            SELECT wkey, metric, count(*), avg(av), quantile_disc(mx, [0.5, {p}, 0.99]), max(mx) FROM b
            GROUP BY wkey, metric"""  # one sort per group for the three quantiles
        metrics: dict[str, dict[str, MetricStats]] = defaultdict(dict)
        for wkey, metric, n, mean, (p50, phi, p99), mx in con.execute(gpu_sql, span).fetchall():
            metrics[wkey][metric] = MetricStats(
                samples=int(n),
                mean=float(mean),
                p50=float(p50),
                p_hi=float(phi),
                p99=float(p99),
                max=float(mx),
            )
        cover_sql = f"""
            WITH m AS (SELECT s.series_id, s.gpu_key, w.wkey FROM series s JOIN wmap w USING (series_id)
                       WHERE s.metric NOT IN ({svc})),
            g AS (SELECT m.wkey, m.gpu_key, time_bucket(INTERVAL '{COVERAGE_STEP_S:g} seconds', x.ts) AS t5
                  FROM samples x JOIN m USING (series_id) WHERE x.ts >= ? AND x.ts < ? GROUP BY ALL)
            SELECT wkey, count(DISTINCT t5), count(*), count(DISTINCT gpu_key), min(t5), max(t5) FROM g
            GROUP BY wkey"""
        cover = {r[0]: r[1:] for r in con.execute(cover_sql, span).fetchall()}
        label_sql = f"""
            SELECT w.wkey, any_value(s.host), any_value(s.gpu_uuid), any_value(s.model),
                   any_value(s.mig_profile), any_value(s.provider), any_value(s.instance_type),
                   any_value(s.region), count(DISTINCT s.pod), any_value(s.pod), any_value(s.namespace),
                   any_value(s.job)
            FROM series s JOIN wmap w USING (series_id) WHERE s.metric NOT IN ({svc}) GROUP BY w.wkey"""
        workloads = []
        for wkey, host, uuid, model, mig, prov, itype, region, pods, pod, ns, job in con.execute(
            label_sql
        ).fetchall():
            if wkey not in cover or wkey not in metrics:
                continue
            steps, gpu_steps, gpus, t0, t1 = cover[wkey]
            hours = steps * COVERAGE_STEP_S / SECONDS_PER_HOUR
            replica = GpuStats(
                gpu_key=wkey,
                host=host,
                gpu_index=0,
                gpu_uuid=uuid,
                model=model,
                mig_profile=mig,
                provider=prov,
                instance_type=itype,
                region=region,
                pod=pod,
                namespace=ns,
                job=job,
                first_ts=t0.replace(tzinfo=UTC),
                last_ts=t1.replace(tzinfo=UTC),
                hours=hours,
                metrics=metrics[wkey],
            )
            workloads.append(
                WorkloadStats(
                    id=ids[wkey],
                    pods=int(pods),
                    gpus=int(gpus),
                    gpu_hours=gpu_steps * COVERAGE_STEP_S / SECONDS_PER_HOUR,
                    replica=replica,
                )
            )
        serving = _serving(con, span, p, ids)
    finally:
        con.close()
    return tuple(sorted(workloads, key=lambda w: w.id.key)), serving


def _serving(con: Any, span: list[Any], p: float, ids: dict[str, WorkloadId]) -> dict[str, ServingStats]:
    gauges = ", ".join(f"'{m}'" for m in _GAUGES)
    counters = ", ".join(f"'{m}'" for m in _COUNTERS)
    g_rows = con.execute(
        f"""WITH m AS (SELECT s.series_id, s.metric, w.wkey FROM series s JOIN wmap w USING (series_id)
                       WHERE s.metric IN ({gauges})),
            b AS (SELECT m.wkey, m.metric, time_bucket(INTERVAL '{STEP_S:g} seconds', x.ts) AS t,
                         max(x.value) AS mx
                  FROM samples x JOIN m USING (series_id) WHERE x.ts >= ? AND x.ts < ? GROUP BY ALL)
            SELECT wkey, metric, quantile_disc(mx, {p}), max(mx) FROM b GROUP BY wkey, metric""",
        span,
    ).fetchall()
    c_rows = con.execute(
        f"""WITH m AS (SELECT s.series_id, s.metric, s.le, w.wkey FROM series s JOIN wmap w USING (series_id)
                       WHERE s.metric IN ({counters})),
            d AS (SELECT m.wkey, m.metric, m.le, x.value,
                         x.value - lag(x.value) OVER (PARTITION BY x.series_id ORDER BY x.ts) AS dv
                  FROM samples x JOIN m USING (series_id) WHERE x.ts >= ? AND x.ts < ?)
            SELECT wkey, metric, le, sum(CASE WHEN dv IS NULL THEN 0 WHEN dv < 0 THEN value ELSE dv END)
            FROM d GROUP BY ALL""",
        span,
    ).fetchall()
    per: dict[str, dict[str, Any]] = defaultdict(dict)
    for wkey, metric, phi, mx in g_rows:
        per[wkey][f"{metric}:p"] = float(phi)
        per[wkey][f"{metric}:max"] = float(mx)
    hist: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for wkey, metric, le, inc in c_rows:
        if metric == "preemptions_total":
            per[wkey]["preemptions"] = per[wkey].get("preemptions", 0.0) + float(inc)
        elif le is not None:
            try:
                bound = float(le)
            except ValueError:
                continue
            hist[(wkey, metric)].append((bound, float(inc)))
    for (wkey, metric), buckets in hist.items():
        per[wkey][metric] = histogram_quantile(p, buckets)
        if metric == "ttft_s_bucket":
            per[wkey]["requests"] = max(c for _, c in buckets)
    for wkey, v in _step_time(con, span, p).items():
        per[wkey].update(v)
    return {k: serving_from(v) for k, v in per.items() if k in ids}


def _step_time(con: Any, span: list[Any], p: float) -> dict[str, dict[str, float]]:
    """Training step time per workload (module docstring): keys ``step_time_s:p50|p|first|last|span_h``."""
    rows = con.execute(
        f"""WITH m AS (SELECT s.series_id, w.wkey FROM series s JOIN wmap w USING (series_id)
                       WHERE s.metric = 'step_time_s'),
            b AS (SELECT m.wkey, time_bucket(INTERVAL '{STEP_S:g} seconds', x.ts) AS t, max(x.value) AS mx
                  FROM samples x JOIN m USING (series_id) WHERE x.ts >= ? AND x.ts < ? GROUP BY ALL),
            e AS (SELECT *, min(t) OVER (PARTITION BY wkey) AS t0, max(t) OVER (PARTITION BY wkey) AS t1
                  FROM b)
            SELECT wkey, quantile_disc(mx, [0.5, {p}]),
                   quantile_disc(mx, 0.5) FILTER (t < t0 + {TREND_SHARE} * (t1 - t0)),
                   quantile_disc(mx, 0.5) FILTER (t > t1 - {TREND_SHARE} * (t1 - t0)),
                   epoch(max(t1) - min(t0)) FROM e GROUP BY wkey""",
        span,
    ).fetchall()
    out: dict[str, dict[str, float]] = {}
    for wkey, (p50, phi), first, last, span_s in rows:
        out[wkey] = {
            "step_time_s:p50": float(p50),
            "step_time_s:p": float(phi),
            "step_time_s:span_h": float(span_s) / SECONDS_PER_HOUR,
        }
        if first is not None and last is not None and span_s > 0:
            out[wkey]["step_time_s:first"] = float(first)
            out[wkey]["step_time_s:last"] = float(last)
    return out


def serving_from(v: dict[str, Any]) -> ServingStats:
    """:class:`ServingStats` from the flat dict both paths fill."""
    return ServingStats(
        queue_p=v.get("queue_requests:p"),
        queue_max=v.get("queue_requests:max"),
        kv_cache_p=v.get("kv_cache_usage_ratio:p"),
        preemptions=v.get("preemptions"),
        ttft_p_s=v.get("ttft_s_bucket"),
        tpot_p_s=v.get("tpot_s_bucket"),
        requests=v.get("requests"),
        step_time_p50_s=v.get("step_time_s:p50"),
        step_time_p_s=v.get("step_time_s:p"),
        step_time_first_s=v.get("step_time_s:first"),
        step_time_last_s=v.get("step_time_s:last"),
        step_time_span_h=v.get("step_time_s:span_h"),
    )


__all__ = [
    "COVERAGE_STEP_S",
    "DEFAULT_CHUNK_HOSTS",
    "STEP_S",
    "TIME_CHUNK_CAVEAT",
    "TREND_SHARE",
    "FleetStats",
    "ServingStats",
    "WorkloadStats",
    "histogram_quantile",
    "serving_from",
    "workload_and_serving_stats",
]
