"""The job kinds of scheduled work (:mod:`.scheduler`), beside :mod:`.job_kinds`' plan and scenario set:

- ``catalog_refresh``: ``{"provider": aws|azure|gcp, "regions": [...] (default: the shipped regions)}`` ->
  `gpufleet catalog update` (:func:`gpufleet.catalog.fetch.refresh` + ``write_result``: prices appended to the
  history), and the prices that changed against the catalog before it (the previous refresh, else the shipped
  snapshot), one change per offer and price kind; the provider's offer table as written rides along as
  ``_offers_csv``, which the worker moves into ``catalog_refreshes`` (:mod:`.catalog_version`);
- ``simulate``: ``{"simulator": "spot", "model", "tokens", ...}`` -> `gpufleet simulate spot`; the autoscale
  and batch simulators over the team's uploaded files: :mod:`.job_kinds_sim`;
- ``sweep``: ``{"kind": "spot", "base", "grid", "seeds"}`` -> `gpufleet simulate sweep` (local processes);
  autoscale and batch sweeps: :mod:`.job_kinds_sim`;
- ``telemetry_pull``: ``{"url": Prometheus URL, "lookback_hours", "step_s", "timeout_s"}`` ->
  `gpufleet telemetry ingest --prometheus URL` into the team's store;
- ``findings``: ``{"lookback_days", "headroom"}`` -> `gpufleet telemetry findings` and the shipped alert rules
  over the team's store, with each GPU's best saving (for the ``saving_found`` notification).

The team's telemetry folder is not a parameter (a request must not name a server path): the worker adds it
as ``_telemetry_dir`` when it starts the job (:data:`TEAM_STORE_KINDS`).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from gpufleet.errors import InputError, UnknownNameError

#: (fraction done in [0, 1], what is happening), as :data:`.job_kinds.ProgressFn`
Progress = Callable[[float, str], None]
KINDS: tuple[str, ...] = ("catalog_refresh", "simulate", "sweep", "telemetry_pull", "findings")
TEAM_STORE_KINDS = frozenset({"telemetry_pull", "findings"})
#: simulators over the team's uploaded files (:mod:`.job_kinds_sim`)
SIM_UPLOADS = ("autoscale", "batch")
#: the spot simulator's options a simulate job takes (`gpufleet simulate spot`), and their JSON types
SPOT_OPTIONS: dict[str, tuple[type, ...]] = {
    "model": (str,),
    "tokens": (int, float),
    "gpu": (str,),
    "gpus": (int,),
    "precision": (str,),
    "task": (str,),
    "deadline_h": (int, float),
    "provider": (str,),
    "interval_h": (int, float),
    "runs": (int,),
    "seed": (int,),
    "regions": (int,),
}
#: sweep keys naming files: refused (the spec would read files on the server)
FILE_KEYS = frozenset({"trace", "jobs", "fleet", "interruptions"})
MAX_SWEEP_CONFIGS = 1000
#: a region code as the price APIs write it (``catalog update --region`` checks the same:
#: ``catalog.fetch.pipeline._REGION``); "80GB" or "  " was accepted, 202, and the refresh failed later
REGION_CODE = re.compile(r"^[a-z0-9][a-z0-9-]{1,40}$")


def over_uploads(kind: str, params: Mapping[str, Any]) -> bool:
    """True for a simulate or sweep job of a simulator that reads the team's uploaded files."""
    return (kind == "simulate" and params.get("simulator") in SIM_UPLOADS) or (
        kind == "sweep" and params.get("kind") in SIM_UPLOADS
    )


def _only(kind: str, params: Mapping[str, Any], allowed: Mapping[str, str]) -> None:
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        listed = "; ".join(f"{k} ({v})" for k, v in allowed.items())
        raise InputError(f"Unknown {kind} job parameter(s): {', '.join(unknown)}. Allowed: {listed}.")


