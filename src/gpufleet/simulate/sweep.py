"""Sweeps: one simulator over a grid of parameters x seeds, in local processes or on a Ray cluster.

Spec (YAML/JSON)::

    kind: autoscale            # autoscale | spot | batch
    base:                      # the arguments every run shares (the Python API's keyword names)
      trace: traces/azure_conv.csv
      model: llama-3.1-8b
      gpu: l4
    grid:                      # every combination of these values is one configuration
      policy: [kpa, hpa, ray, queue]
      target: [8, 12, 16]      # policy parameter (autoscale: the policy's concurrency target)
    seeds: [0, 1]

Runs go to a ``concurrent.futures.ProcessPoolExecutor`` (``engine="local"``, ``workers`` processes) or to
Ray (``engine="ray"``, ``address`` of an existing cluster, or a local instance when None; the
``gpufleet[ray]`` extra). Results: one row per run (parameters, seed, metrics), optionally written to
Parquet with pyarrow (the ``gpufleet[parquet]`` extra; atomic write).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from gpufleet.errors import ConfigFileError, FetchError, InputError, UnsupportedError, close_matches
from gpufleet.fileio import check_top_level, load_structured_file
from gpufleet.validation import MAX_SWEEP_RUNS, check_count, checked_arguments

SWEEP_KINDS = ("autoscale", "spot", "batch")
ENGINES = ("local", "ray")
_AUTOSCALE_POLICY_TARGET = {
    "hpa": "target",
    "kpa": "target_concurrency",
    "ray": "target_ongoing_requests",
    "queue": "target_waiting",
    "static": "replicas",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepSpec:
    kind: str
    base: Mapping[str, Any]
    grid: Mapping[str, Sequence[Any]]
    seeds: tuple[int, ...] = (0,)

    def configs(self) -> list[dict[str, Any]]:
        keys = list(self.grid)
        out = []
        for values in itertools.product(*(self.grid[k] for k in keys)):
            for seed in self.seeds:
                out.append({**self.base, **dict(zip(keys, values, strict=True)), "seed": seed})
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepResult:
    kind: str
    engine: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    wall_s: float
    parquet: str | None


@checked_arguments("sweep spec reader")
def read_sweep_spec(path: str | Path) -> SweepSpec:
    p = Path(path)
    doc = load_structured_file(p, what="sweep spec")
    check_top_level(
        doc,
        source=f"The sweep spec {p}",
        allowed=("kind", "base", "grid", "seeds"),
        fix=f"kind is one of {', '.join(SWEEP_KINDS)} (docs/simulate.md).",
    )
    if doc.get("kind") not in SWEEP_KINDS:
        kind = doc.get("kind")
        near = close_matches(str(kind), SWEEP_KINDS, n=1) if kind is not None else []
        raise ConfigFileError(
            f"The sweep spec {p} needs kind: one of {', '.join(SWEEP_KINDS)}; it has "
            f"{'no kind' if kind is None else repr(kind)}"
            + (f" (did you mean {near[0]!r}? names are case-sensitive)." if near else ".")
        )
    if doc.get("seeds") == []:
        raise ConfigFileError(
            f"The sweep spec {p}: seeds: [] lists no seed, so no run would be made. Give at least one "
            "integer >= 0 (e.g. seeds: [0, 1, 2]), or leave seeds out for the single seed 0."
        )
    # null or absent = the default; any other falsy value (0, "", [], false) is a wrong type, not the default
    # (`seeds: 0`, `grid: ""` and `base: []` ran the default sweep silently)
    base, grid, seeds = (doc.get(k) for k in ("base", "grid", "seeds"))
    base = {} if base is None else base
    grid = {} if grid is None else grid
    seeds = [0] if seeds is None else seeds
    if (
        not isinstance(base, dict)
        or not isinstance(grid, dict)
        or not all(isinstance(v, list) and v for v in grid.values())
    ):
        raise ConfigFileError(
            f"The sweep spec {p}: base = {_shown(base)}, grid = {_shown(grid)}; base is a mapping of "
            "settings and grid maps each setting to a non-empty list of values (e.g. grid: {policy: [fifo, "
            "easy]}). Fix them, or leave either out."
        )
    if not isinstance(seeds, list) or not all(
        isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds
    ):
        raise ConfigFileError(
            f"The sweep spec {p}: seeds = {_shown(seeds)}; seeds is a list of integers >= 0 (e.g. seeds: "
            "[0, 1, 2]). Fix it, or leave seeds out for the single seed 0."
        )
    if len(set(seeds)) != len(seeds):
        raise ConfigFileError(
            f"The sweep spec {p}: seeds {seeds} repeat a seed (the same runs twice); give each seed once."
        )
    for k in ("trace", "jobs", "fleet", "interruptions"):  # file paths, relative to the spec file
        optional = k in ("fleet", "interruptions")
        values = ([base[k]] if k in base else []) + list(grid.get(k, []))
        bad = [v for v in values if not (isinstance(v, str) and v.strip()) and not (optional and v is None)]
        if bad:
            raise ConfigFileError(
                f"The sweep spec {p}: {k} = {bad[0]!r}; {k} is the path of a file (text, relative to the "
                "spec's folder or absolute). Write the path."
            )
        if isinstance(base.get(k), str):
            base[k] = _relative_to(p, base[k])
        if k in grid:
            grid[k] = [_relative_to(p, v) if isinstance(v, str) else v for v in grid[k]]
    return SweepSpec(kind=doc["kind"], base=base, grid=grid, seeds=tuple(seeds))


def _shown(value: Any) -> str:
    """``value`` for a message: its repr, cut at 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _relative_to(spec: Path, path: str) -> str:
    """``path`` as written in the sweep spec ``spec``: relative paths are relative to the spec's folder."""
    return path if Path(path).is_absolute() else str((spec.parent / path).resolve())


