"""Check that a change leaves results identical: run a fixed random grid of estimates and recommendations and
write the ``repr`` of every result (or the exception's type and message) to a JSON file; run it on two
checkouts and compare the files. For performance work, which must not move a single number.

The grid: ~2,000 each of estimate_inference / estimate_training / estimate_memory over random models, GPUs,
precisions, lengths, batches, parallelism and stacks (many are rejected: the rejections are compared too),
~2,500 recommend-style inference calls (placements x batch ladder), half the grid again in another order
(cache hits must equal first calls), and 225 recommendations (benchmarks/bench_recommend.py workloads plus
training, p50, concurrency, production and MoE variants).

    .venv/bin/python tools/equality_grid.py run OUT.json        # in each checkout (its own venv)
    .venv/bin/python tools/equality_grid.py compare A.json B.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

Row = tuple[str, str, str]  # (kind, inputs, result)


def _run(fn: Callable[..., Any], kw: dict[str, Any]) -> str:
    try:
        return repr(fn(**kw))
    except Exception as exc:
        return f"EXC {type(exc).__name__}: {exc}"


def estimate_rows(n: int, seed: int) -> list[Row]:
    from gpufleet.catalog.specs import load_specs
    from gpufleet.estimate.memory import estimate_memory
    from gpufleet.estimate.performance import estimate_inference, estimate_training
    from gpufleet.estimate.types import SOFTWARES
    from gpufleet.models import known_model_names

    rng = random.Random(seed)
    specs = load_specs()
    gpus = sorted(s.id for s in (specs.values() if isinstance(specs, dict) else specs))
    models = sorted(known_model_names())
    precs = ["fp16", "bf16", "fp8", "fp4", "int8", "int4", "fp32", "nf4"]
    sws: list[str | None] = [None, *SOFTWARES]
    popular = [m for m in ("llama-3.1-8b", "llama-2-13b", "llama-3.1-70b", "mistral-7b", "mixtral-8x7b",
                           "deepseek-v3", "qwen2.5-7b") if m in models]  # fmt: skip
    words = ("H100", "A100", "L4", "H200", "MI300", "Gaudi", "T4", "A10", "B200", "4090", "TPU")
    gpop = [g for g in gpus if any(k in g for k in words)]

    def model() -> str:
        return rng.choice(popular) if rng.random() < 0.5 else rng.choice(models)

    def gpu() -> str:
        return rng.choice(gpop) if rng.random() < 0.6 else rng.choice(gpus)

    def maybe(kw: dict[str, Any], p: float, key: str, choices: list[Any]) -> None:
        if rng.random() < p:
            kw[key] = rng.choice(choices)

    fns: dict[str, Callable[..., Any]] = {
        "inf": estimate_inference, "train": estimate_training, "mem": estimate_memory,
    }  # fmt: skip
    out: list[Row] = []
    for i in range(n):
        kw: dict[str, Any]
        if i % 3 == 0:
            kw = dict(model=model(), gpu=gpu(), precision=rng.choice(precs),
                      input_len=rng.choice([1, 64, 128, 512, 1000, 1024, 2048, 4096, 8192, 32000]),
                      output_len=rng.choice([1, 16, 128, 256, 500, 1024, 4096]),
                      gpu_count=rng.choice([1, 1, 2, 4, 8, 8, 16, 32]))  # fmt: skip
            maybe(kw, 0.7, "batch", [1, 2, 3, 4, 8, 16, 32, 64, 100, 128, 256, 512, 2048])
            maybe(kw, 0.5, "tp", [1, 2, 4, 8])
            maybe(kw, 0.2, "pp", [1, 2, 4])
            maybe(kw, 0.1, "ep", [1, 2, 4, 8])
            maybe(kw, 0.05, "attention_dp", [True, False])
            maybe(kw, 0.1, "kv_precision", ["fp8", "fp16", "int8"])
            maybe(kw, 0.5, "software", sws)
            maybe(kw, 0.3, "allow_fallback", [True])
            maybe(kw, 0.1, "gpus_per_node", [1, 2, 4, 8])
            maybe(kw, 0.1, "ignore_memory", [True])
            maybe(kw, 0.1, "static_batching", [True, False])
            kind = "inf"
        elif i % 3 == 1:
            kw = dict(
                model=model(),
                task=rng.choice(["pretrain", "full_finetune", "lora", "qlora"]),
                gpu=gpu(),
                precision=rng.choice(["bf16", "fp16", "fp8", "fp32"]),
                gpu_count=rng.choice([1, 2, 4, 8, 16, 64]),
                global_batch=rng.choice([1, 8, 32, 256, 1024]),
                seq_len=rng.choice([512, 2048, 4096, 8192]),
            )
            maybe(kw, 0.3, "train_tokens", [1e9, 1e11])
            maybe(kw, 0.3, "tp", [1, 2, 4, 8])
            maybe(kw, 0.2, "pp", [1, 2, 4])
            maybe(kw, 0.3, "software", sws)
            maybe(kw, 0.3, "allow_fallback", [True])
            maybe(kw, 0.1, "zero_stage", [0, 1, 2, 3])
            maybe(kw, 0.2, "gpus_per_node", [1, 2, 4, 8])
            maybe(kw, 0.1, "ignore_memory", [True])
            kind = "train"
        else:
            kw = dict(
                model=model(),
                gpu=gpu(),
                precision=rng.choice(precs),
                task=rng.choice(["inference", "pretrain", "full_finetune", "lora", "qlora", "load"]),
                seq_len=rng.choice([128, 1024, 4096, 32768]),
                batch=rng.choice([1, 2, 8, 64]),
            )
            maybe(kw, 0.5, "tp", [1, 2, 4, 8])
            maybe(kw, 0.2, "pp", [1, 2, 4])
            maybe(kw, 0.2, "kv_precision", ["fp8", "fp16"])
            maybe(kw, 0.3, "engine", ["vllm", "trtllm", "transformers", "pytorch"])
            maybe(kw, 0.3, "allow_fallback", [True])
            kind = "mem"
        out.append((kind, repr(kw), _run(fns[kind], kw)))
    for model_name, prec in (("llama-3.1-8b", "fp16"), ("llama-3.1-70b", "fp8"), ("mixtral-8x7b", "fp16"),
                             ("llama-2-13b", "bf16")):  # fmt: skip
        for g in gpop[:12]:
            for tp in (1, 2, 4, 8):
                for b in (None, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, None, 8):
                    kw = dict(model=model_name, gpu=g, precision=prec, input_len=1024, output_len=256,
                              gpu_count=8, tp=tp, batch=b, allow_fallback=tp == 2)  # fmt: skip
                    out.append(("rec", repr(kw), _run(estimate_inference, kw)))
    again = list(out[: n // 2])
    random.Random(seed + 1).shuffle(again)
    for kind, inputs, _ in again:
        kw = eval(inputs)
        out.append((kind + "2", inputs, _run(fns[kind], kw)))
    return out


def recommend_rows(n: int) -> list[Row]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from bench_recommend import random_workloads
    from gpufleet.catalog.offers import load_offers
    from gpufleet.cost.spot import load_spot_assumptions
    from gpufleet.recommend.engine import recommend_on
    from gpufleet.recommend.perf import DefaultEstimator

    table, est, spot = load_offers(), DefaultEstimator(), load_spot_assumptions()
    ws = random_workloads(n, seed=7)
    ws += [
        dataclasses.replace(
            w,
            name=w.name + "t",
            task="pretrain",
            model="llama-3.1-8b",
            precision="bf16",
            train_tokens=1e9,
            global_batch_sequences=256,
            seq_len_tokens=2048,
            deadline_h=48.0,
            ttft_p95_s=None,
            tpot_p95_s=None,
            target_requests_per_s=None,
            max_nodes=4,
        )
        for w in ws[:15]
    ]
    rng = random.Random(3)
    extra = []
    for i, w in enumerate(ws[:60]):
        kw: dict[str, Any] = {}
        if i % 3 == 0:
            kw["confidence"] = "p50"
        if i % 4 == 1:
            kw["concurrency"] = rng.choice([4, 32, 200])
        if i % 6 == 3:
            kw["tier"] = "production"
        if i % 7 == 4:
            kw["model"] = "mixtral-8x7b"
        extra.append(dataclasses.replace(w, name=w.name + "x", **kw))
    return [("recommend", w.name, _run(recommend_on, dict(table=table, w=w, est=est, spot_assumptions=spot,
                                                        limit=5))) for w in ws + extra]  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run")
    run.add_argument("out", type=Path)
    run.add_argument("--estimates", type=int, default=6000, help="random estimate inputs (a third each)")
    run.add_argument("--workloads", type=int, default=150)
    run.add_argument("--seed", type=int, default=1)
    cmp = sub.add_parser("compare")
    cmp.add_argument("a", type=Path)
    cmp.add_argument("b", type=Path)
    args = ap.parse_args()
    if args.cmd == "run":
        rows = estimate_rows(args.estimates, args.seed) + recommend_rows(args.workloads)
        args.out.write_text(json.dumps(rows), encoding="utf-8")
        rejected = sum(1 for *_, r in rows if r.startswith("EXC"))
        print(f"{len(rows)} results ({rejected} rejections) written to {args.out}")
        return
    a = json.loads(args.a.read_text(encoding="utf-8"))
    b = json.loads(args.b.read_text(encoding="utf-8"))
    if len(a) != len(b):
        sys.exit(f"different grids: {len(a)} vs {len(b)} results")
    diff = [(x, y) for x, y in zip(a, b, strict=True) if x != y]
    print(f"{len(a)} results compared, {len(diff)} differ")
    for x, y in diff[:5]:
        print(f"- {x[0]} {x[1][:200]}\n  A: {x[2][:300]}\n  B: {y[2][:300]}")
    sys.exit(1 if diff else 0)


if __name__ == "__main__":
    main()
