"""Training speed (step time, tokens/s, MFU, time to train) from FLOPs, bytes and links (docs/performance.md).

Training (per step): compute at the precision's dense peak x eta x w(h) x train_eff x stack factor, exposed
tensor-parallel and expert all-to-all time, pipeline bubble ``(p-1)/(v m)``, and the data-parallel gradient
reduce (or ZeRO-3 gathers) beyond what overlaps the backward.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from gpufleet.catalog.specs import AcceleratorSpec
from gpufleet.errors import InputError, UnsupportedError
from gpufleet.estimate import compute as cx
from gpufleet.estimate.comms import (
    Link,
    NodeNetwork,
    all_gather_s,
    all_reduce_s,
    all_to_all_nodes_s,
    group_link,
    intra_node_link,
    network_note,
    pcie_gb_per_s,
)
from gpufleet.estimate.memory import MemoryEstimate, estimate_memory, optimizer_bytes_per_param
from gpufleet.estimate.moe_serving import ep_rank_imbalance, expert_width_factor
from gpufleet.estimate.parallelism import (
    LayoutKey,
    default_ep,
    fsdp_only,
    layout_memory,
    training_layout_keys,
)
from gpufleet.estimate.priors import stack_param
from gpufleet.estimate.profile import CalibrationProfile, make_interval
from gpufleet.estimate.rates import (
    ACT_BYTES,
    Rates,
    _widen,
    positive_float,
    positive_int,
    resolve_inputs,
    resolve_rates,
    scaleup_domain_gpus,
    software_arg,
    tp_link,
    width_factor,
)
from gpufleet.estimate.recipes import TrainingOptions
from gpufleet.estimate.types import INT8_TRAINING_ARCHS, TRAINING_TASKS, Interval, adapter_task
from gpufleet.models import count_params, lora_params
from gpufleet.models.arch import ModelArch
from gpufleet.models.params import ffn_params
from gpufleet.precision import bytes_per_element, check_precision
from gpufleet.units import GB, GIGA, SECONDS_PER_HOUR
from gpufleet.validation import check_train_tokens, checked_output, context_note

#: bytes per gradient element in the data-parallel reduce (Megatron default: fp32 main grads)
GRAD_BYTES = 4.0
#: element-wise traffic of a step with full recompute relative to without: the forward's ~25h elements per
#: token and layer (2 RMSNorms, 2 residual adds, SwiGLU, rotary) of the ~75h forward + backward are replayed
#: (Korthikanti et al. 2022 sec. 4-5; the inventory of ``train_elementwise_elems`` in the priors)
FULL_RECOMPUTE_ELEMENTWISE = 1.0 + 25.0 / 75.0
#: bytes per parameter all-gathered after the optimizer step (bf16 weights; fp8 training keeps bf16 ones)
PARAM_BYTES = 2.0
#: bytes per trainable parameter each way over PCIe per step with the optimizer offloaded to the host:
#: 16-bit gradients device -> host, updated 16-bit parameters host -> device (Ren et al. 2021 "ZeRO-Offload"
#: sec. 4.1, the offload data flow)
OFFLOAD_BYTES_PER_PARAM = 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingEstimate:
    """Training speed at a ``tp x pp x dp`` layout; performance fields None when it does not fit."""

    fits: bool
    memory: MemoryEstimate
    tp: int
    pp: int
    dp: int
    step_time_s: Interval | None  # one optimizer step of global_batch x seq_len tokens [s]
    tokens_per_s_per_gpu: Interval | None  # [tokens/s/GPU]
    tokens_per_s: Interval | None  # whole system [tokens/s]
    mfu: float | None  # model FLOPs / (time x GPUs x dense peak of the stated precision) [fraction]
    time_to_train_s: Interval | None  # train_tokens at this rate, with expected failure restarts [s]
    gpu_hours: Interval | None  # time_to_train x GPUs [GPU h]
    notes: tuple[str, ...]
    zero_stage: int = 1
    recompute: str = "selective"
    #: MoE expert-parallel degree inside the DP ranks (1 for dense models): a practitioner's layout names it
    #: (Megatron-LM --expert-model-parallel-size; NeMo Mixtral recipes EP 8)
    ep: int = 1
    #: the optimizer the memory and the optimizer step were sized for
    optimizer: str = "adamw"
    #: the fine-tuning recipe preset applied (recipes.RECIPES; None: the estimator's generic defaults)
    recipe: str | None = None


#: stacks that run Megatron's interleaved pipeline schedule (others: plain 1F1B, v = 1)
INTERLEAVED_STACKS = frozenset({"nemo", "megatron", "unknown"})
#: stacks that overlap the expert-parallel all-to-all with another micro-batch's compute: Megatron-Core MoE
#: (EP A2A overlap), NeMo recipes on it, and tuned published runs (DeepSeek-V3 DualPipe); others
#: (DeepSpeed-MoE, plain PyTorch) run it in line and hide only what async launches give, like TP traffic
EP_OVERLAP_STACKS = frozenset({"nemo", "megatron", "unknown"})
#: stacks whose EP all-to-all overlap is Megatron-Core's combined-1F1B schedule, which pairs the forward of
#: one model chunk with the backward of another: it exists without pipelining or with the interleaved
#: (virtual-stage) schedule only; under plain 1F1B (pp > 1, one virtual stage) the dispatch and combine run
#: in line (Megatron-Core MoE README, "EP A2A overlap": ``--overlap-moe-expert-parallel-comm`` requires
#: VPP when PP > 1). DeepSeek's DualPipe (unknown: tuned published runs) pairs chunks without interleaving.
COMBINED_1F1B_STACKS = frozenset({"nemo", "megatron"})
#: stacks whose distributed optimizer all-gathers the updated parameters under the next step's forward
#: (Megatron-Core ``--overlap-param-gather``: a forward pre-hook waits for each bucket's all-gather just
#: before its first use, so the gather of later layers runs under the forward of earlier ones; Megatron-LM
#: docs "Distributed Optimizer"; on in NeMo's pre-training recipes and MLPerf configs); elsewhere the gather
#: follows the optimizer step and shares the backward's window with the gradient reduce
PARAM_GATHER_OVERLAP_STACKS = frozenset({"nemo", "megatron"})
#: QLoRA's frozen base is dequantised whole before each matmul that uses it, not per token: bitsandbytes
#: ``MatMul4Bit`` calls ``dequantize_4bit`` on the weight in the forward and again for the activation-gradient
#: GEMM of the backward, then runs a 16-bit matmul (bitsandbytes ``autograd/_functions.py``; Dettmers et al.
#: 2023 sec. 3 "QLoRA": "we dequantize the storage data type to the computation data type to perform the
#: forward and backward pass"; torchao's ``NF4Tensor`` in torchtune does the same). Each pass reads the
#: packed weight and writes a 16-bit copy: a per-weight, per-micro-batch memory cost that long micro-batches
#: amortise. Passes per micro-batch: forward and backward (+1 with full recompute, the replayed forward).
QLORA_DEQUANT_PASSES = 2
#: bytes written per dequantised weight: the 16-bit copy the matmul then reads (bitsandbytes, as above)
QLORA_DEQUANT_OUT_BYTES = 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class StepBreakdown:
    """Parts of one training step on one GPU [s]."""

    compute_s: float
    tp_comm_exposed_s: float
    ep_comm_s: float
    bubble_fraction: float
    dp_comm_exposed_s: float
    offload_s: float = 0.0  # exposed host work of an offloaded optimizer: CPU Adam + PCIe copies
    optimizer_s: float = 0.0  # the optimizer step streaming weights, gradients and states through memory

    @property
    def step_s(self) -> float:
        return (
            (self.compute_s + self.tp_comm_exposed_s + self.ep_comm_s) * (1.0 + self.bubble_fraction)
            + self.dp_comm_exposed_s
            + self.offload_s
            + self.optimizer_s
        )


def optimizer_step_bytes_per_param(optimizer: str, precision: str, master_weights: bool) -> float:
    """Memory traffic of one optimizer step per trainable parameter [bytes]: it reads the 16-bit weights,
    the gradients and the states (fp32 master copy and moments) and writes the weights and the states back,
    ``2 W + G + 2 S`` (element-wise update, bandwidth bound: PyTorch ``_foreach``/fused AdamW and
    bitsandbytes 8-bit optimizers run one pass over these tensors; Dettmers et al. 2022 sec. 2).
    Mixed-precision AdamW: 2x2 + 2 + 2x12 = 30 B; pure-bf16 8-bit Adam: 2x2 + 2 + 2x2 = 10 B."""
    b = optimizer_bytes_per_param(optimizer, precision, master_weights=master_weights)
    return 2.0 * b.weights + b.gradients + 2.0 * b.optimizer_states


def train_gemm_eta(spec: AcceleratorSpec, rates: Rates, profile: CalibrationProfile) -> float:
    """Share of the compute precision's dense peak that training GEMMs reach.

    ``rates.eta`` (the generation's 16-bit share x ``fp8_eff`` per doubling of the peak), except fp8/fp4
    training on Blackwell: there ``fp8_train_blackwell_rel`` x that, never above the 16-bit share (a
    low-precision GEMM never keeps more of its peak than a 16-bit one). Hopper's fp8 discount carries the
    split (fp32-promoted) accumulation Transformer Engine runs its dgrad and wgrad fp8 GEMMs with; Blackwell's
    tensor cores accumulate in fp32 and apply MXFP8 block scales in the MMA, so its training GEMMs keep more
    (priors module). Bound: NVIDIA's 405B fp8 run on GB200 (2053 model TFLOP/s/GPU) exceeds the GEMM rate
    the Hopper discount gives (tests/estimate/test_blackwell_training.py)."""
    if spec.architecture.startswith("Blackwell") and rates.peak_flops > rates.peak16_flops:
        return min(rates.eta16, rates.eta * profile.param("fp8_train_blackwell_rel"))
    return rates.eta


def qlora_dequant_s(
    model: ModelArch, rates: Rates, profile: CalibrationProfile, *, tokens_per_micro: float,
    micro_batches: int, shards: int, recompute: str,
) -> float:  # fmt: skip
    """Time per step one GPU spends dequantising a QLoRA job's frozen base [s].

    Every micro-batch dequantises each quantised weight it uses :data:`QLORA_DEQUANT_PASSES` times (+1 with
    full recompute), reading ``rates.weight_bytes`` (0.5 B for NF4, 1 B for an 8-bit base) and writing a
    16-bit copy (:data:`QLORA_DEQUANT_OUT_BYTES`), at ``qlora_dequant_bw_eff`` of the peak bandwidth (the
    priors module: a look-up-table kernel, below copy speed). The quantised
    weights are the transformer blocks' linear layers; the LM head and embeddings stay 16-bit (transformers'
    bitsandbytes integration keeps the output embedding unquantised, ``get_keys_to_not_convert``); a MoE
    layer dequantises only the experts its ``tokens_per_micro`` tokens reach
    (:func:`gpufleet.estimate.compute.decode_weight_params`). ``shards``: the GPUs the layers are split
    over (tensor x pipeline parallel); FSDP/ZeRO-3 gathers the whole base on every rank, so data
    parallelism does not divide it.

    Hand check: Llama 3.1 8B (6.98e9 block weights), one micro-batch, no recompute, on an RTX 4090
    (1008 GB/s at 0.35): 2 x 6.98e9 x 2.516 B / 353 GB/s = 0.0995 s per step, ~6 % of a 2 x 2048-token LoRA
    step (~1.6 s) but ~45 % of a 512-token one (~0.2 s), where the old flat 0.65 speed factor sat.
    """
    quantised = cx.decode_weight_params(model, tokens_per_micro) - cx.model_shape(model).lm_head_params
    passes = QLORA_DEQUANT_PASSES + (1 if recompute == "full" else 0)
    per_pass = quantised / max(shards, 1) * (rates.weight_bytes + QLORA_DEQUANT_OUT_BYTES)
    bw = rates.mem_bw_bytes_per_s * profile.param("qlora_dequant_bw_eff")
    return micro_batches * passes * per_pass / bw


def offload_step_s(
    *, trainable_per_gpu: float, shard: int, gpus_in_node: int, spec: AcceleratorSpec, backward_s: float,
    profile: CalibrationProfile,
) -> float:  # fmt: skip
    """Exposed time per step of an optimizer offloaded to the host (ZeRO-Offload, FSDP ``CPUOffload``).

    Each GPU owns ``trainable_per_gpu / shard`` parameters of the optimizer (ZeRO partitions them over the
    data-parallel ranks): their 16-bit gradients go device -> host during the backward (hidden behind up to
    ``dp_overlap`` of it), the host's CPUs run the fp32 Adam step for every GPU of the node
    (``cpu_adam_gparams_per_s``, shared), and the updated 16-bit parameters come back before the next forward
    (Ren et al. 2021 "ZeRO-Offload", sec. 4-5: CPU Adam and the parameter copy are on the critical path
    without the one-step delayed update). PCIe at ``link_eff`` of the generation's x16 rate.
    """
    part = trainable_per_gpu / max(shard, 1)
    pcie = pcie_gb_per_s(spec) * GB * profile.param("link_eff")
    copy_s = part * OFFLOAD_BYTES_PER_PARAM / pcie
    cpu_s = part * max(gpus_in_node, 1) / (profile.param("cpu_adam_gparams_per_s") * GIGA)
    d2h_exposed = max(0.0, copy_s - profile.param("dp_overlap") * backward_s)
    return cpu_s + copy_s + d2h_exposed


#: bytes each attention score element moves per forward pass when the scores are materialised (no
#: FlashAttention): the QK^T GEMM writes it (2), the fused scale-mask-softmax reads and writes it (4), the
#: attention-times-V GEMM reads it (2); with attention dropout, the dropout kernel reads and writes it (4)
#: and stores its 1-byte mask. Megatron-LM's ``FusedScaleMaskSoftmax`` and ``CoreAttention`` (Korthikanti et
#: al. 2022 sec. 4.1: the 5as^2b activation term is these tensors)
UNFUSED_SCORE_FWD_BYTES = 8.0
UNFUSED_SCORE_DROPOUT_BYTES = 5.0


def unfused_score_bytes(model: ModelArch, recompute: str) -> float:
    """Memory traffic per attention score element in one training step without FlashAttention [bytes]: the
    forward (:data:`UNFUSED_SCORE_FWD_BYTES`, + dropout), a backward of twice the forward (each pass's
    gradient is read and written through the same kernels in reverse: softmax backward reads the probabilities
    and their gradient and writes the score gradient, two GEMMs read it), and the forward again under
    selective or full recompute (the attention core is replayed)."""
    fwd = UNFUSED_SCORE_FWD_BYTES + (UNFUSED_SCORE_DROPOUT_BYTES if model.dropout else 0.0)
    replay = fwd if recompute in ("selective", "full") else 0.0
    return 3.0 * fwd + replay


def train_width_factor(
    model: ModelArch, profile: CalibrationProfile, *, task: str, recompute: str, micro_tokens: float
) -> float:
    """GEMM efficiency of the step's matmuls from their shapes, ``1 / (1 + h0 x mean(1/K))`` [-].

    Dense models: every GEMM at its own reduction length ``K`` (:func:`compute.mean_inverse_reduction`:
    input width forward, output width for the activation gradients, the micro-batch's tokens for the weight
    gradients), with the per-tile fixed cost ``width_h0`` of :func:`gpufleet.estimate.rates.width_factor`,
    which is this with every ``K = h``. A narrow model still loses its forward GEMMs to short ``K`` but not
    its weight gradients, whose ``K`` is thousands of tokens, nor the FFN-down forward (``K`` = FFN width) or
    the LM head's activation gradient (``K`` = vocabulary). MoE models keep ``h / (h + h0)``: their routed
    GEMMs are rated relative to it (:func:`moe_serving.expert_width_factor`).
    """
    if model.is_moe:
        return width_factor(model, profile)
    inv_k = cx.mean_inverse_reduction(model, task=task, recompute=recompute, micro_tokens=micro_tokens)
    return 1.0 / (1.0 + profile.param("width_h0") * inv_k)


def training_step(
    *, model: ModelArch, spec: AcceleratorSpec, rates: Rates, task: str, tp: int, pp: int, dp: int, ep: int,
    global_batch: int, seq_len: int, zero_stage: int, recompute: str, software: str, gpus_per_node: int,
    profile: CalibrationProfile, cp: int = 1, network: NodeNetwork | None = None, cpu_offload: bool = False,
    virtual_stages: int | None = None, optimizer: str = "adamw", master_weights: bool = True,
    flash_attention: bool = True, moe_routing: str = "dropless", moe_capacity_factor: float | None = None,
) -> StepBreakdown:  # fmt: skip
    """Time of one optimizer step, split into its parts (module doc); ``cpu_offload`` adds the host work of
    an optimizer offloaded to CPU memory (:func:`offload_step_s`); ``virtual_stages``: model chunks per
    pipeline rank (None: the stack's default, :func:`pipeline_chunks`); ``flash_attention=False``: the
    attention scores are materialised (:func:`unfused_score_bytes`)."""
    n = tp * pp * dp * cp
    fl = cx.training_flops_per_token(model, task=task, seq_len=seq_len, recompute=recompute)
    tokens = float(global_batch * seq_len)
    stack_name = stack_param("train", software, spec.vendor)
    eff = profile.param("train_eff") * (profile.param(stack_name) if stack_name else 1.0)
    eta = train_gemm_eta(spec, rates, profile)
    # without pipelining one micro-batch holds the replica's whole batch (the memory model's sizing); with
    # it, micro-batches of one sequence: the weight gradients' reduction length (train_width_factor)
    micro_tokens = seq_len / cp * (max(global_batch // dp, 1) if pp == 1 else 1)
    width = train_width_factor(model, profile, task=task, recompute=recompute, micro_tokens=micro_tokens)
    t_mm = tokens * fl.hw_matmul / n / (rates.peak_flops * eta * width * eff)
    if model.is_moe:
        # routed-expert GEMMs run as grouped GEMMs on uneven token counts, with permute/unpermute and router
        # work around them: their share of the matmul time runs at ``moe_expert_eff`` (priors module), and
        # at the width factor of the expert width where experts are narrower than the model
        # (moe_serving.expert_width_factor; DeepSeek-V3 2048 vs 7168, as in serving)
        shape = cx.model_shape(model)
        routed = model.num_moe_layers * model.experts_per_token * shape.expert_params
        share = routed / shape.matmul_active_params
        routed_eff = profile.param("moe_expert_eff") * expert_width_factor(model, profile.param("width_h0"))
        # with expert parallelism every rank waits for the busiest one at the combine (moe_serving)
        imbalance = ep_rank_imbalance(
            seq_len / cp / tp * model.experts_per_token, ep, moe_routing, moe_capacity_factor
        )
        t_mm *= 1.0 - share + share * imbalance / routed_eff
    t_attn = tokens * fl.hw_attention / n / (rates.peak16_flops * rates.eta16 * eff)
    # element-wise work (norms, residual adds, activation functions, rotary) streams activations through
    # memory: ``train_elementwise_elems`` x h 16-bit elements per token and layer, forward + backward
    elem_bytes = profile.param("train_elementwise_elems") * model.hidden_size * ACT_BYTES * model.num_layers
    if recompute == "full":  # the replayed forward runs its element-wise kernels again: ~25h of the ~75h
        elem_bytes *= FULL_RECOMPUTE_ELEMENTWISE  # (train_elementwise_elems inventory)
    t_elem = tokens * elem_bytes / n / (rates.mem_bw_bytes_per_s * profile.param("eta_bw"))
    if not flash_attention:
        # materialised attention: every token's row of a x s scores per layer streams through memory
        # (per-GPU share: heads over TP, layers over PP, tokens over DP and CP, like the terms above), and
        # the recompute replays the attention core's FLOPs (selective: Korthikanti et al. 2022 sec. 4.3)
        per_token = model.num_layers * model.num_attention_heads * seq_len
        t_elem += (
            tokens
            * per_token
            * unfused_score_bytes(model, recompute)
            / n
            / (rates.mem_bw_bytes_per_s * profile.param("eta_bw"))
        )
        if recompute == "selective":
            t_attn *= 4.0 / 3.0  # forward (1 of the 3 attention passes) replayed
    micro = max(global_batch // dp, 1)  # micro-batches of one sequence per data-parallel replica
    t_dq = 0.0
    if task == "qlora":
        # without pipelining one micro-batch holds the replica's whole batch (the memory model's sizing);
        # with it, each of the ``micro`` one-sequence micro-batches dequantises the stage's weights again
        t_dq = qlora_dequant_s(
            model, rates, profile, tokens_per_micro=tokens / dp / (micro if pp > 1 else 1),
            micro_batches=micro if pp > 1 else 1, shards=tp * pp, recompute=recompute,
        )  # fmt: skip
    # the pipeline runs at its busiest stage's pace: whole layers per stage, so one holds ceil(L / pp)
    stages = stage_imbalance(model.num_layers, pp)
    compute = (t_mm + t_attn + t_elem + t_dq) * stages
    link_eff = profile.param("link_eff")
    tp_l = tp_link(spec, tp, gpus_per_node, profile)
    n_ar = 4 + (2 if recompute == "full" else 0)  # fwd 2 + bwd 2 per layer (Korthikanti 2022 sec. 4.2.2)
    local_seq = seq_len / cp
    per_ar = all_reduce_s(local_seq * model.hidden_size * ACT_BYTES, tp, tp_l)
    t_tp = n_ar * (model.num_layers / pp) * stages * micro * per_ar
    # pipeline point-to-point: every micro-batch sends its activations forward and their gradients backward
    # across each stage boundary, s x h per boundary split over the TP ranks (Narayanan et al. 2021 sec. 4.1,
    # scatter/gather optimisation); negligible over NVLink, not over the TCP network of small cloud VMs
    if pp > 1:
        pp_l = group_link(
            spec, group=pp, stride=tp, gpus_per_node=gpus_per_node, link_eff=link_eff, network=network,
            pairwise=True,
        )  # fmt: skip
        p2p = local_seq * model.hidden_size * ACT_BYTES / tp / (pp_l.bw_gb_per_s * GB) + pp_l.hop_latency_s
        t_tp += 2.0 * micro * p2p
    # context parallel (Megatron CP / ring attention): each rank gathers the sequence's K and V forward, and
    # again + reduce-scatters their gradients backward, overlapped with attention like TP traffic
    kv_dim = 2 * model.num_kv_heads * model.head_dim
    cp_l = group_link(
        spec, group=cp, stride=tp, gpus_per_node=gpus_per_node, link_eff=link_eff, network=network
    )
    t_cp = (
        3.0
        * (model.num_layers / pp)
        * stages
        * micro
        * all_gather_s(seq_len * kv_dim * ACT_BYTES / tp, cp, cp_l)
    )
    t_ep = 0.0
    if model.is_moe and ep > 1:
        # each TP rank routes its 1/tp of the tokens (sequence parallel) to k experts: dispatch + combine,
        # forward + backward; peers in the same node over NVLink, the others over the network, at once
        per = local_seq / tp * model.experts_per_token * model.hidden_size * ACT_BYTES
        per_node = max(1, gpus_per_node // tp)
        a2a = all_to_all_nodes_s(
            per, ep, per_node, intra_node_link(spec, link_eff), group_link(
                spec, group=ep, stride=tp, gpus_per_node=gpus_per_node, link_eff=link_eff, network=network
            ),
        )  # fmt: skip
        t_ep = 4.0 * (model.num_moe_layers / pp) * stages * micro * a2a * imbalance  # busiest rank receives
    tp_ov = (
        "tp_overlap_nemo"
        if software == "nemo"
        else "tp_overlap_xla"
        if fsdp_only(spec, software)
        else "tp_overlap"
    )
    exposed = 1.0 - min(profile.param(tp_ov), 1.0)
    v = pipeline_chunks(model, pp, software, profile, virtual_stages)
    if ep_overlapped(software, pp, v):
        # DualPipe / Megatron-Core EP A2A overlap: the all-to-all of one micro-batch runs under another's
        # compute, so only what exceeds ``ep_overlap`` x the compute stays exposed
        ep_exposed = max(0.0, t_ep - min(profile.param("ep_overlap"), 1.0) * compute)
    else:
        ep_exposed = exposed * t_ep
    t_offload = 0.0
    if cpu_offload:
        adapter = task in ("lora", "qlora")
        trainable = float(lora_params(model, 16) if adapter else count_params(model).total) / (tp * pp)
        t_offload = offload_step_s(
            trainable_per_gpu=trainable, shard=dp * cp if zero_stage >= 1 else 1,
            gpus_in_node=min(gpus_per_node, n), spec=spec, backward_s=compute * (2.0 / 3.0), profile=profile,
        )  # fmt: skip
    bubble = (pp - 1) / (max(v, 1.0) * micro)
    dp = dp * cp  # the gradient reduce runs over dp x cp ranks (Megatron CP)
    pc = count_params(model)
    # Routed-expert weights are split over ep ranks and their gradients reduce only across the dp / ep
    # expert-data-parallel replicas (Megatron-Core MoE; DeepSeek-V3 report sec. 3.2); the rest over all dp.
    routed = (
        float(model.num_moe_layers * model.num_experts * ffn_params(model, model.moe_intermediate_size))
        if model.is_moe
        else 0.0
    )
    ep_eff = ep if model.is_moe and ep > 1 and dp % ep == 0 else 1
    groups: list[tuple[float, int]]  # (parameters per GPU, ranks that reduce them)
    if task in ("lora", "qlora"):
        groups = [(float(lora_params(model, 16)) / (tp * pp), dp)]
    else:
        groups = [((pc.total - routed) / (tp * pp), dp), (routed / (tp * pp * ep_eff), dp // ep_eff)]
    overlap = profile.param("dp_overlap")
    t_opt = 0.0
    if not cpu_offload:  # an offloaded optimizer steps on the host (offload_step_s)
        # each GPU steps its parameters (routed experts split over EP), ZeRO: only its shard of them
        stepped = sum(p / (r if zero_stage >= 1 else 1) for p, r in groups if p > 0)
        # fp32 training keeps fp32 weights and gradients; every lower precision trains bf16 weights (fp8/fp4/
        # int8 GEMMs on bf16 weights; LoRA adapters on a quantised base are bf16)
        prec = "fp32" if rates.weight_bytes >= 4.0 and task not in ("lora", "qlora") else "bf16"
        t_opt = (
            stepped
            * optimizer_step_bytes_per_param(optimizer, prec, master_weights)
            / (rates.mem_bw_bytes_per_s * profile.param("eta_bw"))
        )

    def _links(ranks: int) -> Link:
        return group_link(
            spec, group=ranks, stride=tp * pp, gpus_per_node=gpus_per_node, link_eff=link_eff, network=network
        )

    if zero_stage == 3:
        # ZeRO-3 / FSDP: every micro-batch all-gathers the parameters for its forward and again for its
        # backward; the gradients are reduce-scattered during the backward (per layer, as they are ready:
        # PyTorch FSDP, Zhao et al. 2023 sec. 3.3-4; DeepSpeed ZeRO-3 overlap_comm). All of it streams on the
        # same links while the layers compute, so what exceeds ``dp_overlap`` of the step's compute is exposed
        # LoRA/QLoRA: FSDP and ZeRO-3 shard every parameter, the frozen base included (PyTorch FSDP flat
        # parameters mix frozen and trainable weights, use_orig_params; DeepSpeed ZeRO-3 partitions all
        # module parameters; FSDP-QLoRA, Answer.AI 2024, shards the 4-bit base), so each micro-batch gathers
        # the whole base; only the adapters' gradients are reduced
        gathered = groups
        if task in ("lora", "qlora"):
            gathered = [((pc.total - routed) / (tp * pp), dp), (routed / (tp * pp * ep_eff), dp // ep_eff)]
        shard_max = _hybrid_shard_ranks(spec, software, tp * pp, gpus_per_node)

        def _shard(ranks: int) -> int:
            return ranks if shard_max is None else min(ranks, shard_max)

        gather = sum(
            2.0 * all_gather_s(p * rates.weight_bytes, _shard(r), _links(_shard(r)))
            for p, r in gathered
            if p > 0
        )
        reduce = sum(all_gather_s(p * GRAD_BYTES, _shard(r), _links(_shard(r))) for p, r in groups if p > 0)
        for p, r in groups:  # hybrid sharding: each shard's gradients all-reduce across the replicas
            if p > 0 and r > _shard(r):
                dcn = group_link(
                    spec, group=r // _shard(r), stride=tp * pp * _shard(r), gpus_per_node=gpus_per_node,
                    link_eff=link_eff, network=network,
                )  # fmt: skip
                reduce += all_reduce_s(p / _shard(r) * GRAD_BYTES, r // _shard(r), dcn)
        dp_exposed = max(0.0, micro * gather + reduce - overlap * compute)
    else:
        # pp = 1: one micro-batch per step when memory allows, so the reduce overlaps the whole backward;
        # with pipelining only the last micro-batch's backward remains to hide it
        per_micro = compute / (micro if pp > 1 else 1)
        t_window = per_micro * (2.0 / 3.0)
        t_dp = t_gather = 0.0
        for p, r in groups:
            if p <= 0:
                continue
            if zero_stage == 0:
                t_dp += all_reduce_s(p * GRAD_BYTES, r, _links(r))
            else:  # reduce-scatter fp32 grads + all-gather updated 16-bit params (distributed optimizer)
                t_dp += all_gather_s(p * GRAD_BYTES, r, _links(r))
                t_gather += all_gather_s(p * PARAM_BYTES, r, _links(r))
        if software in PARAM_GATHER_OVERLAP_STACKS:
            # the updated parameters are all-gathered bucket by bucket under the next step's first forward
            # (Megatron --overlap-param-gather): their own window, a micro-batch's forward. Interleaved, each
            # model chunk's gradients reduce once its last backward is done (--overlap-grad-reduce): chunk j
            # of v (in backward order) finishes ~j x pp chunk-backwards before the end, so on one stream what
            # stays exposed is the last chunk's share or what exceeds the cool-down
            v_dp = max(v, 1.0) if pp > 1 else 1.0
            unit = t_window / v_dp  # one micro-batch's backward through one model chunk
            rs_exposed = max(
                0.0, t_dp / v_dp - overlap * unit, t_dp - overlap * unit * (1.0 + (v_dp - 1.0) * pp)
            )
            dp_exposed = rs_exposed + max(0.0, t_gather - overlap * per_micro / 3.0)
        else:
            dp_exposed = max(0.0, t_dp + t_gather - overlap * t_window)
    return StepBreakdown(
        compute_s=compute, tp_comm_exposed_s=exposed * t_tp, ep_comm_s=ep_exposed + exposed * t_cp,  # TP + PP
        bubble_fraction=bubble, dp_comm_exposed_s=dp_exposed, offload_s=t_offload, optimizer_s=t_opt,
    )  # fmt: skip


def _hybrid_shard_ranks(
    spec: AcceleratorSpec, software: str, model_ranks: int, gpus_per_node: int
) -> int | None:
    """Data-parallel ranks one ZeRO-3/FSDP shard group spans: FSDP-only stacks (MaxText) shard inside the
    scale-up domain and replicate across domains (Multislice: ``ici_fsdp_parallelism`` within a slice,
    ``dcn_data_parallelism`` across slices, MaxText ``configs/base.yml`` and "Multislice" docs); every other
    stack shards over all its data-parallel ranks (PyTorch FSDP FULL_SHARD, DeepSpeed ZeRO-3): None."""
    if not fsdp_only(spec, software):
        return None
    return max(gpus_per_node // max(model_ranks, 1), 1)


def stage_imbalance(layers: int, pp: int) -> float:
    """Busiest pipeline stage's layers over the mean, ``ceil(L / pp) / (L / pp)`` [ratio].

    Layers are whole, so with ``L`` not divisible by ``pp`` some stage holds ``ceil(L / pp)`` of them
    (pigeonhole; uneven first/last stages and custom layouts in Megatron-Core move layers, not this bound)
    and the 1F1B pipeline advances at that stage's pace (Narayanan et al. 2021 sec. 2.2: every micro-batch
    passes every stage in turn). 1 without pipelining.
    """
    if pp <= 1 or layers <= 0:
        return 1.0
    return math.ceil(layers / pp) / (layers / pp)


def _virtual_stage_notes(model: ModelArch, pp: int, virtual_stages: int | None) -> list[str]:
    """Say when a given ``virtual_stages`` is not used as given (no pipeline, or more chunks than layers per
    stage: :func:`pipeline_chunks` caps it), so the option is never silently ignored."""
    if virtual_stages is None or virtual_stages <= 1:
        return []
    if pp <= 1:
        return [f"virtual_stages={virtual_stages} ignored: the layout has no pipeline (pp=1)."]
    cap = max(model.num_layers // pp, 1)
    if virtual_stages > cap:
        return [f"virtual_stages={virtual_stages} capped at {cap}, the layers per pipeline stage."]
    return []


def pipeline_chunks(
    model: ModelArch, pp: int, software: str, profile: CalibrationProfile, virtual_stages: int | None = None
) -> float:
    """Model chunks (virtual pipeline stages) per pipeline rank: as given, else ``pp_interleave`` for stacks
    running Megatron's interleaved 1F1B (:data:`INTERLEAVED_STACKS`) and 1 otherwise, never more than the
    layers per stage (Narayanan et al. 2021 sec. 2.2.2)."""
    if pp <= 1:
        return 1.0
    if virtual_stages is not None:
        return float(min(virtual_stages, max(model.num_layers // pp, 1)))
    if software in INTERLEAVED_STACKS:
        return min(profile.param("pp_interleave"), model.num_layers / pp)
    return 1.0


def ep_overlapped(software: str, pp: int, chunks: float) -> bool:
    """Whether ``software`` hides the EP all-to-all behind another micro-batch's compute at this pipeline
    (:data:`EP_OVERLAP_STACKS`; Megatron-Core's combined 1F1B needs pp = 1 or interleaving,
    :data:`COMBINED_1F1B_STACKS`)."""
    if software not in EP_OVERLAP_STACKS:
        return False
    return software not in COMBINED_1F1B_STACKS or pp <= 1 or chunks > 1.0


def effective_time_fraction(gpu_count: int, profile: CalibrationProfile) -> float:
    """Share of wall time spent training, given failures ~ GPUs (Llama 3 sec. 3.3.4 rate and cost)."""
    lost = profile.param("failure_rate_per_gpu_hour") * gpu_count * profile.param("failure_cost_h")
    return 1.0 / (1.0 + lost)


@checked_output("training estimate")
def estimate_training(
    *,
    model: ModelArch | str,
    task: str,
    gpu: AcceleratorSpec | str,
    precision: str,
    gpu_count: int,
    global_batch: int,
    seq_len: int,
    train_tokens: float | None = None,
    tp: int | None = None,
    pp: int | None = None,
    dp: int | None = None,
    ep: int | None = None,
    gpus_per_node: int | None = None,
    zero_stage: int | None = None,
    recompute: str | None = None,
    software: str | None = None,
    profile: CalibrationProfile | None = None,
    allow_fallback: bool = False,
    cp: int | None = None,
    ignore_memory: bool = False,
    node_network: NodeNetwork | None = None,
    cpu_offload: bool = False,
    virtual_stages: int | None = None,
    optimizer: str | None = None,
    master_weights: bool | None = None,
    flash_attention: bool = True,
    options: TrainingOptions | None = None,
    moe_routing: str = "dropless",
    moe_capacity_factor: float | None = None,
) -> TrainingEstimate:
    """Estimate step time, throughput, MFU and time to train (module doc).

    ``cp``: context-parallel degree (each group of ``cp`` GPUs splits every sequence; ring attention exchanges
    K/V). ``ignore_memory``: estimate speed even where the memory model says nothing fits (``fits`` stays
    False, a note says so); for measured cases. ``node_network``: the nodes' scale-out network (the offer's
    fabric); ``None`` uses the comms module's per-architecture assumption. ``cpu_offload``: the fp32 master
    weights and optimizer states live and step on the host (DeepSpeed ZeRO-Offload, FSDP ``CPUOffload``):
    less GPU memory, and each step pays the PCIe copies and the CPU Adam step (:func:`offload_step_s`).
    ``virtual_stages``: model chunks per pipeline rank of the interleaved 1F1B schedule (Megatron
    ``--num-virtual-stages-per-pipeline-rank``; 1 = plain 1F1B); None = the stack's default
    (:func:`pipeline_chunks`). ``optimizer`` (None: ``adamw``) and ``master_weights`` (None: True, mixed
    precision with an fp32 master copy) set the optimizer step's memory traffic
    (:func:`optimizer_step_bytes_per_param`). ``flash_attention=False``: the stack materialises the
    attention scores (Megatron-LM and DeepSpeed before FlashAttention, Dao et al. 2022), which costs their
    memory traffic (:func:`unfused_score_bytes`); speed only, the memory layout search is unchanged.
    ``options``: a fine-tuning recipe with the user's overrides (:func:`~gpufleet.estimate.recipes.
    training_options`): its optimizer, master weights and memory settings size every layout, its recompute,
    ZeRO stage and stack are the defaults of ``recompute``, ``zero_stage`` and ``software``; a recipe's
    recompute the user did not state is relaxed to full where nothing fits (a practitioner turns activation
    checkpointing on), and activations it offloads to the host cost memory as full recompute and speed as
    none. Give the optimizer and master weights either in ``options`` or as arguments. ``moe_routing``
    (``dropless`` or ``balanced``) and ``moe_capacity_factor`` (token dropping): how a MoE model's router
    loads the expert-parallel ranks (:func:`~gpufleet.estimate.moe_serving.ep_rank_imbalance`).
    """
    args = dict(locals())
    if options is not None and options.fastest_fit and recompute is None and gpu_count == 1:
        held = _held_on_gpu(args, options)
        if held is not None:
            return held
    arch, spec, prof = resolve_inputs(model, gpu, profile)
    ep_rank_imbalance(1.0, 2, moe_routing, moe_capacity_factor)  # unknown routing, bad factor: InputError
    optim = optimizer or "adamw"
    master = True if master_weights is None else master_weights
    knobs: dict[str, Any] = {}
    relax_recompute = False
    if options is not None:
        if optimizer is not None or master_weights is not None:
            raise InputError(
                "optimizer/master_weights were given both as arguments and in options, and one would be "
                "silently ignored. Put them in options (recipes.training_options(optimizer=...)) only."
            )
        optim, master, knobs = options.optimizer, options.master_weights, options.knobs()
        relax_recompute = recompute is None and not options.recompute_stated
        recompute = recompute if recompute is not None else options.recompute
        zero_stage = zero_stage if zero_stage is not None else options.zero_stage
        software = software if software is not None else options.stack
    optimizer_step_bytes_per_param(optim, "bf16", True)  # unknown optimizer: InputError
    prec = check_precision(precision)
    if task not in TRAINING_TASKS:
        raise InputError(
            f"Task {task!r} is not a training task. Allowed: {', '.join(TRAINING_TASKS)}. "
            "Use estimate_inference for serving."
        )
    for name, v in (("gpu_count", gpu_count), ("global_batch", global_batch), ("seq_len", seq_len)):
        positive_int(name, v)
    for name, opt in (
        ("tp", tp),
        ("pp", pp),
        ("dp", dp),
        ("ep", ep),
        ("cp", cp),
        ("gpus_per_node", gpus_per_node),
        ("virtual_stages", virtual_stages),
    ):
        positive_int(name, opt, allow_none=True)
    if virtual_stages is not None and virtual_stages > arch.num_layers:
        raise InputError(
            f"virtual_stages is {virtual_stages:,}, but {arch.id} has {arch.num_layers} layers and each "
            "virtual pipeline stage holds at least one. Pass a number from 1 to the layers per pipeline "
            "stage "
            "(Megatron --num-virtual-stages-per-pipeline-rank), or leave it out for the stack's default."
        )
    if virtual_stages is not None and virtual_stages > 1 and pp == 1:
        raise InputError(
            f"virtual_stages={virtual_stages} needs a pipeline, but pp=1 was given: interleaved 1F1B splits "
            "each pipeline rank's layers into chunks. Pass --pp 2 or more, or leave --virtual-stages out."
        )
    if train_tokens is not None:
        positive_float("train_tokens", train_tokens)
        check_train_tokens(train_tokens, global_batch, seq_len)
    if recompute is not None and recompute not in ("none", "selective", "full"):
        raise InputError(f"recompute must be none, selective or full, got {recompute!r}.")
    sw = software_arg(software)
    task = adapter_task(task, prec, spec.architecture)
    frozen_int8 = task == "qlora" and prec == "int8"
    if prec == "int8" and not frozen_int8 and not spec.architecture.startswith(INT8_TRAINING_ARCHS):
        raise UnsupportedError(
            f"int8 training is not supported on {spec.id} ({spec.architecture}): quantised int8 training "
            "(AQT) exists in JAX/MaxText on TPUs only; GPU training stacks (Transformer Engine, Megatron, "
            "DeepSpeed, PyTorch) train in bf16, fp8 or fp4. Use fp8 (Hopper, Blackwell, CDNA 3+, Gaudi) or "
            "bf16 on this GPU. A LoRA on an 8-bit frozen base (bitsandbytes) is task 'qlora' or 'lora' with "
            "precision int8."
        )
    if frozen_int8:  # an 8-bit frozen base is dequantised per matmul: 16-bit compute, like nf4 (support)
        rates = dataclasses.replace(
            resolve_rates(spec, "nf4", prof, allow_fallback=allow_fallback),
            weight_bytes=bytes_per_element(prec),
        )
    else:
        rates = resolve_rates(spec, prec, prof, allow_fallback=allow_fallback)
    gpn = gpus_per_node or scaleup_domain_gpus(spec, gpu_count)
    cp_deg = cp or 1
    if gpu_count % cp_deg or seq_len < cp_deg:
        raise InputError(
            f"Context-parallel degree {cp_deg} must divide the {gpu_count} GPUs and be at most seq_len "
            f"({seq_len}). Use a cp that divides the GPU count, or leave it out."
        )
    if cp_deg > 1:  # memory per rank: a cp-th of each sequence, ZeRO over dp x cp (estimate_memory ``cp``)
        knobs = {**knobs, "cp": cp_deg}

    def layouts_at(recompute: str | None) -> list[LayoutKey]:
        return training_layout_keys(
            model=arch, spec=spec, task=task, precision=prec, gpu_count=gpu_count // cp_deg,
            global_batch=global_batch, seq_len=-(-seq_len // cp_deg), gpus_per_node=gpn, software=sw, tp=tp,
            pp=pp, dp=dp, zero_stage=zero_stage, recompute=recompute, ep=ep, allow_fallback=allow_fallback,
            optimizer=optim, master_weights=master, knobs=knobs,
        )  # fmt: skip

    layouts = layouts_at(recompute)
    relaxed_note = ""
    if relax_recompute and recompute not in (None, "full") and not any(lay.fits for lay in layouts):
        relaxed_note = (
            f"the recipe's {recompute} recompute does not fit: full recompute (activation checkpointing), as "
            "a practitioner would turn it on."
        )
        recompute = "full"
        layouts = layouts_at(recompute)
    acts_offloaded = options is not None and options.activation_offloading  # speed without recompute
    best: tuple[float, LayoutKey, StepBreakdown] | None = None
    for lay in layouts:
        if not lay.fits and not ignore_memory and not cpu_offload:  # offload: memory checked below
            continue
        ep_deg = ep if ep is not None else (default_ep(arch, lay.dp, gpn) if arch.is_moe else 1)
        br = training_step(
            model=arch, spec=spec, rates=rates, task=task, tp=lay.tp, pp=lay.pp, dp=lay.dp, ep=ep_deg,
            global_batch=global_batch, seq_len=seq_len, zero_stage=lay.zero_stage,
            recompute="none" if acts_offloaded else lay.recompute, software=sw, gpus_per_node=gpn,
            profile=prof, cp=cp_deg, network=node_network, cpu_offload=cpu_offload,
            virtual_stages=virtual_stages, optimizer=optim, master_weights=master,
            flash_attention=flash_attention, moe_routing=moe_routing, moe_capacity_factor=moe_capacity_factor,
        )  # fmt: skip
        if best is None or br.step_s < best[0]:
            best = (br.step_s, lay, br)
    layout = layout_memory(
        best[1] if best is not None else layouts[-1],
        model=arch,
        spec=spec,
        task=task,
        precision=prec,
        seq_len=-(-seq_len // cp_deg),
        allow_fallback=allow_fallback,
        optimizer=optim,
        master_weights=master,
        knobs=knobs,
    )  # built for the kept layout only
    if cpu_offload:
        offloaded = estimate_memory(
            model=arch, task=task, precision=prec, gpu=spec, tp=layout.tp, pp=layout.pp, dp=layout.dp,
            batch=1, seq_len=-(-seq_len // cp_deg), zero_stage=layout.zero_stage, recompute=layout.recompute,
            engine="pytorch", allow_fallback=allow_fallback, cpu_offload=True, optimizer=optim,
            master_weights=master, **knobs,
        )  # fmt: skip
        layout = dataclasses.replace(layout, memory=offloaded)
        if not offloaded.fits and not ignore_memory:
            best = None
    if options is not None:
        layout = dataclasses.replace(layout, memory=dataclasses.replace(layout.memory, recipe=options.recipe))
    recompute = layout.recompute
    ep_kept = ep if ep is not None else (default_ep(arch, layout.dp, gpn) if arch.is_moe else 1)
    notes = list(rates.notes)
    notes.append(
        f"layout tp={layout.tp} pp={layout.pp} dp={layout.dp}"
        f"{f' (ep={ep_kept} within dp)' if arch.is_moe else ''}, ZeRO-{layout.zero_stage}, "
        f"{recompute} recompute, "
        f"software {sw}."
    )
    notes.extend(_virtual_stage_notes(arch, layout.pp, virtual_stages))
    if options is not None and not options.is_generic:
        notes.append(options.summary)
    if relaxed_note:
        notes.append(relaxed_note)
    if (net := network_note(spec, gpn, layout.tp * layout.pp * layout.dp * cp_deg, node_network)) is not None:
        notes.append(net)
    if (warning := context_note(arch.id, arch.max_position_embeddings, seq_len)) is not None:
        notes.insert(0, warning)
    if global_batch < layout.dp:
        raise InputError(
            f"global_batch {global_batch} is smaller than the data-parallel degree {layout.dp}: every "
            "replica "
            "needs at least one sequence. Raise the global batch or use fewer GPUs."
        )
    if best is None:
        return TrainingEstimate(
            fits=False, memory=layout.memory, tp=layout.tp, pp=layout.pp, dp=layout.dp, step_time_s=None,
            tokens_per_s_per_gpu=None, tokens_per_s=None, mfu=None, time_to_train_s=None, gpu_hours=None,
            notes=tuple(notes), zero_stage=layout.zero_stage, recompute=recompute, ep=ep_kept,
            optimizer=optim, recipe=None if options is None else options.recipe,
        )  # fmt: skip
    br = best[2]
    if cpu_offload:
        notes.append(
            f"optimizer offloaded to host memory: {br.offload_s:.3g} s per step of PCIe copies and CPU Adam "
            f"({100 * br.offload_s / br.step_s:.0f}% of the step)."
        )
    if not layout.memory.fits:
        notes.append(
            f"the memory model says this does not fit ({layout.memory.per_gpu_gib:.1f} GiB per GPU); speed "
            "estimated anyway."
        )
    step = br.step_s
    used = layout.tp * layout.pp * layout.dp * cp_deg
    tok_gpu = global_batch * seq_len / step / used
    fl = cx.training_flops_per_token(
        arch, task=task, seq_len=seq_len, recompute="none" if acts_offloaded else recompute
    )
    mfu = tok_gpu * fl.model_total / rates.stated_peak_flops
    widen = _widen(rates, spec, stack_param("train", sw, spec.vendor), prof, arch).spanning(used, gpn)
    step_i = make_interval(step, "training", prof, widen)
    tok_i = step_i.inverted(global_batch * seq_len / used)
    ttt = gpus_h = None
    if train_tokens is not None:
        frac = effective_time_fraction(used, prof)
        ttt = tok_i.inverted(train_tokens / used / frac)
        gpus_h = ttt.scaled(used / SECONDS_PER_HOUR)
        notes.append(f"time to train includes {100 * (1 / frac - 1):.1f}% for failures and restarts.")
    return TrainingEstimate(
        fits=layout.memory.fits, memory=layout.memory, tp=layout.tp, pp=layout.pp, dp=layout.dp,
        step_time_s=step_i,
        tokens_per_s_per_gpu=tok_i, tokens_per_s=tok_i.scaled(used), mfu=mfu, time_to_train_s=ttt,
        gpu_hours=gpus_h, notes=tuple(notes), zero_stage=layout.zero_stage, recompute=recompute, ep=ep_kept,
        optimizer=optim, recipe=None if options is None else options.recipe,
    )  # fmt: skip


def _held_on_gpu(args: dict[str, Any], options: TrainingOptions) -> TrainingEstimate | None:
    """The estimate of a one-GPU job whose recipe keeps every activation on the GPU where that fits
    (:attr:`~gpufleet.estimate.recipes.TrainingOptions.fastest_fit`: torchtune's published single-device
    rows, 37.4 GiB for an 8B full fine-tune on a 48 GB RTX A6000 where the offloaded setting needs ~18),
    None where it does not fit at p90 (the recipe's memory savers then apply). Sizing the offloaded setting
    on a card the recipe fills with activations under-stated its memory 2x."""
    held = estimate_training(**(args | {"options": options.held_on_gpu()}))
    if not held.fits:
        return None
    note = (
        f"recipe {options.recipe} on one GPU: activations kept on the GPU (no recompute, no offload), as its "
        "published single-device runs do where they fit; its memory savers apply only where they do not."
    )
    return dataclasses.replace(held, notes=(*held.notes, note))


__all__ = [
    "COMBINED_1F1B_STACKS",
    "EP_OVERLAP_STACKS",
    "GRAD_BYTES",
    "INT8_TRAINING_ARCHS",
    "INTERLEAVED_STACKS",
    "OFFLOAD_BYTES_PER_PARAM",
    "PARAM_BYTES",
    "PARAM_GATHER_OVERLAP_STACKS",
    "QLORA_DEQUANT_OUT_BYTES",
    "QLORA_DEQUANT_PASSES",
    "UNFUSED_SCORE_DROPOUT_BYTES",
    "UNFUSED_SCORE_FWD_BYTES",
    "StepBreakdown",
    "TrainingEstimate",
    "effective_time_fraction",
    "ep_overlapped",
    "estimate_training",
    "offload_step_s",
    "optimizer_step_bytes_per_param",
    "pipeline_chunks",
    "qlora_dequant_s",
    "stage_imbalance",
    "train_gemm_eta",
    "train_width_factor",
    "training_step",
    "unfused_score_bytes",
]
