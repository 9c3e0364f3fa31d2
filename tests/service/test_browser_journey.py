"""A new user's day one, from the dashboard alone (issue 24, "Done when", third bullet), in the system
Chromium (Playwright) against a real `gpufleet serve` process.

Outside the browser the test only starts the service, creates the team's token with the CLI as the README says
(`gpufleet serve token create --team ml-platform --role admin`, and a viewer's), and listens for the webhook
on 127.0.0.1. The
service's data folder holds the price history a platform's scheduled catalog refreshes leave behind (two aws
refreshes of p5.48xlarge in us-east-1, written by the library's own refresh writer before the service starts:
a refresh needs the providers' price APIs, which tests never reach).

In the browser the user signs in with the token; uploads a telemetry file and sees what was stored; reads the
team's cost per month and findings on the overview; gets a recommendation from the form; uploads a fleet file,
watches the plan job's progress until it succeeds and finds its cost on the overview; opens an offer's price
history chart from the catalog; sets a webhook for new savings of at least 3,000 USD/month; runs findings.
Every figure read is asserted against the same call through the library, and the receiver must get exactly
the new savings the library's findings give above the threshold. Then a viewer of the team sees the same
figures and no editor or admin action. No fixed sleeps: each step waits for a state (the notifications page,
which does not reload itself, is reloaded until the delivery is recorded), with generous timeouts for a loaded
2-core machine: 28-48 s for the test and 8-20 s to start at loads of 2-14.
"""

from __future__ import annotations

import dataclasses
import json
import re
import runpy
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from .test_browser import CHROMIUM, FLEET, serve_process

ROOT = Path(__file__).resolve().parents[2]
TEAM = "ml-platform"
#: `gpufleet`, as the process running the tests has it
CLI = (sys.executable, "-c", "from gpufleet.cli.entry import main; main()")
#: the webhook's threshold [USD/month]: some of the example fleet's savings are above it, some below
MIN_SAVING_USD_PER_MONTH = 3000.0
#: Playwright's default wait for a state [ms] (a loaded 2-core machine; a plan or findings job: JOB_WAIT_MS)
WAIT_MS = 30_000
JOB_WAIT_MS = 90_000
#: the recommend form's workload, as the form sends it (its other fields left empty)
WORKLOAD = {"model": "llama-3.1-8b", "target_requests_per_s": 2.0, "pricing": "on_demand"}
#: the seeded price history: (days before now, factor on the shipped price) of each refresh
REFRESHES = ((30, 1.0), (3, 0.9))


@dataclass(frozen=True)
class Journey:
    base: str
    token: str  # the team's admin
    viewer: str  # a viewer of the same team
    telemetry: Path
    data_dir: Path
    hooks: _Receiver


class _Receiver(ThreadingHTTPServer):
    """A webhook receiver on 127.0.0.1: every POST's path and JSON body, in arrival order."""

    def __init__(self) -> None:
        self.got: list[tuple[str, dict[str, Any]]] = []
        self.arrived = threading.Event()
        super().__init__(("127.0.0.1", 0), _Hook)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hooks/savings"


class _Hook(BaseHTTPRequestHandler):
    server: _Receiver

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        self.server.got.append((self.path, body))
        self.send_response(200)
        self.end_headers()
        self.server.arrived.set()

    def log_message(self, *_: object) -> None:  # quiet
        pass


