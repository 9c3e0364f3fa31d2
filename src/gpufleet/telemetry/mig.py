"""MIG GPU-instance profiles (shipped copy of the reference table; see data/PROVENANCE.md)."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from importlib import resources

from gpufleet.units import GB, GIB


@dataclass(frozen=True, slots=True, kw_only=True)
class MigProfile:
    gpu: str  # spec id
    profile: str  # e.g. "3g.40gb"
    memory_gib: float
    compute_slices: int
    compute_slices_total: int
    sm_fraction: float
    max_instances: int
    verified: bool


def _gib(row: dict[str, str]) -> float:
    lgip = row["memory_gib_lgip"].strip()
    if lgip:
        return float(lgip.split("-")[0])  # a range "9.50-9.75" differs by driver: take the smaller
    return float(row["memory_gb"]) * GB / GIB


def _sm_fraction(row: dict[str, str]) -> float:
    """The table's SM fraction; where it is blank, compute slices / total (equal in every row that has
    both)."""
    text = row["sm_fraction"].strip()
    if text == "Full":
        return 1.0
    if text:
        return float(Fraction(text))
    return int(row["compute_slices"]) / int(row["compute_slices_total"])


@cache
def mig_profiles() -> dict[str, tuple[MigProfile, ...]]:
    """Spec id -> its MIG profiles (no media-extension variants), smallest first."""
    text = resources.files("gpufleet.telemetry").joinpath("data/mig_profiles.csv").read_text(encoding="utf-8")
    out: dict[str, list[MigProfile]] = {}
    for row in csv.DictReader(io.StringIO(text)):
        if row["variant"].strip():
            continue
        out.setdefault(row["gpu"], []).append(
            MigProfile(
                gpu=row["gpu"],
                profile=row["profile"],
                memory_gib=_gib(row),
                compute_slices=int(row["compute_slices"]),
                compute_slices_total=int(row["compute_slices_total"]),
                sm_fraction=_sm_fraction(row),
                max_instances=int(row["max_instances"]),
                verified=row["verified"].strip().lower() == "true",
            )
        )
    return {k: tuple(sorted(v, key=lambda p: (p.compute_slices, p.memory_gib))) for k, v in out.items()}


def smallest_fitting(gpu: str, *, compute_fraction: float, memory_gib: float) -> MigProfile | None:
    """The smallest profile of ``gpu`` with at least the compute share and memory needed (None if none)."""
    for p in mig_profiles().get(gpu, ()):
        if (
            p.sm_fraction >= compute_fraction
            and p.memory_gib >= memory_gib
            and p.compute_slices < p.compute_slices_total
        ):
            return p
    return None


__all__ = ["MigProfile", "mig_profiles", "smallest_fitting"]
