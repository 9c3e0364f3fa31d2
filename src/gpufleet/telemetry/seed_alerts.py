"""The assessment seed's alert thresholds file, read as alert rules.

The project's assessment seed (``shared/seeds/001_*.txt``, "Alert Thresholds"; the shipped defaults are its
four thresholds, ``data/PROVENANCE.md``) writes alerts as a mapping of names to a threshold sentence and an
action::

    alerts:
      high_gpu_utilization:
        threshold: "> 90% for 10 minutes"
        action: "Scale up instances"
      inference_latency:
        threshold: "> 1000ms p95"

:func:`seed_alerts_to_rules` turns such a mapping into the ``rules:`` list the rule reader validates. A name
is one of the seed's (:data:`SEED_ALERT_NAMES`): it takes the metric, severity, traffic floor and ``for``
of the shipped default rule of that name (what the seed's sentence means on a standard stack,
``default_alerts.yaml``); the sentence gives the comparison, the threshold in the unit it states (``%``,
``ms`` or ``s``, ``$.../day``, converted to the metric's unit) and, if it says so, the duration. A unit
that does not fit the metric, a name the seed does not use or a sentence not of this shape is refused.
"""

from __future__ import annotations

import re
from typing import Any, Final

from gpufleet.errors import ConfigFileError
from gpufleet.units import MS_PER_S

#: the alert names the seed uses, and the canonical/derived metric each reads (as the default rules do)
SEED_ALERT_NAMES: Final = ("high_gpu_utilization", "high_memory_usage", "inference_latency", "cost_overrun")

#: "> 90% for 10 minutes", ">= 1.5 s p95", "> $1,000/day", "< 10 % for 1 hour"
_SENTENCE: Final = re.compile(
    r"^\s*(?P<op>>=|<=|>|<)\s*(?P<usd>\$)?\s*(?P<num>\d[\d,]*(?:\.\d+)?)\s*"
    r"(?P<unit>%|ms|s|/day|per day)?\s*(?P<p95>p95)?\s*"
    r"(?:for\s+(?P<for>\d+(?:\.\d+)?)\s*(?P<for_unit>seconds?|minutes?|hours?|days?|[smhd])\s*)?$",
    re.IGNORECASE,
)
_FOR_UNITS: Final = {"second": "s", "minute": "m", "hour": "h", "day": "d"} | {u: u for u in "smhd"}


def _threshold(metric: str, sentence: re.Match[str], where: str, text: str) -> float:
    """The sentence's number in ``metric``'s unit; a unit that does not fit the metric is an error."""
    num = float(sentence["num"].replace(",", ""))
    unit = (sentence["unit"] or "").lower()
    usd = sentence["usd"] is not None
    if metric.endswith("_pct") and unit == "%" and not usd:
        return num
    if metric.endswith("_s") and unit in ("ms", "s") and not usd:
        return num / MS_PER_S if unit == "ms" else num
    if metric == "cost_usd_per_day" and usd and unit in ("/day", "per day"):
        return num
    if metric == "cost_usd_per_day":
        wanted = "dollars per day ('> $1000/day')"
    else:
        wanted = (
            "a percentage ('> 90%')" if metric.endswith("_pct") else "milliseconds or seconds ('> 1000ms')"
        )
    raise ConfigFileError(
        f"{where}: threshold {text!r} does not state {wanted}, the unit of {metric}. Write the threshold "
        "with its unit, as the seed does."
    )


def seed_alerts_to_rules(
    alerts: Any, source: str, defaults: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """The seed's ``alerts:`` mapping as rule dicts for the rule reader (module doc).

    ``defaults``: the shipped default rules by name (metric, severity, for, traffic floor)."""
    if not isinstance(alerts, dict) or not alerts:
        raise ConfigFileError(
            f"{source}: 'alerts:' must map alert names to a threshold and an action (the assessment seed's "
            "format), e.g. 'high_gpu_utilization: {threshold: \"> 90% for 10 minutes\", action: Scale up}'."
        )
    rules = []
    for name, body in alerts.items():
        where = f"{source}, alert {name!r}"
        if name not in SEED_ALERT_NAMES:
            raise ConfigFileError(
                f"{where}: the seed's alert format knows the names {', '.join(SEED_ALERT_NAMES)}, which say "
                "which metric they read. For another alert write a 'rules:' file with its metric "
                "(docs/telemetry.md, 'Alert rules')."
            )
        if not isinstance(body, dict) or set(body) - {"threshold", "action"} or "threshold" not in body:
            raise ConfigFileError(
                f"{where} must hold 'threshold:' (e.g. \"> 90% for 10 minutes\") and optionally 'action:'; "
                f"it holds {body!r}."
            )
        text = body["threshold"]
        sentence = _SENTENCE.match(text) if isinstance(text, str) else None
        if sentence is None:
            raise ConfigFileError(
                f"{where}: threshold {text!r} is not of the seed's form '<op> <number><unit> [p95] [for <n> "
                'minutes]\', e.g. "> 90% for 10 minutes", "> 1000ms p95", "> $1000/day" (op: > >= < <=).'
            )
        base = defaults[name]
        rule: dict[str, Any] = {
            "name": name,
            "metric": base["metric"],
            "op": sentence["op"],
            "threshold": _threshold(base["metric"], sentence, where, text),
            "for": (
                f"{sentence['for']}{_FOR_UNITS[sentence['for_unit'].lower().rstrip('s') or 's']}"
                if sentence["for"] is not None
                else base.get("for", "0s")
            ),
            "severity": base.get("severity", "warning"),
            "action": str(body.get("action", base.get("action", ""))),
        }
        if "min_requests_per_s" in base:
            rule["min_requests_per_s"] = base["min_requests_per_s"]
        rules.append(rule)
    return rules


__all__ = ["SEED_ALERT_NAMES", "seed_alerts_to_rules"]