def _seed_price_history(data_dir: Path) -> None:
    """Two dated refreshes of aws p5.48xlarge in us-east-1 in ``data_dir``, as `gpufleet catalog update`
    writes them (the library's writer); the second 10 % cheaper."""
    from gpufleet.catalog.fetch.normalise import RefreshResult
    from gpufleet.catalog.fetch.pipeline import write_result
    from gpufleet.catalog.offers import load_shipped_offers

    shipped = load_shipped_offers()
    rows = [
        o
        for o in shipped.records()
        if (o.provider, o.instance_type, o.region) == ("aws", "p5.48xlarge", "us-east-1")
    ]
    assert rows, "the shipped catalog lists aws p5.48xlarge in us-east-1"
    now = datetime.now(UTC)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPUFLEET_DATA_DIR", str(data_dir))
        for days, factor in REFRESHES:
            at = (now - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")
            offers = tuple(
                dataclasses.replace(
                    o,
                    price_on_demand_usd_per_hour=o.price_on_demand_usd_per_hour * factor,
                    price_spot_usd_per_hour=(
                        None if o.price_spot_usd_per_hour is None else o.price_spot_usd_per_hour * factor
                    ),
                    captured_at=at,
                )
                for o in rows
            )
            result = RefreshResult(
                provider="aws",
                regions=("us-east-1",),
                offers=offers,
                rates=(),
                rows_read=len(offers),
                unmapped={},
                skipped={},
                captured_at=at,
                source="aws price list (seeded by the test)",
            )
            write_result(result, shipped)


@pytest.fixture(scope="module")
def journey(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Journey]:
    tmp = tmp_path_factory.mktemp("journey")
    data_dir = tmp / "data"
    _seed_price_history(data_dir)
    argv = sys.argv
    try:  # the seeded example fleet of docs/telemetry.md: 10 H100 GPUs over 2 days (dcgm-exporter text)
        sys.argv = ["make_telemetry_example.py", str(tmp / "ex"), "--days", "2"]
        runpy.run_path(str(ROOT / "tools" / "make_telemetry_example.py"), run_name="__main__")
    finally:
        sys.argv = argv
    db = tmp / "service.sqlite3"
    env = {"GPUFLEET_DATA_DIR": str(data_dir)}
    hooks = _Receiver()
    threading.Thread(target=hooks.serve_forever, daemon=True).start()
    try:
        with serve_process(db, env) as (base, _):
            admin = _cli_token(db, env, "admin", "journey")
            viewer = _cli_token(db, env, "viewer", "journey-viewer")
            yield Journey(base, admin, viewer, tmp / "ex" / "dcgm.prom", data_dir, hooks)
    finally:
        hooks.shutdown()
        hooks.server_close()


def _cli_token(db: Path, env: dict[str, str], role: str, name: str) -> str:
    """A token of the team made as the README says: `gpufleet serve token create --team T --role R`."""
    import os

    out = subprocess.run(
        [*CLI, "serve", "token", "create", "--team", TEAM, "--role", role, "--name", name, "--db", str(db)],
        capture_output=True,
        text=True,
        env=os.environ | env,
        timeout=120,
        check=True,
    ).stdout
    token = re.search(rf"\({role} of team {TEAM}, '{name}'\): (gpf_\S+)", out)
    assert token, out
    return token.group(1)


def _library_findings(telemetry: Path, store_dir: Path) -> tuple[Any, Any]:
    """(findings, summary) of the file through the library, as `gpufleet telemetry findings` (14 days, p95,
    20 % headroom)."""
    from gpufleet.telemetry.analyze import gpu_stats, resolve_window
    from gpufleet.telemetry.findings import Thresholds, find
    from gpufleet.telemetry.ingest import ingest_files
    from gpufleet.telemetry.store import TelemetryStore
    from gpufleet.telemetry.summary import summarize

    store = TelemetryStore(store_dir)
    ingest_files([telemetry], store=store)
    window = resolve_window(store, 14, None, 0.95)
    ff = find(gpu_stats(store, window), window, Thresholds(headroom=0.2), ())
    return ff, summarize(ff)


def _money(v: float) -> str:
    """As the dashboard writes USD: thousands separated, cents."""
    return f"{v:,.2f}"


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (tools/system-deps.sh installs it)")
def test_a_new_user_from_the_dashboard_alone(journey: Journey, tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the dev extra)")
    expect = sync_api.expect
    from gpufleet.fleet.plan import plan_fleet
    from gpufleet.fleet.spec import read_fleet_file
    from gpufleet.recommend.api import recommend

    base = journey.base
    # the library's answers to the same questions, worked out while the browser goes (each read when needed)
    pool = ThreadPoolExecutor(1)
    findings_f = pool.submit(_library_findings, journey.telemetry, tmp_path / "store")
    best_f = pool.submit(lambda: recommend(dict(WORKLOAD), offers=None).best)
    plan_f = pool.submit(lambda: plan_fleet(read_fleet_file(FLEET), offers=None, time_limit_s=60.0))

    errors: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            context = browser.new_context()
            context.set_default_timeout(WAIT_MS)
            expect.set_options(timeout=WAIT_MS)
            page = context.new_page()
            page.on("console", lambda m: errors.append(f"{m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
            main = page.locator("main")

            def unlabelled() -> list[str]:
                found: list[str] = page.evaluate(
                    """() => [...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
                        .filter(e => !(e.labels && e.labels.length)).map(e => e.name || e.id)"""
                )
                return found

            def menu(name: str) -> None:
                """To a page through the main menu; every field on it has a label."""
                with page.expect_navigation():
                    page.get_by_role("navigation", name="Main").get_by_role(
                        "link", name=name, exact=True
                    ).click()
                assert unlabelled() == [], name

            def watch_job(title: str) -> None:
                """On a job's page: progress shown (a labelled bar) until it succeeded (the page reloads)."""
                page.wait_for_url(re.compile(r".*/jobs/\d+$"))
                expect(page.get_by_label("Progress")).to_be_attached()
                ended = re.compile(r"status (succeeded|failed|cancelled)")
                expect(main).to_contain_text(ended, timeout=JOB_WAIT_MS)  # a failure fails at once
                assert "status succeeded" in (main.text_content() or ""), main.inner_text()
                expect(page.locator("section.report")).to_contain_text(title)

            # 1. sign in with the token the team's admin created with the CLI
            page.goto(base)
            page.wait_for_url(re.compile(r".*/login$"))
            page.get_by_label("API token").fill(journey.token)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(base)
            expect(page.locator("header")).to_contain_text(f"team {TEAM}")
            # an empty team: the overview says what to do next, and links there
            expect(main).to_contain_text(f"No succeeded plan yet for team {TEAM}")
            expect(main).to_contain_text(f"Team {TEAM} has no telemetry yet")

            # 2. get the fleet in: its telemetry, uploaded from the page the empty state links to
            main.get_by_role("link", name="Telemetry").first.click()
            page.wait_for_url(base + "telemetry")
            assert unlabelled() == []
            page.get_by_label("Telemetry file (nvidia-smi CSV").set_input_files(str(journey.telemetry))
            page.get_by_role("button", name="Ingest").click()
            ff, summ = findings_f.result()
            positive = [g for g in ff.gpus if g.best_savings_usd_per_month]
            wanted = sorted(
                (g for g in positive if g.best_savings_usd_per_month >= MIN_SAVING_USD_PER_MONTH),
                key=lambda g: (-g.best_savings_usd_per_month, g.gpu_key),
            )
            assert 0 < len(wanted) < len(positive)  # the threshold lets some savings through, holds others
            n = journey.telemetry.read_bytes().count(b"\n")
            expect(page.get_by_role("status")).to_contain_text(
                f"Ingested dcgm.prom: {n:,} of {n:,} samples stored, {summ.gpus} GPUs."
            )

            # 3. the team's cost per month and findings on the overview, as the library computes them
            menu("Overview")
            findings = page.locator("h2:has-text('Findings') + p")
            expect(findings).to_contain_text(
                f"{summ.gpus} GPUs observed; cost {_money(summ.cost_usd_per_month)} USD/month at their "
                f"prices; savings {_money(summ.savings_usd_per_month)} USD/month"
            )
            table = page.get_by_role("table").filter(has=page.locator("caption", has_text="Findings by type"))
            for name, (count, usd) in summ.by_finding.items():
                expect(table.get_by_role("row").filter(has_text=name)).to_contain_text(
                    f"{count}{_money(usd)}"
                )

            # 4. a recommendation from the form, its best option as the library's
            menu("Recommend")
            assert unlabelled() == []
            page.get_by_label("Model (id, alias or Hugging Face config)").fill(str(WORKLOAD["model"]))
            page.get_by_label("Target requests per second [1/s]").fill("2")
            page.get_by_label("Pricing").select_option(str(WORKLOAD["pricing"]))
            page.get_by_role("button", name="Recommend").click()
            report = page.locator("section.report")
            best = best_f.result()
            assert best is not None
            expect(report).to_contain_text(
                f"Best: {best.provider} {best.instance_type} ({best.region}), {best.total_gpus} x "
                f"{best.gpu}, ${best.cost_usd_per_month:,.2f}/month",
                timeout=JOB_WAIT_MS,
            )

            # 5. a plan: the fleet file uploaded, the job watched to the end, its cost on the overview
            menu("Plan")
            assert unlabelled() == []
            page.get_by_label("Fleet file (YAML or JSON)").set_input_files(str(FLEET))
            page.get_by_role("button", name="Plan").click()
            watch_job("Fleet plan")
            plan = plan_f.result()
            assert plan.cost_usd_per_month is not None
            menu("Overview")
            cost = page.get_by_role("table").filter(
                has=page.locator("caption", has_text="Cost per month by team")
            )
            expect(cost.get_by_role("row").filter(has_text=TEAM)).to_contain_text(
                f"{_money(plan.cost_usd_per_month)}{FLEET.name}"
            )

            # 6. a price's history: from the catalog's instance link to its chart
            menu("Catalog")
            page.get_by_label("GPU (id, alias or family)").fill("H100")
            page.get_by_label("Provider").fill("aws")
            page.get_by_label("Region glob").fill("us-east-1")
            page.get_by_role("button", name="Filter").click()
            page.get_by_role("link", name="p5.48xlarge").first.click()
            page.wait_for_url(
                re.compile(r".*/catalog/history\?provider=aws&instance=p5\.48xlarge&region=us-east-1")
            )
            expect(page.locator("h1")).to_have_text("Price history: aws p5.48xlarge us-east-1")
            chart = main.get_by_role("img", name=re.compile("price over the last 90 days"))
            expect(chart).to_contain_text("USD/hour (machine)")
            expect(chart.locator("polyline")).to_have_count(2)  # on-demand and spot, zones priced alike
            shipped = _shipped_p5()
            for _, factor in REFRESHES:  # every zone's refreshed on-demand price in the table
                price = _money(shipped[0].price_on_demand_usd_per_hour * factor)
                refreshed = main.get_by_role("row").filter(has_text=price).filter(has_text="refresh")
                expect(refreshed).to_have_count(len(shipped))

            # 7. a webhook for new savings of at least the threshold
            menu("Notifications")
            assert unlabelled() == []
            page.get_by_label("URL").fill(journey.hooks.url)
            page.get_by_label("Format").select_option("generic")
            page.get_by_label("saving_found").check()
            page.get_by_label("Min. new saving [USD/month]").fill(f"{MIN_SAVING_USD_PER_MONTH:g}")
            page.get_by_role("button", name="Add webhook").click()
            page.wait_for_url(base + "notifications")
            expect(main.get_by_role("row").filter(has_text=journey.hooks.url)).to_contain_text("$3,000/month")

            # 8. findings run from the dashboard: the job, then exactly the new savings at the receiver
            menu("Findings")
            page.get_by_role("button", name="Run findings").click()
            watch_job("GPU fleet right-sizing")
            assert journey.hooks.arrived.wait(WAIT_MS / 1000), "no webhook delivery"
            (path, body), *others = journey.hooks.got
            assert others == [] and path == "/hooks/savings" and body["event"] == "saving_found"
            got = [(g["gpu_key"], g["finding"], g["best_savings_usd_per_month"]) for g in body["gpus"]]
            assert got == [
                (g.gpu_key, g.finding, pytest.approx(g.best_savings_usd_per_month)) for g in wanted
            ]
            assert body["savings_usd_per_month"] == pytest.approx(
                sum(g.best_savings_usd_per_month for g in wanted)
            )
            # ... and the notifications page shows it delivered
            menu("Notifications")
            deliveries = main.get_by_role("table").filter(has_text="saving_found").last
            for _ in range(20):  # the delivery row is written once the receiver answered
                if "delivered" in deliveries.inner_text():
                    break
                page.wait_for_timeout(500)
                page.reload()
            expect(deliveries).to_contain_text("delivered")

            # 9. a viewer of the team reads the same figures and sees no editor or admin action
            page.get_by_role("button", name="Sign out").click()
            page.wait_for_url(re.compile(r".*/login$"))
            page.get_by_label("API token").fill(journey.viewer)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(base)
            expect(findings).to_contain_text(f"cost {_money(summ.cost_usd_per_month)} USD/month")
            assert page.get_by_role("navigation", name="Main").get_by_role("link", name="Plan").count() == 0
            for name, actions in (
                ("Findings", ["Run findings"]),
                ("Telemetry", ["Ingest"]),
                ("Notifications", ["Add webhook", "Delete webhook 1"]),
                ("Schedules", ["Add schedule"]),
                ("User catalogs", ["Upload catalog"]),
            ):
                menu(name)
                for action in actions:
                    assert page.get_by_role("button", name=action).count() == 0, (name, action)
                if name == "Notifications":  # a webhook URL is shown by host only (it often holds a secret)
                    expect(main).to_contain_text("http://127.0.0.1/…")
                    expect(main).not_to_contain_text("/hooks/savings")
        finally:
            browser.close()
            pool.shutdown(cancel_futures=True)
    assert errors == []


def _shipped_p5() -> list[Any]:
    from gpufleet.catalog.offers import load_shipped_offers

    return [
        o
        for o in load_shipped_offers().records()
        if (o.provider, o.instance_type, o.region) == ("aws", "p5.48xlarge", "us-east-1")
    ]
