"""Weights, optimizer states and the per-stage parameter split behind the memory model (docs/memory.md;
split from :mod:`gpufleet.estimate.memory`, which assembles them): optimizer bytes per parameter, the
estimate's types, parallel-degree checks and the validated query."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

from gpufleet.errors import InputError, UnsupportedError
from gpufleet.estimate.kv_cache import _KV_BYTES as _KV_BYTES
from gpufleet.estimate.kv_cache import _kv_per_token_layer as _kv_per_token_layer
from gpufleet.estimate.kv_cache import _round_up as _round_up
from gpufleet.estimate.kv_cache import kv_cache_bytes as kv_cache_bytes
from gpufleet.estimate.kv_cache import kv_cache_bytes_per_token as kv_cache_bytes_per_token
from gpufleet.estimate.kv_cache import mla_kv_cache_bytes as mla_kv_cache_bytes
from gpufleet.models.arch import ModelArch
from gpufleet.models.params import count_params, ffn_params
from gpufleet.precision import BYTES_PER_ELEMENT, UNQUANTISED_BYTES_PER_ELEMENT, check_precision
from gpufleet.precision import QUANTISED_FORMATS as _QUANTISED
from gpufleet.validation import check_count

OPTIMIZERS: tuple[str, ...] = (
    "adamw",
    "adam",
    "adamw_8bit",
    "adamw8bit",
    "paged_adamw8bit",
    "adafactor",
    "sgd",
    "sgd_momentum",
)
#: optimizers whose states live in CUDA managed (unified) memory that the driver pages to host RAM under
#: pressure (bitsandbytes paged optimizers, Dettmers et al. 2023 QLoRA sec. 3): torch's allocator statistic
#: does not count them, and they never make a layout not fit. Only the uint8 states are paged
#: (bitsandbytes 0.50.2 ``Optimizer8bit.get_state_buffer``: ``F.get_paged`` = ``cudaMallocManaged`` for
#: tensors of 1e5 elements or more); their fp32 ``absmax`` block constants, any fp32 master copy and the
#: states of small tensors are ordinary torch allocations on the GPU (:func:`optimizer_state_parts`)
PAGED_OPTIMIZERS: tuple[str, ...] = ("paged_adamw8bit",)
#: bitsandbytes' 8-bit optimizers keep each state as one uint8 per element (m and v: 2 B/param) and
#: quantise it block-wise with one fp32 ``absmax`` per 256-element block per state (bitsandbytes 0.50.2
#: ``optim/optimizer.py`` ``Optimizer2State.init_state``: ``blocksize = 256``, ``state["absmax1"]`` and
#: ``["absmax2"]`` = ``torch.zeros((blocks,), dtype=torch.float32, device=p.device)``; Dettmers et al. 2022
#: sec. 2, block-wise quantisation): 2 x 4 / 256 B/param more
BNB_STATE_BYTES = 2.0
BNB_BLOCKSIZE = 256
BNB_ABSMAX_BYTES = 2.0 * 4.0 / BNB_BLOCKSIZE
#: optimizer state bytes per parameter besides any fp32 master copy: Adam m + v fp32 (8); 8-bit Adam
#: (Dettmers et al. 2022, block-wise quantised m and v: :data:`BNB_STATE_BYTES` + :data:`BNB_ABSMAX_BYTES`);
#: Adafactor keeps a factored second moment (rows + columns, ~0 per parameter) and no first moment by default
#: (Shazeer & Stern 2018, HF ``Adafactor(beta1=None)``); SGD none, with momentum one fp32 buffer
OPTIMIZER_MOMENT_BYTES: Mapping[str, float] = {
    "adamw": 8.0,
    "adam": 8.0,
    "adamw_8bit": BNB_STATE_BYTES + BNB_ABSMAX_BYTES,
    "adamw8bit": BNB_STATE_BYTES + BNB_ABSMAX_BYTES,
    "paged_adamw8bit": BNB_STATE_BYTES + BNB_ABSMAX_BYTES,
    "adafactor": 0.05,
    "sgd": 0.0,
    "sgd_momentum": 4.0,
}
#: optimizers whose states torch allocates in the parameter's dtype: ``torch.optim.AdamW`` ``_init_group``
#: creates ``exp_avg``/``exp_avg_sq`` with ``torch.zeros_like(p, memory_format=torch.preserve_format)`` and
#: SGD's ``momentum_buffer`` is ``torch.clone(grad)`` (torch 2.x ``torch/optim/adam.py``, ``sgd.py``), so in
#: pure 16-bit training (no fp32 master: torchtune ``dtype: bf16``, litgpt ``--precision bf16-true``) the
#: moments take 2 bytes each, not 4. bitsandbytes' 8-bit states and Adafactor's factored rows are unaffected.
PARAM_DTYPE_STATE_OPTIMIZERS: tuple[str, ...] = ("adamw", "adam", "sgd_momentum")


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryEstimate:
    per_gpu_gib: float  # needed per GPU (what nvidia-smi would show: includes context and reserve)
    allocated_gib: float  # torch.cuda.max_memory_allocated: no CUDA context, no engine pre-reservation
    usable_gib: float  # per GPU, after CUDA context and engine reserve
    capacity_gib: float  # device-reported
    #: the verdict, taken at the p90 of memory (:func:`memory_p90_factor`), never at the central estimate
    fits: bool
    breakdown_gib: Mapping[str, float]
    assumptions: tuple[str, ...]
    #: the optimizer whose states are counted (training tasks; None for inference and load)
    optimizer: str | None = None
    #: the fine-tuning recipe preset whose settings were applied (recipes.RECIPES; None: generic defaults)
    recipe: str | None = None
    #: ``per_gpu_gib`` at the p90 of the memory estimate: the modelled tensors (all but the weights, sized
    #: by the checkpoint's format, and the KV cache, sized by the engine's block arithmetic) times
    #: :func:`memory_p90_factor`; ``fits`` is judged on it
    per_gpu_gib_p90: float = 0.0
    #: the most ``per_gpu_gib_p90`` less the paged optimizer states (``optimizer_states_paged``: evicted to
    #: the host under pressure) may be for ``fits``, in the same view: the device capacity where the
    #: trainer's allocator may fill the GPU; vLLM's ``gpu_memory_utilization`` budget plus the CUDA context
    #: and NCCL buffers it leaves outside; TRT-LLM's capacity less the free memory its KV pool leaves [GiB]
    fit_limit_gib: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingBytesPerParam:
    """Bytes per trainable parameter held for training [bytes/param]."""

    weights: float
    gradients: float
    optimizer_states: float  # fp32 master copy (mixed precision) + optimizer moments

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer_states


@cache
def memory_p90_factor() -> float:
    """p90 / central of a memory estimate [ratio]: the shipped calibration profile's ``memory`` interval
    (its leave-one-out residual quantiles, floored at +-10 %: profile.LOG_INTERVAL_FLOORS). Fit verdicts are
    taken there, never at the central estimate: an estimate that fits only at its centre runs out of memory
    on roughly one job in ten, and an out-of-memory error is the costly direction (a "fits" verdict that
    then fails on its first steps). The factor applies to the modelled tensors (activations, logits,
    gradients, optimizer states, workspaces: the terms behind the calibration residuals, e.g. the phi-4
    batch-64 probe measured 74.9 GiB against 68.6 predicted, all of it outside the weights); the weights
    (the checkpoint's bytes) and the KV cache (the engine's block arithmetic) are exact."""
    from gpufleet.estimate.profile import load_profile, make_interval

    return make_interval(1.0, "memory", load_profile()).p90


# ---- pure functions --------------------------------------------------------------------------------


def optimizer_state_parts(optimizer: str, states_bytes: float, params: float) -> dict[str, float]:
    """Optimizer state of ``params`` parameters totalling ``states_bytes``, split into what torch allocates
    (``optimizer_states``) and what a paged optimizer keeps in managed memory (``optimizer_states_paged``:
    the uint8 states, :data:`BNB_STATE_BYTES` per parameter; the block constants and any fp32 master copy
    stay on the GPU, :data:`PAGED_OPTIMIZERS`) [bytes]."""
    if optimizer not in PAGED_OPTIMIZERS:
        return {"optimizer_states": states_bytes}
    paged = min(states_bytes, params * BNB_STATE_BYTES)
    return {"optimizer_states_paged": paged, "optimizer_states": states_bytes - paged}


def optimizer_bytes_per_param(
    optimizer: str = "adamw",
    precision: str = "bf16",
    *,
    fp32_grads: bool = False,
    master_weights: bool = True,
) -> TrainingBytesPerParam:
    """Bytes per parameter for weights, gradients and optimizer state.

    Mixed precision (Micikevicius et al. 2018; ZeRO paper, Rajbhandari et al. 2020, sec. 3.1: "16 bytes"):
    16-bit weights 2 + 16-bit gradients 2 (4 with fp32 gradient accumulation, Megatron's default) + fp32
    master 4 + Adam m 4 + v 4 = 16 (18). 8-bit Adam (Dettmers et al. 2022) keeps m and v in 1 byte each.
    SGD keeps no state; with momentum one fp32 buffer. Pure fp32 training has no master copy, nor has pure
    16-bit training (``master_weights=False``: torchtune, axolotl and unsloth recipes update bf16 weights in
    place); there torch's AdamW and SGD keep their states in the parameters' 16-bit dtype
    (:data:`PARAM_DTYPE_STATE_OPTIMIZERS`): AdamW 2 + 2 + 2 + 2 = 8.
    ``int8`` trains like fp8: int8 matmuls on bf16 weights with fp32 master copies (AQT in MaxText).
    """
    prec = check_precision(precision)
    if optimizer not in OPTIMIZERS:
        raise InputError(
            f"Unknown optimizer {optimizer!r}. Allowed: {', '.join(OPTIMIZERS)}. "
            "adamw is the usual choice; adamw_8bit is bitsandbytes' 8-bit Adam."
        )
    moments = OPTIMIZER_MOMENT_BYTES[optimizer]
    if prec in ("fp32", "tf32"):
        return TrainingBytesPerParam(weights=4.0, gradients=4.0, optimizer_states=moments)
    if prec not in ("bf16", "fp16", "fp8", "fp4", "int8"):
        raise UnsupportedError(
            f"Cannot train weights stored in {prec}. Allowed training precisions: fp32, tf32, bf16, fp16, "
            "fp8, fp4, int8 (fp8/fp4/int8 = low-precision GEMMs with bf16 weights and fp32 master copies). "
            "For an int4/nf4 frozen base use task 'qlora'; otherwise train in bf16."
        )
    if not master_weights and optimizer in PARAM_DTYPE_STATE_OPTIMIZERS:
        moments /= 2.0  # fp32 moments -> the 16-bit parameter dtype (zeros_like(p))
    return TrainingBytesPerParam(
        weights=2.0, gradients=4.0 if fp32_grads else 2.0,
        optimizer_states=(4.0 if master_weights else 0.0) + moments,
    )  # fmt: skip


def weights_bytes(params: float, precision: str) -> float:
    """Weights of ``params`` parameters at ``precision`` incl. quantisation scales [bytes]."""
    return params * BYTES_PER_ELEMENT[check_precision(precision)]


# ---- parallelism checks ----------------------------------------------------------------------------


def allowed_tp_degrees(m: ModelArch) -> list[int]:
    """TP degrees that split the attention heads; GQA also needs kv_heads % tp == 0 or tp % kv_heads == 0."""
    return list(_allowed_tp(m))


@cache
def _allowed_tp(m: ModelArch) -> tuple[int, ...]:
    nh, kv = m.num_attention_heads, m.num_kv_heads
    return tuple(d for d in range(1, nh + 1) if nh % d == 0 and (m.is_mla or kv % d == 0 or d % kv == 0))


def _check_parallel(m: ModelArch, tp: int, pp: int, dp: int, ep: int = 1) -> None:
    for name, v in (("tp", tp), ("pp", pp), ("dp", dp), ("ep", ep)):
        _positive(name, v)
    if ep > 1 and (not m.is_moe or m.num_experts % ep):
        allowed = [d for d in range(1, m.num_experts + 1) if m.num_experts % d == 0] if m.is_moe else [1]
        raise InputError(
            f"Expert-parallel degree {ep} does not fit {m.id}: EP must divide its {m.num_experts} routed "
            f"experts (dense models allow only 1). Allowed EP degrees: {', '.join(map(str, allowed))}."
        )
    if tp not in _allowed_tp(m):
        why = "" if m.is_mla else f" and to divide or be a multiple of its {m.num_kv_heads} key/value heads"
        raise InputError(
            f"Tensor-parallel degree {tp} does not fit {m.id}: TP must divide its {m.num_attention_heads} "
            f"attention heads{why}. Allowed TP degrees: {', '.join(map(str, allowed_tp_degrees(m)))}."
        )
    if pp > m.num_layers:
        raise InputError(
            f"Pipeline-parallel degree {pp} exceeds the {m.num_layers} layers of {m.id}. "
            f"Use a PP degree between 1 and {m.num_layers}."
        )


def _positive(name: str, value: int) -> None:
    check_count(name, value)  # whole, >= 1, <= the stated maximum (gpufleet.validation.MAXIMA)


# ---- per-stage parameters --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Stage:
    layers: int  # transformer layers on this stage
    dense_layers: int  # of which dense (the rest are MoE layers)
    layer_params: float  # parameters per GPU in those layers (after TP)
    embed_params: float  # embedding (first stage) + lm_head/final norm (last stage), per GPU after TP
    expert_params: float  # of layer_params: routed experts (sharded by ZeRO over dp / ep only)
    in_flight: int  # micro-batches whose activations the stage holds under 1F1B (p - stage index)
    first: bool
    last: bool


@cache
def _stages(m: ModelArch, tp: int, pp: int, ep: int = 1) -> tuple[_Stage, ...]:
    """Per-GPU parameters of each pipeline stage; routed experts split over tp x ep GPUs (Megatron EP)."""
    pc = count_params(m)
    dense = pc.dense_layer
    routed = m.num_experts * ffn_params(m, m.moe_intermediate_size) if m.is_moe else 0
    rep = pc.tp_replicated_per_layer
    moe_per_gpu = (pc.moe_layer - rep - routed) / tp + routed / (tp * ep) + rep
    base, extra = divmod(m.num_layers, pp)
    stages = []
    start = 0
    for i in range(pp):
        n = base + (1 if i < extra else 0)
        d = m.dense_layers_between(start, start + n) if m.is_moe else n
        params = d * ((dense - rep) / tp + rep) + (n - d) * moe_per_gpu
        emb = pc.embedding / tp if i == 0 else 0.0
        if i == pp - 1:
            head = pc.lm_head or (m.vocab_size * m.hidden_size if pp > 1 and m.is_decoder else 0)
            emb += head / tp + pc.final
        experts = (n - d) * routed / (tp * ep)
        stages.append(_Stage(n, d, params, emb, experts, pp - i, i == 0, i == pp - 1))
        start += n
    return tuple(stages)


def _weight_bytes(stage: _Stage, precision: str) -> float:
    """Stage weights: layers at ``precision``; embeddings/lm_head 16-bit when the checkpoint is quantised;
    a fp4 MoE checkpoint keeps its non-routed layer weights at
    :data:`gpufleet.estimate.moe_serving.FP4_MOE_NONROUTED_PRECISION` (only the routed experts are fp4)."""
    from gpufleet.estimate.moe_serving import FP4_MOE_NONROUTED_PRECISION

    emb_bpe = UNQUANTISED_BYTES_PER_ELEMENT if precision in _QUANTISED else BYTES_PER_ELEMENT[precision]
    bpe = BYTES_PER_ELEMENT[precision]
    experts = max(stage.expert_params, 0.0)
    moe_fp4 = precision == "fp4" and experts > 0
    nr_bpe = BYTES_PER_ELEMENT[FP4_MOE_NONROUTED_PRECISION] if moe_fp4 else bpe
    return experts * bpe + (stage.layer_params - experts) * nr_bpe + stage.embed_params * emb_bpe


@dataclass(frozen=True, slots=True, kw_only=True)
class _Query:
    """Validated inputs of one estimate (internal)."""

    m: ModelArch
    task: str
    precision: str
    engine: str  # "pytorch" for every task but inference
    tp: int
    pp: int
    dp: int
    ep: int
    batch: int
    seq_len: int
    kv_precision: str | None
    zero_stage: int
    recompute: str
    optimizer: str
    lora_rank: int
    fp32_grads: bool
    sequence_parallel: bool
    flash_attention: bool
    master_weights: bool = True
    optimizer_in_backward: bool = False
    chunked_loss: bool = False
    cpu_offload: bool = False
    adapter_fp32: bool = True
    lora_dropout: str = "none"
    offload_checkpoints: bool = False
    shard_degree: int | None = None
    offload_params: bool = False
    kbit_upcast: bool = False
    hf_eager: bool = False
    cp: int = 1  # context-parallel ranks sharing each sequence (training): ZeRO shards over dp x cp


def _adapter_base(q: _Query) -> str:
    """Precision of a LoRA/QLoRA job's frozen base (QLoRA without a quantised precision: NF4)."""
    return q.precision if q.task == "lora" or q.precision in ("nf4", "int4", "fp4", "int8") else "nf4"
