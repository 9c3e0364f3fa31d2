"""Bad-input corpus of the service's newer surfaces (webhooks, schedules, uploads, pagination, query strings,
JSON bodies): every case is answered 4xx (never 5xx, never a silent 2xx) with a one-paragraph JSON error
saying what is wrong; the cases that must pass are listed too, so a rule cannot refuse everything.

Each case runs in process against one app (SQLite), with the service's default webhook policy (loopback and
private addresses refused)."""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from gpufleet.errors import InputError
from gpufleet.service import cron, webhooks

from .fixtures import Env, make_env


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    tmp = tmp_path_factory.mktemp("svc-corpus")
    url = f"sqlite:///{tmp / 'service.sqlite3'}"
    from gpufleet.recommend import candidates, perf

    bounds = perf._CALLS_MAX, candidates._CACHE_MAX  # an app sets the process's; put the library's back
    yield from make_env(url, webhook_internal_hosts=False, telemetry_dir=tmp / "telemetry")
    perf._CALLS_MAX, candidates._CACHE_MAX = bounds


def _refused(r: Any, status: int | tuple[int, ...], says: str) -> None:
    statuses = status if isinstance(status, tuple) else (status,)
    assert r.status_code in statuses, (r.status_code, r.text[:400])
    err = r.json()["error"]
    assert err["status"] == r.status_code and "Traceback" not in err["message"]
    assert says.lower() in err["message"].lower(), err["message"]


# --- webhooks: the SSRF policy ------------------------------------------------------------------------------
BAD_WEBHOOK_URLS = [
    ("ftp://example.com/x", "only http"),
    ("file:///etc/passwd", "only http"),
    ("gopher://example.com/", "only http"),
    ("javascript:alert(1)", "only http"),
    ("http:///x", "only http"),
    ("example.com/hook", "only http"),
    ("http://user:pass@example.com/x", "credentials"),
    ("https://token@hooks.slack.com/services/x", "credentials"),
    ("http://ex\u00e4mple.com/h", "not ascii"),
    ("http://\u0435xample.com/h", "not ascii"),  # Cyrillic e
    ("http://127.0.0.1:8080/x", "loopback or private"),
    ("http://127.1.2.3/x", "loopback or private"),
    ("http://localhost/x", "loopback or private"),
    ("http://LOCALHOST./x", "loopback or private"),
    ("http://api.localhost/x", "loopback or private"),
    ("http://[::1]/x", "loopback or private"),
    ("http://[::ffff:127.0.0.1]/x", "loopback or private"),
    ("http://10.0.0.1/", "loopback or private"),
    ("http://172.16.5.4/", "loopback or private"),
    ("http://192.168.1.1/", "loopback or private"),
    ("http://[fc00::1]/", "loopback or private"),
    ("http://100.64.0.1/", "loopback or private"),
    ("http://169.254.169.254/latest/meta-data/", "metadata"),
    ("http://169.254.1.1/", "link-local"),
    ("http://[fe80::1%25eth0]/", "link-local"),
    ("http://[fd00:ec2::254]/", "metadata"),
    ("http://100.100.100.200/", "metadata"),
    ("http://[::ffff:169.254.169.254]/", "metadata"),
    ("http://metadata.google.internal/computeMetadata/v1/", "metadata"),
    ("http://metadata/", "metadata"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://[::]/", "unspecified"),
    ("http://224.0.0.1/", "multicast"),
    ("http://240.0.0.1/", "reserved"),
    ("http://2130706433/", "another notation"),
    ("http://0x7f000001/", "another notation"),
    ("http://0177.0.0.1/", "another notation"),
    ("http://0x7f.1/", "another notation"),
    ("http://exa mple.com/", "space or control"),
    ("http://example.com/a b", "space or control"),
    ("http://\x00/", "space or control"),
    ("https://hooks.slack.com/services/x\r\nHost: evil", "space or control"),
    ("http://example.com\t/x", "space or control"),
    ("http://example.com:99999/", "port"),
    ("http://example.com:abc/", "port"),
    ("http://example.com:0/", "port"),
    ("http://example.com:-1/", "port"),
    ("https://example.com/" + "a" * 2000, "2000"),
]


@pytest.mark.parametrize(("url", "says"), BAD_WEBHOOK_URLS)
def test_webhook_url_refused(svc: Env, url: str, says: str) -> None:
    r = svc.client.post(
        "/api/v1/webhooks", headers=svc.h("a_admin"), json={"url": url, "events": ["job_failed"]}
    )
    _refused(r, (400, 422), says)


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.slack.com/services/T000/B000/XXXX",
        "HTTPS://hooks.slack.com/services/T000/B000/YYYY",
        "https://xn--exmple-cua.com/hook",
        "http://example.com:8080/hook?token=abc",
        "https://8.8.8.8/hook",
        "https://[2001:4860:4860::8888]/hook",
        "https://123.example.com/hook",
    ],
)
def test_webhook_url_public_accepted(svc: Env, url: str) -> None:
    r = svc.client.post(
        "/api/v1/webhooks", headers=svc.h("a_admin"), json={"url": url, "events": ["job_failed"]}
    )
    assert r.status_code == 201, r.text
    svc.client.delete(f"/api/v1/webhooks/{r.json()['id']}", headers=svc.h("a_admin"))