@cache
def _trace(path: str, rate: float) -> Any:
    from gpufleet.simulate.traces import read_trace, scale_rate

    t = read_trace(path)
    return scale_rate(t, rate) if rate != 1.0 else t


@cache
def _deployment(path: str, rate: float, model: str, gpu: str | None, precision: str) -> Any:
    from gpufleet.simulate.autoscale import deployment_for

    return deployment_for(_trace(path, rate), model=model, gpu=gpu, precision=precision)


_SWEEP_OWN_KEYS: dict[str, tuple[str, ...]] = {
    "autoscale": ("trace", "rate", "model", "gpu", "precision", "policy", "policy_params", "target"),
    "spot": (),
    "batch": ("jobs", "fleet"),
}
_SWEEP_REQUIRED: dict[str, tuple[str, ...]] = {
    "autoscale": ("trace",),
    "spot": ("model", "tokens"),
    "batch": ("jobs",),
}


def _sweep_keys(kind: str) -> set[str]:
    """Names a configuration of ``kind`` may set: the sweep's own keys plus the simulator's keywords."""
    import inspect

    from gpufleet.simulate.autoscale import simulate_autoscale
    from gpufleet.simulate.batch import simulate_batch
    from gpufleet.simulate.spot import simulate_spot

    fns: dict[str, Callable[..., Any]] = {
        "autoscale": simulate_autoscale,
        "spot": simulate_spot,
        "batch": simulate_batch,
    }
    fn = fns[kind]
    params = inspect.signature(fn).parameters.values()
    keywords = {p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}
    return (keywords | set(_SWEEP_OWN_KEYS[kind]) | {"seed"}) - {"deployment"}


