"""Practitioners' rules, seventh audit: 46 more asks read as a senior ML platform engineer reads them
(docs/recommend.md, "Practitioners' rules we check", rules 24-33; docs/fleet.md rule M4).

The earlier audits (``test_practitioner_rules.py`` rules 1-15, ``test_practitioner_rules_5.py`` rules 16-23)
cover chat, RAG, batch serving, fine-tuning and pre-training. This one adds asks they did not: 0.5B-3B models
at high request rates, int4 and fp8 on small cards, 64k-128k contexts of 8B/70B/Llama-4-Scout, 20 req/s of a
70B model, 70B bf16 on A100s and in EU hyperscaler regions, DeepSeek-V3/R1 at 5 req/s and on hyperscalers,
Qwen3-235B in the EU, 405B on a 3-year commitment, LoRA of MoE models (Qwen3-30B-A3B, gpt-oss-120b,
DeepSeek-V3), QLoRA of 0.5B-32B models on budgets, full fine-tunes of 8B-70B (spot with a 24 h deadline, a
7-day deadline, hyperscalers only), pre-training of 0.5B-7B models with and without a deadline, and
``migrate`` of running US and EU deployments. Every rule is computed from the model registry, the accelerator
table, published figures or the pick's own totals, never from the engine's intermediate values; rules 1-15 and
17/19/20 of the earlier audits are re-checked on these asks too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from gpufleet.catalog.regions import region_location
from gpufleet.estimate.memory import estimate_memory
from gpufleet.fleet.plan import plan_fleet
from gpufleet.fleet.spec import read_fleet_file
from gpufleet.models.params import count_params
from gpufleet.models.registry import resolve_model
from gpufleet.recommend.api import migrate, recommend
from gpufleet.recommend.types import Migration, Workload
from gpufleet.units import GIB, SECONDS_PER_HOUR

from .asks import recommender, weights_gib
from .asks import serve as _serve
from .asks import train as _train
from .test_practitioner_rules import _estimator, _table, _violations
from .test_practitioner_rules_5 import _scaleup_gpus, tp_violations

TOP = 3
ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Ask:
    """One user ask (recommend's keyword names) and the label it reads as."""

    label: str
    fields: dict[str, Any]


SERVING: tuple[Ask, ...] = (
    Ask("qwen2.5-0.5b 30 req/s tight SLOs", _serve("qwen2.5-0.5b", 30, 150, 15, input_len=512,
                                                   output_len=128)),
    Ask("qwen2.5-0.5b spot", _serve("qwen2.5-0.5b", 5, None, None, pricing="spot")),
    Ask("llama-3.2-1b spot batch", _serve("llama-3.2-1b", 10, None, None, pricing="spot", output_len=256)),
    Ask("llama-3.2-3b fp8 eu", _serve("llama-3.2-3b", 8, 300, 25, precision="fp8", geo="eu")),
    Ask("llama-3.1-8b int4", _serve("llama-3.1-8b", 10, 500, 40, precision="int4")),
    Ask("llama-3.1-8b 50 req/s", _serve("llama-3.1-8b", 50, 500, 50)),
    Ask("llama-3.1-8b 64k context", _serve("llama-3.1-8b", 0.5, 8000, 60, input_len=64000, output_len=1000)),
    Ask("qwen3-8b fp8 uk", _serve("qwen3-8b", 4, 600, 40, precision="fp8", geo="uk")),
    Ask("qwen2.5-14b fp8 india", _serve("qwen2.5-14b", 2, 800, 50, precision="fp8", geo="india")),
    Ask("phi-3-medium on a $1,500 budget", _serve("phi-3-medium", 3, 800, 50, budget=1500)),
    Ask("gemma-2-27b chat", _serve("gemma-2-27b", 4, 600, 40)),
    Ask("qwen3-30b-a3b fp8 10 req/s", _serve("qwen3-30b-a3b", 10, 800, 40, precision="fp8")),
    Ask("qwen3-30b-a3b dev box", _serve("qwen3-30b-a3b", 1, None, None, tier="dev")),
    Ask("qwen3-32b fp8 32k", _serve("qwen3-32b", 0.5, 6000, 60, input_len=32000, output_len=800,
                                    precision="fp8")),
    Ask("llama-3.3-70b fp8 20 req/s", _serve("llama-3.3-70b", 20, 1000, 50, precision="fp8")),
    Ask("llama-3.1-70b int4 on L40S", _serve("llama-3.1-70b", 1, 1500, 80, precision="int4", gpu="L40S")),
    Ask("llama-3.1-70b bf16 eu hyperscaler", _serve("llama-3.1-70b", 2, 1000, 60, geo="eu",
                                                    provider_class="hyperscaler")),
    Ask("llama-3.1-70b bf16 on A100-80GB", _serve("llama-3.1-70b", 1, 1500, 80, gpu="A100-SXM-80GB")),
    Ask("llama-3.1-70b bf16 100k context", _serve("llama-3.1-70b", 0.1, 30000, 100, input_len=100000,
                                                  output_len=1000)),
    Ask("gpt-oss-120b 5 req/s", _serve("gpt-oss-120b", 5, 800, 30)),
    Ask("gpt-oss-20b spot batch", _serve("gpt-oss-20b", 10, None, None, pricing="spot", output_len=1024)),
    Ask("llama-4-scout fp8 10 req/s", _serve("llama-4-scout", 10, 1000, 50, precision="fp8")),
    Ask("llama-4-scout fp8 128k", _serve("llama-4-scout", 0.2, 20000, 80, input_len=128000, output_len=1000,
                                         precision="fp8")),
    Ask("deepseek-v3 5 req/s", _serve("deepseek-v3", 5, 2000, 60)),
    Ask("deepseek-r1 hyperscaler reasoning", _serve("deepseek-r1", 1, 3000, 80, provider_class="hyperscaler",
                                                    input_len=1000, output_len=3000)),
    Ask("qwen3-235b fp8 eu", _serve("qwen3-235b-a22b", 2, 1500, 60, precision="fp8", geo="eu")),
    Ask("mixtral-8x7b int4", _serve("mixtral-8x7b", 3, 1000, 50, precision="int4")),
    # the shipped 3y rates are unverified ceilings: this ask opts in to them (issue 22)
    Ask("llama-3.1-405b fp8 3y", {**_serve("llama-3.1-405b", 2, 2000, 80, precision="fp8", pricing="3y"),
                                  "allow_unverified_commitments": True}),
)  # fmt: skip

TRAINING: tuple[Ask, ...] = (
    Ask("qlora qwen2.5-0.5b", _train("qwen2.5-0.5b", "qlora", 5e7)),
    Ask("lora llama-3.2-3b dev", _train("llama-3.2-3b", "lora", 1e8, tier="dev")),
    Ask("full ft qwen3-8b", _train("qwen3-8b", "full_finetune", 3e9)),
    Ask("full ft llama-3.1-8b spot 24h", _train("llama-3.1-8b", "full_finetune", 1e9, pricing="spot",
                                                deadline_hours=24)),
    Ask("lora qwen3-30b-a3b", _train("qwen3-30b-a3b", "lora", 3e8)),
    Ask("qlora qwen3-32b on $300", _train("qwen3-32b", "qlora", 1e8, budget=300)),
    Ask("full ft qwen2.5-32b hyperscaler", _train("qwen2.5-32b", "full_finetune", 1e9,
                                                  provider_class="hyperscaler")),
    Ask("lora llama-3.1-70b eu", _train("llama-3.1-70b", "lora", 5e8, geo="eu")),
    Ask("qlora llama-3.1-70b spot", _train("llama-3.1-70b", "qlora", 2e8, pricing="spot")),
    Ask("qlora qwen3-30b-a3b hyperscaler",
        _train("qwen3-30b-a3b", "qlora", 2e8, provider_class="hyperscaler")),
    Ask("full ft llama-3.1-70b 7 days", _train("llama-3.1-70b", "full_finetune", 5e9, deadline_hours=168)),
    Ask("lora gpt-oss-120b", _train("gpt-oss-120b", "lora", 2e8)),
    Ask("lora deepseek-v3", _train("deepseek-v3", "lora", 1e8)),
    Ask("pretrain llama-2-7b 2T nvidia", _train("llama-2-7b", "pretrain", 2e12, vendor="NVIDIA",
                                                max_nodes=64)),
    Ask("pretrain llama-2-7b 2T on A100", _train("llama-2-7b", "pretrain", 2e12, gpu="A100-SXM-80GB",
                                                 max_nodes=64)),
    Ask("pretrain qwen2.5-0.5b", _train("qwen2.5-0.5b", "pretrain", 1e10)),
    Ask("pretrain llama-3.2-3b spot", _train("llama-3.2-3b", "pretrain", 1e11, pricing="spot",
                                             vendor="NVIDIA")),
    Ask("pretrain llama-3.1-8b hyperscaler 14 days",
        _train("llama-3.1-8b", "pretrain", 2e11, provider_class="hyperscaler", deadline_hours=336)),
)  # fmt: skip

ASKS = SERVING + TRAINING


_rec, _picks = recommender(ASKS, TOP)
_weights_gib = weights_gib


def _base_precision(w: Workload) -> str:
    """The precision the weights are held in (QLoRA: the NF4 base; other training: the 16-bit base)."""
    if w.task == "qlora":
        return "nf4"
    return "bf16" if w.is_training else w.precision


# ---- rule 24: the GPUs of a pick hold the model at least once ----------------------------------------------
#: mixed-precision AdamW model states per parameter: 2 B fp16/bf16 weights + 2 B gradients + 12 B fp32 master
#: weights, momentum and variance (Rajbhandari et al. 2020, ZeRO, sec. 3.1: "16 Psi bytes"); ZeRO shards them
#: over the data-parallel ranks, it never makes them smaller
ADAMW_STATE_BYTES_PER_PARAM = 16.0


@pytest.mark.parametrize("label", [a.label for a in ASKS])
def test_the_gpus_hold_the_model(label: str) -> None:
    """Rule 24: memory is conserved. A serving replica's GPUs hold its weights (weights / (TP or EP x PP) per
    GPU within the device: a 70B model at 16 bit is never on one 80 GB GPU); a training job's GPUs together
    hold at least one copy of its base weights, and a full fine-tune or pre-train with AdamW at least 16 B
    per parameter. Sharding (TP, EP, PP, ZeRO/FSDP) divides the model over GPUs; no layout makes the sum
    smaller than the model.

    Sources: ZeRO (Rajbhandari et al. 2020, sec. 3.1 and 5: stage 3 partitions the 16 Psi bytes of model
    states over N_d ranks, each holding 16 Psi / N_d); Megatron-LM expert parallelism (each expert on one
    rank of its EP group, replicated over dp / ep); vLLM "Distributed inference" (TP splits the weights)."""
    r = _rec(label)
    w = r.workload
    m = resolve_model(w.model)
    bad = []
    for c in _picks(label):
        weights = _weights_gib(w.model, _base_precision(w))
        if not w.is_training:
            per_gpu = weights / (max(c.tp, c.ep) * c.pp)
            if per_gpu > c.mem_capacity_gib:
                bad.append(f"{c.provider} {c.instance_type}: {per_gpu:.0f} GiB of weights per GPU > "
                           f"{c.mem_capacity_gib:.0f} GiB")  # fmt: skip
            continue
        held = c.mem_per_gpu_gib * c.total_gpus
        need = weights
        if w.task in ("pretrain", "full_finetune") and c.optimizer in ("adamw", "adam") and c.recipe is None:
            need = max(need, ADAMW_STATE_BYTES_PER_PARAM * count_params(m).total / GIB)
        if held < need:
            bad.append(f"{c.provider} {c.instance_type} ({c.total_gpus} x {c.gpu}, TP{c.tp} DP{c.dp}): "
                       f"{c.mem_per_gpu_gib:.1f} GiB x {c.total_gpus} GPUs = {held:.0f} GiB < {need:.0f} GiB "
                       f"of {w.task} model state")  # fmt: skip
    assert bad == [], f"{label}: {bad}"


# ---- rule 25: a training run without a deadline still ends within a year -----------------------------------
#: the horizon (the engine's ``DEFAULT_TRAINING_HORIZON_H``, restated): 365 days
HORIZON_H = 365 * 24


@pytest.mark.parametrize("label", [a.label for a in TRAINING if "deadline_hours" not in a.fields])
def test_training_without_deadline_ends_within_a_year(label: str) -> None:
    """Rule 25: a training plan given no deadline finishes within 365 days at the p90 end of its estimate.

    Sources: Epoch AI, "The Longest Training Run" (Sevilla et al. 2022: runs longer than ~15 months lose to
    starting later on better hardware); NVIDIA's one-year GPU cadence (Computex 2024); published pre-training
    runs take weeks to months (Llama 2 7B: 184,320 A100-hours on a few thousand GPUs); the catalog's prices
    are current for about a year (the production tier's 365-day stale-price rule). Before the fix a
    2T-token pre-train of Llama-2-7B was proposed on one 4 x L40S host for 48,286 h (5.5 years)."""
    bad = []
    for c in _picks(label):
        ttt = c.time_to_train_s
        if ttt is None or ttt.p90 > HORIZON_H * SECONDS_PER_HOUR * (1 + 1e-9):
            days = math.inf if ttt is None else ttt.p90 / SECONDS_PER_HOUR / 24
            bad.append(f"{c.provider} {c.instance_type} ({c.total_gpus} x {c.gpu}): {days:,.0f} days at p90")
    assert bad == [], f"{label}: {bad}"


def test_the_horizon_is_explained_where_it_drops_a_plan() -> None:
    """Rule 25 (its note): when the horizon drops a plan that fits, the answer says so and how to lift it."""
    notes = " ".join(_rec("pretrain llama-2-7b 2T nvidia").notes)
    assert "365 days" in notes and "--deadline-hours" in notes


# ---- rule 26: training GPU-hours agree with published runs ---------------------------------------------
#: Llama 2 (Touvron et al. 2023, Table 2, "Time (GPU hours)"): 7B over 2T tokens on A100-80GB
LLAMA2_7B_A100_HOURS = 184_320.0
#: the band a practitioner accepts for a plan's GPU-hours against the published run: the estimator's
#: train_gpu_hours leave-vendor-out error is 12 % (README accuracy table); a 1.5x band covers the other
#: published runs' spread in MFU (Llama 2 ran at ~39 % MFU; Megatron-LM reports 40-55 % on A100)
PUBLISHED_BAND = 1.5


def test_training_gpu_hours_match_published_runs() -> None:
    """Rule 26: the GPU-hours of the picks for Llama-2-7B over 2T tokens on A100-80GB are within 1.5x of the
    184,320 A100-hours Meta published (Touvron et al. 2023, Table 2)."""
    bad = []
    for c in _picks("pretrain llama-2-7b 2T on A100"):
        assert c.time_to_train_s is not None
        gpu_h = c.total_gpus * c.time_to_train_s.central / SECONDS_PER_HOUR
        ratio = gpu_h / LLAMA2_7B_A100_HOURS
        if not 1 / PUBLISHED_BAND <= ratio <= PUBLISHED_BAND:
            bad.append(f"{c.provider} {c.instance_type}: {gpu_h:,.0f} A100-hours ({ratio:.2f}x)")
    assert bad == []


# ---- rule 27: every pick's money adds up ---------------------------------------------------------------
#: relative tolerance of the cost identities (rounding of the displayed prices aside, they are exact)
COST_TOLERANCE = 1e-6


@pytest.mark.parametrize("label", [a.label for a in ASKS])
def test_costs_add_up(label: str) -> None:
    """Rule 27: $/h = node price x nodes (on-demand and commitments); $/month = $/h x the hours a month bills
    (730 for 24/7 and for commitments); $/1M output tokens at the user's load = $/month / (load output
    tokens/s x 3,600 x the schedule's hours a month) x 1e6;
    training: $/month = $/run x runs per month, and an on-demand run costs $/h x its time to train.

    Sources: FinOps Foundation "Cloud cost allocation" (unit economics: cost per unit = cost / units);
    docs/recommend.md "Training cost: one semantics"; AWS/GCP/Azure bill GPU instances per hour of use,
    730 hours a month in their calculators."""
    r = _rec(label)
    w = r.workload
    bad = []

    def off(a: float, b: float) -> bool:
        return abs(a - b) > COST_TOLERANCE * max(abs(a), abs(b), 1e-9)

    for c in _picks(label):
        where = f"{c.provider} {c.instance_type}"
        if c.price_kind != "spot" and off(c.cost_usd_per_hour, c.price_usd_per_node_hour * c.total_nodes):
            bad.append(f"{where}: ${c.cost_usd_per_hour:.4f}/h != ${c.price_usd_per_node_hour:.4f} x "
                       f"{c.total_nodes} nodes")  # fmt: skip
        if w.is_training:
            assert c.cost_usd_per_run is not None and c.runs_per_month is not None
            if off(c.cost_usd_per_month, c.cost_usd_per_run * c.runs_per_month):
                bad.append(f"{where}: ${c.cost_usd_per_month:.2f}/month != $/run x runs")
            if c.price_kind == "on_demand" and c.time_to_train_s is not None:
                run = c.cost_usd_per_hour * c.time_to_train_s.central / SECONDS_PER_HOUR
                if off(c.cost_usd_per_run, run):
                    bad.append(f"{where}: ${c.cost_usd_per_run:.2f}/run != $/h x time to train ${run:.2f}")
            continue
        hours = 730.0 if c.price_kind.startswith("commit") else w.hours_per_month
        if off(c.cost_usd_per_month, c.cost_usd_per_hour * hours):
            bad.append(
                f"{where}: ${c.cost_usd_per_month:.2f}/month != ${c.cost_usd_per_hour:.4f}/h x {hours:g} h"
            )
        if c.load_output_tokens_per_s is None:  # no load stated: no unit cost at a load
            assert c.cost_usd_per_million_output_tokens_at_load is None
            continue
        assert c.cost_usd_per_million_output_tokens_at_load is not None
        per_m = (
            c.cost_usd_per_month / (c.load_output_tokens_per_s * w.hours_per_month * SECONDS_PER_HOUR) * 1e6
        )
        if off(c.cost_usd_per_million_output_tokens_at_load, per_m):
            bad.append(
                f"{where}: ${c.cost_usd_per_million_output_tokens_at_load:.4f}/1M tokens != {per_m:.4f}"
            )
    assert bad == [], f"{label}: {bad}"


# ---- rule 28: self-hosting at saturation is in the range of public API prices ------------------------------
#: public list prices of the same open models, USD per 1M (input, output) tokens: Together AI pricing page
#: (Llama 3.1 8B Instruct Turbo $0.18 / $0.18, 70B Instruct Turbo $0.88 / $0.88, 405B Instruct Turbo $3.50 /
#: $3.50), DeepSeek API pricing (deepseek-chat, V3: $0.27 input on a cache miss, $1.10 output; standard price
#: from 2025-02-08)
API_USD_PER_MILLION: dict[str, tuple[float, float]] = {
    "llama-3.1-8b": (0.18, 0.18), "llama-3.1-70b": (0.88, 0.88), "llama-3.1-405b": (3.50, 3.50),
    "deepseek-v3": (0.27, 1.10),
}  # fmt: skip
#: a self-hosted deployment at full load may cost this multiple of the API price per request and still be
#: plausible (API providers batch across customers and buy capacity below list; a plan 3x above the API at
#: saturation means an estimate or a price that is off, not a deployment anyone would choose)
API_PRICE_MULTIPLE = 3.0


@pytest.mark.parametrize(
    "label", [a.label for a in SERVING if resolve_model(a.fields["model"]).id in API_USD_PER_MILLION]
)
def test_cost_per_request_in_the_range_of_api_prices(label: str) -> None:
    """Rule 28: a request's cost on the picks at saturation (full batch: $/1M output tokens x output tokens)
    is at most 3x what the public API charges for its prompt and output tokens on the same model; a much
    higher figure means the speed or the price is wrong. Per request, not per output token: the API bills
    the prompt too, and a 100k-token prompt is most of a long-context request's cost."""
    w = _rec(label).workload
    p_in, p_out = API_USD_PER_MILLION[resolve_model(w.model).id]
    api = (w.input_len_tokens * p_in + w.output_len_tokens * p_out) / 1e6
    bad = []
    for c in _picks(label):
        sat = c.cost_usd_per_million_output_tokens_saturated
        ours = math.inf if sat is None else sat * w.output_len_tokens / 1e6
        if ours > API_PRICE_MULTIPLE * api:
            bad.append(
                f"{c.provider} {c.instance_type}: ${ours:.5f} per request at saturation vs API ${api:.5f}"
            )
    assert bad == [], f"{label}: {bad}"


# ---- rule 29: QLoRA runs where bitsandbytes does -----------------------------------------------------------
#: accelerator vendors bitsandbytes' 4-bit (NF4) kernels support: CUDA, ROCm, Intel XPU/Gaudi (bitsandbytes
#: "Installation", multi-backend support); none for XLA/TPU (Google) or Neuron (AWS Trainium/Inferentia)
BITSANDBYTES_VENDORS: tuple[str, ...] = ("NVIDIA", "AMD", "Intel")


@pytest.mark.parametrize("label", [a.label for a in TRAINING if a.fields["task"] == "qlora"])
def test_qlora_runs_where_bitsandbytes_runs(label: str) -> None:
    """Rule 29: a QLoRA pick runs on an accelerator with a bitsandbytes backend (NVIDIA, AMD, Intel).

    Sources: QLoRA (Dettmers et al. 2023) defines the NF4 base in bitsandbytes; PEFT, TRL, Axolotl and
    Unsloth load it with ``BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4")``; bitsandbytes
    ships CUDA, ROCm and Intel backends; Hugging Face optimum-tpu and optimum-neuron fine-tune TPUs and
    Trainium with LoRA on a 16-bit base. Before the fix QLoRA of Llama-3.1-70B on spot went to TPU v6e."""
    bad = [
        f"{c.provider} {c.instance_type} ({c.gpu}, {c.gpu_vendor})"
        for c in _picks(label)
        if c.gpu_vendor not in BITSANDBYTES_VENDORS
    ]
    assert bad == [], f"{label}: QLoRA on accelerators without bitsandbytes: {bad}"


# ---- rule 31: a generative LLM is served on accelerators that have an LLM stack ---------------------------
#: accelerators no LLM serving stack targets: first-generation Inferentia (NeuronCore-v1)
NO_LLM_STACK: tuple[str, ...] = ("Inferentia1",)


@pytest.mark.parametrize("label", [a.label for a in SERVING])
def test_llm_serving_has_a_stack(label: str) -> None:
    """Rule 31: a decoder LLM is not served on first-generation Inferentia (Inf1).

    Sources: AWS transformers-neuronx README ("LLM performant inference on second-generation Neuron hardware
    (See: NeuronCore-v2)"); NxD Inference supports Inf2, Trn1 and Trn2; Inf1 (NeuronCore-v1, neuron-cc)
    compiles encoders and vision models. Before the fix a spot Qwen2.5-0.5B service went to inf1.2xlarge."""
    bad = [f"{c.provider} {c.instance_type} ({c.gpu})" for c in _picks(label) if c.gpu in NO_LLM_STACK]
    assert bad == [], f"{label}: {bad}"


# ---- rule 30: a precision no offered GPU computes is named as the reason, never "0.0 GiB" ----------------
UNSUPPORTED: tuple[Ask, ...] = (
    Ask("qwen2.5-7b fp8 on A100", _serve("qwen2.5-7b", 5, 500, 40, precision="fp8", gpu="A100")),
    Ask("llama-3.1-8b bf16 on T4", _serve("llama-3.1-8b", 1, 2000, 100, gpu="T4")),
    Ask("full ft llama-3.2-1b bf16 on V100", _train("llama-3.2-1b", "full_finetune", 1e8, gpu="V100")),
)  # fmt: skip


@pytest.mark.parametrize("ask", UNSUPPORTED, ids=lambda a: a.label)
def test_unsupported_precision_is_the_stated_reason(ask: Ask) -> None:
    """Rule 30: when no offered GPU computes the precision (fp8 on Ampere, bf16 on Turing/Volta, without
    ``allow_fallback``), the CANNOT FIT reason names the GPUs and the precision, and the memory shown is the
    model's, not 0.

    Sources: NVIDIA A100/T4/V100 datasheets (no fp8; no bf16 before Ampere); PyTorch
    ``torch.cuda.is_bf16_supported()`` (False below sm80); docs/recommend.md rule 8. Before the fix the reason
    read "needs about 0.0 GiB on a single GPU. The largest GPU among the offers considered has 80.0 GiB",
    which points at memory, not at the precision."""
    r = recommend(offers=_table(), estimator=_estimator(), limit=TOP, **ask.fields)
    assert r.status == "cannot_fit" and r.cannot_fit is not None, r.status
    prec = r.workload.precision
    assert f"computes {prec}" in r.cannot_fit.reason, r.cannot_fit.reason
    assert "0.0 GiB" not in r.cannot_fit.reason, r.cannot_fit.reason
    if not r.workload.is_training:
        assert r.cannot_fit.mem_needed_single_gpu_gib > 1.0


# ---- rules 17, 19, 20 of the fifth audit and rules 1-15 of the first, on the new asks ----------------------


@pytest.mark.parametrize("label", [a.label for a in SERVING])
def test_serving_rules_of_the_fifth_audit_hold(label: str) -> None:
    """Rule 17 (TP only when one GPU is not enough) and rule 19 (a TP group beyond the NVLink domain is
    flagged) of ``test_practitioner_rules_5.py`` (sources there)."""
    bad = [f"rule 17: {v}" for v in tp_violations(_picks(label), _rec(label).workload)]
    for c in _picks(label):
        span = max(c.tp, c.ep) * c.pp // max(1, c.nodes_per_replica)
        if span > _scaleup_gpus(c.gpu) and not any("over PCIe" in x for x in c.risk_reasons):
            bad.append(f"rule 19: {c.provider} {c.instance_type}: {span} x {c.gpu} over PCIe, not flagged")
    assert bad == [], f"{label}: {bad}"


#: the memory model's p90 |error| rule 20 uses (docs/recommend.md rule 20: "> capacity / 1.06"; README
#: accuracy table, peak_memory_gib p90 5-6 % since the sixth stop)
MEMORY_P90_ERROR = 0.06


@pytest.mark.parametrize("label", [a.label for a in TRAINING])
def test_training_memory_headroom_is_flagged(label: str) -> None:
    """Rule 20 of ``test_practitioner_rules_5.py``: a training pick within the memory estimate's error of the
    device carries a risk reason."""
    bad = []
    for c in _picks(label):
        if c.mem_per_gpu_gib > c.mem_capacity_gib / (1 + MEMORY_P90_ERROR) and not any(
            "run out of memory" in x for x in c.risk_reasons
        ):
            bad.append(
                f"{c.provider} {c.instance_type}: {c.mem_per_gpu_gib:.1f} of {c.mem_capacity_gib:.1f} GiB"
            )
    assert bad == [], f"{label}: {bad}"


@pytest.mark.parametrize("label", [a.label for a in ASKS])
def test_earlier_rules_hold_on_new_asks(label: str) -> None:
    """Rules 1-15 (``test_practitioner_rules.py``; sources there) on the top picks of the new asks."""
    r = _rec(label)
    found = [v for c in _picks(label) for v in _violations(c, r.workload)]
    assert found == [], f"{label}: {found}"


# ---- M4: a migration stays in the geography the deployment serves from -------------------------------------
MOVES: tuple[Ask, ...] = (
    Ask("70b fp8 on 2 x p5.48xlarge in us-east-1",
        _serve("llama-3.1-70b", 3, 1000, 60, precision="fp8", current_provider="aws",
               current_instance="p5.48xlarge", current_count=2, current_region="us-east-1")),
    Ask("8b on 4 x g5.2xlarge in eu-west-1",
        _serve("llama-3.1-8b", 5, 500, 50, current_provider="aws", current_instance="g5.2xlarge",
               current_count=4, current_region="eu-west-1")),
    Ask("qwen2.5-32b on 2 x a2-highgpu-2g in asia-southeast1",
        _serve("qwen2.5-32b", 2, 1000, 60, current_provider="gcp", current_instance="a2-highgpu-2g",
               current_count=2, current_region="asia-southeast1")),
)  # fmt: skip


@cache
def _move(label: str) -> Migration:
    ask = next(a for a in MOVES if a.label == label)
    return migrate(offers=_table(), estimator=_estimator(), **ask.fields)


@pytest.mark.parametrize("label", [a.label for a in MOVES])
def test_migration_stays_in_the_current_geography(label: str) -> None:
    """M4 (docs/fleet.md): with no geos or regions given, migrate proposes a move within the geo of the
    deployment's stated region, and says so.

    Sources: AWS "Regions and Zones" (choose the Region near your users; a trans-Pacific hop adds ~100-150 ms
    RTT); GDPR Art. 44 (personal data leaves the EU/EEA only under Chapter V safeguards); AWS Compute
    Optimizer, Azure Advisor and GCP Recommender right-size in place and never propose another region.
    Before the fix a 70B service on 2 x p5.48xlarge in us-east-1 was moved to lambda asia-northeast-1."""
    m = _move(label)
    ask = next(a for a in MOVES if a.label == label)
    here = region_location(ask.fields["current_provider"], ask.fields["current_region"]).geo
    assert m.recommended is not None, m.verdict
    there = region_location(m.recommended.provider, m.recommended.region).geo
    assert there == here, f"{label}: moved from geo {here} to {m.recommended.provider} {m.recommended.region}"
    assert any(f"limited to geo {here}" in n for n in m.recommendation.notes)


def test_migration_looks_elsewhere_when_asked() -> None:
    """M4: naming geos lifts the default (the user decides to serve from elsewhere)."""
    ask = next(a for a in MOVES if a.label.startswith("8b on 4 x g5"))
    m = migrate(offers=_table(), estimator=_estimator(), geo="us", **ask.fields)
    assert m.recommended is not None
    assert region_location(m.recommended.provider, m.recommended.region).geo == "us"


# ---- rule 24 at its root: ZeRO-3 shards a LoRA base's routed experts only over their dp / ep group ------


MOE_TUNES = (("deepseek-v3", "lora", 8), ("gpt-oss-120b", "lora", 4), ("qwen3-30b-a3b", "qlora", 4),
             ("mixtral-8x7b", "lora", 8))  # fmt: skip


@pytest.mark.parametrize(("model", "task", "ep"), MOE_TUNES)
def test_zero3_lora_base_of_a_moe_is_not_split_twice(model: str, task: str, ep: int) -> None:
    """Rule 24: with expert parallelism EP inside DP (DeepSpeed-MoE / Megatron expert-data-parallel) and
    ZeRO-3 over the dp ranks, the frozen base's routed experts are split over EP and sharded over dp / ep,
    the rest over dp: the weights per GPU x dp equal the whole base, as for a full fine-tune (ZeRO sec. 5;
    Megatron-LM ``expert_data_parallel``). Before the fix the LoRA/QLoRA base was divided by dp after the
    experts had been divided by ep, so DeepSeek-V3's 1,250 GiB bf16 base took 23 GiB per GPU on 8 GPUs."""
    dp = ep
    base = "nf4" if task == "qlora" else "bf16"
    mem = estimate_memory(model=model, task=task, precision="bf16", gpu="B200", dp=dp, ep=ep, zero_stage=3,
                          seq_len=2048)  # fmt: skip
    held = mem.breakdown_gib["weights"] * dp
    whole = _weights_gib(model, base)
    assert held >= 0.95 * whole, (
        f"{model} {task} EP{ep} DP{dp}: {held:.0f} GiB held of a {whole:.0f} GiB base"
    )


# ---- P12: a plan's savings waterfall shows money, not float residue ----------------------------------------


@pytest.mark.parametrize("example", ["assessment-platform", "mig-inference", "multicloud"])
def test_savings_waterfall_shows_no_float_residue(example: str) -> None:
    """P12 (docs/fleet.md): a lever that saves nothing shows $0, never a float residue such as $1.82e-12
    (the same plan's cost summed in another order); every saving is zero or at least half a cent.

    Source: FinOps Foundation, Reporting & Analytics (savings are reported in currency units); a report line
    "saved $1.82e-12" reads as a rendering bug to a FinOps reader. Before the fix the multicloud example's
    schedule lever read $1.82e-12 (1.76e-14 %)."""
    plan = plan_fleet(read_fleet_file(ROOT / "examples" / "fleets" / f"{example}.yaml"))
    bad = [
        f"{lv.name}: {lv.savings_usd_per_month!r}"
        for lv in plan.levers
        if lv.savings_usd_per_month is not None and 0 < abs(lv.savings_usd_per_month) < 0.005
    ]
    assert bad == [], f"{example}: {bad}"


# ---- rule 32: production serving runs on data-centre GPUs, not GeForce cards ---------------------------
def _consumer(gpu: str) -> bool:
    from gpufleet.catalog.specs import load_specs

    specs = load_specs()
    return gpu in specs and "consumer" in specs[gpu].form_factor.lower()


#: serving asks in the production tier: the default with a latency SLO, unless the ask names another tier
PRODUCTION = [
    a.label
    for a in SERVING
    if ("ttft_ms" in a.fields or "tpot_ms" in a.fields) and a.fields.get("tier", "production") == "production"
]


@pytest.mark.parametrize("label", PRODUCTION)
def test_production_serving_avoids_consumer_gpus(label: str) -> None:
    """Rule 32: the production tier leaves GeForce cards out unless the workload allows them.

    Sources: NVIDIA GeForce Software License Agreement sec. 2.1.3 ("No Datacenter Deployment"); the cards
    have no ECC memory and no NVLink (RTX 4090/5090 specifications); no hyperscaler lists them. Before the
    fix Qwen3-30B-A3B fp8 at 10 req/s went to 2 x (2 x RTX 5090) in production."""
    assert _rec(label).workload.tier == "production"
    bad = [f"{c.provider} {c.instance_type} ({c.gpu})" for c in _picks(label) if _consumer(c.gpu)]
    assert bad == [], f"{label}: {bad}"


def test_production_on_consumer_gpus_only_says_why_and_how_to_allow() -> None:
    ask = _serve("llama-3.1-8b", 2, 800, None, gpu="RTX-4090")
    r = recommend(offers=_table(), estimator=_estimator(), limit=TOP, **ask)
    assert r.status == "no_offers" and r.workload.tier == "production"
    assert "consumer (GeForce) GPUs" in r.message and "allow_consumer_gpus: true" in r.message
    allowed = recommend(
        offers=_table(), estimator=_estimator(), limit=TOP, **ask, allow_consumer_gpus=True,
        allow_marketplace=True, allow_stale_prices=True,
    )  # fmt: skip
    assert allowed.status != "no_offers"  # left to the risk limit: marketplace hosts are high risk here
    batch = recommend(offers=_table(), estimator=_estimator(), limit=TOP, **(ask | {"tier": "batch"}))
    assert batch.status == "ok"


# ---- rule 33: a training run's start-up is billed on every GPU it holds ---------------------------------
def test_short_jobs_do_not_take_a_slice_they_mostly_spend_starting() -> None:
    """Rule 33: provisioning, image pull, weight load and warm-up (cost.startup, ~2 min) are paid per run on
    every GPU, so a short job's pick runs at least 10x its start-up. Before, a 2e8-token LoRA of Mistral-7B on
    spot went to a 256-chip TPU v6e slice for ~2 minutes (the 64-, 128- and 256-chip slices all cost the
    same without the start-up)."""
    from gpufleet.cost.startup import training_startup_s

    ask = _train("mistral-7b", "lora", 2e8, pricing="spot")
    r = recommend(offers=_table(), estimator=_estimator(), limit=TOP, **ask)
    assert r.status == "ok"
    for c in r.ranked[:TOP]:
        assert c.time_to_train_s is not None
        assert c.time_to_train_s.central >= 10 * training_startup_s(0.0), (c.gpu, c.gpus_per_node)


def test_startup_is_part_of_the_time_to_train() -> None:
    from gpufleet.cost.startup import DEFAULT_LOAD_BANDWIDTH_BYTES_PER_S, training_startup_s
    from gpufleet.recommend.perf import training_configs

    assert training_startup_s(0.0) == pytest.approx(110.0)  # 60 + 30 + 20 s
    assert training_startup_s(16e9) == pytest.approx(110.0 + 16e9 / DEFAULT_LOAD_BANDWIDTH_BYTES_PER_S)
    w = Workload(name="lora-8b", model="llama-3.1-8b", task="lora", train_tokens=1e8, precision="bf16")
    (cfg,) = training_configs(_estimator(), w, "H100-SXM", 1)
    est = _estimator().training(gpu="H100-SXM", precision="bf16", gpu_count=1, gpus_per_node=1, workload=w)
    assert cfg.time_to_train_s is not None and est.time_to_train_s is not None
    extra = cfg.time_to_train_s.central - est.time_to_train_s.central
    assert extra == pytest.approx(training_startup_s(cfg.weights_per_gpu_gib * GIB))
    assert any("Start-up" in n for n in cfg.notes)
