"""Practitioners' rules, checked on the top 3 picks of realistic workloads (docs/recommend.md, "Practitioners'
rules we check": each rule there names its source).

An ML platform engineer reads the top picks of ``recommend`` and checks them against the rules of thumb the
field uses; this module does the same, automatically, over 63 workloads (chat, RAG, long-context and batch
serving of 1B-671B dense and MoE models; LoRA, QLoRA and full fine-tuning; pre-training 1B-70B; tiers dev,
batch and production; on-demand, spot and 1-year pricing; provider classes and geos). One offer table and
one estimator are shared, so the sweep runs in about half a minute on two cores.

Every rule is a plain function of a :class:`Candidate` and its workload (``_violations``), computed from the
model registry and the accelerator table, not from the engine's own intermediate values, so a change to the
engine that breaks a rule fails here with the rule's name and the numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

import pytest

from gpufleet.catalog.offers import OfferTable, load_offers
from gpufleet.catalog.specs import get_spec
from gpufleet.estimate.inference import default_kv_precision
from gpufleet.estimate.memory import estimate_memory, weights_bytes
from gpufleet.estimate.performance import estimate_training
from gpufleet.models.params import count_params
from gpufleet.models.registry import resolve_model
from gpufleet.recommend.api import recommend
from gpufleet.recommend.perf import DefaultEstimator
from gpufleet.recommend.types import Candidate, Recommendation, Workload
from gpufleet.units import GIB, MS_PER_S

from .asks import serve as _serve
from .asks import train as _train

#: picks checked per workload (what a reader of the table looks at)
TOP = 3

#: NVIDIA/AMD/Intel architectures with fp8 tensor cores / matrix units: Hopper (H100 datasheet "FP8 Tensor
#: Core"), Ada Lovelace (L4/L40S datasheets), Blackwell; CDNA 3/4 (MI300X/MI325X/MI355X datasheets "FP8");
#: Gaudi 2/3 (Intel Gaudi 2 white paper, "FP8"); Trainium/Inferentia 2 (AWS Neuron "FP8" data types);
#: TPU v5p ("Cloud TPU v5p": int8/fp8). vLLM "Supported Hardware for Quantization": fp8 W8A8 on sm89+.
FP8_ARCHS: tuple[str, ...] = ("Hopper", "Ada", "Blackwell", "CDNA 3", "CDNA 4", "Gaudi 2", "Gaudi 3",
                              "NeuronCore-v2", "NeuronCore-v3", "TPU v5p")  # fmt: skip
#: fp4 (NVFP4/MXFP4) tensor cores: Blackwell (B200/GB200/RTX PRO datasheets), CDNA 4 (MI355X datasheet)
FP4_ARCHS: tuple[str, ...] = ("Blackwell", "CDNA 4")
#: fp4 weights served weight-only (W4A16, like int4 AWQ/GPTQ) on NVIDIA GPUs without fp4 compute: vLLM's fp4
#: Marlin and MXFP4 kernels need compute capability 8.0 (how gpt-oss's MXFP4 checkpoints run on H100/A100)
FP4_WEIGHT_ONLY_ARCHS: tuple[str, ...] = ("Ampere", "Ada", "Hopper")
#: no bf16 in hardware: Volta (V100), Turing (T4), Pascal and older (PyTorch ``torch.cuda.is_bf16_supported``
#: is False below sm80; NVIDIA T4/V100 datasheets list FP16 only)
NO_BF16_ARCHS: tuple[str, ...] = ("Volta", "Turing", "Pascal", "Maxwell", "Kepler")
#: vLLM ``gpu_memory_utilization`` default (vLLM engine arguments): the engine budget is 0.9 of the device
GPU_MEMORY_UTILIZATION = 0.9
#: weights may take at most this share of the engine budget, the rest is KV cache and activations
#: (practice: "weights <= ~80-90 % of usable memory"; vLLM refuses to start when no KV block fits)
WEIGHTS_SHARE_OF_BUDGET = 0.9
#: RDMA scale-out fabrics a multi-node training job needs, and their least bandwidth per node [Gb/s]
#: (NCCL/EFA/IB guides; Megatron-LM and NeMo run multi-node on >= 100 Gb/s RDMA per node)
MIN_TRAINING_FABRIC_GBPS = 100.0
#: production serving keeps at least this many replicas on as many nodes (N+1: one can fail or be updated;
#: Kubernetes "Disruptions" / PodDisruptionBudget and pod anti-affinity across nodes)
MIN_PRODUCTION_REPLICAS = 2


@dataclass(frozen=True)
class Case:
    """One realistic workload (CLI/keyword names) and what the practitioner expects of its picks."""

    label: str
    fields: dict[str, Any]
    expect_ok: bool = True  # a realistic workload has a feasible plan
    extra: tuple[str, ...] = field(default_factory=tuple)  # extra expectations (see _expectations)


CASES: tuple[Case, ...] = (
    # --- chat serving, dense, 1B-405B (latency SLOs: production tier by default)
    Case("llama-3.2-1b chat", _serve("llama-3.2-1b", 10, 300, 30)),
    Case("llama-3.2-3b chat", _serve("llama-3.2-3b", 5, 400, 40)),
    Case("llama-3.1-8b chat", _serve("llama-3.1-8b", 5, 500, 50)),
    Case("llama-3.1-8b chat fp8", _serve("llama-3.1-8b", 20, 500, 40, precision="fp8")),
    Case("qwen3-8b chat eu", _serve("qwen3-8b", 5, 500, 50, geo="eu")),
    Case("mistral-7b chat hyperscaler", _serve("mistral-7b", 3, 800, 60, provider_class="hyperscaler")),
    Case("gemma-2-9b chat", _serve("gemma-2-9b", 4, 800, 60)),
    Case("qwen2.5-14b chat", _serve("qwen2.5-14b", 3, 800, 60)),
    Case("phi-4 chat", _serve("phi-4", 3, 800, 60)),
    Case("mistral-small-3-24b chat", _serve("mistral-small-3-24b", 3, 1000, 60)),
    Case("gemma-3-27b chat", _serve("gemma-3-27b", 2, 1000, 60)),
    Case("qwen2.5-32b chat", _serve("qwen2.5-32b", 3, 1000, 60)),
    Case("qwen3-32b chat fp8", _serve("qwen3-32b", 3, 1000, 50, precision="fp8")),
    Case("llama-3.1-70b chat bf16", _serve("llama-3.1-70b", 2, 1000, 60)),
    Case("llama-3.1-70b chat fp8 eu", _serve("llama-3.1-70b", 2, 1000, 60, precision="fp8", geo="eu")),
    Case("llama-3.1-70b chat int4", _serve("llama-3.1-70b", 2, 1500, 80, precision="int4")),
    Case("qwen2.5-72b chat fp8 us hyperscaler",
         _serve("qwen2.5-72b", 4, 1000, 60, precision="fp8", geo="us", provider_class="hyperscaler")),
    # the shipped 1y rates are unverified ceilings: this case opts in to them (issue 22)
    Case("llama-3.1-70b chat 1y", {**_serve("llama-3.1-70b", 5, 1000, 60, precision="fp8", pricing="1y"),
                                   "allow_unverified_commitments": True}),
    Case("llama-3.1-405b chat fp8", _serve("llama-3.1-405b", 1, 2000, 100, precision="fp8")),
    Case("llama-3.1-405b chat bf16", _serve("llama-3.1-405b", 0.5, 3000, 120)),
    Case("llama-3.1-405b chat bf16 on H100", _serve("llama-3.1-405b", 0.5, 3000, 150, gpu="H100-SXM")),
    Case("llama-3.1-8b chat spot production", _serve("llama-3.1-8b", 5, 500, 50, pricing="spot")),
    Case("qwen2.5-7b chat asia gpu clouds", _serve("qwen2.5-7b", 5, 500, 40, geo="asia",
                                                   provider_class="gpu_cloud")),
    # --- MoE serving
    Case("mixtral-8x7b chat", _serve("mixtral-8x7b", 3, 1000, 60)),
    Case("mixtral-8x22b chat fp8", _serve("mixtral-8x22b", 2, 1500, 80, precision="fp8")),
    Case("qwen3-30b-a3b chat", _serve("qwen3-30b-a3b", 5, 800, 40)),
    Case("qwen3-235b-a22b chat fp8", _serve("qwen3-235b-a22b", 2, 1500, 80, precision="fp8")),
    Case("gpt-oss-20b chat fp4", _serve("gpt-oss-20b", 5, 800, 40, precision="fp4")),
    Case("gpt-oss-120b chat", _serve("gpt-oss-120b", 3, 1000, 50)),
    Case("gpt-oss-120b chat fp4", _serve("gpt-oss-120b", 3, 1000, 50, precision="fp4")),
    Case("llama-4-scout chat", _serve("llama-4-scout", 2, 1000, 60)),
    Case("llama-4-maverick chat fp8", _serve("llama-4-maverick", 2, 1500, 80, precision="fp8")),
    Case("deepseek-v3 chat fp8", _serve("deepseek-v3", 1, 3000, 120, precision="fp8")),
    # --- RAG / long context (32k-128k prompts)
    Case("llama-3.1-8b RAG 8k", _serve("llama-3.1-8b", 2, 2000, 50, input_len=8192, output_len=512)),
    Case("llama-3.1-8b long 32k", _serve("llama-3.1-8b", 1, 5000, 60, input_len=32768, output_len=512)),
    Case("qwen2.5-32b long 32k",
         _serve("qwen2.5-32b", 0.5, 8000, 80, input_len=32000, output_len=1000, precision="fp8")),
    Case("llama-3.1-70b long 128k",
         _serve("llama-3.1-70b", 0.2, 30000, 100, input_len=120000, output_len=1000, precision="fp8")),
    Case("qwen3-30b-a3b RAG 16k", _serve("qwen3-30b-a3b", 2, 3000, 50, input_len=16000, output_len=500)),
    # --- batch / offline serving (no SLO: batch tier)
    Case("llama-3.1-8b batch spot", _serve("llama-3.1-8b", 20000 / 3600, None, None, pricing="spot")),
    Case("qwen2.5-32b batch hyperscaler", _serve("qwen2.5-32b", 3, None, None, provider_class="hyperscaler")),
    Case("llama-3.1-70b batch fp8 spot",
         _serve("llama-3.1-70b", 5, None, None, precision="fp8", pricing="spot", output_len=1024)),
    Case("mixtral-8x7b batch dev", _serve("mixtral-8x7b", 2, None, None, tier="dev")),
    Case("gpt-oss-120b batch", _serve("gpt-oss-120b", 10, None, None, input_len=2048, output_len=1024)),
    Case("llama-3.1-8b dev box", _serve("llama-3.1-8b", 0.5, None, None, tier="dev")),
    Case("qwen3-8b production no SLO", _serve("qwen3-8b", 2, None, None, tier="production")),
    # --- fine-tuning
    Case("qlora llama-3.1-8b dev", _train("llama-3.1-8b", "qlora", 2e8, tier="dev")),
    Case("qlora llama-3.1-8b on 24 GB", _train("llama-3.1-8b", "qlora", 2e8, gpu="L4,A10G,RTX-4090,A10"),
         extra=("one_gpu",)),
    Case("lora llama-3.1-8b on 24 GB",
         _train("llama-3.1-8b", "lora", 2e8, gpu="L4,A10G,RTX-4090,A10", seq_len_tokens=2048,
                global_batch_sequences=32), extra=("one_gpu",)),
    Case("lora qwen3-8b", _train("qwen3-8b", "lora", 5e8)),
    Case("lora qwen2.5-32b", _train("qwen2.5-32b", "lora", 5e8)),
    Case("lora llama-3.1-70b", _train("llama-3.1-70b", "lora", 1e9)),
    Case("qlora llama-3.1-70b", _train("llama-3.1-70b", "qlora", 5e8)),
    Case("full ft llama-3.1-8b 48h", _train("llama-3.1-8b", "full_finetune", 5e9, deadline_hours=48)),
    Case("full ft qwen2.5-14b", _train("qwen2.5-14b", "full_finetune", 2e9)),
    Case("full ft llama-3.1-70b hyperscaler",
         _train("llama-3.1-70b", "full_finetune", 2e9, provider_class="hyperscaler")),
    Case("full ft mixtral-8x7b", _train("mixtral-8x7b", "full_finetune", 1e9)),
    Case("full ft llama-3.1-8b spot", _train("llama-3.1-8b", "full_finetune", 2e9, pricing="spot")),
    # --- pre-training
    Case("pretrain llama-3.2-1b", _train("llama-3.2-1b", "pretrain", 2e10, seq_len_tokens=2048)),
    Case("pretrain llama-3.1-8b spot", _train("llama-3.1-8b", "pretrain", 1e11, pricing="spot")),
    Case("pretrain llama-3.1-8b nvidia 7d",
         _train("llama-3.1-8b", "pretrain", 1e11, vendor="NVIDIA", deadline_hours=168)),
    Case("pretrain llama-2-13b 30d", _train("llama-2-13b", "pretrain", 2.6e11, deadline_hours=720)),
    Case("pretrain qwen2.5-32b nvidia",
         _train("qwen2.5-32b", "pretrain", 1e11, vendor="NVIDIA", deadline_hours=720, max_nodes=16)),
    Case("pretrain llama-3.1-70b nvidia",
         _train("llama-3.1-70b", "pretrain", 5e10, vendor="NVIDIA", deadline_hours=720, max_nodes=16)),
)  # fmt: skip


# ---- the rules -----------------------------------------------------------------------------------------


@cache
def _weights_total_gib(model: str, precision: str) -> float:
    m = resolve_model(model)
    return weights_bytes(count_params(m).total, precision) / GIB


def _weights_precision(w: Workload) -> str:
    """The precision the weights are stored in (QLoRA: NF4 base; LoRA/full: 16-bit base)."""
    if w.task == "qlora":
        return "nf4"
    if w.is_training:
        return "bf16"
    return w.precision


class _Audit:
    """Collects the rules one candidate breaks, each as 'rule: where: numbers'."""

    def __init__(self, c: Candidate) -> None:
        self.found: list[str] = []
        shape = f"{c.gpu} x{c.gpus_per_node}, TP{c.tp} PP{c.pp} EP{c.ep} DP{c.dp}"
        self.where = f"{c.provider} {c.instance_type} ({shape})"

    def bad(self, rule: str, why: str) -> None:
        self.found.append(f"{rule}: {self.where}: {why}")


def _violations(c: Candidate, w: Workload) -> list[str]:
    """Every practitioners' rule ``c`` breaks (docs/recommend.md, "Practitioners' rules we check")."""
    a = _Audit(c)
    m = resolve_model(w.model)
    spec = get_spec(c.gpu)
    # 1. tensor (and expert) parallelism inside one node's NVLink / Infinity Fabric / PCIe domain
    if c.tp > c.gpus_per_node:
        a.bad("tp-within-node", f"TP{c.tp} spans nodes of {c.gpus_per_node} GPUs")
    if c.ep > c.gpus_per_node:
        a.bad("ep-within-node", f"EP{c.ep} spans nodes of {c.gpus_per_node} GPUs")
    # 2. TP divides the attention heads; KV heads divide TP or TP divides them (vLLM replicates KV heads)
    kv_ok = m.is_mla or m.num_kv_heads % c.tp == 0 or c.tp % m.num_kv_heads == 0
    if m.num_attention_heads % c.tp or not kv_ok:
        a.bad("tp-divides-heads", f"{m.num_attention_heads} heads / {m.num_kv_heads} KV heads")
    if c.ep > 1 and m.num_experts % c.ep:
        a.bad("ep-divides-experts", f"{m.num_experts} experts")
    # 3. a precision the GPU computes natively
    prec = w.precision
    if c.precision_fallback:
        a.bad("native-precision", f"{prec} runs through a fallback")
    if prec == "fp8" and not spec.architecture.startswith(FP8_ARCHS):
        a.bad("native-precision", f"fp8 on {spec.architecture}")
    if prec == "fp4" and not spec.architecture.startswith(FP4_ARCHS + FP4_WEIGHT_ONLY_ARCHS):
        a.bad("native-precision", f"fp4 on {spec.architecture}")
    if prec == "bf16" and spec.architecture.startswith(NO_BF16_ARCHS):
        a.bad("native-precision", f"bf16 on {spec.architecture}")
    # 4. host RAM holds the node's share of the weights (checkpoints load through host memory); a node holds
    # its GPUs' shares: serving max(TP, EP) x PP GPUs per replica, training one model-parallel (TP x PP) group
    # before any ZeRO-3/FSDP sharding; vCPUs per GPU
    weights = _weights_total_gib(w.model, _weights_precision(w))
    node_weights = weights * min(1.0, c.gpus_per_node / (max(c.tp, c.ep) * c.pp))
    if c.host_memory_gib is not None and c.host_memory_gib < node_weights:
        a.bad("host-ram", f"{c.host_memory_gib:.0f} GiB RAM < {node_weights:.0f} GiB of weights on the node")
    need_cpus = 4 * c.gpus_per_node if w.is_training else c.gpus_per_node + 2
    if c.vcpus is not None and c.vcpus < need_cpus:
        a.bad("vcpus", f"{c.vcpus:g} vCPUs < {need_cpus} for {c.gpus_per_node} GPUs")
    if w.is_training:
        _training_rules(a, c, w)
    else:
        _serving_rules(a, c, w, weights)
    return a.found


