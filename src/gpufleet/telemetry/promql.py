"""Fleet statistics computed inside Prometheus (or Thanos Query, Mimir, VictoriaMetrics: any server of the
Prometheus HTTP API): PromQL pushdown, only summaries come back.

``telemetry findings --prometheus URL`` sends instant queries evaluated at the window's end over a range of
the lookback (``quantile_over_time``, ``avg_over_time``, ``max_over_time``, ``count_over_time``, ``increase``
and subqueries), so the data pulled grows with GPUs x metrics, not with samples. The same quantities as the
local store's (:mod:`gpufleet.telemetry.analyze`, :mod:`gpufleet.telemetry.analyze_workloads`):

- per GPU and metric: quantiles, mean, peak of each series' raw samples; a GPU seen under several pods
  (several series) takes the largest quantile and peak, the sample-weighted mean; observed hours = 5-minute
  steps holding a sample (``count_over_time((count by (gpu) (X))[w:5m])``);
- per workload: the owner of each pod (``label_replace`` with ``workloads.POD_OWNER_RE`` and the
  inventory's pod globs), the busiest replica per 1-minute step
  (``quantile_over_time(p, (max by (namespace, workload) (X))[w:1m])``), coverage, GPU-hours, pods;
- serving: queue and KV-cache quantiles per workload, ``increase`` of preemptions and of histogram buckets
  (``histogram_quantile`` done here on the summed buckets, as the store path does).

Chunking: GPU queries by groups of hosts, workload queries by groups of namespaces (``--chunk-hosts``), so a
query stays under Prometheus's ``--query.max-samples`` (default 50,000,000 samples loaded at once: about 620
series of 14 days at 15 s); and optionally by time (``--chunk-days``): counts and sums add, means weight by
count, peaks take the max, and a quantile over several time chunks is the largest chunk's quantile (an upper
bound, said so in the caveats).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
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
from gpufleet.telemetry.workloads import POD_OWNER_RE, WorkloadId, WorkloadRule
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
#: Labels that identify a GPU (every variant; grouping by an absent label is harmless).
_GPU_LABELS: Final[tuple[str, ...]] = tuple(
    dict.fromkeys(
        [
            *LABEL_VARIANTS["host"],
            *LABEL_VARIANTS["gpu_uuid"],
            *LABEL_VARIANTS["gpu_index"],
            *LABEL_VARIANTS["mig_instance"],
            "instance",
        ]
    )
)
_WL: Final = "gpufleet_workload"
_NS: Final = "gpufleet_namespace"
_POD: Final = "gpufleet_pod"
#: 5-minute coverage steps and 1-minute workload steps, as the store path (analyze_workloads).
_COVER: Final = "5m"
_SERVING: Final = (
    "queue_requests",
    "kv_cache_usage_ratio",
    "preemptions_total",
    "ttft_s_bucket",
    "tpot_s_bucket",
)
_STEP: Final = "1m"
#: Labels read once per GPU of a workload, for its price and model (every variant).
_INFO_LABELS: Final = ", ".join(
    dict.fromkeys(
        [
            *LABEL_VARIANTS["pod"],
            *LABEL_VARIANTS["model"],
            *LABEL_VARIANTS["mig_profile"],
            *LABEL_VARIANTS["provider"],
            *LABEL_VARIANTS["instance_type"],
            *LABEL_VARIANTS["region"],
        ]
    )
)


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


def _workload_expr(expr: str, rules: Sequence[WorkloadRule], present: frozenset[str] | None = None) -> str:
    """``expr`` with labels ``gpufleet_namespace`` and ``gpufleet_workload`` (the owner of its pod, a job id,
    or an inventory rule ``rule:<i>``), in the precedence of :func:`gpufleet.telemetry.workloads.workload_of`.
    ``present``: the label names the server holds (absent variants are skipped: each relabel costs per step).
    """

    def have(lab: str) -> bool:
        return present is None or lab in present

    e = expr
    for lab in reversed(LABEL_VARIANTS["namespace"]):  # the first variant present wins: apply it last
        if have(lab):
            e = f'label_replace({e}, "{_NS}", "$1", "{lab}", "(.+)")'
    for lab in reversed(LABEL_VARIANTS["pod"]):
        if have(lab):
            e = f'label_replace({e}, "{_POD}", "$1", "{lab}", "(.+)")'
    e = f'label_replace({e}, "{_WL}", "$1", "{_POD}", "(.+)")'
    e = f'label_replace({e}, "{_WL}", "${{1}}${{2}}${{3}}${{4}}", "{_POD}", "{POD_OWNER_RE}")'
    for lab in reversed([v for v in LABEL_VARIANTS["job"] if have(v)]):
        e = f'label_replace({e}, "{_WL}", "job:$1", "{lab}", "(.+)")'
    if rules:
        e = f'label_join({e}, "gpufleet_nspod", "/", "{_NS}", "{_POD}")'
        for i, r in reversed(list(enumerate(rules))):
            rx = f"{_glob_re(r.namespace) if r.namespace else '.*'}/{_glob_re(r.pod)}"
            e = f'label_replace({e}, "{_WL}", "rule:{i}", "gpufleet_nspod", "{_escape(rx)}")'
    return e


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


@dataclass(slots=True)
class _Client:
    base: str
    http: httpx.Client
    at: float  # evaluation time [unix s]
    queries: int = 0
    series_returned: int = 0
    log: list[str] = field(default_factory=list)

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
        return doc["data"]

    def query(self, q: str, at: float | None = None) -> list[tuple[dict[str, str], float]]:
        """An instant query at ``at`` (default: the window's end): (labels, value) per series."""
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
        self.series_returned += len(out)
        return out

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


@dataclass(slots=True)
class _Acc:
    """Per (subject, metric) accumulator over time chunks (exact for counts, sums, peaks)."""

    n: float = 0.0
    total: float = 0.0
    p50: float = -math.inf
    p_hi: float = -math.inf
    p99: float = -math.inf
    mx: float = -math.inf

    def add(self, part: str, v: float) -> None:
        """Fold one chunk's ``part`` (n, sum, p50, phi, p99, max) in: counts and sums add; percentiles and
        the peak take the largest chunk's (an upper bound for percentiles when the window is chunked)."""
        if part == "n":
            self.n += v
        elif part == "sum":
            self.total += v
        elif part == "p50":
            self.p50 = max(self.p50, v)
        elif part == "phi":
            self.p_hi = max(self.p_hi, v)
        elif part == "p99":
            self.p99 = max(self.p99, v)
        else:
            self.mx = max(self.mx, v)

    def stats(self) -> MetricStats:
        return MetricStats(
            samples=int(self.n),
            mean=self.total / self.n if self.n else 0.0,
            p50=self.p50,
            p_hi=self.p_hi,
            p99=self.p99,
            max=self.mx,
        )


def prometheus_fleet_stats(
    url: str,
    *,
    window: Window,
    rules: Sequence[WorkloadRule] = (),
    timeout_s: float = 60.0,
    chunk_hosts: int = DEFAULT_CHUNK_HOSTS,
    chunk_days: float | None = None,
    client: httpx.Client | None = None,
) -> tuple[FleetStats, dict[str, int]]:
    """Per-GPU, per-workload and serving statistics of ``window`` computed by the Prometheus at ``url``.
    Returns the statistics and counters (queries sent, series returned)."""
    if not url.startswith(("http://", "https://")):
        raise InputError(f"--prometheus {url!r} is not an http(s) URL. Give e.g. http://prometheus:9090.")
    if chunk_hosts < 1:
        raise InputError(f"--chunk-hosts {chunk_hosts} must be at least 1.")
    if chunk_days is not None and not chunk_days > 0:
        raise InputError(f"--chunk-days {chunk_days} must be positive (days per query range).")
    own = client is None
    http = client or httpx.Client(timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)))
    start_s, end_s = window.start.timestamp(), window.end.timestamp()
    span = end_s - start_s
    step = span if chunk_days is None else min(span, chunk_days * SECONDS_PER_DAY)
    edges = []
    t = end_s
    while t > start_s + 1e-6:
        edges.append((max(start_s, t - step), t))
        t -= step
    c = _Client(base=url.rstrip("/"), http=http, at=end_s)
    try:
        # what the server holds: exact metric names (a (?i) match costs on every query) and label names
        names = c.label_values("__name__", _any_gpu(), start_s, end_s)
        present = [(DCGM_METRICS[n.upper()][0], n) for n in names if n.upper() in DCGM_METRICS]
        present = [(m, n) for m, n in present if m in GPU_METRICS]
        gpu_labels = c.labels(_any_gpu(), start_s, end_s)
        gpus = _gpu_stats(c, edges, window.percentile, chunk_hosts, start_s, end_s, present)
        workloads, serving = _workload_stats(
            c, edges, window.percentile, rules, chunk_hosts, start_s, end_s, present, gpu_labels
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
    return stats, {"queries": c.queries, "series_returned": c.series_returned, "time_chunks": len(edges)}


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


def _gpu_stats(
    c: _Client,
    edges: list[tuple[float, float]],
    p: float,
    chunk_hosts: int,
    start_s: float,
    end_s: float,
    present: list[tuple[str, str]],
) -> list[GpuStats]:
    acc: dict[tuple[str, str], _Acc] = defaultdict(_Acc)
    labels: dict[str, dict[str, str]] = {}
    cover: dict[str, float] = defaultdict(float)
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    by = ", ".join(_GPU_LABELS)
    for matcher in _host_chunks(c, start_s, end_s, chunk_hosts):
        for t0, t1 in edges:
            r = _rng(t1 - t0)
            for metric, name in present:
                sel = f"{name}{{{matcher}}}"
                parts = {
                    "n": f"count_over_time({sel}[{r}])",
                    "sum": f"sum_over_time({sel}[{r}])",
                    "p50": f"quantile_over_time(0.5, {sel}[{r}])",
                    "phi": f"quantile_over_time({p}, {sel}[{r}])",
                    "p99": f"quantile_over_time(0.99, {sel}[{r}])",
                    "max": f"max_over_time({sel}[{r}])",
                }
                for part, q in parts.items():
                    for lab, v in c.query(q, at=t1):
                        key = _gpu_key(lab)
                        if key is None:
                            continue
                        labels.setdefault(key, lab)
                        acc[(key, metric)].add(part, v)
            inner = f"count by ({by}) ({_any_gpu(matcher, [n for _, n in present])})"
            for lab, v in c.query(f"count_over_time(({inner})[{r}:{_COVER}])", at=t1):
                key = _gpu_key(lab)
                if key is not None:
                    cover[key] += v * 300.0
            for fn, store in (("min_over_time", first), ("max_over_time", last)):
                for lab, v in c.query(f"{fn}(timestamp({inner})[{r}:{_COVER}])", at=t1):
                    key = _gpu_key(lab)
                    if key is not None:
                        store[key] = (
                            min(store.get(key, v), v) if fn == "min_over_time" else max(store.get(key, v), v)
                        )
    per: dict[str, dict[str, MetricStats]] = defaultdict(dict)
    for (key, metric), a in acc.items():
        if a.n > 0:
            per[key][metric] = a.stats()
    out = []
    for key, metrics in sorted(per.items()):
        lab = canonical_labels(labels[key], "prometheus")
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
                first_ts=_dt(first.get(key, start_s)),
                last_ts=_dt(last.get(key, end_s)),
                hours=cover.get(key, 0.0) / SECONDS_PER_HOUR,
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
    name = lab.get(_WL)
    if not name:
        return None
    ns = lab.get(_NS) or None
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
) -> tuple[list[WorkloadStats], dict[str, ServingStats]]:
    namespaces: list[str] = []
    ns_label = ""
    for variant in LABEL_VARIANTS["namespace"]:
        namespaces = c.label_values(variant, _any_gpu(), start_s, end_s)
        if namespaces:
            ns_label = variant
            break
    matchers = [_matcher(ns_label, ch) for ch in _chunks(namespaces, chunk)] if ns_label else [""]
    grp = f"{_NS}, {_WL}"
    acc: dict[tuple[str, str], _Acc] = defaultdict(_Acc)
    ids: dict[str, WorkloadId] = {}
    cover: dict[str, float] = defaultdict(float)
    gpu_cover: dict[str, float] = defaultdict(float)
    gpu_keys: dict[str, set[str]] = defaultdict(set)
    pods: dict[str, set[str]] = defaultdict(set)
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    labels: dict[str, dict[str, str]] = {}
    sv: dict[str, dict[str, Any]] = defaultdict(dict)
    hist: dict[tuple[str, str], dict[float, float]] = defaultdict(lambda: defaultdict(float))
    gpu_by = ", ".join(_GPU_LABELS)
    for matcher in matchers:
        for t0, t1 in edges:
            r = _rng(t1 - t0)
            for metric, name in present:
                w = _workload_expr(f"{name}{{{matcher}}}", rules, gpu_labels)
                parts = {  # no p50: the findings do not read it (MetricStats.p50 is NaN here)
                    "n": f"count_over_time((max by ({grp}) ({w}))[{r}:{_STEP}])",
                    "sum": f"sum_over_time((avg by ({grp}) ({w}))[{r}:{_STEP}])",
                    "phi": f"quantile_over_time({p}, (max by ({grp}) ({w}))[{r}:{_STEP}])",
                    "p99": f"quantile_over_time(0.99, (max by ({grp}) ({w}))[{r}:{_STEP}])",
                    "max": f"max_over_time((max by ({grp}) ({w}))[{r}:{_STEP}])",
                }
                for part, q in parts.items():
                    for lab, v in c.query(q, at=t1):
                        wid = _wid(lab, rules)
                        if wid is None:
                            continue
                        ids.setdefault(wid.key, wid)
                        acc[(wid.key, metric)].add(part, v)
            w_any = _workload_expr(_any_gpu(matcher, [n for _, n in present]), rules, gpu_labels)
            for lab, v in c.query(f"count_over_time((count by ({grp}) ({w_any}))[{r}:{_COVER}])", at=t1):
                wid = _wid(lab, rules)
                if wid is not None:
                    cover[wid.key] += v * 300.0
            for fn, store in (("min_over_time", first), ("max_over_time", last)):
                for lab, v in c.query(f"{fn}(timestamp(count by ({grp}) ({w_any}))[{r}:{_COVER}])", at=t1):
                    wid = _wid(lab, rules)
                    if wid is not None:
                        store[wid.key] = (
                            min(store.get(wid.key, v), v)
                            if fn == "min_over_time"
                            else max(store.get(wid.key, v), v)
                        )
            q = f"count_over_time((count by ({grp}, {gpu_by}, {_INFO_LABELS}) ({w_any}))[{r}:{_COVER}])"
            for lab, v in c.query(q, at=t1):
                wid = _wid(lab, rules)
                key = _gpu_key(lab)
                if wid is None or key is None:
                    continue
                gpu_cover[wid.key] += v * 300.0
                gpu_keys[wid.key].add(key)
                cl = canonical_labels(lab, "prometheus")
                if cl.get("pod"):
                    pods[wid.key].add(cl["pod"])
                labels.setdefault(wid.key, lab)
    _serving(c, edges, p, rules, sv, hist)
    _step_time(c, edges, p, rules, sv)
    for (wkey, metric), buckets in hist.items():
        sv[wkey][metric] = histogram_quantile(p, list(buckets.items()))
        if metric == "ttft_s_bucket" and buckets:
            sv[wkey]["requests"] = max(buckets.values())
    per: dict[str, dict[str, MetricStats]] = defaultdict(dict)
    for (wkey, metric), a in acc.items():
        if a.n > 0:
            st = a.stats()
            per[wkey][metric] = MetricStats(
                samples=st.samples, mean=st.mean, p50=math.nan, p_hi=st.p_hi, p99=st.p99, max=st.max
            )
    out = []
    for wkey, metrics in sorted(per.items()):
        if wkey not in labels or wkey not in cover:
            continue
        lab = canonical_labels(labels[wkey], "prometheus")
        hours = cover[wkey] / SECONDS_PER_HOUR
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
            first_ts=_dt(first.get(wkey, start_s)),
            last_ts=_dt(last.get(wkey, end_s)),
            hours=hours,
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
    serving = {k: serving_from(v) for k, v in sv.items() if k in ids}
    return out, serving


