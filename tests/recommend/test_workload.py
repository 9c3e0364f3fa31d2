"""Workload files: our format, the GPU Fleet Optimizer's formats, and every bad-input path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpufleet.errors import ConfigFileError
from gpufleet.recommend.gfo import parse_gfo_model_config, parse_gfo_workloads, read_gfo_files
from gpufleet.recommend.workload import read_workload_file, workload_from_dict

DATA = Path(__file__).parent.parent / "data" / "workloads"


def test_our_format_yaml() -> None:
    w = read_workload_file(DATA / "inference.yaml")["chat-13b"]
    assert w.model == "llama-2-13b" and w.precision == "fp16"
    assert w.hours_per_month == 176
    assert w.ttft_p95_s == pytest.approx(1.0) and w.tpot_p95_s == pytest.approx(0.06)
    assert w.target_requests_per_s == 2
    assert w.providers == ("aws", "gcp") and w.regions == ("us-*",) and w.gpu_vendors == ("NVIDIA",)
    assert w.current is not None and w.current.instance_type == "p5.4xlarge"


def test_our_format_json_many() -> None:
    ws = read_workload_file(DATA / "training.json")
    assert ws["ft-8b"].train_tokens == pytest.approx(2e8)
    assert ws["ft-8b"].pricing == "spot"
    assert ws["pretrain-1b"].hours_per_month == 730


def test_requests_per_hour_converted() -> None:
    w = workload_from_dict({"model": "x", "target_requests_per_hour": 36000})
    assert w.target_requests_per_s == pytest.approx(10)


def test_gfo_workloads_and_sets() -> None:
    ws, sets = read_gfo_files(DATA / "gfo_workloads.json", DATA / "gfo_model_config.json")
    small = ws["inference_small_p5"]
    assert small.model == "llama-2-13b"  # mapped through model_config.json
    assert small.precision == "fp16" and small.pricing == "on_demand" and small.hours_per_month == 720
    assert small.concurrency == 16 and small.description.startswith("Serving 13B")
    assert small.current is not None and small.current.gpu_count == 1
    big = ws["training_large_p4d"]
    assert big.task == "pretrain" and big.pricing == "1y" and big.model == "llama-3.1-70b"
    assert big.current is not None and big.current.count == 4 and big.train_tokens == 2e10
    assert sets == {"basic_demos": ("inference_small_p5",), "performance_focus": ("training_large_p4d",)}


def test_gfo_detected_by_read_workload_file() -> None:
    ws = read_workload_file(DATA / "gfo_workloads.json")
    assert ws["inference_small_p5"].model == "SMALL"


def test_gfo_model_config_top_level_classes() -> None:
    assert parse_gfo_model_config({"SMALL": {"parameters": 13e9}}, source="m.json") == {"SMALL": "SMALL"}


def test_gfo_bad_value_names_entry_and_field() -> None:
    data = {"workloads": {"w1": {"model_size": "SMALL", "workload_type": "dreaming"}}, "workload_sets": {}}
    with pytest.raises(ConfigFileError, match=r"entry 'w1'.*'workload_type' = 'dreaming'.*Allowed"):
        parse_gfo_workloads(data, source="workloads.json")


def test_gfo_missing_model() -> None:
    with pytest.raises(ConfigFileError, match="no model field"):
        parse_gfo_workloads(
            {"workloads": {"w": {"workload_type": "inference"}}, "workload_sets": {}}, source="f"
        )


def test_gfo_set_with_unknown_id() -> None:
    data = {"workloads": {"w": {"model_size": "SMALL"}}, "workload_sets": {"s": ["w", "zz"]}}
    with pytest.raises(ConfigFileError, match=r"unknown workload ids \['zz'\]"):
        parse_gfo_workloads(data, source="f")


def test_gfo_set_not_a_list() -> None:
    with pytest.raises(ConfigFileError, match="expected a list"):
        parse_gfo_workloads({"workloads": {}, "workload_sets": {"s": "w"}}, source="f")


def test_gfo_bad_json(tmp_path: Path) -> None:
    p = tmp_path / "w.json"
    p.write_text("{not json")
    with pytest.raises(ConfigFileError, match="not valid JSON"):
        read_gfo_files(p)


def test_bad_field_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"bad_field.yaml.*'ttft_p95' is not a workload field"):
        read_workload_file(DATA / "bad_field.yaml")


def test_bad_value_named() -> None:
    with pytest.raises(ConfigFileError, match=r"entry 'bad'.*'pricing' = 'reserved'.*allowed: on_demand"):
        read_workload_file(DATA / "bad_value.yaml")


@pytest.mark.parametrize("budget", [0, -100])
def test_budget_must_be_positive(budget: float) -> None:
    with pytest.raises(ConfigFileError, match=r"budget_usd_per_month.*positive"):
        workload_from_dict({"model": "x", "budget_usd_per_month": budget})


def test_bad_precision() -> None:
    with pytest.raises(ConfigFileError, match=r"'precision' = 'fp12'.*allowed: fp32"):
        workload_from_dict({"model": "x", "precision": "fp12"})


def test_two_targets_rejected() -> None:
    with pytest.raises(ConfigFileError, match="at most one"):
        workload_from_dict({"model": "x", "concurrency": 4, "target_requests_per_s": 2})


def test_two_schedules_rejected() -> None:
    with pytest.raises(ConfigFileError, match="one schedule"):
        workload_from_dict({"model": "x", "schedule": "24/7", "hours_per_month": 100})


def test_half_daily_schedule_rejected() -> None:
    with pytest.raises(ConfigFileError, match="go together"):
        workload_from_dict({"model": "x", "hours_per_day": 8})


def test_training_needs_tokens() -> None:
    with pytest.raises(ConfigFileError, match="needs train_tokens"):
        workload_from_dict({"model": "x", "task": "pretrain"})


def test_hours_out_of_range() -> None:
    with pytest.raises(ConfigFileError, match="hours_per_month"):
        workload_from_dict({"model": "x", "hours_per_month": 800})


def test_not_a_mapping(tmp_path: Path) -> None:
    p = tmp_path / "w.yaml"
    p.write_text("- a\n- b\n")
    with pytest.raises(ConfigFileError, match="must hold a mapping"):
        read_workload_file(p)


def test_bad_yaml(tmp_path: Path) -> None:
    p = tmp_path / "w.yaml"
    p.write_text("model: [unclosed\n")
    with pytest.raises(ConfigFileError, match="not valid YAML"):
        read_workload_file(p)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="does not exist"):
        read_workload_file(tmp_path / "none.yaml")


def test_workloads_key_must_map(tmp_path: Path) -> None:
    p = tmp_path / "w.json"
    p.write_text(json.dumps({"workloads": []}))
    with pytest.raises(ConfigFileError, match="'workloads' must map"):
        read_workload_file(p)


@pytest.mark.parametrize(
    ("model", "expected"),
    [("gpt-oss-120b", "fp4"), ("openai/gpt-oss-20b", "fp4"), ("deepseek-r1", "fp8"), ("deepseek-v3", "fp8"),
     ("llama-3.1-70b", "bf16"), ("SMALL", "bf16")],
)  # fmt: skip
def test_serving_without_a_precision_uses_the_published_format(model: str, expected: str) -> None:
    # gpt-oss ships MXFP4 MoE weights and DeepSeek-V3/R1 FP8 (their config.json quantization_config): a
    # deployment of the released checkpoint runs that format; bf16 would need 2-4x the memory
    w = workload_from_dict({"model": model, "target_requests_per_s": 1})
    assert w.precision == expected
    assert bool(w.notes) == (expected != "bf16")
    if w.notes:
        assert "published in" in w.notes[0] and "--precision bf16" in w.notes[0]


def test_a_stated_precision_or_a_training_task_keeps_its_precision() -> None:
    assert workload_from_dict({"model": "gpt-oss-120b", "precision": "bf16"}).precision == "bf16"
    assert workload_from_dict({"model": "deepseek-v3", "precision": "fp4"}).precision == "fp4"
    tune = workload_from_dict({"model": "gpt-oss-20b", "task": "lora", "train_tokens": 1e8})
    assert tune.precision == "bf16" and not tune.notes
