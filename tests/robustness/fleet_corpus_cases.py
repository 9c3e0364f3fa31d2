# ruff: noqa: E501
"""Cases of the fleet-half bad-input corpus (issue 26): telemetry inputs, request traces, batch job files,
sweep files, fleet and inventory files, alert rules, spot traces and the telemetry store.

Each case is ``Case(id, argv, files, ...)``: ``{name}`` in argv is replaced by the path of ``files[name]``
(bytes, or a callable making the path: a FIFO, a link), ``{tmp}`` by the case's folder, ``{store}`` by a
copy of a small valid telemetry store, ``{jobs}``/``{trace}`` by small valid inputs. ``ok`` cases must exit 0
with sane figures (no NaN/inf, no negative counts) and name ``words``; the others exit 2 with one message
naming ``words``. The expected outcomes live with the cases; ``test_cli_corpus_fleet.py`` runs them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

Content = bytes | Callable[[Path], object]


@dataclass(frozen=True)
class Case:
    id: str
    argv: list[str]
    files: dict[str, Content] = field(default_factory=dict)
    words: tuple[str, ...] = ()
    ok: bool = False
    env: dict[str, str | None] = field(default_factory=dict)


# ---- valid inputs ------------------------------------------------------------------------------------------
T0_MS = 1_780_000_200_000  # 2026-05-28T20:30:00Z
T0_S = T0_MS // 1000
SMI_HEADER = (
    b"timestamp, index, uuid, name, memory.total [MiB], memory.used [MiB], utilization.gpu [%], "
    b"power.draw [W]\n"
)


def smi_row(ts: str = "2026/05/28 20:30:00.000", idx: int = 0, uuid: str = "GPU-a", **kw: str) -> bytes:
    v = {"name": "NVIDIA H100 80GB HBM3", "total": "81559 MiB", "used": "1000 MiB", "util": "50 %"}
    v |= kw
    return (
        f"{ts}, {idx}, {uuid}, {v['name']}, {v['total']}, {v['used']}, {v['util']}, {v.get('power', '300 W')}\n"
    ).encode()


SMI = SMI_HEADER + b"".join(
    smi_row(f"2026/05/28 20:{30 + k}:00.000", g, f"GPU-{g}") for k in range(5) for g in (0, 1)
)


def expo_line(
    metric: str = "DCGM_FI_DEV_GPU_UTIL", value: object = 50, ts: object = T0_MS, **labels: str
) -> bytes:
    lab = {"gpu": "0", "UUID": "GPU-0", "Hostname": "node-a"} | labels
    inner = ",".join(f'{k}="{v}"' for k, v in lab.items())
    return f"{metric}{{{inner}}} {value} {ts}\n".encode()


EXPO = b"".join(
    expo_line(value=40 + g, ts=T0_MS + 60_000 * k, gpu=str(g), UUID=f"GPU-{g}")
    for k in range(10)
    for g in (0, 1)
)


def prom_json(
    values: list[list[object]] | None = None, metric: dict[str, str] | None = None, **top: object
) -> bytes:
    m = {"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": "h", "gpu": "0", "UUID": "GPU-9"} | (metric or {})
    vals = values if values is not None else [[T0_S + 60 * k, str(30 + k)] for k in range(10)]
    doc: dict[str, object] = {
        "status": "success",
        "data": {"resultType": "matrix", "result": [{"metric": m, "values": vals}]},
    }
    doc |= top
    return json.dumps(doc).encode()


PROMJSON = prom_json()
CW_HEADER = b"Timestamp,MetricName,Value,Unit,host,index\n"


def cw_row(
    ts: str = "2026-05-28T20:30:00Z",
    metric: str = "nvidia_smi_utilization_gpu",
    value: str = "50",
    unit: str = "Percent",
    host: str = "n1",
    idx: str = "0",
) -> bytes:
    return f"{ts},{metric},{value},{unit},{host},{idx}\n".encode()


CW = CW_HEADER + b"".join(cw_row(f"2026-05-28T20:{30 + k}:00Z") for k in range(10))
TRACE = b"timestamp_s,input_tokens,output_tokens\n" + b"".join(
    f"{k * 0.5:.1f},{200 + 13 * k},{40 + k}\n".encode() for k in range(40)
)
JOBS_HEADER = b"job_id,submit_s,gpus,duration_s,priority,deadline_s,preemptible,team\n"
JOBS = JOBS_HEADER + b"j1,0,8,7200,1,,false,research\nj2,60,1,3600,0,,true,prod\n"
BATCH_FLEET = (
    b"pools:\n  - {name: od, gpu: h100, gpus_per_node: 8, nodes: 2, kind: on_demand}\n"
    b"teams:\n  research: {nominal_gpus: 8, borrowing_limit_gpus: 8}\n  prod: {nominal_gpus: 8, borrowing_limit_gpus: 0}\n"
)


def sweep(
    jobs: str = "jobs.csv", grid: str = "  policy: [fifo, easy]\n", extra: str = "seeds: [0]\n"
) -> bytes:
    return f"kind: batch\nbase:\n  jobs: {jobs}\ngrid:\n{grid}{extra}".encode()


SWEEP = sweep()
FLEET = (
    b"name: t\nworkloads:\n  chat:\n    workload: {model: llama-3.1-8b, target_requests_per_s: 2}\n"
    b"    demand: {schedule: '24/7'}\n    providers: [lambda]\n"
)


def fleet_with(constraints: str = "", workload: str = "", entry: str = "") -> bytes:
    wl = workload or "{model: llama-3.1-8b, target_requests_per_s: 2}"
    body = f"name: t\nworkloads:\n  chat:\n    workload: {wl}\n    demand: {{schedule: '24/7'}}\n    providers: [lambda]\n{entry}"
    if constraints:
        body += f"constraints:\n{constraints}"
    return body.encode()


INVENTORY = (
    b"hosts:\n  - host: 'node-*'\n    provider: aws\n    instance_type: p5.48xlarge\n    region: us-east-1\n"
)
RULES = (
    b"rules:\n  - name: hot\n    metric: gpu_util_pct\n    op: '>'\n    threshold: 90\n    for: 10m\n"
    b"    severity: warning\n    action: Scale up\n"
)
SPOT_TRACE = json.dumps({"metadata": {"gap_seconds": 600}, "data": [1] * 50 + [0] * 3 + [1] * 50}).encode()
WL = b"name: w\nmodel: llama-3-8b\ntask: inference\ninput_len_tokens: 512\noutput_len_tokens: 128\n"

ALIAS_BOMB = b'a: &a ["x","x"]\nb: &b [*a,*a]\nc: &c [*b,*b]\nd: &d [*c,*c]\ne: [*d,*d]\n'
DEEP_YAML = b"a: " + b"[" * 300 + b"]" * 300 + b"\n"
DEEP_JSON = b"[" * 3000 + b"]" * 3000


# ---- special files -----------------------------------------------------------------------------------------
def fifo(path: Path) -> None:
    os.mkfifo(path)


def symlink_loop(path: Path) -> None:
    other = path.with_name(path.name + ".loop")
    os.symlink(other, path)
    os.symlink(path, other)


def dangling(path: Path) -> None:
    os.symlink(path.with_name("no-such-target"), path)


def dev_zero(path: Path) -> None:
    os.symlink("/dev/zero", path)


def big(valid: bytes) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        with path.open("wb") as fh:
            fh.write(valid)
            fh.truncate(600 * 1024 * 1024)  # a sparse 600 MiB file: above every reader's limit

    return make


# ---- the damage matrix: every fleet-half reader x generic damage -----------------------------------------
TI = ["telemetry", "ingest", "{f}", "--store", "{tmp}/st"]
KINDS: dict[str, tuple[list[str], str, bytes, str]] = {
    # kind: (argv, suffix, a valid file, "csv" | "text" | "yaml" | "json")
    "smi": ([*TI, "--input-format", "nvidia-smi", "--timezone", "UTC"], ".csv", SMI, "csv"),
    "dcgm": ([*TI, "--input-format", "exposition"], ".prom", EXPO, "text"),
    "promjson": ([*TI, "--input-format", "prom-json"], ".json", PROMJSON, "json"),
    "cloudwatch": ([*TI, "--input-format", "cloudwatch"], ".csv", CW, "csv"),
    "trace": (["simulate", "autoscale", "{f}", "--gpu", "l4"], ".csv", TRACE, "csv"),
    "jobs": (["simulate", "batch", "{f}"], ".csv", JOBS, "csv"),
    "batchfleet": (["simulate", "batch", "{jobs}", "--fleet", "{f}"], ".yaml", BATCH_FLEET, "yaml"),
    "sweep": (["simulate", "sweep", "{f}", "--workers", "1"], ".yaml", SWEEP, "yaml"),
    "fleet": (["plan", "{f}", "--time-limit", "5"], ".yaml", FLEET, "yaml"),
    "inventory": (
        ["telemetry", "findings", "--store", "{store}", "--inventory", "{f}"],
        ".yaml",
        INVENTORY,
        "yaml",
    ),
    "rules": (["telemetry", "alerts", "--store", "{store}", "--rules", "{f}"], ".yaml", RULES, "yaml"),
    "spottrace": (
        [
            "simulate",
            "spot",
            "--model",
            "llama-3-8b",
            "--tokens",
            "1e9",
            "--runs",
            "3",
            "--interruptions",
            "{f}",
        ],
        ".json",
        SPOT_TRACE,
        "json",
    ),
    "regionswl": (["regions", "{f}", "--limit", "3"], ".yaml", WL, "yaml"),
}


def _truncated(valid: bytes) -> bytes:
    """Cut in the middle of a line (a copy interrupted half way)."""
    cut = len(valid) // 2 + 7
    while valid[cut - 1 : cut] in (b"\n", b" ", b","):
        cut += 1
    return valid[:cut]


DAMAGES: dict[str, Callable[[bytes], Content]] = {
    "truncated": _truncated,
    "nul-bytes": lambda v: v[: len(v) // 3] + b"\x00\x00\x00" + v[len(v) // 3 :],
    "utf16-bom": lambda v: v.decode("utf-8").encode("utf-16"),
    "utf8-bom": lambda v: b"\xef\xbb\xbf" + v,
    "crlf": lambda v: v.replace(b"\n", b"\r\n"),
    "whitespace-only": lambda v: b"\n  \n\t\n",
    "symlink-loop": lambda v: symlink_loop,
    "dangling-link": lambda v: dangling,
    "dev-zero-link": lambda v: dev_zero,
    "fifo": lambda v: fifo,
    "sparse-600mib": big,
    "cp1252": lambda v: v[:2] + b"\xe9" + v[3:],  # a Windows-1252 letter in the first line
}
YAML_DAMAGES: dict[str, bytes] = {
    "alias-bomb": ALIAS_BOMB,
    "deep-nesting": DEEP_YAML,
    "top-level-list": b"- 1\n- 2\n",
}
JSON_DAMAGES: dict[str, bytes] = {
    "deep-nesting": DEEP_JSON,
    "top-level-list": b"[1, 2]",
    "nan-literal": b'{"a": NaN}',
}


def damage_cases() -> list[tuple[str, str, list[str], str, Content]]:
    """(kind, damage, argv, suffix, content) for every reader x damage."""
    out = []
    for kind, (argv, suffix, valid, fmt) in KINDS.items():
        for damage, make in DAMAGES.items():
            out.append((kind, damage, argv, suffix, make(valid)))
        extra = YAML_DAMAGES if fmt == "yaml" else JSON_DAMAGES if fmt == "json" else {}
        for damage, content in extra.items():
            out.append((kind, damage, argv, suffix, content))
    return out


# ---- well-formed files with bad values --------------------------------------------------------------------
TIS = ["telemetry", "ingest", "{t}", "--store", "{tmp}/st"]
SMI_ARGS = [*TIS, "--input-format", "nvidia-smi", "--timezone", "UTC"]
CW_ARGS = [*TIS, "--input-format", "cloudwatch"]
PJ_ARGS = [*TIS, "--input-format", "prom-json"]
SB = ["simulate", "batch", "{j}"]
SBF = ["simulate", "batch", "{jobs}", "--fleet", "{b}"]
SA = ["simulate", "autoscale", "{r}", "--gpu", "l4"]
SW = ["simulate", "sweep", "{s}", "--workers", "1"]
PL = ["plan", "{p}", "--time-limit", "5"]
TF = ["telemetry", "findings", "--store", "{store}", "--inventory", "{i}"]
TA = ["telemetry", "alerts", "--store", "{store}", "--rules", "{u}"]
FUTURE_MS = 4_102_444_800_000  # 2100-01-01


def _smi(*rows: bytes) -> dict[str, Content]:
    return {"t.csv": SMI_HEADER + b"".join(rows)}


def _expo(*lines: bytes) -> dict[str, Content]:
    return {"t.prom": b"".join(lines)}


def _cw(*rows: bytes) -> dict[str, Content]:
    return {"t.csv": CW_HEADER + b"".join(rows)}


def _jobs(*rows: bytes) -> dict[str, Content]:
    return {"j.csv": JOBS_HEADER + b"".join(rows)}


def _trace(*rows: bytes) -> dict[str, Content]:
    return {"r.csv": b"timestamp_s,input_tokens,output_tokens\n" + b"".join(rows)}


def _bfleet(text: str) -> dict[str, Content]:
    return {"b.yaml": text.encode()}


def _plan(body: bytes) -> dict[str, Content]:
    return {"p.yaml": body}


def _sweep(body: bytes) -> dict[str, Content]:
    return {"s.yaml": body, "jobs.csv": JOBS}


def _inv(text: str) -> dict[str, Content]:
    return {"i.yaml": text.encode()}


def _rules(text: str) -> dict[str, Content]:
    return {"u.yaml": text.encode()}


POOL = "  - {name: od, gpu: h100, gpus_per_node: 8, nodes: 2, kind: on_demand"
STEADY = [expo_line(value=50, ts=T0_MS + 60_000 * k) for k in range(5)]

VALUE_CASES: list[Case] = [
    # -- nvidia-smi CSV
    Case(
        "smi-nan-util",
        SMI_ARGS,
        _smi(smi_row(util="nan %"), smi_row("2026/05/28 20:31:00.000", util="50 %")),
        ("stored",),
        ok=True,
    ),
    Case("smi-1e308-used", SMI_ARGS, _smi(smi_row(used="1e308 MiB")), ("out_of_range",), ok=True),
    Case(
        "smi-negative-power",
        SMI_ARGS,
        _smi(smi_row(power="-5 W"), smi_row("2026/05/28 20:31:00.000")),
        ("out_of_range",),
        ok=True,
    ),
    Case(
        "smi-util-1000pct",
        SMI_ARGS,
        _smi(smi_row(util="1000 %"), smi_row("2026/05/28 20:31:00.000")),
        ("out_of_range",),
        ok=True,
    ),
    Case(
        "smi-backwards",
        SMI_ARGS,
        _smi(smi_row("2026/05/28 20:40:00.000"), smi_row("2026/05/28 20:30:00.000")),
        ("out_of_order",),
        ok=True,
    ),
    Case(
        "smi-future",
        SMI_ARGS,
        _smi(smi_row("2100/01/01 00:00:00.000"), smi_row("2026/05/28 20:31:00.000")),
        ("clock_skew",),
        ok=True,
    ),
    Case(
        "smi-1970",
        SMI_ARGS,
        _smi(smi_row("1970/01/01 00:00:00.000"), smi_row("2026/05/28 20:31:00.000")),
        ("stored",),
        ok=True,
    ),
    Case("smi-duplicate-rows", SMI_ARGS, _smi(smi_row(), smi_row()), ("duplicate_sample",), ok=True),
    Case(
        "smi-same-uuid-two-indexes",
        SMI_ARGS,
        _smi(smi_row(idx=0, uuid="GPU-x"), smi_row(idx=1, uuid="GPU-x")),
        ("stored",),
        ok=True,
    ),
    Case(
        "smi-bad-timestamp",
        SMI_ARGS,
        _smi(smi_row("yesterday"), smi_row("2026/05/28 20:31:00.000")),
        ("yesterday",),
        ok=True,
    ),
    Case("smi-all-bad-timestamps", SMI_ARGS, _smi(smi_row("yesterday"), smi_row("soon")), ("No sample",)),
    Case("smi-no-timezone", [*TIS, "--input-format", "nvidia-smi"], _smi(smi_row()), ("--timezone",)),
    Case("smi-header-only", SMI_ARGS, _smi(), ("No sample",)),
    Case(
        "smi-unknown-columns",
        SMI_ARGS,
        {"t.csv": b"timestamp, colour\n2026/05/28 20:30:00.000, red\n"},
        ("colour",),
    ),
    Case(
        "smi-mig-on-t4",
        SMI_ARGS,
        {
            "t.csv": b"timestamp, index, uuid, name, utilization.gpu [%], mig.mode.current\n2026/05/28 20:30:00.000, 0, GPU-t, Tesla T4, 5 %, Enabled\n"
        },
        ("stored",),
        ok=True,
    ),
    Case(
        "smi-na-values",
        SMI_ARGS,
        _smi(smi_row(util="[N/A]", used="[Not Supported]"), smi_row("2026/05/28 20:31:00.000")),
        ("stored",),
        ok=True,
    ),
    Case("smi-huge-index", SMI_ARGS, _smi(smi_row(idx=10**12)), ("missing_labels",)),
    # -- dcgm-exporter text
    Case("dcgm-nan", TIS, _expo(expo_line(value="NaN"), *STEADY[1:]), ("stored",), ok=True),
    Case("dcgm-inf", TIS, _expo(expo_line(value="+Inf"), *STEADY[1:]), ("stored",), ok=True),
    Case("dcgm-1e308", TIS, _expo(expo_line(value="1e308"), *STEADY[1:]), ("missing_value",), ok=True),
    Case("dcgm-negative", TIS, _expo(expo_line(value=-3), *STEADY[1:]), ("out_of_range",), ok=True),
    Case(
        "dcgm-backwards",
        TIS,
        _expo(expo_line(ts=T0_MS + 600_000), expo_line(ts=T0_MS)),
        ("out_of_order",),
        ok=True,
    ),
    Case("dcgm-future", TIS, _expo(expo_line(ts=FUTURE_MS), *STEADY[1:]), ("clock_skew",), ok=True),
    Case("dcgm-all-future", TIS, _expo(expo_line(ts=FUTURE_MS)), ("clock_skew", "No sample")),
    Case("dcgm-ts-zero", TIS, _expo(expo_line(ts=0), *STEADY[1:]), ("stored",), ok=True),
    Case("dcgm-ts-negative", TIS, _expo(expo_line(ts=-5), *STEADY[1:]), ("before_epoch",), ok=True),
    Case("dcgm-duplicate", TIS, _expo(expo_line(), expo_line(), *STEADY[1:]), ("duplicate_sample",), ok=True),
    Case(
        "dcgm-conflicting-duplicate",
        TIS,
        _expo(expo_line(value=10), expo_line(value=90), *STEADY[1:]),
        ("duplicate_sample",),
        ok=True,
    ),
    Case(
        "dcgm-same-uuid-two-hosts",
        TIS,
        _expo(expo_line(Hostname="a"), expo_line(Hostname="b", ts=T0_MS + 60_000)),
        ("stored",),
        ok=True,
    ),
    Case("dcgm-unknown-metric-only", TIS, _expo(expo_line(metric="MY_METRIC")), ("No sample",)),
    Case(
        "dcgm-unknown-metric-mixed",
        TIS,
        _expo(expo_line(metric="MY_METRIC"), *STEADY),
        ("unknown_metric",),
        ok=True,
    ),
    Case(
        "dcgm-no-labels",
        TIS,
        _expo(b"DCGM_FI_DEV_GPU_UTIL 50 1780000200000\n", *STEADY),
        ("stored",),
        ok=True,
    ),
    Case(
        "dcgm-mig-profile-on-t4",
        TIS,
        _expo(expo_line(GPU_I_PROFILE="1g.10gb", GPU_I_ID="1", modelName="Tesla T4"), *STEADY[1:]),
        ("stored",),
        ok=True,
    ),
    Case(
        "dcgm-label-escape",
        TIS,
        _expo(
            b'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-\\"q\\"",Hostname="a\\nb"} 5 1780000200000\n',
            *STEADY[1:],
        ),
        ("stored",),
        ok=True,
    ),
    Case("dcgm-only-comments", TIS, _expo(b"# HELP x\n# TYPE x gauge\n"), ("holds no samples",)),
    Case(
        "dcgm-10k-char-label", TIS, _expo(expo_line(Hostname="h" * 10_000), *STEADY[1:]), ("stored",), ok=True
    ),
    # -- Prometheus JSON
    Case(
        "promjson-error-status",
        PJ_ARGS,
        {"t.json": json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error"}).encode()},
        ("bad_data",),
    ),
    Case(
        "promjson-vector",
        PJ_ARGS,
        {
            "t.json": json.dumps(
                {"status": "success", "data": {"resultType": "vector", "result": []}}
            ).encode()
        },
        ("no samples",),
    ),
    Case(
        "promjson-empty-result",
        PJ_ARGS,
        {
            "t.json": json.dumps(
                {"status": "success", "data": {"resultType": "matrix", "result": []}}
            ).encode()
        },
        ("No sample",),
    ),
    Case(
        "promjson-nan-values",
        PJ_ARGS,
        {"t.json": prom_json([[T0_S, "NaN"], [T0_S + 60, "1e308"], [T0_S + 120, "40"]])},
        ("stored",),
        ok=True,
    ),
    Case(
        "promjson-backwards",
        PJ_ARGS,
        {"t.json": prom_json([[T0_S + 600, "4"], [T0_S, "5"]])},
        ("out_of_order",),
        ok=True,
    ),
    Case(
        "promjson-future",
        PJ_ARGS,
        {"t.json": prom_json([[4_102_444_800, "4"], [T0_S, "5"]])},
        ("clock_skew",),
        ok=True,
    ),
    Case(
        "promjson-string-ts",
        PJ_ARGS,
        {"t.json": prom_json([["noon", "4"], [T0_S, "5"]])},
        ("stored",),
        ok=True,
    ),
    Case(
        "promjson-huge-ts", PJ_ARGS, {"t.json": prom_json([[1e300, "4"], [T0_S, "5"]])}, ("stored",), ok=True
    ),
    Case(
        "promjson-values-not-list",
        PJ_ARGS,
        {"t.json": prom_json(values=None).replace(b'"values": [', b'"values": 3, "x": [')},
        ("no samples",),
    ),
    Case("promjson-no-data", PJ_ARGS, {"t.json": b'{"status": "success"}'}, ("data",)),
    # -- CloudWatch
    Case("cw-nan", CW_ARGS, _cw(cw_row(value="NaN"), cw_row("2026-05-28T20:31:00Z")), ("stored",), ok=True),
    Case(
        "cw-1e308",
        CW_ARGS,
        _cw(cw_row(value="1e308"), cw_row("2026-05-28T20:31:00Z")),
        ("missing_value",),
        ok=True,
    ),
    Case(
        "cw-negative",
        CW_ARGS,
        _cw(cw_row(value="-1"), cw_row("2026-05-28T20:31:00Z")),
        ("out_of_range",),
        ok=True,
    ),
    Case(
        "cw-future",
        CW_ARGS,
        _cw(cw_row("2100-01-01T00:00:00Z"), cw_row("2026-05-28T20:31:00Z")),
        ("clock_skew",),
        ok=True,
    ),
    Case(
        "cw-backwards",
        CW_ARGS,
        _cw(cw_row("2026-05-28T20:40:00Z"), cw_row("2026-05-28T20:30:00Z")),
        ("out_of_order",),
        ok=True,
    ),
    Case(
        "cw-bad-time",
        CW_ARGS,
        _cw(cw_row("tomorrow"), cw_row("2026-05-28T20:31:00Z")),
        ("tomorrow",),
        ok=True,
    ),
    Case("cw-unknown-metric", CW_ARGS, _cw(cw_row(metric="CPUUtilization")), ("No sample",)),
    Case(
        "cw-unknown-unit",
        CW_ARGS,
        _cw(cw_row(unit="Furlongs"), cw_row("2026-05-28T20:31:00Z")),
        ("Furlongs",),
        ok=True,
    ),
    Case(
        "cw-missing-columns",
        CW_ARGS,
        {"t.csv": b"Timestamp,Value\n2026-05-28T20:30:00Z,5\n"},
        ("MetricName",),
    ),
    Case("cw-duplicates", CW_ARGS, _cw(cw_row(), cw_row()), ("duplicate_sample",), ok=True),
    # -- request traces
    Case("trace-backwards", SA, _trace(b"5,10,10\n", b"1,10,10\n"), ("sorted",)),
    Case("trace-zero-tokens", SA, _trace(b"0,0,0\n", b"1,0,0\n"), ("tokens",)),
    Case("trace-negative-tokens", SA, _trace(b"0,-5,10\n", b"1,10,10\n"), ("input tokens",)),
    Case("trace-nan", SA, _trace(b"0,nan,10\n", b"1,10,10\n"), ("finite",)),
    Case("trace-1e308", SA, _trace(b"0,1e308,10\n", b"1,10,10\n"), ("input_tokens",)),
    Case("trace-negative-time", SA, _trace(b"-1,10,10\n", b"1,10,10\n"), ("requests 2",), ok=True),
    Case("trace-one-row", SA, _trace(b"0,100,10\n"), ("same instant",)),
    Case("trace-all-same-time", SA, _trace(*[b"0,100,10\n"] * 50), ("same instant",)),
    Case("trace-beyond-context", SA, _trace(b"0,200000,10\n", b"1,10,10\n"), ("context",)),
    Case("trace-header-only", SA, _trace(), ("no requests",)),
    Case("trace-format-unknown", [*SA, "--trace-format", "splunk"], _trace(b"0,1,1\n"), ("splunk",)),
    # -- batch job files
    Case("jobs-zero-gpus", SB, _jobs(b"j1,0,0,60,0,,false,t\n"), ("gpus",)),
    Case("jobs-negative-duration", SB, _jobs(b"j1,0,1,-60,0,,false,t\n"), ("duration_s",)),
    Case("jobs-zero-duration", SB, _jobs(b"j1,0,1,0,0,,false,t\n"), ("duration_s",)),
    Case("jobs-1e308-duration", SB, _jobs(b"j1,0,1,1e308,0,,false,t\n"), ("finite and within",)),
    Case("jobs-nan-submit", SB, _jobs(b"j1,nan,1,60,0,,false,t\n"), ("submit_s",)),
    Case("jobs-duplicate-ids", SB, _jobs(b"j1,0,1,60,0,,false,t\n", b"j1,5,1,60,0,,false,t\n"), ("j1",)),
    Case("jobs-deadline-before-submit", SB, _jobs(b"j1,100,1,60,0,50,false,t\n"), ("deadline",)),
    Case("jobs-too-many-gpus", SB, _jobs(b"j1,0,100000,60,0,,false,t\n"), ("GPUs",)),
    Case("jobs-negative-priority", SB, _jobs(b"j1,0,1,60,-5,,false,t\n"), ("makespan",), ok=True),
    Case("jobs-submit-far-future", SB, _jobs(b"j1,1e12,1,60,0,,false,t\n"), ("finite and within",)),
    Case("jobs-blank-id", SB, _jobs(b",0,1,60,0,,false,t\n"), ("makespan",), ok=True),
    Case(
        "jobs-unknown-format", [*SB, "--jobs-format", "slurm2"], _jobs(b"j1,0,1,60,0,,false,t\n"), ("slurm2",)
    ),
    # -- batch fleet files (pools, teams, quotas)
    Case(
        "bfleet-zero-nodes", SBF, _bfleet(f"pools:\n{POOL.replace('nodes: 2', 'nodes: 0')}}}\n"), ("nodes",)
    ),
    Case(
        "bfleet-negative-price", SBF, _bfleet(f"pools:\n{POOL}, price_usd_per_node_hour: -1}}\n"), ("price",)
    ),
    Case("bfleet-zero-price", SBF, _bfleet(f"pools:\n{POOL}, price_usd_per_node_hour: 0}}\n"), ("price",)),
    Case("bfleet-nan-price", SBF, _bfleet(f"pools:\n{POOL}, price_usd_per_node_hour: .nan}}\n"), ("price",)),
    Case("bfleet-unknown-gpu", SBF, _bfleet(f"pools:\n{POOL.replace('h100', 'h1000')}}}\n"), ("h1000",)),
    Case(
        "bfleet-negative-quota",
        SBF,
        _bfleet(f"pools:\n{POOL}}}\nteams:\n  research: {{nominal_gpus: -8}}\n  prod: {{}}\n"),
        ("nominal_gpus",),
    ),
    Case(
        "bfleet-zero-quota",
        SBF,
        _bfleet(
            f"pools:\n{POOL}}}\nteams:\n  research: {{nominal_gpus: 0, borrowing_limit_gpus: 0}}\n  prod: {{}}\n"
        ),
        ("quota",),
    ),
    Case("bfleet-duplicate-pool-names", SBF, _bfleet(f"pools:\n{POOL}}}\n{POOL}}}\n"), ("od",)),
    Case(
        "bfleet-offpeak-bad-hours",
        SBF,
        _bfleet(f"pools:\n{POOL}}}\noff_peak: {{start_hour: 25, end_hour: 6, price_factor: 0.5}}\n"),
        ("start_hour",),
    ),
    Case(
        "bfleet-offpeak-negative-factor",
        SBF,
        _bfleet(f"pools:\n{POOL}}}\noff_peak: {{start_hour: 1, end_hour: 6, price_factor: -0.5}}\n"),
        ("price_factor",),
    ),
    Case("bfleet-empty-pools", SBF, _bfleet("pools: []\n"), ("pools",)),
    Case(
        "bfleet-huge-nodes",
        SBF,
        _bfleet(f"pools:\n{POOL.replace('nodes: 2', 'nodes: 1e300')}}}\n"),
        ("nodes",),
    ),
    # -- sweep files
    Case("sweep-unknown-policy", SW, _sweep(sweep(grid="  policy: [fifo, fifoo]\n")), ("fifoo",)),
    Case("sweep-negative-seed", SW, _sweep(sweep(extra="seeds: [-1]\n")), ("seeds",)),
    Case(
        "sweep-too-many-runs",
        SW,
        _sweep(sweep(extra="seeds: [" + ", ".join(str(k) for k in range(6000)) + "]\n")),
        ("10,000",),
    ),
    Case("sweep-missing-jobs", SW, {"s.yaml": sweep(jobs="nope.csv")}, ("nope.csv",)),
    Case("sweep-jobs-is-itself", SW, {"s.yaml": sweep(jobs="s.yaml")}, ("s.yaml",)),
    Case("sweep-unknown-kind", SW, _sweep(b"kind: montecarlo\nbase: {}\ngrid: {x: [1]}\n"), ("montecarlo",)),
    Case("sweep-grid-not-list", SW, _sweep(sweep(grid="  policy: fifo\n")), ("grid",)),
    Case("sweep-nan-param", SW, _sweep(sweep(grid="  checkpoint_h: [.nan]\n")), ("checkpoint_h",)),
    Case("sweep-zero-checkpoint", SW, _sweep(sweep(grid="  checkpoint_h: [0]\n")), ("checkpoint_h",)),
    Case("sweep-engine-unknown", [*SW, "--engine", "dask"], _sweep(SWEEP), ("dask",)),
    # -- fleet files (plan)
    Case(
        "fleet-zero-budget",
        PL,
        _plan(fleet_with("  budgets:\n    - {usd_per_month: 0}\n")),
        ("usd_per_month",),
    ),
    Case(
        "fleet-negative-budget",
        PL,
        _plan(fleet_with("  budgets:\n    - {usd_per_month: -100}\n")),
        ("usd_per_month",),
    ),
    Case(
        "fleet-nan-budget",
        PL,
        _plan(fleet_with("  budgets:\n    - {usd_per_month: .nan}\n")),
        ("usd_per_month",),
    ),
    Case(
        "fleet-tiny-budget",
        PL,
        _plan(fleet_with("  budgets:\n    - {usd_per_month: 1}\n")),
        ("INFEASIBLE", "budget"),
        ok=True,
    ),
    Case(
        "fleet-negative-quota",
        PL,
        _plan(fleet_with("  quotas:\n    - {provider: lambda, limit: -1}\n")),
        ("limit",),
    ),
    Case(
        "fleet-zero-quota",
        PL,
        _plan(fleet_with("  quotas:\n    - {provider: lambda, limit: 0}\n")),
        ("INFEASIBLE", "quota"),
        ok=True,
    ),
    Case(
        "fleet-1e308-quota",
        PL,
        _plan(fleet_with("  quotas:\n    - {provider: lambda, limit: 1e308}\n")),
        ("1e+12",),
    ),
    Case(
        "fleet-quota-unknown-provider",
        PL,
        _plan(fleet_with("  quotas:\n    - {provider: lamda, limit: 8}\n")),
        ("lamda",),
    ),
    Case(
        "fleet-zero-rate",
        PL,
        _plan(fleet_with(workload="{model: llama-3.1-8b, target_requests_per_s: 0}")),
        ("target_requests_per_s",),
    ),
    Case(
        "fleet-negative-rate",
        PL,
        _plan(fleet_with(workload="{model: llama-3.1-8b, target_requests_per_s: -2}")),
        ("target_requests_per_s",),
    ),
    Case(
        "fleet-1e308-rate",
        PL,
        _plan(fleet_with(workload="{model: llama-3.1-8b, target_requests_per_s: 1e308}")),
        ("target_requests_per_s",),
    ),
    Case(
        "fleet-unknown-model",
        PL,
        _plan(fleet_with(workload="{model: llama-9-8b, target_requests_per_s: 2}")),
        ("llama-9-8b",),
    ),
    Case(
        "fleet-unknown-gpu",
        PL,
        _plan(
            b"name: t\nworkloads:\n  a:\n    resources: {gpus: [H1000], replicas: 1}\n    providers: [lambda]\n"
        ),
        ("H1000",),
    ),
    Case(
        "fleet-mig-on-l4",
        PL,
        _plan(
            b"name: t\nworkloads:\n  a:\n    workload: {model: llama-3.2-1b, target_requests_per_s: 1, gpus: [L4]}\n"
            b"    sharing: mig\n    providers: [lambda]\n"
        ),
        ("none of its gpus", "MIG-capable"),
    ),
    Case("fleet-max-providers-zero", PL, _plan(fleet_with("  max_providers: 0\n")), ("max_providers",)),
    Case(
        "fleet-existing-zero-count",
        PL,
        _plan(
            fleet_with(
                "  existing_commitments:\n    - {provider: aws, region: us-east-1, instance_type: p5.48xlarge, count: 0}\n"
            )
        ),
        ("count",),
    ),
    Case(
        "fleet-onprem-negative-capex",
        PL,
        _plan(
            FLEET
            + b"on_prem:\n  - {name: dc, gpu: h100, gpus_per_node: 8, nodes: 1, capex_usd_per_node: -5}\n"
        ),
        ("capex_usd_per_node",),
    ),
    Case(
        "fleet-onprem-mig-gpu-unknown",
        PL,
        _plan(
            FLEET
            + b"on_prem:\n  - {name: dc, gpu: h1000, gpus_per_node: 8, nodes: 1, capex_usd_per_node: 5}\n"
        ),
        ("h1000",),
    ),
    Case("fleet-duplicate-workload-key", PL, _plan(FLEET + b"workloads: {}\n"), ("duplicate key",)),
    Case(
        "fleet-demand-hourly-wrong-length",
        PL,
        _plan(FLEET.replace(b"{schedule: '24/7'}", b"{hourly: [1, 0.5]}")),
        ("hourly",),
    ),
    Case(
        "fleet-demand-hours-25",
        PL,
        _plan(FLEET.replace(b"{schedule: '24/7'}", b"{hours_per_day: 25}")),
        ("hours_per_day",),
    ),
    Case("fleet-unknown-key", PL, _plan(FLEET + b"colour: red\n"), ("colour",)),
    # -- inventory files
    Case(
        "inv-unknown-provider",
        TF,
        _inv("hosts:\n  - {host: 'node-*', provider: awz, instance_type: p5.48xlarge}\n"),
        ("awz",),
    ),
    Case(
        "inv-unknown-instance",
        TF,
        _inv("hosts:\n  - {host: 'node-*', provider: aws, instance_type: p9.huge}\n"),
        ("p9.huge",),
    ),
    Case(
        "inv-duplicate-host",
        TF,
        _inv(
            "hosts:\n  - {host: node-a, provider: aws, instance_type: p5.48xlarge}\n  - {host: node-a, provider: aws, instance_type: p4d.24xlarge}\n"
        ),
        ("node-a",),
    ),
    Case(
        "inv-bad-price-kind",
        TF,
        _inv("hosts:\n  - {host: 'node-*', provider: aws, instance_type: p5.48xlarge, price_kind: free}\n"),
        ("price_kind",),
    ),
    Case(
        "inv-unknown-model",
        TF,
        _inv("hosts:\n  - {host: 'node-*', provider: aws, instance_type: p5.48xlarge, model: gpt-99}\n"),
        ("gpt-99",),
    ),
    Case("inv-no-hosts", TF, _inv("hosts: []\n"), ("hosts",)),
    Case(
        "inv-matches-nothing",
        TF,
        _inv("hosts:\n  - {host: 'other-*', provider: aws, instance_type: p5.48xlarge}\n"),
        ("none of the GPUs",),
    ),
    # -- alert rules
    Case(
        "rules-negative-for",
        TA,
        _rules("rules:\n  - {name: a, metric: gpu_util_pct, op: '>', threshold: 90, for: -5m}\n"),
        ("for",),
    ),
    Case(
        "rules-nan-threshold",
        TA,
        _rules("rules:\n  - {name: a, metric: gpu_util_pct, op: '>', threshold: .nan, for: 5m}\n"),
        ("threshold",),
    ),
    Case(
        "rules-unknown-op",
        TA,
        _rules("rules:\n  - {name: a, metric: gpu_util_pct, op: '=~', threshold: 90, for: 5m}\n"),
        ("op",),
    ),
    Case(
        "rules-duplicate-names",
        TA,
        _rules(
            "rules:\n  - {name: a, metric: gpu_util_pct, op: '>', threshold: 90, for: 5m}\n  - {name: a, metric: gpu_util_pct, op: '<', threshold: 5, for: 5m}\n"
        ),
        ("a",),
    ),
    Case(
        "rules-huge-for",
        TA,
        _rules("rules:\n  - {name: a, metric: gpu_util_pct, op: '>', threshold: 90, for: 99999999d}\n"),
        ("could never fire",),
    ),
    Case(
        "rules-unknown-metric",
        TA,
        _rules("rules:\n  - {name: a, metric: fan_speed, op: '>', threshold: 90, for: 5m}\n"),
        ("fan_speed",),
    ),
    # -- spot traces
    Case(
        "spot-gap-zero",
        [
            "simulate",
            "spot",
            "--model",
            "llama-3-8b",
            "--tokens",
            "1e9",
            "--runs",
            "3",
            "--interruptions",
            "{x}",
        ],
        {"x.json": b'{"metadata": {"gap_seconds": 0}, "data": [1, 0]}'},
        ("gap_seconds",),
    ),
    Case(
        "spot-negative-capacity",
        [
            "simulate",
            "spot",
            "--model",
            "llama-3-8b",
            "--tokens",
            "1e9",
            "--runs",
            "3",
            "--interruptions",
            "{x}",
        ],
        {"x.json": b'{"metadata": {"gap_seconds": 60}, "data": [1, -1]}'},
        ("data[1]",),
    ),
    Case(
        "spot-never-available",
        [
            "simulate",
            "spot",
            "--model",
            "llama-3-8b",
            "--tokens",
            "1e9",
            "--runs",
            "3",
            "--interruptions",
            "{x}",
        ],
        {"x.json": b'{"metadata": {"gap_seconds": 60}, "data": [0, 0, 0]}'},
        ("never returns",),
    ),
]


def materialise_case(case: Case, tmp: Path, shared: dict[str, str]) -> list[str]:
    """Write the case's files under ``tmp``; its argv with every placeholder replaced."""
    subs = {"tmp": str(tmp), **shared}
    for name, content in case.files.items():
        path = tmp / name
        if callable(content):
            content(path)
        else:
            path.write_bytes(content)
        subs[Path(name).stem] = str(path)
    argv = list(case.argv)
    for key, value in subs.items():
        argv = [a.replace("{" + key + "}", value) for a in argv]
    return argv


