"""The canonical telemetry sample: one metric value of one GPU (or MIG instance) at one instant.

Every reader (nvidia-smi CSV, dcgm-exporter exposition text, Prometheus ``query_range`` JSON, a live
Prometheus, CloudWatch agent exports) turns its input into :class:`SampleBatch` columns named
:data:`SAMPLE_COLUMNS`, with timestamps in UTC microseconds and values in the canonical unit of the metric
(:data:`METRICS`). Source names and units: ``../docs/telemetry.md``; the metric catalogue follows
NVIDIA dcgm-exporter ``etc/default-counters.csv`` / ``dcp-metrics-included.csv`` and ``nvidia-smi
--help-query-gpu`` (driver 590.48.01).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Final

#: Canonical metric -> (unit, description). Ratios are 0-1, percentages 0-100.
METRICS: Final[dict[str, tuple[str, str]]] = {
    "gpu_util_pct": ("%", "time a kernel ran (NVML utilization.gpu / DCGM_FI_DEV_GPU_UTIL); an upper bound"),
    "mem_copy_util_pct": (
        "%",
        "memory copy utilisation (NVML utilization.memory / DCGM_FI_DEV_MEM_COPY_UTIL)",
    ),
    "gr_engine_active_ratio": ("ratio", "graphics/compute engine active (DCGM_FI_PROF_GR_ENGINE_ACTIVE)"),
    "sm_active_ratio": ("ratio", "cycles an SM has >= 1 warp, averaged over SMs (DCGM_FI_PROF_SM_ACTIVE)"),
    "sm_occupancy_ratio": ("ratio", "resident warps / max warps (DCGM_FI_PROF_SM_OCCUPANCY)"),
    "tensor_active_ratio": ("ratio", "tensor pipe active (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE)"),
    "dram_active_ratio": ("ratio", "device-memory interface busy (DCGM_FI_PROF_DRAM_ACTIVE)"),
    "fb_used_mib": ("MiB", "framebuffer memory used (DCGM_FI_DEV_FB_USED / memory.used)"),
    "fb_free_mib": ("MiB", "framebuffer memory free (DCGM_FI_DEV_FB_FREE / memory.free)"),
    "fb_total_mib": ("MiB", "framebuffer memory total (memory.total)"),
    "fb_reserved_mib": ("MiB", "framebuffer reserved by driver/firmware (memory.reserved)"),
    "power_w": ("W", "board power draw (DCGM_FI_DEV_POWER_USAGE / power.draw)"),
    "power_limit_w": ("W", "power limit (power.limit)"),
    "gpu_temp_c": ("degC", "GPU temperature"),
    "memory_temp_c": ("degC", "memory temperature"),
    "sm_clock_mhz": ("MHz", "SM clock"),
    "request_latency_s": ("s", "request latency of a served model (e.g. a p95 gauge or single requests)"),
    # Serving engines (per pod, no GPU label): vLLM, TGI and SGLang metric names in readers.common
    "queue_requests": ("requests", "requests waiting for admission (vllm:num_requests_waiting)"),
    "running_requests": ("requests", "requests being decoded (vllm:num_requests_running)"),
    "kv_cache_usage_ratio": ("ratio", "KV-cache blocks in use (vllm:gpu_cache_usage_perc, 0-1)"),
    "preemptions_total": ("count", "requests preempted since start, a counter (vllm:num_preemptions_total)"),
    "ttft_s_bucket": ("count", "time-to-first-token histogram bucket, cumulative counter, label le [s]"),
    "tpot_s_bucket": ("count", "time-per-output-token histogram bucket, cumulative counter, label le [s]"),
    # Training jobs (per pod/rank, no GPU label): the step-time gauge the job exports
    "step_time_s": ("s", "duration of the last training step of a rank (e.g. train_step_duration_seconds)"),
}
#: Metrics of a serving engine rather than a GPU: stored per pod (gpu_index -1, host ``svc:<ns>/<pod>``).
SERVICE_METRICS: Final[frozenset[str]] = frozenset(
    {
        "request_latency_s",
        "queue_requests",
        "running_requests",
        "kv_cache_usage_ratio",
        "preemptions_total",
        "ttft_s_bucket",
        "tpot_s_bucket",
        "step_time_s",
    }
)

#: Columns of the canonical sample table, in order. ``ts_us``: UTC microseconds since the epoch.
SAMPLE_COLUMNS: Final[tuple[str, ...]] = (
    "ts_us",
    "gpu_key",
    "host",
    "gpu_index",
    "gpu_uuid",
    "model",
    "mig_profile",
    "mig_instance",
    "metric",
    "value",
    "pod",
    "namespace",
    "job",
    "container",
    "provider",
    "instance_type",
    "region",
    "le",
    "source",
)
#: Label columns that may be absent (empty string in a batch, NULL in the store).
LABEL_COLUMNS: Final[tuple[str, ...]] = (
    "gpu_uuid",
    "model",
    "mig_profile",
    "mig_instance",
    "pod",
    "namespace",
    "job",
    "container",
    "provider",
    "instance_type",
    "region",
    "le",
)
SOURCES: Final[tuple[str, ...]] = (
    "nvidia_smi_csv",
    "dcgm_exposition",
    "prom_query_range",
    "prometheus",
    "cloudwatch",
)


def gpu_key(host: str, gpu_index: int, uuid: str, mig_instance: str) -> str:
    """Stable identity of a GPU (or MIG instance): the UUID when known, else ``host:index``."""
    base = uuid if uuid else f"{host}:{gpu_index}"
    return f"{base}/mig{mig_instance}" if mig_instance else base


#: Columns held once per label set (series identity) rather than per sample.
_LABEL_ROW: Final[tuple[str, ...]] = ("gpu_key", "host", "gpu_index", *LABEL_COLUMNS, "source")


@dataclass(slots=True)
class SampleBatch:
    """Canonical samples being built by a reader (mutable while reading, then stored).

    Labels are kept once per distinct label set (``label_rows``); each sample holds the index of its
    label set,
    its timestamp, metric and value. :attr:`columns` expands them to the full :data:`SAMPLE_COLUMNS`.
    """

    label_rows: list[tuple[object, ...]] = field(default_factory=list)
    _label_ids: dict[tuple[object, ...], int] = field(default_factory=dict)
    label_idx: list[int] = field(default_factory=list)
    ts_us: list[int] = field(default_factory=list)
    metric: list[str] = field(default_factory=list)
    value: list[float] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ts_us)

    def label_id(self, labels: dict[str, str], gpu_index: int) -> int:
        """The index of this label set (host, label columns, source; missing = "")."""
        host = labels.get("host", "")
        row = (
            gpu_key(host, gpu_index, labels.get("gpu_uuid", ""), labels.get("mig_instance", "")),
            host,
            gpu_index,
            *(labels.get(name, "") for name in LABEL_COLUMNS),
            labels.get("source", ""),
        )
        got = self._label_ids.get(row)
        if got is None:
            got = self._label_ids[row] = len(self.label_rows)
            self.label_rows.append(row)
        return got

    def add_sample(self, label_id: int, ts_us: int, metric: str, value: float) -> None:
        self.label_idx.append(label_id)
        self.ts_us.append(ts_us)
        self.metric.append(metric)
        self.value.append(value)

    def add(self, *, labels: dict[str, str], gpu_index: int, ts_us: int, metric: str, value: float) -> None:
        """Append one sample; ``labels`` holds host, the label columns and source (missing = "")."""
        self.add_sample(self.label_id(labels, gpu_index), ts_us, metric, value)

    @property
    def columns(self) -> dict[str, list[object]]:
        """The samples as full columns (:data:`SAMPLE_COLUMNS`); a copy, for inspection and tests."""
        out: dict[str, list[object]] = {
            "ts_us": list(self.ts_us),
            "metric": list(self.metric),
            "value": list(self.value),
        }
        for pos, name in enumerate(_LABEL_ROW):
            col = [row[pos] for row in self.label_rows]
            out[name] = [col[i] for i in self.label_idx]
        return {c: out[c] for c in SAMPLE_COLUMNS}

    def select(self, keep: list[int]) -> SampleBatch:
        """A batch with the samples at positions ``keep``."""
        b = SampleBatch(label_rows=list(self.label_rows), _label_ids=dict(self._label_ids))
        b.label_idx = [self.label_idx[i] for i in keep]
        b.ts_us = [self.ts_us[i] for i in keep]
        b.metric = [self.metric[i] for i in keep]
        b.value = [self.value[i] for i in keep]
        return b


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestProblem:
    """One kind of bad or dubious input, counted; ``example`` quotes the first occurrence."""

    source: str  # file name or URL
    kind: str  # see :data:`PROBLEM_KINDS`
    count: int
    example: str
    dropped: bool  # True: the samples were not stored; False: stored, only warned about


#: Problem kinds and whether the affected samples are dropped.
PROBLEM_KINDS: Final[dict[str, tuple[bool, str]]] = {
    "malformed_line": (True, "a line that cannot be parsed"),
    "unknown_metric": (True, "a metric gpufleet does not know (listed; map it or drop it upstream)"),
    "missing_value": (True, "[N/A], [Not Supported], NaN or a DCGM blank sentinel (treated as missing)"),
    "missing_labels": (True, "no host or no GPU identity (index/UUID) on the sample"),
    "duplicate_sample": (True, "same GPU, metric and timestamp as a sample already read or stored"),
    "out_of_order": (False, "timestamps going backwards within one series (sorted on store)"),
    "before_epoch": (True, "a timestamp before 1970-01-01 UTC (a host clock that was never set)"),
    "before_2000": (
        True,
        "a timestamp before 2000-01-01 UTC, years before any GPU exporter: seconds where milliseconds are "
        "expected (Prometheus text timestamps are ms) or a clock that was never set",
    ),
    "clock_skew": (True, "a timestamp in the future beyond the tolerance (host clock ahead)"),
    "out_of_range": (True, "a value outside the metric's physical range (e.g. utilisation > 100 %)"),
    "no_timestamp": (False, "exposition sample without a timestamp: the scrape time given was used"),
}


@dataclass(slots=True)
class ProblemCounter:
    """Counts problems per (source, kind) and keeps the first example."""

    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    examples: dict[tuple[str, str], str] = field(default_factory=dict)

    def add(self, source: str, kind: str, example: str, n: int = 1) -> None:
        key = (source, kind)
        self.counts[key] += n
        self.examples.setdefault(key, example[:200])

    def problems(self) -> tuple[IngestProblem, ...]:
        return tuple(
            IngestProblem(
                source=s, kind=k, count=n, example=self.examples[(s, k)], dropped=PROBLEM_KINDS[k][0]
            )
            for (s, k), n in sorted(self.counts.items())
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestReport:
    """What one ingest read, stored and refused."""

    sources: tuple[str, ...]
    rows_read: int  # samples parsed (before dedup/skew checks)
    rows_stored: int
    gpus: int  # distinct gpu_key in what was stored
    first_ts_us: int | None
    last_ts_us: int | None
    problems: tuple[IngestProblem, ...]
    batch_id: str | None  # None when nothing was stored

    @property
    def rows_dropped(self) -> int:
        return sum(p.count for p in self.problems if p.dropped)
