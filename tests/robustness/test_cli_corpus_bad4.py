"""Bad-input corpus, sixth part (same rules and checker as ``test_cli_corpus.py``): every case exits 2 with
a message naming the problem, no traceback, no hang (10 s alarm per case).

Each case here exited 0 with a silent or wrong answer, 1 with a traceback, or ran for minutes before the fix
it tests: telemetry stores that are a file or hold truncated/missing Parquet parts (DuckDB tracebacks), a
data directory under a file; Azure traces mixing timestamps with and without UTC offsets (TypeError) or
dropping the offsets; replay traces whose requests all arrive at one instant; job deadlines before their
submission and jobs of teams the fleet file has no queue for; exposition timestamps in seconds (stored in
January 1970); sweeps of 100,000 runs; outputs (``-o``, ``--parquet``) naming the command's own input file
(the input was overwritten); user-catalog capture dates that are not dates or lie in the future; blank
``--host``, blank ``GPUFLEET_DATA_DIR`` and ``--image`` values no registry accepts. ``GOOD`` lists nearby
valid inputs that must still exit 0 (CRLF, UTF-16 with BOM, offsets that agree, dates in YAML, ...).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from corpus_files import Content, invoke_good, materialise
from test_cli_corpus import CATALOG, WORKLOAD, _check, runner
from test_cli_corpus_new import EXPO, JOBS, TRACE

from gpufleet.cli.app import app

ROOT = Path(__file__).parents[2]
DATA = ROOT / "tests" / "data"
SMALL_CASES = (DATA / "cases" / "small.csv").read_bytes()
SIM_FLEET = (DATA / "simulate" / "fleet.yaml").read_bytes()
DEADLINE_JOBS = (DATA / "simulate" / "jobs.csv").read_bytes()
MULTI = (ROOT / "examples" / "fleets" / "multicloud.yaml").read_bytes()
AZ = b"TIMESTAMP,ContextTokens,GeneratedTokens\n"
H = b"timestamp_s,input_tokens,output_tokens\n"
JOBS_H = b"job_id,submit_s,gpus,duration_s,priority,deadline_s,preemptible,team\n"
SMI = (
    b"timestamp, index, uuid, name, memory.total [MiB], memory.used [MiB], utilization.gpu [%], "
    b"power.draw [W]\n"
    b"2026/07/14 08:12:38.696, 0, GPU-aaaa, NVIDIA H100 80GB HBM3, 81559 MiB, 100 MiB, 50 %, 69.85 W\n"
    b"2026/07/14 08:13:38.696, 0, GPU-aaaa, NVIDIA H100 80GB HBM3, 81559 MiB, 100 MiB, 60 %, 69.85 W\n"
)
SWEEP = b"kind: batch\nbase:\n  jobs: j.csv\ngrid:\n  policy: [fifo]\nseeds: [0]\n"
SEEDS_10001 = b"kind: batch\nbase:\n  jobs: j.csv\ngrid:\n  policy: [fifo]\nseeds: [%s]\n" % b",".join(
    b"%d" % k for k in range(10_001)
)

SA = ["simulate", "autoscale", "{t}", "--gpu", "l4"]
TI = ["telemetry", "ingest", "{t}", "--store", "{tmp}/st"]
SMI_ARGS = ["--input-format", "nvidia-smi", "--timezone", "UTC"]
OC = ["catalog", "offers", "--catalog", "{c}"]

# (id, argv with {name} placeholders for the files, files by name, words the message must hold)
FILES: list[tuple[str, list[str], dict[str, Content], list[str]]] = [
    # 1. Azure TIMESTAMPs: with and without offset mixed (TypeError traceback); a date without a time
    (
        "azure-naive-then-offset",
        SA,
        {"t.csv": AZ + b"2023-11-16 18:15:46,374,44\n2023-11-16 18:15:47Z,374,44\n"},
        ["line 3", "UTC offset", "+00:00"],
    ),
    (
        "azure-offset-then-naive",
        SA,
        {"t.csv": AZ + b"2023-11-16 18:15:46+05:00,374,44\n2023-11-16 18:15:47,374,44\n"},
        ["line 3", "no UTC offset"],
    ),
    (
        "azure-date-only",
        SA,
        {"t.csv": AZ + b"2023-11-16,374,44\n2023-11-17,374,44\n"},
        ["2023-11-16", "time"],
    ),
    ("azure-epoch", SA, {"t.csv": AZ + b"1700000000,374,44\n"}, ["TIMESTAMP", "date-time"]),
    # 2. traces with no spread in time: an autoscaling "answer" over 0 s ($0.00)
    ("trace-all-at-t0", SA, {"t.csv": H + b"0,100,10\n" * 50}, ["spans 0 s", "50 request(s)"]),
    ("trace-one-request", SA, {"t.csv": H + b"12.5,100,10\n"}, ["spans 0 s"]),
    (
        "trace-azure-same-instant",
        SA,
        {"t.csv": AZ + b"2023-11-16 18:15:46.6805900,374,44\n" * 3},
        ["spans 0 s", "same instant"],
    ),
    (
        "trace-mooncake-same-instant",
        SA,
        {"t.jsonl": b'{"timestamp": 5, "input_length": 5, "output_length": 2}\n' * 4},
        ["spans 0 s"],
    ),
    # 3. job files: a deadline before the job's own submission was counted as a plain miss
    (
        "jobs-deadline-before-submit",
        ["simulate", "batch", "{j}"],
        {"j.csv": JOBS_H + b"j1,100,8,60,0,50,false,research\n"},
        ["line 2", "deadline_s = 50", "submit_s = 100"],
    ),
    (
        "jobs-deadline-equal-submit",
        ["simulate", "batch", "{j}"],
        {"j.csv": JOBS_H + b"j1,100,8,60,0,100,false,research\n"},
        ["deadline_s"],
    ),
    # 4. a team the fleet has no queue for escaped every quota (Kueue admits no such workload)
    (
        "jobs-team-typo",
        ["simulate", "batch", "{j}", "--fleet", "{fl}"],
        {"j.csv": JOBS_H + b"j1,0,8,60,0,,false,reserch\n", "fl.yaml": SIM_FLEET},
        ["reserch", "research", "teams"],
    ),
    (
        "jobs-team-case",
        ["simulate", "batch", "{j}", "--fleet", "{fl}"],
        {"j.csv": JOBS_H + b"j1,0,8,60,0,,false,Prod\n", "fl.yaml": SIM_FLEET},
        ["Prod", "prod"],
    ),
    # 5. exposition timestamps are ms: a value in seconds landed in January 1970
    (
        "expo-ts-seconds",
        TI,
        {"t.prom": b'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-0",Hostname="a"} 50 1780000200\n'},
        ["before_2000", "No sample could be stored"],
    ),
    (
        "expo-label-twice",
        TI,
        {"t.prom": b'DCGM_FI_DEV_GPU_UTIL{gpu="0",gpu="1",UUID="GPU-0",Hostname="a"} 50 1780000200000\n'},
        ["malformed_line", 'gpu="1"'],
    ),
    (
        "promjson-ts-1970",
        TI,
        {
            "t.json": b'{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": '
            b'{"__name__": "DCGM_FI_DEV_GPU_UTIL", "UUID": "GPU-1", "Hostname": "n"}, "values": '
            b'[[17800, "50"]]}]}}'
        },
        ["before_2000"],
    ),
    # 6. telemetry stores: a file, a path under a file, a host given as blank
    (
        "store-is-file",
        ["telemetry", "ingest", "{t}", "--store", "{s}"],
        {"t.prom": EXPO, "s": b"x"},
        ["file"],
    ),
    (
        "store-report-is-file",
        ["telemetry", "report", "--store", "{s}"],
        {"s": b"x"},
        ["not a directory", "--store"],
    ),
    (
        "store-under-file",
        ["telemetry", "ingest", "{t}", "--store", "{s}/sub"],
        {"t.prom": EXPO, "s": b"x"},
        ["Cannot create the telemetry store", "Not a directory"],
    ),
    ("smi-host-blank", [*TI, *SMI_ARGS, "--host", ""], {"t.csv": SMI}, ["--host", "blank"]),
    ("smi-host-spaces", [*TI, *SMI_ARGS, "--host", "  "], {"t.csv": SMI}, ["--host", "blank"]),
    # 7. sweeps: 100,000 seeds ran for 8.5 minutes
    (
        "sweep-too-many-runs",
        ["simulate", "sweep", "{s}"],
        {"s.yaml": SEEDS_10001, "j.csv": JOBS},
        ["10,001 runs", "10,000"],
    ),
    # 8. outputs that name the command's own input (the input file was overwritten)
    (
        "recommend-out-is-workload",
        ["recommend", "{w}", "-f", "json", "-o", "{w}"],
        {"w.yaml": WORKLOAD},
        ["input files", "another path"],
    ),
    (
        "calibrate-out-is-cases",
        ["calibrate", "{c}", "-o", "{c}"],
        {"c.csv": SMALL_CASES},
        ["input files"],
    ),
    (
        "sweep-parquet-is-spec",
        ["simulate", "sweep", "{s}", "--workers", "1", "--parquet", "{s}"],
        {"s.yaml": SWEEP, "j.csv": JOBS},
        ["Parquet", "input files"],
    ),
    (
        "sweep-parquet-is-jobs",
        ["simulate", "sweep", "{s}", "--workers", "1", "--parquet", "{j}"],
        {"s.yaml": SWEEP, "j.csv": JOBS},
        ["input files"],
    ),
    (
        "simulate-out-is-trace",
        ["simulate", "autoscale", "{t}", "--gpu", "l4", "-f", "json", "-o", "{t}"],
        {"t.csv": TRACE},
        ["input files"],
    ),
    (
        "plan-out-is-fleet",
        ["plan", "{f}", "--no-savings", "-f", "csv", "-o", "{f}"],
        {"f.yaml": MULTI},
        ["input files"],
    ),
    (
        "out-is-input-via-symlink",
        ["recommend", "{w}", "-f", "json", "-o", "{tmp}/link.json"],
        {"w.yaml": WORKLOAD, "link.json": lambda p: os.symlink(p.parent / "w.yaml", p)},
        ["input files"],
    ),
    # 9. user catalogs: capture dates that are not dates, or in the future
    (
        "catalog-captured-text",
        OC,
        {"c.yaml": CATALOG + b"    captured_at: yesterday\n"},
        ["captured_at", "YYYY-MM-DD"],
    ),
    (
        "catalog-captured-future",
        OC,
        {"c.yaml": CATALOG + b"    captured_at: '2099-01-01'\n"},
        ["captured_at", "future"],
    ),
    ("catalog-captured-month-13", OC, {"c.yaml": CATALOG + b"    captured_at: 2026-13\n"}, ["captured_at"]),
    # 13. batch policies with nothing to act on ran as plain fifo
    (
        "batch-offpeak-no-window",
        ["simulate", "batch", "{j}", "--policy", "offpeak"],
        {"j.csv": JOBS},
        ["offpeak", "off_peak", "fifo"],
    ),
    (
        "batch-spot-no-spot-pool",
        ["simulate", "batch", "{j}", "--policy", "spot", "--fleet", "{f}"],
        {"j.csv": JOBS, "f.yaml": b"pools:\n  - {gpu: h100, gpus_per_node: 8, nodes: 4, kind: on_demand}\n"},
        ["spot pool"],
    ),
    (
        "batch-deadline-no-deadlines",
        ["simulate", "batch", "{j}", "--policy", "deadline"],
        {"j.csv": JOBS_H + b"j1,0,8,60,0,,false,r\n"},
        ["no job has a deadline"],
    ),
    # 14. a price beyond its own bound is named with that bound (JSON, and YAML now that 1e300 is a number)
    (
        "catalog-json-price-1e300",
        OC,
        {
            "c.json": b'{"offers": [{"provider": "onprem", "region": "dc", "instance_type": "box", '
            b'"gpu": "H100-SXM", "gpu_count": 8, "price_on_demand_usd_per_hour": 1e300}]}'
        },
        ["price_on_demand_usd_per_hour", "100,000"],
    ),
    (
        "workload-concurrency-1e-3",
        ["recommend", "{w}"],
        {"w.yaml": WORKLOAD + b"concurrency: 1e-3\n"},
        ["concurrency"],
    ),
    # 11. a GPU Fleet Optimizer folder whose gpu_instances.json is a FIFO: "holds none of ..." (misleading)
    (
        "gfo-folder-fifo",
        ["config", "show", "--gfo-config", "{d}"],
        {"d": lambda p: (p.mkdir(), os.mkfifo(p / "gpu_instances.json"))},
        ["gpu_instances.json", "not a regular file"],
    ),
    # 10. container images no registry accepts
    (
        "plan-image-spaces",
        ["plan", "{f}", "--no-savings", "-f", "k8s", "--image", "my image:1"],
        {"f.yaml": MULTI},
        ["--image", "spaces"],
    ),
    (
        "plan-image-newline",
        ["plan", "{f}", "--no-savings", "-f", "k8s", "--image", "x:1\nkind: Secret"],
        {"f.yaml": MULTI},
        ["--image", "control"],
    ),
]

GFO_WL = json.loads((DATA / "gfo_guide" / "custom_workload.json").read_bytes())


def _gfo(**scenario: object) -> bytes:
    doc = json.loads(json.dumps(GFO_WL))
    doc["workloads"]["my_custom_workload"]["scenario"].update(scenario)
    return json.dumps(doc).encode()


GFO_GPU = json.loads((DATA / "gfo_guide" / "gpu_instances.json").read_bytes())


def _gfo_instances(**extra: dict[str, object]) -> bytes:
    doc = json.loads(json.dumps(GFO_GPU))
    doc["gpu_instances"].update(extra)
    return json.dumps(doc).encode()


P5_LOWER = {**GFO_GPU["gpu_instances"]["P5"], "on_demand_cost_per_hour": 99.0, "spot_cost_per_hour": 1.0}
FILES += [
    # 15. GPU Fleet Optimizer instances P5 and p5: two offers named "P5 (H100)" at two prices
    (
        "gfo-instance-case-twice",
        ["config", "check", "{g}"],
        {"g.json": _gfo_instances(p5=P5_LOWER)},
        ["p5", "P5"],
    ),
    (
        "gfo-instance-name-twice",
        ["recommend", "--model", "llama-3-8b", "--catalog", "{g}"],
        {"g.json": _gfo_instances(P5x=P5_LOWER)},
        ["P5x", "repeats"],
    ),
    # 12. GPU Fleet Optimizer workloads: keys match case-insensitively and by synonym, so one silently won;
    # a misspelt key left its default in force
    (
        "gfo-use-spot-twice",
        ["config", "check", "{g}"],
        {"g.json": _gfo(Use_Spot=False)},
        ["'use_spot'", "'Use_Spot'", "keep one"],
    ),
    (
        "gfo-model-synonyms",
        ["recommend", "{g}"],
        {"g.json": _gfo(model="llama-3-8b")},
        ["model_size", "model"],
    ),
    (
        "gfo-hours-typo",
        ["recommend", "{g}"],
        {"g.json": _gfo(monthly_hourz=100)},
        ["monthly_hourz", "monthly_hours"],
    ),
]

# (id, variable, value, argv, words): environment variables the CLI reads
ENV: list[tuple[str, str, str, list[str], list[str]]] = [
    ("data-dir-blank", "GPUFLEET_DATA_DIR", "  ", ["telemetry", "findings"], ["GPUFLEET_DATA_DIR", "blank"]),
    (
        "data-dir-is-file",
        "GPUFLEET_DATA_DIR",
        "{tmp}/afile",
        ["telemetry", "ingest", "{t}"],
        ["Cannot create the telemetry store", "GPUFLEET_DATA_DIR"],
    ),
]


EM_LOAD = ["estimate", "memory", "-m", "llama-3-8b", "-g", "h100", "--task", "load"]
# (id, argv, words): options alone
FLAGS: list[tuple[str, list[str], list[str]]] = [
    # --task load sizes the weights only: these options changed nothing
    ("load-batch", [*EM_LOAD, "--batch", "8"], ["--batch", "--task load"]),
    ("load-seq-len", [*EM_LOAD, "--seq-len", "16000"], ["--seq-len"]),
    (
        "load-lengths",
        [*EM_LOAD, "--input-len", "900", "--output-len", "100"],
        ["--input-len", "--output-len"],
    ),
    ("load-kv", [*EM_LOAD, "--kv-precision", "fp8"], ["--kv-precision"]),
    ("load-engine", [*EM_LOAD, "--engine", "transformers"], ["--software"]),
    # a blank --region fetched every catalog region (minutes of network) instead of none
    (
        "update-region-blank",
        ["catalog", "update", "--provider", "aws", "--region", "", "--dry-run"],
        ["--region"],
    ),
    (
        "update-region-commas",
        ["catalog", "update", "--provider", "azure", "--region", " , ", "--dry-run"],
        ["names no region"],
    ),
]


@pytest.mark.parametrize(("argv", "words"), [pytest.param(a, w, id=i) for i, a, w in FLAGS])
def test_bad4_flag(argv: list[str], words: list[str]) -> None:
    _check(argv, words)


@pytest.mark.parametrize(("argv", "files", "words"), [pytest.param(a, f, w, id=i) for i, a, f, w in FILES])
def test_bad4_file(tmp_path: Path, argv: list[str], files: dict[str, Content], words: list[str]) -> None:
    subs = materialise(tmp_path, files)
    _check(argv, words, subs)
    for name, content in files.items():  # the inputs are untouched (outputs onto them are refused)
        path = tmp_path / name
        if isinstance(content, bytes) and path.is_file() and not path.is_symlink():
            assert path.read_bytes() == content, name


@pytest.mark.parametrize(
    ("var", "value", "argv", "words"), [pytest.param(v, x, a, w, id=i) for i, v, x, a, w in ENV]
)
def test_bad4_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, var: str, value: str, argv: list[str], words: list[str]
) -> None:
    subs = materialise(tmp_path, {"t.prom": EXPO, "afile": b"x"})
    monkeypatch.setenv(var, value.replace("{tmp}", str(tmp_path)))
    _check(argv, words, subs)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("bad4")
    (d / "s.prom").write_bytes(EXPO)
    res = runner.invoke(app, ["telemetry", "ingest", str(d / "s.prom"), "--store", str(d / "store")])
    assert res.exit_code == 0, res.output
    return d / "store"


INV = b"hosts:\n  - host: 'node-*'\n    provider: aws\n    instance_type: g5.xlarge\n    region: us-east-1\n"
RULE = b"rules:\n  - name: hot\n    metric: gpu_util_pct\n    op: '>'\n    threshold: 90\n    for: 10m\n"
INVF = ["telemetry", "findings", "--store", "{st}", "--inventory", "{i}"]
RA = ["telemetry", "alerts", "--store", "{st}", "--rules", "{r}"]
# (id, argv with {st} = a store holding host node-a, files, words): the inventory and the alert rules
STORE_FILES: list[tuple[str, list[str], dict[str, Content], list[str]]] = [
    (
        "inventory-glob-unclosed",
        INVF,
        {"i.yaml": INV.replace(b"'node-*'", b"'node-['")},
        ["matches none of the GPUs", "node-[", "node-a"],
    ),
    ("inventory-other-cluster", INVF, {"i.yaml": INV.replace(b"'node-*'", b"'gpu-*'")}, ["gpu-*", "node-a"]),
    (
        "inventory-host-case",
        ["telemetry", "report", "--store", "{st}", "--inventory", "{i}"],
        {"i.yaml": INV.replace(b"'node-*'", b"'NODE-*'")},
        ["case-sensitive"],
    ),
    (
        "inventory-region-unknown",
        INVF,
        {"i.yaml": INV.replace(b"us-east-1", b"us-east-9")},
        ["us-east-9", "g5.xlarge", "did you mean", "us-east-1"],
    ),
    (
        "rule-util-over-100",
        RA,
        {"r.yaml": RULE.replace(b"threshold: 90", b"threshold: 900")},
        ["900", "0 to 100"],
    ),
    (
        "rule-ratio-as-percent",
        RA,
        {"r.yaml": RULE.replace(b"gpu_util_pct", b"sm_active_ratio").replace(b"90", b"50")},
        ["sm_active_ratio", "0 to 1"],
    ),
    (
        "rule-below-zero",
        RA,
        {"r.yaml": RULE.replace(b"'>'", b"'<'").replace(b"threshold: 90", b"threshold: 0")},
        ["never be met"],
    ),
]
STORE_GOOD: list[tuple[str, list[str], dict[str, Content]]] = [
    ("inventory-matches", INVF, {"i.yaml": INV}),
    ("inventory-extra-hosts", INVF, {"i.yaml": INV + INV.replace(b"'node-*'", b"'gone-*'")[7:]}),
    ("inventory-no-region", INVF, {"i.yaml": INV.replace(b"    region: us-east-1\n", b"")}),
    ("rule-90", RA, {"r.yaml": RULE}),
    (
        "rule-ge-100",
        RA,
        {"r.yaml": RULE.replace(b"'>'", b"'>='").replace(b"threshold: 90", b"threshold: 100")},
    ),
]


@pytest.mark.parametrize(
    ("argv", "files", "words"), [pytest.param(a, f, w, id=i) for i, a, f, w in STORE_FILES]
)
def test_bad4_store_file(
    store: Path, tmp_path: Path, argv: list[str], files: dict[str, Content], words: list[str]
) -> None:
    _check(argv, words, {**materialise(tmp_path, files), "st": str(store)})


@pytest.mark.parametrize(("argv", "files"), [pytest.param(a, f, id=i) for i, a, f in STORE_GOOD])
def test_good_store_file(store: Path, tmp_path: Path, argv: list[str], files: dict[str, Content]) -> None:
    subs = {**materialise(tmp_path, files), "st": str(store)}
    for key, value in subs.items():
        argv = [a.replace("{" + key + "}", value) for a in argv]
    res = runner.invoke(app, argv)
    assert res.exit_code == 0 and "Traceback" not in res.output, res.output[-800:]


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:100])


@pytest.mark.parametrize("damage", ["truncate-series", "truncate-samples", "delete-series", "delete-samples"])
@pytest.mark.parametrize("command", ["findings", "report", "ingest"])
def test_damaged_store(store: Path, tmp_path: Path, damage: str, command: str) -> None:
    """A store whose Parquet files were cut short or removed (a partial copy) exits 2 naming the file; it
    was a DuckDB InvalidInputException/IOException traceback."""
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    what, kind = damage.split("-")
    victim = next((copy / kind).rglob("*.parquet"))
    victim.unlink() if what == "delete" else _truncate(victim)
    argv = ["telemetry", command, "--store", str(copy)]
    if command == "ingest":
        (tmp_path / "more.prom").write_bytes(EXPO)
        argv.insert(2, str(tmp_path / "more.prom"))
    _check(argv, ["damaged", victim.name, "--store"])


# ---- inputs near the bad ones that must still succeed --------------------------------------------------
GOOD: list[tuple[str, list[str], dict[str, Content]]] = [
    (
        "azure-offsets-agree",
        SA,
        {"t.csv": AZ + b"2023-11-16 18:15:46+05:00,374,44\n2023-11-16 13:15:47Z,374,44\n"},
    ),
    (
        "azure-7-digit-fraction",
        SA,
        {"t.csv": AZ + b"2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:47.1234567,3,4\n"},
    ),
    ("azure-T-separator", SA, {"t.csv": AZ + b"2023-11-16T18:15:46,374,44\n2023-11-16T18:15:49,374,44\n"}),
    ("trace-crlf", SA, {"t.csv": TRACE.replace(b"\n", b"\r\n")}),
    ("trace-utf16-bom", SA, {"t.csv": b"\xff\xfe" + TRACE.decode().encode("utf-16-le")}),
    ("trace-two-instants", SA, {"t.csv": H + b"0,100,10\n0,100,10\n1,100,10\n"}),
    (
        "jobs-deadline-after",
        ["simulate", "batch", "{j}"],
        {"j.csv": JOBS_H + b"j1,100,8,60,0,500,false,research\n"},
    ),
    (
        "jobs-teams-known",
        ["simulate", "batch", "{j}", "--fleet", "{fl}"],
        {"j.csv": JOBS, "fl.yaml": SIM_FLEET},
    ),
    ("jobs-no-fleet-teams", ["simulate", "batch", "{j}"], {"j.csv": JOBS_H + b"j1,0,8,60,0,,false,anyone\n"}),
    ("smi-crlf", [*TI, *SMI_ARGS], {"t.csv": SMI.replace(b"\n", b"\r\n")}),
    ("smi-utf16-bom", [*TI, *SMI_ARGS], {"t.csv": b"\xff\xfe" + SMI.decode().encode("utf-16-le")}),
    ("smi-host", [*TI, *SMI_ARGS, "--host", "node-7"], {"t.csv": SMI}),
    ("expo-ms", TI, {"t.prom": EXPO}),
    (
        "sweep-small",
        ["simulate", "sweep", "{s}", "--workers", "1", "--parquet", "{tmp}/out.parquet"],
        {"s.yaml": SWEEP, "j.csv": JOBS},
    ),
    (
        "recommend-out-elsewhere",
        ["recommend", "{w}", "-f", "json", "-o", "{tmp}/r.json"],
        {"w.yaml": WORKLOAD},
    ),
    ("calibrate-out-new", ["calibrate", "{c}", "-o", "{tmp}/p.json"], {"c.csv": SMALL_CASES}),
    ("catalog-captured-yaml-date", OC, {"c.yaml": CATALOG + b"    captured_at: 2026-01-01\n"}),
    ("catalog-captured-month", OC, {"c.yaml": CATALOG + b"    captured_at: '2026-08'\n"}),
    ("catalog-captured-range", OC, {"c.yaml": CATALOG + b"    captured_at: 2026-08/2026-11\n"}),
    ("catalog-crlf", OC, {"c.yaml": CATALOG.replace(b"\n", b"\r\n")}),
    ("cases-crlf", ["validate", "{c}"], {"c.csv": SMALL_CASES.replace(b"\n", b"\r\n")}),
    (
        "cases-utf16-bom",
        ["validate", "{c}"],
        {"c.csv": b"\xff\xfe" + SMALL_CASES.decode().encode("utf-16-le")},
    ),
    ("workload-utf8-bom", ["recommend", "{w}", "--top", "1"], {"w.yaml": b"\xef\xbb\xbf" + WORKLOAD}),
    (
        "batch-offpeak-window",
        ["simulate", "batch", "{j}", "--policy", "offpeak", "--fleet", "{f}"],
        {"j.csv": JOBS, "f.yaml": SIM_FLEET},
    ),
    ("batch-deadline", ["simulate", "batch", "{j}", "--policy", "deadline"], {"j.csv": DEADLINE_JOBS}),
    ("load-defaults-typed", [*EM_LOAD, "--batch", "1", "--engine", "vllm"], {}),
    # YAML 1.1 read 1e3 and 1.5e3 as text ("not a valid integer"); YAML 1.2 and people read numbers
    (
        "workload-concurrency-1e3",
        ["recommend", "{w}", "--top", "1"],
        {"w.yaml": WORKLOAD + b"concurrency: 1e3\n"},
    ),
    (
        "workload-input-1.5e3",
        ["recommend", "{w}", "--top", "1"],
        {"w.yaml": WORKLOAD.replace(b"512", b"1.5e3")},
    ),
    ("catalog-price-1e1", OC, {"c.yaml": CATALOG.replace(b"18.5", b"2e1")}),
    ("gfo-own-extra-key", ["config", "check", "{g}"], {"g.json": _gfo(legacy_memory_multiplier=1.5)}),
    ("gfo-same-value-twice", ["config", "check", "{g}"], {"g.json": _gfo(Use_Spot=True)}),
    (
        "plan-image",  # the multi-cloud plan spans 4 clusters: one manifest per cluster into a folder
        ["plan", "{f}", "--no-savings", "-f", "k8s", "--image", "ghcr.io/org/srv:1.2", "-o", "{tmp}/k8s"],
        {"f.yaml": MULTI},
    ),
]


@pytest.mark.parametrize(("argv", "files"), [pytest.param(a, f, id=i) for i, a, f in GOOD])
def test_good(tmp_path: Path, argv: list[str], files: dict[str, Content]) -> None:
    res = invoke_good(runner, app, tmp_path, argv, files)
    assert "Traceback" not in res.output, res.output
    assert res.exit_code == 0, f"exit {res.exit_code} ({res.exception!r}): {res.output[-800:]}"


def test_offsets_are_kept(tmp_path: Path) -> None:
    """+05:00 then Z, one second apart in UTC: the replay spans 1 s (the offsets were cut off: 5 h)."""
    subs = materialise(
        tmp_path, {"t.csv": AZ + b"2023-11-16 18:15:46+05:00,374,44\n2023-11-16 13:15:47Z,3,4\n"}
    )
    res = runner.invoke(app, ["simulate", "autoscale", subs["t"], "--gpu", "l4", "-f", "json"])
    assert res.exit_code == 0, res.output[-600:]
    assert '"duration_s": 1.0' in res.output, res.output[:400]


def test_library_may_rewrite_its_input(tmp_path: Path) -> None:
    """Only a CLI command refuses to overwrite its own inputs: the library may save a profile it loaded."""
    from gpufleet.estimate.calibration import load_profile, save_profile

    res = runner.invoke(app, ["calibrate", str(DATA / "cases" / "small.csv"), "-o", str(tmp_path / "p.json")])
    assert res.exit_code == 0, res.output
    profile = load_profile(tmp_path / "p.json")
    save_profile(profile, tmp_path / "p.json")


def test_bad4_size() -> None:
    assert len(FILES) + len(ENV) + len(STORE_FILES) + len(FLAGS) + 12 >= 50


@pytest.fixture(autouse=True)
def _isolated(cli_case_guard: None) -> None:
    """Every case of this module runs under the shared guard."""