def check_sweep_spec(spec: SweepSpec) -> None:
    """:class:`InputError` unless ``spec`` has a known kind, known keys, the required ones and int seeds."""
    if spec.kind not in SWEEP_KINDS:
        raise InputError(f"sweep kind {spec.kind!r} is unknown. Allowed: {', '.join(SWEEP_KINDS)}.")
    if not isinstance(spec.base, Mapping) or not isinstance(spec.grid, Mapping):
        raise InputError("sweep spec: base is a mapping of names to values, grid of names to lists.")
    if not all(isinstance(v, Sequence) and not isinstance(v, str) and v for v in spec.grid.values()):
        raise InputError("sweep spec: every grid entry is a non-empty list of values.")
    allowed = _sweep_keys(spec.kind)
    keys = [*spec.base, *spec.grid]
    unknown = sorted({str(k) for k in keys if k not in allowed})
    if unknown:
        raise InputError(
            f"sweep spec ({spec.kind}): unknown names {unknown[:5]}. Allowed: {', '.join(sorted(allowed))}."
        )
    both = sorted(str(k) for k in spec.base if k in spec.grid)
    if both:
        raise InputError(
            f"sweep spec ({spec.kind}): {', '.join(both)} is set in both base and grid, and the grid's "
            "values would silently replace base's. Keep it in one of the two (in grid to vary it)."
        )
    for k, values in spec.grid.items():
        shown = [repr(v) for v in values]
        repeated = sorted({v for v in shown if shown.count(v) > 1})
        if repeated:
            raise InputError(
                f"sweep spec ({spec.kind}): grid {k} lists {', '.join(repeated)} more than once (the same "
                "runs twice); give each value once."
            )
    missing = [k for k in _SWEEP_REQUIRED[spec.kind] if k not in keys]
    if missing:
        raise InputError(f"sweep spec ({spec.kind}): {', '.join(missing)} is required (in base or grid).")
    if not spec.seeds or not all(
        isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in spec.seeds
    ):
        raise InputError(f"sweep spec: seeds is a non-empty list of integers >= 0, got {spec.seeds!r}.")
    runs = math.prod(len(v) for v in spec.grid.values()) * len(spec.seeds)
    if runs <= MAX_SWEEP_RUNS:
        check_policy_dimensions(spec)
    if runs > MAX_SWEEP_RUNS:
        sizes = " x ".join([*(f"{len(v)} {k}" for k, v in spec.grid.items()), f"{len(spec.seeds)} seeds"])
        raise InputError(
            f"sweep spec: {sizes} is {runs:,} runs, more than the {MAX_SWEEP_RUNS:,} one sweep may hold. "
            "Shorten the grid lists or the seeds, or split the sweep into several specs."
        )


def _varying_policy_params(spec: SweepSpec) -> set[str]:
    """The policy parameters a grid of ``policy_params`` mappings varies: keys whose value differs between
    the grid's entries (or is missing from some)."""
    entries = [
        dict(e or {}) for e in spec.grid.get("policy_params", []) if isinstance(e, Mapping | type(None))
    ]
    keys = {k for e in entries for k in e}
    return {k for k in keys if len({repr(e.get(k, "<unset>")) for e in entries}) > 1}


def check_policy_dimensions(spec: SweepSpec) -> None:
    """:class:`InputError` when a grid dimension of an autoscale sweep sets a parameter that a policy of the
    sweep ignores (``target`` for ``scheduled``, ``tick_s`` for ``static`` without spot): its rows would
    repeat one another silently. Names the policy's parameters."""
    from gpufleet.simulate.policies import policy_parameters

    if spec.kind != "autoscale":
        return
    varying = _varying_policy_params(spec)
    has_target = "target" in spec.grid
    if not varying and not has_target:
        return
    for cfg in spec.configs():
        name = str(cfg.get("policy", "kpa"))
        takes = policy_parameters(name, spot=float(cfg.get("spot_share", 0.0) or 0.0) > 0)
        if not takes:
            continue  # an unknown policy is refused by make_policy, naming the allowed ones
        ignored = sorted(k for k in varying if k not in takes)
        why = "grid policy_params varies " + ", ".join(ignored) if ignored else ""
        if has_target and _AUTOSCALE_POLICY_TARGET.get(name) not in takes:
            why = "grid target sets a concurrency target, which it does not have"
        if why:
            raise InputError(
                f"sweep spec (autoscale): {why}, but policy {name} ignores it, so its runs would repeat "
                f"one another. Policy {name} takes: {', '.join(takes)}. Sweep one of those (in "
                f"policy_params), or leave {name} out of this sweep's policies."
            )


def check_batch_dimensions(spec: SweepSpec) -> None:
    """:class:`InputError` when a batch sweep would run a policy with nothing to act on (``offpeak``
    without an off-peak window, ``spot`` without a spot pool, ``deadline`` without deadlines: plain fifo
    rows under another name), or varies ``checkpoint_h``/``restart_h`` on a fleet with no spot pool (no
    job is ever interrupted, so the rows repeat). Reads each job file and fleet file of the grid once."""
    from gpufleet.simulate.batch import check_policy_acts, default_fleet, read_fleet
    from gpufleet.simulate.jobs import read_jobs

    if spec.kind != "batch":
        return
    jobs: dict[str, Any] = {}
    fleets: dict[str | None, Any] = {}
    seen: set[tuple[str, str, str | None]] = set()
    for cfg in spec.configs():
        key = (str(cfg.get("policy", "fifo")), str(cfg["jobs"]), cfg.get("fleet"))
        if key in seen:
            continue
        seen.add(key)
        policy, job_path, fleet_path = key
        if job_path not in jobs:
            jobs[job_path] = read_jobs(job_path)
        if fleet_path not in fleets:
            fleets[fleet_path] = read_fleet(fleet_path) if fleet_path else default_fleet()
        fleet = fleets[fleet_path]
        try:
            check_policy_acts(policy, jobs[job_path], fleet)
        except InputError as exc:
            raise InputError(f"sweep spec (batch), jobs {job_path}: {exc}") from None
        spotless = all(p.kind != "spot" for p in fleet.pools)
        for k in ("checkpoint_h", "restart_h"):
            if k in spec.grid and spotless:
                raise InputError(
                    f"sweep spec (batch): grid {k} varies the checkpoint/restart of interrupted jobs, but "
                    f"the fleet {fleet.name} has no spot pool, so no job is interrupted and its runs would "
                    "repeat one another. Add a pool with kind: spot, or take "
                    f"{k} out of the grid."
                )


