"""Refit the performance model's shared parameters and write the versioned calibration profile.

Usage: python tools/calibrate.py [--cases PATH] [--out PATH] [--no-loo] [--groups vendor,generation,...]
                                [--jobs N]

Prints every case's in-sample, leave-one-out and leave-group-out error (a whole vendor, GPU generation,
software stack or metric family held out of the fit at a time), then the summaries (median and p90 APE,
share within 2x). The residuals go into the profile; `tools/accuracy_table.py` renders them for the README.
Run by developers; never imported at run time.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

from gpufleet.estimate.calibration import GROUPINGS, fit_profile, load_profile, requantile, save_profile
from gpufleet.estimate.cases import read_cases
from gpufleet.estimate.intervals import fit_interval_scales, scoring_cases

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CASES = ROOT / "src" / "gpufleet" / "estimate" / "data" / "cases.csv"
DEFAULT_OUT = ROOT / "src" / "gpufleet" / "estimate" / "data" / "profile.json"


def _summary(label: str, logs: list[float]) -> str:
    ape = np.abs(np.exp(-np.array(logs)) - 1.0)  # |pred/meas - 1|
    within = np.mean(np.abs(np.array(logs)) <= math.log(2.0))
    return (
        f"{label}: n={len(logs)} median APE {100 * np.median(ape):.1f}%  p90 APE "
        f"{100 * np.quantile(ape, 0.9):.1f}%  within 2x {100 * within:.0f}%"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--no-loo", action="store_true", help="skip the leave-one-out refits")
    ap.add_argument(
        "--groups", default=",".join(GROUPINGS),
        help=f"groupings to hold out whole, comma-separated ({', '.join(GROUPINGS)}); empty = none",
    )  # fmt: skip
    ap.add_argument(
        "--jobs", type=int, default=1,
        help="worker processes for the held-out refits (independent; the result does not depend on it)",
    )  # fmt: skip
    ap.add_argument(
        "--requantile", action="store_true",
        help="no refit: recompute the interval quantiles of the profile at --out from its stored residuals",
    )  # fmt: skip
    args = ap.parse_args(argv)
    cases = read_cases(args.cases)
    if args.requantile:
        save_profile(requantile(load_profile(args.out), cases), args.out)
        print(f"rewrote the interval quantiles of {args.out}")
        return 0
    try:
        rel = args.cases.resolve().relative_to(ROOT)
    except ValueError:
        rel = args.cases
    groups = tuple(g for g in args.groups.split(",") if g)
    profile = fit_profile(
        cases, leave_one_out=not args.no_loo, source=f"{rel} ({len(cases)} rows)", leave_groups_out=groups,
        jobs=max(1, args.jobs),
    )  # fmt: skip
    save_profile(profile, args.out)
    heads = "".join(f" {'LO-' + g[:3]:>8s}" for g in groups)
    print(f"{'case':6s} {'metric':28s} {'in-sample':>10s} {'LOO':>8s}{heads}   (ratio measured/predicted)")
    for c in cases:
        if c.case_id not in profile.residuals:
            print(f"{c.case_id:6s} {c.metric:28s} not supported")
            continue
        r, lo = profile.residuals[c.case_id], profile.loo_residuals.get(c.case_id, float("nan"))
        held = "".join(f" {math.exp(profile.logo_residuals[g][c.case_id]):8.3f}" for g in groups)
        print(f"{c.case_id:6s} {c.metric:28s} {math.exp(r):10.3f} {math.exp(lo):8.3f}{held}")
    print(_summary("in-sample", list(profile.residuals.values())))
    if profile.loo_residuals:
        print(_summary("leave-one-out", list(profile.loo_residuals.values())))
    for g in groups:
        print(_summary(f"leave-{g}-out", list(profile.logo_residuals[g].values())))
    if profile.logo_residuals:
        info = scoring_cases(cases, profile.logo_residuals, profile.fitted)
        scales = fit_interval_scales(profile.logo_residuals, info, list(info))
        print("held-out interval scales (fitted to 80 % cross-fitted coverage): "
              + ", ".join(f"{k} {v:.3f}" for k, v in scales.items()))  # fmt: skip
    print("parameters (fitted*):")
    for k in sorted(profile.params):
        mark = "*" if k in profile.fitted else " "
        print(f"  {mark} {k:28s} {profile.params[k]:.4g}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