def test_internal_hosts_only_when_the_operator_allows_them() -> None:
    try:
        webhooks.allow_internal_hosts(True)
        assert webhooks.url_problem("http://127.0.0.1:9/x") is None
        assert webhooks.url_problem("http://10.1.2.3/x") is None
        assert webhooks.url_problem("http://localhost:8065/hooks/x") is None
        assert "metadata" in str(webhooks.url_problem("http://169.254.169.254/"))  # never
        assert "metadata" in str(webhooks.url_problem("http://metadata.google.internal/"))
    finally:
        webhooks.allow_internal_hosts(False)
    assert "loopback" in str(webhooks.url_problem("http://127.0.0.1:9/x"))


def test_a_name_resolving_to_the_metadata_service_is_not_posted_to(monkeypatch: pytest.MonkeyPatch) -> None:
    """The policy applies to what a host name resolves to at delivery time (DNS naming 169.254.169.254)."""

    def fake(host: str, port: Any, *a: Any, **k: Any) -> list[Any]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("169.254.169.254", port))]

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    status, error = webhooks._post("https://hooks.example.com/x", {"text": "t"})
    assert status is None and error is not None and error.startswith("Refused:") and "metadata" in error


@pytest.fixture
def hanging_receiver() -> Iterator[str]:
    """A receiver that sends its status line one byte a second and never ends its headers."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            for ch in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 60:
                try:
                    self.wfile.write(bytes([ch]))
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(0.5)

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    server.shutdown()
    server.server_close()


def test_a_receiver_that_hangs_is_abandoned_within_the_try_limit(
    hanging_receiver: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each byte arrives within the per-step timeout, so only the limit of a whole try ends it (the deliveries
    after it are not held)."""
    monkeypatch.setattr(webhooks, "TRY_LIMIT_S", 1.5)
    monkeypatch.setitem(webhooks._POLICY, "internal_hosts", True)
    t0 = time.perf_counter()
    status, error = webhooks._post_bounded(hanging_receiver, {"text": "t"})
    took = time.perf_counter() - t0
    assert status is None and error is not None and "abandoned" in error
    assert took < 3.0, took


