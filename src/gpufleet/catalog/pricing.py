"""Price kinds: on-demand, spot and commitments (reserved instances, savings plans, committed-use discounts).

A commitment price is ``on_demand x (1 - discount)``. The discount comes, per offer, from:

1. a rate fetched from the provider's price API (``gpufleet catalog update``) for the same provider,
   region, instance type, GPU and count: its ``1 - committed / on-demand`` from that same fetch, applied to
   the offer's on-demand price so that every kind of one offer is on the same basis; else
2. the per-provider table ``data/commitment_discounts.csv`` (every row sourced, marked verified or not; see
   docs/pricing.md for why each default was chosen), which a user file can override; else
3. nothing: NaN. A provider without a sourced program gets no commitment price, never an invented one.

A table row is *unverified* when it has no per-offer source (a provider's "up to" marketing figure is a
ceiling over all instance families, not the rate of a GPU offer): every shipped row is. Unverified rows are
used only when the caller opts in (``allow_unverified=True``, :func:`allow_unverified_commitments`, the CLI's
``--allow-unverified-commitments``, a fleet's ``allow_unverified_commitments: true``); otherwise such an
offer has no commitment price (NaN). Fetched rates are per offer and dated, so always verified; a user's
override row counts as verified unless it says ``verified: false``.

``commit_1y`` / ``commit_3y`` are the provider's cheapest program for that term.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gpufleet.catalog.fetch.rates import PROGRAMS, CommitmentRate, rate_key
from gpufleet.catalog.offers import OfferTable
from gpufleet.errors import ConfigFileError, DataError, UnknownNameError, close_matches
from gpufleet.fileio import document_kind, parse_yaml_or_json, read_user_text
from gpufleet.strict_model import NoBoolNumbers
from gpufleet.validation import checked_output

PriceKind = Literal[
    "on_demand",
    "spot",
    "reserved_1y",
    "reserved_3y",
    "savings_plan_1y",
    "savings_plan_3y",
    "cud_1y",
    "cud_3y",
    "commit_1y",
    "commit_3y",
]
PRICE_KINDS: tuple[str, ...] = get_args(PriceKind)

#: Commitment kind -> (programs it may use, term [years]). ``commit_*`` takes the cheapest of all programs.
COMMITMENT_KINDS: dict[str, tuple[tuple[str, ...], int]] = {
    "reserved_1y": (("reserved",), 1),
    "reserved_3y": (("reserved",), 3),
    "savings_plan_1y": (("savings_plan",), 1),
    "savings_plan_3y": (("savings_plan",), 3),
    "cud_1y": (("cud",), 1),
    "cud_3y": (("cud",), 3),
    "commit_1y": (PROGRAMS, 1),
    "commit_3y": (PROGRAMS, 3),
}
_SHIPPED = "commitment_discounts.csv"


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitmentAssumption:
    """One row of the discount table: a provider's program and term, and its default discount [fraction]."""

    provider: str
    program: str  # reserved | savings_plan | cud | flexible_cud
    term_years: int  # 1 or 3
    discount_fraction: float  # 1 - committed / on-demand [fraction], 0 <= d < 1
    source: str
    verified: bool
    note: str
    origin: str  # "shipped" or the override file's path


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitmentAssumptions:
    """The discount table in force, and the fetched commitment rates that take precedence over it."""

    rows: tuple[CommitmentAssumption, ...]
    fetched: tuple[CommitmentRate, ...] = ()
    allow_unverified: bool = False  # use table rows without a per-offer source (opt-in)

    def row(self, provider: str, program: str, term_years: int) -> CommitmentAssumption | None:
        """The usable table row (verified, or any when unverified rows are allowed), None where none."""
        allow = self.allow_unverified or _ALLOW_UNVERIFIED.get()
        for r in self.rows:
            if (r.provider, r.program, r.term_years) == (provider, program, term_years):
                return r if (r.verified or allow) else None
        return None

    def discount(self, provider: str, program: str, term_years: int) -> float:
        """Usable table discount [fraction], NaN where the table has no such row or it is unverified and
        unverified rates are not allowed."""
        r = self.row(provider, program, term_years)
        return math.nan if r is None else r.discount_fraction


