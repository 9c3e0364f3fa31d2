# ruff: noqa: E501
"""Cases of the fleet-half corpus with well-formed files holding bad values (issue 26): NaN and 1e308,
timestamps backwards or in the future, duplicate GPU identities, zero and negative quotas, budgets and rates,
unknown names, MIG on GPUs without MIG. Run by ``test_cli_corpus_fleet.py``; the shared inputs and the
``Case`` record live in ``fleet_corpus_cases.py``."""

from __future__ import annotations

import json

from fleet_corpus_cases import (
    CW_HEADER,
    FLEET,
    JOBS,
    JOBS_HEADER,
    SMI_HEADER,
    SWEEP,
    T0_MS,
    T0_S,
    Case,
    Content,
    cw_row,
    expo_line,
    fleet_with,
    prom_json,
    smi_row,
    sweep,
)

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
        code=4,  # an infeasible plan is an answer "no": exit 4
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
        code=4,  # an infeasible plan is an answer "no": exit 4
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
            + b"on_prem:\n  - {name: dc, gpu: h100, gpus_per_node: 8, nodes: 1, capex_usd_per_node: -5, "
            + b"power_kw_per_node: 10, usd_per_kwh: 0.1}\n"
        ),
        ("capex_usd_per_node",),
    ),
    Case(
        "fleet-onprem-mig-gpu-unknown",
        PL,
        _plan(
            FLEET
            + b"on_prem:\n  - {name: dc, gpu: h1000, gpus_per_node: 8, nodes: 1, capex_usd_per_node: 5, "
            + b"power_kw_per_node: 10, usd_per_kwh: 0.1}\n"
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
