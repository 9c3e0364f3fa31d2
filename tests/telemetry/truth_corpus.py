"""A held-out known-truth telemetry corpus, built apart from ``gpufleet.telemetry.synth`` (not imported).

Where synth.py draws a level plus a sine, AR(1) noise and spikes per GPU, this corpus is built from what real
fleets show, in the files real exporters write:

- **real metric distributions**: training GPUs draw SM_ACTIVE, GPU_UTIL and FB_USED sample by sample from the
  AcmeTrace fleet CDFs (Seren, Kalos: two A100-80GB LLM clusters, NSDI'24; ``data/acme_dcgm_cdfs.csv``,
  ``data/acme_dcgm_fb_cdfs.csv``). The trace holds per-metric marginals only, so the joint is a rank coupling
  (one quantile path per GPU, GPU_UTIL's quantile = SM's + noise, GPU_UTIL never below SM activity, which is
  physical: a kernel that keeps SMs active is running). The AR(1) is in quantile space, so each sample's
  marginal is the fleet's;
- **time structure**: checkpoint pauses (10 min every 2 h at SM ~0, memory held), evaluation gaps (20 min
  every 8 h at a third of the load), nightly jobs (1 h and 3 h at 02:00 host time), serving with a diurnal
  curve in the host's time zone and bursts, jobs that start and end inside the window, a GPU that changes
  owner, an out-of-memory crash loop (memory climbs to the capacity, the process dies, restarts);
- **collection defects**: scrape gaps, an exporter restart (gap, then DCGM blank sentinels), NaN values, a
  stuck exporter repeating one value for 3 h, duplicated series (two exporters scraped by one Prometheus at
  7 s offset), a container restart resetting vLLM's counters and histograms, hosts in three time zones;
- **formats**: dcgm-exporter exposition text with its label set (``gpu``, ``UUID``, ``pci_bus_id``,
  ``device``, ``modelName``, ``Hostname``, ``DCGM_FI_DRIVER_VERSION``, ``container``, ``namespace``, ``pod``,
  MIG ``GPU_I_PROFILE``/``GPU_I_ID``), a Prometheus ``query_range`` JSON body with ``instance``/``job`` and
  vLLM's metrics, and ``nvidia-smi --query-gpu`` CSV with units, ``[N/A]`` and ``[Not Supported]``.

Each GPU and workload carries its true state, the finding a practitioner would give it and the actions they
would accept (``release``, ``mig_slice``, ``smaller_gpu``, ``larger_gpu``, ``keep``; ``share``: time-slice or
schedule, no priced option needed). Alert truth says which default rules must and must not fire.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final
from zoneinfo import ZoneInfo

import numpy as np

from gpufleet.telemetry.finding_types import FleetFindings

DATA: Final = Path(__file__).parent / "data"
T0_S: Final = 1_792_713_600  # 2026-10-23 00:00:00 UTC, a Friday: Europe leaves summer time on the 25th
DAYS: Final = 4.0
STEP_S: Final = 300
A100_MIB: Final = 81920.0
H100_MIB: Final = 81559.0
DRIVER: Final = "535.183.01"


@dataclass(frozen=True, slots=True, kw_only=True)
class Truth:
    subject: str  # GPU key (UUID, UUID/mig<id>) or workload key
    level: str  # "gpu" or "workload"
    state: str  # what it really is (e.g. "nightly 1 h job")
    finding: str  # the finding a practitioner gives it
    actions: tuple[str, ...]  # acceptable best actions


@dataclass(frozen=True, slots=True, kw_only=True)
class AlertTruth:
    rule: str
    subject: str
    fires: bool
    why: str


@dataclass(slots=True)
class Corpus:
    files: list[tuple[Path, dict[str, str]]] = field(default_factory=list)  # path, ingest kwargs
    truths: list[Truth] = field(default_factory=list)
    alerts: list[AlertTruth] = field(default_factory=list)
    #: subjects only the nvidia-smi logs hold (no Prometheus form)
    smi_only: set[str] = field(default_factory=set)


# ---------------------------------------------------------------- real distributions (AcmeTrace CDFs)


def _cdf(path: Path, cluster: str, metric: str) -> tuple[np.ndarray, np.ndarray]:
    xs, ps = [], []
    with path.open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["cluster"] == cluster and row["metric"] == metric:
                xs.append(float(row["x_value"]))
                ps.append(float(row["cdf_percent"]))
    order = np.argsort(ps, kind="stable")
    return np.asarray(ps)[order], np.asarray(xs)[order]


class Acme:
    """Inverse CDFs (quantile 0-1 -> value in the metric's percent) of one AcmeTrace cluster."""

    def __init__(self, cluster: str) -> None:
        self.sm = _cdf(DATA / "acme_dcgm_cdfs.csv", cluster, "DCGM_FI_PROF_SM_ACTIVE")
        self.util = _cdf(DATA / "acme_dcgm_cdfs.csv", cluster, "DCGM_FI_DEV_GPU_UTIL")
        self.fb = _cdf(DATA / "acme_dcgm_fb_cdfs.csv", cluster, "DCGM_FI_DEV_FB_USED_pct_of_80GB")

    @staticmethod
    def inv(table: tuple[np.ndarray, np.ndarray], u: np.ndarray) -> np.ndarray:
        out: np.ndarray = np.interp(np.clip(u, 0.0, 1.0) * 100.0, table[0], table[1])
        return out

    def quantile_of(self, table: tuple[np.ndarray, np.ndarray], x_pct: float) -> float:
        return float(np.interp(x_pct, table[1], table[0])) / 100.0


def _ar1(rng: np.random.Generator, n: int, sd: float, phi: float = 0.9) -> np.ndarray:
    e = rng.normal(0.0, sd * math.sqrt(1 - phi * phi), n)
    out = np.empty(n)
    out[0] = rng.normal(0.0, sd)
    for i in range(1, n):
        out[i] = phi * out[i - 1] + e[i]
    return out


# ---------------------------------------------------------------- time structure

N: Final = int(DAYS * 86_400 / STEP_S)
TS: Final = T0_S + np.arange(N) * STEP_S


def local_hour(tz: str) -> np.ndarray:
    z = ZoneInfo(tz)
    off = [datetime.fromtimestamp(int(t), z).utcoffset() for t in TS[:: 12 * 24]]  # one per day
    off_s = np.repeat([o.total_seconds() if o else 0.0 for o in off], 12 * 24)[:N]
    out: np.ndarray = ((TS + off_s) % 86_400) / 3_600.0
    return out


def checkpoint_mask() -> np.ndarray:
    """True during checkpoint pauses (10 min every 2 h) and evaluation (20 min every 8 h)."""
    sec = (TS - T0_S) % 7_200
    return sec < 600


def eval_mask() -> np.ndarray:
    sec = (TS - T0_S) % 28_800
    return (sec >= 3_600) & (sec < 4_800)


@dataclass(slots=True)
class Gpu:
    """One GPU's series (NaN = value missing; ``present`` False = not scraped)."""

    uuid: str
    index: int
    model: str
    capacity_mib: float
    labels: dict[str, str]
    sm: np.ndarray
    util: np.ndarray
    fb: np.ndarray
    dram: np.ndarray
    power: np.ndarray
    present: np.ndarray
    mig: tuple[str, str] | None = None  # (GPU_I_PROFILE, GPU_I_ID)
    pods: list[tuple[int, int, dict[str, str]]] = field(default_factory=list)  # [i0, i1) -> pod labels

    @property
    def key(self) -> str:
        return f"{self.uuid}/mig{self.mig[1]}" if self.mig else self.uuid


def _gpu(
    rng: np.random.Generator,
    uuid: str,
    index: int,
    model: str,
    cap: float,
    sm: np.ndarray,
    fb_share: np.ndarray,
) -> Gpu:
    sm = np.clip(sm, 0.0, 1.0)
    util = np.where(sm > 0.003, np.clip(100 * sm + 35 * np.sqrt(sm) + rng.normal(0, 2, N), 0, 100), 0.0)
    util = np.maximum(util, 100 * sm)
    return Gpu(
        uuid=uuid,
        index=index,
        model=model,
        capacity_mib=cap,
        labels={},
        sm=sm,
        util=util,
        fb=np.clip(fb_share, 0.0, 1.0) * cap,
        dram=np.clip(sm * rng.uniform(0.35, 0.6) + rng.normal(0, 0.01, N), 0, 1),
        power=np.clip(60 + 330 * sm + rng.normal(0, 4, N), 45, 400),
        present=np.ones(N, dtype=bool),
    )


def acme_training(
    rng: np.random.Generator,
    acme: Acme,
    uuid: str,
    index: int,
    u_sm: float,
    u_fb: float,
    *,
    sd: float = 0.04,
    pauses: bool = True,
) -> Gpu:
    """A training GPU whose samples follow the AcmeTrace marginals around quantiles ``u_sm``, ``u_fb``."""
    q = np.clip(u_sm + _ar1(rng, N, sd), 0.0, 1.0)
    sm = Acme.inv(acme.sm, q) / 100.0
    util = np.maximum(Acme.inv(acme.util, np.clip(q + rng.normal(0.0, 0.08, N), 0, 1)), 100 * sm)
    fb = Acme.inv(acme.fb, np.clip(u_fb + _ar1(rng, N, 0.01), 0, 1)) / 100.0
    if pauses:
        ck, ev = checkpoint_mask(), eval_mask()
        sm = np.where(ck, rng.uniform(0.0, 0.02, N), np.where(ev, sm / 3, sm))
        util = np.where(ck, rng.uniform(0.0, 5.0, N), util)
    g = _gpu(rng, uuid, index, "NVIDIA A100-SXM4-80GB", A100_MIB, sm, fb)
    g.util = util
    return g


# ---------------------------------------------------------------- writers


def _labels(d: dict[str, str]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in d.items())


DCGM_METRICS: Final = (
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", "util", "{:.0f}"),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", "fb", "{:.0f}"),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", "free", "{:.0f}"),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", "power", "{:.3f}"),
    (
        "DCGM_FI_PROF_SM_ACTIVE",
        "gauge",
        "The ratio of cycles an SM has at least 1 warp assigned.",
        "sm",
        "{:.6f}",
    ),
    (
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "gauge",
        "Ratio of cycles the device memory interface is active.",
        "dram",
        "{:.6f}",
    ),
)


