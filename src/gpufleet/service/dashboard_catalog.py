"""The dashboard's catalog explorer: offers filtered and sorted (`gpufleet catalog offers`), and one offer's
price history (`gpufleet catalog history`) as an SVG line chart of its on-demand and spot prices."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from html import escape
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from gpufleet.errors import GpufleetError, InputError
from gpufleet.service.dashboard import PAGE_SIZE, SignedIn, _error, _money, _opt, _page, _values
from gpufleet.service.deps import state
from gpufleet.service.errors import http_status
from gpufleet.validation import MAX_PRICE_USD_PER_HOUR, check_number

if TYPE_CHECKING:
    from gpufleet.catalog.history import PricePoint
    from gpufleet.catalog.offers import Offer

router = APIRouter(include_in_schema=False)

#: the history page's default window [days]
HISTORY_DAYS = 90


@router.get("/catalog", response_class=HTMLResponse, response_model=None)
def catalog(request: Request, s: SignedIn) -> Response:
    who, csrf = s.who, s.csrf
    from gpufleet.catalog.listing import SORT_KEYS, offer_rows, query_offers
    from gpufleet.service.user_catalogs import team_offers

    q = request.query_params
    gpu, provider, region = q.get("gpu", ""), q.get("provider", ""), q.get("region", "")
    max_price, sort = q.get("max_price_usd_per_hour", ""), q.get("sort", "") or "price_per_gpu"
    spot_text, page_text = q.get("spot", ""), q.get("page", "")
    spot = spot_text.strip().lower() in _SPOT_ON
    page = 0
    error, rows, per_gpu, total = "", [], [], 0
    try:
        # a spot value other than the checkbox's was read as on ("spot=0" listed spot prices), an unknown
        # sort key as price_per_gpu (the page said "sorted by nope"), a page that is no whole number as
        # the first page, and a price of inf (or 1e309) as no limit
        if spot_text.strip().lower() not in _SPOT_ON + _SPOT_OFF:
            raise InputError(f"spot={spot_text!r} is not allowed: 1 (spot prices only) or leave it out.")
        page = _page_number(page_text)
        price = (
            check_number(
                "max_price_usd_per_hour",
                _number(max_price, "max price"),
                maximum=MAX_PRICE_USD_PER_HOUR,
            )
            if max_price.strip()
            else None
        )
        current = state(request).catalogs.current().table  # the latest refreshed prices
        mine = team_offers(state(request).sm, who.team_id, current)  # the team's catalogs applied
        result = query_offers(
            mine if mine is not None else current,
            gpus=_values(gpu),
            providers=_values(provider),
            regions=_values(region),
            spot=spot,
            max_price_usd_per_hour=price,
            sort=sort,
        )
        total = len(result)
        if page and page * PAGE_SIZE >= total:
            last = max(0, (total - 1) // PAGE_SIZE)
            raise InputError(
                f"page {page} is beyond the last page of these {total:,} offers (pages 0 to {last}); "
                "follow the Previous link or leave page out."
            )
        shown = result.take(slice(page * PAGE_SIZE, (page + 1) * PAGE_SIZE))
        rows = offer_rows(shown)
        per_gpu = [_per_gpu(o, spot) for o in shown.records()]
    except GpufleetError as exc:
        error = str(exc)
    sorts = "".join(f'<option value="{k}"{" selected" if k == sort else ""}>{k}</option>' for k in SORT_KEYS)
    form = (
        '<form method="get" action="/catalog"><div class="fields">'
        + _opt("gpu", gpu, "GPU (id, alias or family)", "H100")
        + _opt("provider", provider, "Provider", "aws, gcp")
        + _opt("region", region, "Region glob", "us-*")
        + _opt("max_price_usd_per_hour", max_price, "Max machine price [USD/h]")
        + f'<label for="sort">Sort (cheapest first)</label><select id="sort" name="sort">{sorts}</select>'
        + f'<label for="spot">Spot price only</label><input id="spot" name="spot" type="checkbox" value="1"'
        f"{' checked' if spot else ''}>"
        '</div><p><button type="submit">Filter</button></p></form>'
    )
    price_col = "price_spot_usd_per_hour" if spot else "price_on_demand_usd_per_hour"
    body_rows = "".join(
        f"<tr><td>{escape(str(r['provider']))}</td><td>{escape(str(r['region']))}</td>"
        f"<td>{escape(str(r.get('zone') or '-'))}</td>"
        f"<td>{_instance_cell(r)}</td><td>{escape(str(r['gpu'] or 'CPU only'))}</td>"
        f"<td class='num'>{float(r['gpu_count']):g}</td><td class='num'>{_money(r.get(price_col))}</td>"
        f"<td class='num'>{_money(g)}</td>"
        f"<td>{escape(str(r.get('captured_at', '')))}</td><td>{escape(str(r.get('source', '')))}</td></tr>"
        for r, g in zip(rows, per_gpu, strict=True)
    )
    label = "spot" if spot else "on-demand"
    table = (
        f"<p>{total:,} offers match (each zone's price is its own row); showing "
        f"{page * PAGE_SIZE + 1 if rows else 0}-{page * PAGE_SIZE + len(rows)}, sorted by {escape(sort)}."
        "</p><table><thead><tr><th>provider</th><th>region</th><th>zone</th>"
        f"<th>instance</th><th>GPU</th><th class='num'>GPUs</th><th class='num'>{label} price [USD/h, "
        f"machine]</th><th class='num'>{label} price [USD/h, per GPU]</th><th>captured</th><th>source</th>"
        f"</tr></thead><tbody>{body_rows}</tbody></table>"
    )
    if not rows:
        table = (
            "<p>No offer matches these filters. Widen them: fewer GPUs, providers or regions, a higher max "
            "price (a region glob such as <code>us-*</code> takes every US region).</p>"
        )
    params = {k: v for k, v in q.items() if k != "page"}
    links = []
    if page > 0:
        links.append(f'<a href="/catalog?{escape(urlencode(params | {"page": page - 1}))}">Previous</a>')
    if (page + 1) * PAGE_SIZE < total:
        links.append(f'<a href="/catalog?{escape(urlencode(params | {"page": page + 1}))}">Next</a>')
    nav = f'<nav aria-label="Pages">{" · ".join(links)}</nav>' if links else ""
    return _page(
        request,
        "Catalog",
        form + (_error(error) if error else table + nav),
        who,
        csrf,
        status=http_status(InputError()) if error else 200,
    )


_SPOT_ON = ("1", "true", "on", "yes")
_SPOT_OFF = ("", "0", "false", "off", "no")


def _number(text: str, what: str) -> float:
    """A plain decimal number (float() also reads "1_0" as 10 and "١٠" as 10)."""
    try:
        if "_" in text or not text.strip().isascii():
            raise ValueError(text)
        return float(text.strip())
    except ValueError:
        raise InputError(f"{what} {text!r} is not a number; give a plain number or leave it empty.") from None


def _page_number(text: str) -> int:
    """The ``page`` query value: blank is the first page (0); a whole number >= 0 otherwise."""
    if not text.strip():
        return 0
    if not text.strip().isascii() or not text.strip().isdigit() or len(text.strip()) > 9:
        raise InputError(
            f"page {text!r} is not a page number: give a whole number from 0 (the first page) or leave "
            "it out."
        )
    return int(text.strip())


def _per_gpu(o: Offer, spot: bool) -> float | None:
    """The price per GPU-hour the table shows (as `gpufleet catalog offers` does): on-demand, or spot with
    the spot filter; None for a CPU-only row or an unknown spot price."""
    if not spot:
        return o.price_per_gpu_usd_per_hour
    if o.price_spot_usd_per_hour is None or o.gpu_count <= 0:
        return None
    return o.price_spot_usd_per_hour / o.gpu_count


def _instance_cell(r: dict[str, object]) -> str:
    """The instance type, linked to its price history unless the team's own catalog added it (no history)."""
    name = escape(str(r["instance_type"]))
    if str(r.get("source", "")).startswith("user catalog"):
        return name
    href = f"/catalog/history?{escape(_history_query(r))}"
    return f'<a href="{href}" title="Price history of this offer">{name}</a>'


