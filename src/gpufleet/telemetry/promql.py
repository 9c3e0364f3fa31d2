"""Fleet statistics computed inside Prometheus (or Thanos Query, Mimir, VictoriaMetrics: any server of the
Prometheus HTTP API): PromQL pushdown, only summaries come back.

``telemetry findings --prometheus URL`` sends instant queries evaluated at the window's end over a range of
the lookback, so the data pulled grows with series x statistics, not with samples. Only what
:func:`gpufleet.telemetry.findings.classify` reads is pushed down (:data:`QUANTILES_READ`):

- per series (one query per metric and statistic over every series of a host chunk; plain range functions
  over raw samples, no subquery, no relabelling): ``count_over_time``, ``sum_over_time``, ``max_over_time``
  and one ``quantile_over_time`` per metric (the window's percentile of the compute signals, DRAM activity and
  power; the p99 of memory used). No p50 (``MetricStats.p50`` is NaN here): a quantile sorts every sample of
  its range, the costliest range function. Each series' 5-minute coverage and first/last step:
  ``count_over_time`` / ``min_over_time(timestamp(...))`` of ``(count without (__name__) (X))[w:5m]``.
- per GPU and per workload, folded here from the per-series values: counts, sums and coverage add, peaks
  and percentiles take the largest; the workload of each series is
  :func:`gpufleet.telemetry.workloads.workload_of` of its labels, as in the store path (so pods, GPUs,
  GPU-hours, means and peaks per workload need no query of their own);
- per workload, what needs the replicas side by side: the percentile of the busiest replica per 1-minute
  step (``quantile_over_time(p, (max by (namespace, workload) (X))[w:1m])``, the owner made by one
  ``label_replace`` with ``workloads.POD_OWNER_RE``) and the observed hours (5-minute steps with any replica);
- serving: queue and KV-cache quantiles per workload, ``increase`` of preemptions and of histogram buckets
  (``histogram_quantile`` done here on the summed buckets, as the store path does).

Queries run ``workers`` at a time (Prometheus evaluates concurrent queries in parallel, up to
``--query.max-concurrency``, 20 by default). Chunking: GPU queries by groups of hosts, workload queries by
groups of namespaces (``--chunk-hosts``), so a query stays under Prometheus's ``--query.max-samples`` (default
50,000,000 samples loaded at once: about 620 series of 14 days at 15 s); and optionally by time
(``--chunk-days``): counts and sums add, means weight by count, peaks take the max, and a quantile over
several time chunks is the largest chunk's quantile (an upper bound, said so in the caveats).
"""

from __future__ import annotations

import math
import re
import threading
from collections import defaultdict
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import httpx

from gpufleet.errors import FetchError, InputError
from gpufleet.telemetry.analyze import GpuStats, MetricStats, Window
from gpufleet.telemetry.analyze_workloads import (
    DEFAULT_CHUNK_HOSTS,
    TREND_SHARE,
    FleetStats,
    ServingStats,
    WorkloadStats,
    histogram_quantile,
    serving_from,
)
from gpufleet.telemetry.readers.common import DCGM_METRICS, LABEL_VARIANTS, canonical_labels, exporter_names
from gpufleet.telemetry.schema import gpu_key
from gpufleet.telemetry.workloads import POD_OWNER_RE, WorkloadId, WorkloadRule, workload_of
from gpufleet.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

#: GPU metrics the findings read (canonical -> dcgm-exporter name).
GPU_METRICS: Final[dict[str, str]] = {
    c: name
    for name, (c, _) in DCGM_METRICS.items()
    if c
    in (
        "sm_active_ratio",
        "gr_engine_active_ratio",
        "gpu_util_pct",
        "dram_active_ratio",
        "fb_used_mib",
        "fb_free_mib",
        "fb_total_mib",
        "fb_reserved_mib",
        "power_w",
        "power_limit_w",
    )
}
_WL: Final = "gpufleet_workload"
_NS: Final = "gpufleet_namespace"
_POD: Final = "gpufleet_pod"
#: 5-minute coverage steps and 1-minute workload steps, as the store path (analyze_workloads).
_COVER: Final = "5m"
_COVER_S: Final = 300.0
#: Queries in flight at once (Prometheus runs up to --query.max-concurrency=20 in parallel).
DEFAULT_WORKERS: Final = 4
_SERVING: Final = (
    "queue_requests",
    "kv_cache_usage_ratio",
    "preemptions_total",
    "ttft_s_bucket",
    "tpot_s_bucket",
)
_STEP: Final = "1m"