@dataclass(frozen=True, slots=True, kw_only=True)
class AssumptionRow:
    """One commitment assumption as shown to the user (``basis`` = "table" or "fetched")."""

    provider: str
    program: str
    term_years: int
    discount_fraction: float  # table value, or the median of the fetched rates [fraction]
    basis: str
    verified: bool
    source: str
    note: str


# --- the table ----------------------------------------------------------------------------------------------
@cache
def _shipped_rows() -> tuple[CommitmentAssumption, ...]:
    try:
        text = resources.files("gpufleet.catalog").joinpath("data", _SHIPPED).read_text(encoding="utf-8")
    except (FileNotFoundError, OSError) as exc:
        raise DataError(f"The shipped table {_SHIPPED} is missing. Reinstall gpufleet.") from exc
    rows = []
    for line, raw in enumerate(csv.DictReader(text.splitlines()), start=2):
        try:
            rows.append(
                _check_row(
                    _Entry.model_validate(
                        raw | {"verified": raw.get("verified") == "yes", "term_years": int(raw["term_years"])}
                    ),
                    "shipped",
                )
            )
        except (ValidationError, ValueError, KeyError) as exc:
            raise DataError(f"{_SHIPPED} line {line} is invalid ({exc}). Reinstall gpufleet.") from exc
    return tuple(rows)


class _Entry(NoBoolNumbers):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    provider: str = Field(min_length=1, pattern=r"^[a-z0-9_-]+$")
    program: Literal["reserved", "savings_plan", "cud", "flexible_cud"]
    term_years: Literal[1, 3]
    discount_fraction: float | None = Field(ge=0.0, lt=1.0)  # None removes the row: no default
    source: str = Field(min_length=1)
    verified: bool = True  # a user's own rate (quote, contract) is sourced; write false for a guess
    note: str = ""

    @field_validator("term_years", mode="before")
    @classmethod
    def _whole_years(cls, v: Any) -> Any:
        if isinstance(v, bool):  # true == 1 would pass Literal[1, 3]
            raise ValueError(f"got the boolean {str(v).lower()}; write 1 or 3 (years)")
        return v


class _OverrideFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mode: Literal["merge", "replace"] = "merge"
    commitments: list[_Entry]


def _check_row(e: _Entry, origin: str) -> CommitmentAssumption:
    return CommitmentAssumption(
        provider=e.provider,
        program=e.program,
        term_years=e.term_years,
        discount_fraction=math.nan if e.discount_fraction is None else e.discount_fraction,
        source=e.source,
        verified=e.verified,
        note=e.note,
        origin=origin,
    )


def _read_override(path: Path) -> _OverrideFile:
    text = read_user_text(path, what="commitment override file")
    data: Any = parse_yaml_or_json(
        path,
        text,
        lambda kind, error: (
            f"The commitment override file {path} is not valid {kind}: {error}. "
            "Fix the syntax; the file holds `commitments:` (a list of entries) and optionally `mode:`."
        ),
    )
    try:
        doc = _OverrideFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigFileError(_describe_validation(path, data, exc)) from exc
    from gpufleet.catalog.offers import load_shipped_offers

    known = set(load_shipped_offers().providers())
    for i, e in enumerate(doc.commitments, start=1):
        if e.provider not in known:
            hint = close_matches(e.provider, known)
            raise ConfigFileError(
                f"The commitment override file {path}, entry {i}: unknown provider {e.provider!r}"
                + (f" (did you mean: {', '.join(hint)}?)" if hint else "")
                + f". Known providers: {', '.join(sorted(known))}. Fix the provider name."
            )
    return doc


