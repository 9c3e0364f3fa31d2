"""Bad-input corpus, twelfth pass: what the generated mutations of the valid examples found (every CLI option
with blank, boundary and unit-suffixed values; every field of the workload, user catalog, commitments, HF
config, batch fleet, sweep spec, inventory and alert-rule files dropped or retyped; every cell of the cases,
jobs, trace and nvidia-smi CSVs; every query parameter of the HTTP API's GET routes). Same checker as
``test_cli_corpus.py``: exit 2, one message naming the problem, no traceback, no hang.

Before the fixes (each exited 0 with a silent answer, or answered 200):

- ``estimate infer|memory --precision ""`` (or blanks) sized the model in bf16 (``precision or "bf16"``);
- a blank value next to another of a filter (``--gpu H100 --gpu " "``, ``providers: [aws, ""]``) was dropped;
- a user catalog machine with ``gpu_count: 1.5`` (or 0.01) GPUs: neither whole GPUs nor a slice sold (the
  shipped slices are 1/8 to 1/2 of one GPU);
- a ``simulate batch`` fleet team with ``nominal_gpus: 16.5`` or ``borrowing_limit_gpus: 1.5`` (Kueue GPU
  quotas are whole GPUs);
- a sweep spec with ``seeds: 0``, ``seeds: ""``, ``grid: 0``, ``grid: []`` or ``base: ""``: the falsy value
  was read as the default (``doc.get(k) or default``) and the default sweep ran;
- an alert rule whose threshold every value meets (``gpu_util_pct > -1``, ``power_w < 6000``): an alert that
  is always on (the mirror of the "can never be met" check that was there);
- ``GET /api/v1/catalog/changes?provider=nope`` (or blank, or ``instance_type=" "``): 200 with an empty list,
  as if no price had changed.

The generated part (:data:`MUTATIONS`) runs every mutation of the sweep spec, the batch fleet file, the user
catalog and the alert rules and asserts the contract for all of them (exit 0 or 2, never a traceback, exit 1
or a hang); the defects above are pinned by name below it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_cli_corpus import _check, runner

from gpufleet.cli.app import app

pytestmark = pytest.mark.usefixtures("cli_case_guard")

DATA = Path(__file__).parents[1] / "data"
JOBS = DATA / "simulate" / "jobs.csv"
EI = ["estimate", "infer", "-m", "llama-3-8b", "-g", "h100"]
EM = ["estimate", "memory", "-m", "llama-3-8b", "-g", "h100"]
ET = ["estimate", "train", "-m", "llama-3-8b", "-g", "h100"]


def _ok(argv: list[str]) -> str:
    res = runner.invoke(app, argv)
    assert res.exit_code == 0, f"exit {res.exit_code}: {res.output[-800:]}"
    return res.output


# ---- blank option values -----------------------------------------------------------------------------------
@pytest.mark.parametrize("cmd", [EI, EM, ET], ids=["infer", "memory", "train"])
@pytest.mark.parametrize("value", ["", " ", "\t"])
def test_blank_precision(cmd: list[str], value: str) -> None:
    _check([*cmd, "--precision", value], ["Unknown precision", "Allowed", "bf16"])


BLANK_AMONG = ["", " ", ",", " , "]


@pytest.mark.parametrize("blank", BLANK_AMONG)
@pytest.mark.parametrize(
    ("cmd", "opt", "first"),
    [
        (["catalog", "offers"], "--gpu", "h100"),
        (["catalog", "offers"], "--provider", "aws"),
        (["catalog", "offers"], "--region", "us-*"),
        (["recommend", "--model", "llama-3-8b"], "--gpu", "h100"),
        (["recommend", "--model", "llama-3-8b"], "--provider", "aws"),
    ],
    ids=["offers-gpu", "offers-provider", "offers-region", "recommend-gpu", "recommend-provider"],
)
def test_blank_value_among_filter_values(cmd: list[str], opt: str, first: str, blank: str) -> None:
    """recommend refused a whole blank value already (the workload's blank-text check), not ``" , "``."""
    words = ["empty value", repr(blank), "remove the empty one"] if cmd[0] == "catalog" else [first]
    _check([*cmd, opt, first, opt, blank], words)


def test_blank_item_in_a_workload_file_list(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text("model: llama-3-8b\ntask: inference\nproviders: [aws, ' , ']\n")
    _check(["recommend", str(path)], ["empty value", "' , '", "remove the empty one"])


def test_a_trailing_comma_in_one_value_still_works() -> None:
    out = _ok(["catalog", "offers", "--gpu", "h100,", "--limit", "1"])
    assert "H100" in out


# ---- user catalog: GPUs per machine ------------------------------------------------------------------------
def _catalog(gpu_count: object) -> dict[str, Any]:
    return {
        "version": 1,
        "offers": [
            {
                "provider": "onprem",
                "region": "dc",
                "instance_type": "box",
                "gpu": "H100-SXM",
                "gpu_count": gpu_count,
                "price_on_demand_usd_per_hour": 18.5,
            }
        ],
    }


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
@pytest.mark.parametrize("count", [1.5, 2.25, 7.999, 0.01, 1e-9, 0.1])
def test_user_catalog_gpu_count_neither_whole_nor_a_slice(tmp_path: Path, count: float, suffix: str) -> None:
    path = tmp_path / f"c{suffix}"
    path.write_text(json.dumps(_catalog(count)))
    _check(
        ["catalog", "offers", "--catalog", str(path)],
        [f"gpu_count {count:g}", "whole number of GPUs", "0.125"],
    )


@pytest.mark.parametrize("count", [0.125, 0.5, 1, 8, 8.0, 72])
def test_user_catalog_gpu_count_whole_or_a_slice_passes(tmp_path: Path, count: float) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(_catalog(count)))
    assert "box" in _ok(["catalog", "offers", "--catalog", str(path), "--provider", "onprem"])


# ---- simulate batch: team quotas ---------------------------------------------------------------------------
BATCH_FLEET = {"pools": [{"name": "od", "gpu": "h100", "gpus_per_node": 8, "nodes": 4, "kind": "on_demand"}]}


@pytest.mark.parametrize("field", ["nominal_gpus", "borrowing_limit_gpus"])
@pytest.mark.parametrize("value", [1.5, 0.5, 16.25])
def test_batch_team_quota_fractional_gpus(tmp_path: Path, field: str, value: float) -> None:
    doc = BATCH_FLEET | {
        "teams": {"research": {"nominal_gpus": 16, "borrowing_limit_gpus": 8} | {field: value}}
    }
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(doc))
    _check(["simulate", "batch", str(JOBS), "--fleet", str(path)], [f"teams.research.{field}", str(value)])


