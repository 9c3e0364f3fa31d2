"""The GPU Fleet Optimizer guide's config files and Python snippets, run verbatim (tests/data/gfo_guide)."""

from __future__ import annotations

import contextlib
import io
import json
import runpy
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import gpu_migration_analyzer
from gpufleet.cli.app import app

GUIDE = Path(__file__).parent.parent / "data" / "gfo_guide"
CONFIG = ("gpu_instances.json", "model_config.json", "workloads.json")
runner = CliRunner()


@pytest.fixture
def gfo_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory laid out as the optimizer's: config/ holds the guide's three files."""
    (tmp_path / "config").mkdir()
    for name in CONFIG:
        shutil.copy(GUIDE / name, tmp_path / "config" / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(names: tuple[str, ...], namespace: dict[str, Any] | None = None) -> str:
    """Exec the snippets in one namespace (a continuing session), return what they printed."""
    ns: dict[str, Any] = {"__name__": "__guide__"} if namespace is None else namespace
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for name in names:
            code = (GUIDE / name).read_text(encoding="utf-8")
            exec(compile(code, str(GUIDE / name), "exec"), ns)
    return out.getvalue()


# --- the config files load as they are ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "name",
    [*CONFIG, "custom_workload.json", "model_config_extra_large.json"],
)
def test_config_check_accepts_the_guide_files(name: str) -> None:
    r = runner.invoke(app, ["config", "check", str(GUIDE / name)])
    assert r.exit_code == 0, r.output
    assert "OK" in r.output


def test_config_check_reads_vendor_prefixed_gpus_and_custom_sizes() -> None:
    r = runner.invoke(
        app,
        ["config", "check", str(GUIDE / "gpu_instances.json"), str(GUIDE / "model_config_extra_large.json")],
    )
    assert r.exit_code == 0, r.output
    assert "2 AWS family prices (G6e $0.4375/GPU-h, P5 $6.25/GPU-h)" in r.output  # $3.50 / 8, $50 / 8
    assert "EXTRA_LARGE -> size:200B" in r.output


def test_guide_workload_sets_name_gpufleet_scenarios() -> None:
    r = runner.invoke(app, ["config", "check", str(GUIDE / "workloads.json")])
    assert "defined by gpufleet's GFO scenarios" in r.output and "5 workload sets" in r.output


def test_custom_gpu_without_a_spec_is_rejected_clearly() -> None:
    r = runner.invoke(app, ["config", "check", str(GUIDE / "add_new_gpu_instance.json")])
    assert r.exit_code == 2 and "CustomGPU" in r.output and "gpufleet catalog gpus" in r.output


def test_config_show_lists_the_gfo_folder(gfo_dir: Path) -> None:
    r = runner.invoke(app, ["config", "show"])
    assert r.exit_code == 0, r.output
    for name in CONFIG:
        assert f"config/{name}" in r.output
    assert "Catalog:" in r.output


def test_config_show_bad_folder_exits_2(tmp_path: Path) -> None:
    r = runner.invoke(app, ["config", "show", "--gfo-config", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "not a folder" in r.output


# --- the Python API: Methods 1-5 and the usage examples -----------------------------------------------------
def test_method1_runs_the_module_as_a_script(gfo_dir: Path, fast_estimator: None) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        runpy.run_path(
            gpu_migration_analyzer.__file__, run_name="__main__"
        )  # python3 gpu_migration_analyzer.py
    assert done.value.code == 0
    assert "fine_tuning_medium_p5" in out.getvalue() and "inference_small_p5" in out.getvalue()


def test_method2_with_the_real_estimator(gfo_dir: Path) -> None:
    out = _run(("method2_specific_workload.py",))
    assert "inference_small_p5" in out and "$" in out


def test_method3_workload_set(gfo_dir: Path, fast_estimator: None) -> None:
    out = _run(("method3_workload_set.py",))
    for wid in ("inference_small_p5", "batch_inference_g5", "production_serving_g4dn"):
        assert wid in out


def test_method4_custom_analysis(gfo_dir: Path, fast_estimator: None) -> None:
    out = _run(("method4_custom_analysis.py",))
    assert "large_training_P5" in out and "spot" in out.lower()


def test_method5_session_and_advanced_examples(gfo_dir: Path, fast_estimator: None) -> None:
    ns: dict[str, Any] = {"__name__": "__guide__"}
    out = _run(("method5_interactive_session.py",), ns)
    assert "training_large_p4d" in out and "Workload sets:" in out
    out = _run(("example1_precision_comparison.py",), ns)
    assert out.split() == [
        "FP32:",
        "140GB",
        "FP16:",
        "70GB",
        "BF16:",
        "70GB",
        "FP8:",
        "35GB",
        "INT8:",
        "35GB",
    ]
    out = _run(("example2_batch_analysis.py",), ns)
    assert all(f"=== {i} Analysis ===" in out for i in ("G4dn", "P4d", "G6e"))
    _run(("example3_spot_vs_on_demand.py",), ns)
    out = _run(("running_workload_sets.py",), ns)
    assert "research_training_g6e" in out and "inference_massive_p5e" in out


def test_usage_examples(gfo_dir: Path, fast_estimator: None) -> None:
    ns: dict[str, Any] = {"__name__": "__guide__"}
    out = _run(("usage_custom_migration_analysis.py", "usage_compare_precision_formats.py"), ns)
    assert "FP32: 140GB" in out and "INT8: 35GB" in out


def test_get_model_size_uses_the_config_and_custom_sizes(gfo_dir: Path) -> None:
    shutil.copy(GUIDE / "model_config_extra_large.json", gfo_dir / "config" / "model_config.json")
    analyzer = gpu_migration_analyzer.AWSGPUMigrationAnalyzer()
    assert analyzer.get_model_size_gb("extra_large", "fp16") == 400
    assert analyzer.get_model_size_gb(gpu_migration_analyzer.ModelSize.SMALL, "int8") == 13


def test_unknown_workload_id_names_close_matches(gfo_dir: Path) -> None:
    from gpufleet.errors import UnknownNameError

    analyzer = gpu_migration_analyzer.AWSGPUMigrationAnalyzer()
    with pytest.raises(UnknownNameError, match="inference_small_p5"):
        analyzer.run_workload_by_id("inference_smal_p5")


def test_guide_workloads_and_instances_through_the_cli(fast_estimator: None) -> None:
    args = ["migrate", str(GUIDE / "workloads.json"), "--name", "inference_small_p5", "--format", "json",
            "--catalog", str(GUIDE / "gpu_instances.json")]  # fmt: skip
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["kind"] == "migration"
    assert doc["result"]["current"]["instance_type"] == "p5.4xlarge"  # "P5", 1 GPU