def _describe_validation(path: Path, data: Any, exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = [str(p) for p in err["loc"]]
    value = err.get("input")
    allowed = {
        "provider": "a lower-case provider name such as aws, azure, gcp",
        "program": "reserved, savings_plan, cud or flexible_cud",
        "term_years": "1 or 3",
        "discount_fraction": "a number with 0 <= value < 1 (0.4 = 40 %), or null to remove the default",
        "source": "a non-empty citation of where the figure comes from",
        "verified": "true (default: your own sourced rate) or false (used only with "
        "--allow-unverified-commitments)",
        "mode": "merge (entries replace matching rows) or replace (the file is the whole table)",
        "commitments": "a list of entries with provider, program, term_years, discount_fraction, source",
    }
    if len(loc) >= 3 and loc[0] == "commitments":
        entry = f"entry {int(loc[1]) + 1} (commitments[{loc[1]}])"
        field = loc[2]
        if err["type"] == "missing":
            what = f"field {field!r} is missing"
        elif err["type"] == "extra_forbidden":
            what = f"field {field!r} is not a known field (value {value!r})"
        else:
            what = f"field {field!r} has the bad value {value!r} ({err['msg']})"
        hint = allowed.get(field, "fields " + ", ".join(_Entry.model_fields))
        return f"The commitment override file {path}, {entry}: {what}. Allowed: {hint}. Fix that entry."
    if len(loc) == 2 and loc[0] == "commitments" and isinstance(value, dict):  # a check across fields
        msg = str(err["msg"]).removeprefix("Value error, ")
        return (
            f"The commitment override file {path}, entry {int(loc[1]) + 1} (commitments[{loc[1]}]): {msg} "
            f"Allowed: {allowed['commitments']}. Fix that entry."
        )
    if len(loc) == 2 and loc[0] == "commitments":
        return (
            f"The commitment override file {path}, entry {int(loc[1]) + 1} (commitments[{loc[1]}]) is "
            f"{value!r}, not a mapping. Allowed: {allowed['commitments']}. Fix that entry."
        )
    if not loc:
        return (
            f"The commitment override file {path} holds {document_kind(value)}, not a mapping. "
            "Allowed: top-level keys `commitments` (required) and `mode` (optional). Example: "
            "`commitments: [{provider: aws, program: reserved, term_years: 1, discount_fraction: 0.35, "
            "source: 'our quote'}]`."
        )
    field = loc[0]
    hint = allowed.get(field, "top-level keys `commitments` (required) and `mode` (optional)")
    shown = value if err["type"] != "missing" else None
    return (
        f"The commitment override file {path}: {field!r}: {err['msg']} (value {shown!r}). Allowed: {hint}. "
        "Example: `commitments: [{provider: aws, program: reserved, term_years: 1, discount_fraction: 0.35, "
        "source: 'our quote'}]`."
    )


_IN_FORCE: ContextVar[CommitmentAssumptions | None] = ContextVar("gpufleet_commitments", default=None)
_ALLOW_UNVERIFIED: ContextVar[bool] = ContextVar("gpufleet_allow_unverified_commitments", default=False)


@contextmanager
def allow_unverified_commitments(allow: bool = True) -> Iterator[bool]:
    """Within the block, table rates without a per-offer source are used (the user opted in), whatever
    assumptions are passed or in force. ``allow=False`` changes nothing (a no-op block)."""
    token = _ALLOW_UNVERIFIED.set(allow or _ALLOW_UNVERIFIED.get())
    try:
        yield _ALLOW_UNVERIFIED.get()
    finally:
        _ALLOW_UNVERIFIED.reset(token)


def unverified_allowed(assumptions: CommitmentAssumptions | None = None) -> bool:
    """Whether unverified table rates are in use here (opt-in by argument, assumptions or context)."""
    a = assumptions or _IN_FORCE.get()
    return bool(_ALLOW_UNVERIFIED.get() or (a is not None and a.allow_unverified))


@contextmanager
def commitments_in_force(assumptions: CommitmentAssumptions) -> Iterator[CommitmentAssumptions]:
    """Within the block, commitment prices use ``assumptions`` (e.g. with a user override file applied)
    wherever no table is passed explicitly: ``recommend``/``migrate`` with ``commitments=FILE``."""
    token = _IN_FORCE.set(assumptions)
    try:
        yield assumptions
    finally:
        _IN_FORCE.reset(token)


def load_commitment_assumptions(
    override: Path | None = None, *, include_fetched: bool = True, allow_unverified: bool = False
) -> CommitmentAssumptions:
    """The shipped discount table, with ``override`` (YAML/JSON) applied, plus fetched rates (if any).

    Override entries replace the shipped row with the same (provider, program, term_years) and add new ones;
    ``discount_fraction: null`` removes a default; ``mode: replace`` makes the file the whole table.
    ``include_fetched``: read rates written by ``gpufleet catalog update`` (no network; reads local files).
    ``allow_unverified``: use table rows without a per-offer source (every shipped row; opt-in).
    """
    rows = list(_shipped_rows())
    if override is not None:
        doc = _read_override(Path(override))
        new = [_check_row(e, str(override)) for e in doc.commitments]
        _check_override_rows(new, doc.mode, str(override))
        keys = {(r.provider, r.program, r.term_years) for r in new}
        if doc.mode == "replace":
            rows = []
        rows = [r for r in rows if (r.provider, r.program, r.term_years) not in keys] + new
    rows = [r for r in rows if not math.isnan(r.discount_fraction)]
    fetched = _fetched_rates() if include_fetched else ()
    return CommitmentAssumptions(rows=tuple(rows), fetched=fetched, allow_unverified=allow_unverified)


def _check_override_rows(rows: Sequence[CommitmentAssumption], mode: str, path: str) -> None:
    """An override that changes nothing (no entries, merge mode) or names one row twice (the last would
    silently win) is a mistake in the file, not an override."""
    if not rows and mode != "replace":
        raise ConfigFileError(
            f"The commitment override file {path} lists no commitments, so it would change nothing. Add "
            "entries (`commitments: [{provider: aws, program: reserved, term_years: 1, discount_fraction: "
            "0.35, source: 'our quote'}]`), set `mode: replace` to remove every default, or drop "
            "--commitments."
        )
    seen: dict[tuple[str, str, int], int] = {}
    for index, row in enumerate(rows, 1):
        key = (row.provider, row.program, row.term_years)
        if key in seen:
            raise ConfigFileError(
                f"The commitment override file {path}: entries {seen[key]} and {index} both set "
                f"{row.provider} "
                f"{row.program} {row.term_years}y; the last would silently win. Keep one entry per provider, "
                "program and term."
            )
        seen[key] = index


def _fetched_rates() -> tuple[CommitmentRate, ...]:
    """Rates written by ``gpufleet catalog update``, parsed once per version of the files on disk (every
    commitment-priced query reads them; only a stat of each file is repeated)."""
    from gpufleet.catalog.fetch.store import manifest_stamp

    stamp = manifest_stamp()  # the data files are content-addressed: a new manifest = new data
    if not stamp:
        return ()
    return _parse_fetched(stamp)


@lru_cache(maxsize=4)
def _parse_fetched(stamp: tuple[tuple[str, int, int], ...]) -> tuple[CommitmentRate, ...]:
    from gpufleet.catalog.fetch.store import read_refreshed_commitments

    return tuple(read_refreshed_commitments())


def describe_assumptions(assumptions: CommitmentAssumptions | None = None) -> tuple[AssumptionRow, ...]:
    """Every commitment assumption in force, for display: table rows, then one row per fetched program."""
    a = assumptions or _IN_FORCE.get() or load_commitment_assumptions()
    out = [
        AssumptionRow(
            provider=r.provider,
            program=r.program,
            term_years=r.term_years,
            discount_fraction=r.discount_fraction,
            basis="table",
            verified=r.verified,
            source=r.source + ("" if r.origin == "shipped" else f" (override file {r.origin})"),
            note=r.note,
        )
        for r in sorted(a.rows, key=lambda r: (r.provider, r.program, r.term_years))
    ]
    groups: dict[tuple[str, str, int], list[CommitmentRate]] = {}
    for f in a.fetched:
        groups.setdefault((f.provider, f.program, f.term_years), []).append(f)
    for (prov, prog, term), rates in sorted(groups.items()):
        d = np.array([r.discount_fraction for r in rates])
        caps = sorted({r.captured_at for r in rates})
        out.append(
            AssumptionRow(
                provider=prov,
                program=prog,
                term_years=term,
                discount_fraction=float(np.median(d)),
                basis="fetched",
                verified=True,
                source=rates[0].source,
                note=(
                    f"{len(rates)} machine rates fetched {caps[0]}..{caps[-1]}, discount "
                    f"{d.min():.1%}..{d.max():.1%} (median shown); used instead of the table for those "
                    "machines."
                ),
            )
        )
    return tuple(out)


# --- vectorised prices --------------------------------------------------------------------------------------
def _table_discounts(providers: npt.NDArray[Any], a: CommitmentAssumptions, program: str, term: int) -> Any:
    uniq, inverse = np.unique(providers.astype(str), return_inverse=True)
    per = np.array([a.discount(str(p), program, term) for p in uniq], dtype=np.float64)
    return per[inverse] if len(uniq) else np.full(len(providers), np.nan)


def _fetched_discounts(keys: npt.NDArray[Any], a: CommitmentAssumptions, program: str, term: int) -> Any:
    best: dict[str, float] = {}
    for f in a.fetched:
        if f.program == program and f.term_years == term:
            k = rate_key(f.provider, f.region, f.instance_type, f.gpu, f.gpu_count)
            best[k] = max(best.get(k, -math.inf), f.discount_fraction)
    out = np.full(len(keys), np.nan)
    if not best:
        return out
    known = np.array(sorted(best), dtype=str)
    values = np.array([best[k] for k in known.tolist()], dtype=np.float64)
    pos = np.clip(np.searchsorted(known, keys), 0, len(known) - 1)
    hit = known[pos] == keys
    out[hit] = values[pos[hit]]
    return out


def _offer_keys(table: OfferTable) -> npt.NDArray[Any]:
    cols = [table.column(c).astype(str) for c in ("provider", "region", "instance_type", "gpu")]
    counts = np.array([f"{c:.6g}" for c in table.column("gpu_count").tolist()], dtype=str)
    sep = np.full(len(table), "|", dtype=str)
    keys = cols[0]
    for part in (*cols[1:], counts):
        keys = np.char.add(np.char.add(keys, sep), part)
    return keys


@checked_output("price lookup")
def prices_usd_per_hour(
    table: OfferTable, kind: str, assumptions: CommitmentAssumptions | None = None
) -> npt.NDArray[np.float64]:
    """Price of every offer under ``kind`` [USD/h], NaN where the offer has none (spot unknown, no program).

    ``assumptions``: the commitment table and fetched rates (default: :func:`load_commitment_assumptions`).
    Fetched rates take precedence over the table for the same provider/region/instance type/GPU/count.
    """
    if kind not in PRICE_KINDS:
        raise UnknownNameError("price kind", kind, PRICE_KINDS)
    on_demand = np.asarray(table.column("price_on_demand_usd_per_hour"), dtype=np.float64)
    if kind == "on_demand":
        return on_demand.copy()
    if kind == "spot":
        return np.asarray(table.column("price_spot_usd_per_hour"), dtype=np.float64).copy()
    a = assumptions or _IN_FORCE.get() or load_commitment_assumptions()
    programs, term = COMMITMENT_KINDS[kind]
    providers = table.column("provider")
    keys = _offer_keys(table) if a.fetched else None
    table_best = np.full(len(table), np.nan)
    fetched_best = np.full(len(table), np.nan)
    for program in programs:  # fmax ignores NaN: the deepest discount any program offers
        table_best = np.fmax(table_best, _table_discounts(providers, a, program, term))
        if keys is not None:
            fetched_best = np.fmax(fetched_best, _fetched_discounts(keys, a, program, term))
    # A machine with any fetched rate for this kind uses fetched rates only: real rates beat table defaults.
    best = np.where(np.isnan(fetched_best), table_best, fetched_best)
    return on_demand * (1.0 - best)


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitmentRateInfo:
    """Where one offer's commitment price of one kind comes from (what :func:`prices_usd_per_hour` used)."""

    discount_fraction: float  # 1 - commitment / on-demand [fraction]
    program: str  # reserved | savings_plan | cud | flexible_cud
    term_years: int
    basis: str  # "fetched" (price API, per offer) or "table" (a per-provider figure)
    verified: bool  # False: no per-offer source (used only on opt-in)
    source: str  # citation; fetched rates: API, option and capture time


def commitment_rate_info(
    provider: str,
    region: str,
    instance_type: str,
    gpu: str,
    gpu_count: float,
    kind: str,
    assumptions: CommitmentAssumptions | None = None,
) -> CommitmentRateInfo | None:
    """The rate :func:`prices_usd_per_hour` applies to this offer for ``kind``, None where it has none."""
    if kind not in COMMITMENT_KINDS:
        raise UnknownNameError("commitment kind", kind, tuple(COMMITMENT_KINDS))
    a = assumptions or _IN_FORCE.get() or load_commitment_assumptions()
    programs, term = COMMITMENT_KINDS[kind]
    key = rate_key(provider, region, instance_type, gpu, gpu_count)
    fetched = [
        f
        for f in a.fetched
        if f.program in programs
        and f.term_years == term
        and rate_key(f.provider, f.region, f.instance_type, f.gpu, f.gpu_count) == key
    ]
    if fetched:
        best = max(fetched, key=lambda f: f.discount_fraction)
        option = f", {best.option}" if best.option else ""
        return CommitmentRateInfo(
            discount_fraction=best.discount_fraction,
            program=best.program,
            term_years=term,
            basis="fetched",
            verified=True,
            source=f"{best.source}{option}, captured {best.captured_at}",
        )
    rows = [r for p in programs if (r := a.row(provider, p, term)) is not None]
    if not rows:
        return None
    r = max(rows, key=lambda r: r.discount_fraction)
    origin = "" if r.origin == "shipped" else f" (override file {r.origin})"
    return CommitmentRateInfo(
        discount_fraction=r.discount_fraction,
        program=r.program,
        term_years=term,
        basis="table",
        verified=r.verified,
        source=r.source + origin,
    )


def with_override(a: CommitmentAssumptions, row: CommitmentAssumption) -> CommitmentAssumptions:
    """``a`` with ``row`` replacing its (provider, program, term_years) entry (for programmatic what-ifs)."""
    rest = tuple(
        r
        for r in a.rows
        if (r.provider, r.program, r.term_years) != (row.provider, row.program, row.term_years)
    )
    return replace(a, rows=(*rest, row))


__all__ = [
    "COMMITMENT_KINDS",
    "PRICE_KINDS",
    "AssumptionRow",
    "CommitmentAssumption",
    "CommitmentAssumptions",
    "CommitmentRateInfo",
    "PriceKind",
    "allow_unverified_commitments",
    "commitment_rate_info",
    "describe_assumptions",
    "load_commitment_assumptions",
    "prices_usd_per_hour",
    "unverified_allowed",
    "with_override",
]
