"""`gpufleet config check`: kinds told by content, summaries, and one clear paragraph per bad file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.cli.config import detect_kind

DATA = Path(__file__).parent.parent / "data"
runner = CliRunner()

SPOT_HEADER = (
    "provider,mean_time_between_interruptions_h,notice_s,restart_overhead_s,checkpoint_cost_s,max_runtime_h,"
    "verified,source\n"
)


def _check(*paths: Path) -> tuple[int, str, str]:
    r = runner.invoke(app, ["config", "check", *map(str, paths)])
    assert ("Traceback" not in r.output and r.exception is None) or isinstance(r.exception, SystemExit)
    return r.exit_code, r.stdout, r.stderr


def _write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text, encoding="utf-8")
    return p


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    return {
        "catalog": _write(
            tmp_path,
            "onprem.yaml",
            "offers:\n  - {provider: onprem, region: dc1, instance_type: box8, gpu: H100, gpu_count: 8,\n"
            "     price_on_demand_usd_per_hour: 12.0}\n",
        ),
        "commitments": _write(
            tmp_path,
            "commit.yaml",
            "commitments:\n  - {provider: aws, program: reserved, term_years: 1, discount_fraction: 0.3, "
            "source: our quote}\n",
        ),
        "spot_assumptions": _write(tmp_path, "spot.csv", SPOT_HEADER + "*,4,30,600,300,,no,test\n"),
        "workload": _write(
            tmp_path, "w.yaml", "name: chat\nmodel: llama-3.1-8b\ntarget_output_tokens_per_s: 100\n"
        ),
        "gfo_workloads": _write(
            tmp_path,
            "workloads.json",
            json.dumps(
                {
                    "workloads": {"w1": {"model_size": "SMALL", "workload_type": "inference"}},
                    "workload_sets": {"s": ["w1"]},
                }
            ),
        ),
        "gfo_models": _write(
            tmp_path, "model_config.json", json.dumps({"models": {"SMALL": {"model_id": "llama-3.1-8b"}}})
        ),
        "hf_config": _write(
            tmp_path,
            "config.json",
            json.dumps(
                {
                    "model_type": "llama",
                    "architectures": ["LlamaForCausalLM"],
                    "hidden_size": 2048,
                    "num_hidden_layers": 4,
                    "num_attention_heads": 16,
                    "num_key_value_heads": 4,
                    "intermediate_size": 8192,
                    "vocab_size": 32000,
                    "max_position_embeddings": 4096,
                }
            ),
        ),
    }


def test_detect_kind_for_every_kind(files: dict[str, Path]) -> None:
    for kind, path in files.items():
        assert detect_kind(path) == kind, path
    assert detect_kind(DATA / "user_catalogs" / "gpu_instances.json") == "catalog"


def test_valid_files_summarised(files: dict[str, Path]) -> None:
    code, out, err = _check(*files.values(), DATA / "user_catalogs" / "gpu_instances.json")
    assert code == 0, err
    assert out.count("OK ") == len(files) + 1
    assert "1 offers (onprem)" in out
    assert "commitment discount aws reserved 1y: 30%" in out
    assert "one interruption per 4 h" in out
    assert "workload chat: model llama-3.1-8b" in out
    assert "SMALL -> llama-3.1-8b" in out
    # the configuration in force includes the user catalogs and overrides
    assert "+ 2 user catalog(s)" in out and "onprem" in out
    assert "Commitment discounts in force" in out and "Spot interruption model in force" in out


def test_no_files_summarises_builtins() -> None:
    code, out, _ = _check()
    assert code == 0
    assert "Catalog:" in out and "providers" in out and "months old" in out
    assert "Models:" in out and "llama-3.1-8b" in out
    assert "Built-in scenarios" in out and "basic_demos" in out


@pytest.mark.parametrize(
    ("name", "text", "needles"),
    [
        (
            "bad_catalog.yaml",
            "offers:\n  - {provider: x, region: r, instance_type: i, gpu: H100, gpu_count: 1,\n"
            "     price_on_demand_usd_per_hour: -1}\n",
            ["bad_catalog.yaml", "offers / 0", "price_on_demand_usd_per_hour"],
        ),
        (
            "bad_gfo.json",
            json.dumps(
                {
                    "gpu_instances": {
                        "a": {
                            "name": "a",
                            "family": "f",
                            "gpu_type": "T4",
                            "vcpus": 4,
                            "gpu_memory_gb": 16,
                            "gpus_per_instance": 1,
                            "on_demand_cost_per_hour": "cheap",
                        }
                    }
                }
            ),
            ["bad_gfo.json", "gpu_instances / a", "on_demand_cost_per_hour"],
        ),
        (
            "bad_commit.yaml",
            "commitments:\n  - {provider: aws, program: reserved, term_years: 2, discount_fraction: 0.3,"
            " source: q}\n",
            ["bad_commit.yaml", "commitments[0]", "term_years"],
        ),
        ("bad_spot.csv", SPOT_HEADER + "*,-4,30,600,300,,no,test\n", ["bad_spot.csv", "line 2"]),
        (
            "bad_workload.yaml",
            "model: llama-3.1-8b\nbudget_usd_per_month: 0\n",
            ["bad_workload.yaml", "budget_usd_per_month", "positive"],
        ),
        (
            "bad_field.yaml",
            "model: llama-3.1-8b\ngpu_speed: 3\n",
            ["bad_field.yaml", "gpu_speed", "not a workload field"],
        ),
        (
            "bad_gfo_workloads.json",
            json.dumps({"workloads": {"w1": {"model_size": "SMALL"}}, "workload_sets": {"s": ["nope"]}}),
            ["bad_gfo_workloads.json", "'s'", "nope"],
        ),
        (
            "bad_models.json",
            json.dumps({"models": {"SMALL": {"model_id": "no-such-model"}}}),
            ["bad_models.json", "SMALL", "no-such-model"],
        ),
        (
            "bad_scen.yaml",
            "scenarios:\n  a: {model: llama-3.1-8b}\nsets:\n  s: [a, b]\n",
            ["bad_scen.yaml", "'s'", "'b'"],
        ),
        (
            "bad_scen2.yaml",
            "scenarios:\n  a: {model: llama-3.1-8b, task: dance}\n",
            ["bad_scen2.yaml", "'a'", "task"],
        ),
        ("bad_scen3.yaml", "scenarios: [1, 2]\n", ["bad_scen3.yaml", "'scenarios' must map"]),
        ("unknown.yaml", "colour: blue\n", ["unknown.yaml", "cannot tell", "colour"]),
        ("unknown.csv", "a,b\n1,2\n", ["unknown.csv", "cannot tell"]),
        ("list.yaml", "- 1\n- 2\n", ["list.yaml", "top level is list"]),
        ("broken.json", "{not json", ["broken.json", "not valid JSON"]),
        ("broken.yaml", "a: [1,\n", ["broken.yaml", "not valid YAML"]),
    ],
)
def test_bad_file_names_file_entry_field(tmp_path: Path, name: str, text: str, needles: list[str]) -> None:
    code, _, err = _check(_write(tmp_path, name, text))
    assert code == 2
    flat = " ".join(err.split())
    for needle in needles:
        assert needle in flat, (needle, flat)
    assert "1 of 1 file(s) invalid" in flat


def test_missing_file(tmp_path: Path) -> None:
    code, _, err = _check(tmp_path / "nope.yaml")
    assert code == 2 and "does not exist" in err


def test_one_bad_file_among_good_ones(files: dict[str, Path], tmp_path: Path) -> None:
    bad = _write(tmp_path, "bad.yaml", "colour: blue\n")
    code, out, err = _check(files["catalog"], bad)
    assert code == 2
    assert "OK" in out and "1 of 2 file(s) invalid" in err


OFFERS_HEADER = (
    "provider,region,zone,instance_type,gpu,gpu_count,gpu_memory_gib,vcpus,ram_gib,arch,"
    "price_on_demand_usd_per_hour,price_spot_usd_per_hour,captured_at,source\n"
)


def test_offers_csv_and_calibration_cases(tmp_path: Path) -> None:
    offers = _write(
        tmp_path, "offers.csv", OFFERS_HEADER + "acme,r1,,box,H100-SXM,8,79.6,96,1024,x86_64,20,,2026-01,me\n"
    )
    code, out, err = _check(offers, DATA / "cases" / "small.csv")
    assert code == 0, err
    assert "1 offers (acme)" in out and "calibration cases" in out


def test_bad_offers_csv_and_cases(tmp_path: Path) -> None:
    offers = _write(
        tmp_path,
        "offers.csv",
        OFFERS_HEADER + "acme,r1,,box,H100-SXM,8,79.6,96,1024,x86_64,-20,,2026-01,me\n",
    )
    code, _, err = _check(offers)
    assert code == 2 and "offers.csv" in err
    code, _, err = _check(DATA / "cases" / "bad_metric.csv")
    assert code == 2 and "bad_metric.csv" in err