# --- schedules: cron strings, names, limits -----------------------------------------------------------------
BAD_CRONS = [
    ("0 0 30 2 *", "matches no time"),
    ("0 0 31 2 *", "matches no time"),
    ("0 0 31 4 *", "matches no time"),
    ("0 0 31 2,4,6,9,11 *", "matches no time"),
    ("61 * * * *", "out of range"),
    ("60 * * * *", "out of range"),
    ("0 24 * * *", "out of range"),
    ("0 0 0 * *", "out of range"),
    ("0 0 32 * *", "out of range"),
    ("0 0 * 0 *", "out of range"),
    ("0 0 * 13 *", "out of range"),
    ("0 0 * * 8", "out of range"),
    ("*/0 * * * *", "at least 1"),
    ("*/61 * * * *", "never repeats"),
    ("0 */25 * * *", "never repeats"),
    ("5-1 * * * *", "out of range"),
    ("-1 * * * *", "not valid"),
    ("1_0 * * * *", "not valid"),
    ("+5 * * * *", "not valid"),
    ("\u0663 * * * *", "not valid"),  # Arabic-Indic 3
    ("\uff15 * * * *", "not valid"),  # full-width 5
    ("*/99999999999999999999999 * * * *", "not valid"),
    ("1.5 * * * *", "not valid"),
    ("0x1 * * * *", "not valid"),
    ("0 0 * * mon", "not valid"),
    ("0 0 * jan *", "not valid"),
    ("0 0 L * *", "not valid"),
    ("0 0 * * 1#2", "not valid"),
    ("1-2-3 * * * *", "not valid"),
    ("*/ * * * *", "not valid"),
    (", * * * *", "not valid"),
    ("* * * * * *", "6 fields"),
    ("* * * *  ", "4 fields"),
    ("@daily@daily", "1 fields"),
]


@pytest.mark.parametrize(("expr", "says"), BAD_CRONS)
def test_cron_refused(svc: Env, expr: str, says: str) -> None:
    body = {"name": "n", "cron": expr, "kind": "findings", "params": {}}
    _refused(svc.client.post("/api/v1/schedules", headers=svc.h("a_admin"), json=body), (400, 422), says)


@pytest.mark.parametrize(
    ("expr", "minutes"), [("*/60 * * * *", {0}), ("0-59/59 * * * *", {0, 59}), ("0 0 29 2 *", {0})]
)
def test_cron_edges_accepted(expr: str, minutes: set[int]) -> None:
    assert set(cron.parse(expr).minutes) == minutes


BAD_SCHEDULE_FIELDS: list[tuple[dict[str, Any], str]] = [
    ({"name": " "}, "blank"),
    ({"name": "\t\n"}, "blank"),
    ({"name": "a\x00b"}, "control"),
    ({"name": "evil\u202eexe.txt"}, "control"),
    ({"name": "zero\u200bwidth"}, "control"),
    ({"name": ""}, "at least 1"),
    ({"name": "x" * 101}, "at most 100"),
    ({"time_limit_s": 0}, "greater than 0"),
    ({"time_limit_s": -1}, "greater than 0"),
    ({"time_limit_s": 86401}, "less than or equal"),
    ({"time_limit_s": 1e308}, "less than or equal"),
    ({"time_limit_s": "nan"}, "valid number"),
    ({"time_limit_s": True}, "time_limit_s"),
    ({"kind": "rm -rf"}, "kind"),
    ({"scope": "world"}, "scope"),
    ({"params": []}, "params"),
    ({"extra": 1}, "extra"),
]


@pytest.mark.parametrize(("change", "says"), BAD_SCHEDULE_FIELDS)
def test_schedule_fields_refused(svc: Env, change: dict[str, Any], says: str) -> None:
    body = {"name": "nightly", "cron": "0 6 * * *", "kind": "findings", "params": {}} | change
    _refused(svc.client.post("/api/v1/schedules", headers=svc.h("a_admin"), json=body), (400, 422), says)


@pytest.mark.parametrize(
    ("route", "body", "says"),
    [
        ("/api/v1/tokens", {"name": "  ", "role": "viewer"}, "blank"),
        ("/api/v1/tokens", {"name": "a\x00b", "role": "viewer"}, "control"),
        ("/api/v1/tokens", {"name": "x\u2066y", "role": "viewer"}, "control"),
        ("/api/v1/fleets", {"name": "a\x00b", "text": "workloads: []"}, "control"),
        ("/api/v1/fleets", {"name": " ", "text": "workloads: []"}, "blank"),
    ],
)
def test_names_refused(svc: Env, route: str, body: dict[str, Any], says: str) -> None:
    _refused(svc.client.post(route, headers=svc.h("a_admin"), json=body), 422, says)


