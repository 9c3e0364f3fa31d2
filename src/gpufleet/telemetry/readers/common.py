"""Shared by the readers: DCGM names, label variants, sentinels, value checks."""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Final

from gpufleet.errors import InputError
from gpufleet.telemetry.schema import ProblemCounter, SampleBatch
from gpufleet.units import SECONDS_PER_DAY

#: dcgm-exporter metric (upper-cased) -> (canonical metric, factor to the canonical unit).
#: Units: NVIDIA dcgm-exporter etc/default-counters.csv and dcp-metrics-included.csv @ d5e5f510.
DCGM_METRICS: Final[dict[str, tuple[str, float]]] = {
    "DCGM_FI_DEV_GPU_UTIL": ("gpu_util_pct", 1.0),
    "DCGM_FI_DEV_MEM_COPY_UTIL": ("mem_copy_util_pct", 1.0),
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": ("gr_engine_active_ratio", 1.0),
    "DCGM_FI_PROF_SM_ACTIVE": ("sm_active_ratio", 1.0),
    "DCGM_FI_PROF_SM_OCCUPANCY": ("sm_occupancy_ratio", 1.0),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": ("tensor_active_ratio", 1.0),
    "DCGM_FI_PROF_DRAM_ACTIVE": ("dram_active_ratio", 1.0),
    "DCGM_FI_DEV_FB_USED": ("fb_used_mib", 1.0),
    "DCGM_FI_DEV_FB_FREE": ("fb_free_mib", 1.0),
    "DCGM_FI_DEV_FB_TOTAL": ("fb_total_mib", 1.0),
    "DCGM_FI_DEV_FB_RESERVED": ("fb_reserved_mib", 1.0),
    "DCGM_FI_DEV_POWER_USAGE": ("power_w", 1.0),
    "DCGM_FI_DEV_POWER_MGMT_LIMIT": ("power_limit_w", 1.0),
    "DCGM_FI_DEV_GPU_TEMP": ("gpu_temp_c", 1.0),
    "DCGM_FI_DEV_MEMORY_TEMP": ("memory_temp_c", 1.0),
    "DCGM_FI_DEV_SM_CLOCK": ("sm_clock_mhz", 1.0),
    # Served-model latency, in seconds (a gauge such as a recording rule of a p95, or single requests).
    "GPUFLEET_REQUEST_LATENCY_SECONDS": ("request_latency_s", 1.0),
    # Serving engines. vLLM: docs.vllm.ai "Production Metrics" (vllm/engine/metrics.py; V1 renames
    # gpu_cache_usage_perc to kv_cache_usage_perc and time_per_output_token to inter_token_latency; the
    # "perc" gauges are 0-1). TGI: huggingface/text-generation-inference docs "Metrics" (tgi_queue_size,
    # tgi_batch_current_size, tgi_request_mean_time_per_token_duration). SGLang: docs "Production Metrics"
    # (sglang:num_queue_reqs, sglang:token_usage 0-1, sglang:time_to_first_token_seconds).
    "VLLM:NUM_REQUESTS_WAITING": ("queue_requests", 1.0),
    "TGI_QUEUE_SIZE": ("queue_requests", 1.0),
    "SGLANG:NUM_QUEUE_REQS": ("queue_requests", 1.0),
    "VLLM:NUM_REQUESTS_RUNNING": ("running_requests", 1.0),
    "TGI_BATCH_CURRENT_SIZE": ("running_requests", 1.0),
    "SGLANG:NUM_RUNNING_REQS": ("running_requests", 1.0),
    "VLLM:GPU_CACHE_USAGE_PERC": ("kv_cache_usage_ratio", 1.0),
    "VLLM:KV_CACHE_USAGE_PERC": ("kv_cache_usage_ratio", 1.0),
    "SGLANG:TOKEN_USAGE": ("kv_cache_usage_ratio", 1.0),
    "VLLM:NUM_PREEMPTIONS_TOTAL": ("preemptions_total", 1.0),
    "VLLM:TIME_TO_FIRST_TOKEN_SECONDS_BUCKET": ("ttft_s_bucket", 1.0),
    "SGLANG:TIME_TO_FIRST_TOKEN_SECONDS_BUCKET": ("ttft_s_bucket", 1.0),
    "VLLM:TIME_PER_OUTPUT_TOKEN_SECONDS_BUCKET": ("tpot_s_bucket", 1.0),
    "VLLM:INTER_TOKEN_LATENCY_SECONDS_BUCKET": ("tpot_s_bucket", 1.0),
    "SGLANG:TIME_PER_OUTPUT_TOKEN_SECONDS_BUCKET": ("tpot_s_bucket", 1.0),
    "SGLANG:INTER_TOKEN_LATENCY_SECONDS_BUCKET": ("tpot_s_bucket", 1.0),
    "TGI_REQUEST_MEAN_TIME_PER_TOKEN_DURATION_BUCKET": ("tpot_s_bucket", 1.0),
    # Training step time, a gauge in seconds set by the job after each optimizer step (per rank). No standard
    # name exists: these are the spellings of Prometheus client instrumentation seen in trainers (name the
    # unit, ``_seconds``, per the Prometheus naming guide); any other name: ``--step-time-metric NAME``.
    "TRAIN_STEP_DURATION_SECONDS": ("step_time_s", 1.0),
    "TRAINING_STEP_TIME_SECONDS": ("step_time_s", 1.0),
    "TRAINER_STEP_TIME_SECONDS": ("step_time_s", 1.0),
    "STEP_TIME_SECONDS": ("step_time_s", 1.0),
}

