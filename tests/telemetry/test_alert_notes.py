"""Review scenario (idle-heavy vLLM fleet): the seed's memory rule (> 85 % for 5 min) fires for as long as a
serving engine holds its start-up reservation (vLLM gpu_memory_utilization 0.9). The event now says so when
the memory never moved; memory that grows toward the capacity keeps the plain event."""

from __future__ import annotations

from pathlib import Path

from gpufleet.telemetry.alerts import FLAT_MEMORY_SPREAD_PCT, evaluate, load_rules, reservation_note
from gpufleet.telemetry.analyze import resolve_window
from gpufleet.telemetry.schema import ProblemCounter, SampleBatch
from gpufleet.telemetry.store import TelemetryStore

NOW_US = 1_800_000_000 * 1_000_000
T0_S = 1_780_000_000
TOTAL_MIB = 46068.0  # an L40S: used + free + reserved


def _store(tmp_path: Path) -> TelemetryStore:
    b = SampleBatch()
    for uuid, share_at in (
        ("GPU-flat", lambda i: 0.90),  # vLLM's reservation, 4 h
        ("GPU-leak", lambda i: 0.86 + 0.11 * i / 239),  # 86 % -> 97 % over 4 h: growing toward OOM
    ):
        lab = {"host": "n1", "gpu_uuid": uuid, "model": "NVIDIA L40S", "source": "t"}
        for i in range(240):  # 4 h at 1 min
            ts = (T0_S + 60 * i) * 1_000_000
            used = share_at(i) * TOTAL_MIB
            b.add(labels=lab, gpu_index=0, ts_us=ts, metric="fb_used_mib", value=used)
            b.add(labels=lab, gpu_index=0, ts_us=ts, metric="fb_free_mib", value=TOTAL_MIB - used)
    s = TelemetryStore(tmp_path)
    s.append(b, ProblemCounter(), sources=["t"], rows_read=len(b), now_us=NOW_US)
    return s


def test_a_flat_reservation_is_said_a_growing_memory_is_not(tmp_path: Path) -> None:
    s = _store(tmp_path)
    w = resolve_window(s, 14, None, 0.95)
    mem = [r for r in load_rules() if r.metric == "memory_used_pct"]
    assert mem and mem[0].threshold == 85 and mem[0].for_s == 300  # the seed's rule, unchanged
    events = {e.subject: e for e in evaluate(s, w, mem)}
    flat, leak = events["GPU-flat"], events["GPU-leak"]
    assert flat.duration_s >= 3600 and abs(flat.peak - 90.0) < 0.01
    assert flat.note.startswith("held flat at 90.0 %") and "not growth toward OOM" in flat.note
    assert leak.note == ""  # moved 11 points: a real shortage signal, the plain event
    assert leak.peak > 96.9


def test_reservation_note_thresholds_by_hand() -> None:
    assert reservation_note("memory_used_pct", 0.5, 3600.0, 90.0)
    assert not reservation_note("memory_used_pct", FLAT_MEMORY_SPREAD_PCT, 3600.0, 90.0)  # moved enough
    assert not reservation_note("memory_used_pct", 0.0, 3599.0, 90.0)  # too short to tell
    assert not reservation_note("gpu_util_pct", 0.0, 86400.0, 95.0)  # other rules are left as they are