# --- path ids, pagination, query strings --------------------------------------------------------------------
HUGE_IDS = ["9223372036854775808", "99999999999999999999", "-9223372036854775809", "1" + "0" * 40]
ID_ROUTES = [
    ("GET", "/api/v1/jobs/{}"),
    ("GET", "/api/v1/jobs/{}/result"),
    ("GET", "/api/v1/jobs/{}/report"),
    ("POST", "/api/v1/jobs/{}/cancel"),
    ("GET", "/api/v1/schedules/{}"),
    ("GET", "/api/v1/schedules/{}/runs"),
    ("DELETE", "/api/v1/schedules/{}"),
    ("GET", "/api/v1/catalogs/{}"),
    ("DELETE", "/api/v1/catalogs/{}"),
    ("DELETE", "/api/v1/webhooks/{}"),
    ("DELETE", "/api/v1/tokens/{}"),
    ("POST", "/api/v1/fleets/{}/plan"),
]


@pytest.mark.parametrize("huge", HUGE_IDS)
@pytest.mark.parametrize(("method", "route"), ID_ROUTES)
def test_path_id_beyond_64_bits(svc: Env, method: str, route: str, huge: str) -> None:
    r = svc.client.request(method, route.format(huge), headers=svc.h("a_admin"))
    _refused(r, 400, "out of range")


#: ids pydantic's lax int read as 1 (or 10): ``DELETE /api/v1/tokens/1%20`` revoked token 1 (``1e0``, ``0x1``
#: and non-ASCII digits are refused by pydantic itself, 422)
ODD_IDS = ["1%20", "%201", "+1", "%2B1", "1.0", "1_0", "%091"]


@pytest.mark.parametrize("odd", ODD_IDS)
@pytest.mark.parametrize(
    ("method", "route"),
    [("GET", "/api/v1/jobs/{}"), ("DELETE", "/api/v1/tokens/{}"), ("DELETE", "/api/v1/webhooks/{}")],
)
def test_path_id_not_plain_digits(svc: Env, method: str, route: str, odd: str) -> None:
    r = svc.client.request(method, route.format(odd), headers=svc.h("b_admin"))
    _refused(r, 400, "is not an id")


@pytest.mark.parametrize(
    "query",
    [
        "/api/v1/jobs?limit=%205",
        "/api/v1/jobs?limit=5%20",
        "/api/v1/jobs?limit=%2B5",
        "/api/v1/jobs?limit=5.0",
        "/api/v1/jobs?offset=1_0",
        "/api/v1/deliveries?limit=5.0",
        "/api/v1/catalog/changes?limit=%2010",
    ],
)
def test_query_int_not_plain_digits(svc: Env, query: str) -> None:
    """pydantic's lax int read ``limit=5.0`` or ``limit= 5`` as 5."""
    _refused(svc.client.get(query, headers=svc.h("a_admin")), 400, "not a whole number as written")


@pytest.mark.parametrize("route", ["/api/v1/jobs/0", "/api/v1/jobs/-1", "/api/v1/jobs/9223372036854775807"])
def test_path_id_in_range_but_absent_is_404(svc: Env, route: str) -> None:
    _refused(svc.client.get(route, headers=svc.h("a_admin")), 404, "no job")


