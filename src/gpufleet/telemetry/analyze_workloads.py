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
from datetime import UTC, datetime
from typing import Any, Final

import numpy as np

from gpufleet.telemetry.analyze import BIN_SCALE, GpuStats, MetricStats, Window
from gpufleet.telemetry.schema import SERVICE_METRICS
from gpufleet.telemetry.store import TelemetryStore, sql_list
from gpufleet.telemetry.workloads import WorkloadId, WorkloadRule, workload_of
from gpufleet.units import SECONDS_PER_DAY, SECONDS_PER_HOUR, US_PER_S

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


def _naive_us(us: int) -> datetime:
    return datetime.fromtimestamp(us / US_PER_S, tz=UTC).replace(tzinfo=None)


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
        metrics, cover = _replica_stats(store, con, window, rules, ids)
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
                first_ts=t0,
                last_ts=t1,
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


def _replica_stats(
    store: TelemetryStore, con: Any, window: Window, rules: Sequence[WorkloadRule], ids: dict[str, WorkloadId]
) -> tuple[dict[str, dict[str, MetricStats]], dict[str, tuple[int, int, int, Any, Any]]]:
    """Per workload and GPU metric (those with percentile bins, :data:`BIN_SCALE`): the busiest replica
    per 60-second step, binned; and the 5-minute coverage (steps, GPU-steps, GPUs, first and last step).

    Count, sum and peak per series come from one SQL aggregate (a few thousand groups). The per-step
    maximum across replicas is a numpy scatter-max into a (workload x metric) x step array, fed by DuckDB
    one time slab at a time (a day; shorter for very many workloads) as integer cell numbers computed in
    SQL, so the work is linear in the samples with no hash table of one group per sample (the SQL
    ``GROUP BY workload, metric, minute`` it replaces held ~10^8 groups at 10^8 samples: 270 s here).
    Percentiles are read from fixed-bin histograms of those per-step maxima, as
    :func:`gpufleet.telemetry.analyze.gpu_stats` does for a GPU (the bin's upper edge, capped at the peak).
    Mean and count are over every sample of the workload's GPUs (the Prometheus path sums
    ``sum_over_time`` and ``count_over_time``)."""
    rows = con.execute("SELECT series_id, namespace, pod, job, metric, gpu_key FROM series").fetchall()
    metrics = sorted({str(r[4]) for r in rows} & set(BIN_SCALE))  # those the store holds
    m_of = {m: i for i, m in enumerate(metrics)}
    keys = sorted(ids)
    w_of = {k: i for i, k in enumerate(keys)}
    cache: dict[tuple[Any, Any, Any], WorkloadId | None] = {}
    pairs: dict[tuple[int, str], int] = {}
    sids: list[int] = []
    k_l: list[int] = []
    p_l: list[int] = []
    n_m = len(metrics)
    for series_id, ns, pod, job, metric, gkey in rows:
        if metric not in m_of:
            continue
        k = (ns, pod, job)
        if k not in cache:
            cache[k] = workload_of(namespace=ns, pod=pod, job=job, rules=rules)
        wid = cache[k]
        if wid is None or wid.key not in w_of:
            continue
        w = w_of[wid.key]
        sids.append(int(series_id))
        k_l.append(w * n_m + m_of[metric])
        p_l.append(pairs.setdefault((w, str(gkey)), len(pairs)))
    if not sids:
        return {}, {}
    n_w, n_p = len(keys), len(pairs)
    n_k = n_w * n_m
    con.register(
        "rmap",
        {
            "series_id": np.asarray(sids, dtype=np.int64),
            "k": np.asarray(k_l, dtype=np.int64),
            "pair": np.asarray(p_l, dtype=np.int64),
            "sc": np.asarray([BIN_SCALE[metrics[k % n_m]] for k in k_l]),
        },
    )
    pair_w = np.zeros(n_p, dtype=np.int64)
    for (w, _), i in pairs.items():
        pair_w[i] = w
    span = [_naive(window.start), _naive(window.end)]
    n = np.zeros(n_k)
    total = np.zeros(n_k)
    peak = np.full(n_k, -np.inf)
    for k, cnt, sm, mx in con.execute(
        "SELECT r.k, count(*), sum(x.value), max(x.value) FROM samples x JOIN rmap r USING (series_id) "
        "WHERE x.ts >= ? AND x.ts < ? AND isfinite(x.value) GROUP BY r.k",
        span,
    ).fetchall():
        n[k], total[k], peak[k] = cnt, sm, mx
    hist: list[np.ndarray] = [np.zeros((n_w, 1), dtype=np.int64) for _ in metrics]
    steps = np.zeros(n_w, dtype=np.int64)
    gpu_steps = np.zeros(n_w, dtype=np.int64)
    seen_pair = np.zeros(n_p, dtype=bool)
    first = np.full(n_w, np.iinfo(np.int64).max)
    last = np.full(n_w, np.iinfo(np.int64).min)
    step_us, cover_us = int(STEP_S * US_PER_S), int(COVERAGE_STEP_S * US_PER_S)
    per_cover = cover_us // step_us
    start_us = int(window.start.timestamp() * US_PER_S)
    end_us = int(window.end.timestamp() * US_PER_S)
    day_us = int(SECONDS_PER_DAY * US_PER_S)
    # slab: a day, or fewer hours when the step array would pass 2^24 cells (128 MiB)
    slab_us = max(60, min(1440, (2**24 // n_k) // 60 * 60)) * step_us
    t = start_us // day_us * day_us
    while t < end_us:
        base_us, lo, hi = t, max(t, start_us), min(t + slab_us, end_us)
        t += slab_us
        n_s = slab_us // step_us
        n_c = n_s // per_cover
        files = [str(store.root / f.file) for f in store.parts(lo, hi)]  # only the slab's files
        if not files:
            continue
        got = con.execute(
            f"SELECT CAST(r.k * {n_s} + (epoch_us(x.ts) - {base_us}) // {step_us} AS INTEGER) AS cell, "
            f"CAST(r.pair * {n_c} + (epoch_us(x.ts) - {base_us}) // {cover_us} AS INTEGER) AS pcell, "
            "CAST(greatest(ceil(x.value * r.sc), 0) AS INTEGER) AS bin "
            f"FROM read_parquet({sql_list(files)}) x JOIN rmap r USING (series_id) "
            "WHERE x.ts >= ? AND x.ts < ? AND isfinite(x.value)",
            [_naive_us(lo), _naive_us(hi)],
        ).fetchnumpy()
        cell = np.asarray(got["cell"], dtype=np.int32)
        if cell.size == 0:
            continue
        mx = np.full(n_k * n_s, -1, dtype=np.int32)  # the bin of the step's maximum (-1: no sample)
        np.maximum.at(mx, cell, np.asarray(got["bin"], dtype=np.int32))
        pres = np.zeros(n_p * n_c, dtype=bool)
        pres[np.asarray(got["pcell"], dtype=np.int32)] = True
        pres2 = pres.reshape(n_p, n_c)
        gpu_steps += np.bincount(pair_w, weights=pres2.sum(axis=1), minlength=n_w).astype(np.int64)
        seen_pair |= pres2.any(axis=1)
        hit = np.flatnonzero(mx >= 0)
        hk = hit // n_s
        b = mx[hit].astype(np.int64)
        for m in range(n_m):
            sel = hk % n_m == m
            if not sel.any():
                continue
            bm, wm = b[sel], hk[sel] // n_m
            width = max(hist[m].shape[1], int(bm.max()) + 1)
            if width > hist[m].shape[1]:
                hist[m] = np.pad(hist[m], ((0, 0), (0, width - hist[m].shape[1])))
            hist[m] += np.bincount(wm * width + bm, minlength=n_w * width).reshape(n_w, width)
        occ = np.any(mx.reshape(n_w, n_m, n_c, per_cover) >= 0, axis=(1, 3))  # workload x 5-min step
        steps += occ.sum(axis=1)
        any_w = occ.any(axis=1)
        c_base = base_us // cover_us
        first = np.where(any_w, np.minimum(first, c_base + occ.argmax(axis=1)), first)
        last = np.where(any_w, np.maximum(last, c_base + n_c - 1 - occ[:, ::-1].argmax(axis=1)), last)
    p = window.percentile
    out: dict[str, dict[str, MetricStats]] = defaultdict(dict)
    for wi, wkey in enumerate(keys):
        for mi, metric in enumerate(metrics):
            j = wi * n_m + mi
            if n[j] == 0 or hist[mi].shape[1] == 0:
                continue
            cum = np.cumsum(hist[mi][wi])
            qs = np.searchsorted(cum, np.asarray([0.5, p, 0.99]) * cum[-1]) / BIN_SCALE[metric]
            top = float(peak[j])
            out[wkey][metric] = MetricStats(
                samples=int(n[j]),
                mean=float(total[j] / n[j]),
                p50=min(float(qs[0]), top),
                p_hi=min(float(qs[1]), top),
                p99=min(float(qs[2]), top),
                max=top,
            )
    gpus = np.bincount(pair_w[seen_pair], minlength=n_w)
    cover: dict[str, tuple[int, int, int, Any, Any]] = {}
    for wi, wkey in enumerate(keys):
        if steps[wi] > 0:
            cover[wkey] = (
                int(steps[wi]),
                int(gpu_steps[wi]),
                int(gpus[wi]),
                datetime.fromtimestamp(int(first[wi]) * COVERAGE_STEP_S, tz=UTC),
                datetime.fromtimestamp(int(last[wi]) * COVERAGE_STEP_S, tz=UTC),
            )
    return dict(out), cover


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