def _sel(name: str, matcher: str = "") -> str:
    """A selector of ``name`` in any letter case (lower-cased pipelines), plus a label matcher."""
    return (
        '{__name__=~"(?i)'
        + re.escape(name).replace("\\:", ":")
        + '"'
        + (f", {matcher}" if matcher else "")
        + "}"
    )


def _glob_re(glob: str) -> str:
    """A shell glob as an RE2 regular expression (``*`` any run, ``?`` one character)."""
    return "".join(".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in glob)


def _workload_expr(
    expr: str, rules: Sequence[WorkloadRule], present: frozenset[str] | None = None
) -> tuple[str, str]:
    """``expr`` with label ``gpufleet_workload`` (the owner of its pod, a job id, or an inventory rule
    ``rule:<i>``) in the precedence of :func:`gpufleet.telemetry.workloads.workload_of`, and the labels to
    group a workload by (its namespace label and ``gpufleet_workload``). ``present``: the label names the
    server holds. Each ``label_replace`` runs per series per step inside a subquery (a 14-day range at 1
    minute is 20,160 steps), so: absent variants are skipped, a single namespace or pod label is read in
    place (no copy), and the pod owner and the whole pod name are one regular expression."""

    def have(lab: str) -> bool:
        return present is None or lab in present

    e = expr
    ns_vars = [v for v in LABEL_VARIANTS["namespace"] if have(v)]
    pod_vars = [v for v in LABEL_VARIANTS["pod"] if have(v)]
    ns = ns_vars[0] if len(ns_vars) == 1 else _NS
    pod = pod_vars[0] if len(pod_vars) == 1 else _POD
    if ns == _NS:
        for lab in reversed(ns_vars):  # the first variant present wins: apply it last
            e = f'label_replace({e}, "{_NS}", "$1", "{lab}", "(.+)")'
    if pod == _POD:
        for lab in reversed(pod_vars):
            e = f'label_replace({e}, "{_POD}", "$1", "{lab}", "(.+)")'
    # the owner when a generated suffix matches (groups 1-4), else the whole name (group 5); RE2 prefers
    # the leftmost alternative that matches, as Python's re in workloads.pod_owner
    e = f'label_replace({e}, "{_WL}", "${{1}}${{2}}${{3}}${{4}}${{5}}", "{pod}", "{POD_OWNER_RE}|(.+)")'
    for lab in reversed([v for v in LABEL_VARIANTS["job"] if have(v)]):
        e = f'label_replace({e}, "{_WL}", "job:$1", "{lab}", "(.+)")'
    if rules:
        e = f'label_join({e}, "gpufleet_nspod", "/", "{ns}", "{pod}")'
        for i, r in reversed(list(enumerate(rules))):
            rx = f"{_glob_re(r.namespace) if r.namespace else '.*'}/{_glob_re(r.pod)}"
            e = f'label_replace({e}, "{_WL}", "rule:{i}", "gpufleet_nspod", "{_escape(rx)}")'
    return e, f"{ns}, {_WL}"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


@dataclass(slots=True)
class _Client:
    base: str
    http: httpx.Client
    at: float  # evaluation time [unix s]
    workers: int = 1
    queries: int = 0
    series_returned: int = 0
    bytes_returned: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, path: str, params: dict[str, str]) -> Any:
        try:
            resp = self.http.get(f"{self.base}{path}", params=params)
        except httpx.TimeoutException:
            raise FetchError(
                f"Prometheus at {self.base} did not answer within the timeout. Retry with a larger "
                "--timeout, a smaller --chunk-hosts or --chunk-days."
            ) from None
        except httpx.HTTPError as exc:
            raise FetchError(
                f"Prometheus at {self.base} cannot be reached ({type(exc).__name__}: {exc}). Check the URL "
                f"and that the server is up (curl {self.base}/-/ready)."
            ) from None
        try:
            doc = resp.json()
        except ValueError:
            raise FetchError(
                f"Prometheus at {self.base} answered HTTP {resp.status_code} with a body that is not JSON "
                f"({resp.text[:120]!r}). Is the URL the Prometheus API (not a UI or proxy page)?"
            ) from None
        if resp.status_code != 200 or doc.get("status") != "success":
            raise FetchError(
                f"Prometheus at {self.base} refused the query (HTTP {resp.status_code}, "
                f"{doc.get('errorType')}: {doc.get('error')}). Query sent: {params.get('query', path)[:300]}"
            )
        with self.lock:
            self.bytes_returned += len(resp.content)
        return doc["data"]

    def query(self, q: str, at: float | None = None) -> list[tuple[dict[str, str], float]]:
        """An instant query at ``at`` (default: the window's end): (labels, value) per series."""
        with self.lock:
            self.queries += 1
        data = self.get("/api/v1/query", {"query": q, "time": f"{self.at if at is None else at:.3f}"})
        out = []
        for r in data.get("result", []):
            try:
                v = float(r["value"][1])
            except (KeyError, IndexError, TypeError, ValueError):
                continue
            if math.isnan(v):
                continue
            out.append(({str(k): str(x) for k, x in r["metric"].items()}, v))
        with self.lock:
            self.series_returned += len(out)
        return out

    def query_all(self, jobs: Sequence[tuple[str, float]]) -> list[list[tuple[dict[str, str], float]]]:
        """Instant queries (query, time), ``workers`` in flight at once; results in the order given."""
        if self.workers <= 1 or len(jobs) <= 1:
            return [self.query(q, at) for q, at in jobs]
        with ThreadPoolExecutor(max_workers=self.workers) as ex:
            return list(ex.map(lambda j: self.query(j[0], j[1]), jobs))

    def labels(self, match: str, start: float, end: float) -> frozenset[str]:
        data = self.get("/api/v1/labels", {"match[]": match, "start": f"{start:.3f}", "end": f"{end:.3f}"})
        return frozenset(str(v) for v in data) if isinstance(data, list) else frozenset()

    def label_values(self, label: str, match: str, start: float, end: float) -> list[str]:
        data = self.get(
            f"/api/v1/label/{label}/values", {"match[]": match, "start": f"{start:.3f}", "end": f"{end:.3f}"}
        )
        return sorted(str(v) for v in data) if isinstance(data, list) else []


