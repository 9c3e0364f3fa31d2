"""The curated public surface: sorted, complete, importable, and silent."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys

import gpufleet

EXPECTED = {
    "AcceleratorSpec", "Candidate", "ConfigFileError", "DataError", "FetchError", "GpufleetError",
    "HostRules", "InfeasibleError", "InferenceEstimate", "InputError", "Interval", "MemoryEstimate",
    "Migration", "ModelArch", "Offer", "OfferTable", "ParamCount", "Recommendation", "ScenarioResult",
    "ScenarioSetResult", "TrainingEstimate", "UnknownNameError", "UnsupportedError", "ValidationReport",
    "Workload", "__version__", "count_params", "estimate_inference", "estimate_memory", "estimate_training",
    "get_spec", "load_offers", "migrate", "prices_usd_per_hour", "recommend", "resolve_model",
    "run_scenario", "run_scenario_set", "validate_cases",
    # telemetry right-sizing (issue 9)
    "FleetFindings", "IngestReport", "TelemetryStore", "analyze_fleet", "evaluate_alerts", "ingest_telemetry",
    # simulations (issue 10)
    "AutoscaleResult", "BatchResult", "SpotResult", "SweepResult", "run_sweep", "simulate_autoscale",
    "simulate_batch", "simulate_spot",
    # fleet planning (issue 11)
    "Fleet", "FleetPlan", "SharedPool", "RegionAnalysis", "analyze_regions", "plan_fleet", "read_fleet_file",
}  # fmt: skip


def test_all_is_sorted_and_exactly_the_curated_surface() -> None:
    assert gpufleet.__all__ == sorted(gpufleet.__all__)
    assert set(gpufleet.__all__) == EXPECTED
    for name in gpufleet.__all__:
        assert hasattr(gpufleet, name), name


def test_every_error_derives_from_the_root() -> None:
    for name in gpufleet.__all__:
        obj = getattr(gpufleet, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, gpufleet.GpufleetError), name


def test_import_touches_no_network_and_prints_nothing() -> None:
    code = (
        "import socket\n"
        "def _no(*a, **k):\n    raise RuntimeError('network touched at import')\n"
        "socket.socket.connect = _no\nsocket.create_connection = _no\n"
        "import gpufleet\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "" and out.stderr == ""


def test_library_calls_print_nothing() -> None:
    buf_out, buf_err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf_out), contextlib.redirect_stderr(buf_err):
        gpufleet.estimate_memory(
            model=gpufleet.resolve_model("llama-2-7b"), task="inference", precision="fp16",
            gpu=gpufleet.get_spec("A10G"), seq_len=2048,
        )  # fmt: skip
        gpufleet.estimate_inference(
            model="llama-3.1-8b", gpu="H100-SXM", precision="bf16", input_len=512, output_len=128
        )
        gpufleet.recommend(model="llama-2-7b", task="inference", precision="fp16", limit=3)
    assert buf_out.getvalue() == "" and buf_err.getvalue() == ""