def test_batch_team_quota_whole_gpus_passes(tmp_path: Path) -> None:
    doc = BATCH_FLEET | {"teams": {"research": {"nominal_gpus": 16, "borrowing_limit_gpus": 8.0}, "prod": {}}}
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(doc))
    _ok(["simulate", "batch", str(JOBS), "--fleet", str(path)])


# ---- simulate sweep: falsy values are not the default ------------------------------------------------------
def _sweep(**over: object) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "kind": "batch",
        "base": {"jobs": str(JOBS), "fleet": str(DATA / "simulate" / "fleet.yaml")},
        "grid": {"policy": ["fifo", "easy"]},
        "seeds": [0, 1],
    }
    doc.update(over)
    return doc


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("seeds", 0, ["seeds = 0", "list of integers"]),
        ("seeds", "", ["seeds = ''", "list of integers"]),
        ("seeds", {}, ["seeds = {}", "list of integers"]),
        ("seeds", False, ["seeds = False", "list of integers"]),
        ("seeds", 3, ["seeds = 3", "list of integers"]),
        ("grid", 0, ["grid = 0", "non-empty list"]),
        ("grid", "", ["grid = ''", "non-empty list"]),
        ("grid", [], ["grid = []", "non-empty list"]),
        ("grid", False, ["grid = False", "non-empty list"]),
        ("base", "", ["base = ''", "mapping"]),
        ("base", [], ["base = []", "mapping"]),
        ("base", 0, ["base = 0", "mapping"]),
    ],
)
def test_sweep_falsy_value_is_not_the_default(
    tmp_path: Path, key: str, value: object, words: list[str]
) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(_sweep(**{key: value})))
    _check(["simulate", "sweep", str(path)], ["sweep spec", *words])


@pytest.mark.parametrize("key", ["grid", "seeds"])
def test_sweep_null_is_the_default(tmp_path: Path, key: str) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(_sweep(**{key: None})))
    _ok(["simulate", "sweep", str(path)])


# ---- alert rules: a threshold every value meets ------------------------------------------------------------
def _rules(metric: str, op: str, threshold: float) -> str:
    rule = {"name": "r", "metric": metric, "op": op, "threshold": threshold, "for": "5m"}
    return yaml.safe_dump({"rules": [rule]})