def _chunks(values: list[str], size: int) -> Iterator[list[str]]:
    for i in range(0, len(values), max(size, 1)):
        yield values[i : i + size]


def _matcher(label: str, values: list[str]) -> str:
    return f'{label}=~"' + "|".join(_escape(re.escape(v)) for v in values) + '"'


def _rng(seconds: float) -> str:
    return f"{max(round(seconds), 1)}s"


#: What :func:`gpufleet.telemetry.findings.classify` reads of each metric, so the only quantiles pushed down
#: (a quantile sorts every sample of its range; count, sum and max are one cheap pass and always fetched):
#: the window's percentile of the compute signals, DRAM activity and power; the p99 of memory used.
QUANTILES_READ: Final[dict[str, tuple[str, ...]]] = {
    "sm_active_ratio": ("phi",),
    "gr_engine_active_ratio": ("phi",),
    "gpu_util_pct": ("phi",),
    "dram_active_ratio": ("phi",),
    "power_w": ("phi",),
    "fb_used_mib": ("p99",),
}


@dataclass(slots=True)
class _Acc:
    """Per (subject, metric) accumulator over series and time chunks (exact for counts, sums, peaks)."""

    n: float = 0.0
    total: float = 0.0
    p_hi: float = math.nan
    p99: float = math.nan
    mx: float = -math.inf
    #: count parts and sum parts folded in: a series holding a NaN sample has a NaN sum_over_time, which
    #: the query drops, so its count arrives without its sum; the mean is then unknown (NaN), not the sum of
    #: the other series over every sample (before: a GPU with one NaN scrape had mean 0)
    n_parts: int = 0
    sum_parts: int = 0
    incomplete: bool = False

    def add(self, part: str, v: float) -> None:
        """Fold one part (n, sum, phi, p99, max) in: counts and sums add; percentiles and the peak take the
        largest (an upper bound for percentiles when the window is chunked in time or a GPU has several
        series)."""
        if part == "n":
            self.n += v
            self.n_parts += 1
        elif part == "sum":
            self.total += v
            self.sum_parts += 1
        elif part == "phi":
            self.p_hi = v if math.isnan(self.p_hi) else max(self.p_hi, v)
        elif part == "p99":
            self.p99 = v if math.isnan(self.p99) else max(self.p99, v)
        else:
            self.mx = max(self.mx, v)

    @property
    def sum_known(self) -> bool:
        return not self.incomplete and self.sum_parts >= self.n_parts

    def merge(self, o: _Acc) -> None:
        self.incomplete |= not o.sum_known
        self.add("n", o.n)
        self.add("sum", o.total)
        if not math.isnan(o.p_hi):
            self.add("phi", o.p_hi)
        if not math.isnan(o.p99):
            self.add("p99", o.p99)
        self.add("max", o.mx)

    def stats(self) -> MetricStats:
        return MetricStats(
            samples=int(self.n),
            mean=(self.total / self.n if self.n else 0.0) if self.sum_known else math.nan,
            p50=math.nan,  # not read by the findings: not pushed down
            p_hi=self.p_hi,
            p99=self.p99,
            max=self.mx,
        )


