"""Refit the performance model's shared parameters and write the versioned calibration profile.

Usage: python tools/calibrate.py [--cases PATH] [--out PATH] [--no-loo]

Prints every case's in-sample and leave-one-out error, then the summary (median APE, share within 2x).
Run by developers; never imported at run time.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

from gpufleet.estimate.calibration import fit_profile, save_profile
from gpufleet.estimate.cases import read_cases

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CASES = ROOT / "src" / "gpufleet" / "estimate" / "data" / "cases.csv"
DEFAULT_OUT = ROOT / "src" / "gpufleet" / "estimate" / "data" / "profile.json"


def _summary(label: str, logs: list[float]) -> str:
    ape = np.abs(np.exp(-np.array(logs)) - 1.0)  # |pred/meas - 1|
    within = np.mean(np.abs(np.array(logs)) <= math.log(2.0))
    return f"{label}: n={len(logs)} median APE {100 * np.median(ape):.1f}%  within 2x {100 * within:.0f}%"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--no-loo", action="store_true", help="skip the leave-one-out refits")
    args = ap.parse_args(argv)
    cases = read_cases(args.cases)
    try:
        rel = args.cases.resolve().relative_to(ROOT)
    except ValueError:
        rel = args.cases
    profile = fit_profile(cases, leave_one_out=not args.no_loo, source=f"{rel} ({len(cases)} rows)")
    save_profile(profile, args.out)
    print(f"{'case':6s} {'metric':28s} {'in-sample':>10s} {'LOO':>10s}   (ratio measured/predicted)")
    for c in cases:
        if c.case_id not in profile.residuals:
            print(f"{c.case_id:6s} {c.metric:28s} not supported")
            continue
        r, lo = profile.residuals[c.case_id], profile.loo_residuals.get(c.case_id, float("nan"))
        print(f"{c.case_id:6s} {c.metric:28s} {math.exp(r):10.3f} {math.exp(lo):10.3f}")
    print(_summary("in-sample", list(profile.residuals.values())))
    if profile.loo_residuals:
        print(_summary("leave-one-out", list(profile.loo_residuals.values())))
    print("parameters (fitted*):")
    for k in sorted(profile.params):
        mark = "*" if k in profile.fitted else " "
        print(f"  {mark} {k:28s} {profile.params[k]:.4g}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