# ---- outputs: missing, read-only and special folders, the input itself --------------------------------------
OUT_COMMANDS: dict[str, tuple[list[str], dict[str, Content]]] = {
    "batch": (["simulate", "batch", "{j}", "-f", "json", "-o"], {"j.csv": JOBS}),
    "autoscale": (["simulate", "autoscale", "{r}", "--gpu", "l4", "-f", "json", "-o"], {"r.csv": TRACE}),
    "sweep": (
        ["simulate", "sweep", "{s}", "--workers", "1", "-f", "json", "-o"],
        {"s.yaml": SWEEP, "jobs.csv": JOBS},
    ),
    "plan": (["plan", "{p}", "--time-limit", "5", "-f", "json", "-o"], {"p.yaml": FLEET}),
    "findings": (["telemetry", "findings", "--store", "{store}", "--format", "json", "-o"], {}),
    "alerts": (["telemetry", "alerts", "--store", "{store}", "--format", "json", "-o"], {}),
}
OUT_TARGETS: dict[str, tuple[str, tuple[str, ...]]] = {
    # target: (path template, key words of the refusal)
    "missing-folder": ("{tmp}/no/such/folder/out.json", ("folder",)),
    "proc": ("/proc/gpufleet-out.json", ("Cannot write",)),
    "a-directory": ("{tmp}", ("it is a folder",)),
    "dev-full": ("/dev/full", ("device",)),
}