@pytest.mark.parametrize(
    ("metric", "op", "threshold"),
    [
        ("gpu_util_pct", ">", -1),
        ("gpu_util_pct", ">=", -5),
        ("gpu_util_pct", "<", 101),
        ("gpu_util_pct", "<=", 150),
        ("memory_used_pct", "<", 1000),
        ("sm_active_ratio", ">", -0.1),
        ("power_w", "<", 6000),
        ("gpu_temp_c", ">", -60),
    ],
)
def test_alert_rule_that_always_fires(tmp_path: Path, metric: str, op: str, threshold: float) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(_rules(metric, op, threshold))
    _check(
        ["telemetry", "alerts", "--rules", str(path), "--export", "prometheus"],
        [f"threshold {threshold:g}", "met by every value", metric, "fire all the time"],
    )


@pytest.mark.parametrize(
    ("metric", "op", "threshold"),
    [
        ("gpu_util_pct", ">", 0),
        ("gpu_util_pct", ">=", 0),
        ("gpu_util_pct", "<", 100),
        ("power_w", "<=", 5000),
    ],
)
def test_alert_rule_at_the_range_edge_passes(tmp_path: Path, metric: str, op: str, threshold: float) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(_rules(metric, op, threshold))
    assert "alert: r" in _ok(["telemetry", "alerts", "--rules", str(path), "--export", "prometheus"])


# ---- generated mutations: the contract holds for every one -------------------------------------------------
BAD_VALUES: list[object] = [
    None, True, 0, -1, -0.0, 1.5, 1e308, 10**30, "", "  ", "80GB", "nan", [], {}, "x" * 5000, "\uff48100",
    "2999-01-01", -1e-300,
]  # fmt: skip
_DROP = object()


def _leaves(doc: object, path: tuple[object, ...] = ()) -> Iterator[tuple[object, ...]]:
    if path:
        yield path
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _leaves(v, (*path, i))


def _mutated(doc: object, path: tuple[object, ...], value: object) -> object:
    out = copy.deepcopy(doc)
    cur: Any = out
    for key in path[:-1]:
        cur = cur[key]
    if value is _DROP:
        del cur[path[-1]]
    else:
        cur[path[-1]] = value
    return out


ALERT_RULES = {
    "rules": [
        {"name": "hot", "metric": "gpu_util_pct", "op": ">", "threshold": 90, "for": "1m", "severity": "x"},
        {"name": "slow", "metric": "ttft_p95_s", "op": ">=", "threshold": 1, "for": "5m", "action": "scale"},
    ]
}  # fmt: skip
SURFACES: dict[str, tuple[object, list[str]]] = {
    "sweep": (_sweep(), ["simulate", "sweep", "{f}", "-f", "json"]),
    "batch-fleet": (
        BATCH_FLEET | {"teams": {"research": {"nominal_gpus": 16, "borrowing_limit_gpus": 8}, "prod": {}}},
        ["simulate", "batch", str(JOBS), "--fleet", "{f}", "-f", "json"],
    ),
    "user-catalog": (_catalog(8), ["catalog", "offers", "--catalog", "{f}", "--provider", "onprem"]),
    "alert-rules": (ALERT_RULES, ["telemetry", "alerts", "--rules", "{f}", "--export", "prometheus"]),
}
MUTATIONS = [
    pytest.param(name, path, value, id=f"{name}:{'.'.join(map(str, path))}={'drop' if value is _DROP else k}")
    for name, (doc, _) in SURFACES.items()
    for path in _leaves(doc)
    for k, value in enumerate([_DROP, *BAD_VALUES])
]


@pytest.mark.parametrize(("surface", "path", "value"), MUTATIONS)
def test_generated_mutation_keeps_the_contract(
    tmp_path: Path, surface: str, path: tuple[object, ...], value: object
) -> None:
    """Exit 0 (the mutation is a valid file: a dropped optional key, a free-text field) or 2 with a message;
    never exit 1, a traceback or a hang; an answer never shows NaN or infinity."""
    doc, argv = SURFACES[surface]
    file = tmp_path / "doc.yaml"
    file.write_text(yaml.safe_dump(_mutated(doc, path, value), allow_unicode=True))
    res = runner.invoke(app, [a.replace("{f}", str(file)) for a in argv])
    assert not isinstance(res.exception, TimeoutError), "hang"
    assert "Traceback" not in res.output, res.output[-1500:]
    assert res.exit_code in (0, 2), f"exit {res.exit_code} ({res.exception!r}): {res.output[-800:]}"
    if res.exit_code == 2:
        assert res.output.strip() and "Error" in res.output, res.output
    else:
        assert not any(w in res.output for w in ("NaN", "Infinity")), res.output[-800:]


