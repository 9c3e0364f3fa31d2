"""Alert rules: a YAML file (defaults from the assessment seed), evaluated over stored telemetry in SQL, and
exported as Prometheus alerting rules.

A rule fires for a subject (GPU, service, or the fleet for cost) when its condition holds at every evaluation
step for at least ``for`` (the ``for:`` semantics of Prometheus). In SQL: values are averaged per subject and
step bucket, then consecutive true buckets are grouped into runs (gaps-and-islands: ``bucket - row_number *
step`` is constant within a run); a run of ``for`` or longer is an alert event. A gap in the data breaks a run
(missing data never fires).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, Final, Literal

import yaml
from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from gpufleet.errors import ConfigFileError, InputError
from gpufleet.fileio import check_top_level, load_structured_file, parse_yaml_or_json
from gpufleet.strict_model import NoBoolNumbers
from gpufleet.telemetry.analyze import Window
from gpufleet.telemetry.inventory import InventoryEntry, resolve_cost
from gpufleet.telemetry.readers.common import VALUE_RANGE, exporter_names
from gpufleet.telemetry.schema import METRICS, SERVICE_METRICS
from gpufleet.telemetry.store import TelemetryStore
from gpufleet.units import HOURS_PER_DAY, SECONDS_PER_HOUR, US_PER_S
from gpufleet.validation import check_number, checked_arguments

#: Longest evaluation step [s]: 366 days (a step longer than a year evaluates nothing useful).
MAX_STEP_S: Final = 366 * 24 * 3600.0

DERIVED: Final[dict[str, str]] = {
    "memory_used_pct": "FB used / capacity (memory.total, else used + free + reserved) x 100, per GPU",
    "request_latency_p95_s": "p95 of request_latency_s per 5-minute window, per service",
    "ttft_p95_s": "p95 time to first token per 5-minute window, per pod (vLLM, SGLang TTFT histograms)",
    "tpot_p95_s": "p95 time per output token per 5-minute window, per pod (vLLM, SGLang, TGI histograms)",
    "preemptions_per_5m": "requests preempted per 5-minute window, per pod (vllm:num_preemptions_total)",
    "cost_usd_per_day": "fleet GPU-hours per UTC day x each GPU's price per hour (inventory/catalog)",
}
#: Metrics a traffic floor (``min_requests_per_s``) applies to: a p95 of requests per 5-minute window.
FLOOR_METRICS: Final = ("ttft_p95_s", "tpot_p95_s")
#: Requests per 5-minute window of one pod below which a latency p95 is not judged: with fewer than 20
#: observations the empirical p95 is the slowest single request, so one slow request on a quiet service pages
#: (Google SRE Workbook, "Alerting on SLOs", "Low-traffic services and error budget alerting"). The default
#: rules ask 0.1 req/s, 30 requests a window, and the floor is read from the TTFT histogram's count (one
#: observation per request; TGI, which exports no TTFT histogram: its per-request TPOT histogram's count).
WINDOW_S: Final = 300.0
_DURATION_RE: Final = re.compile(r"^(\d+(?:\.\d+)?)(s|m|h|d)$")
_UNIT_S: Final = {"s": 1.0, "m": 60.0, "h": SECONDS_PER_HOUR, "d": SECONDS_PER_HOUR * HOURS_PER_DAY}
Op = Literal[">", ">=", "<", "<="]
#: Longest ``for:`` [s]: the longest lookback window (gpufleet.telemetry.analyze.MAX_LOOKBACK_DAYS, 36,500 d)
_MAX_FOR_S: Final = 36_500 * HOURS_PER_DAY * SECONDS_PER_HOUR


def parse_duration_s(text: str) -> float:
    m = _DURATION_RE.match(str(text).strip())
    if m is None:
        raise ValueError(f"duration {text!r} must look like 30s, 10m, 1h or 1d")
    return float(m.group(1)) * _UNIT_S[m.group(2)]


class _RuleIn(NoBoolNumbers):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)
    name: str = Field(pattern=r"^[a-zA-Z_][a-zA-Z0-9_]*$")
    metric: str
    op: Op = ">"
    threshold: float
    for_: str = Field(default="0s", alias="for")
    severity: str = "warning"
    action: str = ""
    promql: str | None = None
    #: traffic floor [requests/s per pod over the 5-minute window]: below it the latency rule does not fire
    min_requests_per_s: float | None = Field(default=None, gt=0, le=1e6)

    @field_validator("metric")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in METRICS and v not in DERIVED:
            raise ValueError(f"unknown metric {v!r}; use one of {', '.join([*METRICS, *DERIVED])}")
        return v

    @field_validator("for_")
    @classmethod
    def _dur(cls, v: str) -> str:
        if parse_duration_s(v) > _MAX_FOR_S:  # longer than any window: a rule that can never fire
            raise ValueError(
                f"duration {v!r} is longer than the longest window evaluated (36,500 days, the --lookback "
                "maximum), so the rule could never fire; give at most 36500d"
            )
        return v

    @model_validator(mode="after")
    def _floor_metric(self) -> _RuleIn:
        if self.min_requests_per_s is not None and self.metric not in FLOOR_METRICS:
            raise ValueError(
                "min_requests_per_s applies to request-latency percentiles "
                f"({', '.join(FLOOR_METRICS)}), not {self.metric}; remove it from this rule"
            )
        if self.min_requests_per_s is not None and self.promql:
            # the exported rule would be the user's expression without the guard: a silent difference from
            # the store's evaluation, which applies the floor
            raise ValueError(
                "min_requests_per_s is added to the built-in expression only; with your own promql, put the "
                "traffic guard in it (e.g. `... and on (namespace, pod) (sum by (namespace, pod) "
                "(rate(<histogram>_count[5m])) >= 0.1)`) and remove min_requests_per_s"
            )
        return self

    @model_validator(mode="after")
    def _reachable(self) -> _RuleIn:
        """A threshold the metric can never cross (``gpu_util_pct > 900``: a percent typed as 0-1000, or
        a unit mix-up) is an error, not a rule that silently never fires."""
        rng = {**VALUE_RANGE, "memory_used_pct": (0.0, 100.0)}.get(self.metric)
        if rng is None:
            return self
        lo, hi = rng
        t = self.threshold
        never = {">": t >= hi, ">=": t > hi, "<": t <= lo, "<=": t < lo}[self.op]
        if never:
            raise ValueError(
                f"threshold {t:g} with op {self.op!r} can never be met: {self.metric} ranges from {lo:g} to "
                f"{hi:g}. Check the unit (percent 0-100, MiB, W, s) of the threshold"
            )
        # the mirror: a threshold outside the range on the side the op accepts fires on every sample
        # (gpu_util_pct > -1 was an alert that is always on)
        always = {">": t < lo, ">=": t < lo, "<": t > hi, "<=": t > hi}[self.op]
        if always:
            raise ValueError(
                f"threshold {t:g} with op {self.op!r} is met by every value: {self.metric} ranges from "
                f"{lo:g} to {hi:g}, so the rule would fire all the time. Give a threshold inside that range "
                "(check its unit: percent 0-100, MiB, W, s)"
            )
        return self


@dataclass(frozen=True, slots=True, kw_only=True)
class AlertRule:
    name: str
    metric: str
    op: str
    threshold: float
    for_s: float
    for_text: str
    severity: str
    action: str
    promql: str | None
    #: traffic floor [requests/s per pod, 5-minute window]; None = the rule fires at any traffic
    min_requests_per_s: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AlertEvent:
    rule: str
    subject: str  # GPU key, service, or "fleet"
    start: datetime
    end: datetime
    peak: float  # the extreme value in the run (canonical unit of the rule's metric)
    severity: str
    action: str
    #: what the event does not mean, where the data says so ('' otherwise): memory held flat at a high share
    #: for an hour or more is a reservation, not a shortage (:func:`reservation_note`)
    note: str = ""
    #: the unit of ``peak`` (and of the rule's threshold): "%", "s", "USD/day", ... (:func:`metric_unit`)
    unit: str = ""

    @property
    def duration_s(self) -> float:
        return (self.end - self.start).total_seconds()


#: Units of the derived metrics (the canonical ones carry theirs in :data:`METRICS`).
_DERIVED_UNITS: Final[dict[str, str]] = {
    "memory_used_pct": "%",
    "request_latency_p95_s": "s",
    "ttft_p95_s": "s",
    "tpot_p95_s": "s/token",
    "preemptions_per_5m": "preemptions/5 min",
    "cost_usd_per_day": "USD/day",
}


def metric_unit(metric: str) -> str:
    """The unit a rule's threshold and an event's peak are in (a label states it: "peak 2.42" was bare)."""
    if metric in _DERIVED_UNITS:
        return _DERIVED_UNITS[metric]
    unit = METRICS[metric][0] if metric in METRICS else ""
    return "fraction" if unit == "ratio" else unit


#: Most alert rules in one file: each rule is one query over the window (~25 ms on a small store).
MAX_ALERT_RULES = 200


def _parse_rules(doc: Any, source: str) -> tuple[AlertRule, ...]:
    if isinstance(doc, dict) and set(doc) == {"alerts"}:  # the assessment seed's format (seed_alerts.py)
        from gpufleet.telemetry.seed_alerts import seed_alerts_to_rules

        defaults = parse_yaml_or_json(Path("default_alerts.yaml"), default_rules_text(), lambda k, e: e)
        by_name = {r["name"]: r for r in defaults["rules"]}
        doc = {"rules": seed_alerts_to_rules(doc["alerts"], source, by_name)}
    check_top_level(doc, source=source, allowed=("rules",), lists=("rules",), fix="See docs/telemetry.md.")
    if len(doc["rules"]) > MAX_ALERT_RULES:
        raise ConfigFileError(
            f"{source} has {len(doc['rules']):,} rules; at most {MAX_ALERT_RULES} are evaluated in one run "
            "(each is a query over the store's window: 1,000 rules took ~30 s). Keep the rules you act on, "
            "or split the file and run `telemetry alerts` once per part."
        )
    out = []
    names = set()
    for i, raw in enumerate(doc["rules"], start=1):
        try:
            r = _RuleIn.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise ConfigFileError(
                f"{source}, rule {i}: {'.'.join(str(x) for x in err['loc']) or 'rule'}: {err['msg']}. Keys: "
                "name, "
                "metric, op (> >= < <=), threshold, for (e.g. 10m), severity, action, promql, "
                "min_requests_per_s (ttft_p95_s, tpot_p95_s)."
            ) from None
        if r.name in names:
            raise ConfigFileError(f"{source}: rule name {r.name!r} is used twice; names must be unique.")
        names.add(r.name)
        out.append(
            AlertRule(
                name=r.name,
                metric=r.metric,
                op=r.op,
                threshold=r.threshold,
                for_s=parse_duration_s(r.for_),
                for_text=r.for_,
                severity=r.severity,
                action=r.action,
                promql=r.promql,
                min_requests_per_s=r.min_requests_per_s,
            )
        )
    return tuple(out)


def default_rules_text() -> str:
    return (
        resources.files("gpufleet.telemetry").joinpath("data/default_alerts.yaml").read_text(encoding="utf-8")
    )


@checked_arguments("alert rules reader")
def load_rules(path: Path | str | None = None) -> tuple[AlertRule, ...]:
    """Rules from a YAML/JSON file, or the shipped defaults (the seed's thresholds) when ``path`` is None."""
    if path is None:
        return _parse_rules(
            parse_yaml_or_json(Path("default_alerts.yaml"), default_rules_text(), lambda k, e: e),
            "default rules",
        )
    return _parse_rules(load_structured_file(path, what="alert rule file"), f"The alert rule file {path}")


def _naive(dt: datetime) -> datetime:
    return dt.astimezone(UTC).replace(tzinfo=None)


_RUNS_SQL: Final = """
, w AS (SELECT subject, t, v, (v {op} ?) AS hit, lag(t) OVER (PARTITION BY subject ORDER BY t) AS prev
FROM v),
x AS (SELECT *, sum(CASE WHEN NOT hit OR prev IS NULL OR epoch(t) - epoch(prev) > ? THEN 1 ELSE 0 END)
                OVER (PARTITION BY subject ORDER BY t ROWS UNBOUNDED PRECEDING) AS grp FROM w)
SELECT subject, min(t) AS t0, max(t) AS t1, {peak}(v), max(v) - min(v) FROM x WHERE hit GROUP BY subject, grp
HAVING epoch(max(t)) + ? - epoch(min(t)) >= ? ORDER BY t0, subject
"""


#: A GPU's memory capacity: memory.total = used + free + reserved (nvidia-smi; the H100 capture in
#: fleet-anchors C.5 reads 81559 MiB total = 19818 used + 61263 free + 479 reserved). dcgm-exporter's default
#: counters export FB_USED, FB_FREE and FB_RESERVED but not FB_TOTAL (fleet-anchors C.1), so used / (used +
#: free) alone overstates the share used (85.1 % for 84.6 % on an H100) and fires a > 85 % rule early.
_CAPACITY_SQL: Final = "coalesce(total, used + free + coalesce(reserved, 0.0))"


#: Derived metrics computed from counters per 5-minute window (histogram quantiles, counter increases).
_WINDOWED: Final[dict[str, str]] = {
    "ttft_p95_s": "ttft_s_bucket",
    "tpot_p95_s": "tpot_s_bucket",
    "preemptions_per_5m": "preemptions_total",
}


def _bucket_increases(
    store: TelemetryStore, window: Window, base: str
) -> dict[tuple[str, Any], list[tuple[float, float]]]:
    """(host, 5-minute window) -> [(upper bound, increase in the window)] of a counter family ``base``."""
    con = store.connect(int(window.start.timestamp() * US_PER_S), int(window.end.timestamp() * US_PER_S))
    rows = con.execute(
        """WITH d AS (SELECT host, le, ts, value - lag(value) OVER (PARTITION BY series_id ORDER BY ts) AS dv,
                             value FROM samples_l WHERE metric = ? AND ts >= ? AND ts < ?)
           SELECT host, time_bucket(INTERVAL '300 seconds', ts) AS t, le,
                  sum(CASE WHEN dv IS NULL THEN 0 WHEN dv < 0 THEN value ELSE dv END)
           FROM d GROUP BY ALL ORDER BY host, t""",
        [base, _naive(window.start), _naive(window.end)],
    ).fetchall()
    con.close()
    per: dict[tuple[str, Any], list[tuple[float, float]]] = {}
    for host, t, le, inc in rows:
        bound = float("inf") if le is None else float(le) if le not in ("+Inf", "Inf") else float("inf")
        per.setdefault((host, t), []).append((bound, float(inc)))
    return per


def _requests(buckets: list[tuple[float, float]]) -> float:
    """Observations in the window: the +Inf bucket's increase (a histogram's count)."""
    return max((c for b, c in buckets if b == float("inf")), default=0.0)


def _windowed_values(
    store: TelemetryStore, window: Window, metric: str, min_requests_per_s: float | None = None
) -> dict[str, Any]:
    """Columns (subject, t, v) of a counter-derived metric per 5-minute window: increases per window (a drop
    is a restart: the new value counts), then the histogram's p95 (Prometheus ``histogram_quantile``) or
    the increase itself. With ``min_requests_per_s`` a window whose pod served fewer requests (the TTFT
    histogram's count; a pod without one, TGI: its per-request TPOT histogram's count) reads as not
    breaching: the column ``quiet`` marks it and the caller reads its value as never over the threshold."""
    from gpufleet.telemetry.analyze_workloads import histogram_quantile

    per = _bucket_increases(store, window, _WINDOWED[metric])
    counts: dict[tuple[str, Any], float] = {}
    if min_requests_per_s is not None:
        counts = {k: _requests(b) for k, b in _bucket_increases(store, window, "ttft_s_bucket").items()}
        ttft_hosts = {h for h, _ in counts}
    out: dict[str, list[Any]] = {"subject": [], "t": [], "v": [], "quiet": []}
    for (host, t), buckets in per.items():
        if metric == "preemptions_per_5m":
            v: float | None = sum(c for _, c in buckets)
        else:
            v = histogram_quantile(0.95, buckets)
        if v is None:
            continue
        quiet = False
        if min_requests_per_s is not None:
            n = counts.get((host, t), 0.0) if host in ttft_hosts else _requests(buckets)
            quiet = n < min_requests_per_s * WINDOW_S * (1.0 - 1e-9)
        out["quiet"].append(quiet)
        out["subject"].append(host)
        out["t"].append(t)
        out["v"].append(v)
    import numpy as np

    return {
        "subject": np.asarray(out["subject"], dtype=object),
        "t": np.asarray(out["t"], dtype="datetime64[us]"),
        "v": np.asarray(out["v"], dtype=float),
        "quiet": np.asarray(out["quiet"], dtype=bool),
    }


def _series_sql(metric: str, step_s: float) -> str:
    b = f"time_bucket(INTERVAL '{step_s:g} seconds', ts)"
    if metric == "memory_used_pct":
        return (
            f"WITH m AS (SELECT gpu_key AS subject, {b} AS t, avg(value) FILTER (metric = 'fb_used_mib') AS "
            "used, "
            "avg(value) FILTER (metric = 'fb_free_mib') AS free, avg(value) FILTER (metric = "
            "'fb_total_mib') AS total, avg(value) FILTER (metric = 'fb_reserved_mib') AS reserved "
            "FROM samples_l WHERE metric IN ('fb_used_mib', 'fb_free_mib', 'fb_total_mib', "
            "'fb_reserved_mib') AND ts >= ? AND ts < ? "
            f"GROUP BY ALL), v AS (SELECT subject, t, 100.0 * used / {_CAPACITY_SQL} AS v FROM m "
            f"WHERE used IS NOT NULL AND {_CAPACITY_SQL} > 0)"
        )
    if metric == "request_latency_p95_s":
        b5 = "time_bucket(INTERVAL '300 seconds', ts)"
        return (
            f"WITH v AS (SELECT host AS subject, {b5} AS t, quantile_cont(value, 0.95) AS v FROM samples_l "
            "WHERE metric = 'request_latency_s' AND ts >= ? AND ts < ? GROUP BY ALL)"
        )
    subject = "host" if metric in SERVICE_METRICS else "gpu_key"  # a pod's serving engine: svc:<ns>/<pod>
    return (
        f"WITH v AS (SELECT {subject} AS subject, {b} AS t, avg(value) AS v FROM samples_l "
        f"WHERE metric = '{metric}' AND ts >= ? AND ts < ? GROUP BY ALL)"
    )


def _cost_per_day(
    store: TelemetryStore, window: Window, inventory: Sequence[InventoryEntry]
) -> list[tuple[datetime, float]]:
    con = store.connect(int(window.start.timestamp() * US_PER_S), int(window.end.timestamp() * US_PER_S))
    rows = con.execute(
        """WITH g AS (SELECT gpu_key, date_trunc('day', ts) AS d, min(ts) AS t0, max(ts) AS t1, count(*) AS n,
                  any_value(host) AS host, any_value(gpu_uuid) AS uuid, any_value(model) AS model,
                  any_value(provider) AS provider, any_value(instance_type) AS itype, any_value(region)
                  AS region
           FROM samples_l WHERE ts >= ? AND ts < ? AND gpu_index >= 0 AND metric IN
             ('sm_active_ratio', 'gr_engine_active_ratio', 'gpu_util_pct', 'fb_used_mib')
           GROUP BY gpu_key, d, metric)
           SELECT gpu_key, d, max(epoch(t1) - epoch(t0)), max(n), any_value(host), any_value(uuid),
                  any_value(model), any_value(provider), any_value(itype), any_value(region) FROM g GROUP
                  BY gpu_key, d""",
        [_naive(window.start), _naive(window.end)],
    ).fetchall()
    con.close()
    per_day: dict[datetime, float] = {}
    prices: dict[str, float | None] = {}
    for key, d, span_s, n, host, uuid, model, prov, itype, region in rows:
        span_h = span_s / SECONDS_PER_HOUR
        if key not in prices:
            prices[key] = resolve_cost(
                host=host,
                gpu_uuid=uuid,
                model=model,
                inventory=inventory,
                labels={"provider": prov, "instance_type": itype, "region": region},
            ).price_usd_per_gpu_hour
        p = prices[key]
        if p is None:
            continue
        hours = span_h * n / max(n - 1, 1) if n > 1 else 0.0  # span plus one sampling step
        per_day[d.replace(tzinfo=UTC)] = per_day.get(d.replace(tzinfo=UTC), 0.0) + min(hours, 24.0) * p
    return sorted(per_day.items())


def evaluate(
    store: TelemetryStore,
    window: Window,
    rules: Sequence[AlertRule],
    *,
    step_s: float = 60.0,
    inventory: Sequence[InventoryEntry] = (),
    max_gap_s: float = 600.0,
) -> tuple[AlertEvent, ...]:
    """Alert events of ``rules`` over the stored telemetry in ``window``; ``max_gap_s``: the longest gap
    between
    samples that does not break a run (default 600 s: two missed 5-minute scrapes)."""
    step_s = check_number("step", step_s, flag="--step (s)", maximum=MAX_STEP_S)  # type: ignore[assignment]
    if step_s <= 0:
        raise InputError(f"--step {step_s} must be positive (seconds between evaluations, e.g. 60).")
    events: list[AlertEvent] = []
    for r in rules:
        if r.metric == "cost_usd_per_day":
            ops = {">": float.__gt__, ">=": float.__ge__, "<": float.__lt__, "<=": float.__le__}
            for day, usd in _cost_per_day(store, window, inventory):
                if ops[r.op](usd, r.threshold):
                    events.append(
                        AlertEvent(
                            rule=r.name,
                            subject="fleet",
                            start=day,
                            end=day.replace(hour=23, minute=59, second=59),
                            peak=usd,
                            severity=r.severity,
                            action=r.action,
                            unit=metric_unit(r.metric),
                        )
                    )
            continue
        step = 300.0 if r.metric in ("request_latency_p95_s", *_WINDOWED) else step_s
        peak = "max" if r.op.startswith(">") else "min"
        con = store.connect(int(window.start.timestamp() * US_PER_S), int(window.end.timestamp() * US_PER_S))
        if r.metric in _WINDOWED:
            con.register("vtab", _windowed_values(store, window, r.metric, r.min_requests_per_s))
            # a window under the traffic floor is a non-breaching point (it ends a run), not a gap
            never = "'-inf'::DOUBLE" if r.op.startswith(">") else "'inf'::DOUBLE"
            sql = (
                f"WITH v AS (SELECT subject, t, CASE WHEN quiet THEN {never} ELSE v END AS v FROM vtab)"
                + _RUNS_SQL.format(op=r.op, peak=peak)
            )
            args: list[Any] = [r.threshold, max(max_gap_s, step), step, r.for_s]
        else:
            sql = _series_sql(r.metric, step) + _RUNS_SQL.format(op=r.op, peak=peak)
            args = [
                _naive(window.start),
                _naive(window.end),
                r.threshold,
                max(max_gap_s, step),
                step,
                r.for_s,
            ]
        rows = con.execute(sql, args).fetchall()
        con.close()
        for subject, t0, t1, pk, spread in rows:
            start = t0.replace(tzinfo=UTC)
            end = datetime.fromtimestamp(t1.replace(tzinfo=UTC).timestamp() + step, tz=UTC)
            events.append(
                AlertEvent(
                    rule=r.name,
                    subject=subject,
                    start=start,
                    end=end,
                    peak=float(pk),
                    severity=r.severity,
                    action=r.action,
                    note=reservation_note(r.metric, float(spread), (end - start).total_seconds(), float(pk)),
                    unit=metric_unit(r.metric),
                )
            )
    return tuple(events)


#: memory used that moves less than this over a whole run [percentage points of capacity] is held flat
FLAT_MEMORY_SPREAD_PCT: Final = 1.0
#: the shortest run read as a reservation: an hour at one level (a batch or a cache growing moves within it)
FLAT_MEMORY_MIN_S: Final = 3600.0


def reservation_note(metric: str, spread_pct: float, duration_s: float, peak_pct: float) -> str:
    """Why a memory event is not a shortage: FB used that stays within :data:`FLAT_MEMORY_SPREAD_PCT` points
    for :data:`FLAT_MEMORY_MIN_S` or longer is memory reserved at start-up, not growing toward OOM. vLLM
    holds ``gpu_memory_utilization`` (0.9) of the GPU whatever its traffic, SGLang ``mem_fraction_static``,
    TGI, JAX and PyTorch's caching allocator likewise, so the seed's rule (memory > 85 % for 5 min) fires
    for as long as such a GPU runs; "reduce batch size or scale up" does not apply there. The rule keeps
    the seed's meaning; the event says what it is. Before, an idle-heavy vLLM fleet of 8 L40S showed 8
    week-long memory alerts with that action and nothing else."""
    if metric != "memory_used_pct" or duration_s < FLAT_MEMORY_MIN_S or spread_pct >= FLAT_MEMORY_SPREAD_PCT:
        return ""
    return (
        f"held flat at {peak_pct:.1f} % (moved {spread_pct:.2f} points in {duration_s / 3600:.1f} h): memory "
        "reserved at start-up (e.g. vLLM gpu_memory_utilization 0.9, a framework's cache), not growth toward "
        "OOM; judge serving memory by serving_kv_cache and serving_preemptions"
    )


def _names(canonical: str) -> str:
    """A PromQL selector of every exporter name of ``canonical`` (``{__name__=~"a|b"}``)."""
    return '{__name__=~"' + "|".join(exporter_names(canonical)) + '"}'


#: p95 of a histogram per pod over 5 minutes (Prometheus docs, "Histograms and summaries").
_HQ: Final = "histogram_quantile(0.95, sum by (le, namespace, pod) (rate({sel}[5m])))"

#: PromQL per metric over dcgm-exporter series (DCGM metric names as the exporter writes them).
_PROMQL: Final[dict[str, str]] = {
    "gpu_util_pct": "DCGM_FI_DEV_GPU_UTIL",
    "sm_active_ratio": "DCGM_FI_PROF_SM_ACTIVE",
    "tensor_active_ratio": "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    "dram_active_ratio": "DCGM_FI_PROF_DRAM_ACTIVE",
    "gr_engine_active_ratio": "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "fb_used_mib": "DCGM_FI_DEV_FB_USED",
    "power_w": "DCGM_FI_DEV_POWER_USAGE",
    "gpu_temp_c": "DCGM_FI_DEV_GPU_TEMP",
    # capacity = used + free + reserved (see _CAPACITY_SQL); reserved where exported, else 0 (`or` on the
    # same labels: an exporter without FB_RESERVED still gets the rule instead of an empty expression)
    "memory_used_pct": "DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE + "
    "(DCGM_FI_DEV_FB_RESERVED or DCGM_FI_DEV_FB_FREE * 0)) * 100",
    "request_latency_p95_s": "quantile_over_time(0.95, gpufleet_request_latency_seconds[5m])",
    "request_latency_s": "gpufleet_request_latency_seconds",
    # serving engines: one expression over vLLM, TGI and SGLang names, per pod
    "queue_requests": f"max by (namespace, pod) ({_names('queue_requests')})",
    "running_requests": f"max by (namespace, pod) ({_names('running_requests')})",
    "kv_cache_usage_ratio": f"max by (namespace, pod) ({_names('kv_cache_usage_ratio')})",
    "ttft_p95_s": _HQ.format(sel=_names("ttft_s_bucket")),
    "tpot_p95_s": _HQ.format(sel=_names("tpot_s_bucket")),
    "preemptions_per_5m": f"sum by (namespace, pod) (increase({_names('preemptions_total')}[5m]))",
}


#: requests/s per pod over 5 minutes: the TTFT histogram's count (one observation per request) for vLLM and
#: SGLang; TGI exports no TTFT histogram, its per-request TPOT histogram counts its requests. A pod runs one
#: engine, so the sum counts each request once.
_REQUEST_RATE: Final = (
    'sum by (namespace, pod) (rate({__name__=~"'
    + "|".join((*exporter_names("ttft_s_bucket"), "tgi_request_mean_time_per_token_duration_bucket"))
    + '",le="+Inf"}[5m]))'
)


@checked_arguments("Prometheus rules export")
def prometheus_rules(rules: Sequence[AlertRule], *, price_usd_per_gpu_hour: float | None = None) -> str:
    """The rules as a Prometheus rule file (``groups:
    [{name, rules: [{alert, expr, for, labels, annotations}]}]``).

    ``cost_usd_per_day`` becomes ``count(DCGM_FI_DEV_GPU_UTIL) * price * 24``, using the fleet's mean
    price per
    GPU-hour (from the store and catalog); without a price that rule is left out (stated in the file).
    """
    out: list[dict[str, Any]] = []
    skipped: list[str] = []
    for r in rules:
        if r.promql:
            expr = f"({r.promql}) {r.op} {r.threshold:g}"
        elif r.metric == "cost_usd_per_day":
            if price_usd_per_gpu_hour is None:
                skipped.append(r.name)
                continue
            expr = f"count(DCGM_FI_DEV_GPU_UTIL) * {price_usd_per_gpu_hour:.4f} * 24 {r.op} {r.threshold:g}"
        elif r.metric in _PROMQL:
            expr = f"({_PROMQL[r.metric]}) {r.op} {r.threshold:g}"
            if r.min_requests_per_s is not None:
                expr += f" and on (namespace, pod) ({_REQUEST_RATE} >= {r.min_requests_per_s:g})"
        else:
            skipped.append(r.name)
            continue
        item: dict[str, Any] = {
            "alert": r.name,
            "expr": expr,
            "labels": {"severity": r.severity},
            "annotations": {
                "summary": f"{r.metric} {r.op} {r.threshold:g} for {r.for_text}"
                + (
                    f" at >= {r.min_requests_per_s:g} requests/s per pod"
                    if r.min_requests_per_s is not None
                    else ""
                ),
                "action": r.action or "see the runbook",
            },
        }
        if r.for_s > 0:
            item["for"] = r.for_text
        out.append(item)
    head = "# Generated by gpufleet telemetry alerts --export prometheus\n"
    if skipped:
        head += f"# Left out (no PromQL equivalent or no price known): {', '.join(skipped)}\n"
    return head + yaml.safe_dump({"groups": [{"name": "gpufleet", "rules": out}]}, sort_keys=False)


__all__ = [
    "DERIVED",
    "AlertEvent",
    "AlertRule",
    "default_rules_text",
    "evaluate",
    "load_rules",
    "parse_duration_s",
    "prometheus_rules",
]