#: Extra names of the training step-time gauge (as given), set for one ingest or findings run by
#: :func:`metric_aliases` (``--step-time-metric NAME``).
_STEP_ALIASES: ContextVar[tuple[str, ...]] = ContextVar("gpufleet_step_time_aliases", default=())
_NAME_RE: Final = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def known_metric(name: str) -> tuple[str, float] | None:
    """(canonical metric, factor) of an exporter metric name (case-insensitive), or None when unknown."""
    u = name.upper()
    known = DCGM_METRICS.get(u)
    if known is None and any(u == a.upper() for a in _STEP_ALIASES.get()):
        return ("step_time_s", 1.0)
    return known


def alias_names() -> tuple[str, ...]:
    """The extra metric names set by :func:`metric_aliases` (as given)."""
    return _STEP_ALIASES.get()


@contextlib.contextmanager
def metric_aliases(*, step_time: Sequence[str] = ()) -> Iterator[None]:
    """Read the metric names ``step_time`` as the training step time [s] while the block runs."""
    for n in step_time:
        if not _NAME_RE.fullmatch(n):
            raise InputError(
                f"--step-time-metric {n!r} is not a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*); "
                "give the name of the gauge your training job exports, e.g. train_step_duration_seconds."
            )
        if n.upper() in DCGM_METRICS and DCGM_METRICS[n.upper()][0] != "step_time_s":
            raise InputError(
                f"--step-time-metric {n!r} is already read as {DCGM_METRICS[n.upper()][0]}; give the name of "
                "the step-time gauge your training job exports."
            )
    token = _STEP_ALIASES.set(tuple(step_time))
    try:
        yield
    finally:
        _STEP_ALIASES.reset(token)


#: The exporter names of each serving metric (for PromQL: ``{__name__=~"a|b"}``), from DCGM_METRICS.
def exporter_names(canonical: str) -> tuple[str, ...]:
    """The exporter metric names (as the exporters write them, case preserved) mapping to ``canonical``."""
    names = [_EXPORTER_CASE.get(k, k) for k, (c, _) in DCGM_METRICS.items() if c == canonical]
    if canonical == "step_time_s":
        names += [a for a in _STEP_ALIASES.get() if a.upper() not in DCGM_METRICS]
    return tuple(names)


#: Names whose exporter spelling is lower case (Prometheus names are case-sensitive): all but dcgm-exporter's.
_EXPORTER_CASE: Final[dict[str, str]] = {k: k.lower() for k in DCGM_METRICS if not k.startswith("DCGM_")}

#: Physical range of each canonical metric (inclusive); values outside are refused as ``out_of_range``.
VALUE_RANGE: Final[dict[str, tuple[float, float]]] = {
    "gpu_util_pct": (0.0, 100.0),
    "mem_copy_util_pct": (0.0, 100.0),
    "gr_engine_active_ratio": (0.0, 1.0),
    "sm_active_ratio": (0.0, 1.0),
    "sm_occupancy_ratio": (0.0, 1.0),
    "tensor_active_ratio": (0.0, 1.0),
    "dram_active_ratio": (0.0, 1.0),
    "fb_used_mib": (0.0, 4.0e6),
    "fb_free_mib": (0.0, 4.0e6),
    "fb_total_mib": (0.0, 4.0e6),
    "fb_reserved_mib": (0.0, 4.0e6),
    "power_w": (0.0, 5000.0),
    "power_limit_w": (0.0, 5000.0),
    "gpu_temp_c": (-50.0, 150.0),
    "memory_temp_c": (-50.0, 150.0),
    "sm_clock_mhz": (0.0, 5000.0),
    "request_latency_s": (0.0, SECONDS_PER_DAY),
    "queue_requests": (0.0, 1.0e9),
    "running_requests": (0.0, 1.0e9),
    "kv_cache_usage_ratio": (0.0, 1.0),
    "preemptions_total": (0.0, 1.0e18),
    "ttft_s_bucket": (0.0, 1.0e18),
    "tpot_s_bucket": (0.0, 1.0e18),
    "step_time_s": (0.0, SECONDS_PER_DAY),
}

