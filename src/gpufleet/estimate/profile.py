"""The calibration profile: fitted parameters and residual quantiles, its JSON file format, and intervals.

Intervals come from the leave-one-out residual quantiles per metric family, with a floor, widened for
uncertain specs and for GPU generations, precisions and stacks without cases.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, fields
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from gpufleet.cache import is_marked_valid, mark_valid
from gpufleet.errors import ConfigFileError, DataError
from gpufleet.estimate.priors import PRIORS, prior_params
from gpufleet.estimate.types import Interval
from gpufleet.fileio import atomic_write_text, parse_yaml_or_json, read_user_text

PROFILE_VERSION = 1
#: weight of each prior's penalty against one case's log residual: 1 makes a prior one ``log_sd`` away cost as
#: much as one case off by ``exp(1)``; lower lets the data speak (chosen by leave-one-out error)
PRIOR_WEIGHT = 0.5
#: fit a stack multiplier only where at least this many cases measured that stack
MIN_CASES_PER_STACK = 2
#: metric -> interval family
METRIC_FAMILY: Mapping[str, str] = MappingProxyType(
    {
        "train_minutes": "training",
        "train_gpu_hours": "training",
        "train_step_s": "training",
        "train_tokens_per_s_per_gpu": "training",
        "mfu": "training",
        "infer_output_tokens_per_s": "throughput",
        "ttft_ms": "latency",
        "tpot_ms": "latency",
        "peak_memory_gib": "memory",
    }
)
FAMILIES: tuple[str, ...] = ("training", "throughput", "latency", "memory")
#: smallest half-width of any interval in log space (-22 % / +28 %). Published single measurements vary by
#: ~10-15 % run to run and between software versions, and the leave-one-out residuals of 19 cases (2-4 per
#: family) understate the error on GPUs, models and stacks outside them, so the floor sits above both.
LOG_INTERVAL_FLOOR = 0.25
#: per-family floors below that: GPU memory of a given stack is deterministic (no run-to-run spread; the
#: allocator, kernel workspaces and library versions move it by a few %), and 57 memory cases (published
#: framework tables and our H200 probes) give a leave-one-out p90 of 5 %, so +-10 % (1.22x wide) still sits
#: above the measured spread while telling a user something
LOG_INTERVAL_FLOORS: Mapping[str, float] = MappingProxyType({"memory": 0.10})


def interval_floor(family: str) -> float:
    """The smallest half-width of a ``family`` interval in log space (:data:`LOG_INTERVAL_FLOORS`)."""
    return LOG_INTERVAL_FLOORS.get(family, LOG_INTERVAL_FLOOR)


#: standard-normal 90th percentile: p10/p90 of a log-normal error are -/+ Z x RMS
Z_10_90 = 1.2816
#: default half-width for a family without residuals (ln 2: the "within 2x" target)
LOG_INTERVAL_DEFAULT = math.log(2.0)
#: widening of the log interval for estimates outside the calibrated data: multiplier and added width
WIDEN_FACTOR = 1.5
WIDEN_ADD = 0.15
#: widening per further reason beyond the first when held-out quantiles exist (a named assumption: the
#: leave-generation-out error already includes stacks and MoE cases the fit did not see with that
#: generation, so each further reason adds a quarter)
HELDOUT_EXTRA_FACTOR = 1.25


@dataclass(frozen=True, slots=True, kw_only=True)
class CalibrationProfile:
    """Fitted parameters, residual quantiles and provenance of one calibration run."""

    params: Mapping[str, float]
    fitted_at: str
    case_count: int
    log_residual_quantiles: Mapping[
        str, tuple[float, float]
    ]  # family -> (q10, q90) of ln(measured/predicted)
    residuals: Mapping[str, float]  # case_id -> in-sample ln(measured / predicted)
    version: int
    source: str
    loo_residuals: Mapping[str, float] = field(default_factory=dict)  # case_id -> leave-one-out ln ratio
    calibrated: tuple[str, ...] = ()  # "<architecture>/<compute class>" keys with cases, e.g. "Hopper/fp8"
    fitted: tuple[str, ...] = ()  # names of the parameters the fit moved
    #: grouping ("vendor", "generation", "software", "family") -> case_id -> ln ratio with its group held out
    logo_residuals: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    #: family -> (q10, q90) of the leave-generation-out residuals: the error outside the calibrated classes
    heldout_quantiles: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    def param(self, name: str) -> float:
        """Value of parameter ``name`` (its prior when the profile predates it)."""
        if name in self.params:
            return self.params[name]
        return PRIORS[name].value


def prior_profile() -> CalibrationProfile:
    """A profile with every parameter at its prior and default interval widths (nothing fitted)."""
    return CalibrationProfile(
        params=MappingProxyType(prior_params()),
        fitted_at="",
        case_count=0,
        log_residual_quantiles=MappingProxyType(
            {f: (-LOG_INTERVAL_DEFAULT, LOG_INTERVAL_DEFAULT) for f in FAMILIES}
        ),
        residuals=MappingProxyType({}),
        version=PROFILE_VERSION,
        source="priors",
    )


def with_params(profile: CalibrationProfile, params: Mapping[str, float]) -> CalibrationProfile:
    """``profile`` with some parameters replaced (used by the fit)."""
    merged = dict(profile.params)
    merged.update(params)
    return CalibrationProfile(
        params=merged,
        fitted_at=profile.fitted_at,
        case_count=profile.case_count,
        log_residual_quantiles=profile.log_residual_quantiles,
        residuals=profile.residuals,
        version=profile.version,
        source=profile.source,
        loo_residuals=profile.loo_residuals,
        calibrated=profile.calibrated,
        fitted=profile.fitted,
        logo_residuals=profile.logo_residuals,
        heldout_quantiles=profile.heldout_quantiles,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class _ProfileFields:
    """A profile file's fields with their file-format types, before the range checks: the file format
    itself (pydantic validates a document against this dataclass; unknown keys are ignored)."""

    version: int
    fitted_at: str
    case_count: int
    source: str
    params: dict[str, float]
    log_residual_quantiles: dict[str, tuple[float, float]]
    residuals: dict[str, float]
    loo_residuals: dict[str, float] = field(default_factory=dict)
    calibrated: list[str] = field(default_factory=list)
    fitted: list[str] = field(default_factory=list)
    logo_residuals: dict[str, dict[str, float]] = field(default_factory=dict)
    heldout_quantiles: dict[str, tuple[float, float]] = field(default_factory=dict)


def _validated_fields(doc: Any, name: str) -> _ProfileFields:
    """``doc`` validated against the file format (pydantic; imported here, not at start-up)."""
    from pydantic import TypeAdapter, ValidationError

    known = {f.name for f in fields(_ProfileFields)}
    where = (  # the format's own fields hold no true/false; pydantic would read one as 1 or 0
        next((w for k, v in doc.items() if k in known and (w := _first_boolean(v, str(k)))), None)
        if isinstance(doc, dict)
        else None
    )
    if where is not None:
        raise ConfigFileError(
            f"Calibration profile {name} is not valid: field {where} is true/false, where a number or text "
            "is expected. Re-create it with `gpufleet calibrate CASES.csv -o PROFILE.json`."
        )
    try:
        out = TypeAdapter(_ProfileFields).validate_python(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise ConfigFileError(
            f"Calibration profile {name} is not valid: field {where}: {first['msg']}. A profile is the JSON "
            "written by `tools/calibrate.py` (keys version, fitted_at, case_count, source, params, "
            "log_residual_quantiles, residuals). Re-create it with "
            "`gpufleet calibrate CASES.csv -o PROFILE.json`."
        ) from exc
    if out.case_count < 0:
        raise ConfigFileError(
            f"Calibration profile {name} is not valid: case_count = {out.case_count}; it counts the cases "
            "fitted (>= 0). Re-create it with `gpufleet calibrate CASES.csv -o PROFILE.json`."
        )
    return out


def _first_boolean(doc: Any, path: str = "") -> str | None:
    """The path of the first true/false value in ``doc`` (a parsed JSON document), or None."""
    if isinstance(doc, bool):
        return path or "(top level)"
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        found = _first_boolean(value, f"{path}.{key}" if path else str(key))
        if found is not None:
            return found
    return None


def _known_valid_fields(doc: Any) -> _ProfileFields:
    """The fields of a ``doc`` that already passed :func:`_validated_fields` (same text, see
    :func:`_shipped_profile`), converted to the same types without pydantic. Raises KeyError, TypeError or
    ValueError on anything else (the caller then validates)."""

    def floats(m: Mapping[str, Any]) -> dict[str, float]:
        return {str(k): float(v) for k, v in m.items()}

    def pairs(m: Mapping[str, Any]) -> dict[str, tuple[float, float]]:
        return {str(k): (float(lo), float(hi)) for k, (lo, hi) in m.items()}

    def strs(items: list[Any]) -> list[str]:
        if not all(isinstance(x, str) for x in items):
            raise TypeError("not a list of strings")
        return list(items)

    if not isinstance(doc, dict):
        raise TypeError("not a JSON object")
    for key in ("version", "case_count"):
        if type(doc[key]) is not int:
            raise TypeError(f"{key} is not an integer")
    for key in ("fitted_at", "source"):
        if not isinstance(doc[key], str):
            raise TypeError(f"{key} is not a string")
    return _ProfileFields(
        version=doc["version"],
        fitted_at=doc["fitted_at"],
        case_count=doc["case_count"],
        source=doc["source"],
        params=floats(doc["params"]),
        log_residual_quantiles=pairs(doc["log_residual_quantiles"]),
        residuals=floats(doc["residuals"]),
        loo_residuals=floats(doc.get("loo_residuals", {})),
        calibrated=strs(doc.get("calibrated", [])),
        fitted=strs(doc.get("fitted", [])),
        logo_residuals={str(k): floats(v) for k, v in doc.get("logo_residuals", {}).items()},
        heldout_quantiles=pairs(doc.get("heldout_quantiles", {})),
    )


#: Largest accepted profile parameter (efficiencies, overheads; all O(1) in the shipped profile) and the
#: largest |log error| quantile (e^10 ~ 22,000x): beyond them intervals overflow or mean nothing.
_MAX_PARAM = 1e6
_MAX_LOG_Q = 10.0


#: a loaded parameter stays within this factor of its prior, the fit's own bounds
#: (gpufleet.estimate.calibration: ln-space prior +- 4.6, e^4.6 ~ 99.5; rounded up to 100)
_PARAM_FACTOR = 100.0


def _param_range(name: str) -> tuple[float, float]:
    """The values :func:`gpufleet.estimate.calibration.fit_profile` can give ``name``: within
    :data:`_PARAM_FACTOR` of the prior, and at most 1 for a fitted fraction (prior <= 1, not an overhead)."""
    prior = PRIORS[name]
    hi = prior.value * _PARAM_FACTOR
    if prior.fit and prior.value <= 1.0 and name != "step_overhead_s":
        hi = 1.0
    return prior.value / _PARAM_FACTOR, hi


def _profile_from_text(text: str, name: str, *, known_valid: bool = False) -> CalibrationProfile:
    """The profile in ``text`` (``name`` for messages), validated. ``known_valid``: this exact text passed
    the file-format validation before, so its fields are read without pydantic (range checks still run)."""
    doc = parse_yaml_or_json(  # the input layer's JSON rules: no duplicate keys, bounded nesting
        Path("profile.json"),
        text,
        lambda kind, error: (
            f"Calibration profile {name} is not valid {kind}: {error}. Re-create it with "
            "`gpufleet calibrate CASES.csv -o PROFILE.json`."
        ),
    )
    raw: _ProfileFields | None = None
    if known_valid:
        try:
            raw = _known_valid_fields(doc)
        except (KeyError, TypeError, ValueError, AttributeError):  # not what was validated: validate it
            raw = None
    if raw is None:
        raw = _validated_fields(doc, name)
    if raw.version != PROFILE_VERSION:
        raise ConfigFileError(
            f"Calibration profile {name} has version {raw.version}; this gpufleet reads version "
            f"{PROFILE_VERSION}. Re-create it with `gpufleet calibrate CASES.csv -o PROFILE.json`."
        )
    bad = [k for k, v in raw.params.items() if not (math.isfinite(v) and 0 < v <= _MAX_PARAM)]
    bad_q = [
        k
        for k, (lo, hi) in raw.log_residual_quantiles.items()
        if not (math.isfinite(lo) and math.isfinite(hi) and -_MAX_LOG_Q <= lo <= hi <= _MAX_LOG_Q)
    ]
    bad_q += [
        k for k, (lo, hi) in raw.heldout_quantiles.items() if not (math.isfinite(lo) and math.isfinite(hi))
    ]
    bad_q += [k for k, v in raw.residuals.items() if not math.isfinite(v)]
    bad_q += [k for k, v in raw.loo_residuals.items() if not math.isfinite(v)]
    bad_q += [f"{g}.{k}" for g, d in raw.logo_residuals.items() for k, v in d.items() if not math.isfinite(v)]
    if bad_q:
        raise ConfigFileError(
            f"Calibration profile {name} has invalid residual quantiles or residuals for "
            f"{sorted(set(bad_q))}: "
            f"each (p10, p90) pair of log errors must be finite, ordered and within +-{_MAX_LOG_Q:g} (a "
            f"factor of e^{_MAX_LOG_Q:g}); residuals must be finite. Re-create it with `gpufleet calibrate`."
        )
    unknown = [k for k in raw.params if k not in PRIORS]
    # both bounds are taken before comparing (a chained walrus left ``hi`` unset below the range)
    out_of_range = [
        f"{k}={v:g} (allowed {lo:g} to {hi:g})"
        for k, v in raw.params.items()
        if k in PRIORS and k not in bad
        for lo, hi in [_param_range(k)]
        if not lo <= v <= hi
    ]
    if out_of_range:
        raise ConfigFileError(
            f"Calibration profile {name} has parameters outside the range the fit allows: "
            f"{', '.join(out_of_range)}. Efficiencies are fractions of peak (at most 1) and every parameter "
            f"stays within {_PARAM_FACTOR:g}x of its prior (gpufleet.estimate.priors). Fix the values or "
            "re-create the profile with `gpufleet calibrate CASES.csv -o PROFILE.json`."
        )
    if bad or unknown:
        raise ConfigFileError(
            f"Calibration profile {name} has invalid parameters: non-positive {bad}, unknown {unknown}. "
            f"Allowed: positive values for {', '.join(sorted(PRIORS))}. Re-create it with "
            "`gpufleet calibrate CASES.csv -o PROFILE.json`."
        )
    return CalibrationProfile(
        params=MappingProxyType({**prior_params(), **raw.params}),
        fitted_at=raw.fitted_at,
        case_count=raw.case_count,
        log_residual_quantiles=MappingProxyType(dict(raw.log_residual_quantiles)),
        residuals=MappingProxyType(dict(raw.residuals)),
        version=raw.version,
        source=raw.source,
        loo_residuals=MappingProxyType(dict(raw.loo_residuals)),
        calibrated=tuple(raw.calibrated),
        fitted=tuple(raw.fitted),
        logo_residuals=MappingProxyType(
            {k: MappingProxyType(dict(v)) for k, v in raw.logo_residuals.items()}
        ),
        heldout_quantiles=MappingProxyType(dict(raw.heldout_quantiles)),
    )


def _shipped_validation_namespace() -> str:
    """What a validation mark of the shipped profile vouches for: this file format and gpufleet version."""
    from gpufleet import __version__

    return f"calibration profile format {PROFILE_VERSION}, gpufleet {__version__}"


@cache
def _shipped_profile() -> CalibrationProfile:
    """The shipped profile. The first process of a gpufleet version validates it with pydantic and leaves a
    validation mark keyed by the file's SHA-256 in the user cache (:mod:`gpufleet.cache`); later processes
    find the mark and read the same text without importing pydantic (~0.1 s of CPU per command)."""
    try:
        text = (
            resources.files("gpufleet.estimate").joinpath("data", "profile.json").read_text(encoding="utf-8")
        )
    except (FileNotFoundError, OSError) as exc:
        raise DataError(
            "The shipped calibration profile estimate/data/profile.json is missing. Reinstall gpufleet, or "
            "re-create it with `python tools/calibrate.py`."
        ) from exc
    namespace = _shipped_validation_namespace()
    known_valid = is_marked_valid("profile", namespace, text)
    try:
        profile = _profile_from_text(text, "estimate/data/profile.json (shipped)", known_valid=known_valid)
    except ConfigFileError as exc:
        raise DataError(f"{exc} Reinstall gpufleet to restore the shipped profile.") from exc
    if not known_valid:
        mark_valid("profile", namespace, text)
    return profile


def load_profile(path: Path | None = None) -> CalibrationProfile:
    """Load a profile from ``path``, or the shipped one when ``path`` is None (cached)."""
    if path is None:
        return _shipped_profile()
    text = read_user_text(path, what="calibration profile")
    return _profile_from_text(text, str(path))


def profile_to_dict(profile: CalibrationProfile) -> dict[str, Any]:
    """The JSON-ready form of ``profile`` (with each parameter's prior and source, for readers)."""
    return {
        "version": profile.version,
        "fitted_at": profile.fitted_at,
        "case_count": profile.case_count,
        "source": profile.source,
        "params": {k: profile.params[k] for k in sorted(profile.params)},
        "priors": {
            k: {"value": p.value, "log_sd": p.log_sd, "fit": p.fit, "source": p.source}
            for k, p in PRIORS.items()
        },
        "fitted": list(profile.fitted),
        "calibrated": list(profile.calibrated),
        "log_residual_quantiles": {k: list(v) for k, v in profile.log_residual_quantiles.items()},
        "residuals": dict(profile.residuals),
        "loo_residuals": dict(profile.loo_residuals),
        "heldout_quantiles": {k: list(v) for k, v in profile.heldout_quantiles.items()},
        "logo_residuals": {k: dict(v) for k, v in profile.logo_residuals.items()},
    }


def save_profile(profile: CalibrationProfile, path: Path) -> None:
    """Write ``profile`` as JSON to ``path`` atomically (temporary file + rename)."""
    path = Path(path)
    text = json.dumps(profile_to_dict(profile), indent=1, sort_keys=False, allow_nan=False) + "\n"
    atomic_write_text(path, text)


def class_key(family: str, mechanism: str) -> str:
    """The ``heldout_quantiles`` key of a mechanism class in ``family`` (``family/all`` = every case of it;
    :mod:`gpufleet.estimate.intervals`)."""
    return f"{family}/{mechanism}"


def heldout_widened(q: tuple[float, float], times: int = 1) -> tuple[float, float]:
    """``q`` (log space) widened ``times`` by :data:`HELDOUT_EXTRA_FACTOR`."""
    f = HELDOUT_EXTRA_FACTOR**times
    return q[0] * f, q[1] * f


def class_interval(
    quantiles: Mapping[str, tuple[float, float]], family: str, mechanisms: Collection[str], extra: int = 0
) -> tuple[float, float] | None:
    """(lo, hi) in log space for an estimate of ``family`` in ``mechanisms`` (none = dense): the envelope of
    their held-out class intervals, widened ``extra`` times for reasons no class covers, then floored
    (:func:`interval_floor`: the floor bounds the final interval, not each class); None when ``quantiles``
    has no held-out classes for ``family`` (a profile from before them)."""
    whole = quantiles.get(class_key(family, "all"))
    if whole is None:
        return None
    keys = [class_key(family, m) for m in sorted(mechanisms)] or [class_key(family, "dense")]
    qs = [quantiles.get(k, heldout_widened(whole)) for k in keys]
    lo, hi = min(q[0] for q in qs), max(q[1] for q in qs)
    if extra:
        lo, hi = heldout_widened((lo, hi), extra)
    floor = interval_floor(family)
    return min(lo, -floor), max(hi, floor)


def make_interval(central: float, family: str, profile: CalibrationProfile, widen: int = 0) -> Interval:
    """``central`` with p10/p90 from the family's residual quantiles, floored, widened ``widen`` times.

    Residuals are ln(measured / predicted), so p10 = central * exp(q10) and p90 = central * exp(q90).
    ``widen`` counts the reasons the estimate lies outside the calibrated data (generation/precision class,
    stack, MoE, uncertain spec); a :class:`gpufleet.estimate.rates.Widening` also names its mechanism
    classes. A profile with held-out class quantiles (``family/class`` keys,
    :mod:`gpufleet.estimate.intervals`) gives speed families the envelope of their classes' held-out
    intervals (dense when none), widened by ``HELDOUT_EXTRA_FACTOR`` per reason no class covers (uncertain
    spec, unfitted stack). Older profiles: the first reason switches to the leave-generation-out quantiles
    per family where the profile has them; each
    further reason, and every reason of a profile without them, widens by ``WIDEN_FACTOR`` / ``WIDEN_ADD``.
    """
    mechanisms: frozenset[str] = getattr(widen, "mechanisms", frozenset())
    key = (id(profile), family, int(widen), mechanisms)
    hit = _INTERVAL_FACTORS.get(key)
    if hit is not None and hit[0] is profile:  # exp(lo), exp(hi) of an earlier call
        return Interval(central=central, p10=central * hit[1], p90=central * hit[2])
    q10, q90 = profile.log_residual_quantiles.get(family, (-LOG_INTERVAL_DEFAULT, LOG_INTERVAL_DEFAULT))
    floor = interval_floor(family)
    lo, hi = min(q10, -floor), max(q90, floor)
    held = profile.heldout_quantiles.get(family)
    # reasons a class stands for: an uncalibrated generation and MoE (the others: uncertain spec, stack)
    covered = len(mechanisms & {"new_generation", "moe"})
    by_class = class_interval(profile.heldout_quantiles, family, mechanisms, max(int(widen) - covered, 0))
    if by_class is not None:
        lo, hi = by_class
    elif held is None:
        for _ in range(widen):
            lo, hi = lo * WIDEN_FACTOR - WIDEN_ADD, hi * WIDEN_FACTOR + WIDEN_ADD
    elif widen:
        inside = (lo, hi)
        lo, hi = min(lo, held[0]), max(hi, held[1])
        if (lo, hi) == inside:  # held-out residuals too few to show the extra error: the stated widening
            lo, hi = lo * HELDOUT_EXTRA_FACTOR, hi * HELDOUT_EXTRA_FACTOR
        for _ in range(widen - 1):
            lo, hi = lo * HELDOUT_EXTRA_FACTOR, hi * HELDOUT_EXTRA_FACTOR
    f10, f90 = math.exp(lo), math.exp(hi)
    if len(_INTERVAL_FACTORS) >= _INTERVAL_FACTORS_MAX:
        _INTERVAL_FACTORS.clear()
    _INTERVAL_FACTORS[key] = (profile, f10, f90)
    return Interval(central=central, p10=central * f10, p90=central * f90)


#: (id(profile), family, widen) -> (profile, exp(lo), exp(hi)) of :func:`make_interval`; the entry holds the
#: profile, so its id is not reused while the entry lives (profiles are frozen)
_INTERVAL_FACTORS: dict[tuple[int, str, int, frozenset[str]], tuple[CalibrationProfile, float, float]] = {}
_INTERVAL_FACTORS_MAX = 4096


__all__ = [
    "FAMILIES",
    "HELDOUT_EXTRA_FACTOR",
    "LOG_INTERVAL_DEFAULT",
    "LOG_INTERVAL_FLOOR",
    "LOG_INTERVAL_FLOORS",
    "METRIC_FAMILY",
    "MIN_CASES_PER_STACK",
    "PRIOR_WEIGHT",
    "PROFILE_VERSION",
    "WIDEN_ADD",
    "WIDEN_FACTOR",
    "Z_10_90",
    "CalibrationProfile",
    "class_interval",
    "class_key",
    "heldout_widened",
    "interval_floor",
    "load_profile",
    "make_interval",
    "prior_profile",
    "profile_to_dict",
    "save_profile",
    "with_params",
]