@dataclass(slots=True)
class _Series:
    """One GPU series (one label set, every metric of it): per-metric statistics, 5-minute coverage."""

    labels: dict[str, str]
    metrics: dict[str, _Acc] = field(default_factory=lambda: defaultdict(_Acc))
    cover_s: float = 0.0
    first: float = math.inf
    last: float = -math.inf


def prometheus_fleet_stats(
    url: str,
    *,
    window: Window,
    rules: Sequence[WorkloadRule] = (),
    timeout_s: float = 60.0,
    chunk_hosts: int = DEFAULT_CHUNK_HOSTS,
    chunk_days: float | None = None,
    workers: int = DEFAULT_WORKERS,
    client: httpx.Client | None = None,
) -> tuple[FleetStats, dict[str, int]]:
    """Per-GPU, per-workload and serving statistics of ``window`` computed by the Prometheus at ``url``.
    ``workers`` queries are in flight at once. Returns the statistics and counters (queries sent, series
    returned, bytes returned, time chunks)."""
    if not url.startswith(("http://", "https://")):
        raise InputError(f"--prometheus {url!r} is not an http(s) URL. Give e.g. http://prometheus:9090.")
    if chunk_hosts < 1:
        raise InputError(f"--chunk-hosts {chunk_hosts} must be at least 1.")
    if chunk_days is not None and not chunk_days > 0:
        raise InputError(f"--chunk-days {chunk_days} must be positive (days per query range).")
    if workers < 1:
        raise InputError(f"workers={workers} must be at least 1 (queries in flight at once).")
    own = client is None
    http = client or httpx.Client(
        timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
        limits=httpx.Limits(max_connections=workers),
    )
    start_s, end_s = window.start.timestamp(), window.end.timestamp()
    span = end_s - start_s
    step = span if chunk_days is None else min(span, chunk_days * SECONDS_PER_DAY)
    edges = []
    t = end_s
    while t > start_s + 1e-6:
        edges.append((max(start_s, t - step), t))
        t -= step
    c = _Client(base=url.rstrip("/"), http=http, at=end_s, workers=workers)
    try:
        # what the server holds: exact metric names (a (?i) match costs on every query) and label names
        names = c.label_values("__name__", _any_gpu(), start_s, end_s)
        present = [(DCGM_METRICS[n.upper()][0], n) for n in names if n.upper() in DCGM_METRICS]
        present = [(m, n) for m, n in present if m in GPU_METRICS]
        gpu_labels = c.labels(_any_gpu(), start_s, end_s)
        series = _series_stats(c, edges, window.percentile, chunk_hosts, start_s, end_s, present)
        gpus = _fold_gpus(series, start_s, end_s)
        workloads, serving = _workload_stats(
            c, edges, window.percentile, rules, chunk_hosts, start_s, end_s, present, gpu_labels, series
        )
    finally:
        if own:
            http.close()
    firsts = [g.first_ts for g in gpus] + [w.replica.first_ts for w in workloads]
    lasts = [g.last_ts for g in gpus] + [w.replica.last_ts for w in workloads]
    stats = FleetStats(
        gpus=tuple(gpus),
        workloads=tuple(workloads),
        serving=serving,
        observed_start=min(firsts) if firsts else None,
        observed_end=max(lasts) if lasts else None,
    )
    info = {
        "queries": c.queries,
        "series_returned": c.series_returned,
        "bytes_returned": c.bytes_returned,
        "time_chunks": len(edges),
    }
    return stats, info


def _host_chunks(c: _Client, start_s: float, end_s: float, size: int) -> list[str]:
    """Label matchers splitting the GPUs by host (the first host label variant that has values)."""
    any_gpu = _any_gpu()
    for lab in (*LABEL_VARIANTS["host"], "instance"):
        values = c.label_values(lab, any_gpu, start_s, end_s)
        if values:
            return [_matcher(lab, chunk) for chunk in _chunks(values, size)]
    return [""]


def _any_gpu(matcher: str = "", names: Sequence[str] = ()) -> str:
    """A selector of every GPU metric the findings read (``names``: the exact names the server holds; else
    any letter case), plus a label matcher."""
    alt = "|".join(names) if names else "(?i)" + "|".join(GPU_METRICS.values())
    return '{__name__=~"' + alt + '"' + (f", {matcher}" if matcher else "") + "}"


def _dt(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=UTC)


def _skey(lab: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in lab.items() if k != "__name__"))