def output_cases() -> list[Case]:
    out = []
    for cmd, (argv, files) in OUT_COMMANDS.items():
        for target, (path, words) in OUT_TARGETS.items():
            out.append(Case(f"out-{cmd}-{target}", [*argv, path], dict(files), words))
    # the output is one of the inputs: refused before anything is overwritten
    out += [
        Case(
            "out-equals-jobs",
            ["simulate", "batch", "{j}", "-f", "markdown", "-o", "{j}"],
            {"j.csv": JOBS},
            ("input",),
        ),
        Case(
            "out-equals-trace",
            ["simulate", "autoscale", "{r}", "--gpu", "l4", "-f", "markdown", "-o", "{r}"],
            {"r.csv": TRACE},
            ("input",),
        ),
        Case(
            "out-equals-fleet",
            ["plan", "{p}", "--time-limit", "5", "-f", "markdown", "-o", "{p}"],
            {"p.yaml": FLEET},
            ("input",),
        ),
        Case(
            "out-equals-sweep",
            ["simulate", "sweep", "{s}", "--workers", "1", "-f", "markdown", "-o", "{s}"],
            {"s.yaml": SWEEP, "jobs.csv": JOBS},
            ("input",),
        ),
        Case(
            "out-equals-inventory",
            [
                "telemetry",
                "findings",
                "--store",
                "{store}",
                "--inventory",
                "{i}",
                "--format",
                "csv",
                "-o",
                "{i}",
            ],
            {"i.yaml": INVENTORY},
            ("input",),
        ),
        Case(
            "out-equals-rules",
            ["telemetry", "alerts", "--store", "{store}", "--rules", "{u}", "--format", "csv", "-o", "{u}"],
            {"u.yaml": RULES},
            ("input",),
        ),
        Case(
            "out-into-store",
            [
                "telemetry",
                "findings",
                "--store",
                "{store}",
                "--format",
                "json",
                "-o",
                "{store}/manifest.json",
            ],
            {},
            ("store",),
        ),
        Case(
            "store-is-a-file",
            ["telemetry", "ingest", "{t}", "--store", "{t}"],
            {"t.prom": EXPO},
            ("is a file",),
        ),
        Case(
            "store-under-a-file",
            ["telemetry", "ingest", "{t}", "--store", "{t}/st"],
            {"t.prom": EXPO},
            ("Cannot create",),
        ),
        Case(
            "store-in-proc",
            ["telemetry", "ingest", "{t}", "--store", "/proc/gpufleet-store"],
            {"t.prom": EXPO},
            ("Cannot create",),
        ),
    ]
    return out


