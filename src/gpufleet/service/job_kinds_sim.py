"""The autoscale and batch simulators as jobs, over the team's uploaded files (:mod:`.uploads`).

- ``simulate`` with ``simulator: "autoscale"``: ``trace`` (the id of a ``trace`` upload) and the options of
  `gpufleet simulate autoscale` (:data:`AUTOSCALE_OPTIONS`) -> its ``--format json`` document and HTML report;
- ``simulate`` with ``simulator: "batch"``: ``jobs`` (a ``jobs`` upload), ``fleet`` (a ``batch_fleet`` upload,
  optional) and :data:`BATCH_OPTIONS` -> `gpufleet simulate batch --format json`;
- ``sweep`` with ``kind: "autoscale"`` or ``"batch"``: ``base``, ``grid``, ``seeds`` as a sweep spec, with
  ``trace`` / ``jobs`` / ``fleet`` given as upload ids (in base or in the grid) -> `gpufleet simulate sweep`.

The service adds ``upload_sha256`` ({id: SHA-256}) when the job is submitted (the ids checked to be the
team's); the worker hands the files' text to the job process as ``_uploads``, never a path, and the process
writes them to a private temporary folder under their safe names.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gpufleet.errors import InputError

Progress = Callable[[float, str], None]
#: simulators over uploaded files
SIMULATORS = ("autoscale", "batch")
#: autoscale options: JSON types (the CLI's flags with units in the names)
AUTOSCALE_OPTIONS: dict[str, tuple[type, ...]] = {
    "trace_format": (str,),
    "model": (str,),
    "gpu": (str,),
    "gpus_per_replica": (int,),
    "precision": (str,),
    "policy": (str,),
    "policy_params": (dict,),
    "min_replicas": (int,),
    "max_replicas": (int,),
    "spot_share": (int, float),
    "rate": (int, float),
    "slo_ttft_s": (int, float),
    "slo_tpot_s": (int, float),
    "slo_attainment": (int, float),
    "cold_start_s": (int, float),
    "compare_static_peak": (bool,),
    "kv_mode": (str,),
    "seed": (int,),
}
BATCH_OPTIONS: dict[str, tuple[type, ...]] = {
    "policy": (str,),
    "jobs_format": (str,),
    "seed": (int,),
}
#: the file each simulator reads -> the upload kind it takes
FILE_KINDS: dict[str, dict[str, str]] = {
    "autoscale": {"trace": "trace"},
    "batch": {"jobs": "jobs", "fleet": "batch_fleet"},
}


def _upload_id(where: str, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InputError(
            f"{where}: {key} = {str(value)[:100]!r}; give the id of one of your uploads (POST "
            "/api/v1/uploads, GET /api/v1/uploads lists them), never a path: a job cannot read files on "
            "the server."
        )
    return value


def referenced_uploads(kind: str, params: Mapping[str, Any]) -> list[tuple[int, str]] | None:
    """(upload id, upload kind) of every file a simulate or sweep job names; None for a job over no
    uploads (a spot simulation, any other kind). Ids are checked to be positive integers."""
    if kind == "simulate" and params.get("simulator") in SIMULATORS:
        sim = str(params["simulator"])
        return [
            (_upload_id(f"simulate job ({sim})", key, params[key]), upload_kind)
            for key, upload_kind in FILE_KINDS[sim].items()
            if key in params and params[key] is not None
        ]
    if kind == "sweep" and params.get("kind") in SIMULATORS:
        sim = str(params["kind"])
        base, grid = params.get("base") or {}, params.get("grid") or {}
        if not isinstance(base, dict) or not isinstance(grid, dict):
            return []  # refused by check()
        out = []
        for key, upload_kind in FILE_KINDS[sim].items():
            values = [base[key]] if key in base else []
            if isinstance(grid.get(key), list):
                values += grid[key]
            out += [(_upload_id(f"sweep job ({sim})", key, v), upload_kind) for v in values if v is not None]
        return sorted(set(out))
    return None


def _digests(where: str, params: Mapping[str, Any], ids: list[tuple[int, str]]) -> dict[str, str]:
    digests = params.get("upload_sha256")
    want = {str(i) for i, _ in ids}
    if not isinstance(digests, dict) or set(digests) != want:
        raise InputError(
            f"{where}: the uploads it names were not resolved by the service (upload_sha256 is set by the "
            "service when the job is submitted through POST /api/v1/jobs)."
        )
    return {str(k): str(v) for k, v in digests.items()}


def _typed(where: str, opts: Mapping[str, Any], allowed: Mapping[str, tuple[type, ...]]) -> None:
    for k, v in opts.items():
        types = allowed.get(k)
        if types is None:
            raise InputError(f"{where}: unknown option {k!r}. Allowed: {', '.join(allowed)}.")
        if v is None:
            continue
        if (isinstance(v, bool) and bool not in types) or not isinstance(v, types):
            names = " or ".join(t.__name__ for t in types)
            raise InputError(f"{where}: {k} = {str(v)[:100]!r} must be a {names}.")


def _policy_params(where: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """An autoscaling policy's parameters from JSON: numbers, ``metric`` (text), ``schedule`` as
    ``[[hour, replicas], ...]``, ``replicas`` a whole number (as `--param` reads them)."""
    out: dict[str, Any] = {}
    for k, v in raw.items():
        if k == "metric" and isinstance(v, str):
            out[k] = v
        elif k == "schedule":
            if not isinstance(v, list) or not all(
                isinstance(p, list)
                and len(p) == 2
                and isinstance(p[0], int | float)
                and isinstance(p[1], int)
                and not isinstance(p[1], bool)
                for p in v
            ):
                raise InputError(
                    f"{where}: policy_params schedule is [[hour, replicas], ...], e.g. [[0, 2], [9, 6]]."
                )
            out[k] = tuple((float(h), int(n)) for h, n in v)
        elif isinstance(v, int | float) and not isinstance(v, bool):
            if k == "replicas" and not float(v).is_integer():
                raise InputError(
                    f"{where}: policy_params replicas = {v!r}: a replica count is a whole number."
                )
            out[k] = int(v) if k == "replicas" else float(v)
        else:
            raise InputError(
                f"{where}: policy_params {k} = {str(v)[:60]!r}; a policy parameter is a number (metric: a "
                "name, schedule: [[hour, replicas], ...])."
            )
    return out


def check(kind: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """A simulate or sweep job over uploads checked and normalised (one-paragraph InputError otherwise)."""
    ids = referenced_uploads(kind, params) or []
    if kind == "simulate":
        sim = str(params["simulator"])
        where = f"simulate job ({sim})"
        files = FILE_KINDS[sim]
        required = "trace" if sim == "autoscale" else "jobs"
        if params.get(required) is None:
            raise InputError(
                f"{where}: {required} is required: the id of your {files[required]} upload (POST "
                "/api/v1/uploads)."
            )
        opts = {k: v for k, v in params.items() if k not in ("simulator", "upload_sha256", *files)}
        _typed(where, opts, AUTOSCALE_OPTIONS if sim == "autoscale" else BATCH_OPTIONS)
        _check_values(where, sim, opts)
        return dict(params) | {"upload_sha256": _digests(where, params, ids)}
    where = f"sweep job ({params['kind']})"
    allowed = {"kind", "base", "grid", "seeds", "upload_sha256"}
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise InputError(
            f"Unknown sweep job parameter(s): {', '.join(unknown)}. Allowed: kind, base, grid, seeds."
        )
    from gpufleet.simulate.sweep import SweepSpec, check_sweep_spec

    base, grid, seeds = params.get("base") or {}, params.get("grid") or {}, params.get("seeds") or [0]
    if not isinstance(base, dict) or not isinstance(grid, dict):
        raise InputError(f"{where}: base is a mapping of options, grid maps option names to lists.")
    if not all(isinstance(v, list) and v for v in grid.values()):
        raise InputError(f"{where}: each grid entry is a non-empty list of values.")
    if not isinstance(seeds, list):
        raise InputError(f"{where}: seeds is a list of integers >= 0.")
    if "model" in base or "model" in grid:
        from gpufleet.service.job_kinds_sched import _model

        for m in ([base["model"]] if "model" in base else []) + list(grid.get("model", [])):
            _model(where, str(m))
    placeholder = _placeholders(str(params["kind"]), base, grid, lambda i: f"/upload/{i}")
    check_sweep_spec(
        SweepSpec(kind=str(params["kind"]), base=placeholder[0], grid=placeholder[1], seeds=tuple(seeds))
    )
    return {
        "kind": params["kind"],
        "base": base,
        "grid": grid,
        "seeds": seeds,
        "upload_sha256": _digests(where, params, ids),
    }


def _check_values(where: str, sim: str, opts: Mapping[str, Any]) -> None:
    if sim == "autoscale":
        from gpufleet.service.job_kinds_sched import _model
        from gpufleet.simulate.policies import make_policy
        from gpufleet.simulate.traces import TRACE_FORMATS

        if opts.get("trace_format", "auto") not in TRACE_FORMATS:
            raise InputError(
                f"{where}: trace_format = {opts['trace_format']!r}. Allowed: {', '.join(TRACE_FORMATS)}."
            )
        if opts.get("kv_mode", "paged") not in ("paged", "reserve"):
            raise InputError(f"{where}: kv_mode = {opts['kv_mode']!r}. Allowed: paged, reserve.")
        if "model" in opts:
            _model(where, str(opts["model"]))
        if "gpu" in opts:
            from gpufleet.catalog.specs import get_spec

            get_spec(str(opts["gpu"]))  # an unknown GPU: UnknownNameError with close matches
        for k in ("rate", "slo_ttft_s", "slo_tpot_s"):
            if k in opts and not 0 < float(opts[k]) < 1e9:
                raise InputError(f"{where}: {k} = {opts[k]!r} must be a number above 0.")
        if "cold_start_s" in opts and not 0 <= float(opts["cold_start_s"]) <= 86400:
            raise InputError(f"{where}: cold_start_s = {opts['cold_start_s']!r}: give seconds in [0, 86400].")
        for k in ("spot_share", "slo_attainment"):
            if k in opts and opts[k] is not None and not 0 <= float(opts[k]) <= 1:
                raise InputError(f"{where}: {k} = {opts[k]!r} is a fraction in [0, 1], e.g. 0.95.")
        make_policy(str(opts.get("policy", "kpa")), **_policy_params(where, opts.get("policy_params") or {}))
    else:
        from gpufleet.simulate.batch import BATCH_POLICIES
        from gpufleet.simulate.jobs import JOB_FORMATS

        if opts.get("policy", "easy") not in BATCH_POLICIES:
            raise InputError(f"{where}: policy = {opts['policy']!r}. Allowed: {', '.join(BATCH_POLICIES)}.")
        if opts.get("jobs_format", "auto") not in JOB_FORMATS:
            raise InputError(
                f"{where}: jobs_format = {opts['jobs_format']!r}. Allowed: {', '.join(JOB_FORMATS)}."
            )
    if "seed" in opts and not 0 <= int(opts["seed"]) < 2**32:
        raise InputError(f"{where}: seed = {opts['seed']!r} must be an integer in [0, 2^32).")


def _placeholders(
    sim: str, base: Mapping[str, Any], grid: Mapping[str, Any], path_of: Callable[[int], str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``base`` and ``grid`` with each upload id of a file option replaced by ``path_of(id)``."""
    keys = FILE_KINDS[sim]
    b = {k: (path_of(v) if k in keys and v is not None else v) for k, v in base.items()}
    g = {k: ([path_of(x) if x is not None else x for x in v] if k in keys else v) for k, v in grid.items()}
    return b, g