def run_config(kind: str, cfg: Mapping[str, Any]) -> dict[str, Any]:
    """One run of a sweep: the simulator's headline metrics (a picklable top-level function)."""
    c = dict(cfg)
    seed = int(c.pop("seed", 0))
    if kind == "autoscale":
        from gpufleet.simulate.autoscale import simulate_autoscale
        from gpufleet.simulate.policies import make_policy

        rate = float(c.pop("rate", 1.0))
        dep = _deployment(
            str(c.pop("trace")),
            rate,
            str(c.pop("model", "llama-3.1-8b")),
            c.pop("gpu", None),
            str(c.pop("precision", "bf16")),
        )
        name = str(c.pop("policy", "kpa"))
        params = dict(c.pop("policy_params", {}) or {})
        if "target" in c:
            params[_AUTOSCALE_POLICY_TARGET.get(name, "target")] = c.pop("target")
        r = simulate_autoscale(
            _trace(str(cfg["trace"]), rate),
            dep,
            make_policy(name, **params),
            seed=seed,
            compare_static_peak=bool(c.pop("compare_static_peak", False)),
            **c,
        )
        return {
            "ttft_p50_s": r.ttft.p50_s,
            "ttft_p95_s": r.ttft.p95_s,
            "tpot_p95_s": r.tpot.p95_s,
            "e2e_p95_s": r.e2e.p95_s,
            "slo_attainment": r.slo_attainment,
            "replica_hours": r.replica_hours,
            "cost_usd": r.cost_usd,
            "scale_events": len(r.scale_events),
            "cold_start_hits": r.cold_start_hits,
        }
    if kind == "spot":
        from gpufleet.simulate.spot import simulate_spot

        sr = simulate_spot(seed=seed, **c)
        out: dict[str, Any] = {"work_h": sr.work_h, "best": sr.best or ""}
        for o in sr.outcomes:
            out[f"{o.strategy}_cost_usd"] = o.expected_cost_usd
            out[f"{o.strategy}_p_miss"] = o.p_deadline_miss if o.p_deadline_miss is not None else float("nan")
        return out
    if kind == "batch":
        from gpufleet.simulate.batch import read_fleet, simulate_batch
        from gpufleet.simulate.jobs import read_jobs

        fleet = read_fleet(c.pop("fleet")) if c.get("fleet") else None
        c.pop("fleet", None)
        b = simulate_batch(read_jobs(c.pop("jobs")), fleet, seed=seed, **c)
        return {
            "makespan_h": b.makespan_h,
            "wait_p50_h": b.wait_p50_h,
            "wait_p95_h": b.wait_p95_h,
            "utilisation": b.utilisation,
            "cost_usd": b.cost_usd,
            "deadline_misses": b.deadline_misses,
        }
    raise InputError(f"sweep kind {kind!r} is unknown. Allowed: {', '.join(SWEEP_KINDS)}.")


