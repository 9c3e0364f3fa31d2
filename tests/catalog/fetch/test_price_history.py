"""Price history: every refresh appends its dated prices; a killed refresh loses none (issue 24 item 5)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from conftest import sample_handler
from gpufleet.catalog.fetch import http as fetch_http
from gpufleet.catalog.fetch import pipeline as R
from gpufleet.catalog.fetch import store
from gpufleet.catalog.history import price_history
from gpufleet.catalog.offers import Offer, OfferTable, read_offers_csv
from gpufleet.errors import InputError, UnknownNameError

FIRST = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
SECOND = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
A100 = "Standard_NC24ads_A100_v4"


def _raised_handler(factor: float) -> httpx.MockTransport:
    """The recorded Azure samples with every retail price multiplied by ``factor``."""
    base = sample_handler()

    def handle(request: httpx.Request) -> httpx.Response:
        r: httpx.Response = base(request)
        if request.url.host != "prices.azure.com":
            return r
        doc = json.loads(r.content)
        for item in doc["Items"]:
            item["retailPrice"] = round(item["retailPrice"] * factor, 6)
            item["unitPrice"] = item["retailPrice"]
        return httpx.Response(200, json=doc)

    return httpx.MockTransport(handle)


def _refresh(shipped: OfferTable, now: datetime, monkeypatch: pytest.MonkeyPatch, factor: float) -> None:
    monkeypatch.setattr(fetch_http, "TRANSPORT", _raised_handler(factor))
    monkeypatch.setattr(fetch_http, "BACKOFF_S", 0.0)
    R.write_result(R.refresh("azure", ["eastus"], shipped=shipped, now=now), shipped)


def _od(shipped: OfferTable, days: int = 90) -> list[tuple[str, float]]:
    pts = price_history(
        provider="azure", instance_type=A100, region="eastus", price_kind="on_demand",
        days=days, now=SECOND, shipped=shipped,
    )  # fmt: skip
    return [(p.captured_at, p.price_usd_per_hour) for p in pts]


def test_two_refreshes_give_two_dated_points_after_the_shipped_one(
    shipped: OfferTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _od(shipped) == [("2026-08/2026-11", 3.67)]  # never empty for a shipped offer
    _refresh(shipped, FIRST, monkeypatch, 1.0)
    _refresh(shipped, SECOND, monkeypatch, 1.1)
    assert _od(shipped) == [
        ("2026-08/2026-11", 3.67),
        ("2026-11-20T12:00:00Z", 3.673),
        ("2026-11-22T12:00:00Z", pytest.approx(3.673 * 1.1, abs=1e-6)),
    ]
    spot = price_history(
        provider="azure", instance_type=A100, region="eastus", price_kind="spot", now=SECOND, shipped=shipped
    )
    assert [p.source for p in spot] == ["shipped", "refresh", "refresh"]
    assert spot[2].price_usd_per_hour == pytest.approx(spot[1].price_usd_per_hour * 1.1, abs=1e-5)
    # the window: a 1-day query keeps the shipped point and the second refresh only
    assert [c for c, _ in _od(shipped, days=1)] == ["2026-08/2026-11", "2026-11-22T12:00:00Z"]
    # the current-prices path is unchanged: the offers in force carry the second refresh's price
    offers = {o.instance_type: o for o in store_offers()}
    assert offers[A100].price_on_demand_usd_per_hour == pytest.approx(3.673 * 1.1, abs=1e-6)


def store_offers() -> list[Offer]:
    [(_, path, text)] = store.read_refreshed("offers")
    return [o for o in read_offers_csv(text, source_name=str(path)).records() if o.region == "eastus"]


def test_carried_spot_price_is_not_redated(fake_api: list[httpx.Request], shipped: OfferTable) -> None:
    """A refresh carries AWS spot prices over from the shipped catalog: history must not re-date them."""
    R.write_result(R.refresh("aws", ["us-east-1"], shipped=shipped, now=FIRST), shipped)
    pts = price_history(
        provider="aws", instance_type="p4d.24xlarge", region="us-east-1", now=SECOND, shipped=shipped
    )
    refreshed = [(p.price_kind, p.zone) for p in pts if p.source == "refresh"]
    assert refreshed == [("on_demand", "us-east-1a"), ("on_demand", "us-east-1b")]


def _child(step: int, shipped: OfferTable) -> int:
    pid = os.fork()
    if pid == 0:  # child: the second refresh, killed at write step ``step``
        code = 0
        try:
            os.environ[store.CRASH_ENV] = str(step)
            store._STEP = 0
            fetch_http.TRANSPORT = _raised_handler(1.1)
            R.write_result(R.refresh("azure", ["eastus"], shipped=shipped, now=SECOND), shipped)
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_killed_second_refresh_keeps_the_first_point(
    shipped: OfferTable, monkeypatch: pytest.MonkeyPatch, data_dir: Path
) -> None:
    _refresh(shipped, FIRST, monkeypatch, 1.0)
    one = _od(shipped)
    killed = 0
    for step in range(1, 40):
        code = _child(step, shipped)
        got = _od(shipped)
        if code == 0:
            assert got == [*one, ("2026-11-22T12:00:00Z", pytest.approx(3.673 * 1.1, abs=1e-6))]
            break
        assert code == 99, code
        killed += 1
        # before the manifest switch: the first point alone; after it: both. Never a loss, never a mix.
        assert got in (one, [*one, ("2026-11-22T12:00:00Z", pytest.approx(3.673 * 1.1, abs=1e-6))]), step
    assert killed >= 6  # history file + 2 data files + manifest, each half-written / written / renamed
    assert len(list((data_dir / "refreshed" / "history").glob("prices-azure-*.csv"))) >= 2


def test_unknown_names_and_bad_window(shipped: OfferTable) -> None:
    with pytest.raises(UnknownNameError, match="Did you mean: azure"):
        price_history(provider="azur", instance_type=A100, region="eastus", shipped=shipped)
    with pytest.raises(UnknownNameError, match=r"Did you mean: p5\.48xlarge"):
        price_history(provider="aws", instance_type="p5.48xlarg", region="us-east-1", shipped=shipped)
    with pytest.raises(UnknownNameError, match="us-east-1"):
        price_history(provider="aws", instance_type="p5.48xlarge", region="us-east-l", shipped=shipped)
    with pytest.raises(InputError, match="whole number of days"):
        price_history(
            provider="aws", instance_type="p5.48xlarge", region="us-east-1", days=0, shipped=shipped
        )
    # known names, no such offer: an empty answer (the CLI exits 3)
    assert (
        price_history(provider="aws", instance_type="p4d.24xlarge", region="us-west-2", shipped=shipped) == ()
    )


def test_damaged_manifest_does_not_lose_history(
    shipped: OfferTable, monkeypatch: pytest.MonkeyPatch, data_dir: Path
) -> None:
    """An unreadable manifest is replaced by the next update, which re-adopts every history file on disk."""
    _refresh(shipped, FIRST, monkeypatch, 1.0)
    store.manifest_path("azure").write_text('{"marker": "gpufleet-refreshed-prices", "vers')  # truncated
    with pytest.warns(store.StoredDataWarning):
        assert _od(shipped) == [("2026-08/2026-11", 3.67)]  # unreadable: the shipped point only, said so
    with pytest.warns(store.StoredDataWarning):  # the merge reads the previous prices: rejected, said so
        _refresh(shipped, SECOND, monkeypatch, 1.1)
    assert [c for c, _ in _od(shipped)] == ["2026-08/2026-11", "2026-11-20T12:00:00Z", "2026-11-22T12:00:00Z"]


def test_edited_history_file_is_skipped_with_a_warning(
    shipped: OfferTable, monkeypatch: pytest.MonkeyPatch, data_dir: Path
) -> None:
    _refresh(shipped, FIRST, monkeypatch, 1.0)
    _refresh(shipped, SECOND, monkeypatch, 1.1)
    first = store.read_history("azure")[0][0]
    first.write_text(first.read_text().replace("3.673", "0.001"))
    with pytest.warns(store.StoredDataWarning, match="price history"):
        assert [c for c, _ in _od(shipped)] == ["2026-08/2026-11", "2026-11-22T12:00:00Z"]
