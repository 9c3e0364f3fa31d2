"""Refresh one provider's prices: fetch -> parse -> normalise -> (optionally) write atomically.

Only :func:`refresh` touches the network, and only when called. :func:`write_result` merges the new rows into
the provider's refreshed files: rows of the machines just priced are replaced; every other row of the provider
(from the previous refresh, else from the shipped table) is kept with its own captured_at, because a refreshed
file replaces all of that provider's shipped rows when the catalog is loaded with ``include_refreshed=True``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx

from gpufleet.catalog.fetch import aws, azure, gcp, store
from gpufleet.catalog.fetch.http import make_client
from gpufleet.catalog.fetch.normalise import MachinePrices, RefreshResult, build_rows, shape_index
from gpufleet.catalog.fetch.rates import CommitmentRate, read_rates_csv, write_rates_csv
from gpufleet.catalog.offers import Offer, OfferTable, load_shipped_offers, read_offers_csv, write_offers_csv
from gpufleet.errors import InputError, UnknownNameError

PROVIDERS: tuple[str, ...] = ("aws", "azure", "gcp")
_REGION = re.compile(r"^[a-z0-9][a-z0-9-]{1,40}$")
#: Progress callback: (description, steps done, total steps or None when unknown).
Progress = Callable[[str, int, int | None], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class WrittenFiles:
    offers_path: Path
    commitments_path: Path
    offer_rows: int  # rows in the file after the merge
    rate_rows: int


def _regions(provider: str, regions: list[str] | None, shipped: OfferTable) -> list[str]:
    if regions:
        bad = [r for r in regions if not _REGION.match(r)]
        if bad:
            raise InputError(
                f"Region {bad[0]!r} is not a valid {provider} region name: use the API's lower-case code, "
                "such as eastus (azure), us-east-1 (aws) or us-central1 (gcp)."
            )
        return sorted(set(regions))
    if provider in shipped.providers():
        return sorted({str(r) for r in shipped.filter(provider=provider).column("region").tolist()})
    raise InputError(f"The shipped catalog lists no {provider} regions; name them with --region.")


def _page_reporter(report: Progress, region: str, done: int, total: int) -> Callable[[int], None]:
    return lambda page: report(f"azure {region} page {page}", done, total)


def refresh(
    provider: str,
    regions: list[str] | None = None,
    *,
    shipped: OfferTable | None = None,
    client: httpx.Client | None = None,
    progress: Progress | None = None,
    now: datetime | None = None,
    budget_s: float | None = None,
) -> RefreshResult:
    """Fetch and normalise ``provider``'s GPU prices for ``regions`` (default: the shipped regions)."""
    if provider not in PROVIDERS:
        raise UnknownNameError(
            "price-API provider", provider, PROVIDERS, hint="Refresh supports aws, azure, gcp."
        )
    key = gcp.api_key() if provider == "gcp" else ""  # fail before any network call
    shipped = load_shipped_offers() if shipped is None else shipped
    wanted = _regions(provider, regions, shipped)
    shapes = shape_index(shipped, provider)
    captured_at = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    unmapped: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    machines: list[MachinePrices] = []
    rows_read = 0
    report = progress or (lambda _d, _i, _n: None)
    own = client is None
    c = (make_client() if budget_s is None else make_client(budget_s=budget_s)) if client is None else client
    try:
        if provider == "azure":
            source = f"Azure Retail Prices API {azure.API_VERSION}"
            for i, region in enumerate(wanted):
                report(f"azure {region}", i, len(wanted))
                rows = azure.fetch_region(c, region, skipped, _page_reporter(report, region, i, len(wanted)))
                rows_read += len(rows)
                machines += azure.normalise(rows, shapes, unmapped, skipped)
        elif provider == "aws":
            source = "AWS price-list bulk API AmazonEC2"
            for i, region in enumerate(wanted):
                report(f"aws {region} (large file)", i, len(wanted))
                parsed = aws.parse_offer_file(aws.fetch_region(c, region), skipped)
                rows_read += parsed.rows_read
                machines += aws.normalise(parsed, region, shapes, unmapped, skipped)
        else:
            source = "GCP Cloud Billing Catalog API v1 (Compute Engine)"
            skus = gcp.fetch_all(c, key, lambda p: report(f"gcp SKUs page {p}", 0, None))
            rows_read = len(skus)
            machines = gcp.normalise(skus, wanted, shapes, unmapped, skipped)
        report(f"{provider} done", len(wanted), len(wanted))
    finally:
        if own:
            c.close()
    offers, rates = build_rows(
        provider, machines, shipped, captured_at=captured_at, source=source, skipped=skipped
    )
    return RefreshResult(
        provider=provider,
        regions=tuple(wanted),
        offers=tuple(offers),
        rates=tuple(rates),
        rows_read=rows_read,
        unmapped=dict(unmapped.most_common()),
        skipped=dict(skipped.most_common()),
        captured_at=captured_at,
        source=source,
    )


def _previous_offers(provider: str, shipped: OfferTable) -> list[Offer]:
    for p, path, text in store.read_refreshed("offers"):
        if p == provider:
            return read_offers_csv(text, source_name=str(path)).records()
    if provider in shipped.providers():
        return shipped.filter(provider=provider).records()
    return []


def _previous_rates(provider: str) -> list[CommitmentRate]:
    for p, path, text in store.read_refreshed("commitments"):
        if p == provider:
            return read_rates_csv(text, source_name=str(path))
    return []


def write_result(result: RefreshResult, shipped: OfferTable | None = None) -> WrittenFiles:
    """Merge ``result`` into ``refreshed/offers-<p>.csv`` and ``commitments-<p>.csv`` (atomic, ours only)."""
    p = result.provider
    store.check_provider_writable(p)  # refuse before writing anything
    shipped = load_shipped_offers() if shipped is None else shipped
    # Replace the machines this run priced; keep every other row (with its own, older captured_at), so a
    # machine the API did not return (TPU, a type without a shape, another region) never silently disappears.
    done = {(o.region, o.instance_type, o.gpu or "", o.gpu_count) for o in result.offers}
    offers = [
        o
        for o in _previous_offers(p, shipped)
        if (o.region, o.instance_type, o.gpu or "", o.gpu_count) not in done
    ] + list(result.offers)
    rates = [
        r for r in _previous_rates(p) if (r.region, r.instance_type, r.gpu, r.gpu_count) not in done
    ] + list(result.rates)
    meta = {
        "provider": p,
        "captured_at": result.captured_at,
        "regions": list(result.regions),
        "source": result.source,
    }
    from gpufleet.catalog.history import history_csv  # this refresh's dated prices, appended to history

    paths = store.write_provider(
        p,
        {"offers": write_offers_csv(offers), "commitments": write_rates_csv(rates)},
        meta,
        history_text=history_csv(result.offers, result.captured_at),
    )
    return WrittenFiles(
        offers_path=paths["offers"],
        commitments_path=paths["commitments"],
        offer_rows=len(offers),
        rate_rows=len(rates),
    )


__all__ = ["PROVIDERS", "Progress", "WrittenFiles", "refresh", "write_result"]