BAD_QUERIES = [
    ("/api/v1/catalog/offers?limit=1&limit=2", "given 2 times"),
    ("/api/v1/catalog/offers?sort=price&sort=bogus", "given 2 times"),
    ("/api/v1/catalog/offers?offset=0&offset=5", "given 2 times"),
    ("/api/v1/catalog/offers?spot=true&spot=false", "given 2 times"),
    ("/api/v1/catalog/offers?limt=5", "not taken"),
    ("/api/v1/catalog/offers?gpu_type=H100", "not taken"),
    ("/api/v1/catalog/offers?sort=bogus", "unknown sort key"),
    ("/api/v1/catalog/offers?order=up", "asc"),
    ("/api/v1/catalog/offers?offset=-1", "greater than or equal"),
    ("/api/v1/catalog/offers?offset=1000000000000000000", "less than or equal"),
    ("/api/v1/catalog/offers?offset=99999999999999999999999", "less than or equal"),
    ("/api/v1/catalog/offers?limit=0", "greater than or equal"),
    ("/api/v1/catalog/offers?limit=-5", "greater than or equal"),
    ("/api/v1/catalog/offers?limit=1e3", "integer"),
    ("/api/v1/catalog/offers?limit=NaN", "integer"),
    ("/api/v1/catalog/offers?min_gpu_memory_gib=nan", "min_gpu_memory_gib"),
    ("/api/v1/catalog/offers?min_gpu_memory_gib=inf", "min_gpu_memory_gib"),
    ("/api/v1/catalog/offers?max_price_usd_per_hour=-1", "greater than"),
    ("/api/v1/catalog/offers?gpus=0", "greater than"),
    ("/api/v1/catalog/offers?gpu=", "empty value"),
    ("/api/v1/catalog/offers?gpu=h1000", "unknown gpu"),
    ("/api/v1/jobs?limit=1&limit=2", "given 2 times"),
    ("/api/v1/jobs?offset=1000000000000000000", "less than or equal"),
    ("/api/v1/jobs?offset=-5", "greater than or equal"),
    ("/api/v1/jobs?status=bogus", "pattern"),
    ("/api/v1/jobs?sort=created", "not taken"),
    ("/api/v1/jobs?order_by=id", "not taken"),
    ("/api/v1/catalog/changes?offset=99999999999999999999", "less than or equal"),
    ("/api/v1/catalog/changes?offset=1000000000000000000", "less than or equal"),
    ("/api/v1/catalog/changes?min_change_fraction=nan", "min_change_fraction"),
    ("/api/v1/catalog/changes?limit=2&limit=3", "given 2 times"),
    # were 200 with an empty list, as if no price had changed (a typo or a blank filter)
    ("/api/v1/catalog/changes?provider=nope", "unknown price-api provider"),
    ("/api/v1/catalog/changes?provider=awss", "did you mean: aws"),
    ("/api/v1/catalog/changes?provider=lambda", "refreshes of aws, azure and gcp"),
    ("/api/v1/catalog/changes?provider=", "unknown price-api provider"),
    ("/api/v1/catalog/changes?provider=%20", "unknown price-api provider"),
    ("/api/v1/catalog/changes?instance_type=", "blank"),
    ("/api/v1/catalog/changes?instance_type=%20%20", "blank"),
    ("/api/v1/deliveries?offset=99999999999999999999", "less than or equal"),
    ("/api/v1/deliveries?offset=-1", "greater than or equal"),
    ("/api/v1/deliveries?limit=501", "less than or equal"),
    ("/api/v1/schedules?page=2", "not taken"),
    ("/api/v1/webhooks?limit=5", "not taken"),
    ("/api/v1/catalog/history?provider=aws&instance=p5.48xlarge&region=us-east-1&days=0", "greater than"),
    ("/api/v1/catalog/history?provider=aws&provider=gcp&instance=x&region=y", "given 2 times"),
    ("/api/v1/telemetry/findings?lookback_days=0", "greater than"),
    ("/api/v1/telemetry/findings?percentile=1", "less than"),
    ("/api/v1/telemetry/alerts?step_s=0", "greater than"),
]


@pytest.mark.parametrize(("query", "says"), BAD_QUERIES)
def test_query_refused(svc: Env, query: str, says: str) -> None:
    _refused(svc.client.get(query, headers=svc.h("a_admin")), (400, 404, 422), says)


@pytest.mark.parametrize(
    "query",
    [
        "/api/v1/catalog/offers?gpu=H100&gpu=A100&limit=3",
        "/api/v1/catalog/offers?provider=aws&provider=gcp&limit=2&offset=1",
        "/api/v1/catalog/offers?offset=10000000",
        "/api/v1/jobs?limit=500&offset=10000000",
        "/api/v1/catalog/changes?provider=AWS&instance_type=p5.48xlarge",
        "/api/v1/catalog/changes?provider=gcp",
    ],
)
def test_list_keys_may_repeat(svc: Env, query: str) -> None:
    assert svc.client.get(query, headers=svc.h("a_admin")).status_code == 200


