"""Review (second pass, 2026-11-29): an H100 pinned at ~99 % memory with SM active ~5 % on average (p95 12 %,
diurnal swing and noise) was Underprovisioned (GPUMemoryUnderprovisioned, risk High) with a larger GPU as
its option: the memory rule excused only GPUs below ``idle_compute`` (5 %) at the percentile. A GPU whose
compute is below the Overprovisioned bar (40 %) shows no work running into its memory; FB used near capacity
there is held (an engine's pre-allocation, a caching allocator), so it is Overprovisioned, and a GPU at 50 %
SM with 92 % used stays Underprovisioned (tests/telemetry/test_evidence_workloads.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.telemetry.analyze import gpu_stats, resolve_window
from gpufleet.telemetry.findings import find
from gpufleet.telemetry.schema import ProblemCounter, SampleBatch
from gpufleet.telemetry.store import TelemetryStore

NOW_US = 1_800_000_000 * 1_000_000
T0_S = 1_780_000_000
H100_MIB = 81559.0


def _store(tmp_path: Path, sm: list[float], mem_share: float) -> TelemetryStore:
    b = SampleBatch()
    lab = {"host": "n1", "gpu_uuid": "GPU-pinned", "model": "NVIDIA H100 80GB HBM3", "source": "t"}
    for i, v in enumerate(sm):
        ts = (T0_S + 300 * i) * 1_000_000
        b.add(labels=lab, gpu_index=0, ts_us=ts, metric="sm_active_ratio", value=v)
        b.add(labels=lab, gpu_index=0, ts_us=ts, metric="gpu_util_pct", value=min(100.0, 300 * v))
        b.add(labels=lab, gpu_index=0, ts_us=ts, metric="fb_used_mib", value=mem_share * H100_MIB)
        b.add(labels=lab, gpu_index=0, ts_us=ts, metric="fb_free_mib", value=(1 - mem_share) * H100_MIB)
    s = TelemetryStore(tmp_path)
    s.append(b, ProblemCounter(), sources=["t"], rows_read=len(b), now_us=NOW_US)
    return s


@pytest.mark.parametrize("sm_p95", [0.12, 0.30])
def test_memory_pinned_at_low_compute_is_not_pressure(tmp_path: Path, sm_p95: float) -> None:
    # 48 h at 5 min: mostly 5 % SM active, one sample in ten at the percentile's level
    sm = [sm_p95 if i % 10 == 0 else 0.05 for i in range(576)]
    s = _store(tmp_path, sm, mem_share=0.99)
    w = resolve_window(s, 14, None, 0.95)
    (g,) = find(gpu_stats(s, w), w).gpus
    assert g.compute_p == pytest.approx(sm_p95)
    assert (g.memory_p99_gib or 0) / (g.memory_capacity_gib or 1) > 0.98
    assert g.finding == "Overprovisioned", (g.finding, g.reason_codes)  # before: Underprovisioned
    assert "GPUMemoryUnderprovisioned" not in g.reason_codes
    assert not any(o.kind == "larger_gpu" for o in g.options)
    assert g.current_performance_risk != "High"
    assert any("not memory pressure" in e and "(< 40%, overprovisioned)" in e for e in g.evidence)
    # an option must still hold what the GPU holds (memory is not compressible)
    for o in g.options:
        assert o.kind != "release"


def test_memory_pinned_while_computing_is_still_pressure(tmp_path: Path) -> None:
    s = _store(tmp_path, [0.55] * 576, mem_share=0.97)
    w = resolve_window(s, 14, None, 0.95)
    (g,) = find(gpu_stats(s, w), w).gpus
    assert g.finding == "Underprovisioned" and g.reason_codes == ("GPUMemoryUnderprovisioned",)
