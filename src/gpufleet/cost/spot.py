"""Spot pricing as an explicit expected-cost model, never a flat discount.

Assumptions per provider live in ``data/spot_assumptions.csv`` (sources in its ``source`` column) and can be
overridden with a CSV of the same columns. AWS Spot Advisor bands are ordinal and are never turned into
a rate.

Training (checkpoint/restart). With a memoryless interruption hazard ``lambda`` [1/h] (mean time between
interruptions M = 1/lambda), checkpoint cost C, restart overhead R and checkpoint interval tau, Young (1974)
gives the optimal interval tau = sqrt(2 C M). To first order, the expected wall time for W hours of work is::

    E[T] = W (1 + C / tau) / (1 - lambda (tau / 2 + R))

(each interruption loses on average tau/2 of work plus R; valid while lambda (tau/2 + R) << 1; checked against
a Monte-Carlo simulation in ``tests/cost/test_spot.py``). A job spanning n nodes stops when any node is
interrupted: lambda_job = n lambda. A provider maximum runtime (GCP preemptible: 24 h) adds 1/max_runtime.

Inference (replicas). A replica is up for M on average and then down for R while it is replaced, so its
availability is A = M / (M + R). To keep k replicas serving with probability ``availability_target``, we pay
for the smallest m >= k with P[Binomial(m, A) >= k] >= availability_target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from gpufleet.errors import ConfigFileError, DataError, InputError
from gpufleet.fileio import iter_csv_text, read_user_text
from gpufleet.units import SECONDS_PER_HOUR

_FILE = "spot_assumptions.csv"
_COLUMNS = (
    "provider",
    "mean_time_between_interruptions_h",
    "notice_s",
    "restart_overhead_s",
    "checkpoint_cost_s",
    "max_runtime_h",
    "verified",
    "source",
)
#: largest lambda (tau/2 + R) for which the first-order formula is used; beyond it spot is not a candidate
MAX_LOSS_FRACTION = 0.5
#: default probability that the needed replica count is serving (inference on spot) [0..1]
DEFAULT_AVAILABILITY_TARGET = 0.99


@dataclass(frozen=True, slots=True, kw_only=True)
class SpotAssumption:
    provider: str  # lower case, "*" = default for providers without a row
    mean_time_between_interruptions_h: float  # M [h]
    notice_s: float
    restart_overhead_s: float  # R: provisioning, image pull, weight load, restore [s]
    checkpoint_cost_s: float  # C: time to write one checkpoint [s]
    max_runtime_h: float | None  # forced stop after this long (GCP preemptible 24 h) [h]
    verified: str
    source: str

    @property
    def interruptions_per_h(self) -> float:
        """lambda [1/h], including forced stops at the maximum runtime."""
        lam = 1.0 / self.mean_time_between_interruptions_h
        if self.max_runtime_h:
            lam += 1.0 / self.max_runtime_h
        return lam


@dataclass(frozen=True, slots=True, kw_only=True)
class SpotTraining:
    interruptions_per_h: float  # lambda for the whole job [1/h]
    checkpoint_interval_h: float  # Young's tau [h]
    wall_time_factor: float  # E[T] / W
    valid: bool  # False when lambda (tau/2 + R) > MAX_LOSS_FRACTION
    loss_fraction: float  # lambda (tau/2 + R)


#: Longest time in a spot assumptions row: 10^6 h for the hours columns, 10^6 s for the seconds columns.
_MAX_HOURS, _MAX_SECONDS = 1e6, 1e6


def _parse(text: str, source_name: str) -> dict[str, SpotAssumption]:
    rows = iter_csv_text(text.removeprefix("\ufeff"), source=f"Spot assumptions file {source_name}")
    _, raw_header = next(rows, (1, []))
    header = [h.strip() for h in raw_header]
    missing = [c for c in _COLUMNS if c not in header]
    unknown = [c for c in header if c not in _COLUMNS]
    if missing or unknown or len(set(header)) != len(header):
        raise ConfigFileError(
            f"Spot assumptions file {source_name} lacks columns {missing} or has unknown columns {unknown} "
            f"(its header: {header[:12]}). The columns are exactly {', '.join(_COLUMNS)}, each once. Copy "
            f"gpufleet/cost/data/{_FILE} and edit its values."
        )
    out: dict[str, SpotAssumption] = {}
    for line, cells in rows:
        if len(cells) != len(header):
            raise ConfigFileError(
                f"Spot assumptions file {source_name}, line {line}: {len(cells)} cells, the header has "
                f"{len(header)}. Quote fields that contain commas."
            )
        row = dict(zip(header, cells, strict=True))
        provider = row["provider"].strip().lower()
        try:
            mtbi = float(row["mean_time_between_interruptions_h"])
            values = {k: float(row[k]) for k in ("notice_s", "restart_overhead_s", "checkpoint_cost_s")}
            raw_max = row["max_runtime_h"].strip()
            max_rt = float(raw_max) if raw_max else None
            hours = [mtbi] + ([max_rt] if max_rt is not None else [])
            if not all(0 < h <= _MAX_HOURS for h in hours) or not all(
                0 <= v <= _MAX_SECONDS for v in values.values()
            ):
                raise ValueError(
                    "times must be finite: mean time between interruptions and max_runtime_h in (0, "
                    f"{_MAX_HOURS:g}] h, the seconds columns in [0, {_MAX_SECONDS:g}] s"
                )
            lost_s = values["restart_overhead_s"] + values["checkpoint_cost_s"]
            if mtbi * SECONDS_PER_HOUR <= lost_s:
                # Young (1974): progress needs the mean time between interruptions well above the time one
                # restart and one checkpoint take; at or below it a job never keeps any work.
                raise ValueError(
                    f"mean_time_between_interruptions_h {mtbi:g} h ({mtbi * SECONDS_PER_HOUR:,.0f} s, "
                    f"{1 / mtbi:,.1f} interruptions per hour per node) is not longer than restart_overhead_s "
                    f"+ checkpoint_cost_s = {lost_s:,.0f} s: a node would be interrupted before it could "
                    "restart and write one checkpoint, so no run would ever finish (the rate is likely per "
                    "day or per month, or the columns are swapped)"
                )
            if provider in out:
                raise ValueError("a second row for this provider (the last one would silently win)")
        except ValueError as exc:
            raise ConfigFileError(
                f"Spot assumptions file {source_name}, line {line} (provider {provider!r}): {exc}. "
                "Numbers must "
                "be plain decimals; mean_time_between_interruptions_h > 0 [h], notice_s/restart_overhead_s/"
                "checkpoint_cost_s >= 0 [s], max_runtime_h empty or > 0 [h]."
            ) from exc
        if not provider:
            raise ConfigFileError(f"Spot assumptions file {source_name}, line {line}: provider is empty.")
        out[provider] = SpotAssumption(
            provider=provider,
            mean_time_between_interruptions_h=mtbi,
            max_runtime_h=max_rt,
            verified=row["verified"].strip(),
            source=row["source"].strip(),
            **values,
        )
    if "*" not in out:
        raise ConfigFileError(
            f"Spot assumptions file {source_name} has no default row (provider '*'). Add one: it applies to "
            "every provider without its own row."
        )
    return out


@cache
def _shipped() -> dict[str, SpotAssumption]:
    try:
        text = resources.files("gpufleet.cost").joinpath("data", _FILE).read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"The shipped {_FILE} is missing. Reinstall gpufleet.") from exc
    return _parse(text, _FILE)


def load_spot_assumptions(override: Path | None = None) -> dict[str, SpotAssumption]:
    """Spot assumptions by provider (``"*"`` = default); ``override`` replaces the shipped table."""
    if override is None:
        return _shipped()
    text = read_user_text(override, what="spot assumptions file")
    return _parse(text, str(override))


def assumption_for(provider: str, assumptions: dict[str, SpotAssumption]) -> SpotAssumption:
    """The provider's row, or the ``"*"`` default."""
    return assumptions.get(provider.lower(), assumptions["*"])


