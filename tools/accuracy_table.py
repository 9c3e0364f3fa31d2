"""Print the README's accuracy section: in-sample, leave-one-out and leave-group-out errors of the shipped
profile per metric family and per vendor, and the p10-p90 interval coverage and width.

Usage: python tools/accuracy_table.py [--cases PATH] [--profile PATH]     (make validate-table)

Reads the residuals `tools/calibrate.py` stored in the profile (no refit; a second or so). Every number is
ln(measured / predicted) turned into |error| = |predicted / measured - 1|. Run by developers.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from gpufleet.catalog.specs import get_spec
from gpufleet.estimate.calibration import GROUPINGS, METRIC_FAMILY, CalibrationProfile, load_profile
from gpufleet.estimate.cases import CalibrationCase, read_cases
from gpufleet.estimate.intervals import HeldOutScore, crossfit_scores
from gpufleet.estimate.predict import predict_case
from gpufleet.estimate.profile import interval_floor

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CASES = ROOT / "src" / "gpufleet" / "estimate" / "data" / "cases.csv"


def _ape(logs: Sequence[float]) -> np.ndarray:
    return np.abs(np.exp(-np.asarray(logs, dtype=float)) - 1.0)


def _cell(logs: Sequence[float]) -> str:
    if not logs:
        return "-"
    a = _ape(logs)
    return f"{100 * np.median(a):.0f} % / {100 * np.quantile(a, 0.9):.0f} %"


def _within(logs: Sequence[float]) -> str:
    return f"{100 * np.mean(np.abs(np.asarray(logs)) <= math.log(2.0)):.0f} %" if logs else "-"


def _worst(profile: CalibrationProfile, cid: str) -> float:
    """The largest leave-group-out error of a case over the groupings run (a pessimistic hidden-set proxy)."""
    logo = profile.logo_residuals
    vals = [logo[g][cid] for g in logo if cid in logo[g]]
    return max(vals, key=abs) if vals else profile.loo_residuals.get(cid, profile.residuals[cid])


def error_table(
    cases: Sequence[CalibrationCase],
    profile: CalibrationProfile,
    key: Callable[[CalibrationCase], str],
    title: str,
) -> list[str]:
    groupings = [g for g in GROUPINGS if g in profile.logo_residuals]
    head = ["n", "in-sample", "leave-one-out", *[f"leave-{g}-out" for g in groupings], "worst held-out",
            "within 2x (worst held-out)"]  # fmt: skip
    lines = [f"| {title} | " + " | ".join(head) + " |", "|---|" + "---:|" * len(head)]
    groups: dict[str, list[CalibrationCase]] = {}
    for c in cases:
        if c.case_id in profile.residuals:
            groups.setdefault(key(c), []).append(c)
    for name in [*sorted(groups), "all"]:
        members = [c for c in cases if c.case_id in profile.residuals] if name == "all" else groups[name]
        ids = [c.case_id for c in members]
        ins = [profile.residuals[i] for i in ids]
        loo = [profile.loo_residuals.get(i, profile.residuals[i]) for i in ids]
        held = [[profile.logo_residuals[g][i] for i in ids] for g in groupings]
        worst = [_worst(profile, i) for i in ids]
        row = [str(len(ids)), _cell(ins), _cell(loo), *[_cell(h) for h in held], _cell(worst), _within(worst)]
        lines.append(f"| {'**all**' if name == 'all' else name} | " + " | ".join(row) + " |")
    return lines


def interval_table(cases: Sequence[CalibrationCase], profile: CalibrationProfile) -> list[str]:
    """Coverage and width of the shipped intervals on the shipped cases (in-sample), and held out: every
    case under every grouping scored against the interval fitted without its group
    (:func:`gpufleet.estimate.intervals.crossfit_scores`), per family and per mechanism class."""
    lines = [
        "| family | n | inside p10-p90 (in-sample) | median width p90/p10 | held-out: inside p10-p90 | "
        "held-out median width |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    mem = profile.log_residual_quantiles.get("memory")
    mem_q = (
        None
        if mem is None
        else (min(mem[0], -interval_floor("memory")), max(mem[1], interval_floor("memory")))
    )
    scores = crossfit_scores(cases, profile.logo_residuals, profile.fitted, mem_q)
    fams: dict[str, list[tuple[bool, float]]] = {}
    for c in cases:
        if c.case_id not in profile.residuals:
            continue
        p = predict_case(c, profile)
        fams.setdefault(METRIC_FAMILY[c.metric], []).append((p.p10 <= c.measured <= p.p90, p.p90 / p.p10))

    def row(name: str, ins: list[tuple[bool, float]], held: list[HeldOutScore]) -> str:
        cov = f"{100 * np.mean([v[0] for v in ins]):.0f} %" if ins else "-"
        width = f"{np.median([v[1] for v in ins]):.2f}x" if ins else "-"
        hcov = f"{100 * np.mean([h.inside for h in held]):.0f} %" if held else "-"
        hw = f"{np.median([h.width for h in held]):.2f}x" if held else "-"
        return f"| {name} | {len(ins) or len({h.case_id for h in held})} | {cov} | {width} | {hcov} | {hw} |"

    for fam in sorted(fams):
        lines.append(row(fam, fams[fam], [h for h in scores if h.family == fam]))
    speed = [f for f in fams if f != "memory"]
    lines.append(row("speed (all but memory)", [v for f in speed for v in fams[f]],
                     [h for h in scores if h.family != "memory"]))  # fmt: skip
    lines.append(row("**all**", [v for f in fams for v in fams[f]], scores))
    lines += [
        "",
        "| held-out interval of (speed cases) | cases | scored (case x grouping) | inside p10-p90 | "
        "median width |",
        "|---|---:|---:|---:|---:|",
    ]
    for mech in ("dense", "moe", "quantised", "multinode", "new_generation"):
        got = [
            h
            for h in scores
            if h.family != "memory" and (mech in h.mechanisms or (mech == "dense" and not h.mechanisms))
        ]
        if got:
            lines.append(
                f"| {mech} | {len({h.case_id for h in got})} | {len(got)} | "
                f"{100 * np.mean([h.inside for h in got]):.0f} % | {np.median([h.width for h in got]):.2f}x |"
            )
    for g in profile.logo_residuals:
        got = [h for h in scores if h.family != "memory" and h.grouping == g]
        lines.append(
            f"| leave-{g}-out | {len(got)} | {len(got)} | {100 * np.mean([h.inside for h in got]):.0f} % | "
            f"{np.median([h.width for h in got]):.2f}x |"
        )
    lines += origin_interval_rows(cases, scores)
    return lines


def origin_interval_rows(cases: Sequence[CalibrationCase], scores: Sequence[HeldOutScore]) -> list[str]:
    """Held-out coverage per origin (:func:`case_origin`) and family: published measurements are what a user's
    own will look like; our probes are one stack on one GPU whose residuals sit well inside any floor."""
    origin = {c.case_id: case_origin(c) for c in cases}
    lines = [
        "",
        "| held-out interval, by origin | family | cases | scored (case x grouping) | inside p10-p90 | "
        "median width |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for o in ("published", "measured here (benchmarks/ probes)"):
        for fam in ("latency", "memory", "throughput", "training", "speed (all but memory)", "**all**"):
            got = [
                h
                for h in scores
                if origin[h.case_id] == o
                and (fam in (h.family, "**all**") or (fam.startswith("speed") and h.family != "memory"))
            ]
            if not got:
                continue
            lines.append(
                f"| {o} | {fam} | {len({h.case_id for h in got})} | {len(got)} | "
                f"{100 * np.mean([h.inside for h in got]):.0f} % | {np.median([h.width for h in got]):.2f}x |"
            )
    return lines


def parameter_table(profile: CalibrationProfile) -> list[str]:
    """Every parameter: prior, log spread, whether the fit moves it, the profile's value, its source."""
    from gpufleet.estimate.priors import PRIORS

    lines = [
        "| parameter | prior | log_sd | fitted | value in profile | source / reasoning |",
        "|---|---|---|---|---|---|",
    ]
    for name, p in PRIORS.items():
        fitted = name in profile.fitted
        value = f"{profile.param(name):.4g}" if fitted else "(prior)"
        mark = "yes" if fitted else "no"
        lines.append(f"| `{name}` | {p.value:.4g} | {p.log_sd:g} | {mark} | {value} | {p.source} |")
    return lines


def case_origin(c: CalibrationCase) -> str:
    """Whether a case was published by others or measured by this project's probes (its source names them)."""
    ours = c.source.startswith("gpufleet benchmarks/")
    return "measured here (benchmarks/ probes)" if ours else "published"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    ap.add_argument("--profile", type=Path, default=None, help="profile JSON (default: the shipped one)")
    ap.add_argument("--params", action="store_true", help="print the parameter table (docs/performance.md)")
    args = ap.parse_args(argv)
    profile = load_profile(args.profile)
    if args.params:
        print("\n".join(parameter_table(profile)))
        return 0
    cases = read_cases(args.cases)
    out = [
        f"Median / p90 |error| of the shipped profile ({profile.case_count} cases, fitted "
        f"{profile.fitted_at[:10]}). Leave-group-out refits the model without any case of the held-out "
        'vendor, GPU generation, software stack or metric family; "worst held-out" takes, per case, the '
        "largest of those errors.",
        "",
        *error_table(cases, profile, lambda c: c.metric, "metric"),
        "",
        *error_table(cases, profile, lambda c: get_spec(c.gpu).vendor, "vendor"),
        "",
        *error_table(cases, profile, case_origin, "origin"),
        "",
        *interval_table(cases, profile),
    ]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