def _serving_rules(a: _Audit, c: Candidate, w: Workload, weights_gib: float) -> None:
    m = resolve_model(w.model)
    context = w.input_len_tokens + w.output_len_tokens
    # 5. weights leave room for the KV cache and activations: within 90 % of the vLLM budget (0.9 x device),
    # or the pick says the room is tight (a risk reason)
    per_gpu = weights_gib / (max(c.tp, c.ep) * c.pp)
    budget = GPU_MEMORY_UTILIZATION * c.mem_capacity_gib
    tight = any("weights fill" in r for r in c.risk_reasons)
    if per_gpu > WEIGHTS_SHARE_OF_BUDGET * budget and not tight:
        a.bad("weights-headroom", f"{per_gpu:.1f} GiB of weights per GPU > {WEIGHTS_SHARE_OF_BUDGET:.0%} of "
              f"the {budget:.1f} GiB engine budget, not flagged")  # fmt: skip
    # 6. the KV cache holds the operating batch at the full context (prompt + output); fp8 KV beside
    # fp8/fp4 weights (TRT-LLM and vLLM quantisation recipes)
    if c.ep == 1 and c.batch_per_replica:
        kv = default_kv_precision(w.precision, get_spec(c.gpu))
        mem = estimate_memory(model=m, task="inference", precision=w.precision, gpu=c.gpu, tp=c.tp, pp=c.pp,
                              batch=c.batch_per_replica, seq_len=context, kv_precision=kv)  # fmt: skip
        if not mem.fits:
            a.bad("kv-holds-batch", f"batch {c.batch_per_replica} x {context} tokens needs "
                  f"{mem.per_gpu_gib:.1f} GiB per GPU of {mem.capacity_gib:.1f}")  # fmt: skip
    # 7. a replica does not span nodes when one node of the GPU could hold it
    if c.nodes_per_replica > 1 and weights_gib < WEIGHTS_SHARE_OF_BUDGET * budget * c.gpus_per_node:
        a.bad("replica-within-node", f"{weights_gib:.0f} GiB of weights fit one node, yet "
              f"{c.nodes_per_replica} nodes per replica")  # fmt: skip
    # 8. latency SLOs met at the p90 end of the estimate; the throughput target at its p10 end
    if w.ttft_p95_s is not None and c.ttft_s is not None and c.ttft_s.p90 > w.ttft_p95_s * (1 + 1e-9):
        a.bad("slo-p90", f"TTFT p90 {c.ttft_s.p90 * MS_PER_S:.0f} ms > {w.ttft_p95_s * MS_PER_S:.0f} ms")
    if w.tpot_p95_s is not None and c.tpot_s is not None and c.tpot_s.p90 > w.tpot_p95_s * (1 + 1e-9):
        a.bad("slo-p90", f"TPOT p90 {c.tpot_s.p90 * MS_PER_S:.1f} ms > {w.tpot_p95_s * MS_PER_S:.1f} ms")
    if w.target_requests_per_s is not None and c.output_tokens_per_s is not None:
        target = w.target_requests_per_s * w.output_len_tokens
        if c.output_tokens_per_s.p10 < target * (1 - 1e-6):
            a.bad("throughput-p10", f"{c.output_tokens_per_s.p10:.0f} output tokens/s at p10 < {target:.0f}")
    # 9. production: >= 2 replicas on >= 2 nodes, no marketplace/community host, spot flagged
    if w.tier == "production":
        if c.replicas < MIN_PRODUCTION_REPLICAS or c.total_nodes < MIN_PRODUCTION_REPLICAS:
            a.bad("production-replicas", f"{c.replicas} replicas on {c.total_nodes} node(s)")
        if c.provider_class == "marketplace":
            a.bad("production-host", "marketplace/community host")
        if c.price_kind == "spot" and not any("spot" in r for r in c.risk_reasons):
            a.bad("production-spot", "spot capacity without a risk reason")