def _dcgm_labels(g: Gpu, host: str, i: int, extra: dict[str, str]) -> dict[str, str]:
    lab = {
        "gpu": str(g.index),
        "UUID": g.uuid,
        "pci_bus_id": f"00000000:{0x07 + 0x10 * g.index:02X}:00.0",
        "device": f"nvidia{g.index}",
        "modelName": g.model,
        "Hostname": host,
        "DCGM_FI_DRIVER_VERSION": DRIVER,
    }
    if g.mig:
        lab |= {"GPU_I_PROFILE": g.mig[0], "GPU_I_ID": g.mig[1]}
    for i0, i1, pod in g.pods:
        if i0 <= i < i1:
            lab |= pod
    return lab | extra | g.labels


def _value(g: Gpu, field_: str, i: int) -> float:
    if field_ == "free":
        return float(g.capacity_mib - g.fb[i]) if math.isfinite(g.fb[i]) else math.nan
    return float(getattr(g, field_)[i])


def write_dcgm_text(path: Path, host: str, gpus: list[Gpu], extra: dict[str, str] | None = None) -> None:
    """dcgm-exporter scrapes (exposition text, millisecond timestamps), one after another."""
    out = []
    for name, kind, help_, _, _ in DCGM_METRICS:
        out.append(f"# HELP {name} {help_}\n# TYPE {name} {kind}\n")
    for i in range(N):
        for g in gpus:
            if not g.present[i]:
                continue
            lab = _labels(_dcgm_labels(g, host, i, extra or {}))
            for name, _, _, fld, fmt in DCGM_METRICS:
                if g.mig and name == "DCGM_FI_DEV_GPU_UTIL":
                    continue  # not supported per MIG instance (dcgm-exporter reports none)
                v = _value(g, fld, i)
                txt = "NaN" if math.isnan(v) else ("1.40737488355328e+14" if v < 0 else fmt.format(v))
                out.append(f"{name}{{{lab}}} {txt} {int(TS[i]) * 1000}\n")
    path.write_text("".join(out), encoding="utf-8")