def _series_stats(
    c: _Client,
    edges: list[tuple[float, float]],
    p: float,
    chunk_hosts: int,
    start_s: float,
    end_s: float,
    present: list[tuple[str, str]],
) -> dict[tuple[tuple[str, str], ...], _Series]:
    """Per-series statistics (plain range functions over raw samples, one query per metric and statistic
    over every series of a host chunk: no subquery, no relabelling), and each series' 5-minute coverage
    and first/last step (three subqueries over all GPU metrics, grouped by the label set)."""
    jobs: list[tuple[str, float, str, str]] = []  # (query, at, metric or coverage kind, part)
    for matcher in _host_chunks(c, start_s, end_s, chunk_hosts):
        for t0, t1 in edges:
            r = _rng(t1 - t0)
            for metric, name in present:
                sel = f"{name}{{{matcher}}}"
                jobs += [
                    (f"count_over_time({sel}[{r}])", t1, metric, "n"),
                    (f"sum_over_time({sel}[{r}])", t1, metric, "sum"),
                    (f"max_over_time({sel}[{r}])", t1, metric, "max"),
                ]
                for part in QUANTILES_READ.get(metric, ()):
                    q = p if part == "phi" else 0.99
                    jobs.append((f"quantile_over_time({q}, {sel}[{r}])", t1, metric, part))
            inner = f"count without (__name__) ({_any_gpu(matcher, [n for _, n in present])})"
            jobs += [
                (f"count_over_time(({inner})[{r}:{_COVER}])", t1, "", "cover"),
                (f"min_over_time(timestamp({inner})[{r}:{_COVER}])", t1, "", "first"),
                (f"max_over_time(timestamp({inner})[{r}:{_COVER}])", t1, "", "last"),
            ]
    out: dict[tuple[tuple[str, str], ...], _Series] = {}
    for (_, _, metric, part), result in zip(
        jobs, c.query_all([(q, at) for q, at, _, _ in jobs]), strict=True
    ):
        for lab, v in result:
            k = _skey(lab)
            s = out.get(k)
            if s is None:
                s = out[k] = _Series(labels={a: b for a, b in k})
            if part == "cover":
                s.cover_s += v * _COVER_S
            elif part == "first":
                s.first = min(s.first, v)
            elif part == "last":
                s.last = max(s.last, v)
            else:
                s.metrics[metric].add(part, v)
    return {k: s for k, s in out.items() if any(a.n > 0 for a in s.metrics.values())}


def _fold_gpus(
    series: dict[tuple[tuple[str, str], ...], _Series], start_s: float, end_s: float
) -> list[GpuStats]:
    """Series folded per GPU: counts, sums and coverage add; percentiles and peaks take the largest; the
    labels (pod, namespace) are those of the series covering the most time, as the store path's."""
    acc: dict[str, dict[str, _Acc]] = defaultdict(lambda: defaultdict(_Acc))
    cover: dict[str, float] = defaultdict(float)
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    best: dict[str, _Series] = {}
    for s in series.values():
        key = _gpu_key(s.labels)
        if key is None:
            continue
        for metric, a in s.metrics.items():
            acc[key][metric].merge(a)
        cover[key] += s.cover_s
        first[key] = min(first.get(key, math.inf), s.first)
        last[key] = max(last.get(key, -math.inf), s.last)
        if key not in best or s.cover_s > best[key].cover_s:
            best[key] = s
    out = []
    for key in sorted(acc):
        metrics = {m: a.stats() for m, a in acc[key].items() if a.n > 0}
        lab = canonical_labels(best[key].labels, "prometheus")
        out.append(
            GpuStats(
                gpu_key=key,
                host=lab.get("host", ""),
                gpu_index=_index(lab),
                gpu_uuid=lab.get("gpu_uuid"),
                model=lab.get("model"),
                mig_profile=lab.get("mig_profile"),
                provider=lab.get("provider"),
                instance_type=lab.get("instance_type"),
                region=lab.get("region"),
                pod=lab.get("pod"),
                namespace=lab.get("namespace"),
                job=lab.get("job"),
                first_ts=_dt(first[key] if math.isfinite(first[key]) else start_s),
                last_ts=_dt(last[key] if math.isfinite(last[key]) else end_s),
                hours=cover[key] / SECONDS_PER_HOUR,
                metrics=metrics,
            )
        )
    return out


def _index(lab: dict[str, str]) -> int:
    try:
        return int(lab.get("gpu_index", "-1"))
    except ValueError:
        return -1


