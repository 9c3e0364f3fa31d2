"""Fuzz the public API from its own OpenAPI document (schemathesis-style, with a strategy written here from
the schema: hypothesis-jsonschema and schemathesis are not dependencies). For every operation with a JSON
body: arbitrary JSON, and objects shaped like the schema with wrong types, out-of-range numbers, huge and odd
strings, missing required fields and unknown ones. Every answer must be a 4xx (or a 2xx) with a JSON error,
never 5xx. Query strings of the listing routes get the same treatment, SQL metacharacters included."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .fixtures import Env, make_env

ODD_TEXT = st.sampled_from(
    [
        "",
        " ",
        "' OR 1=1 --",
        '"; DROP TABLE jobs; --',
        "../../etc/passwd",
        "%00",
        "\x00",
        "NaN",
        "inf",
        "-1",
        "1e309",
        "☃" * 50,
        "a" * 5000,
        "{{7*7}}",
        "<script>alert(1)</script>",
        "llama-3.1-8b",
        "H100",
        "aws",
    ]
)
JSON_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
    ODD_TEXT,
)
ANY_JSON = st.recursive(
    JSON_LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def fuzz_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    url = f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'service.sqlite3'}"
    yield from make_env(url)


def _resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = doc["components"]["schemas"][name]
    return schema


def _value(doc: dict[str, Any], schema: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values near the schema: right-typed or not, in range or not."""
    schema = _resolve(doc, schema)
    options: list[st.SearchStrategy[Any]] = [JSON_LEAF]
    if depth < 3:
        for sub in schema.get("anyOf", []) + schema.get("oneOf", []):
            options.append(_value(doc, sub, depth + 1))
    t = schema.get("type")
    if t == "object" and depth < 3:
        options.append(_object(doc, schema, depth + 1))
    elif t == "array" and depth < 3:
        options.append(st.lists(_value(doc, schema.get("items", {}), depth + 1), max_size=3))
    elif t in ("integer", "number"):
        options.append(st.integers(min_value=-10, max_value=10**7))
        options.append(st.floats(min_value=-1e3, max_value=1e12, allow_nan=False))
    elif t == "string" or "enum" in schema:
        options.append(st.sampled_from(schema.get("enum") or ["x"]))
        options.append(ODD_TEXT)
    return st.one_of(options)


def _object(doc: dict[str, Any], schema: dict[str, Any], depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    props: dict[str, Any] = schema.get("properties", {})
    if not props:
        return st.dictionaries(st.text(max_size=10), ANY_JSON, max_size=4)
    fields = {name: _value(doc, sub, depth) for name, sub in props.items()}
    return st.fixed_dictionaries({}, optional=fields | {"unknown_field_x": ANY_JSON})


def _operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for path, item in doc["paths"].items():
        for method, op in item.items():
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            if body is not None:
                out.append((method, path, body))
    return out


def _check(r: Any, where: str) -> None:
    assert r.status_code < 500, f"{where}: {r.status_code} {r.text[:500]}"
    if r.status_code >= 400:
        err = r.json()["error"]
        assert err["message"] and "Traceback" not in err["message"], where


def test_openapi_has_the_fuzzed_operations(fuzz_env: Env) -> None:
    doc = fuzz_env.client.get("/openapi.json").json()
    ops = {(m, p) for m, p, _ in _operations(doc)}
    assert {
        ("post", "/api/v1/recommend"),
        ("post", "/api/v1/plan"),
        ("post", "/api/v1/jobs"),
        ("post", "/api/v1/estimate/memory"),
        ("post", "/api/v1/fleets"),
        ("post", "/api/v1/tokens"),
    } <= ops


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_bad_bodies_are_4xx_never_5xx(fuzz_env: Env, data: st.DataObject) -> None:
    c = fuzz_env.client
    doc = c.get("/openapi.json").json()
    method, path, schema = data.draw(st.sampled_from(_operations(doc)), label="operation")
    body = data.draw(st.one_of(ANY_JSON, _value(doc, schema)), label="body")
    url = (
        path.replace("{job_id}", "1")
        .replace("{fleet_id}", "1")
        .replace("{token_id}", "999")
        .replace("{name}", "x")
    )
    r = c.request(method, url, json=body, headers=fuzz_env.h("a_admin"))
    _check(r, f"{method.upper()} {path} {body!r:.300}")


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    params=st.dictionaries(
        st.sampled_from(
            [
                "gpu",
                "provider",
                "region",
                "geo",
                "provider_class",
                "sort",
                "order",
                "limit",
                "offset",
                "min_gpu_memory_gib",
                "gpus",
                "spot",
                "max_price_usd_per_hour",
                "status",
            ]
        ),
        st.one_of(ODD_TEXT, st.text(max_size=20), st.integers().map(str)),
        max_size=4,
    )
)
def test_odd_query_strings_are_4xx_never_5xx(fuzz_env: Env, params: dict[str, str]) -> None:
    for path in ("/api/v1/catalog/offers", "/api/v1/jobs"):
        _check(fuzz_env.client.get(path, params=params, headers=fuzz_env.h("a_viewer")), f"{path} {params}")