# ---- the environment: no HOME, LANG=C, PYTHONIOENCODING=ascii (run in a subprocess) --------------------------
ENV_CASES: list[Case] = [
    Case(
        "env-no-home-ingest",
        ["telemetry", "ingest", "{t}", "--store", "{tmp}/st"],
        {"t.prom": EXPO},
        ("stored 20 samples",),
        ok=True,
        env={"HOME": None, "GPUFLEET_DATA_DIR": None, "XDG_DATA_HOME": None},
    ),
    Case(
        "env-no-home-findings",
        ["telemetry", "findings", "--store", "{tmp}/none"],
        {},
        ("empty",),
        env={"HOME": None, "GPUFLEET_DATA_DIR": None, "XDG_DATA_HOME": None},
    ),
    Case(
        "env-lang-c-batch",
        ["simulate", "batch", "{j}"],
        {"j.csv": JOBS},
        ("makespan",),
        ok=True,
        env={"LANG": "C", "LC_ALL": "C"},
    ),
    Case(
        "env-ascii-plan",
        ["plan", "{p}", "--time-limit", "5"],
        {"p.yaml": FLEET},
        ("OPTIMAL",),
        ok=True,
        env={"PYTHONIOENCODING": "ascii"},
    ),
    Case(
        "env-ascii-findings",
        ["telemetry", "findings", "--store", "{store}"],
        {},
        ("GPUs",),
        ok=True,
        env={"PYTHONIOENCODING": "ascii"},
    ),
    Case(
        "env-ascii-error",
        ["simulate", "batch", "{j}"],
        {"j.csv": b"\xe9"},
        ("UTF-8",),
        env={"PYTHONIOENCODING": "ascii", "LANG": "C"},
    ),
    Case(
        "env-data-dir-relative",
        ["telemetry", "findings"],
        {},
        ("GPUFLEET_DATA_DIR",),
        env={"GPUFLEET_DATA_DIR": "relative/dir"},
    ),
    Case(
        "env-data-dir-blank",
        ["telemetry", "findings"],
        {},
        ("GPUFLEET_DATA_DIR",),
        env={"GPUFLEET_DATA_DIR": "   "},
    ),
]
