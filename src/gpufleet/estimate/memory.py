"""GPU memory per device for inference, training, LoRA/QLoRA and loading (docs/memory.md: every formula).

Pure functions carry the numbers (``weights_bytes``, ``kv_cache_bytes``, ``optimizer_bytes_per_param`` ...);
:func:`estimate_memory` assembles them per pipeline stage and reports the heaviest stage with its
breakdown and the assumptions it made. Nothing here prints. The KV-cache functions live in
:mod:`gpufleet.estimate.kv_cache` (re-exported here).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from typing import Any, Literal

from gpufleet.catalog.specs import AcceleratorSpec, get_spec
from gpufleet.errors import InputError, UnsupportedError
from gpufleet.estimate.activations import (
    HF_LOSS_BACKWARD_BYTES,
    HF_LOSS_FORWARD_BYTES,
    HfMode,
    activation_bytes_per_layer,
    check_recompute,
    hf_eager_checkpoint_bytes,
    hf_eager_head_bytes,
    hf_eager_layer_bytes,
    hf_eager_supported,
    inference_activation_bytes,
    logits_bytes,
)
from gpufleet.estimate.kv_cache import _KV_BYTES as _KV_BYTES
from gpufleet.estimate.kv_cache import _kv_per_token_layer as _kv_per_token_layer
from gpufleet.estimate.kv_cache import _round_up as _round_up
from gpufleet.estimate.kv_cache import kv_bytes_per_element, kv_cache_bytes_per_sequence
from gpufleet.estimate.kv_cache import kv_cache_bytes as kv_cache_bytes
from gpufleet.estimate.kv_cache import kv_cache_bytes_per_token as kv_cache_bytes_per_token
from gpufleet.estimate.kv_cache import mla_kv_cache_bytes as mla_kv_cache_bytes
from gpufleet.estimate.support import precision_support
from gpufleet.estimate.types import TASKS, adapter_task
from gpufleet.models.arch import ModelArch
from gpufleet.models.params import LORA_TARGETS, count_params, ffn_params, lora_params
from gpufleet.models.registry import resolve_model
from gpufleet.precision import BYTES_PER_ELEMENT, UNQUANTISED_BYTES_PER_ELEMENT, check_precision
from gpufleet.precision import QUANTISED_FORMATS as _QUANTISED
from gpufleet.units import GIB
from gpufleet.validation import check_count, checked_output

Engine = Literal["vllm", "trtllm", "transformers", "pytorch"]
ENGINES: tuple[str, ...] = ("vllm", "trtllm", "transformers", "pytorch")
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

#: CUDA context + kernel images per process with CUDA >= 12.2 lazy loading (CUDA C++ Programming Guide,
#: "Lazy Loading"; default since CUDA 12.2); PyTorch processes on A100/H100 show 0.4-0.6 GiB in nvidia-smi
#: before the first allocation. [GiB]
CUDA_CONTEXT_GIB = 0.5
#: NCCL communicator buffers when a process talks to peers (NCCL_BUFFSIZE 4 MiB x channels x peers);
#: a stated assumption, not a measurement [GiB]
NCCL_BUFFERS_GIB = 0.25
#: vLLM CUDA-graph pool: vLLM logs "Graph capturing finished ... took 0.2-1 GiB" for 7B-70B models;
#: a stated assumption [GiB]
VLLM_CUDA_GRAPHS_GIB = 0.5
#: vLLM ``gpu_memory_utilization`` default: the engine's total budget is this fraction of device memory
VLLM_GPU_MEMORY_UTILIZATION = 0.9
#: TRT-LLM ``kv_cache_free_gpu_mem_fraction`` default: KV pool = this fraction of memory free after load
TRTLLM_KV_FREE_FRACTION = 0.9
#: KV block sizes [tokens]: vLLM ``--block-size`` 16; TRT-LLM ``tokens_per_block`` 64
KV_BLOCK_TOKENS = {"vllm": 16, "trtllm": 64, "transformers": 1, "pytorch": 1}
#: tokens per forward in the engine's profiling/prefill chunk: vLLM ``max_num_batched_tokens`` 8192 (V1
#: default for ``vllm serve``); TRT-LLM ``max_num_tokens`` 8192 (trtllm-build default)
PREFILL_CHUNK_TOKENS = {"vllm": 8192, "trtllm": 8192}
#: chunks of torchtune's ``CEWithChunkedOutputLoss`` (8): only one chunk's fp32 upcast logits are alive
CHUNKED_LOSS_CHUNKS = 8
#: LoRA dropout modes: where a trainer applies ``lora_dropout`` > 0 and so stores a dropout mask (1 B) and
#: the dropped input (16-bit) per adapter input for the backward: none (dropout 0: PEFT 0.21.2 LoraConfig,
#: torchtune configs, axolotl 0.19.0 schemas/peft.py default 0.0), ``shared_input`` (litgpt 0.5.13 lora.py
#: default lora_dropout 0.05 on q and v only, through the merged QKV layer: one ``self.lora_dropout(x)`` on
#: the attention input), ``per_module`` (PEFT ``LoraLayer.forward`` drops each target module's input
#: separately: q, k, v and gate, up take h each, o heads x head_dim, down the FFN width)
LORA_DROPOUT_MODES: tuple[str, ...] = ("none", "shared_input", "per_module")
#: vLLM ``max_num_seqs`` default 256: its profiling run samples that many sequences' logits (fp32)
VLLM_MAX_NUM_SEQS = 256


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


# ---- assembly --------------------------------------------------------------------------------------


def _resolve_gpu(gpu: AcceleratorSpec | str) -> AcceleratorSpec:
    return gpu if isinstance(gpu, AcceleratorSpec) else get_spec(gpu)


def _check_engine(engine: str) -> str:
    if engine not in ENGINES:
        raise InputError(
            f"Unknown inference engine {engine!r}. Allowed: {', '.join(ENGINES)}. "
            "vllm and trtllm pre-reserve a KV pool; transformers/pytorch allocate on demand."
        )
    return engine


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


def _lora_dropout_bytes_per_layer(q: _Query) -> float:
    """Dropout mask (1 B) + dropped 16-bit input per layer for LoRA dropout (LORA_DROPOUT_MODES) [bytes]."""
    m = q.m
    if q.lora_dropout == "none" or q.task not in ("lora", "qlora"):
        return 0.0
    h = float(m.hidden_size)
    if q.lora_dropout == "shared_input":
        width = h
    else:
        ffn_in = 2.0 * h if m.ffn_kind == "gated" else h
        width = 3.0 * h + m.num_attention_heads * m.head_dim + ffn_in + m.intermediate_size
    return float(q.seq_len) * q.batch * width * (1.0 + 2.0) / q.tp


def _inference_parts(q: _Query, st: _Stage) -> dict[str, float]:
    m = q.m
    parts = {"weights": _weight_bytes(st, q.precision)}
    if m.is_decoder:
        block = KV_BLOCK_TOKENS[q.engine]
        per_seq = kv_cache_bytes_per_sequence(
            m,
            tokens=q.seq_len,
            kv_precision=q.kv_precision,
            tp=q.tp,
            num_layers=st.layers,
            block_tokens=block,
        )
        parts["kv_cache"] = q.batch * per_seq
    tokens = PREFILL_CHUNK_TOKENS.get(q.engine, q.batch * q.seq_len)
    parts["activations"] = inference_activation_bytes(m, tokens=tokens, tp=q.tp)
    if st.last and m.is_decoder:
        seqs = max(q.batch, VLLM_MAX_NUM_SEQS) if q.engine == "vllm" else q.batch
        parts["logits"] = float(seqs) * m.vocab_size * 4.0  # last-token logits in fp32 for sampling
    return parts


def _adapter_base(q: _Query) -> str:
    """Precision of a LoRA/QLoRA job's frozen base (QLoRA without a quantised precision: NF4)."""
    return q.precision if q.task == "lora" or q.precision in ("nf4", "int4", "fp4", "int8") else "nf4"