def _gpu_key(raw: dict[str, str]) -> str | None:
    lab = canonical_labels(raw, "prometheus")
    if not lab.get("host") and not lab.get("gpu_uuid"):
        return None
    return gpu_key(lab.get("host", ""), _index(lab), lab.get("gpu_uuid", ""), lab.get("mig_instance", ""))


def _wid(lab: dict[str, str], rules: Sequence[WorkloadRule]) -> WorkloadId | None:
    """The workload of a grouped result (labels ``gpufleet_workload`` and a namespace label)."""
    name = lab.get(_WL)
    if not name:
        return None
    ns = lab.get(_NS) or canonical_labels(lab, "prometheus").get("namespace") or None
    if name.startswith("rule:"):
        r = rules[int(name[5:])]
        return WorkloadId(
            key=f"{ns or '-'}/{r.workload}",
            namespace=ns,
            name=r.workload,
            team=r.team,
            tier=r.tier,
            source="inventory",
            training=r.training,
        )
    if name.startswith("job:"):
        return WorkloadId(key=name, namespace=ns, name=name[4:], team=None, tier=None, source="job")
    return WorkloadId(
        key=f"{ns or '-'}/{name}", namespace=ns, name=name, team=None, tier=None, source="pod name"
    )


def _workload_stats(
    c: _Client,
    edges: list[tuple[float, float]],
    p: float,
    rules: Sequence[WorkloadRule],
    chunk: int,
    start_s: float,
    end_s: float,
    present: list[tuple[str, str]],
    gpu_labels: frozenset[str],
    series: dict[tuple[tuple[str, str], ...], _Series],
) -> tuple[list[WorkloadStats], dict[str, ServingStats]]:
    """Per workload: counts, sums, peaks, GPU-hours, GPUs, pods and first/last folded from the per-series
    statistics (the workload of each series by :func:`gpufleet.telemetry.workloads.workload_of`, as the
    store path); the percentiles of the busiest replica per 1-minute step and the observed hours (steps
    with any replica) need the replicas side by side: one grouped subquery each."""
    acc: dict[str, dict[str, _Acc]] = defaultdict(lambda: defaultdict(_Acc))
    ids: dict[str, WorkloadId] = {}
    gpu_cover: dict[str, float] = defaultdict(float)
    gpu_keys: dict[str, set[str]] = defaultdict(set)
    pods: dict[str, set[str]] = defaultdict(set)
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    labels: dict[str, _Series] = {}
    for s in series.values():
        cl = canonical_labels(s.labels, "prometheus")
        wid = workload_of(namespace=cl.get("namespace"), pod=cl.get("pod"), job=cl.get("job"), rules=rules)
        key = _gpu_key(s.labels)
        if wid is None or key is None:
            continue
        ids.setdefault(wid.key, wid)
        for metric, a in s.metrics.items():
            acc[wid.key][metric].incomplete |= not a.sum_known
            acc[wid.key][metric].add("n", a.n)
            acc[wid.key][metric].add("sum", a.total)
            acc[wid.key][metric].add("max", a.mx)
        gpu_cover[wid.key] += s.cover_s
        gpu_keys[wid.key].add(key)
        if cl.get("pod"):
            pods[wid.key].add(cl["pod"])
        first[wid.key] = min(first.get(wid.key, math.inf), s.first)
        last[wid.key] = max(last.get(wid.key, -math.inf), s.last)
        if wid.key not in labels or s.cover_s > labels[wid.key].cover_s:
            labels[wid.key] = s
    namespaces: list[str] = []
    ns_label = ""
    for variant in LABEL_VARIANTS["namespace"]:
        namespaces = c.label_values(variant, _any_gpu(), start_s, end_s)
        if namespaces:
            ns_label = variant
            break
    matchers = [_matcher(ns_label, ch) for ch in _chunks(namespaces, chunk)] if ns_label else [""]
    jobs: list[tuple[str, float, str, str]] = []
    for matcher in matchers:
        for t0, t1 in edges:
            r = _rng(t1 - t0)
            for metric, name in present:
                w, grp = _workload_expr(f"{name}{{{matcher}}}", rules, gpu_labels)
                for part in QUANTILES_READ.get(metric, ()):
                    q = p if part == "phi" else 0.99
                    sub = f"(max by ({grp}) ({w}))[{r}:{_STEP}]"
                    jobs.append((f"quantile_over_time({q}, {sub})", t1, metric, part))
            w_any, grp = _workload_expr(_any_gpu(matcher, [n for _, n in present]), rules, gpu_labels)
            jobs.append((f"count_over_time((count by ({grp}) ({w_any}))[{r}:{_COVER}])", t1, "", "cover"))
    cover: dict[str, float] = defaultdict(float)
    for (_, _, metric, part), result in zip(
        jobs, c.query_all([(q, at) for q, at, _, _ in jobs]), strict=True
    ):
        for lab, v in result:
            wid = _wid(lab, rules)
            if wid is None or wid.key not in ids:
                continue
            if part == "cover":
                cover[wid.key] += v * _COVER_S
            else:
                acc[wid.key][metric].add(part, v)
    serving = _serving(c, edges, p, rules)
    out = []
    for wkey in sorted(acc):
        metrics = {m: a.stats() for m, a in acc[wkey].items() if a.n > 0}
        if not metrics or wkey not in cover:
            continue
        lab = canonical_labels(labels[wkey].labels, "prometheus")
        replica = GpuStats(
            gpu_key=wkey,
            host=lab.get("host", ""),
            gpu_index=0,
            gpu_uuid=lab.get("gpu_uuid"),
            model=lab.get("model"),
            mig_profile=lab.get("mig_profile"),
            provider=lab.get("provider"),
            instance_type=lab.get("instance_type"),
            region=lab.get("region"),
            pod=lab.get("pod"),
            namespace=ids[wkey].namespace,
            job=lab.get("job"),
            first_ts=_dt(first[wkey] if math.isfinite(first[wkey]) else start_s),
            last_ts=_dt(last[wkey] if math.isfinite(last[wkey]) else end_s),
            hours=cover[wkey] / SECONDS_PER_HOUR,
            metrics=metrics,
        )
        out.append(
            WorkloadStats(
                id=ids[wkey],
                pods=len(pods[wkey]) or 1,
                gpus=len(gpu_keys[wkey]),
                gpu_hours=gpu_cover[wkey] / SECONDS_PER_HOUR,
                replica=replica,
            )
        )
    return out, {k: v for k, v in serving.items() if k in ids}