def _history_query(r: dict[str, object]) -> str:
    return urlencode(
        {"provider": str(r["provider"]), "instance": str(r["instance_type"]), "region": str(r["region"])}
    )


def _captured_unix_s(captured_at: str) -> float | None:
    """A refresh's capture time; None for the shipped snapshot's period (e.g. ``2026-08/2026-11``)."""
    try:
        return datetime.strptime(captured_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def _series(points: Sequence[PricePoint], now_s: float) -> dict[str, list[tuple[float, float]]]:
    """The dated points as lines: one per price kind and zone, zones with the very same prices on one line
    (a provider prices most zones alike: six identical lines would hide each other)."""
    from gpufleet.units import SECONDS_PER_DAY

    by_key: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for p in points:
        t = _captured_unix_s(p.captured_at)
        if t is not None:
            key = (p.price_kind.replace("_", "-"), p.zone or "")
            by_key.setdefault(key, []).append(((t - now_s) / SECONDS_PER_DAY, p.price_usd_per_hour))
    merged: dict[tuple[str, tuple[tuple[float, float], ...]], list[str]] = {}
    for (kind, zone), xy in by_key.items():
        merged.setdefault((kind, tuple(xy)), []).append(zone)
    out: dict[str, list[tuple[float, float]]] = {}
    for (kind, pts), zones in merged.items():
        named = [z for z in zones if z]
        where = ", ".join(named) if len(named) <= 3 else f"{len(named)} zones"
        out[f"{kind} ({where})" if named else kind] = list(pts)
    return out


@router.get("/catalog/history", response_class=HTMLResponse, response_model=None)
def history(request: Request, s: SignedIn) -> Response:
    """One offer's dated prices over the last ``days`` (90 by default): a line per price kind (and zone)."""
    from gpufleet.catalog.history import MAX_DAYS, price_history_answer
    from gpufleet.report.charts import line_chart

    q = request.query_params
    provider, instance, region = (q.get(k, "").strip() for k in ("provider", "instance", "region"))
    days_text = q.get("days", str(HISTORY_DAYS)).strip() or str(HISTORY_DAYS)
    form = (
        '<form method="get" action="/catalog/history"><div class="fields">'
        + _opt("provider", provider, "Provider", "aws")
        + _opt("instance", instance, "Instance type", "p5.48xlarge")
        + _opt("region", region, "Region", "us-east-1")
        + _opt("days", days_text, "Window [days]", str(HISTORY_DAYS))
        + '</div><p><button type="submit">Show history</button></p></form>'
    )
    title = "Price history"
    if not (provider and instance and region):
        note = (
            "<p class='muted'>Pick an offer: give its provider, instance type and region, or follow an "
            'instance link in the <a href="/catalog">catalog</a>.</p>'
        )
        return _page(request, title, form + note, s.who, s.csrf)
    try:
        try:
            days = int(days_text)
        except ValueError:
            raise InputError(
                f"Window {days_text!r} is not a whole number of days: give 1 to {MAX_DAYS}, e.g. 90."
            ) from None
        answer = price_history_answer(provider=provider, instance_type=instance, region=region, days=days)
    except GpufleetError as exc:
        return _page(request, title, form + _error(str(exc)), s.who, s.csrf, status=http_status(exc))
    what = f"{escape(provider)} {escape(instance)} in {escape(region)}"
    if not answer.points:
        body = f"<p>{what}: the provider does not offer this machine in this region (no price).</p>"
        return _page(request, title, form + body, s.who, s.csrf)
    series = _series(answer.points, datetime.now(UTC).timestamp())
    dated = sum(len(v) for v in series.values())
    if any(len(v) >= 2 for v in series.values()):
        chart = line_chart(
            series,
            title=f"{provider} {instance} {region}: price over the last {days} days",
            x_label="days before now",
            y_label="USD/hour (machine)",
        )
    else:
        chart = (
            f"<p class='muted'>No history to draw yet: {dated} dated price(s) in the last {days} days. Each "
            "catalog refresh (<code>gpufleet catalog update</code>) adds one dated point per price kind; a "
            "line needs two.</p>"
        )
    rows = "".join(
        f"<tr><td>{escape(p.captured_at)}</td><td>{escape(p.price_kind)}</td><td>{escape(p.zone or '-')}</td>"
        f"<td class='num'>{_money(p.price_usd_per_hour)}</td><td>{escape(p.source)}</td></tr>"
        for p in answer.points
    )
    table = (
        "<table><caption>Every price point (the shipped snapshot's is dated by its capture period)</caption>"
        "<thead><tr><th>captured</th><th>price kind</th><th>zone</th><th class='num'>price [USD/h, "
        f"machine]</th><th>source</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    title = f"Price history: {provider} {instance} {region}"
    return _page(request, title, form + chart + table, s.who, s.csrf)