def prom_series(labels: dict[str, str], ts: np.ndarray, values: np.ndarray) -> dict[str, object]:
    vals = [[float(t), "NaN" if math.isnan(v) else f"{v:.6g}"] for t, v in zip(ts, values, strict=True)]
    return {"metric": labels, "values": vals}


def write_prom_json(path: Path, series: list[dict[str, object]]) -> None:
    path.write_text(
        json.dumps({"status": "success", "data": {"resultType": "matrix", "result": series}}),
        encoding="utf-8",
    )


def write_smi(path: Path, tz: str, gpus: list[Gpu], *, power_na: bool, step: int = 2) -> None:
    """nvidia-smi --query-gpu=timestamp,index,uuid,name,memory.total,memory.used,utilization.gpu,power.draw
    --format=csv -l 600 (every second scrape of the grid), host-local timestamps."""
    z = ZoneInfo(tz)
    lines = [
        "timestamp, index, uuid, name, memory.total [MiB], memory.used [MiB], utilization.gpu [%], "
        "power.draw [W]"
    ]
    for i in range(0, N, step):
        stamp = (
            datetime.fromtimestamp(int(TS[i]), z).strftime("%Y/%m/%d %H:%M:%S.") + f"{(i * 37) % 1000:03d}"
        )
        for g in gpus:
            if not g.present[i]:
                continue
            pw = "[N/A]" if power_na else f"{g.power[i]:.2f} W"
            mem = "[Not Supported]" if math.isnan(g.fb[i]) else f"{g.fb[i]:.0f} MiB"
            cap = f"{g.capacity_mib:.0f} MiB"
            lines.append(f"{stamp}, {g.index}, {g.uuid}, {g.model}, {cap}, {mem}, {g.util[i]:.0f} %, {pw}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


# ---------------------------------------------------------------- vLLM metrics


def vllm_series(
    rng: np.random.Generator,
    pod: dict[str, str],
    load: np.ndarray,
    *,
    capacity: float,
    restart_at: int | None,
    scrape: dict[str, str],
) -> list[dict[str, object]]:
    """vLLM's gauges and counters for one pod whose offered load (requests/s) is ``load``; a replica serves
    up to ``capacity`` requests/s, the excess waits. ``restart_at``: the container restarts (counters
    reset)."""
    lab = {"model_name": "meta-llama/Llama-3.1-8B-Instruct", "engine": "0", **pod, **scrape}
    over = np.maximum(load - capacity, 0.0)
    waiting = np.where(over > 0, np.ceil(over * 4 + rng.uniform(0, 3, N)), 0.0)
    running = np.minimum(load, capacity) * 2.0
    kv = np.clip(0.08 + 0.8 * np.minimum(load / capacity, 1.0) + rng.normal(0, 0.02, N), 0, 1)
    preempt_step = np.where(kv > 0.97, rng.poisson(3, N), 0).astype(float)
    reqs = rng.poisson(np.maximum(load, 0) * STEP_S).astype(float)
    # TTFT per request: healthy ~0.2 s; waiting requests pay the queue
    les = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
    shares = []
    for w in waiting:
        mu = math.log(0.18 + 0.6 * w)
        cdf = [0.5 * (1 + math.erf((math.log(le) - mu) / (0.5 * math.sqrt(2)))) for le in les]
        shares.append([*cdf, 1.0])
    bucket_step = np.asarray(shares) * reqs[:, None]
    pre = np.cumsum(preempt_step)
    buckets = np.cumsum(bucket_step, axis=0)
    if restart_at is not None:  # counters restart from zero with the container
        pre[restart_at:] -= pre[restart_at - 1]
        buckets[restart_at:] -= buckets[restart_at - 1]
    out = [
        prom_series({"__name__": "vllm:num_requests_waiting", **lab}, TS, waiting),
        prom_series({"__name__": "vllm:num_requests_running", **lab}, TS, running),
        prom_series({"__name__": "vllm:gpu_cache_usage_perc", **lab}, TS, kv),
        prom_series({"__name__": "vllm:num_preemptions_total", **lab}, TS, pre),
    ]
    for j, le in enumerate([*(f"{x:g}" for x in les), "+Inf"]):
        out.append(
            prom_series(
                {"__name__": "vllm:time_to_first_token_seconds_bucket", "le": le, **lab},
                TS,
                np.round(buckets[:, j]),
            )
        )
    return out


# ---------------------------------------------------------------- the corpus


def _uuid(rng: np.random.Generator) -> str:
    h = "".join(rng.choice(list("0123456789abcdef"), 32))
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _pod(ns: str, name: str, container: str) -> dict[str, str]:
    return {"container": container, "namespace": ns, "pod": name}


def build(out: Path, seed: int = 20260302) -> Corpus:
    """Write the corpus's files under ``out``; the truth of every GPU, workload and alert."""
    rng = np.random.default_rng(seed)
    c = Corpus()

    def t(subject: str, level: str, state: str, finding: str, *actions: str) -> None:
        c.truths.append(Truth(subject=subject, level=level, state=state, finding=finding, actions=actions))

    # --- host A: 8 x A100 pretraining node; 7 ranks busy, GPU 7 allocated to the job but never used ------
    seren = Acme("Seren")
    a_gpus = []
    pre_pod = _pod("training", "pretrain-7b-xk2pq", "trainer")
    u_busy = seren.quantile_of(seren.sm, 72.0)
    for i in range(7):
        g = acme_training(rng, seren, _uuid(rng), i, u_busy, seren.quantile_of(seren.fb, 78.0))
        g.pods = [(0, N, pre_pod)]
        a_gpus.append(g)
        t(g.key, "gpu", "TP/DP rank of a pretraining job, checkpoint pauses", "Optimized", "keep")
    g7 = _gpu(rng, _uuid(rng), 7, "NVIDIA A100-SXM4-80GB", A100_MIB, np.zeros(N), np.full(N, 0.006))
    g7.pods = [(0, N, pre_pod)]
    a_gpus.append(g7)
    t(g7.key, "gpu", "allocated to a 7-rank job, never used (TP/DP imbalance)", "Idle", "release")
    t("training/pretrain-7b", "workload", "pretraining, 8 GPUs requested, 7 used", "Optimized", "keep")
    # exporter restart: 25 min without scrapes, then one scrape of blank profiling fields; a few NaN
    r0 = N // 3
    for g in a_gpus:
        g.present[r0 : r0 + 5] = False
        g.sm[r0 + 5] = -1.0  # written as DCGM's fp64 blank sentinel
        g.dram[r0 + 5] = -1.0
        g.sm[rng.choice(N, 4, replace=False)] = math.nan
    node = {
        "node_kubernetes_io_instance_type": "p4de.24xlarge",
        "topology_kubernetes_io_region": "us-east-1",
        "provider": "aws",
    }
    t("trn-a100-01", "node", "8 GPUs, 7 busy ranks, one GPU never used", "Overprovisioned")
    write_dcgm_text(out / "dcgm-trn-a100-01.prom", "trn-a100-01", a_gpus, node)
    c.files.append((out / "dcgm-trn-a100-01.prom", {}))

    # --- host B: 8 x A100, one single-GPU job each, levels drawn from the Kalos CDFs ------------------
    kalos = Acme("Kalos")
    b_gpus = []
    # quantiles of SM_ACTIVE and FB_USED in the Kalos CDFs. Kalos SM_ACTIVE is 0 up to its 38th percentile (a
    # third of the fleet's GPU time is idle), rises through 2-33 % between the 40th and 50th, and sits at
    # 55-95 % above. Quantile noise is narrower on the steep part so the level stays one state.
    draws = [
        (0.20, 0.20, 0.02),
        (0.44, 0.30, 0.006),
        (0.465, 0.34, 0.006),
        (0.48, 0.25, 0.006),
        (0.62, 0.55, 0.04),
        (0.80, 0.70, 0.04),
        (0.93, 0.62, 0.04),
    ]
    for i, (u_sm, u_fb, sd) in enumerate(draws):
        g = acme_training(rng, kalos, _uuid(rng), i, u_sm, u_fb, sd=sd)
        name = f"ft-{i}-" + "".join(rng.choice(list("bcdfghjklmnpqrstvwxz2456789"), 5))
        g.pods = [(0, N, _pod("research", name, "train"))]
        b_gpus.append(g)
        # the truth is read off the drawn series (what the GPU really did), by a practitioner's reading
        p95 = float(np.nanpercentile(g.sm, 95))
        fb_gib = float(np.nanmax(g.fb)) / 1024
        fb_share = float(np.nanpercentile(g.fb, 99)) / A100_MIB
        state = f"fine-tune at Kalos SM quantile {u_sm:.2f} (SM p95 {p95:.0%}, FB p99 {fb_share:.0%})"
        if p95 < 0.05 and fb_share < 0.10:
            fnd, acts = "Idle", ("release",)
        elif p95 < 0.30:
            fnd, acts = (
                "Overprovisioned",
                (("mig_slice", "smaller_gpu") if fb_gib < 39 else ("smaller_gpu", "share")),
            )
        elif p95 > 0.50:
            fnd, acts = "Optimized", ("keep",)
        else:
            raise AssertionError(f"ambiguous draw {state}: pick another quantile")
        t(g.key, "gpu", state, fnd, *acts)
        t(f"research/ft-{i}", "workload", state, fnd, *acts)
    # GPU 7: out-of-memory crash loop: memory climbs to the capacity in ~3 h, the process dies and restarts
    phase = ((TS - T0_S) % 10_800) / 10_800
    oom = _gpu(
        rng, _uuid(rng), 7, "NVIDIA A100-SXM4-80GB", A100_MIB, np.where(phase < 0.03, 0.0, 0.6), 0.0 * phase
    )
    oom.sm = np.clip(oom.sm + rng.normal(0, 0.04, N), 0, 1)
    oom.fb = np.where(phase < 0.03, 600.0, (0.70 + 0.30 * np.minimum(phase / 0.9, 1.0)) * A100_MIB - 150)
    oom.pods = [(0, N, _pod("research", "longctx-sft-q8xvz", "train"))]
    b_gpus.append(oom)
    t(oom.key, "gpu", "out-of-memory crash loop every 3 h", "Underprovisioned", "larger_gpu")
    t("research/longctx-sft", "workload", "out-of-memory crash loop", "Underprovisioned", "larger_gpu")
    t(
        "trn-a100-02",
        "node",
        "single-GPU jobs, one out of memory (the worst GPU names the node)",
        "Underprovisioned",
    )
    write_dcgm_text(out / "dcgm-trn-a100-02.prom", "trn-a100-02", b_gpus)
    c.files.append((out / "dcgm-trn-a100-02.prom", {}))
    c.alerts.append(
        AlertTruth(rule="high_memory_usage", subject=oom.key, fires=True, why="memory at capacity")
    )

    # --- host C: 4 x H100 batch node, no node labels ----------------------------------------------------
    hq = ((TS - T0_S) % 86_400) / 3_600.0
    c_gpus = []
    for i, (hours, name) in enumerate(((1.0, "nightly-etl"), (3.0, "nightly-embed"))):
        on = (hq >= 2.0) & (hq < 2.0 + hours)
        g = _gpu(
            rng,
            _uuid(rng),
            i,
            "NVIDIA H100 80GB HBM3",
            H100_MIB,
            np.where(on, 0.85 + rng.normal(0, 0.03, N), rng.uniform(0, 0.004, N)),
            np.where(on, 0.55, 0.005),
        )
        cron = f"{name}-{29_540_000 + i * 1440}-" + "".join(
            rng.choice(list("bcdfghjklmnpqrstvwxz2456789"), 5)
        )
        g.pods = [(k, k + int(hours * 12), _pod("batch", cron, "job")) for k in range(24, N, 288)]
        c_gpus.append(g)
        t(
            g.key,
            "gpu",
            f"held all day for a {hours:g} h nightly job",
            "Overprovisioned",
            "schedule_bursts",
            "share",
        )
        t(
            f"batch/{name}",
            "workload",
            f"CronJob, {hours:g} h a night: {4 * hours:g} h observed",
            "InsufficientData",
        )
    # GPU 2: a notebook (idle, 40 h), then a trainer (busy, the rest of the window): the owner changes
    cut = int(40 * 3_600 / STEP_S)
    g = _gpu(
        rng,
        _uuid(rng),
        2,
        "NVIDIA H100 80GB HBM3",
        H100_MIB,
        np.where(np.arange(N) < cut, rng.uniform(0, 0.01, N), 0.82 + rng.normal(0, 0.04, N)),
        np.where(np.arange(N) < cut, 0.03, 0.7),
    )
    g.pods = [
        (0, cut, _pod("research", "notebook-alice-0", "jupyter")),
        (cut, N, _pod("research", "rl-run-wz5kt", "train")),
    ]
    c_gpus.append(g)
    t(g.key, "gpu", "notebook 40 h then a busy trainer 56 h", "Optimized", "keep")
    t("research/notebook-alice", "workload", "notebook holding 2 GiB, no compute, 40 h", "Idle", "release")
    t("research/rl-run", "workload", "busy trainer, 56 h", "Optimized", "keep")
    # GPU 3: a 20 h job that starts and ends inside the window, nothing before or after
    j0, j1 = int(30 * 3_600 / STEP_S), int(50 * 3_600 / STEP_S)
    idx = np.arange(N)
    on = (idx >= j0) & (idx < j1)
    g = _gpu(
        rng,
        _uuid(rng),
        3,
        "NVIDIA H100 80GB HBM3",
        H100_MIB,
        np.where(on, 0.9, 0.002),
        np.where(on, 0.6, 0.005),
    )
    g.pods = [(j0, j1, _pod("batch", "eval-sweep-k7m2p", "eval"))]
    c_gpus.append(g)
    t(g.key, "gpu", "one 20 h job in 96 h, idle otherwise", "Overprovisioned", "schedule_bursts", "share")
    t("batch/eval-sweep", "workload", "a 20 h job (under the 30 h minimum)", "InsufficientData")
    # GPU 4: a memory-bandwidth-bound trainer (embedding tables): DRAM active ~90 %, SM ~50 %, memory 70 %
    g = _gpu(
        rng, _uuid(rng), 4, "NVIDIA H100 80GB HBM3", H100_MIB, 0.5 + rng.normal(0, 0.03, N), np.full(N, 0.7)
    )
    g.dram = np.clip(0.9 + rng.normal(0, 0.02, N), 0, 1)
    g.sm = np.where(checkpoint_mask(), 0.01, g.sm)
    g.pods = [(0, N, _pod("ads", "dlrm-train-0", "trainer"))]
    c_gpus.append(g)
    t(g.key, "gpu", "DRAM-bandwidth-bound trainer (DRAM 90 %, SM 50 %)", "Optimized", "keep")
    t("ads/dlrm-train", "workload", "DRAM-bandwidth-bound trainer", "Optimized", "keep")
    t("batch-h100-01", "node", "nightly and one-off jobs, one busy trainer", "Overprovisioned")
    write_dcgm_text(out / "dcgm-batch-h100-01.prom", "batch-h100-01", c_gpus)
    c.files.append((out / "dcgm-batch-h100-01.prom", {}))

    # --- host D: A100 in MIG mode, two 3g.40gb instances ------------------------------------------------
    uuid = _uuid(rng)
    d_gpus = []
    for gi, (lvl, mem, name, fnd, act) in enumerate(
        (
            (0.70, 0.80, "embed-api-5c8d7f9b6-mv2rt", "Optimized", ("keep",)),
            (0.002, 0.01, None, "Idle", ("release",)),
        ),
        start=1,
    ):
        g = _gpu(
            rng,
            uuid,
            0,
            "NVIDIA A100-SXM4-80GB",
            40_192.0,
            lvl + rng.normal(0, 0.05 if lvl > 0.1 else 0.001, N),
            np.full(N, mem),
        )
        g.mig = ("3g.40gb", str(gi))
        if name:
            g.pods = [(0, N, _pod("serving", name, "embed"))]
        d_gpus.append(g)
        t(g.key, "gpu", f"MIG 3g.40gb instance {gi}", fnd, *act)
    t("mig-a100-01", "node", "one A100 in MIG mode, one of its two slices idle", "Overprovisioned")
    write_dcgm_text(out / "dcgm-mig-a100-01.prom", "mig-a100-01", d_gpus)
    c.files.append((out / "dcgm-mig-a100-01.prom", {}))

    # --- host E: 4 x H100 vLLM serving node, scraped by two exporters (duplicated series), query_range JSON
    series: list[dict[str, object]] = []
    lh = local_hour("America/Chicago")
    diurnal = np.clip(np.sin((lh - 8.0) / 24 * 2 * math.pi), 0, None)  # traffic 08:00-20:00 local, peak 14:00
    cases = (
        # name, offered load (req/s), capacity (req/s), SM level fn, restart, truth, actions
        ("chat-6b7c9d8f5-qx2lp", 0.2 + 4.0 * diurnal, 6.0, "Optimized", ("keep",)),
        (
            "assist-7f6d5c4b8-hp9zr",
            1.0 + 7.0 * diurnal + (rng.random(N) < 0.06) * 8.0,
            5.0,
            "Underprovisioned",
            ("larger_gpu", "keep"),
        ),
        (
            "legacy-qa-5d4c8b7f6-tn4vw",
            np.zeros(N),
            6.0,
            "Overprovisioned",
            ("smaller_gpu", "mig_slice", "share"),
        ),
        (
            "faq-bot-8c7b6d5f4-lm2xs",
            0.1 + 0.5 * diurnal,
            6.0,
            "Overprovisioned",
            ("mig_slice", "smaller_gpu"),
        ),
    )
    e_gpus = []
    for i, (pod, load, cap, fnd, acts) in enumerate(cases):
        busy = np.minimum(load / cap, 1.0)
        sm = np.where(busy > 0, 0.05 + 0.85 * busy, 0.0) + rng.normal(0, 0.015, N)
        reserve = 0.9 if pod.startswith(("chat", "assist", "legacy")) else 0.35
        g = _gpu(rng, _uuid(rng), i, "NVIDIA H100 80GB HBM3", H100_MIB, sm, np.full(N, reserve))
        if i == 0:  # a stuck exporter repeats one scrape for 3 h
            s0 = N // 2
            for arr in (g.sm, g.util, g.fb, g.dram, g.power):
                arr[s0 : s0 + 36] = arr[s0]
        podl = _pod("serving", pod, "vllm")
        g.pods = [(0, N, podl)]
        e_gpus.append(g)
        owner = pod.rsplit("-", 2)[0]
        t(g.key, "gpu", f"vLLM {owner}", fnd, *acts)
        t(f"serving/{owner}", "workload", f"vLLM {owner}", fnd, *acts)
        restart = N // 2 + 17 if i in (0, 1) else None
        series += vllm_series(
            rng,
            podl,
            load,
            capacity=cap,
            restart_at=restart,
            scrape={"instance": f"10.4.0.{20 + i}:8000", "job": "vllm"},
        )
        sub = f"svc:serving/{pod}"
        c.alerts.append(
            AlertTruth(
                rule="serving_queue",
                subject=sub,
                fires=i == 1,
                why="requests wait in bursts" if i == 1 else "never waits",
            )
        )
        c.alerts.append(
            AlertTruth(
                rule="inference_latency",
                subject=sub,
                fires=i == 1,
                why="TTFT p95 > 1 s in bursts" if i == 1 else "TTFT ~0.2 s",
            )
        )
        if i == 0:
            c.alerts.append(
                AlertTruth(
                    rule="serving_preemptions",
                    subject=sub,
                    fires=False,
                    why="counter reset by a restart, no preemption",
                )
            )
    for inst, job, off in (("10.4.1.7:9400", "dcgm-exporter", 0), ("10.4.1.7:9401", "gpu-node-exporter", 7)):
        for g in e_gpus:  # two exporters on one node, both scraped: every series twice, 7 s apart; the
            # host-level one does not map pods (no kubelet pod-resources socket): no container/namespace/pod
            lab0 = _dcgm_labels(g, "serve-h100-01", 0, {"instance": inst, "job": job})
            if job == "gpu-node-exporter":
                lab0 = {k: v for k, v in lab0.items() if k not in ("container", "namespace", "pod")}
            for name, _, _, fld, _ in DCGM_METRICS:
                vals = np.array([_value(g, fld, i) for i in range(N)])
                series.append(prom_series({"__name__": name, **lab0}, TS + off, vals))
    t("serve-h100-01", "node", "vLLM node, one service short of capacity", "Underprovisioned")
    write_prom_json(out / "prom-serve-h100-01.json", series)
    c.files.append((out / "prom-serve-h100-01.json", {}))
    c.alerts.append(
        AlertTruth(
            rule="high_memory_usage",
            subject=e_gpus[2].key,
            fires=True,
            why="vLLM reservation (held flat; note expected)",
        )
    )

    # --- host F: nvidia-smi, Tokyo, 2 x L40S: a diurnal service and an idle GPU, power [N/A] -------------
    lt = local_hour("Asia/Tokyo")
    busy = np.clip(np.sin((lt - 7.0) / 24 * 2 * math.pi), 0, None)
    f0 = _gpu(
        rng,
        _uuid(rng),
        0,
        "NVIDIA L40S",
        46_068.0,
        0.05 + 0.7 * busy + rng.normal(0, 0.03, N),
        np.full(N, 0.88),
    )
    f1 = _gpu(rng, _uuid(rng), 1, "NVIDIA L40S", 46_068.0, np.zeros(N), np.full(N, 0.0))
    f1.fb[:] = 1.0
    t(f0.key, "gpu", "diurnal serving in Tokyo (GPU_UTIL only)", "Optimized", "keep")
    t(f1.key, "gpu", "idle L40S", "Idle", "release")
    t("inf-tyo-01", "node", "one serving GPU, one idle", "Overprovisioned")
    c.smi_only |= {f0.key, f1.key, "inf-tyo-01"}
    write_smi(out / "smi-tokyo.csv", "Asia/Tokyo", [f0, f1], power_na=True)
    c.files.append((out / "smi-tokyo.csv", {"timezone": "Asia/Tokyo", "host": "inf-tyo-01"}))

    # --- host G: nvidia-smi, Berlin, 1 x A10G idle with a 6 h logging gap and [Not Supported] memory ------
    g = _gpu(rng, _uuid(rng), 0, "NVIDIA A10G", 23_028.0, np.zeros(N), np.full(N, 0.0))
    g.fb[:] = 0.0
    g.fb[rng.choice(N, 20, replace=False)] = math.nan
    g.present[N // 2 : N // 2 + 72] = False
    t(g.key, "gpu", "idle A10G, logging gap", "Idle", "release")
    # GPU 1: idle but for a 5-minute health check (dcgmi diag) at 04:00 every day
    hc = _gpu(rng, _uuid(rng), 1, "NVIDIA A10G", 23_028.0, np.zeros(N), np.full(N, 0.0))
    hc.util = np.where(((TS - T0_S) % 86_400) // STEP_S == 48, 100.0, 0.0)
    hc.fb[:] = np.where(hc.util > 0, 20_000.0, 0.0)
    t(hc.key, "gpu", "idle A10G with a daily 5-minute health check", "Idle", "release")
    t("dev-ber-01", "node", "two idle GPUs", "Idle")
    c.smi_only |= {g.key, hc.key, "dev-ber-01"}
    write_smi(out / "smi-berlin.csv", "Europe/Berlin", [g, hc], power_na=False, step=1)
    c.files.append((out / "smi-berlin.csv", {"timezone": "Europe/Berlin", "host": "dev-ber-01"}))
    return c


def window_end() -> datetime:
    return datetime.fromtimestamp(int(TS[-1]) + STEP_S, UTC)


# ---------------------------------------------------------------- scoring

CLASSES: Final = ("Idle", "Overprovisioned", "Underprovisioned", "Optimized", "InsufficientData")


@dataclass(frozen=True, slots=True, kw_only=True)
class Scored:
    subject: str
    level: str
    state: str
    truth: str
    predicted: str
    actions: tuple[str, ...]
    action: str
    reasons: tuple[str, ...]

    @property
    def finding_ok(self) -> bool:
        return self.truth == self.predicted

    @property
    def action_ok(self) -> bool:
        return not self.actions or self.action in self.actions


#: what the tool said of a subject: (level, key) -> (finding, reason codes, best action)
Seen = dict[tuple[str, str], tuple[str, tuple[str, ...], str]]


def _action(finding: str, ranked_kinds: list[tuple[int, str]]) -> str:
    """The best option's kind; without one, ``keep`` for Optimized, ``share`` for Overprovisioned (the
    workload's recommendation is then a share of its GPU), else ``none``."""
    best = next((k for r, k in ranked_kinds if r == 1), None)
    if best is not None:
        return best
    return {"Optimized": "keep", "Overprovisioned": "share"}.get(finding, "none")


def seen_from_findings(ff: FleetFindings) -> Seen:
    out: Seen = {}
    for g in ff.gpus:
        out["gpu", g.gpu_key] = (
            g.finding,
            g.reason_codes,
            _action(g.finding, [(o.rank, o.kind) for o in g.options]),
        )
    for w in ff.workloads:
        opts = [(o.rank, o.kind) for o in w.replica.options]
        out["workload", w.key] = (w.finding, w.reason_codes, _action(w.finding, opts))
    for n in ff.nodes:
        out["node", n.name] = (
            n.finding,
            n.reason_codes,
            _action(n.finding, [(o.rank, o.kind) for o in n.options]),
        )
    return out


def seen_from_json(doc: dict[str, Any]) -> Seen:
    """The same from ``gpufleet telemetry findings --format json``."""
    f = doc["findings"]
    out: Seen = {}
    for g in f["gpus"]:
        opts = [(o["rank"], o["kind"]) for o in g["options"]]
        out["gpu", g["gpu_key"]] = (g["finding"], tuple(g["reason_codes"]), _action(g["finding"], opts))
    for w in f["workloads"]:
        opts = [(o["rank"], o["kind"]) for o in w["replica"]["options"]]
        out["workload", w["key"]] = (w["finding"], tuple(w["reason_codes"]), _action(w["finding"], opts))
    for n in f["nodes"]:
        opts = [(o["rank"], o["kind"]) for o in n["options"]]
        out["node", n["name"]] = (n["finding"], tuple(n["reason_codes"]), _action(n["finding"], opts))
    return out


def score(corpus: Corpus, seen: Seen) -> list[Scored]:
    out = []
    for tr in corpus.truths:
        finding, reasons, action = seen.get((tr.level, tr.subject), ("(missing)", (), "none"))
        out.append(
            Scored(
                subject=tr.subject,
                level=tr.level,
                state=tr.state,
                truth=tr.finding,
                predicted=finding,
                actions=tr.actions,
                action=action,
                reasons=reasons,
            )
        )
    return out


def confusion(rows: list[Scored]) -> dict[str, dict[str, int]]:
    m: dict[str, dict[str, int]] = {t: {} for t in CLASSES}
    for r in rows:
        m.setdefault(r.truth, {})
        m[r.truth][r.predicted] = m[r.truth].get(r.predicted, 0) + 1
    return m


def precision_recall(rows: list[Scored]) -> dict[str, tuple[float | None, float | None, int]]:
    out = {}
    for k in CLASSES:
        tp = sum(r.truth == k and r.predicted == k for r in rows)
        pred = sum(r.predicted == k for r in rows)
        true = sum(r.truth == k for r in rows)
        out[k] = (tp / pred if pred else None, tp / true if true else None, true)
    return out


def score_alerts(
    corpus: Corpus, events: Sequence[tuple[str, str, str]]
) -> list[tuple[AlertTruth, bool, str]]:
    """``events``: (rule, subject, note) of every alert event."""
    out = []
    for a in corpus.alerts:
        hit = [e for e in events if e[0] == a.rule and e[1] == a.subject]
        note = next((e[2] for e in hit if e[2]), "")[:120]
        out.append((a, bool(hit), note))
    return out


def format_report(res: Result) -> str:
    rows, alerts = res.rows, res.alerts
    lines = []
    if res.problems:
        probs = "; ".join(
            f"{f}: " + (", ".join(f"{k} {n:,}" for k, n in p.items()) or "none")
            for f, p in res.problems.items()
        )
        lines += [f"ingest problems (counted per file, by kind): {probs}", ""]
    for level in ("gpu", "workload", "node"):
        sub = [r for r in rows if r.level == level]
        m = confusion(sub)
        cols = [k for k in (*CLASSES, "(missing)") if any(k in v for v in m.values())]
        lines.append(
            f"{level}s: {len(sub)}; finding right {sum(r.finding_ok for r in sub)}, "
            f"action acceptable {sum(r.action_ok and r.finding_ok for r in sub)}"
        )
        lines.append("| truth \\ predicted | " + " | ".join(cols) + " |")
        lines.append("|---|" + "---|" * len(cols))
        for k, v in m.items():
            if v:
                lines.append(f"| {k} | " + " | ".join(str(v.get(c, 0)) for c in cols) + " |")
        lines.append("")
        pr = precision_recall(sub)
        lines.append("| finding | truth | precision | recall |")
        lines.append("|---|---|---|---|")
        for k, (p, r, n) in pr.items():
            if n or p is not None:
                lines.append(
                    f"| {k} | {n} | {'-' if p is None else f'{p:.2f}'} | {'-' if r is None else f'{r:.2f}'} |"
                )
        lines.append("")
    lines.append("| subject | truth | predicted | action (acceptable) | state |")
    lines.append("|---|---|---|---|---|")
    for r in rows:
        if not (r.finding_ok and r.action_ok):
            lines.append(
                f"| {r.subject} | {r.truth} | {r.predicted} {'/'.join(r.reasons)} | {r.action} "
                f"({', '.join(r.actions)}) | {r.state} |"
            )
    lines.append("")
    for uuid, ratio in res.mig_cost_ratio.items():
        lines.append(f"MIG GPU {uuid}: its instances are priced at {ratio:.2f} x the GPU's price (at most 1)")
    lines.append("")
    if not alerts:
        return "\n".join(lines)
    ok = sum(fired == a.fires for a, fired, _ in alerts)
    lines.append(f"alerts: {ok}/{len(alerts)} as expected")
    for a, fired, note in alerts:
        mark = "ok" if fired == a.fires else "WRONG"
        lines.append(f"- {mark}: {a.rule} on {a.subject}: fired={fired} (expected {a.fires}: {a.why}) {note}")
    return "\n".join(lines)


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    corpus: Corpus
    rows: list[Scored]
    alerts: list[tuple[AlertTruth, bool, str]]
    problems: dict[str, dict[str, int]]  # file name -> problem kind -> count
    #: MIG GPUs: the sum of their instances' monthly cost / the whole GPU's (at most 1: a GPU cut into
    #: slices costs what the GPU costs)
    mig_cost_ratio: dict[str, float] = field(default_factory=dict)


def run(out: Path, seed: int = 20260302) -> Result:
    """Build the corpus under ``out``, ingest it file by file, analyze, evaluate alerts, score."""
    from gpufleet.telemetry.api import analyze_fleet, evaluate_alerts, ingest_telemetry
    from gpufleet.telemetry.inventory import resolve_cost
    from gpufleet.telemetry.store import TelemetryStore
    from gpufleet.units import HOURS_PER_MONTH

    corpus = build(out, seed)
    store = TelemetryStore(out / "store")
    problems: dict[str, dict[str, int]] = {}
    for path, kw in corpus.files:
        rep = ingest_telemetry([path], store=store, **kw)
        problems[path.name] = {p.kind: p.count for p in rep.problems}
    ff = analyze_fleet(store, lookback_days=14, end=window_end())
    events = [(e.rule, e.subject, e.note) for e in evaluate_alerts(store)]
    mig: dict[str, float] = {}
    for g in ff.gpus:
        if g.mig_profile and g.cost_usd_per_month is not None:
            whole = resolve_cost(
                host=g.host, gpu_uuid=None, labels={}, model=g.model, inventory=()
            ).price_usd_per_gpu_hour
            mig[g.gpu_key.split("/")[0]] = mig.get(g.gpu_key.split("/")[0], 0.0) + g.cost_usd_per_month / (
                (whole or math.inf) * HOURS_PER_MONTH
            )
    return Result(
        corpus=corpus,
        rows=score(corpus, seen_from_findings(ff)),
        alerts=score_alerts(corpus, events),
        problems=problems,
        mig_cost_ratio=mig,
    )


# ---------------------------------------------------------------- the Prometheus path

_LINE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)\{(.*)\} (\S+) (\d+)$")


def to_openmetrics(corpus: Corpus) -> str:
    """The corpus's Prometheus-side files (dcgm-exporter text, query_range JSON) as one OpenMetrics text for
    ``promtool tsdb create-blocks-from openmetrics`` (seconds, each family's series together, ``# EOF``);
    the nvidia-smi logs have no Prometheus form and are left out. Values are kept as scraped (NaN, DCGM
    blank sentinels), as a Prometheus would store them."""
    series: dict[str, dict[str, list[tuple[float, str]]]] = {}
    for path, _ in corpus.files:
        if path.suffix == ".prom":
            for line in path.read_text(encoding="utf-8").splitlines():
                m = _LINE.match(line)
                if m:
                    name, labels, value, ts_ms = m.groups()
                    series.setdefault(name, {}).setdefault(labels, []).append((int(ts_ms) / 1000, value))
        elif path.suffix == ".json":
            for s in json.loads(path.read_text(encoding="utf-8"))["data"]["result"]:
                lab = dict(s["metric"])
                name = lab.pop("__name__")
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(lab.items()))
                series.setdefault(name, {}).setdefault(labels, []).extend(
                    (float(t), v) for t, v in s["values"]
                )
    out = []
    for name, by_labels in series.items():
        for labels, points in by_labels.items():
            out += [f"{name}{{{labels}}} {v} {t:.3f}" for t, v in sorted(points)]
    return "\n".join([*out, "# EOF", ""])


def run_prometheus(url: str, corpus: Corpus) -> list[Scored]:
    """Findings computed inside the Prometheus at ``url`` (backfilled with :func:`to_openmetrics`), scored on
    the subjects that Prometheus holds (not the nvidia-smi hosts)."""
    from gpufleet.telemetry.api import analyze_prometheus

    ff = analyze_prometheus(url, lookback_days=14, end=window_end(), timeout_s=300)
    return [r for r in score(corpus, seen_from_findings(ff)) if r.subject not in corpus.smi_only]
