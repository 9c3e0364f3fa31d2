"""The pure parts of benchmarks/gpu_probe.py (config conversion, rows in the schema); no torch needed."""

from __future__ import annotations

import importlib.util
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import pytest

from gpufleet.estimate.cases import METRIC_UNITS, parse_cases_csv, write_cases_csv
from gpufleet.units import GIB


def _script(name: str) -> ModuleType:
    """``benchmarks/NAME.py`` imported as module ``NAME`` (registered, so a later script can import it)."""
    path = Path(__file__).parents[2] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _probe() -> ModuleType:
    return _script("gpu_probe")


probe = _probe()


def test_importing_the_probe_does_not_import_torch() -> None:
    src = Path(probe.__file__).read_text(encoding="utf-8")
    top = src.split("def measure(")[0]
    assert "import torch" not in top and "import transformers" not in top


def test_every_shipped_causal_model_gets_a_model_type() -> None:
    entries = probe.load_model_entries()
    assert len(entries) >= 30
    for model_id, entry in entries.items():
        cfg = probe.hf_config_dict(entry)
        assert cfg["model_type"] in set(probe.ARCH_MODEL_TYPES.values()), model_id
        assert not any(k.startswith("note") for k in cfg), model_id


def test_llama_and_gpt_style_conversion() -> None:
    entries = probe.load_model_entries()
    llama = probe.hf_config_dict(entries["llama-3.1-8b"])
    assert llama["model_type"] == "llama" and llama["num_key_value_heads"] == 8
    gpt = probe.hf_config_dict(entries["gpt-22b"])
    assert gpt["model_type"] == "gpt2"
    assert (gpt["n_embd"], gpt["n_layer"], gpt["n_head"], gpt["n_inner"]) == (6144, 48, 64, 24576)
    assert "hidden_size" not in gpt and "num_key_value_heads" not in gpt


def test_unknown_architecture_is_a_probe_error() -> None:
    with pytest.raises(probe.ProbeError, match="Mamba"):
        probe.hf_config_dict({"id": "x", "architecture": "MambaForCausalLM", "config": {}})


def test_measurement_rows_are_valid_cases() -> None:
    m = probe.Measurement(
        model_id="llama-3.2-1b", gpu="H100-SXM", precision="bf16", batch=8, input_len=512, output_len=64,
        ttft_s=0.0123, tpot_s=0.0081, peak_allocated_bytes=3 * GIB, weights_allocated_bytes=2 * GIB,
    )  # fmt: skip
    source = probe.source_text("NVIDIA H100 80GB HBM3", datetime(2026, 1, 2, tzinfo=UTC), "torch 2.5")
    rows = probe.measurement_cases(m, source)
    rows.append(probe.load_case("llama-3.2-1b", "H100-SXM", "bf16", 2 * GIB, source))
    back = parse_cases_csv(write_cases_csv(rows), "probe.csv")
    assert back == rows
    by_metric = {c.case_id.rsplit("-", 1)[-1]: c for c in back}
    assert by_metric["ttft"].measured == pytest.approx(12.3) and by_metric["ttft"].output_len == 1
    assert by_metric["tpot"].measured == pytest.approx(8.1) and by_metric["tpot"].batch == 8
    assert by_metric["mem"].measured == pytest.approx(3.0) and by_metric["load"].task == "load"
    assert all(c.unit == METRIC_UNITS[c.metric] and c.software == "transformers" for c in back)
    assert "2026-01-02" in back[0].source and "gpu_probe.py" in back[0].source and "H100" in back[0].source
    assert len({c.case_id for c in back}) == 4


def test_median_time() -> None:
    values = iter([3.0, 1.0, 2.0])
    assert probe.median_time_s(lambda: next(values), 3) == 2.0


@pytest.mark.parametrize(
    ("name", "spec_id"),
    [("NVIDIA H100 80GB HBM3", "H100-SXM"), ("NVIDIA A100-SXM4-80GB", "A100-SXM-80GB"), ("Tesla T4", "T4"),
     ("NVIDIA L4", "L4"), ("NVIDIA H200", "H200-SXM")],
)  # fmt: skip
def test_device_names_map_to_spec_ids(name: str, spec_id: str) -> None:
    from gpufleet.catalog.specs import get_spec

    assert probe.gpu_id_for_device(name) == spec_id
    assert get_spec(spec_id).id == spec_id


def test_every_device_name_maps_to_a_shipped_spec() -> None:
    from gpufleet.catalog.specs import load_specs

    assert set(probe.DEVICE_NAMES.values()) <= set(load_specs())


def test_unknown_device_asks_for_gpu_flag() -> None:
    with pytest.raises(probe.ProbeError, match="--gpu"):
        probe.gpu_id_for_device("Mystery Accelerator 9000")


def _probe_train() -> ModuleType:
    return _script("gpu_probe_train")  # imports gpu_probe, registered above


probe_train = _probe_train()


def test_rope_scaling_in_words_is_dropped_for_the_random_model() -> None:
    cfg = probe.hf_config_dict(probe.load_model_entries()["llama-3.1-8b"])
    assert "rope_scaling" not in cfg and cfg["model_type"] == "llama"


def test_training_points_parse_and_refuse_bad_ones() -> None:
    p = probe_train.TrainPoint.parse("lora:llama-3.1-8b:4:2048:1")
    got = (p.task, p.model_id, p.batch, p.seq_len, p.checkpointing)
    assert got == ("lora", "llama-3.1-8b", 4, 2048, True)
    bad_points = ("pretrain:llama-3.1-8b:4:2048:0", "lora:llama-3.1-8b:4:2048", "lora:llama-3.1-8b:4:2048:2",
                  "lora:llama-3.1-8b:four:2048:0", "lora:llama-3.1-8b:0:2048:0")  # fmt: skip
    for bad in bad_points:
        with pytest.raises(probe.ProbeError, match="task:model:batch:seq_len"):
            probe_train.TrainPoint.parse(bad)
    for point in probe_train.DEFAULT_POINTS:  # every default point names a shipped model
        assert probe_train.TrainPoint.parse(point).model_id in probe.load_model_entries()


def test_training_rows_are_valid_cases_of_the_hf_trainer_recipe() -> None:
    p = probe_train.TrainPoint.parse("full_finetune:llama-3.2-1b:4:2048:0")
    m = probe_train.TrainMeasurement(point=p, gpu="H200-SXM", step_s=0.185, peak_allocated_bytes=44 * GIB,
                                     trainable_params=1_235_814_400)  # fmt: skip
    when = datetime(2026, 11, 26, tzinfo=UTC)
    source = probe.source_text("NVIDIA H200", when, "torch 2.11.0", script="gpu_probe_train.py")
    rows = probe_train.train_cases(m, source)
    assert [r.metric for r in rows] == ["train_step_s", "peak_memory_gib"]
    back = parse_cases_csv(write_cases_csv(rows), "train_probe.csv")
    assert back == rows and all(r.unit == METRIC_UNITS[r.metric] for r in back)
    assert back[1].measured == pytest.approx(44.0) and back[0].software == "transformers"
    assert back[0].optimizer == "adamw" and "no activation checkpointing" in back[0].note
    assert "gpu_probe_train.py" in back[0].source and back[0].seq_len == 2048