# ---- regions: a bandwidth no transfer runs at ------------------------------------------------------------
@pytest.mark.parametrize("gbps", ["1e-320", "1e-9", "0.0009"])
def test_regions_bandwidth_below_one_megabit(gbps: str) -> None:
    """1e-320 Gbit/s answered exit 0 with every transfer time null (the division overflowed)."""
    _check(["regions", "--model", "llama-3-8b", "--bandwidth-gbps", gbps], ["--bandwidth-gbps", "1 Mbit/s"])


# ---- GPU Fleet Optimizer model_config.json: a size class that is not a mapping -----------------------------
@pytest.mark.parametrize("entry", ["0", '"80GB"', "null", "[]", "true", '""'])
def test_gfo_model_config_class_not_a_mapping(tmp_path: Path, entry: str) -> None:
    """``small: 0`` was skipped and the class kept gpufleet's pinned model: `config check` said OK."""
    path = tmp_path / "model_config.json"
    path.write_text('{"model_sizes": {"small": ' + entry + ', "medium": {"parameter_count_billion": 35}}}')
    _check(["config", "check", str(path)], ["entry 'small'", "expected a mapping", "parameter_count_billion"])


# ---- telemetry: a blank --prometheus URL -------------------------------------------------------------------
@pytest.mark.parametrize("url", ["", " ", "\t"])
@pytest.mark.parametrize(
    "cmd",
    [
        ["telemetry", "findings"],
        ["telemetry", "report"],
        ["telemetry", "ingest", "--start", "2026-07-01T00:00:00Z"],
    ],
    ids=["findings", "report", "ingest"],
)
def test_telemetry_blank_prometheus_url(cmd: list[str], url: str) -> None:
    """It was read as not given: findings and report analysed the local store (exit 0)."""
    _check([*cmd, "--prometheus", url], ["--prometheus", "is blank", "base URL"])


@pytest.mark.parametrize("flag", ["--models", "--gpus"])
@pytest.mark.parametrize("blank", ["", " ", ","])
def test_matrix_blank_value_among_names(flag: str, blank: str) -> None:
    """``--gpus h100 --gpus ""`` dropped the blank one and answered the matrix (exit 0)."""
    argv = ["estimate", "matrix", "--models", "llama-3-8b", "--gpus", "h100", flag, blank]
    _check(argv, [flag, "given 2 times", "names nothing"])


# ---- serve: refused before the server starts -------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--db", ""], ["--db ''", "is blank"]),
        (["--db", "  "], ["--db '", "is blank"]),
        (["--db", "{tmp}/no/such/folder/s.sqlite3"], ["database file (--db)", "folder"]),
        (["--db", "sqlite:///{tmp}/no/such/folder/s.sqlite3"], ["database file (--db)", "folder"]),
        (["--db", "{tmp}"], ["database file (--db)", "is a folder"]),
        (["--db", "{tmp}/" + "x" * 300], ["database file (--db)"]),
        (["--port", "0"], ["--port", "1<=x<=65535"]),
        (["--request-time-limit", "1e-320"], ["--request-time-limit", "below 0.1 s", "0 for no limit"]),
        (["--request-time-limit", "0.01"], ["--request-time-limit", "below 0.1 s"]),
        (["--rate-limit", "1e-320"], ["--rate-limit", "below 0.001", "0 for no limit"]),
    ],
)
def test_serve_refuses_before_starting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], words: list[str]
) -> None:
    """Each started the server (a blank --db: the default database or a file named " "; --port 0: a random
    port while the banner printed :0; a 1e-320 s time limit: a 504 for every request) or failed after it
    started with SQLite's traceback (a missing folder, a 300-character name). A server that would start
    fails the case instead of serving."""
    import uvicorn

    def started(*_: object, **__: object) -> None:
        raise AssertionError("the server started")

    monkeypatch.setattr(uvicorn, "run", started)
    argv = ["serve", "--no-scheduler", *(a.replace("{tmp}", str(tmp_path)) for a in args)]
    if "--db" not in args:
        argv += ["--db", str(tmp_path / "s.sqlite3")]
    _check(argv, words)