def _serving(
    c: _Client,
    edges: list[tuple[float, float]],
    p: float,
    rules: Sequence[WorkloadRule],
    sv: dict[str, dict[str, Any]],
    hist: dict[tuple[str, str], dict[float, float]],
) -> None:
    """Serving statistics per workload (queue, KV cache, preemptions, TTFT/TPOT histogram buckets); one
    series per pod, far fewer than GPU series, so not chunked by label."""
    grp = f"{_NS}, {_WL}"
    svc_any = '{__name__=~"' + "|".join(n for m in _SERVING for n in exporter_names(m)) + '"}'
    start_s, end_s = edges[-1][0], edges[0][1]
    held = c.labels(svc_any, start_s, end_s)
    if not held:
        return
    for t0, t1 in edges:
        r = _rng(t1 - t0)
        for metric in ("queue_requests", "kv_cache_usage_ratio"):
            names = "|".join(exporter_names(metric))
            w = _workload_expr('{__name__=~"' + names + '"}', rules, held)
            for part, q in (
                ("p", f"quantile_over_time({p}, (max by ({grp}) ({w}))[{r}:{_STEP}])"),
                ("max", f"max_over_time((max by ({grp}) ({w}))[{r}:{_STEP}])"),
            ):
                for lab, v in c.query(q, at=t1):
                    wid = _wid(lab, rules)
                    if wid is not None:
                        k = f"{metric}:{part}"
                        sv[wid.key][k] = max(sv[wid.key].get(k, -math.inf), v)
        names = "|".join(exporter_names("preemptions_total"))
        w = _workload_expr(f'increase({{__name__=~"{names}"}}[{r}])', rules, held)
        for lab, v in c.query(f"sum by ({grp}) ({w})", at=t1):
            wid = _wid(lab, rules)
            if wid is not None:
                sv[wid.key]["preemptions"] = sv[wid.key].get("preemptions", 0.0) + v
        for metric in ("ttft_s_bucket", "tpot_s_bucket"):
            names = "|".join(exporter_names(metric))
            w = _workload_expr(f'increase({{__name__=~"{names}"}}[{r}])', rules, held)
            for lab, v in c.query(f"sum by (le, {grp}) ({w})", at=t1):
                wid = _wid(lab, rules)
                le = lab.get("le")
                if wid is None or le is None:
                    continue
                try:
                    bound = float(le)
                except ValueError:
                    continue
                hist[(wid.key, metric)][bound] += v


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
    w = f"max by ({_NS}, {_WL}) ({_workload_expr(sel, rules, held)})"
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