def _hf_mode(q: _Query) -> HfMode | None:
    """The transformers eager training mode a query runs (:func:`_hf_training_parts`), None when the
    generic model applies: only one GPU without offload (the moment-by-moment peak below is that of a
    single process; a ZeRO stage over one data-parallel rank shards nothing, so the layout search's ZeRO-1
    key at dp=1 is the same single process and must not escape this model), bf16/fp16 AMP with SDPA/flash
    attention and the model's own loss, and a decoder layer
    :func:`gpufleet.estimate.activations.hf_eager_supported` describes."""
    if not q.hf_eager or (q.tp, q.pp, q.dp, q.ep) != (1, 1, 1, 1):
        return None
    if q.cpu_offload or q.chunked_loss or q.optimizer_in_backward or q.offload_checkpoints:
        return None
    nf4_qlora = q.task == "qlora" and _adapter_base(q) == "nf4"  # bitsandbytes NF4 base, bf16 compute
    if (q.precision not in ("bf16", "fp16") and not nf4_qlora) or not q.flash_attention or q.fp32_grads:
        return None
    if not hf_eager_supported(q.m) or q.recompute not in ("none", "selective", "full"):
        return None
    if q.task in ("pretrain", "full_finetune"):
        return "amp_full" if q.master_weights else "bf16_full"
    if not q.adapter_fp32 or q.lora_dropout != "none":
        return None
    if q.task == "lora":
        return "lora"
    if nf4_qlora and q.kbit_upcast:  # PEFT prepare_model_for_kbit_training, as measured; other QLoRA
        return "qlora"  # trainers differ (TRL keeps bf16 adapters, axolotl 16-bit embeddings): generic model
    return None


def _hf_training_parts(q: _Query, st: _Stage, mode: HfMode) -> dict[str, float]:
    """Peak torch-allocated memory of one transformers training step, at the moment it happens [bytes].

    The step is ``with torch.autocast(bf16): loss = model(input_ids, labels=...).loss``; ``loss.backward()``;
    ``optimizer.step()``; ``optimizer.zero_grad(set_to_none=True)`` (HF Trainer ``training_step``,
    transformers 5.17.0; benchmarks/gpu_probe_train.py runs exactly this). Its parts are not all alive at
    once, so the peak is the largest of four moments (static = weights + optimizer states [+ adapters]):

    - end of the forward, inside autocast: static + saved activations + autocast's cached bf16 copies of the
      fp32 weights (``amp_full``: 2 B per parameter that enters a linear, lm_head included; the cache lives
      until the outermost autocast exits, ``torch.clear_autocast_cache`` in ``autocast.__exit__``) + the loss
      forward (:data:`HF_LOSS_FORWARD_BYTES` per logit);
    - start of the backward, in the loss: static + saved activations (+ the bf16 weight copies the linears
      saved, without checkpointing) + :data:`HF_LOSS_BACKWARD_BYTES` per logit. No gradient exists yet:
      ``zero_grad(set_to_none=True)`` (the torch default) freed them after the last step;
    - with checkpointing, each layer's backward: one layer's recomputed activations beside either all
      checkpoints (top layer) or all gradients (bottom layer), the ends of a linear exchange;
    - end of the backward / the optimizer step: static + all gradients (fused AdamW updates in place), plus
      with tied embeddings two more V x h gradients while lm_head's and the embedding's are summed.

    AMP full fine-tuning keeps the model in fp32 (weights 4 B, fp32 gradients 4 B, AdamW m + v 8 B per
    parameter): HF Trainer ``bf16=True`` autocasts an fp32 model rather than holding a 16-bit copy.
    """
    m = q.m
    tokens = q.seq_len * q.batch
    parts: dict[str, float] = {}
    if mode == "amp_full":
        trainable = st.layer_params + st.embed_params
        moments = OPTIMIZER_MOMENT_BYTES[q.optimizer]
        parts["weights"] = trainable * 4.0
        grads = trainable * 4.0
        static_states = trainable * moments
        # autocast casts every weight a linear uses (layers' linears and lm_head, tied or not); the
        # embedding lookup and the norms run in fp32
        norm_params = float(m.hidden_size) * (m.norms_per_layer * st.layers + (1 if st.last else 0))
        head = float(m.vocab_size * m.hidden_size) if st.last else 0.0
        untied_embedding = (
            float(m.vocab_size * m.hidden_size) if st.first and not m.tie_word_embeddings else 0.0
        )
        copies = 2.0 * max(0.0, trainable - norm_params - untied_embedding) if head or st.layers else 0.0
    elif mode == "bf16_full":
        # a 16-bit model trained whole (TRL, axolotl: no fp32 master); torch AdamW keeps bf16 moments
        trainable = st.layer_params + st.embed_params
        bpp = optimizer_bytes_per_param(q.optimizer, q.precision, master_weights=False)
        parts["weights"] = trainable * bpp.weights
        grads = trainable * bpp.gradients
        static_states = trainable * bpp.optimizer_states
        copies = 0.0  # autocast casts nothing already in bf16
    else:
        parts["weights"] = _weight_bytes(st, _adapter_base(q))
        if mode == "qlora":  # prepare_model_for_kbit_training: embeddings and lm_head in fp32
            parts["weights"] += st.embed_params * (4.0 - UNQUANTISED_BYTES_PER_ELEMENT)
        trainable = lora_params(m, q.lora_rank) * st.layers / m.num_layers
        bpp = optimizer_bytes_per_param(q.optimizer, "fp32")  # PEFT's fp32 adapters
        parts["lora_adapters"] = trainable * bpp.weights
        grads = trainable * bpp.gradients
        static_states = trainable * bpp.optimizer_states
        copies = 0.0  # bf16 base weights need no cast; the fp32 adapters' bf16 copies are ~0
    # QLoRA's fp32 lm_head: autocast casts it to bf16 for the matmul (not cached: it is frozen), and the
    # matmul keeps that copy for the input gradient until lm_head's backward (CPU: 2 V h bytes, measured)
    head_copy = 2.0 * m.vocab_size * m.hidden_size if mode == "qlora" and st.last else 0.0
    parts.update(optimizer_state_parts(q.optimizer, static_states, trainable))
    layer = hf_eager_layer_bytes(m, tokens=tokens, mode=mode, lora_rank=q.lora_rank)
    head_acts = hf_eager_head_bytes(m, tokens=tokens, mode=mode) if st.last else 0.0
    ckpt = q.recompute == "full"
    saved = (
        st.layers * (hf_eager_checkpoint_bytes(m, tokens=tokens, mode=mode) if ckpt else layer) + head_acts
    )
    logit_elems = float(tokens) * m.vocab_size if st.last else 0.0
    # tied embeddings (full fine-tunes): lm_head's gradient waits in the autograd engine's input buffer of
    # the shared parameter until the embedding backward (``embedding_dense_backward``, a new V x h tensor)
    # delivers its own, and the buffer's sum is a third V x h tensor: two gradients beyond ``.grad`` for that
    # moment (CPU MemTracker, llama-3.2-1b width, 4 layers, fused or not: 9724.3 MiB = weights + AdamW
    # states 5790.2 + all gradients 1930.1 + 2 x 1002.0)
    tied = mode != "lora" and m.tie_word_embeddings and st.first and st.last
    tied_grad = (
        2.0 * (grads / trainable if trainable else 0.0) * m.vocab_size * m.hidden_size if tied else 0.0
    )
    loss_copies = (0.0 if ckpt else copies) + head_copy
    timeline: dict[str, dict[str, float]] = {
        "forward_end": {"activations": saved, "autocast_weight_copies": copies + head_copy,
                        "logits": HF_LOSS_FORWARD_BYTES * logit_elems, "gradients": 0.0},
        "loss_backward": {"activations": saved, "autocast_weight_copies": loss_copies,
                          "logits": HF_LOSS_BACKWARD_BYTES * logit_elems, "gradients": 0.0},
        "backward_end": {"activations": 0.0, "autocast_weight_copies": 0.0, "logits": 0.0,
                         "gradients": grads + tied_grad},
    }  # fmt: skip
    if ckpt and st.layers:
        one = hf_eager_checkpoint_bytes(m, tokens=tokens, mode=mode)
        layer_copies = (
            copies / max(1, st.layers) if mode == "amp_full" else 0.0
        )  # recompute recasts one layer
        top = {"activations": (st.layers - 1) * one + head_acts + layer, "gradients": 0.0}
        bottom = {"activations": layer, "gradients": grads}
        for name, mom in (("top_layer_backward", top), ("bottom_layer_backward", bottom)):
            timeline[name] = {**mom, "autocast_weight_copies": layer_copies, "logits": 0.0}
    peak = max(timeline, key=lambda k: sum(timeline[k].values()))
    parts.update(timeline[peak])
    return parts


