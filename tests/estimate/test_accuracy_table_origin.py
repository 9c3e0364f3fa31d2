"""tools/accuracy_table.py's held-out coverage by origin: each row recomputed from the scores it names."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from gpufleet.estimate.cases import read_cases
from gpufleet.estimate.intervals import HeldOutScore

_ROOT = Path(__file__).resolve().parents[2]
_TOOL = _ROOT / "tools" / "accuracy_table.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("accuracy_table", _TOOL)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["accuracy_table"] = mod
    spec.loader.exec_module(mod)
    return mod


at = _load()


def test_origin_rows_recompute_from_the_scores() -> None:
    cases = read_cases(_ROOT / "src" / "gpufleet" / "estimate" / "data" / "cases.csv")
    pub = next(c for c in cases if at.case_origin(c) == "published" and c.metric == "ttft_ms")
    ours = [c for c in cases if at.case_origin(c) != "published" and c.metric == "peak_memory_gib"][:2]
    assert pub.source and not pub.source.startswith("gpufleet benchmarks/")
    assert all(c.source.startswith("gpufleet benchmarks/") for c in ours)

    def score(cid: str, fam: str, inside: bool, width: float, g: str = "vendor") -> HeldOutScore:
        return HeldOutScore(
            case_id=cid, grouping=g, family=fam, mechanisms=frozenset(), inside=inside, width=width
        )

    scores = [
        score(pub.case_id, "latency", True, 2.0),
        score(pub.case_id, "latency", False, 3.0, "generation"),
        score(ours[0].case_id, "memory", True, 1.2),
        score(ours[1].case_id, "memory", False, 1.4),
    ]
    rows = at.origin_interval_rows(cases, scores)
    # one case scored twice: 1 case, 2 scores, 50 % inside, median width 2.5x
    assert "| published | latency | 1 | 2 | 50 % | 2.50x |" in rows
    assert "| published | speed (all but memory) | 1 | 2 | 50 % | 2.50x |" in rows
    assert "| published | **all** | 1 | 2 | 50 % | 2.50x |" in rows
    assert "| measured here (benchmarks/ probes) | memory | 2 | 2 | 50 % | 1.30x |" in rows
    # no speed scores for our probes here: no speed row, no empty row
    assert not any(r.startswith("| measured here (benchmarks/ probes) | speed") for r in rows)
    assert not any(r.startswith("| published | memory") for r in rows)