def _serving(
    c: _Client,
    edges: list[tuple[float, float]],
    p: float,
    rules: Sequence[WorkloadRule],
) -> dict[str, ServingStats]:
    """Serving statistics per workload (queue, KV cache, preemptions, TTFT/TPOT histogram buckets); one
    series per pod, far fewer than GPU series, so not chunked by label."""
    svc_any = '{__name__=~"' + "|".join(n for m in _SERVING for n in exporter_names(m)) + '"}'
    start_s, end_s = edges[-1][0], edges[0][1]
    held = c.labels(svc_any, start_s, end_s)
    jobs: list[tuple[str, float, str, str]] = []
    for t0, t1 in edges if held else ():
        r = _rng(t1 - t0)
        for metric in ("queue_requests", "kv_cache_usage_ratio"):
            names = "|".join(exporter_names(metric))
            w, grp = _workload_expr('{__name__=~"' + names + '"}', rules, held)
            jobs += [
                (f"quantile_over_time({p}, (max by ({grp}) ({w}))[{r}:{_STEP}])", t1, metric, "p"),
                (f"max_over_time((max by ({grp}) ({w}))[{r}:{_STEP}])", t1, metric, "max"),
            ]
        names = "|".join(exporter_names("preemptions_total"))
        w, grp = _workload_expr(f'increase({{__name__=~"{names}"}}[{r}])', rules, held)
        jobs.append((f"sum by ({grp}) ({w})", t1, "preemptions", ""))
        for metric in ("ttft_s_bucket", "tpot_s_bucket"):
            names = "|".join(exporter_names(metric))
            w, grp = _workload_expr(f'increase({{__name__=~"{names}"}}[{r}])', rules, held)
            jobs.append((f"sum by (le, {grp}) ({w})", t1, metric, "bucket"))
    sv: dict[str, dict[str, Any]] = defaultdict(dict)
    hist: dict[tuple[str, str], dict[float, float]] = defaultdict(lambda: defaultdict(float))
    for (_, _, metric, part), result in zip(
        jobs, c.query_all([(q, at) for q, at, _, _ in jobs]), strict=True
    ):
        for lab, v in result:
            wid = _wid(lab, rules)
            if wid is None:
                continue
            if part in ("p", "max"):
                k = f"{metric}:{part}"
                sv[wid.key][k] = max(sv[wid.key].get(k, -math.inf), v)
            elif metric == "preemptions":
                sv[wid.key]["preemptions"] = sv[wid.key].get("preemptions", 0.0) + v
            else:
                try:
                    bound = float(lab.get("le", ""))
                except ValueError:
                    continue
                hist[(wid.key, metric)][bound] += v
    for (wkey, metric), buckets in hist.items():
        sv[wkey][metric] = histogram_quantile(p, list(buckets.items()))
        if metric == "ttft_s_bucket" and buckets:
            sv[wkey]["requests"] = max(buckets.values())
    _step_time(c, edges, p, rules, sv)
    return {k: serving_from(v) for k, v in sv.items()}


