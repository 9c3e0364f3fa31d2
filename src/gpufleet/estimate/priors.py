"""Literature priors of the performance model's parameters, each with its spread and source.

Each parameter starts at a named literature prior (:data:`PRIORS`); the fit
(:mod:`gpufleet.estimate.calibration`) moves the ``fit=True`` ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True, slots=True, kw_only=True)
class Prior:
    """A named model parameter: literature value, log spread, whether the fit moves it, its source."""

    value: float
    log_sd: float
    fit: bool
    source: str


#: the model's GEMM width factor ``h / (h + width_h0)`` (:func:`gpufleet.estimate.rates.width_factor`) at the
#: size the cited GEMM rates are measured at, with the ``width_h0`` prior (1024): cuBLAS/CUTLASS/hipBLASLt and
#: Gaudi sweeps and the NVIDIA guide's figures report large square-ish GEMMs (M = N = K = 8192) and LLM
#: layers of h = 4k-12k, i.e. ~8192. The model multiplies an architecture's share of peak by the width factor
#: of the model at hand, so the share the sources report *at* that size is the prior times this factor: the
#: absolute ``eta_*`` priors are the cited shares divided by it (their share for an infinitely wide GEMM).
#: Before, the cited share was used as is and the width factor taken off again (0.65 x 0.80 at h = 4096 for
#: H100: ~515 of 989 TFLOP/s against the cited 600-700). Relative priors (``*_rel``) are ratios of shares at
#: the same sizes, where the factor cancels.
CITED_GEMM_WIDTH_FACTOR = 8192.0 / (8192.0 + 1024.0)

# fmt: off
_PRIOR_TABLE: tuple[tuple[str, float, float, bool, str], ...] = (
    # --- kernel efficiency: achieved fraction of the DENSE 16-bit peak by large transformer GEMMs (the
    # absolute ones at infinite width: the cited share / CITED_GEMM_WIDTH_FACTOR)
    ("eta_ampere", 0.7 / CITED_GEMM_WIDTH_FACTOR, 0.3, True,
     "A100 cuBLAS bf16 GEMMs reach ~230-250 of 312 TFLOP/s at transformer sizes (NVIDIA 'Matrix "
     "multiplication background' guide; Megatron-LM reports 52% MFU end to end, Narayanan 2021)"),
    ("eta_hopper", 0.65 / CITED_GEMM_WIDTH_FACTOR, 0.3, True,
     "H100 SXM bf16 GEMMs reach ~600-700 of 989 TFLOP/s (cuBLAS/CUTLASS benchmarks); power/clock "
     "throttling lowers sustained rates"),
    ("eta_ada_rel", 0.85, 0.2, True,
     "Ada (L40S, L4, RTX 40xx) share of peak relative to Ampere's (at most 1): same SM and tensor-core "
     "design (NVIDIA Ada whitepaper 2022) but the data-centre parts are power capped (L40S 350 W, L4 72 W "
     "for their boost-clock peaks), so sustained tensor clocks sit ~10-20% below boost"),
    ("eta_geforce_mult", 1.1, 0.15, True,
     "GeForce parts (RTX 30xx/40xx) list their fp32-accumulate tensor peak at half the fp16-accumulate "
     "rate (Ada whitepaper appendix A); at that halved rate the SMs stay under the power limit at boost "
     "clocks, so cuBLAS reaches ~90% of the listed figure (community RTX 4090 GEMM benchmarks); the "
     "product with the architecture's share is capped at 1"),
    ("eta_blackwell_rel", 0.9, 0.25, True,
     "Blackwell share of peak relative to Hopper's (at most 1): B200 bf16 cuBLAS GEMMs reach ~1.4-1.6 of "
     "2.25 PFLOP/s dense vs ~0.7 of peak on H100 (SemiAnalysis 'B200 vs H100' microbenchmarks 2025)"),
    ("eta_cdna_rel", 0.7, 0.3, True,
     "AMD CDNA share of peak relative to Hopper's (at most 1): MI300X bf16 GEMMs with tuned hipBLASLt "
     "reach ~600-650 of 1307 TFLOP/s dense vs ~700 of 989 on H100 (SemiAnalysis 'MI300X vs H100 vs H200 "
     "Training', Dec 2024)"),
    ("eta_cdna4_rel", 0.7, 0.3, True,
     "AMD CDNA 4 (MI350X/MI355X) share of peak relative to Hopper's (at most 1): CDNA 3's prior until CDNA 4 "
     "GEMM sweeps are published, fitted on its own because CDNA 4 rebuilt the matrix path: 2x the 16/8-bit "
     "matrix rate per CU with the LDS doubled to 160 KB and twice its read bandwidth to feed it, 256 CUs at "
     "2.4 GHz instead of 304 at 2.1, in a 1400 W envelope (MI355X) vs 750 W for MI300X, whose GEMMs throttle "
     "their clocks (AMD CDNA 4 architecture white paper, 2025; SemiAnalysis MI300X benchmarks, Dec 2024)"),
    ("eta_gaudi", 0.7 / CITED_GEMM_WIDTH_FACTOR, 0.35, True,
     "Gaudi 2/3 MME reaches ~70-80% of its bf16 matrix peak on large GEMMs through the graph compiler "
     "(Intel Gaudi 'Model Performance' pages; Emani et al. 2024 'Toward a holistic performance evaluation "
     "of LLMs across AI accelerators' Gaudi 2 GEMM sweeps)"),
    ("eta_tpu", 0.75 / CITED_GEMM_WIDTH_FACTOR, 0.3, True,
     "TPU MXU utilisation of large XLA matmuls: MaxText reports 55-70% end-to-end MFU on v5p/v5e/v6e for "
     "dense LLMs (MaxText README performance table), i.e. ~0.75 of peak in the GEMMs at train_eff ~0.85"),
    ("fp8_eff", 0.7, 0.3, True,
     "fraction of the 16-bit efficiency kept at fp8 (2x peak): Transformer Engine fp8 training speeds end-"
     "to-end GPT runs 1.3-1.5x over bf16, not 2x (NVIDIA NeMo performance tables)"),
    ("fp8_train_blackwell_rel", 1.25, 0.2, True,
     "training fp8/fp4 GEMM efficiency on Blackwell relative to fp8_eff (fitted mostly on Hopper), capped at "
     "the 16-bit share: Transformer Engine runs Hopper's dgrad and wgrad fp8 GEMMs with split (fp32-"
     "promoted) accumulation (transformer_engine/pytorch/module/base.py _2X_ACC_DGRAD = _2X_ACC_WGRAD = "
     "True; DeepSeek-V3 report sec. 3.3.2: H800 fp8 tensor cores keep ~14 bits of accumulation), while "
     "Blackwell's tcgen05 MMAs accumulate in fp32 tensor memory and apply MXFP8 block scales in the MMA "
     "(NVIDIA Blackwell architecture technical brief 2024; PTX ISA tcgen05.mma block_scale). Bound: NVIDIA's "
     "Llama 3.1 405B fp8 run on 256 GB200 reaches 2053 model TFLOP/s/GPU end to end (Megatron-Bridge "
     "performance summary, 25.11), above the 0.42 x 5 PFLOP/s x w(h) = 2020 GEMM rate the Hopper discount "
     "gives; ~1.25 leaves that run the ~20 % of non-GEMM time its step breakdown shows"),
    ("width_h0", 1024.0, 0.7, True,
     "GEMM efficiency falls for narrow layers as h/(h+h0): tiles underfill SMs and wave quantisation "
     "(NVIDIA 'Matrix multiplication background'); h0 ~1k from the GEMM-size sweeps there"),
    ("train_eff", 0.95, 0.3, True,
     "share of GEMM-speed time left after the explicit element-wise term (train_elementwise_elems) and the "
     "explicit communication: optimizer step, softmax/loss, kernel-launch gaps take ~5% of a tuned step "
     "(Korthikanti 2022 Table 4: the non-GEMM ~15-25% is mostly the element-wise kernels modelled apart)"),
    ("eta_bw", 0.8, 0.2, True,
     "achieved HBM bandwidth of decode kernels: 75-90% of peak (STREAM-like copy on A100/H100 reaches "
     "~90%; TRT-LLM/vLLM GEMV kernels ~80%)"),
    ("step_overhead_s", 0.001, 0.7, True,
     "per decode step host overhead of an optimised engine (scheduling, sampling, launch): ~0.5-2 ms (TRT-"
     "LLM in-flight batching, vLLM v0.6 multi-step blog)"),
    ("train_elementwise_elems", 75.0, 0.5, True,
     "16-bit elements per token, layer and hidden unit that training's element-wise kernels read and write "
     "(forward: 2 RMSNorms ~4h, 2 residual adds ~6h, SwiGLU ~10h, rotary ~4h = ~25h; backward ~2x; "
     "Korthikanti et al. 2022 sec. 4 activation inventory); bandwidth-bound, so slower-memory GPUs (L40S, "
     "GeForce) lose more time to them; torch.compile / fused kernels lower it"),
    ("moe_expert_eff", 0.6, 0.4, True,
     "routed-expert GEMM time relative to a dense GEMM of the same FLOPs in MoE training: grouped GEMMs on "
     "uneven per-expert token counts, token permute/unpermute, router and load imbalance (Megatron-Core MoE "
     "report 2025: Mixtral/DeepSeek-V3 reach 0.5-0.7x the MFU of dense models of equal active size; "
     "DeepSeek-V3 report sec. 3.2 balance losses leave ~10% imbalance)"),
    ("wq_bw_eff", 0.75, 0.3, True,
     "weight-only int4/int8 decode kernels (AWQ/GPTQ/exllama, Marlin, llama.cpp k-quants) dequantise in "
     "registers and reach ~2.5-3.9x the fp16 GEMV speed at 4 bits instead of the ideal ~3.6-4x: ~0.7-0.95 "
     "of the bandwidth 16-bit kernels reach (Frantar et al. 2024 'MARLIN' fig. 1; Lin et al. 2023 AWQ "
     "TinyChat table; llama.cpp CUDA benchmarks)"),
    ("wq_gemm_eff", 0.7, 0.3, True,
     "weight-only int4 GEMMs at large batch (compute bound) run below fp16 cuBLAS: dequantisation adds "
     "ALU work per tile; Marlin stays near fp16 speed up to batch ~128, AWQ/GPTQ GEMM kernels fall to "
     "0.5-0.8x (Frantar et al. 2024 fig. 1; vLLM quantisation docs)"),
    ("qlora_dequant_bw_eff", 0.35, 0.5, False,
     "share of peak memory bandwidth at which QLoRA's per-matmul dequantisation of the frozen NF4 base runs "
     "(bitsandbytes dequantize_4bit: a 16-entry code-book lookup per element plus the block absmax, well "
     "below copy bandwidth; QLORA_DEQUANT_PASSES in the training module): set so that a 7B QLoRA at a few "
     "hundred tokens per micro-batch on an A100 takes ~1.4x the LoRA time, as measured with litgpt by "
     "S. Raschka, 'Practical Tips for Finetuning LLMs Using LoRA' (2023): QLoRA 'saves 33% memory at the "
     "cost of a 39% increase in runtime'; long micro-batches amortise it (per weight, not per token)"),
    # --- communication and pipelining
    ("link_eff", 0.8, 0.2, False,
     "NCCL bus bandwidth / link rate: nccl-tests all-reduce ~230/300 GB/s (DGX A100), ~360/450 (DGX H100)"),
    ("tp_overlap", 0.1, 0.5, True,
     "share of tensor-parallel communication hidden behind GEMMs in training: Megatron-LM (2022) runs the "
     "TP all-reduces/all-gathers synchronously (Korthikanti 2022 sec 4.2.2), a little overlaps through "
     "async launches"),
    ("tp_overlap_nemo", 0.6, 0.5, True,
     "NeMo enables Transformer Engine userbuffers TP-communication overlap (split GEMM + all-gather / "
     "reduce-scatter pipelining) in its GPT and Llama recipes (NeMo performance docs, 'Communication "
     "overlap')"),
    ("tp_overlap_xla", 0.6, 0.5, True,
     "XLA on TPU (JAX/MaxText, the stack of an unstated TPU run) decomposes tensor-parallel all-gathers and "
     "reduce-scatters into per-shard collective-permutes pipelined with the dependent matmul chunks "
     "('collective matmul': Wang et al. 2023, 'Overlap communication with dependent computation via "
     "decomposition in large deep learning models', ASPLOS; MaxText ici_tensor_parallelism uses it via "
     "GSPMD), the same split-GEMM overlap as Transformer Engine userbuffers (tp_overlap_nemo)"),
    ("ep_overlap", 0.8, 0.3, False,
     "share of the step's compute behind which stacks that overlap it hide the expert-parallel all-to-all: "
     "DeepSeek-V3 DualPipe pairs forward and backward chunks so the all-to-all is hidden at a ~1:1 "
     "computation-to-communication ratio, with 20 of 132 SMs given to communication (DeepSeek-V3 report "
     "sec 3.2.1-3.2.2); Megatron-Core's EP A2A overlap (--overlap-moe-expert-parallel-comm) follows it"),
    ("dp_overlap", 0.8, 0.3, False,
     "share of the last micro-batch's backward that the gradient reduce can hide under (PyTorch DDP "
     "bucketing, Li et al. 2020; Megatron distributed optimizer overlap)"),
    ("pp_interleave", 4.0, 0.5, False,
     "virtual pipeline stages per GPU in Megatron/NeMo interleaved 1F1B, bubble (p-1)/(v m) (Narayanan et "
     "al. 2021 sec 2.2.2); capped at layers per stage"),
    # --- CPU offload of the optimizer (ZeRO-Offload, FSDP CPUOffload): host work per step
    ("cpu_adam_gparams_per_s", 4.0, 0.5, False,
     "billions of parameters per second one host's CPUs update with a vectorised fp32 Adam step "
     "(DeepSpeed CPU-Adam): 0.22 s for 1B parameters, 2.57 s for 10B on a 2-socket Xeon host of a DGX-2 "
     "(Ren et al. 2021 'ZeRO-Offload', Table 3); shared by the GPUs of the node"),
    # --- run-level overheads (named, sourced, not fitted to one row)
    ("mlperf_eval_overhead", 1.15, 0.15, False,
     "MLPerf Training time-to-train includes the benchmark's forward-only evaluations at fixed intervals "
     "(llama2_70b_lora: 173 eval samples every 384 train samples ~20%; gpt3: ~10-15%) (MLPerf Training "
     "rules and reference configs); used for benchmarks without a schedule in MLPERF_EVAL_RULES, which "
     "derive theirs from the rules"),
    ("failure_rate_per_gpu_hour", 1.97e-05, 0.5, False,
     "419 unexpected interruptions in 54 days on 16,384 H100 (Llama 3 Herd of Models, sec 3.3.4)"),
    ("failure_cost_h", 0.3, 0.5, False,
     "lost time per interruption (restart + lost work) so that the Llama 3 run keeps its reported >90% "
     "effective training time (sec 3.3.4)"),
    # --- software stacks: multipliers on the reference stack's efficiency (train: Megatron/NeMo = 1;
    #     infer: TensorRT-LLM = 1) and per-step host-overhead multipliers
    ("train_stack_megatron_deepspeed", 0.85, 0.4, True,
     "Megatron-DeepSpeed (3D parallel: Megatron TP/PP kernels + DeepSpeed ZeRO-1): BLOOM-176B reached "
     "156 TFLOP/s per A100 (50% MFU) vs Megatron-LM's 52% (Le Scao et al. 2022 BLOOM paper sec. 3.5); "
     "used for a DeepSpeed case that states tensor or pipeline parallelism"),
    ("train_stack_jax", 0.95, 0.3, True,
     "JAX/MaxText (XLA, GSPMD): MaxText is Google's reference LLM trainer, tuned like Megatron on GPUs/TPUs "
     "(MaxText README MFU table)"),
    ("train_stack_deepspeed", 0.45, 0.4, True,
     "DeepSpeed + HF transformers runs reach ~25-35% MFU vs 50-60% for Megatron/NeMo on the same GPUs "
     "(BLOOM/OPT/HF reports; MLPerf v4.0 llama2_70b_lora DeepSpeed vs NeMo submissions)"),
    ("train_stack_pytorch", 0.6, 0.4, True,
     "plain PyTorch FSDP (torchtitan) reaches ~35-40% bf16 MFU on H100 vs ~50%+ Megatron (torchtitan "
     "paper, Liang et al. 2024)"),
    ("train_stack_torchtune", 0.6, 0.4, True,
     "torchtune recipes (PyTorch FSDP2, torch.compile, fused AdamW/8-bit optimizers): as plain PyTorch "
     "(torchtitan, Liang et al. 2024)"),
    ("train_stack_unsloth", 0.8, 0.4, True,
     "unsloth: hand-written Triton kernels for LoRA/QLoRA backward and fused cross entropy, 1.5-2x HF "
     "PEFT speed (unsloth README benchmarks)"),
    ("train_stack_axolotl", 0.5, 0.4, True,
     "axolotl: HF Trainer/PEFT with flash attention and sample packing by default (axolotl docs)"),
    ("train_stack_transformers", 0.55, 0.4, True,
     "HF Trainer / PEFT in eager PyTorch without fused kernels: as DeepSpeed-HF above, whose ~25-35% MFU "
     "against Megatron/NeMo's 50-60% is a ratio of 0.45-0.7, 30/55 = 0.55 at the midpoints (was 0.45, the "
     "low end). Attention is not the loss: transformers runs torch SDPA (flash / memory-efficient kernels) "
     "by default from v4.36 (`attn_implementation` defaults to 'sdpa' with torch >= 2.1.1, HF docs 'GPU "
     "inference'); the loss is the unfused element-wise kernels (LlamaRMSNorm upcasts to fp32 in 6 "
     "kernels, rotary in 5, SiLU x up, residual adds: ~75h elements per token and layer forward in "
     "modeling_llama.py vs ~25h fused, train_elementwise_elems) and, with PEFT LoRA, each adapter's "
     "separate GEMMs, scaling and add"),
    ("train_stack_paddle", 0.85, 0.4, True,
     "PaddleNLP with flash attention and fused kernels: close to Megatron (FlagPerf reports)"),
    ("train_stack_vendor_build", 0.9, 0.3, True,
     "PyTorch-family stacks (pytorch, deepspeed, megatron_deepspeed, transformers) on AMD Instinct and Intel "
     "Gaudi: these accelerators have no NeMo/Megatron-Core-TE reference, so their vendors put the tuned "
     "kernels into their own PyTorch/DeepSpeed builds (Intel Gaudi: every PyTorch model runs through the "
     "graph compiler in lazy mode with fused SDPA/RoPE/RMSNorm in Optimum-Habana and the Megatron-DeepSpeed "
     "fork, Intel Gaudi docs 'PyTorch Gaudi integration' and 'Optimization guide'; AMD: hipBLASLt-tuned "
     "GEMMs and the ROCm TransformerEngine fork in the ROCm PyTorch training containers and AMD's MLPerf "
     "PyTorch implementation, AMD ROCm docs 'Training a model with PyTorch for ROCm'). AMD's MLPerf Training "
     "v5.0 llama2_70b_lora MI325X x8 result sits within ~10% of H200 x8 NeMo submissions (AMD blog on its "
     "first MLPerf Training submission, June 2025), i.e. close to the Megatron reference, not at the "
     "eager-PyTorch gap the NVIDIA-derived pytorch/deepspeed priors describe"),
    ("train_stack_unknown", 0.9, 0.4, True,
     "unstated stack: published large runs are tuned close to the Megatron reference (LLaMA, Llama 3 "
     "papers); wider interval"),
    ("infer_stack_vllm", 0.9, 0.3, True,
     "vLLM vs TensorRT-LLM throughput on H100: 0.7-0.95x (vLLM v0.6 and NVIDIA benchmarks, 2024)"),
    ("infer_stack_sglang", 0.9, 0.3, True,
     "SGLang v0.3 vs TRT-LLM: parity to 0.9x (LMSYS blog, 2024)"),
    ("infer_stack_tgi", 0.75, 0.4, True,
     "TGI v1-2: below vLLM in throughput (vLLM and TGI benchmark blogs, 2023-24)"),
    ("infer_stack_transformers", 0.75, 0.3, True,
     "HF generate in eager PyTorch, compute-bound phases (prefill; decode's host-bound python loop is "
     "overhead_mult_transformers, its weight reads the shared eta_bw): the GEMMs are the same cuBLAS calls "
     "an engine makes and attention is torch SDPA (flash kernels; the default attn_implementation from "
     "transformers v4.36 with torch >= 2.1.1, HF docs 'GPU inference'), so the loss is the unfused "
     "element-wise kernels of modeling_llama.py: LlamaRMSNorm (fp32 upcast, pow, mean, rsqrt-mul, downcast, "
     "weight-mul: ~36h bytes, twice), apply_rotary_pos_emb (q*cos, rotate_half's neg + cat, *sin, add: "
     "~20 bytes per q/k element), SiLU(gate) x up (~10 bytes per FFN unit), two residual adds (~12h) and the "
     "attention output's contiguous copy: ~150h bytes per token and layer against 2 x 13h^2 GEMM FLOPs "
     "(Llama-3-8B, h = 4096). At ~0.75 of the dense peak and 0.8 of HBM bandwidth that is 0.28 (H200) to "
     "0.40 (H100) of the GEMM time: 1/1.28-1/1.40 = 0.71-0.78; narrower models lose more. (Was 0.4, a "
     "decode-loop figure that the host-overhead multiplier already carries.)"),
    ("infer_stack_llamacpp", 0.6, 0.5, True,
     "llama.cpp CUDA backend: ~50-70% of peak bandwidth at batch 1 (llama.cpp GPU benchmarks)"),
    ("infer_stack_unknown", 0.85, 0.4, True,
     "unstated engine: between vLLM (0.9) and TGI (0.75), nearer vLLM, the most deployed open engine"),
    ("overhead_mult_vllm", 1.5, 0.5, False,
     "python scheduler; v0.6 multi-step scheduling cut it to ~1-2 ms per step (vLLM v0.6 blog, Sept 2024)"),
    ("overhead_mult_sglang", 1.2, 0.5, False,
     "python scheduler, overlapped"),
    ("overhead_mult_tgi", 3.0, 0.5, False,
     "python router + shards (TGI arch.)"),
    ("overhead_mult_transformers", 20.0, 0.7, True,
     "eager PyTorch: one python forward per token, ~20-30 ms for 7B at batch 1 (HF blog benchmarks); fitted "
     "(like a stack factor, only with enough cases of the stack) because that host-bound step is the stack's "
     "own: left fixed, its decode rows would pull the shared bandwidth efficiency and step overhead"),
    ("overhead_mult_llamacpp", 1.5, 0.5, False,
     "C++ loop, graph rebuilt per step"),
    ("overhead_mult_unknown", 2.0, 0.5, False,
     "unstated engine: between vLLM (1.5) and TGI (3), the usual serving stacks"),
)
# fmt: on

PRIORS: Mapping[str, Prior] = MappingProxyType(
    {n: Prior(value=v, log_sd=sd, fit=f, source=src) for n, v, sd, f, src in _PRIOR_TABLE}
)


@dataclass(frozen=True, slots=True, kw_only=True)
class MlperfEvalRule:
    """An MLPerf Training benchmark's evaluation schedule in the rounds ``first_round``..``last_round``
    (the rules' "evaluation frequency" and "evaluation thoroughness" columns): every ``every_samples``
    training sequences the run evaluates ``eval_samples`` sequences forward-only, skipping the first
    ``skip_per_gbs x GBS + skip_const`` evaluations (rounded down); the evaluations run inside the timed
    region."""

    benchmark: str  # the MLPerf benchmark name (e.g. llama31_405b)
    model: str  # the benchmark's model id (gpufleet registry)
    task: str  # the benchmark's training task
    every_samples: float  # training sequences between evaluations [sequences]
    eval_samples: float  # sequences of one evaluation [sequences]
    first_round: float  # first MLPerf Training round with this schedule (e.g. 5.0)
    last_round: float = math.inf  # last round with it (inclusive)
    skip_per_gbs: float = 0.0  # evaluations skipped per sequence of global batch [evaluations]
    skip_const: float = 0.0  # evaluations skipped in addition [evaluations]
    source: str = ""


#: Where the numbers below were checked: the MLCommons ``mlperf-logging`` package (PyPI, v4.1.68), whose
#: compliance checker fixes ``eval_samples`` per benchmark and round (compliance_checker/training_X/
#: closed_BENCH.yaml) and whose reference convergence points (rcp_checker/training_X/rcps_BENCH.json) are all
#: multiples of the evaluation interval (a run can only converge at an evaluation).
_MLPERF_LOGGING = "mlperf-logging 4.1.68 (PyPI)"

#: evaluation schedules of the MLPerf Training LLM benchmarks (MLCommons "MLPerf Training Rules", benchmark
#: table, columns "Evaluation frequency" / "Evaluation thoroughness"); time to train includes them. A case
#: names its round in its source ("MLPerf Training v5.0", "training_results_v5.0"); without one, the newest
#: schedule applies. Benchmarks not listed here take the flat ``mlperf_eval_overhead`` prior.
MLPERF_EVAL_RULES: tuple[MlperfEvalRule, ...] = (
    MlperfEvalRule(
        benchmark="llama31_405b", model="llama-3.1-405b", task="pretrain", every_samples=46080.0,
        eval_samples=5760.0, first_round=5.0, last_round=5.0,
        source="MLPerf Training rules v5.0, llama31_405b: evaluate every 46,080 sequences on 5,760 "
        "sequences of 8,192 tokens (47,185,920 tokens) of the C4 validation split; " + _MLPERF_LOGGING
        + ": training_5.0.0 eval_samples == 5760, rcps_llama31_405b.json convergence points are multiples "
        "of 46,080 (rcp_checker subtracts one 46,080 interval for this benchmark from v5.0)",
    ),
    MlperfEvalRule(
        benchmark="llama31_405b", model="llama-3.1-405b", task="pretrain", every_samples=18432.0,
        eval_samples=5760.0, first_round=5.1,
        source=_MLPERF_LOGGING + ": training_5.1.0 and 6.0.0 eval_samples == 5760; rcps_llama31_405b.json "
        "convergence points of v5.1/v6.0 are multiples of 18,432 sequences (the interval shrank from 46,080)",
    ),
    MlperfEvalRule(
        benchmark="llama31_8b", model="llama-3.1-8b", task="pretrain", every_samples=12288.0,
        eval_samples=1024.0, first_round=5.1,
        source=_MLPERF_LOGGING + ": training_5.1.0/6.0.0 closed_llama31_8b.yaml eval_samples == 1024 "
        "sequences of 8,192 tokens; rcps_llama31_8b.json convergence points are multiples of 12,288 "
        "sequences",
    ),
    MlperfEvalRule(
        benchmark="gpt_oss_20b", model="gpt-oss-20b", task="pretrain", every_samples=12288.0,
        eval_samples=1024.0, first_round=6.0,
        source=_MLPERF_LOGGING + ": training_6.0.0 closed_gpt_oss_20b.yaml eval_samples == 1024 sequences "
        "of 8,192 tokens (pre-training from step 0, max_steps 1.2M); rcps_gpt_oss_20b.json convergence "
        "points are multiples of 12,288 sequences",
    ),
    MlperfEvalRule(
        benchmark="gpt3", model="gpt3-175b", task="pretrain", every_samples=24576.0,
        eval_samples=11590004.0 / 2048.0, first_round=3.0,
        source="MLPerf Training rules v3.0-v4.1, gpt3: evaluate every 24,576 sequences of 2,048 tokens "
        "on the 11,590,004-token C4 validation subset; mlcommons/training large_language_model/"
        "megatron-lm README; " + _MLPERF_LOGGING + ": rcps_gpt3.json convergence points (in tokens) are "
        "multiples of 24,576 x 2,048",
    ),
    MlperfEvalRule(
        benchmark="llama2_70b_lora", model="llama-2-70b", task="lora", every_samples=384.0,
        eval_samples=173.0, first_round=4.0, skip_per_gbs=0.125, skip_const=2.0,
        source="MLPerf Training rules v4.0-v6.0, llama2_70b_lora: evaluate every 384 sequences on the "
        "full GovReport (SCROLLS) validation set of 173 sequences, skipping the first "
        "FLOOR(0.125 x global_batch_size + 2) evaluations; mlcommons/training llama2_70b_lora README; "
        + _MLPERF_LOGGING + ": rcps_llama2_70b_lora.json convergence points (v5.0-v6.0) are multiples of 384",
    ),
)  # fmt: skip

#: training stacks taken as the reference (multiplier 1): Megatron-LM and NeMo on Megatron-Core
TRAIN_REFERENCE_STACKS = ("nemo", "megatron")
#: inference stack taken as the reference (multiplier 1)
INFER_REFERENCE_STACKS = ("trtllm",)


def prior_params() -> dict[str, float]:
    """Every parameter at its prior value."""
    return {k: p.value for k, p in PRIORS.items()}


#: accelerator vendors whose training stacks are vendor builds of PyTorch/DeepSpeed with their tuned kernels
#: (no NeMo/Megatron-Core reference exists there): source at ``train_stack_vendor_build``
VENDOR_BUILD_VENDORS: tuple[str, ...] = ("AMD", "Intel")
#: the PyTorch-family training stacks that are vendor builds on those accelerators (recipe libraries such as
#: torchtune, unsloth, axolotl keep their own factor)
VENDOR_BUILD_STACKS: tuple[str, ...] = ("pytorch", "deepspeed", "megatron_deepspeed", "transformers")
#: vendors on which Hugging Face ``transformers`` is not a vendor build: on Gaudi it is Optimum-Habana (the
#: ``transformers`` alias: Trainer subclass with the graph compiler, fused SDPA/RoPE/RMSNorm, Intel docs), but
#: on AMD Instinct the HF Trainer/PEFT runs the same eager PyTorch modules as on NVIDIA (AMD's tuned training
#: code is its PyTorch/Megatron containers and MLPerf implementation, not transformers), so it keeps the
#: ``train_stack_transformers`` factor there
EAGER_TRANSFORMERS_VENDORS: tuple[str, ...] = ("AMD",)


def stack_param(kind: str, software: str | None, vendor: str | None = None) -> str | None:
    """Name of the stack multiplier for ``kind`` (``train|infer``) and ``software`` (None: reference).

    ``vendor`` (the accelerator's vendor) matters for training only: PyTorch-family stacks on AMD and Intel
    accelerators are the vendors' tuned builds (``train_stack_vendor_build``)."""
    ref = TRAIN_REFERENCE_STACKS if kind == "train" else INFER_REFERENCE_STACKS
    sw = (software or "unknown").lower()
    if sw in ref:
        return None
    eager_hf = sw == "transformers" and vendor in EAGER_TRANSFORMERS_VENDORS
    if kind == "train" and vendor in VENDOR_BUILD_VENDORS and sw in VENDOR_BUILD_STACKS and not eager_hf:
        return "train_stack_vendor_build"
    name = f"{kind}_stack_{sw}"
    return name if name in PRIORS else f"{kind}_stack_unknown"


__all__ = [
    "CITED_GEMM_WIDTH_FACTOR",
    "EAGER_TRANSFORMERS_VENDORS",
    "INFER_REFERENCE_STACKS",
    "MLPERF_EVAL_RULES",
    "PRIORS",
    "TRAIN_REFERENCE_STACKS",
    "VENDOR_BUILD_STACKS",
    "VENDOR_BUILD_VENDORS",
    "MlperfEvalRule",
    "Prior",
    "prior_params",
    "stack_param",
]