#: Label variants (dcgm-exporter render template, old names, Prometheus ``exported_*`` relabels, lower-cased
#: pipelines; fleet-anchors C.2) -> canonical label column. First present wins, in this order.
LABEL_VARIANTS: Final[dict[str, tuple[str, ...]]] = {
    "host": ("hostname", "Hostname", "exported_hostname", "exported_Hostname", "host", "node", "nodename"),
    "gpu_uuid": ("UUID", "uuid", "exported_UUID", "exported_uuid", "gpu_uuid"),
    "gpu_index": ("gpu", "exported_gpu", "index", "minor_number"),
    "model": ("modelName", "modelname", "model_name", "exported_modelName"),
    "mig_profile": ("GPU_I_PROFILE", "gpu_i_profile", "dra_mig_profile"),
    "mig_instance": ("GPU_I_ID", "gpu_i_id"),
    "pod": ("exported_pod", "pod", "pod_name"),
    "namespace": ("exported_namespace", "namespace", "pod_namespace"),
    "container": ("exported_container", "container", "container_name"),
    "job": ("hpc_job", "exported_job", "workload", "job_name"),
    "provider": ("provider", "cloud_provider", "label_provider"),
    "instance_type": (
        "instance_type",
        "node_kubernetes_io_instance_type",
        "label_node_kubernetes_io_instance_type",
        "beta_kubernetes_io_instance_type",
        "InstanceType",
    ),
    "region": ("region", "topology_kubernetes_io_region", "label_topology_kubernetes_io_region"),
    "le": ("le",),
}


def is_dcgm_blank(value: float) -> bool:
    """True for DCGM "blank" sentinels (not found / not supported / not permissioned).

    int64 blanks are >= 0x7ffffffffffffff0 (fleet-anchors C.1; dcgm-exporter README shows ...f2 for
    MEMORY_TEMP); int32 blanks 0x7ffffff0-0x7fffffff and fp64 blanks 2**47 .. 2**47+3 (DCGM
    ``dcgm_structs.h``:
    DCGM_INT32_BLANK, DCGM_FP64_BLANK).
    """
    if value >= 9.223372036854775792e18:
        return True
    if 2147483632.0 <= value <= 2147483647.0:
        return True
    return 140737488355328.0 <= value <= 140737488355331.0


def canonical_labels(raw: Mapping[str, str], source: str) -> dict[str, str]:
    """Canonical label columns from the raw labels of a series (first present variant wins)."""
    out = {"source": source}
    for col, variants in LABEL_VARIANTS.items():
        for v in variants:
            val = raw.get(v)
            if val:
                out[col] = val
                break
    if "host" not in out and raw.get("instance"):
        # Prometheus target "host:port" when the exporter gave no hostname label.
        out["host"] = (
            raw["instance"].rsplit(":", 1)[0] if raw["instance"].count(":") == 1 else raw["instance"]
        )
    return out


def parse_index(text: str) -> int | None:
    try:
        i = int(text)
    except ValueError:
        return None
    return i if 0 <= i < 1_000_000 else None


#: Earliest sample time stored [µs since 1970]: 2000-01-01 00:00 UTC. DCGM (2018) and nvidia-smi CSV logs
#: are far younger; a 1970 date is a seconds value read as milliseconds or an unset clock.
EARLIEST_TS_US = 946_684_800 * 1_000_000
#: Latest sample time that is a time at all [µs since 1970]: 10000-01-01 00:00 UTC (253,402,300,800 s, the
#: end of what datetime and DuckDB represent). A later one (``10**30`` ms in an exposition line) overflowed
#: the store's int64 microseconds with a traceback; it is counted as ``clock_skew`` and dropped.
LATEST_TS_US = 253_402_300_800 * 1_000_000


def timestamp_us(value: float) -> int:
    """``value`` [µs] as an int, with a non-finite or out-of-range value clipped to just outside
    [0, :data:`LATEST_TS_US`] so that :func:`add_checked` counts it (``before_epoch`` or ``clock_skew``)."""
    if value > LATEST_TS_US:
        return LATEST_TS_US + 1
    if not value >= 0:  # negative or NaN
        return -1
    return int(value)


def lo_hi_ok(metric: str, value: float) -> bool:
    """True for a plain valid value (finite, not a DCGM blank, inside the metric's physical range)."""
    lo, hi = VALUE_RANGE[metric]
    return lo <= value <= hi and not is_dcgm_blank(value)


def add_checked(
    batch: SampleBatch,
    problems: ProblemCounter,
    *,
    where: str,
    labels: dict[str, str],
    gpu_index: int,
    ts_us: int,
    metric: str,
    value: float,
    example: str,
    label_id: int | None = None,
) -> None:
    """Add a sample after the missing-value, sentinel and physical-range checks (counted when refused)."""
    if math.isnan(value) or math.isinf(value) or is_dcgm_blank(value):
        problems.add(where, "missing_value", example)
        return
    if ts_us < 0:
        problems.add(where, "before_epoch", example)
        return
    if ts_us < EARLIEST_TS_US:
        problems.add(where, "before_2000", example)
        return
    if ts_us > LATEST_TS_US:
        problems.add(where, "clock_skew", f"{example} (after the year 9999)")
        return
    lo, hi = VALUE_RANGE[metric]
    if not lo <= value <= hi:
        problems.add(where, "out_of_range", f"{metric}={value} (allowed {lo}-{hi}): {example}")
        return
    batch.add_sample(
        batch.label_id(labels, gpu_index) if label_id is None else label_id, ts_us, metric, value
    )