def young_interval_h(checkpoint_cost_h: float, mtbi_h: float) -> float:
    """Young (1974) optimal checkpoint interval tau = sqrt(2 C M) [h]."""
    return math.sqrt(2.0 * checkpoint_cost_h * mtbi_h)


def expected_wall_time_factor(
    *, interruptions_per_h: float, checkpoint_cost_h: float, restart_overhead_h: float, interval_h: float
) -> float:
    """E[T] / W = (1 + C/tau) / (1 - lambda (tau/2 + R)); ``inf`` where the denominator is <= 0."""
    if interval_h <= 0:
        raise InputError(f"checkpoint interval {interval_h} h must be > 0.")
    denom = 1.0 - interruptions_per_h * (interval_h / 2.0 + restart_overhead_h)
    if denom <= 0:
        return math.inf
    return (1.0 + checkpoint_cost_h / interval_h) / denom


def spot_training(assumption: SpotAssumption, *, nodes: int = 1) -> SpotTraining:
    """Expected slowdown of a checkpointed training job on ``nodes`` spot nodes."""
    lam = assumption.interruptions_per_h * nodes
    c_h = assumption.checkpoint_cost_s / SECONDS_PER_HOUR
    r_h = assumption.restart_overhead_s / SECONDS_PER_HOUR
    tau = young_interval_h(c_h, 1.0 / lam) if c_h > 0 else 1.0 / lam / 10.0
    loss = lam * (tau / 2.0 + r_h)
    factor = expected_wall_time_factor(
        interruptions_per_h=lam, checkpoint_cost_h=c_h, restart_overhead_h=r_h, interval_h=tau
    )
    return SpotTraining(
        interruptions_per_h=lam,
        checkpoint_interval_h=tau,
        wall_time_factor=factor,
        valid=loss <= MAX_LOSS_FRACTION and math.isfinite(factor),
        loss_fraction=loss,
    )


