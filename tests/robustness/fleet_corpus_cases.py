# ruff: noqa: E501
"""Cases of the fleet-half bad-input corpus (issue 26): telemetry inputs, request traces, batch job files,
sweep files, fleet and inventory files, alert rules, spot traces and the telemetry store.

Each case is ``Case(id, argv, files, ...)`` (the bad values are in ``fleet_corpus_values.py``): ``{name}`` in argv is replaced by the path of ``files[name]``
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
    #: the exit code of an answer (ok=True): 0, or the documented "no" codes 3-6 (cli/exit_codes.py)
    code: int = 0


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
