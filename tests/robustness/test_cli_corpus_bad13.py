"""Bad-input corpus, thirteenth pass (same checker as ``test_cli_corpus.py``): exit 2, one message naming the
problem, no traceback, no hang (10 s alarm per case). The dashboard's query strings are in
``tests/service/test_dashboard_bad_params.py`` (with API bodies carrying a Content-Encoding).

Before the fixes:

- ``simulate spot --checkpoint-hours 1000`` (an interval far beyond the 2.25 h MTBI): every interruption loses
  the work since the start, E[T] grows as e^(work / MTBI); the 2-GPU layout simulated ~10,000 h of wall time
  per run (4,000+ interruptions x 100 runs) and the command took a minute. Now refused up front from the
  closed form when a run expects more than 1,000 interruptions (the layout is skipped with that reason; with
  ``--gpus 2`` the command exits 2);
- ``simulate spot --runs 0`` (``--seed -1``, ``--confidence 0.5``, ``--checkpoint-hours 0``) without
  ``--gpus``: the same message once per GPU count searched ("1 GPUs: --runs must be ...; 2 GPUs: --runs
  must be ...", ten times); now once, before the search;
- a ``simulate batch`` fleet file with two pools of one name (or a pool naming an unknown GPU after a pool
  priced from the catalog): the message named a catalog offer ("The fleet file cudo/no-kristiansand-1/...")
  instead of the file (a variable holding the file name was reused for the price's source).

The generated part (:data:`SPOT_OPTION_CASES`) runs every shared option of ``simulate spot`` with values
that are not numbers, not finite, zero, negative, with units or in other scripts: each exits 2 naming the
option once.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from test_cli_corpus import _check, runner

from gpufleet.cli.app import app

pytestmark = pytest.mark.usefixtures("cli_case_guard")

DATA = Path(__file__).parents[1] / "data"
JOBS = DATA / "simulate" / "jobs.csv"
SPOT = ["simulate", "spot", "--model", "llama-3-8b", "--tokens", "1e9", "--gpu", "h100"]


# ---- simulate spot: a checkpoint interval far beyond the MTBI ------------------------------------
def test_spot_interval_far_beyond_the_mtbi_is_refused_fast() -> None:
    start = time.monotonic()
    _check(
        [*SPOT, "--gpus", "2", "--checkpoint-hours", "1000"],
        ["Checkpointing every 1000 h", "between interruptions", "1,000 interruptions", "--checkpoint-hours"],
    )
    assert time.monotonic() - start < 8


def test_spot_layout_search_skips_the_layout_that_cannot_progress() -> None:
    start = time.monotonic()
    res = runner.invoke(app, [*SPOT, "--checkpoint-hours", "1000", "--format", "json"])
    assert res.exit_code == 0, res.output[-800:]
    assert time.monotonic() - start < 8
    flat = " ".join(res.output.split())
    assert "Checkpointing every 1000 h" in flat and '"status": "skipped"' in flat, flat[:600]
    assert '"gpus": 8' in flat  # the answer is a layout that progresses


def test_spot_a_checkpoint_interval_within_reach_still_runs() -> None:
    res = runner.invoke(app, [*SPOT, "--gpus", "8", "--checkpoint-hours", "1", "--runs", "20"])
    assert res.exit_code == 0, res.output[-800:]


# ---- simulate spot: the options every layout shares, reported once -------------------------------
@pytest.mark.parametrize(
    ("opt", "value"),
    [("--runs", "0"), ("--seed", "-1"), ("--confidence", "0.5"), ("--checkpoint-hours", "0")],
)
def test_spot_shared_option_error_is_reported_once(opt: str, value: str) -> None:
    res = runner.invoke(app, [*SPOT, opt, value])
    assert res.exit_code == 2, res.output[-800:]
    flat = " ".join(res.output.split())
    assert "GPUs:" not in flat and "No layout" not in flat, flat[:600]
    assert len(flat) < 400, flat  # one message (it was ten, one per GPU count)


SPOT_BAD_VALUES = ["0", "-1", "nan", "inf", "-inf", "1e309", "80GB", "1.5h", "200ms", "", " ", "٥", "1,5"]
SPOT_OPTIONS = [
    "--runs",
    "--seed",
    "--checkpoint-hours",
    "--deadline-hours",
    "--confidence",
    "--tokens",
    "--gpus",
]
#: every (option, value) whose value the option refuses (--seed 0 is a seed)
SPOT_OPTION_CASES = [
    (opt, value)
    for opt in SPOT_OPTIONS
    for value in SPOT_BAD_VALUES
    if not (opt == "--seed" and value == "0")
]


@pytest.mark.parametrize(("opt", "value"), SPOT_OPTION_CASES)
def test_spot_option_values(opt: str, value: str) -> None:
    argv = [a for a in SPOT if a not in ("--tokens", "1e9")] if opt == "--tokens" else list(SPOT)
    res = runner.invoke(app, [*argv, opt, value])
    out = res.output
    assert not isinstance(res.exception, TimeoutError), "hang"
    assert "Traceback" not in out, out
    assert res.exit_code == 2, f"exit {res.exit_code}: {out[-600:]}"
    flat = " ".join(out.split())
    assert "GPUs:" not in flat, flat[:600]  # not repeated per layout
    name = opt.removeprefix("--")
    assert name in flat or name.replace("-", "_") in flat or opt in flat, flat[:600]


# ---- simulate batch: the fleet file named in its messages ----------------------------------------
POOL = {"name": "od", "gpu": "h100", "gpus_per_node": 8, "nodes": 4, "kind": "on_demand"}


@pytest.mark.parametrize(
    "pools",
    [
        [POOL, dict(POOL)],
        [POOL, {**POOL, "name": "x", "gpu": "H999", "price_usd_per_node_hour": 10}],
    ],
    ids=["duplicate-pool-name", "unknown-gpu-after-a-catalog-priced-pool"],
)
def test_batch_fleet_messages_name_the_file(tmp_path: Path, pools: list[dict[str, object]]) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump({"pools": pools}))
    res = runner.invoke(app, ["simulate", "batch", str(JOBS), "--fleet", str(path)])
    assert res.exit_code == 2, res.output[-600:]
    flat = "".join(res.output.split())
    assert f"Thefleetfile{path}".replace(" ", "") in flat, flat[:600]
    assert "pool" in flat


# ---- serve token: ids beyond 64 bits, a database that cannot be opened ---------------------------------
@pytest.mark.parametrize("token_id", ["99999999999999999999999", str(2**63), str(-(2**63) - 1)])
def test_token_revoke_id_beyond_64_bits(tmp_path: Path, token_id: str) -> None:
    pytest.importorskip("sqlalchemy")
    _check(
        ["serve", "token", "revoke", "--db", f"sqlite:///{tmp_path / 't.db'}", "--", token_id],
        [f"No token with id {token_id}", "List the tokens"],
    )


@pytest.mark.parametrize("command", [["create", "--team", "a"], ["list"], ["revoke", "1"]])
def test_token_commands_database_refused(command: list[str]) -> None:
    pytest.importorskip("psycopg")
    url = "postgresql://u:secret@127.0.0.1:1/x"  # port 1: nothing listens, the connection is refused at once
    _check(
        ["serve", "token", *command, "--db", url], ["Cannot open the database", "u:***@127.0.0.1:1", "--db"]
    )
    res = runner.invoke(app, ["serve", "token", *command, "--db", url])
    assert "secret" not in res.output


@pytest.mark.parametrize(
    ("fleet", "label"), [(DATA / "simulate" / "fleet.yaml", "fleet.yaml"), (None, "default fleet")]
)
def test_batch_result_names_its_fleet(fleet: Path | None, label: str) -> None:
    """The result's fleet label was the last pool's price source: "given" (a pool with its own price) or a
    catalog offer such as "nebius/eu-north1/..." for the default fleet."""
    import json

    argv = ["simulate", "batch", str(JOBS), "-f", "json", *(["--fleet", str(fleet)] if fleet else [])]
    res = runner.invoke(app, argv)
    assert res.exit_code == 0, res.output[-600:]
    assert json.loads(res.stdout)["result"]["fleet"] == label


# ---- simulate sweep --engine ray: an address nothing listens on -------------------------------------------
@pytest.mark.parametrize(
    ("address", "words"),
    [
        ("127.0.0.1:1", ["Cannot reach the Ray cluster", "'127.0.0.1:1'", "ray start --head"]),
        ("ray://127.0.0.1:1", ["Cannot reach the Ray cluster", "ray start --head"]),
        ("nope", ["is not a Ray cluster address", "HOST:PORT"]),
        ("head:99999", ["is not a Ray cluster address", "HOST:PORT"]),
        ("head:", ["is not a Ray cluster address"]),
        (":6379", ["is not a Ray cluster address"]),
    ],
)
def test_sweep_ray_address_unreachable(address: str, words: list[str]) -> None:
    """ray.init retried an unreachable address for ~5 minutes (signals blocked: no alarm ends it), then ended
    the process with exit 15; now a TCP check of 5 s at most comes first."""
    pytest.importorskip("ray")
    sweep = str(DATA / "simulate" / "sweep.yaml")
    start = time.monotonic()
    _check(["simulate", "sweep", sweep, "--engine", "ray", "--address", address], words)
    assert time.monotonic() - start < 8