# --- JSON bodies --------------------------------------------------------------------------------------------
JSON = {"Content-Type": "application/json"}
BAD_BODIES: list[tuple[str, bytes, dict[str, str], int, str]] = [
    (
        "/api/v1/webhooks",
        b'{"url": "https://example.com/a", "url": "https://example.com/b"}',
        JSON,
        422,
        "duplicate key 'url'",
    ),
    (
        "/api/v1/schedules",
        b'{"name": "a", "name": "b", "cron": "0 0 * * *", "kind": "findings"}',
        JSON,
        422,
        "duplicate key",
    ),
    ("/api/v1/jobs", b'{"kind": "simulate", "params": {"a": 1, "a": 2}}', JSON, 422, "duplicate key"),
    ("/api/v1/jobs", b'{"kind": "plan", "params": ' + b"[" * 5000 + b"]" * 5000 + b"}", JSON, 422, "nesting"),
    (
        "/api/v1/jobs",
        b'{"kind": "plan", "params": ' + b'{"a":' * 100 + b"1" + b"}" * 100 + b"}",
        JSON,
        422,
        "nesting",
    ),
    ("/api/v1/webhooks", b'{"url": "https://ex\xff.com/"}', JSON, 422, "not utf-8"),
    ("/api/v1/webhooks", '{"url": "https://caf\u00e9.com/"}'.encode("latin-1"), JSON, 422, "not utf-8"),
    ("/api/v1/webhooks", '{"url": "https://example.com/"}'.encode("utf-16"), JSON, 422, "not utf-8"),
    ("/api/v1/webhooks", b'\xef\xbb\xbf{"url": "https://example.com/"}', JSON, 422, "byte-order mark"),
    (
        "/api/v1/webhooks",
        b'{"url": "https://example.com/", "min_saving_usd_per_month": NaN}',
        JSON,
        422,
        "nan",
    ),
    ("/api/v1/jobs", b'{"kind": "simulate", "params": {"x": Infinity}}', JSON, 422, "infinity"),
    ("/api/v1/jobs", b'{"kind": "simulate", "params": {"x": -Infinity}}', JSON, 422, "infinity"),
    (
        "/api/v1/jobs",
        b'{"kind": "simulate", "params": {"x": ' + b"9" * 5000 + b"}}",
        JSON,
        422,
        "4,300 digits",
    ),
    ("/api/v1/jobs", b'{"kind": "simulate",', JSON, 422, "not valid json"),
    ("/api/v1/jobs", b"{'kind': 'simulate'}", JSON, 422, "not valid json"),
    ("/api/v1/jobs", b'{"kind": "simulate"} {"kind": "plan"}', JSON, 422, "extra data"),
    (
        "/api/v1/webhooks",
        b'{"url": "https://example.com/"}',
        {"Content-Type": "application/json; charset=utf-16"},
        (201, 400),
        "",
    ),
    ("/api/v1/schedules", b'{"name": "x", "cron": "0 0 * * *", "kind": "findings"}', {}, 422, "content-type"),
    (
        "/api/v1/schedules",
        b'{"name": "x", "cron": "0 0 * * *", "kind": "findings"}',
        {"Content-Type": "text/plain"},
        422,
        "content-type",
    ),
    (
        "/api/v1/schedules",
        b"name=x&cron=0",
        {"Content-Type": "application/x-www-form-urlencoded"},
        422,
        "content-type",
    ),
    ("/api/v1/schedules", b"[]", JSON, 422, "dictionary"),
    ("/api/v1/schedules", b"null", JSON, 422, "dictionary"),
    ("/api/v1/schedules", b'"text"', JSON, 422, "dictionary"),
    ("/api/v1/schedules", b"", JSON, 422, "required"),
]


@pytest.mark.parametrize(("route", "body", "headers", "status", "says"), BAD_BODIES)
def test_body_refused(
    svc: Env, route: str, body: bytes, headers: dict[str, str], status: Any, says: str
) -> None:
    r = svc.client.post(route, headers=svc.h("a_admin") | headers, content=body)
    if status == (201, 400):  # a declared charset other than UTF-8 on a UTF-8 body: either is fine, never 5xx
        assert r.status_code in status, r.text
        return
    _refused(r, status, says)


# --- telemetry uploads --------------------------------------------------------------------------------------
SMI_HEADER = (
    "timestamp, index, uuid, name, memory.total [MiB], memory.used [MiB], utilization.gpu [%], "
    "power.draw [W]\n"
)