def replica_availability(assumption: SpotAssumption, *, nodes_per_replica: int = 1) -> float:
    """A = M / (M + R) for a replica spanning ``nodes_per_replica`` nodes (M shrinks n-fold)."""
    mtbi_h = 1.0 / (assumption.interruptions_per_h * nodes_per_replica)
    r_h = assumption.restart_overhead_s / SECONDS_PER_HOUR
    return mtbi_h / (mtbi_h + r_h)


@cache
def replicas_to_provision(
    needed: int, availability: float, target: float = DEFAULT_AVAILABILITY_TARGET
) -> int:
    """Smallest m >= needed with P[Binomial(m, availability) >= needed] >= target."""
    if needed < 1:
        raise InputError(f"needed replicas = {needed}; it must be >= 1.")
    if not 0 < availability <= 1 or not 0 < target < 1:
        raise InputError(f"availability {availability} must be in (0, 1] and target {target} in (0, 1).")
    if availability >= 1.0:
        return needed
    # walk m = k, k+1, ... with P[B(m+1) >= k] = P[B(m) >= k] + a P[B(m) = k-1] (log space: no underflow)
    k, a = needed, availability
    log_a, log_q = math.log(a), math.log1p(-a)
    log_target = math.log(target)
    m = k
    log_sf = k * log_a  # P[B(k) >= k] = a^k
    log_pmf = math.log(k) + (k - 1) * log_a + log_q  # P[B(k) = k-1]
    while log_sf < log_target:
        log_sf = _log_add(log_sf, log_a + log_pmf)
        log_pmf += math.log(m + 1) - math.log(m + 2 - k) + log_q  # P[B(m+1) = k-1]
        m += 1
    return m


def _log_add(x: float, y: float) -> float:
    hi, lo = (x, y) if x >= y else (y, x)
    return hi + math.log1p(math.exp(lo - hi))


def binomial_sf_at_least(k: int, n: int, p: float) -> float:
    """P[Binomial(n, p) >= k], summed exactly in log space (math.lgamma; no scipy import at run time)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    if p >= 1.0:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    base = math.lgamma(n + 1)
    terms = [
        base - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q
        for i in range(k, n + 1)
    ]
    top = max(terms)
    return min(1.0, math.exp(top) * math.fsum(math.exp(t - top) for t in terms))