def _step_time(
    c: _Client,
    edges: list[tuple[float, float]],
    p: float,
    rules: Sequence[WorkloadRule],
    sv: dict[str, dict[str, Any]],
) -> None:
    """Training step time per workload, the store path's quantities (``analyze_workloads._step_time``): the
    slowest rank per 1-minute step; its median and percentile over the window (with time chunks the largest
    chunk's), and its medians over the first and the last quarter of the span it was exported (two queries
    per trend, evaluated at each workload's own times)."""
    sel = '{__name__=~"' + "|".join(exporter_names("step_time_s")) + '"}'
    start_s, end_s = edges[-1][0], edges[0][1]
    held = c.labels(sel, start_s, end_s)
    if not held:
        return
    inner, grp = _workload_expr(sel, rules, held)
    w = f"max by ({grp}) ({inner})"
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    for t0, t1 in edges:
        r = _rng(t1 - t0)
        for part, q in (
            ("p50", f"quantile_over_time(0.5, ({w})[{r}:{_STEP}])"),
            ("p", f"quantile_over_time({p}, ({w})[{r}:{_STEP}])"),
            ("t0", f"min_over_time(timestamp({w})[{r}:{_STEP}])"),
            ("t1", f"max_over_time(timestamp({w})[{r}:{_STEP}])"),
        ):
            for lab, v in c.query(q, at=t1):
                wid = _wid(lab, rules)
                if wid is None:
                    continue
                if part == "t0":
                    first[wid.key] = min(first.get(wid.key, v), v)
                elif part == "t1":
                    last[wid.key] = max(last.get(wid.key, v), v)
                else:
                    k = f"step_time_s:{part}"
                    sv[wid.key][k] = max(sv[wid.key].get(k, -math.inf), v)
    for key, t0 in first.items():
        span = last[key] - t0
        sv[key]["step_time_s:span_h"] = span / SECONDS_PER_HOUR
        if span <= 0:
            continue
        quarter = TREND_SHARE * span
        # first quarter: steps in [t0, t0 + quarter); last: (t1 - quarter, t1], as the store path's filters
        for part, at in (("first", t0 + quarter - 0.5), ("last", last[key])):
            for lab, v in c.query(f"quantile_over_time(0.5, ({w})[{_rng(quarter)}:{_STEP}])", at=at):
                wid = _wid(lab, rules)
                if wid is not None and wid.key == key:
                    sv[key][f"step_time_s:{part}"] = v


def prometheus_window(url: str, *, lookback_days: float, end: datetime | None, percentile: float) -> Window:
    """The lookback window ending at ``end`` (default: now)."""
    from gpufleet.telemetry.analyze import MAX_LOOKBACK_DAYS
    from gpufleet.validation import check_number

    check_number("lookback", lookback_days, flag="--lookback", maximum=MAX_LOOKBACK_DAYS)
    if not 0.5 <= percentile < 1.0:
        raise InputError(f"--percentile {percentile} is outside 0.5-0.99; use e.g. 0.95 (p95) or 0.99.")
    del url
    e = end or datetime.now(UTC)
    return Window(start=e - timedelta(days=lookback_days), end=e, percentile=percentile)


def prometheus_heatmap(
    url: str, window: Window, metric: str, timeout_s: float = 60.0
) -> list[tuple[datetime, float]]:
    """Fleet mean of ``metric`` per hour (``avg(X)`` at a 1 h step; a range query, 24 points a day)."""
    name = GPU_METRICS.get(metric, GPU_METRICS["sm_active_ratio"])
    with httpx.Client(timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0))) as http:
        c = _Client(base=url.rstrip("/"), http=http, at=window.end.timestamp())
        data = c.get(
            "/api/v1/query_range",
            {
                "query": f"avg({_sel(name)})",
                "start": f"{window.start.timestamp():.0f}",
                "end": f"{window.end.timestamp():.0f}",
                "step": "3600",
            },
        )
    out = []
    for r in data.get("result", []):
        for ts, v in r.get("values", []):
            out.append((_dt(float(ts)), float(v)))
    return out


__all__ = [
    "DEFAULT_CHUNK_HOSTS",
    "GPU_METRICS",
    "prometheus_fleet_stats",
    "prometheus_heatmap",
    "prometheus_window",
]