def _number(kind: str, name: str, value: Any, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not lo < value <= hi:
        raise InputError(f"{kind} job: {name} = {value!r} is not allowed: give a number in ({lo:g}, {hi:g}].")
    return float(value)


def _model(where: str, name: str) -> None:
    """A model named by id, alias, Hugging Face repo id or size class, never by a path: the library reads a
    config.json path, which here would be a file on the server."""
    from pathlib import Path

    from gpufleet.models.registry import resolve_model

    try:
        on_disk = Path(name).exists()
    except OSError:  # a name longer than the file system allows (5,000 characters: a 500 before)
        on_disk = False
    if name.startswith(("/", "~", ".")) or "\\" in name or name.endswith(".json") or on_disk:
        raise InputError(
            f"{where}: model {name[:100]!r} looks like a file path; a job cannot read files on the server. "
            "Give a shipped model id, alias, Hugging Face repo id or size class (GET /api/v1/catalog/models)."
        )
    resolve_model(name)  # an unknown name: UnknownNameError with close matches


def _spot_options(where: str, opts: Mapping[str, Any]) -> None:
    for k, v in opts.items():
        if k in FILE_KEYS:
            raise InputError(
                f"{where}: {k} names a file, which a job cannot read from the server. Leave it out (the "
                "spot simulator then uses its shipped interruption rates)."
            )
        types = SPOT_OPTIONS.get(k)
        if types is None:
            raise InputError(f"{where}: unknown option {k!r}. Allowed: {', '.join(SPOT_OPTIONS)}.")
        if isinstance(v, bool) or not isinstance(v, types):
            raise InputError(f"{where}: {k} = {v!r} must be a {' or '.join(t.__name__ for t in types)}.")
        if k == "model":
            _model(where, str(v))
        elif k in _SPOT_NAMES:
            _SPOT_NAMES[k](where, v)
        elif k == "seed" and isinstance(v, int) and not 0 <= v <= 2**63 - 1:
            raise InputError(f"{where}: seed = {v!r} must be a whole number from 0 to 2^63 - 1.")
        elif k != "seed" and isinstance(v, int | float) and not (0 < v < 1e18):
            raise InputError(f"{where}: {k} = {v!r} must be a finite number above 0.")


def _spot_gpu(where: str, value: str) -> None:
    from gpufleet.catalog.specs import get_spec

    get_spec(value)  # an unknown name: UnknownNameError with close matches


def _spot_precision(where: str, value: str) -> None:
    from gpufleet.precision import PRECISIONS

    if value.strip().lower() not in PRECISIONS:
        raise InputError(f"{where}: precision = {value!r}. Allowed: {', '.join(PRECISIONS)}.")


def _spot_task(where: str, value: str) -> None:
    from gpufleet.estimate.types import TRAINING_TASKS

    if value not in TRAINING_TASKS:
        raise InputError(
            f"{where}: task = {value!r}; the spot simulator prices a training run. Allowed: "
            f"{', '.join(TRAINING_TASKS)}."
        )


def _spot_provider(where: str, value: str) -> None:
    from gpufleet.catalog.offers import load_offers

    known = load_offers().providers()
    if value.strip().lower() not in known:
        raise UnknownNameError(
            "provider", value, known, hint=f"{where}: leave provider out to search every provider."
        )


#: the spot options that name something, each checked when the job is submitted (a bad one was accepted,
#: 202, and failed the job later)
_SPOT_NAMES: dict[str, Callable[[str, Any], None]] = {
    "gpu": _spot_gpu,
    "precision": _spot_precision,
    "task": _spot_task,
    "provider": _spot_provider,
}


def check(kind: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` of a ``kind`` in :data:`KINDS` checked and normalised (one-paragraph InputError else)."""
    if kind == "catalog_refresh":
        from gpufleet.catalog.fetch.pipeline import PROVIDERS

        _only(kind, params, {"provider": "aws, azure or gcp", "regions": "list of region codes"})
        provider = params.get("provider")
        if provider not in PROVIDERS:
            raise InputError(
                f"catalog_refresh job: provider = {provider!r}. Allowed: {', '.join(PROVIDERS)}."
            )
        regions = params.get("regions")
        if regions is not None and (
            not isinstance(regions, list)
            or not regions  # [] fetched every shipped region, as if regions were left out
            or not all(isinstance(r, str) and REGION_CODE.match(r) for r in regions)
        ):
            raise InputError(
                f"catalog_refresh job: regions = {str(regions)[:80]}; regions is a list of one or more of "
                "the API's lower-case region codes, e.g. ['us-east-1'] (aws), ['eastus'] (azure), "
                "['us-central1'] (gcp); or leave regions out for the shipped ones."
            )
        return {"provider": provider, "regions": sorted(set(regions)) if regions else None}
    if over_uploads(kind, params):
        from gpufleet.service import job_kinds_sim

        return job_kinds_sim.check(kind, params)
    if kind == "simulate":
        if params.get("simulator") != "spot":
            raise InputError(
                f"simulate job: simulator = {params.get('simulator')!r}. Allowed: spot, autoscale (over a "
                "trace upload), batch (over a job file upload)."
            )
        opts = {k: v for k, v in params.items() if k != "simulator"}
        _spot_options("simulate job", opts)
        if "model" not in opts or "tokens" not in opts:
            raise InputError("simulate job: model and tokens are required (e.g. 'llama-3-8b', 2e10).")
        return {"simulator": "spot", **opts}
    if kind == "sweep":
        _only(kind, params, {"kind": "spot", "base": "mapping", "grid": "name -> list", "seeds": "list"})
        if params.get("kind") != "spot":
            raise InputError(
                f"sweep job: kind = {params.get('kind')!r}. Allowed: spot, autoscale (over trace uploads), "
                "batch (over job file uploads)."
            )
        # null or absent = the default; another falsy value (0, "", [], false) is a wrong type, not the
        # default (`"seeds": 0` or `"base": ""` ran the default sweep, as the CLI's sweep spec did)
        base, grid, seeds = (params.get(k) for k in ("base", "grid", "seeds"))
        base = {} if base is None else base
        grid = {} if grid is None else grid
        seeds = [0] if seeds is None else seeds
        if not isinstance(base, dict) or not isinstance(grid, dict):
            raise InputError(
                f"sweep job: base = {str(base)[:80]!r}, grid = {str(grid)[:80]!r}; base is a mapping of "
                "options, grid maps option names to lists (or leave either out)."
            )
        if not all(isinstance(v, list) and v for v in grid.values()):
            raise InputError("sweep job: each grid entry is a non-empty list of values.")
        if (
            not isinstance(seeds, list)
            or not seeds
            or not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= 2**63 - 1 for s in seeds)
        ):
            raise InputError(
                f"sweep job: seeds = {str(seeds)[:80]!r}; seeds is a non-empty list of integers from 0 to "
                "2^63 - 1 (e.g. [0, 1, 2]), or leave it out for the single seed 0."
            )
        if len(set(seeds)) != len(seeds):
            raise InputError(f"sweep job: seeds {seeds} repeat a seed (the same runs twice); give each once.")
        _spot_options("sweep job base", base)
        for k, values in grid.items():
            for v in values:
                _spot_options("sweep job grid", {k: v})
        n = len(seeds)
        for values in grid.values():
            n *= len(values)
        if n > MAX_SWEEP_CONFIGS:
            raise InputError(
                f"sweep job: {n} runs; at most {MAX_SWEEP_CONFIGS}. Shrink the grid or the seeds."
            )
        missing = [k for k in ("model", "tokens") if k not in base and k not in grid]
        if missing:  # as the simulate job requires them (each run would fail)
            raise InputError(
                f"sweep job: {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not in base or "
                "grid; every run needs model and tokens (e.g. base: {model: llama-3-8b, tokens: 2e10})."
            )
        return {"kind": "spot", "base": base, "grid": grid, "seeds": seeds}
    if kind == "telemetry_pull":
        allowed = {
            "url": "Prometheus base URL",
            "lookback_hours": "hours up to now, default 24",
            "step_s": "resolution, default 60",
            "timeout_s": "per request, default 30",
        }
        _only(kind, params, allowed)
        url = params.get("url")
        parts = urlsplit(url if isinstance(url, str) else "")
        if parts.scheme not in ("http", "https") or not parts.netloc or len(str(url)) > 2000:
            raise InputError(
                f"telemetry_pull job: url = {str(url)[:100]!r}; give the http(s):// base URL of a Prometheus "
                "(e.g. http://prometheus:9090)."
            )
        return {
            "url": url,
            "lookback_hours": _number(kind, "lookback_hours", params.get("lookback_hours", 24), 0, 24 * 90),
            "step_s": _number(kind, "step_s", params.get("step_s", 60), 0, 86400),
            "timeout_s": _number(kind, "timeout_s", params.get("timeout_s", 30), 0, 600),
        }
    if kind == "findings":
        _only(kind, params, {"lookback_days": "days analysed, default 14", "headroom": "0.2 = 20 %"})
        return {
            "lookback_days": _number(kind, "lookback_days", params.get("lookback_days", 14), 0, 3650),
            "headroom": _number(kind, "headroom", params.get("headroom", 0.2), -1e-12, 2),
        }
    raise InputError(f"Unknown job kind {kind!r}.")


def execute(kind: str, params: Mapping[str, Any], progress: Progress) -> tuple[dict[str, Any], str | None]:
    """Run a checked job of a ``kind`` in :data:`KINDS`: (its JSON document, its HTML report or None)."""
    if kind == "catalog_refresh":
        return _refresh(params, progress), None
    if over_uploads(kind, params):
        from gpufleet.service import job_kinds_sim

        return job_kinds_sim.execute(kind, params, progress)
    if kind == "simulate":
        from gpufleet.report.simulation import render_simulation
        from gpufleet.simulate.spot import simulate_spot

        progress(0.0, "Simulating spot strategies")
        opts = {k: v for k, v in params.items() if k != "simulator"}
        result = simulate_spot(**opts)
        return json.loads(render_simulation(result, "json")), render_simulation(result, "html")
    if kind == "sweep":
        from gpufleet.report.simulation import render_simulation
        from gpufleet.simulate.sweep import SweepSpec, run_sweep

        spec = SweepSpec(
            kind="spot", base=dict(params["base"]), grid=dict(params["grid"]), seeds=tuple(params["seeds"])
        )
        swept = run_sweep(
            spec,
            engine="local",
            workers=1,
            progress=lambda d, n: progress(d / n if n else 1.0, f"Run {d}/{n}"),
        )
        return json.loads(render_simulation(swept, "json")), render_simulation(swept, "html")
    if kind == "telemetry_pull":
        from gpufleet.report.telemetry import to_json
        from gpufleet.telemetry.ingest import ingest_prometheus
        from gpufleet.telemetry.store import TelemetryStore

        end_s = time.time()
        progress(0.0, f"Querying {params['url']}")
        report = ingest_prometheus(
            str(params["url"]),
            start_s=end_s - float(params["lookback_hours"]) * 3600.0,  # units: h -> s (3600 s per hour)
            end_s=end_s,
            step_s=float(params["step_s"]),
            store=TelemetryStore(params["_telemetry_dir"]),
            timeout_s=float(params["timeout_s"]),
        )
        return json.loads(to_json("telemetry_ingest", {"report": report})), None
    if kind == "findings":
        return _findings(params, progress)
    raise InputError(f"Unknown job kind {kind!r}.")


def _offer_prices(offers: Any) -> dict[tuple[str, str | None, str, str, float, str], tuple[float, str]]:
    """(region, zone, instance type, GPU, GPU count, price kind) -> (USD/h, captured_at) of ``offers``."""
    from gpufleet.catalog.history import CARRIED_SPOT_NOTE

    out: dict[tuple[str, str | None, str, str, float, str], tuple[float, str]] = {}
    for o in offers:
        key = (o.region, o.zone, o.instance_type, o.gpu or "", float(o.gpu_count))
        if o.price_on_demand_usd_per_hour is not None:
            out[(*key, "on_demand")] = (float(o.price_on_demand_usd_per_hour), o.captured_at)
        if o.price_spot_usd_per_hour is not None and CARRIED_SPOT_NOTE not in o.source:
            out[(*key, "spot")] = (float(o.price_spot_usd_per_hour), o.captured_at)
    return out


def price_changes(provider: str, before: Any, after: Any, captured_at: str) -> list[dict[str, Any]]:
    """The prices of ``after`` (this refresh's offers) that differ from ``before`` (the catalog's rows of the
    same machines before it): one change per offer and price kind, largest relative change first."""
    old, new = _offer_prices(before), _offer_prices(after)
    out = []
    for key, (price, _) in new.items():
        if key not in old or old[key][0] == price or old[key][0] <= 0:
            continue
        was, was_at = old[key]
        region, zone, instance_type, _gpu, _n, price_kind = key
        out.append(
            {
                "provider": provider,
                "region": region,
                "zone": zone,
                "instance_type": instance_type,
                "price_kind": price_kind,
                "old_price_usd_per_hour": was,
                "new_price_usd_per_hour": price,
                "change_fraction": (price - was) / was,
                "previous_captured_at": was_at,
                "captured_at": captured_at,
            }
        )
    return sorted(out, key=lambda c: (-abs(c["change_fraction"]), c["region"], c["instance_type"]))


def _refresh(params: Mapping[str, Any], progress: Progress) -> dict[str, Any]:
    from gpufleet.catalog.fetch.pipeline import _previous_offers, refresh, write_result
    from gpufleet.catalog.offers import load_shipped_offers

    provider = str(params["provider"])
    shipped = load_shipped_offers()

    def on_step(what: str, done: int, total: int | None) -> None:
        progress(0.9 * done / total if total else 0.0, what)

    result = refresh(provider, params.get("regions"), shipped=shipped, progress=on_step)
    before = _previous_offers(provider, shipped)  # the catalog as it was: the last refresh, else shipped
    progress(0.95, "Writing the refreshed prices")
    written = write_result(result, shipped)
    return {
        # the provider's offers now in force, taken out by the worker into catalog_refreshes (every
        # replica's offer routes answer from them), never kept in the result
        "_offers_csv": written.offers_path.read_text(encoding="utf-8"),
        "kind": "catalog_refresh",
        "provider": provider,
        "regions": list(result.regions),
        "captured_at": result.captured_at,
        "source": result.source,
        "rows_read": result.rows_read,
        "offers_priced": len(result.offers),
        "offer_rows_after_merge": written.offer_rows,
        "unmapped": result.unmapped,
        "changes": price_changes(provider, before, result.offers, result.captured_at),
    }


def _findings(params: Mapping[str, Any], progress: Progress) -> tuple[dict[str, Any], str | None]:
    from gpufleet.report import telemetry as rt
    from gpufleet.telemetry.alerts import evaluate, load_rules
    from gpufleet.telemetry.analyze import gpu_stats, resolve_window
    from gpufleet.telemetry.findings import Thresholds, find
    from gpufleet.telemetry.store import TelemetryStore
    from gpufleet.telemetry.summary import summarize

    store = TelemetryStore(params["_telemetry_dir"])
    if store.is_empty():
        raise InputError(
            "The team has no telemetry yet: findings need some. Upload a file (POST "
            "/api/v1/telemetry/ingest) or schedule a telemetry_pull job from your Prometheus first."
        )
    progress(0.1, "Analysing the telemetry")
    window = resolve_window(store, float(params["lookback_days"]), None, 0.95)
    ff = find(gpu_stats(store, window), window, Thresholds(headroom=float(params["headroom"])), ())
    summary = summarize(ff)
    progress(0.6, "Evaluating the alert rules")
    rules = load_rules(None)
    events = evaluate(store, window, rules, step_s=60.0)
    doc: dict[str, Any] = json.loads(rt.to_json("telemetry_findings", {"summary": summary, "findings": ff}))
    doc["savings_by_gpu"] = [
        {
            "gpu_key": g.gpu_key,
            "host": g.host,
            "finding": g.finding,
            "best_savings_usd_per_month": g.best_savings_usd_per_month,
        }
        for g in ff.gpus
    ]
    doc["alert_events"] = json.loads(
        rt.to_json("telemetry_alerts", {"window": window, "events": list(events)})
    )["events"]
    html = rt.render_findings_html(ff, summary, rt.findings_heat(store, window, summary))
    return doc, html
