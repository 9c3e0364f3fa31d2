"""Print the README's "top picks" table: the best pick of `gpufleet recommend` for a dozen realistic
workloads (shipped catalog), so a person can read them back as a platform engineer would after any change to
the estimator or the ranking. Usage: .venv/bin/python tools/top_picks.py (about 30 s)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

GPUFLEET = str(Path(sys.executable).with_name("gpufleet"))

#: (label, recommend arguments); SLOs at the default p90 confidence
WORKLOADS: tuple[tuple[str, list[str]], ...] = (
    ("Llama-3.1-8B chat, 5 req/s, TTFT 500 ms, TPOT 50 ms",
     ["--model", "llama-3.1-8b", "--target-rps", "5", "--ttft-ms", "500", "--tpot-ms", "50"]),
    ("Llama-3.1-70B bf16, 2 req/s, TTFT 1 s, TPOT 60 ms",
     ["--model", "llama-3.1-70b", "--target-rps", "2", "--ttft-ms", "1000", "--tpot-ms", "60"]),
    ("Llama-3.1-70B fp8, 2 req/s, TTFT 1 s, TPOT 60 ms, `--geo eu`, production",
     ["--model", "llama-3.1-70b", "--precision", "fp8", "--target-rps", "2", "--ttft-ms", "1000", "--tpot-ms",
      "60", "--geo", "eu", "--tier", "production"]),
    ("Mixtral-8x7B, 3 req/s, TTFT 1 s, TPOT 60 ms",
     ["--model", "mixtral-8x7b", "--target-rps", "3", "--ttft-ms", "1000", "--tpot-ms", "60"]),
    ("Llama-3.1-405B fp8, 1 req/s, TTFT 2 s, TPOT 100 ms, production",
     ["--model", "llama-3.1-405b", "--precision", "fp8", "--target-rps", "1", "--ttft-ms", "2000",
      "--tpot-ms", "100", "--tier", "production"]),
    ("Qwen2.5-32B, 3 req/s, `--provider-class hyperscaler` (no SLO: batch tier)",
     ["--model", "qwen2.5-32b", "--target-rps", "3", "--provider-class", "hyperscaler"]),
    ("Llama-3.1-8B batch inference, 20k req/h, spot",
     ["--model", "llama-3.1-8b", "--target-rps", str(20000 / 3600), "--pricing", "spot"]),
    ("QLoRA Llama-3.1-8B, 2e8 tokens, `--tier dev`",
     ["--model", "llama-3.1-8b", "--task", "qlora", "--tokens", "2e8", "--tier", "dev"]),
    ("LoRA Llama-3.1-70B, 1e9 tokens",
     ["--model", "llama-3.1-70b", "--task", "lora", "--tokens", "1e9"]),
    ("Full fine-tune Llama-3.1-8B, 5e9 tokens, 48 h deadline",
     ["--model", "llama-3.1-8b", "--task", "full_finetune", "--tokens", "5e9", "--deadline-hours", "48"]),
    ("Pre-train Llama-2-13B, 2.6e11 tokens, 30-day deadline",
     ["--model", "llama-2-13b", "--task", "pretrain", "--tokens", "2.6e11", "--deadline-hours", "720"]),
    ("Pre-train Llama-3.1-8B on spot, 1e11 tokens",
     ["--model", "llama-3.1-8b", "--task", "pretrain", "--tokens", "1e11", "--pricing", "spot"]),
)  # fmt: skip


def _pick(args: list[str]) -> str:
    out = subprocess.run(
        [GPUFLEET, "recommend", *args, "--format", "json"], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        return f"| exit {out.returncode}: {out.stderr.strip()[:120]} | | |"
    best = json.loads(out.stdout)["result"]["best"]
    if best is None:
        return "| no pick (see `recommend` output) | | |"
    b = best
    shape = f"{b['replicas']} × {b['nodes_per_replica'] * b['gpus_per_node']}×{b['gpu']}"
    par = f"TP{b['tp']}" + (f" PP{b['pp']}" if b["pp"] > 1 else "") + (f" DP{b['dp']}" if b["dp"] > 1 else "")
    cost = (
        f"${b['cost_usd_per_run']:,.2f}/run"
        if b.get("cost_usd_per_run")
        else f"${b['cost_usd_per_month']:,.0f}/month"
    )
    spot = " spot" if b["price_kind"] == "spot" else ""
    reasons = "; ".join(b["risk_reasons"])
    return (
        f"| {b['provider']} {shape}{spot} {b['instance_type']} ({b['region']}), {par} | {cost} | "
        f"{b['risk']}{f' ({reasons})' if reasons else ''} |"
    )


def main() -> None:
    print("| workload | best pick | cost | risk |")
    print("|---|---|---|---|")
    for label, args in WORKLOADS:
        print(f"| {label} {_pick(args)}")


if __name__ == "__main__":
    main()