def _training_rules(a: _Audit, c: Candidate, w: Workload) -> None:
    # 10. the global batch splits evenly over the data-parallel ranks (Megatron-LM asserts it)
    if w.global_batch_sequences % c.dp:
        a.bad("batch-divisible-by-dp", f"global batch {w.global_batch_sequences} over DP{c.dp}")
    # 11. multi-node training only over RDMA (IB/EFA/RoCE/GPUDirect) at >= 100 Gb/s per node, or TPU
    # Multislice over DCN; the dev tier may run it over TCP, flagged high risk
    if c.nodes_per_replica > 1:
        rdma = any(k in c.fabric for k in ("EFA", "InfiniBand", "RoCE", "RDMA", "TCPX"))
        ok = c.fabric.startswith("TPU") or (
            rdma and (c.fabric_gbps_per_node or 0.0) >= MIN_TRAINING_FABRIC_GBPS
        )
        flagged = c.risk == "high" and any("plain TCP" in r for r in c.risk_reasons)
        if not ok and not (w.tier == "dev" and flagged):
            a.bad("multi-node-rdma", f"{c.nodes_per_replica} nodes over {c.fabric}")
    # 12. pipeline parallelism only when no layout without it fits: fine-tuning with any ZeRO/FSDP stage
    # (FSDP stacks have no pipeline schedule), pre-training with Megatron's distributed optimizer (ZeRO-1)
    # and selective recompute
    if c.pp > 1:
        flat_kw: dict[str, Any] = {"zero_stage": 1, "recompute": "selective"} if w.task == "pretrain" else {}
        flat = estimate_training(model=w.model, task=w.task, gpu=c.gpu, precision=w.precision,
                                 gpu_count=c.total_gpus, gpus_per_node=c.gpus_per_node, pp=1,
                                 global_batch=w.global_batch_sequences, seq_len=w.seq_len_tokens,
                                 **flat_kw)  # fmt: skip
        if flat.fits:
            a.bad("pp-only-when-needed", f"PP{c.pp} although TP{flat.tp} DP{flat.dp} without PP fits")
    # 13. spot training checkpoints (Young's interval is set)
    if c.price_kind == "spot" and (c.spot is None or c.spot.checkpoint_interval_h is None):
        a.bad("spot-checkpointing", "spot training without a checkpoint interval")
    # 14. the deadline is met at the p90 end of the estimate
    ttt = c.time_to_train_s
    if w.deadline_h is not None and ttt is not None and ttt.p90 > w.deadline_h * 3600 * (1 + 1e-9):
        a.bad("deadline-p90", f"time to train p90 {ttt.p90 / 3600:.1f} h > {w.deadline_h:g} h")


def _expectations(case: Case, r: Recommendation) -> list[str]:
    out = []
    if case.expect_ok and r.status != "ok":
        out.append(f"status {r.status}: {r.message}")
    if "one_gpu" in case.extra:  # e.g. QLoRA/LoRA of an 8B model on one 24 GB card (QLoRA paper, PEFT docs)
        one = recommend(offers=_table(), estimator=_estimator(), limit=1, gpus_per_node=[1], max_nodes=1,
                        **case.fields)  # fmt: skip
        if one.status != "ok":
            out.append(f"one-gpu: no single-GPU plan ({one.status}: {one.message})")
    return out


@cache
def _table() -> OfferTable:
    return load_offers()


@cache
def _estimator() -> DefaultEstimator:
    return DefaultEstimator()


def audit(case: Case) -> list[str]:
    """Every violation of the top picks of ``case`` (empty when all rules hold)."""
    r = recommend(offers=_table(), estimator=_estimator(), limit=TOP, **case.fields)
    out = _expectations(case, r)
    for c in r.ranked[:TOP]:
        out += _violations(c, r.workload)
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_top_picks_follow_practitioners_rules(case: Case) -> None:
    assert audit(case) == []