@checked_arguments("sweep")
def run_sweep(
    spec: SweepSpec,
    *,
    engine: str = "local",
    workers: int | None = None,
    address: str | None = None,
    parquet: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SweepResult:
    """Run every configuration of ``spec`` (module doc); ``progress(done, total)`` after each run."""
    if parquet:
        from gpufleet.fileio import check_output_path, check_output_suffix

        check_output_path(parquet, what="Parquet file (--parquet)")  # before the runs, not after them
        if not Path(parquet).exists():  # an existing file may be an input: named as such at the write
            check_output_suffix(parquet, "parquet", flag="--parquet")
    if engine not in ENGINES:
        raise InputError(f"engine {engine!r} is unknown. Allowed: {', '.join(ENGINES)}.")
    check_sweep_spec(spec)
    check_batch_dimensions(spec)
    workers = check_count("workers", workers, maximum=1024, flag="--workers", allow_none=True)
    if engine == "local" and address is not None:
        raise InputError(
            f"--address {address!r} names a Ray cluster, but the engine is local (processes on this "
            "machine), so it would be silently ignored. Pass --engine ray with --address, or leave "
            "--address out."
        )
    if engine == "ray" and workers is not None:
        raise InputError(
            f"--workers {workers} sets local processes, but the engine is ray (the cluster schedules the "
            "runs), so it would be silently ignored. Leave --workers out with --engine ray, or use "
            "--engine local."
        )
    configs = spec.configs()
    t0 = time.perf_counter()
    results: list[dict[str, Any] | None] = [None] * len(configs)
    if engine == "ray":
        _run_ray(spec.kind, configs, results, address, progress)
    elif workers == 1:
        for k, cfg in enumerate(configs):
            results[k] = run_config(spec.kind, cfg)
            if progress:
                progress(k + 1, len(configs))
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futs = {pool.submit(run_config, spec.kind, cfg): k for k, cfg in enumerate(configs)}
            for n, fut in enumerate(as_completed(futs), start=1):
                results[futs[fut]] = fut.result()
                if progress:
                    progress(n, len(configs))
    varying = [k for k in spec.grid] + ["seed"]
    metrics = list(dict.fromkeys(m for r in results if r for m in r))
    columns = tuple(varying + metrics)
    rows = tuple(
        tuple([cfg.get(k) for k in varying] + [(r or {}).get(m) for m in metrics])
        for cfg, r in zip(configs, results, strict=True)
    )
    path = str(parquet) if parquet else None
    if parquet:
        write_parquet(parquet, columns, rows)
    return SweepResult(
        kind=spec.kind,
        engine=engine,
        columns=columns,
        rows=rows,
        wall_s=time.perf_counter() - t0,
        parquet=path,
    )


#: seconds to wait for a Ray head node to accept a connection before ray.init (which retries for minutes)
RAY_CONNECT_TIMEOUT_S = 5.0


def _check_ray_address(address: str | None) -> None:
    """Refuse an ``address`` that is no HOST:PORT, or whose head node does not accept a TCP connection:
    ``ray.init`` retried an unreachable address for ~5 minutes, then exited the process with code 15."""
    import socket

    if address is None or address.strip().lower() in ("auto", "local"):
        return
    target = address.strip().removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    if not sep or not host or not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(
            f"--address {address!r} is not a Ray cluster address: give HOST:PORT of the head node (e.g. "
            "10.0.0.5:6379), ray://HOST:PORT, or auto; leave it out to start a local Ray."
        )
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=RAY_CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise FetchError(
            f"Cannot reach the Ray cluster at {address!r} ({exc.strerror or exc}): nothing accepted a "
            f"connection within {RAY_CONNECT_TIMEOUT_S:g} s. Start the head node (ray start --head), fix "
            "--address, or leave it out to start a local Ray."
        ) from None


def _run_ray(
    kind: str,
    configs: list[dict[str, Any]],
    results: list[dict[str, Any] | None],
    address: str | None,
    progress: Callable[[int, int], None] | None,
) -> None:
    try:
        import ray
    except ImportError:
        raise UnsupportedError("the Ray engine needs the ray extra: pip install 'gpufleet[ray]'.") from None
    started = not ray.is_initialized()
    if started:
        _check_ray_address(address)
        ray.init(address=address, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        remote = ray.remote(run_config)
        refs = {remote.remote(kind, cfg): k for k, cfg in enumerate(configs)}
        pending = list(refs)
        done = 0
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                results[refs[ref]] = ray.get(ref)
                done += 1
                if progress:
                    progress(done, len(configs))
    finally:
        if started:
            ray.shutdown()


def write_parquet(path: Path, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Write the rows as a Parquet table (pyarrow), atomically."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UnsupportedError("Parquet output needs pyarrow: pip install 'gpufleet[parquet]'.") from None
    import io

    from gpufleet.fileio import atomic_write_bytes, check_output_suffix

    check_output_suffix(path, "parquet", flag="--parquet")
    table = pa.table({c: [r[k] for r in rows] for k, c in enumerate(columns)})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    atomic_write_bytes(Path(path), buf.getvalue(), what="Parquet file (--parquet)")
