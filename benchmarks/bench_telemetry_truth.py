"""Score `gpufleet telemetry` on the held-out known-truth corpus (tests/telemetry/truth_corpus.py).

Builds the corpus (dcgm-exporter text, Prometheus query_range JSON, nvidia-smi CSV in three time zones; 31
GPUs and MIG instances, 19 workloads, 11 alert expectations), then runs it twice: through the library
(``ingest_telemetry``, ``analyze_fleet``, ``evaluate_alerts``) and through the CLI as a user would
(``gpufleet telemetry ingest`` per file, ``findings --format json``, ``alerts --format json``), and prints
the confusion matrix per level, precision and recall per finding, the wrong rows and the alert checks.
With ``--prometheus`` the dcgm-exporter and query_range files are also backfilled into a real Prometheus
(``promtool tsdb create-blocks-from openmetrics``, values as scraped: NaN and DCGM blank sentinels kept) and
the findings computed inside it (``analyze_prometheus``) are scored on the subjects it holds (the nvidia-smi
hosts have no Prometheus form). Exits 1 when the library and the CLI disagree.

    python benchmarks/bench_telemetry_truth.py [--seed N] [--out DIR] [--library-only] [--prometheus]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from telemetry import truth_corpus as tc  # noqa: E402  (tests/ holds the corpus)


def _cli(*args: str) -> str:
    exe = Path(sys.executable).with_name("gpufleet")
    cmd = [str(exe) if exe.exists() else "gpufleet", "telemetry", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr[-2000:]}")
    return r.stdout


def cli_run(out: Path, corpus: tc.Corpus) -> tc.Result:
    store = out / "cli-store"
    problems: dict[str, dict[str, int]] = {}
    for path, kw in corpus.files:
        extra = [a for k, v in kw.items() for a in (f"--{k}", v)]
        _cli("ingest", str(path), "--store", str(store), *extra)
        problems[path.name] = {}
    end = tc.window_end().isoformat()
    findings = json.loads(_cli("findings", "--store", str(store), "--format", "json", "--end", end))
    alerts = json.loads(_cli("alerts", "--store", str(store), "--format", "json", "--end", end))
    events = [(e["rule"], e["subject"], e.get("note", "")) for e in alerts["events"]]
    return tc.Result(
        corpus=corpus,
        rows=tc.score(corpus, tc.seen_from_json(findings)),
        alerts=tc.score_alerts(corpus, events),
        problems=problems,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=20260302)
    ap.add_argument("--out", type=Path, default=None, help="keep the corpus and stores here")
    ap.add_argument("--library-only", action="store_true", help="skip the CLI run")
    ap.add_argument("--prometheus", action="store_true", help="also score the Prometheus pushdown path")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = a.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        lib = tc.run(out, a.seed)
        t1 = time.perf_counter()
        print(f"## library path ({t1 - t0:.1f} s: build, ingest, findings, alerts)\n")
        print(tc.format_report(lib))
        if a.prometheus:
            from telemetry.promserver import prometheus_with

            prom_dir = out / "prometheus"
            prom_dir.mkdir(exist_ok=True)
            with prometheus_with(tc.to_openmetrics(lib.corpus), prom_dir) as url:
                rows = tc.run_prometheus(url, lib.corpus)
            print(f"\n## Prometheus path ({time.perf_counter() - t1:.1f} s, backfill included)\n")
            print(tc.format_report(tc.Result(corpus=lib.corpus, rows=rows, alerts=[], problems={})))
            t1 = time.perf_counter()
        if a.library_only:
            return 0
        cli = cli_run(out, lib.corpus)
        print(f"\n## CLI path ({time.perf_counter() - t1:.1f} s)\n")
        same = [(r.subject, r.predicted, r.action) for r in lib.rows] == [
            (r.subject, r.predicted, r.action) for r in cli.rows
        ] and [f for _, f, _ in lib.alerts] == [f for _, f, _ in cli.alerts]
        right = sum(r.finding_ok for r in cli.rows)
        print(
            f"{right}/{len(cli.rows)} findings right; same findings, actions and alerts as the library: "
            f"{same}"
        )
        return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
