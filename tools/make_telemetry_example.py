"""Write a seeded example fleet as raw telemetry: dcgm-exporter exposition text and an nvidia-smi CSV.

    .venv/bin/python tools/make_telemetry_example.py OUT_DIR [--seed 1] [--days 3]

OUT_DIR/dcgm.prom: 10 H100 GPUs on p5.48xlarge nodes (2 idle, 2 over-provisioned, 2 MIG-able,
2 under-provisioned, 2 healthy; see gpufleet.telemetry.synth) as dcgm-exporter samples with timestamps;
OUT_DIR/node-smi.csv: one more host logged by `nvidia-smi --query-gpu=... --format=csv -l 300` (GPU_UTIL
only, local time Europe/Berlin); OUT_DIR/inventory.yaml maps that host to its offer. Used by
docs/telemetry.md.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from gpufleet.telemetry.readers.common import DCGM_METRICS
from gpufleet.telemetry.synth import synthetic_fleet

NAMES = {canonical: name for name, (canonical, _) in DCGM_METRICS.items()}
NODE_LABELS = {"provider": "aws", "instance_type": "p5.48xlarge", "region": "us-east-1"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--days", type=float, default=3.0)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    counts = {"idle": 2, "over": 2, "migable": 2, "busy": 1, "memstarved": 1, "healthy": 2}
    batch, _ = synthetic_fleet(seed=args.seed, counts=counts, days=args.days, labels=NODE_LABELS)
    lines = []
    for lid, ts, metric, value in zip(batch.label_idx, batch.ts_us, batch.metric, batch.value, strict=True):
        if metric not in NAMES:
            continue
        _, host, gpu, uuid, model, _, _, pod, ns, _, _, _, itype, region, _, _ = batch.label_rows[lid]
        lab = (
            f'gpu="{gpu}",UUID="{uuid}",modelName="{model}",Hostname="{host}",namespace="{ns}",pod="{pod}",'
            f'node_kubernetes_io_instance_type="{itype}",provider="aws",region="{region}"'
        )
        lines.append(f"{NAMES[metric]}{{{lab}}} {value:.4g} {ts // 1000}")
    (args.out / "dcgm.prom").write_text("\n".join(lines) + "\n", encoding="utf-8")
    # One extra host with nvidia-smi only (GPU_UTIL and memory): a busy-looking but SM-idle GPU cannot be
    # told.
    smi, _ = synthetic_fleet(seed=args.seed + 1, counts={"migable": 1}, days=args.days)
    berlin = ZoneInfo("Europe/Berlin")
    by_ts: dict[int, dict[str, float]] = {}
    for ts, metric, value in zip(smi.ts_us, smi.metric, smi.value, strict=True):
        by_ts.setdefault(ts, {})[metric] = value
    rows = [
        "timestamp, index, uuid, name, memory.total [MiB], memory.used [MiB], utilization.gpu [%], "
        "power.draw [W]"
    ]
    for ts, m in sorted(by_ts.items()):
        local = datetime.fromtimestamp(ts / 1e6, tz=berlin).strftime("%Y/%m/%d %H:%M:%S.000")
        rows.append(
            f"{local}, 0, GPU-smi-0001, NVIDIA H100 80GB HBM3, 81559 MiB, {m['fb_used_mib']:.0f} MiB, "
            f"{m['gpu_util_pct']:.0f} %, {m['power_w']:.2f} W"
        )
    (args.out / "node-smi.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (args.out / "inventory.yaml").write_text(
        "hosts:\n  - host: node-smi\n    provider: aws\n    instance_type: p5.4xlarge\n    region: "
        "us-east-1\n"
        "    price_kind: on_demand\n    team: research\n",
        encoding="utf-8",
    )
    print(
        f"wrote {args.out}/dcgm.prom ({len(lines):,} samples), node-smi.csv ({len(rows) - 1:,} lines), "
        "inventory.yaml"
    )


if __name__ == "__main__":
    main()