def execute(kind: str, params: Mapping[str, Any], progress: Progress) -> tuple[dict[str, Any], str | None]:
    """Run a checked simulate or sweep job over uploads (``params["_uploads"]``: {id: {name, text}}, set by
    the worker)."""
    from gpufleet.report.simulation import render_simulation
    from gpufleet.service.uploads import written

    files = params.get("_uploads") or {}
    with written({k: (v["name"], v["text"]) for k, v in files.items()}) as paths:
        if kind == "simulate":
            result = _simulate(params, {int(k): p for k, p in paths.items()}, progress)
            return json.loads(render_simulation(result, "json")), render_simulation(result, "html")
        from gpufleet.simulate.sweep import SweepSpec, run_sweep

        sim = str(params["kind"])
        by_id = {int(k): str(p) for k, p in paths.items()}
        base, grid = _placeholders(sim, params["base"], params["grid"], lambda i: by_id[i])
        spec = SweepSpec(kind=sim, base=base, grid=grid, seeds=tuple(params["seeds"]))
        swept = run_sweep(
            spec,
            engine="local",
            workers=1,
            progress=lambda d, n: progress(d / n if n else 1.0, f"Run {d}/{n}"),
        )
        doc = json.loads(render_simulation(swept, "json"))
        ids = {p: i for i, p in by_id.items()}  # the rows name the upload, not the temporary file
        doc["result"]["rows"] = [
            [ids.get(v, v) if isinstance(v, str) else v for v in row] for row in doc["result"]["rows"]
        ]
        return doc, None


