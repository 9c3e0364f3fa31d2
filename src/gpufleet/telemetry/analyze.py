"""Per-GPU statistics over a lookback window, computed in DuckDB SQL over the Parquet store.

Percentiles come from fixed-bin histograms grouped in SQL (one pass, integer keys, no per-GPU sort), so the
scan stays linear at 10^8 samples: resolution 1 point for ratios and percentages, 256 MiB for memory, 5 W for
power; a percentile is reported as the upper edge of its bin (rounded up, i.e. conservative for sizing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from gpufleet.errors import InputError
from gpufleet.telemetry.store import TelemetryStore
from gpufleet.units import SECONDS_PER_DAY, SECONDS_PER_HOUR, US_PER_S
from gpufleet.validation import check_number

#: Longest lookback window [days]: 100 years, far above any telemetry retention; bounds the date arithmetic.
MAX_LOOKBACK_DAYS: Final = 36_500.0

#: Metric -> histogram bins per canonical unit (bin width = 1/scale).
BIN_SCALE: Final[dict[str, float]] = {
    "sm_active_ratio": 100.0,
    "tensor_active_ratio": 100.0,
    "dram_active_ratio": 100.0,
    "gr_engine_active_ratio": 100.0,
    "gpu_util_pct": 1.0,
    "mem_copy_util_pct": 1.0,
    "fb_used_mib": 1.0 / 256.0,
    "fb_free_mib": 1.0 / 256.0,
    "fb_total_mib": 1.0 / 256.0,
    "fb_reserved_mib": 1.0 / 256.0,
    "power_w": 1.0 / 5.0,
    "power_limit_w": 1.0 / 5.0,
}
LOOKBACK_PRESETS_DAYS: Final[tuple[int, ...]] = (14, 32, 93)  # AWS Compute Optimizer LookBackPeriodPreference


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricStats:
    """Distribution of one metric of one GPU over the window (canonical units)."""

    samples: int
    mean: float
    p50: float
    p_hi: float  # at the requested percentile
    p99: float
    max: float


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuStats:
    gpu_key: str
    host: str
    gpu_index: int
    gpu_uuid: str | None
    model: str | None
    mig_profile: str | None
    provider: str | None
    instance_type: str | None
    region: str | None
    pod: str | None
    namespace: str | None
    job: str | None
    first_ts: datetime
    last_ts: datetime
    hours: float  # observed span [h]
    metrics: Mapping[str, MetricStats]


@dataclass(frozen=True, slots=True, kw_only=True)
class Window:
    start: datetime
    end: datetime
    percentile: float

    @property
    def days(self) -> float:
        return (self.end - self.start).total_seconds() / SECONDS_PER_DAY


def resolve_window(
    store: TelemetryStore, lookback_days: float, end: datetime | None, percentile: float
) -> Window:
    percentile = check_number("percentile", percentile, flag="--percentile")  # type: ignore[assignment]
    if not 0.5 <= percentile < 1.0:
        raise InputError(f"--percentile {percentile} is outside 0.5-0.99; use e.g. 0.95 (p95) or 0.99.")
    lookback_days = check_number(  # type: ignore[assignment]
        "lookback", lookback_days, flag="--lookback", maximum=MAX_LOOKBACK_DAYS
    )
    if end is not None and not isinstance(end, datetime):
        raise InputError(f"--end must be a date and time (ISO 8601), got {end!r}.")
    parts = store.parts()
    if not parts:
        raise InputError(
            f"The telemetry store {store.root} is empty. Ingest data first: gpufleet telemetry ingest FILE..."
        )
    first_us, last_us = min(p.min_ts_us for p in parts), max(p.max_ts_us for p in parts)
    if end is None:
        end = datetime.fromtimestamp((last_us + 1) / US_PER_S, tz=UTC)
    try:
        start = end - timedelta(days=lookback_days)
    except OverflowError:
        raise InputError(
            f"--lookback {lookback_days} days before {end.isoformat()} is before year 1; pass a later --end "
            "or a shorter --lookback."
        ) from None
    if end.timestamp() * US_PER_S <= first_us or start.timestamp() * US_PER_S > last_us:
        first, last = (_iso(datetime.fromtimestamp(us / US_PER_S, tz=UTC)) for us in (first_us, last_us))
        raise InputError(
            f"The window {_iso(start)} to {_iso(end)} holds no sample: the telemetry store {store.root} "
            f"covers {first} to {last}. Pass an --end inside that range (or leave it out for the latest "
            "sample), or a longer --lookback."
        )
    return Window(start=start, end=end, percentile=percentile)


def _iso(dt: datetime) -> str:
    return dt.isoformat(timespec="seconds")


def _naive(dt: datetime) -> datetime:
    return dt.astimezone(UTC).replace(tzinfo=None)


def gpu_stats(store: TelemetryStore, window: Window) -> list[GpuStats]:
    """One :class:`GpuStats` per GPU (or MIG instance) with samples in the window."""
    start_us = int(window.start.timestamp() * US_PER_S)
    end_us = int(window.end.timestamp() * US_PER_S)
    con = store.connect(start_us, end_us)
    scales = ", ".join(f"('{m}', {s!r})" for m, s in BIN_SCALE.items())
    p = window.percentile
    rows = con.execute(
        f"""
        WITH sc AS (SELECT s.series_id, s.gpu_key, s.metric, v.scale FROM series s
                    JOIN (VALUES {scales}) v(metric, scale) USING (metric)),
        h1 AS (SELECT x.series_id, CAST(ceil(x.value * sc.scale) AS INTEGER) AS bin, count(*) AS n,
                      sum(x.value) AS total, max(x.value) AS mx, min(x.ts) AS t0, max(x.ts) AS t1
               FROM samples x JOIN sc USING (series_id)
               WHERE x.ts >= ? AND x.ts < ? GROUP BY ALL),
        h AS (SELECT sc.gpu_key, sc.metric, any_value(sc.scale) AS scale, bin, sum(n) AS n, sum(total) AS
        total,
                     max(mx) AS mx, min(t0) AS t0, max(t1) AS t1
              FROM h1 JOIN sc USING (series_id) GROUP BY sc.gpu_key, sc.metric, bin),
        c AS (SELECT *, sum(n) OVER (PARTITION BY gpu_key, metric ORDER BY bin) AS cum,
                     sum(n) OVER (PARTITION BY gpu_key, metric) AS tot FROM h)
        SELECT gpu_key, metric, max(tot), sum(total) / max(tot), min(bin) FILTER (cum >= 0.5 * tot) /
        any_value(scale),
               min(bin) FILTER (cum >= {p} * tot) / any_value(scale), min(bin) FILTER (cum >= 0.99 * tot)
               / any_value(scale),
               max(mx), min(t0), max(t1)
        FROM c GROUP BY gpu_key, metric
        """,
        [_naive(window.start), _naive(window.end)],
    ).fetchall()
    labels = con.execute(
        """
        WITH n AS (SELECT series_id, count(*) AS n FROM samples WHERE ts >= ? AND ts < ? GROUP BY series_id)
        SELECT gpu_key, any_value(host), any_value(gpu_index), any_value(gpu_uuid), any_value(model),
               any_value(mig_profile), any_value(provider), any_value(instance_type), any_value(region),
               arg_max(pod, n), arg_max(namespace, n), arg_max(job, n)
        FROM series JOIN n USING (series_id) GROUP BY gpu_key
        """,
        [_naive(window.start), _naive(window.end)],
    ).fetchall()
    con.close()
    per: dict[str, dict[str, Any]] = {}
    for key, metric, n, mean, p50, phi, p99, mx, t0, t1 in rows:
        d = per.setdefault(key, {"metrics": {}, "t0": t0, "t1": t1})
        top = float(mx)  # a bin's upper edge never exceeds the largest sample
        d["metrics"][metric] = MetricStats(
            samples=int(n),
            mean=float(mean),
            p50=min(float(p50), top),
            p_hi=min(float(phi), top),
            p99=min(float(p99), top),
            max=top,
        )
        d["t0"], d["t1"] = min(d["t0"], t0), max(d["t1"], t1)
    out = []
    for key, host, idx, uuid, model, mig, prov, itype, region, pod, ns, job in sorted(
        labels, key=lambda r: r[0]
    ):
        if key not in per:
            continue
        d = per[key]
        t0, t1 = d["t0"].replace(tzinfo=UTC), d["t1"].replace(tzinfo=UTC)
        n_max = max(m.samples for m in d["metrics"].values())
        step_h = (t1 - t0).total_seconds() / SECONDS_PER_HOUR / max(n_max - 1, 1)
        out.append(
            GpuStats(
                gpu_key=key,
                host=host,
                gpu_index=int(idx),
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
                hours=(t1 - t0).total_seconds() / SECONDS_PER_HOUR + step_h,
                metrics=d["metrics"],
            )
        )
    return out


def hourly_heatmap(store: TelemetryStore, window: Window, metric: str) -> list[tuple[datetime, float]]:
    """Fleet mean of ``metric`` per hour in the window (for the time heat map)."""
    con = store.connect(int(window.start.timestamp() * US_PER_S), int(window.end.timestamp() * US_PER_S))
    rows = con.execute(
        "SELECT date_trunc('hour', ts) AS h, avg(value) FROM samples JOIN series USING (series_id) "
        "WHERE metric = ? AND ts >= ? AND ts < ? GROUP BY h ORDER BY h",
        [metric, _naive(window.start), _naive(window.end)],
    ).fetchall()
    con.close()
    return [(h.replace(tzinfo=UTC), float(v)) for h, v in rows]


__all__ = [
    "LOOKBACK_PRESETS_DAYS",
    "GpuStats",
    "MetricStats",
    "Window",
    "gpu_stats",
    "hourly_heatmap",
    "resolve_window",
]