def _training_parts(q: _Query, st: _Stage) -> dict[str, float]:
    m = q.m
    mode = _hf_mode(q)
    if mode is not None:
        return _hf_training_parts(q, st, mode)
    sharded = q.shard_degree or q.dp  # ZeRO/FSDP group: all dp ranks, or one node under hybrid sharding
    # experts replicate over dp / ep ranks (Megatron expert-data-parallel), sharded within that group
    expert_dp = max(1, min(sharded, q.dp // q.ep))

    def shard(n_params: float, stage: int) -> float:
        """Trainable parameters per GPU after ZeRO ``stage`` (1 optimizer, 2 grads, 3 weights) sharding."""
        if q.zero_stage < stage:
            return n_params
        return (n_params - experts) / sharded + experts / expert_dp

    parts: dict[str, float] = {}
    if q.task in ("lora", "qlora"):
        base = _adapter_base(q)
        parts["weights"] = _weight_bytes(st, base)
        if q.zero_stage >= 3:
            # the frozen base shards like the trainable weights of a full fine-tune (``shard``): the routed
            # experts, already split over ep by the stage (``_stages``), shard only over their dp / ep
            # expert-data-parallel group, the rest over all ``sharded`` ranks (Megatron expert-data-parallel;
            # DeepSpeed MoE ``expert_data_parallel_group``). Dividing the whole stage by ``sharded`` split
            # the experts twice: a LoRA of DeepSeek-V3 at TP1 EP8 DP8 held 23 GiB of weights per GPU, 8 GPUs
            # 184 GiB of a 1,250 GiB bf16 base.
            routed = max(st.expert_params, 0.0) * BYTES_PER_ELEMENT[base]
            parts["weights"] = (parts["weights"] - routed) / sharded + routed / expert_dp
        if q.kbit_upcast and q.task == "qlora":
            # PEFT prepare_model_for_kbit_training casts every fp16/bf16 parameter that is not Params4bit
            # (embeddings, lm_head, norms) to fp32 (peft 0.21.2 utils/other.py); axolotl patches it to
            # keep embed_tokens/lm_head 16-bit (monkeypatch/peft/utils.py), unsloth and torchtune skip it
            upcast = st.embed_params * (4.0 - UNQUANTISED_BYTES_PER_ELEMENT)
            parts["weights"] += upcast / (sharded if q.zero_stage >= 3 else 1)
        trainable = lora_params(m, q.lora_rank) * st.layers / m.num_layers / q.tp
        experts = 0.0
        if q.adapter_fp32:  # PEFT get_peft_model(autocast_adapter_dtype=True) upcasts bf16/fp16 adapters
            bpp = optimizer_bytes_per_param(
                q.optimizer, "fp32"
            )  # (peft 0.21 tuners_utils._cast_adapter_dtype)
        else:  # built in the model dtype (torchtune set_default_dtype(bf16), litgpt bf16-true)
            bpp = optimizer_bytes_per_param(q.optimizer, "bf16", master_weights=False)
        parts["lora_adapters"] = shard(trainable, 3) * bpp.weights
        if q.task == "qlora":  # one layer's largest matrix dequantised to bf16 at a time (bitsandbytes)
            widest = max(m.intermediate_size, m.moe_intermediate_size, m.num_attention_heads * m.head_dim)
            parts["dequant_workspace"] = 2.0 * m.hidden_size * widest / q.tp
        act_bytes = 2.0
    else:
        bpp = optimizer_bytes_per_param(
            q.optimizer, q.precision, fp32_grads=q.fp32_grads, master_weights=q.master_weights
        )
        trainable = st.layer_params + st.embed_params
        experts = st.expert_params
        parts["weights"] = shard(trainable, 3) * bpp.weights
        act_bytes = 4.0 if q.precision in ("fp32", "tf32") else 2.0
    parts["gradients"] = shard(trainable, 2) * bpp.gradients
    if q.optimizer_in_backward and q.task not in ("lora", "qlora"):
        # the optimizer steps each parameter as soon as its gradient is ready and frees it (torchtune
        # ``optimizer_in_bwd``, PyTorch "How to save memory by fusing the optimizer step into the backward
        # pass" tutorial): at most the largest tensor's gradient (embedding or LM head) is alive at once
        largest = float(m.vocab_size * m.hidden_size) / q.tp
        parts["gradients"] = min(parts["gradients"], largest * bpp.gradients)
    states = shard(trainable, 1) * bpp.optimizer_states
    if q.cpu_offload:
        # ZeRO-Offload / FSDP CPUOffload: fp32 master and optimizer states live and step on the host
        # (Ren et al. 2021, ZeRO-Offload sec. 4). ZeRO-2/3 also move each gradient partition to the host as
        # it is reduced, so the GPU keeps only the 16-bit weights: deepspeed 0.19.8
        # estimate_zero2_model_states_mem_needs(cpu_offload=True) gpu_mem = 2 x params,
        # estimate_zero3_model_states_mem_needs(cpu_offload_params=False) = largest layer + 2 x params / N.
        # ZeRO-1 reduces the full 16-bit gradients on the GPU after the backward, so they stay.
        states = 0.0
        if q.zero_stage >= 2:
            parts["gradients"] = 0.0
        if q.offload_params:
            # parameter offload (ZeRO-3 offload_param; FSDP2 CPUOffloadPolicy, which torchtune's
            # fsdp_cpu_offload sets: "FSDP will offload parameters, gradients, and optimizer states to CPU",
            # torchtune 0.6.1 training/_distributed.py shard_model): the GPU keeps only gathered modules,
            # deepspeed estimate_zero3_model_states_mem_needs(cpu_offload_params=True) = largest layer
            parts["weights"] = 0.0
            if "lora_adapters" in parts:
                parts["lora_adapters"] = 0.0
    parts.update(optimizer_state_parts(q.optimizer, states, 0.0 if q.cpu_offload else shard(trainable, 1)))

    def layers_sum(mode: str) -> float:
        def one(moe: bool) -> float:
            return activation_bytes_per_layer(
                m, seq_len=q.seq_len, batch=q.batch, tp=q.tp, sequence_parallel=q.sequence_parallel,
                recompute=mode, flash_attention=q.flash_attention, act_bytes=act_bytes, moe_layer=moe,
            )  # fmt: skip

        n_moe = st.layers - st.dense_layers
        return st.dense_layers * one(False) + (n_moe * one(True) if n_moe else 0.0)

    dropout = _lora_dropout_bytes_per_layer(q)
    if q.recompute == "full" and q.offload_checkpoints and st.layers:
        # each layer's checkpointed input is copied to pinned host buffers in the forward and brought back
        # for its backward (unsloth_zoo 2026.10.9 gradient_checkpointing.py UnslothCheckpointFunction /
        # Unsloth_Offloaded_Gradient_Checkpointer: hidden_states.to("cpu", non_blocking=True)): one
        # checkpoint on the GPU at a time
        act = layers_sum("full") / st.layers
    else:
        act = st.in_flight * (
            layers_sum(q.recompute) + (0.0 if q.recompute == "full" else dropout * st.layers)
        )
    if q.recompute == "full" and st.layers:  # one layer rematerialised during its backward
        act += layers_sum("none") / st.layers + dropout
    parts["activations"] = act
    if st.last:
        parts["logits"] = logits_bytes(m, tokens=q.seq_len * q.batch, tp=q.tp) / (
            CHUNKED_LOSS_CHUNKS if q.chunked_loss else 1
        )
    if sharded == 1:  # one rank: nothing is partitioned, so nothing is gathered or copied per partition
        return parts
    if q.zero_stage >= 3:
        parts["zero3_gathered"] = _zero3_gathered_bytes(q, st)
    if q.zero_stage >= 1 and q.task not in ("lora", "qlora") and not q.cpu_offload:
        step = _zero_fp32_grad_step_bytes(q, bpp, shard(trainable, 1), parts)
        if step > 0.0:
            parts["fp32_grad_partition"] = step
    return parts


def _zero_fp32_grad_step_bytes(
    q: _Query, bpp: TrainingBytesPerParam, partition: float, parts: Mapping[str, float]
) -> float:
    """Extra bytes at the ZeRO optimizer step for the fp32 copy of this rank's gradient partition.

    DeepSpeed steps its fp32 master partition on an fp32 gradient: ZeRO-1/2 ``step`` sets
    ``single_partition_of_fp32_groups[i].grad`` to the flattened 16-bit partition ``.to(fp32)``
    (deepspeed 0.19.8 runtime/zero/stage_1_and_2.py), ZeRO-3 ``_prepare_fp32_grad_for_sub_group`` does the
    same and frees the 16-bit partition (``averaged_gradients[sub_group_id] = None``, stage3.py). Hence
    deepspeed's ``estimate_zero2_model_states_mem_needs`` gpu_mem = 2P + 18P/N (2 grads16 + 4 grads32 + 4
    params32 + 8 moments, per its comment) and ``estimate_zero3_model_states_mem_needs`` = 4 x largest layer
    + 18P/N (2 params16 + 4 grads32 + 4 params32 + 8 moments). The activations and logits are freed by the
    step, so only what the fp32 copy needs beyond them raises the peak [bytes]. Mixed precision only: pure
    16-bit or fp32 training steps on the gradient it has (no copy)."""
    if not q.master_weights or bpp.gradients >= 4.0 or bpp.weights >= 4.0:
        return 0.0
    fp32 = 4.0 * partition
    if q.zero_stage >= 3:  # the 16-bit partition is released as its fp32 copy is made
        fp32 -= parts["gradients"]
    freed = parts["activations"] + parts.get("logits", 0.0)
    return max(0.0, fp32 - freed)


def _zero3_gathered_bytes(q: _Query, st: _Stage) -> float:
    """ZeRO-3/FSDP working set: the largest module gathered whole with its 16-bit gradient [bytes].

    deepspeed 0.19.8 runtime/zero/stage3.py ``estimate_zero3_model_states_mem_needs``:
    ``largest_layer_memory = 4 * largest_layer_params`` (16-bit parameters + gradients), the largest
    module's own parameters (``model_to_params``-style, not recursive): the embedding / LM head (V x h) on
    the stages that hold them, else the widest linear of a layer (FFN h x I, a routed expert's h x I_moe,
    the attention output heads x head_dim x h), split by TP. A LoRA base is frozen: its gathered module
    has no gradient (2 bytes, at the base's bytes per weight)."""
    m = q.m
    linears = [m.hidden_size * max(m.intermediate_size, m.moe_intermediate_size)]
    linears.append(m.num_attention_heads * m.head_dim * m.hidden_size)
    if st.first or st.last:
        linears.append(m.vocab_size * m.hidden_size)
    largest = max(linears) / q.tp
    if q.task in ("lora", "qlora"):
        return largest * BYTES_PER_ELEMENT[_adapter_base(q)]
    return 4.0 * largest


@checked_output("memory estimate")
def estimate_memory(
    *,
    model: ModelArch | str,
    task: str,
    precision: str,
    gpu: AcceleratorSpec | str,
    tp: int = 1,
    pp: int = 1,
    dp: int = 1,
    batch: int = 1,
    seq_len: int,
    kv_precision: str | None = None,
    zero_stage: int = 0,
    ep: int = 1,
    recompute: str = "selective",
    optimizer: str = "adamw",
    lora_rank: int = 16,
    engine: str = "vllm",
    fp32_grads: bool = False,
    sequence_parallel: bool = True,
    flash_attention: bool = True,
    allow_fallback: bool = False,
    master_weights: bool = True,
    optimizer_in_backward: bool = False,
    chunked_loss: bool = False,
    cpu_offload: bool = False,
    adapter_fp32: bool = True,
    lora_dropout: str = "none",
    offload_checkpoints: bool = False,
    shard_degree: int | None = None,
    offload_params: bool = False,
    kbit_upcast: bool = False,
    hf_eager: bool = False,
) -> MemoryEstimate:
    """Memory per GPU for ``task`` (docs/memory.md).

    A precision ``gpu`` cannot run raises :class:`UnsupportedError`; ``allow_fallback`` accepts the same
    fallbacks as the speed model (bf16 -> fp16 on T4/V100, fp8 -> weight-only fp8 on Ampere; sizes stay those
    of the stated precision) and records them in ``assumptions``.

    ``batch`` is concurrent sequences for inference and the micro-batch per model replica for training;
    ``seq_len`` is the context (prompt + output) or the training sequence length [tokens]. With pipeline
    parallelism the heaviest stage is reported. ``engine`` matters for inference only.

    Fine-tuning recipe knobs (see :mod:`gpufleet.estimate.recipes` for the named presets): ``optimizer``
    (``adamw``, ``adamw8bit``, ``paged_adamw8bit`` whose states page to host memory and are left out of
    ``allocated_gib``, ``adafactor``, ``sgd`` ...); ``master_weights`` False = pure 16-bit training (no fp32
    copy); ``optimizer_in_backward`` frees each gradient right after its update; ``chunked_loss`` computes
    the cross entropy in chunks (torchtune); ``cpu_offload`` keeps the fp32 master and optimizer states in
    host memory (DeepSpeed ZeRO-Offload, FSDP ``CPUOffload``; their speed cost is not modelled);
    ``adapter_fp32`` False keeps LoRA adapters and their AdamW states in the 16-bit model dtype (torchtune,
    litgpt) instead of PEFT's fp32 upcast; ``lora_dropout`` (:data:`LORA_DROPOUT_MODES`) where the trainer's
    LoRA dropout stores masks and dropped inputs; ``offload_checkpoints`` with full recompute keeps the
    checkpointed layer inputs in host memory (unsloth's ``use_gradient_checkpointing="unsloth"``);
    ``shard_degree`` < ``dp`` shards the ZeRO/FSDP states over groups of that many ranks and replicates them
    across groups (FSDP ``HYBRID_SHARD``: full sharding within a node, replication across nodes);
    ``offload_params`` (with ``cpu_offload`` and ``zero_stage=3``) also keeps the sharded parameters on the
    host (ZeRO-3 ``offload_param``, FSDP ``CPUOffloadPolicy``): only gathered modules stay on the GPU;
    ``kbit_upcast`` holds a QLoRA base's unquantised embeddings and LM head in fp32 (PEFT
    ``prepare_model_for_kbit_training``); ``hf_eager`` says the model runs Hugging Face transformers' eager
    modelling code under ``torch.autocast`` (HF Trainer, TRL, axolotl, PEFT): on one GPU without ZeRO, AMP
    full fine-tunes and fp32-adapter LoRA then take the tensors that code saves and the peak of the step's
    timeline instead of the generic sum (``_hf_training_parts``).
    """
    m = resolve_model(model)
    spec = _resolve_gpu(gpu)
    if task not in TASKS:
        raise InputError(f"Unknown task {task!r}. Allowed: {', '.join(TASKS)}. Pick the one you will run.")
    prec = check_precision(precision)
    task = adapter_task(task, prec, spec.architecture)
    support = precision_support(
        spec, "nf4" if task == "qlora" and prec == "int8" else prec, allow_fallback=allow_fallback
    )  # an 8-bit frozen adapter base computes in 16-bit, like any weight-only format
    _check_engine(engine)
    for name, v in (("batch", batch), ("seq_len", seq_len), ("lora_rank", lora_rank)):
        _positive(name, v)
    _check_parallel(m, tp, pp, dp, ep)
    if lora_dropout not in LORA_DROPOUT_MODES:
        raise InputError(
            f"Unknown lora_dropout mode {lora_dropout!r}. Allowed: {', '.join(LORA_DROPOUT_MODES)}. "
            "Use 'none' for lora_dropout 0 (the PEFT default)."
        )
    if shard_degree is not None and (shard_degree < 1 or dp % shard_degree):
        raise InputError(
            f"shard_degree {shard_degree} must divide dp={dp}: hybrid sharding shards within groups of that "
            "many data-parallel ranks (usually the GPUs of one node). Leave it out to shard over all of dp."
        )
    if offload_params and not (cpu_offload and zero_stage == 3):
        raise InputError(
            "offload_params keeps ZeRO-3/FSDP parameter shards on the host: it needs cpu_offload=True and "
            f"zero_stage=3 (got cpu_offload={cpu_offload}, zero_stage={zero_stage}). Set both, or drop it."
        )
    if zero_stage not in (0, 1, 2, 3):
        raise InputError(f"zero_stage must be 0, 1, 2 or 3 (3 = FSDP full sharding), got {zero_stage!r}.")
    check_recompute(recompute)
    if kv_precision is not None:
        kv_bytes_per_element(kv_precision)
    if task not in ("inference", "load"):
        optimizer_bytes_per_param(optimizer, "fp32" if task in ("lora", "qlora") else prec)
    q = _Query(
        m=m, task=task, precision=prec, engine=engine if task == "inference" else "pytorch", tp=tp, pp=pp,
        dp=dp, ep=ep, batch=batch, seq_len=seq_len, kv_precision=kv_precision, zero_stage=zero_stage,
        recompute=recompute, optimizer=optimizer, lora_rank=lora_rank, fp32_grads=fp32_grads,
        sequence_parallel=sequence_parallel, flash_attention=flash_attention, master_weights=master_weights,
        optimizer_in_backward=optimizer_in_backward, chunked_loss=chunked_loss, cpu_offload=cpu_offload,
        adapter_fp32=adapter_fp32, lora_dropout=lora_dropout, offload_checkpoints=offload_checkpoints,
        shard_degree=shard_degree, offload_params=offload_params, kbit_upcast=kbit_upcast, hf_eager=hf_eager,
    )  # fmt: skip
    usable, parts, slack = _assemble(q, spec)
    over = _overheads(q)
    fallback = tuple(n for n in support.notes if "fallback" in n)
    paged = parts.pop("optimizer_states_paged", 0.0)
    resident = sum(parts.values())
    # paged states occupy device memory only as far as it is free (the driver evicts them under pressure)
    paged_on_gpu = min(paged, max(0.0, spec.memory_gib * GIB - resident - sum(over.values())))
    if paged:
        parts["optimizer_states_paged"] = paged_on_gpu
    exact = parts.get("kv_cache", 0.0) + parts.get("weights", 0.0)
    per_gpu_p90 = (resident - exact) * memory_p90_factor() + exact + paged_on_gpu + sum(over.values())
    return MemoryEstimate(
        per_gpu_gib=(resident + paged_on_gpu + sum(over.values())) / GIB,
        per_gpu_gib_p90=per_gpu_p90 / GIB,
        allocated_gib=resident / GIB,
        usable_gib=usable / GIB,
        capacity_gib=spec.memory_gib,
        fits=slack >= 0.0,
        breakdown_gib={k: v / GIB for k, v in (parts | over).items()},
        assumptions=fallback + _assumptions(q),
        optimizer=None if task in ("inference", "load") else optimizer,
    )


@lru_cache(maxsize=65536)
def training_fits(
    *,
    model: ModelArch,
    task: str,
    precision: str,
    memory_gib: float,
    tp: int,
    pp: int,
    dp: int,
    ep: int,
    seq_len: int,
    zero_stage: int,
    recompute: str,
    optimizer: str = "adamw",
    master_weights: bool = True,
    **knobs: Any,
) -> bool:
    """Whether :func:`estimate_memory` (training ``task``, ``batch=1``, ``engine="pytorch"``, ``optimizer``
    and ``master_weights`` and the fine-tuning ``knobs`` as given (recipes.TrainingOptions ``knobs``: the
    :class:`_Query` fields of the same names, so a new knob needs no change here), every other argument at
    its default) on a GPU of ``memory_gib``
    reports ``fits``: the same slack computation
    (:func:`_assemble`), without building the estimate. The layout search screens thousands of layouts with
    it and builds full estimates only for those it keeps; the caller validates the shared arguments once
    with :func:`estimate_memory`. The result depends on the GPU only through its capacity, so the cache is
    keyed by it (providers list the same GPU under many instance types)."""
    _check_parallel(model, tp, pp, dp, ep)
    q = _Query(
        m=model, task=task, precision=check_precision(precision), engine="pytorch", tp=tp, pp=pp, dp=dp,
        ep=ep, batch=1, seq_len=seq_len, kv_precision=None, zero_stage=zero_stage, recompute=recompute,
        optimizer=optimizer, lora_rank=16, fp32_grads=False, sequence_parallel=True, flash_attention=True,
        master_weights=master_weights, **knobs,
    )  # fmt: skip
    return _slack(q, memory_gib * GIB)[2] >= 0.0


def _assemble(q: _Query, spec: AcceleratorSpec) -> tuple[float, dict[str, float], float]:
    """(usable bytes, parts of the heaviest stage, slack) of one validated query [bytes]."""
    return _slack(q, spec.memory_gib * GIB)


def _slack(q: _Query, cap: float) -> tuple[float, dict[str, float], float]:
    """(usable bytes, parts of the heaviest stage, slack) of one validated query on ``cap`` bytes."""
    m, prec, task = q.m, q.precision, q.task
    over = _overheads(q)
    extra = _budgeted_overheads(q.engine, over)
    best: tuple[float, dict[str, float], float] | None = None
    for st in _candidate_stages(_stages(m, q.tp, q.pp, q.ep)):
        if task == "load":
            parts = {"weights": _weight_bytes(st, prec)}
        elif task == "inference":
            parts = _inference_parts(q, st)
        else:
            parts = _training_parts(q, st)
        allocated = sum(v for k, v in parts.items() if k != "optimizer_states_paged")
        kv = parts.get("kv_cache", 0.0)
        usable = _usable(cap, q.engine, over, allocated - kv)
        # judged at the p90 of the modelled tensors (memory_p90_factor); weights and KV cache are exact
        exact = kv + parts.get("weights", 0.0)
        slack = usable - (allocated - exact) * memory_p90_factor() - exact - extra
        if best is None or slack < best[2]:
            best = (usable, parts, slack)
    assert best is not None
    return best


def _candidate_stages(stages: tuple[_Stage, ...]) -> tuple[_Stage, ...]:
    """The stages that can be the heaviest. Under 1F1B a stage's load is its parameters plus (p - i)
    micro-batches of activations; the first stages hold the extra layers and the most micro-batches, so past
    the dense-first layers of a MoE model (at most the first few stages) the load only falls until the last
    stage, which adds lm_head and the logits. Checking the first four and the last is exact for that layout
    and keeps deep pipelines cheap to size."""
    if len(stages) <= 5:
        return stages
    return (*stages[:4], stages[-1])


def _overheads(q: _Query) -> dict[str, float]:
    """Memory outside torch's allocator: CUDA context, NCCL buffers, vLLM CUDA graphs [bytes]."""
    out = {"cuda_context": CUDA_CONTEXT_GIB * GIB}
    if q.tp * q.pp * (q.dp if q.task != "inference" else q.ep) > 1:
        out["nccl_buffers"] = NCCL_BUFFERS_GIB * GIB
    if q.task == "inference" and q.engine == "vllm":
        out["cuda_graphs"] = VLLM_CUDA_GRAPHS_GIB * GIB
    return out


def _budgeted_overheads(engine: str, over: Mapping[str, float]) -> float:
    """Non-tensor memory that must fit in the usable budget beside the tensors [bytes].

    vLLM takes its memory snapshot after the CUDA context and the NCCL communicators exist (vllm 0.33.0
    v1/worker/gpu_worker.py ``init_device``: ``init_worker_distributed_environment`` then
    ``init_snapshot = MemorySnapshot()``; ``request_memory`` = ``gpu_memory_utilization`` x total), and
    ``determine_available_memory`` subtracts from that budget only what was consumed after the snapshot
    (weights, profiling peak, non-torch increase) and the CUDA-graph estimate: context and NCCL buffers sit
    in the remaining 10 %. Other engines: NCCL buffers and graphs come out of the usable memory."""
    if engine == "vllm":
        return over.get("cuda_graphs", 0.0)
    return sum(v for k, v in over.items() if k != "cuda_context")


def _usable(cap: float, engine: str, over: Mapping[str, float], static: float) -> float:
    """Bytes the engine may use for tensors on one GPU, after the CUDA context and the engine reserve.

    ``static`` = weights + activations + logits (TRT-LLM sizes its KV pool from what is free after them).
    vLLM: ``gpu_memory_utilization`` x device memory, the context outside it (:func:`_budgeted_overheads`).
    """
    ctx = over["cuda_context"]
    if engine == "vllm":
        return cap * VLLM_GPU_MEMORY_UTILIZATION
    if engine == "trtllm":
        free = max(0.0, cap - ctx - static - over.get("nccl_buffers", 0.0))
        return cap - ctx - (1.0 - TRTLLM_KV_FREE_FRACTION) * free
    return cap - ctx


def max_concurrent_sequences(
    *,
    model: ModelArch | str,
    gpu: AcceleratorSpec | str,
    precision: str,
    tp: int,
    pp: int,
    context_len: int,
    kv_precision: str | None = None,
    engine: str = "vllm",
    allow_fallback: bool = False,
    ep: int = 1,
) -> int:
    """Sequences of ``context_len`` tokens that fit one replica's KV cache [count].

    The largest ``b`` for which :func:`estimate_memory` at ``batch=b`` fits (engine reserve, block rounding,
    heaviest pipeline stage, and the per-sequence terms that grow with the batch besides the KV cache:
    sampling logits beyond vLLM's profiled ``max_num_seqs``, TRT-LLM's pool sized after them, whole-batch
    prefill activations without chunking); 0 when even one does not fit. ``ep`` > 1: the routed experts are
    split over ``tp x ep`` GPUs (expert parallelism) and the count is per attention group of ``tp`` GPUs.
    """
    m = resolve_model(model)
    if not m.is_decoder:
        raise UnsupportedError(
            f"{m.id} is an encoder-only model: it has no KV cache, so concurrency is not KV-bound. "
            "Use estimate_memory with the batch you plan to run."
        )
    spec = _resolve_gpu(gpu)
    _positive("context_len", context_len)
    # validates every other input exactly as estimate_memory does
    estimate_memory(
        model=m, task="inference", precision=precision, gpu=spec, tp=tp, pp=pp, seq_len=context_len,
        kv_precision=kv_precision, engine=engine, allow_fallback=allow_fallback, ep=ep,
    )  # fmt: skip
    q = _Query(
        m=m, task="inference", precision=check_precision(precision), engine=engine, tp=tp, pp=pp, dp=1,
        ep=ep, batch=1, seq_len=context_len, kv_precision=kv_precision, zero_stage=0, recompute="selective",
        optimizer="adamw", lora_rank=1, fp32_grads=False, sequence_parallel=True, flash_attention=True,
    )  # fmt: skip
    cap = spec.memory_gib * GIB
    over = _overheads(q)
    extra = _budgeted_overheads(engine, over)
    # upper bound: the pool left beside the batch-1 tensors, divided by one sequence's KV cache
    hi = math.inf
    for st in _stages(m, tp, pp, ep):
        parts = _inference_parts(q, st)
        per_seq = parts.pop("kv_cache")
        static = sum(parts.values())
        pool = _usable(cap, engine, over, static) - static - extra
        hi = min(hi, math.floor(max(0.0, pool) / per_seq))
    # memory grows with the batch: the largest batch that still fits, searched in [0, bound]. The slack is
    # nearly linear in the batch, so a secant guess through batch 1 and the bound lands within a sequence or
    # two of it; probing the guess and the next batch narrows the bracket that the bisection then searches:
    # the same answer in ~4 probes instead of ~12
    lo, hi_n = 0, int(hi)

    def slack(b: int) -> float:
        return _assemble(replace(q, batch=b), spec)[2]

    if hi_n >= 2:
        s1, s_hi = slack(1), slack(hi_n)
        if s_hi >= 0.0:
            return hi_n
        if not s1 >= 0.0:
            return 0
        lo, hi_n = 1, hi_n - 1  # batch 1 fits, the bound does not
        per_seq = (s1 - s_hi) / hi_n  # slack lost per added sequence
        if math.isfinite(per_seq) and per_seq > 0.0:
            guess = min(max(1 + int(s1 / per_seq), lo), hi_n)
            if slack(guess) >= 0.0:
                lo = guess
                if guess < hi_n and not slack(guess + 1) >= 0.0:
                    hi_n = guess
            else:
                hi_n = guess - 1
    while lo < hi_n:
        mid = (lo + hi_n + 1) // 2
        if slack(mid) >= 0.0:
            lo = mid
        else:
            hi_n = mid - 1
    return lo


def _assumptions(q: _Query) -> tuple[str, ...]:
    a = [
        f"CUDA context {CUDA_CONTEXT_GIB} GiB per GPU (CUDA 12 lazy loading).",
        f"Fit verdict at the p90 of memory: modelled tensors x {memory_p90_factor():.3f} (the memory "
        "interval of the calibration profile)"
        + ("; the KV cache at its exact size." if q.task == "inference" else "."),
    ]
    if q.tp * q.pp * (q.dp if q.task != "inference" else 1) > 1:
        a.append(f"NCCL buffers {NCCL_BUFFERS_GIB} GiB per GPU (stated assumption).")
    if q.ep > 1:
        a.append(f"Routed experts split over tp x ep = {q.tp * q.ep} GPUs; ZeRO shards them over dp/ep.")
    if q.pp > 1:
        a.append("Heaviest pipeline stage shown: the first holds the embedding, the last lm_head and logits.")
    if q.precision in _QUANTISED and q.task in ("inference", "load", "lora", "qlora"):
        a.append(f"Linear layers in {q.precision} incl. scales; embeddings, lm_head and norms stay 16-bit.")
        if q.precision == "fp4" and q.m.is_moe:
            from gpufleet.estimate.moe_serving import FP4_MOE_NONROUTED_PRECISION

            a.append(
                f"fp4 MoE checkpoint: only the routed experts are fp4; attention, dense layers and shared "
                f"experts stay {FP4_MOE_NONROUTED_PRECISION}."
            )
    if q.task == "load":
        a.append("Weights only: no KV cache, activations or optimizer.")
    elif q.task == "inference":
        a += _inference_assumptions(q)
    else:
        a += _training_assumptions(q)
    return tuple(a)


def _inference_assumptions(q: _Query) -> list[str]:
    m, kv = q.m, q.kv_precision or "16-bit"
    if m.is_mla:
        a = [f"KV cache in {kv}: the {m.kv_lora_rank + m.qk_rope_head_dim}-wide MLA latent per layer."]
    else:
        a = [f"KV cache in {kv} over {m.num_kv_heads} KV heads x head_dim {m.head_dim}."]
    if m.sliding_window:
        a.append(
            f"Sliding window {m.sliding_window} tokens caps the cache on "
            f"{m.sliding_window_layer_fraction:.0%} of layers (window-aware KV allocator)."
        )
    if q.engine == "vllm":
        a.append(
            f"vLLM: gpu_memory_utilization {VLLM_GPU_MEMORY_UTILIZATION}, {KV_BLOCK_TOKENS['vllm']}-token "
            f"blocks, {PREFILL_CHUNK_TOKENS['vllm']}-token prefill chunk, CUDA graphs {VLLM_CUDA_GRAPHS_GIB} "
            "GiB (stated)."
        )
    elif q.engine == "trtllm":
        a.append(
            f"TRT-LLM: KV pool = {TRTLLM_KV_FREE_FRACTION} of memory free after weights; "
            f"{KV_BLOCK_TOKENS['trtllm']}-token blocks; max_num_tokens {PREFILL_CHUNK_TOKENS['trtllm']}."
        )
    else:
        a.append(
            f"{q.engine}: no pre-reservation; whole context prefilled at once; last-token logits only; "
            "allocator fragmentation not added."
        )
    return a


def _training_assumptions(q: _Query) -> list[str]:
    a = []
    if q.task in ("lora", "qlora"):
        a.append(
            f"LoRA rank {q.lora_rank} on {LORA_TARGETS}; adapters, grads and {q.optimizer} state in "
            + ("fp32 (PEFT upcast)." if q.adapter_fp32 else "the 16-bit model dtype.")
        )
        if q.task == "qlora":
            base = "8-bit (LLM.int8)" if q.precision == "int8" else "NF4 with double quantisation"
            a.append(f"QLoRA-style frozen base in {base}; bf16 compute.")
            if q.kbit_upcast:
                a.append("Embeddings and LM head upcast to fp32 (PEFT prepare_model_for_kbit_training).")
    elif _hf_mode(q) == "amp_full":
        a.append(
            f"fp32 model under bf16 autocast (HF Trainer bf16=True): fp32 weights 4 + fp32 grads 4 + "
            f"{q.optimizer} states {OPTIMIZER_MOMENT_BYTES[q.optimizer]:g} bytes/param."
        )
    else:
        bpp = optimizer_bytes_per_param(
            q.optimizer, q.precision, fp32_grads=q.fp32_grads, master_weights=q.master_weights
        )
        a.append(
            f"{q.optimizer}{'' if q.master_weights else ' (pure 16-bit, no fp32 master)'}: "
            f"{bpp.total:g} bytes/param (weights {bpp.weights:g}, grads {bpp.gradients:g}, "
            f"states {bpp.optimizer_states:g})."
        )
        if q.cpu_offload:
            a.append("Optimizer states and fp32 master in host memory (ZeRO-Offload / FSDP CPUOffload).")
            if q.offload_params:
                a.append("Parameter shards in host memory too: only gathered modules on the GPU.")
        if q.optimizer_in_backward:
            a.append("Optimizer step fused into the backward: only the largest gradient is alive at once.")
    if q.offload_checkpoints and q.recompute == "full":
        a.append("Checkpointed layer inputs offloaded to host memory: one on the GPU at a time (unsloth).")
        if q.optimizer in PAGED_OPTIMIZERS:
            a.append(
                "Paged optimizer states live in CUDA managed memory: on the GPU only while memory is free, "
                "not in torch's allocated statistic."
            )
        if q.precision in ("fp8", "fp4", "int8"):
            a.append(
                f"{q.precision} training (Transformer Engine fp8 / NVFP4 recipes) computes GEMMs in "
                f"{q.precision} but keeps bf16 weights and fp32 master copies."
            )
    if q.zero_stage:
        group = q.shard_degree or q.dp
        rep = f", replicated across the {q.dp // group} groups (hybrid sharding)" if group < q.dp else ""
        a.append(f"ZeRO stage {q.zero_stage} shards over {group} of dp={q.dp} ranks{rep}.")
        if q.zero_stage >= 3:
            a.append("ZeRO-3: the largest module is gathered whole with its 16-bit gradient (DeepSpeed).")
        if q.master_weights and q.task not in ("lora", "qlora") and not q.cpu_offload:
            a.append("The ZeRO optimizer step copies this rank's gradient partition to fp32 (DeepSpeed).")
    mode = _hf_mode(q)
    if mode is not None:
        saves = {
            "amp_full": "fp32 residual stream and RMSNorm, bf16 copies of each linear input",
            "bf16_full": "fp32 RMSNorm upcasts, bf16 linear inputs",
            "lora": "fp32 RMSNorm upcasts, a bf16 copy of each LoRA input",
            "qlora": "fp32 residual stream and SwiGLU tensors after prepare_model_for_kbit_training, a bf16 "
            "copy of each LoRA input, no input of the NF4 base, lm_head's bf16 cast",
        }[mode]
        kept = "checkpointed layer inputs (non-reentrant)" if q.recompute == "full" else "no checkpointing"
        a.append(
            f"Hugging Face transformers eager model under torch.autocast: what it saves ({saves}); {kept}."
        )
        a.append(
            "Peak of the step timeline, not a sum: end of forward (autocast bf16 weight copies, 10 B per "
            "logit), loss backward (12 B per logit, no gradients yet: zero_grad(set_to_none=True)), layer "
            "backward, optimizer step (all gradients, no activations)."
        )
        a.append("No allocator fragmentation added (PyTorch's caching allocator may reserve more).")
        return a
    a.append(
        f"Activations per Korthikanti et al. 2022, recompute {q.recompute}, "
        f"{'flash attention' if q.flash_attention else 'materialised attention scores'}, "
        f"{'sequence parallel' if q.sequence_parallel else 'no sequence parallelism'}, "
        f"{'dropout masks' if q.m.dropout else 'no dropout'}; 1F1B keeps pp micro-batches on stage 1."
    )
    a.append(
        "Logits: 16-bit + fp32 upcast for the loss (6 B per vocab entry per token), split over TP"
        + (f", computed in {CHUNKED_LOSS_CHUNKS} chunks." if q.chunked_loss else ".")
    )
    a.append(
        "No allocator fragmentation added (PyTorch's caching allocator may reserve more than it allocates)."
    )
    return a