def _smi_row(day: int, util: str = "10 %", power: str = "69.85 W", used: str = "0 MiB") -> str:
    gpu = "0, GPU-aaaa, NVIDIA H100 80GB HBM3, 81559 MiB"
    return f"2026/07/{day:02d} 08:12:38.696, {gpu}, {used}, {util}, {power}\n"


BAD_UPLOADS: list[tuple[str, bytes, dict[str, str], str]] = [
    ("empty.csv", b"", {}, "cannot tell the format"),
    ("header.csv", SMI_HEADER.encode(), {"timezone": "UTC"}, "holds no samples"),
    ("cols.csv", b"a,b,c\n1,2,3\n", {}, "cannot tell the format"),
    ("cols.csv", b"a,b,c\n1,2,3\n", {"input_format": "nvidia-smi", "timezone": "UTC"}, "lacks 'timestamp'"),
    ("smi.csv", (SMI_HEADER + _smi_row(1)).encode(), {}, "--timezone"),
    ("smi.csv", (SMI_HEADER + _smi_row(1)).encode(), {"timezone": "Mars/Base"}, "time zone"),
    ("smi.csv", (SMI_HEADER + _smi_row(1)).encode(), {"timezone": "../../etc/passwd"}, "time zone"),
    ("smi.csv", (SMI_HEADER + _smi_row(1)).encode(), {"timezone": "UTC", "host": " "}, "blank"),
    (
        "latin1.csv",
        (SMI_HEADER + _smi_row(1).replace("NVIDIA", "NVIDI\u00c4")).encode("latin-1"),
        {},
        "not utf-8",
    ),
    ("nul.csv", (SMI_HEADER + _smi_row(1)).encode().replace(b"GPU-aaaa", b"GPU-\x00"), {}, "nul bytes"),
    ("smi.csv.gz", b"\x1f\x8b\x08\x00" + b"\x00" * 64, {}, "binary"),
    ("smi.zip", b"PK\x03\x04" + b"\x00" * 100, {}, "binary"),
    ("smi.parquet", b"PAR1" + b"\x00" * 100 + b"PAR1", {}, "binary"),
    ("bytes.bin", bytes(range(256)) * 4, {}, "binary"),
    (
        "x.prom",
        b'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",hostname="n1"} NaN 1784009558000\n',
        {},
        "missing_value",
    ),
    (
        "x.prom",
        b'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",hostname="n1"} 5 -1784009558000\n',
        {},
        "before_epoch",
    ),
    (
        "x.prom",
        b'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",hostname="n1"} 5 99999999999999999999\n',
        {},
        "clock_skew",
    ),
    (
        "x.prom",
        b'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",hostname="n1"} 5 32503680000000\n',
        {},
        "clock_skew",
    ),
    ("x.json", b'{"status": "success", "status": "x"}', {"input_format": "prom-json"}, "duplicate key"),
    ("x.json", b"[" * 10000 + b"]" * 10000, {"input_format": "prom-json"}, "nesting"),
    ("x.csv", b"x" * 200_000, {}, "cannot tell the format"),
    ("x.csv", (SMI_HEADER + _smi_row(1)).encode(), {"input_format": "parquet"}, "unknown input format"),
    ("../../etc/passwd", b"", {}, "cannot tell the format"),
]


@pytest.mark.parametrize(("name", "data", "form", "says"), BAD_UPLOADS)
def test_telemetry_upload_refused_without_server_paths(
    svc: Env, name: str, data: bytes, form: dict[str, str], says: str
) -> None:
    r = svc.client.post(
        "/api/v1/telemetry/ingest", headers=svc.h("a_editor"), files={"file": (name, data)}, data=form
    )
    _refused(r, (400, 404, 422), says)
    assert "gpufleet-upload-" not in r.text and "/tmp/" not in r.text, r.text  # the server's temporary folder


def test_telemetry_upload_report_names_the_upload(svc: Env) -> None:
    data = (SMI_HEADER + _smi_row(20) + _smi_row(20) + _smi_row(21, util="-5 %")).encode()
    r = svc.client.post(
        "/api/v1/telemetry/ingest",
        headers=svc.h("a_editor"),
        files={"file": ("gpus.csv", data)},
        data={"timezone": "UTC"},
    )
    assert r.status_code == 200, r.text
    report = r.json()["report"]
    assert report["sources"] == ["gpus.csv"] and "gpufleet-upload-" not in r.text
    kinds = {p["kind"] for p in report["problems"]}
    assert {"duplicate_sample", "out_of_range"} <= kinds  # a repeated row and a negative utilisation, counted


