"""`--min-zones` (issue 22 item 3): production serving over >= 2 zones, sized for a lost zone."""

from __future__ import annotations

import json

from .clirun import run_cli

ASK = ("recommend", "--model", "llama-3.1-8b", "--target-rps", "5", "--ttft-ms", "500", "--tpot-ms", "50")


def test_min_zones_two_survives_a_zone() -> None:
    r = run_cli(*ASK, "--min-zones", "2", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)["result"]
    assert doc["workload"]["min_zones"] == 2
    assert "one of 2 zones lost" in doc["best"]["survives"]


def test_the_table_says_what_it_survives() -> None:
    r = run_cli(*ASK, "--top", "1")
    assert r.exit_code == 0
    assert "Survives:" in r.output and "one node lost" in " ".join(r.output.split())


def test_min_zones_out_of_range_exits_2() -> None:
    for bad in ("0", "7"):
        r = run_cli(*ASK, "--min-zones", bad)
        assert r.exit_code == 2, (bad, r.output)
        assert "min_zones" in r.output or "min-zones" in r.output