def _simulate(params: Mapping[str, Any], paths: Mapping[int, Path], progress: Progress) -> Any:
    sim = str(params["simulator"])
    if sim == "batch":
        from gpufleet.simulate.batch import check_policy_acts, read_fleet, simulate_batch
        from gpufleet.simulate.jobs import read_jobs

        progress(0.0, "Reading the job file")
        queue = read_jobs(paths[int(params["jobs"])], str(params.get("jobs_format", "auto")))
        pools = read_fleet(paths[int(params["fleet"])]) if params.get("fleet") is not None else None
        policy = str(params.get("policy", "easy"))
        check_policy_acts(policy, queue, pools)
        progress(0.1, f"Scheduling {len(queue):,} jobs ({policy})")
        return simulate_batch(queue, pools, policy=policy, seed=int(params.get("seed", 0)))
    from gpufleet.simulate.autoscale import deployment_for, simulate_autoscale
    from gpufleet.simulate.coldstart import ColdStart
    from gpufleet.simulate.policies import make_policy
    from gpufleet.simulate.traces import read_trace, scale_rate

    progress(0.0, "Reading the trace")
    tr = read_trace(paths[int(params["trace"])], str(params.get("trace_format", "auto")))
    rate = float(params.get("rate", 1.0))
    if rate != 1.0:
        tr = scale_rate(tr, rate)
    pol = make_policy(
        str(params.get("policy", "kpa")), **_policy_params("simulate job", params.get("policy_params") or {})
    )
    cold = params.get("cold_start_s")
    cs = ColdStart(provisioning_s=float(cold), image_pull_s=0.0, warmup_s=0.0) if cold is not None else None
    dep = deployment_for(
        tr,
        model=str(params.get("model", "llama-3.1-8b")),
        gpu=params.get("gpu"),
        precision=str(params.get("precision", "bf16")),
        gpus_per_replica=params.get("gpus_per_replica"),
        cold_start=cs,
    )
    progress(0.1, f"Replaying {len(tr):,} requests")
    return simulate_autoscale(
        tr,
        dep,
        pol,
        min_replicas=int(params.get("min_replicas", 1)),
        max_replicas=int(params.get("max_replicas", 64)),
        spot_share=float(params.get("spot_share", 0.0)),
        slo_ttft_s=float(params.get("slo_ttft_s", 2.0)),
        slo_tpot_s=float(params.get("slo_tpot_s", 0.2)),
        slo_attainment=params.get("slo_attainment"),
        seed=int(params.get("seed", 0)),
        rate_factor=rate,
        compare_static_peak=bool(params.get("compare_static_peak", True)),
        kv_mode=str(params.get("kv_mode", "paged")),
    )