# --- the helpers, directly ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "host", ["2130706433", "0x7f000001", "017700000001", "127.1", "0x7f.0.0.1", "10.0.0.1."]
)
def test_numeric_hosts_in_other_notations(host: str) -> None:
    assert webhooks.host_problem(host) is not None


@pytest.mark.parametrize("host", ["hooks.slack.com", "123.example.com", "0xdeadbeef.example.com", "8.8.8.8"])
def test_public_hosts(host: str) -> None:
    assert webhooks.host_problem(host) is None


def test_every_refusal_of_check_webhook_is_an_input_error() -> None:
    for url, _ in BAD_WEBHOOK_URLS:
        with pytest.raises(InputError):
            webhooks.check_webhook(url, "slack", ["job_failed"])


def test_address_problem_covers_ipv4_mapped() -> None:
    assert "metadata" in str(webhooks.address_problem(ipaddress.ip_address("::ffff:169.254.169.254")))


def test_corpus_size() -> None:
    """The corpus is several hundred cases (the brief); each runs in process."""
    n = (
        len(BAD_WEBHOOK_URLS)
        + len(BAD_CRONS)
        + len(BAD_SCHEDULE_FIELDS)
        + len(HUGE_IDS) * len(ID_ROUTES)
        + len(BAD_QUERIES)
        + len(BAD_BODIES)
        + len(BAD_UPLOADS)
    )
    assert n >= 200, n


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("/api/v1/jobs", {"kind": "findings", "params": {}, "time_limit_s": True}),
        ("/api/v1/plan", {"fleet": {}, "solver_time_limit_s": True}),
        ("/api/v1/plan", {"fleet": {}, "time_limit_s": False}),
        ("/api/v1/webhooks", {"url": "https://example.com/x", "min_saving_usd_per_month": True}),
        ("/api/v1/webhooks", {"url": "https://example.com/x", "min_price_change_fraction": "0.1"}),
    ],
)
def test_booleans_and_strings_are_not_numbers(svc: Env, route: str, body: dict[str, Any]) -> None:
    """``true`` was read as 1 s (a job stopped after one second), a string as its number."""
    _refused(svc.client.post(route, headers=svc.h("a_admin"), json=body), 422, "valid number")


@pytest.mark.parametrize(
    ("route", "field"),
    [
        ("/api/v1/estimate/infer", "tp"),
        ("/api/v1/estimate/infer", "gpu_count"),
        ("/api/v1/estimate/infer", "batch"),
        ("/api/v1/estimate/infer", "input_len_tokens"),
        ("/api/v1/estimate/memory", "pp"),
        ("/api/v1/estimate/memory", "dp"),
        ("/api/v1/estimate/memory", "seq_len_tokens"),
        ("/api/v1/estimate/train", "gpu_count"),
        ("/api/v1/estimate/train", "seq_len_tokens"),
    ],
)
def test_estimate_counts_refuse_booleans(svc: Env, route: str, field: str) -> None:
    """``"tp": true`` was read as 1 (pydantic's lax int) and answered 200."""
    body = {"model": "llama-3.1-8b", "gpu": "H100-SXM", field: True}
    _refused(
        svc.client.post(route, headers=svc.h("a_viewer"), json=body), 422, f"{field}: got the boolean true"
    )


def test_a_catalog_override_matching_no_offer_is_refused_at_upload(svc: Env) -> None:
    """It was kept (201), then every recommend, plan and offer query of the team failed on it."""
    text = (
        "price_overrides:\n  - provider: aws\n    instance_type: nope.48xlarge\n    discount_fraction: 0.1\n"
    )
    r = svc.client.post("/api/v1/catalogs", headers=svc.h("a_editor"), json={"name": "ov.yaml", "text": text})
    _refused(r, 422, "matches no offer")
    assert "gpufleet-catalogs-" not in r.text and "/tmp/" not in r.text
