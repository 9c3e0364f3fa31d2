"""The dashboard's query strings and forms under bad values (the API's are in test_fuzz.py and
test_bad_input_corpus.py): never a 5xx, and the catalog page refuses what it cannot honour.

Before the fix, ``GET /catalog`` answered 200 with a silent answer for:

- ``sort=nope`` (or ``price_spot``): sorted by price per GPU under the words "sorted by nope";
- ``spot=0`` (any non-empty value): spot prices only;
- ``page=-3`` / ``page=abc``: the first page; ``page=99999``: "No offer matches these filters" (they match;
  the page is beyond the last);
- ``max_price_usd_per_hour=inf`` (or ``1e309``): no limit; ``1_0``: read as 10 (Python's digit separator).

Each is now a 400 page naming the value and what is allowed. The generated part sends every filter of
every dashboard page and every field of the schedule and notification forms a list of odd values.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from .fixtures import Env, make_env
from .test_dashboard import sign_in

ODD = [
    "",
    " ",
    "-1",
    "0",
    "1e309",
    "nan",
    "inf",
    "-0.0",
    "1.5",
    "99999999999999999999999",
    "80GB",
    "1.5h",
    "200ms",
    "150%",
    "\x00",
    "a" * 3000,
    "' OR 1=1 --",
    "../../etc/passwd",
    "é",
    "[/]",
    "{{7*7}}",
    "1,5",
    "٥",
]


@pytest.fixture(scope="module")
def dash(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Env, str]]:
    tmp: Path = tmp_path_factory.mktemp("dash-params")
    for env in make_env(f"sqlite:///{tmp / 'service.sqlite3'}", telemetry_dir=tmp / "telemetry"):
        yield env, sign_in(env.client, env.tokens["a_admin"])


def _text(html: str) -> str:
    html = re.sub(r"<style.*?</style>", "", html, flags=re.S)
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"sort": "nope"}, "Unknown sort key"),
        ({"sort": "price_spot", "spot": "1"}, "Unknown sort key"),
        ({"spot": "maybe"}, "spot='maybe' is not allowed"),
        ({"page": "-3"}, "is not a page number"),
        ({"page": "abc"}, "is not a page number"),
        ({"page": "1.5"}, "is not a page number"),
        ({"page": "٣"}, "is not a page number"),
        ({"page": "99999"}, "beyond the last page"),
        ({"gpu": "h100", "page": "16"}, "beyond the last page"),
        ({"max_price_usd_per_hour": "inf"}, "finite number"),
        ({"max_price_usd_per_hour": "1e309"}, "finite number"),
        ({"max_price_usd_per_hour": "1_0"}, "is not a number"),
        ({"max_price_usd_per_hour": "x"}, "is not a number"),
        ({"max_price_usd_per_hour": "-1"}, "max_price_usd_per_hour"),
    ],
)
def test_catalog_page_refuses(dash: tuple[Env, str], params: dict[str, str], says: str) -> None:
    env, _ = dash
    r = env.client.get("/catalog", params=params)
    assert r.status_code == 400, (r.status_code, _text(r.text)[:300])
    assert says in _text(r.text).replace("&#x27;", "'"), _text(r.text)[:400]


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({}, "showing 1-50, sorted by price_per_gpu"),
        ({"sort": ""}, "sorted by price_per_gpu"),
        ({"sort": "price"}, "sorted by price."),
        ({"page": "1"}, "showing 51-100"),
        ({"page": ""}, "showing 1-50"),
        ({"spot": "0"}, "on-demand price"),
        ({"spot": "1"}, "spot price"),
        ({"spot": "on"}, "spot price"),
        ({"max_price_usd_per_hour": " 5 "}, "offers match"),
        ({"gpu": "h100", "page": "0"}, "offers match"),
    ],
)
def test_catalog_page_still_answers(dash: tuple[Env, str], params: dict[str, str], says: str) -> None:
    env, _ = dash
    r = env.client.get("/catalog", params=params)
    assert r.status_code == 200, (r.status_code, _text(r.text)[:300])
    assert says in _text(r.text), _text(r.text)[:600]


GET_FIELDS = {
    "/catalog": ["gpu", "provider", "region", "sort", "spot", "max_price_usd_per_hour", "page"],
    "/catalog/history": ["days", "provider", "instance", "region"],
    "/jobs": ["status", "limit"],
    "/findings": ["lookback_days", "percentile"],
    "/": ["page"],
}
GET_CASES = [(path, field, value) for path, fields in GET_FIELDS.items() for field in fields for value in ODD]


@pytest.mark.parametrize(("path", "field", "value"), GET_CASES)
def test_dashboard_filters_never_5xx(dash: tuple[Env, str], path: str, field: str, value: str) -> None:
    env, _ = dash
    base = {"provider": "aws", "instance": "p5.48xlarge", "region": "us-east-1"} if "history" in path else {}
    r = env.client.get(path, params=base | {field: value})
    assert r.status_code < 500, (r.status_code, r.text[:300])
    if path == "/catalog" and field in ("sort", "spot", "page", "max_price_usd_per_hour") and value.strip():
        # none of the odd values is a sort key, a checkbox value, a page number or a finite positive price
        # (but "0" is a page and "1.5" a price; "-0.0"/"0" prices are refused as not positive)
        allowed = {("page", "0"), ("max_price_usd_per_hour", "1.5"), ("spot", "0")}
        if (field, value) not in allowed:
            assert r.status_code == 400, (field, value, _text(r.text)[:300])


FORMS = {
    "/schedules": {"cron": "0 * * * *", "name": "s1", "kind": "findings", "params": "{}", "scope": "team"},
    "/notifications": {
        "url": "https://example.com/hook",
        "format": "json",
        "events": "job.finished",
        "min_price_change_percent": "",
        "min_saving_usd_per_month": "",
    },
}
FORM_CASES = [(path, field, value) for path, form in FORMS.items() for field in form for value in ODD]


@pytest.mark.parametrize(("path", "field", "value"), FORM_CASES)
def test_dashboard_forms_never_5xx(dash: tuple[Env, str], path: str, field: str, value: str) -> None:
    env, csrf = dash
    r = env.client.post(path, data=FORMS[path] | {field: value, "csrf": csrf}, follow_redirects=False)
    assert r.status_code < 500, (r.status_code, r.text[:300])


# ---- API request bodies with a Content-Encoding (read as if plain: a gzip body was "not UTF-8", a plain one
# labelled gzip answered 200) ---------------------------------------------------------------------------
@pytest.mark.parametrize("encoding", ["gzip", "br", "deflate", "zstd", "gzip, identity", "x"])
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzipped"])
def test_api_body_with_a_content_encoding_is_415(
    dash: tuple[Env, str], encoding: str, compress: bool
) -> None:
    import gzip
    import json

    env, _ = dash
    body = json.dumps({"model": "llama-3-8b", "gpu": "h100"}).encode()
    r = env.client.post(
        "/api/v1/estimate/memory",
        content=gzip.compress(body) if compress else body,
        headers=env.h("a_admin") | {"content-type": "application/json", "content-encoding": encoding},
    )
    assert r.status_code == 415, (r.status_code, r.text[:300])
    assert (
        "Content-Encoding" in r.json()["error"]["message"] and "uncompressed" in r.json()["error"]["message"]
    )


@pytest.mark.parametrize("encoding", ["identity", "IDENTITY", ""])
def test_api_body_identity_encoding_passes(dash: tuple[Env, str], encoding: str) -> None:
    env, _ = dash
    r = env.client.post(
        "/api/v1/estimate/memory",
        json={"model": "llama-3-8b", "gpu": "h100"},
        headers=env.h("a_admin") | {"content-encoding": encoding},
    )
    assert r.status_code == 200, (r.status_code, r.text[:300])
