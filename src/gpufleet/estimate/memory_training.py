"""Training memory per pipeline stage: gradients, optimizer states, activations, logits, ZeRO/FSDP
sharding and offload, LoRA adapters and the transformers eager step timeline (docs/memory.md; split from
:mod:`gpufleet.estimate.memory`)."""

from __future__ import annotations

from collections.abc import Mapping

from gpufleet.estimate.activations import (
    HF_LOSS_BACKWARD_BYTES,
    HF_LOSS_FORWARD_BYTES,
    HfMode,
    activation_bytes_per_layer,
    hf_eager_checkpoint_bytes,
    hf_eager_head_bytes,
    hf_eager_layer_bytes,
    hf_eager_supported,
    logits_bytes,
)
from gpufleet.estimate.kv_cache import _KV_BYTES as _KV_BYTES
from gpufleet.estimate.kv_cache import _kv_per_token_layer as _kv_per_token_layer
from gpufleet.estimate.kv_cache import _round_up as _round_up
from gpufleet.estimate.kv_cache import kv_cache_bytes as kv_cache_bytes
from gpufleet.estimate.kv_cache import kv_cache_bytes_per_token as kv_cache_bytes_per_token
from gpufleet.estimate.kv_cache import mla_kv_cache_bytes as mla_kv_cache_bytes
from gpufleet.estimate.memory_params import (
    OPTIMIZER_MOMENT_BYTES,
    PAGED_OPTIMIZERS,
    TrainingBytesPerParam,
    _adapter_base,
    _Query,
    _Stage,
    _weight_bytes,
    optimizer_bytes_per_param,
    optimizer_state_parts,
)
from gpufleet.models.params import LORA_TARGETS, lora_params
from gpufleet.precision import BYTES_PER_ELEMENT, UNQUANTISED_BYTES_PER_ELEMENT

#: chunks of torchtune's ``CEWithChunkedOutputLoss`` (``num_output_chunks`` 8)
CHUNKED_LOSS_CHUNKS = 8
#: bytes per logit (token x vocabulary entry) alive at the loss with a chunked cross entropy: the 16-bit
#: logits of every chunk (2 B) and one chunk's fp32 upcast (4 B / chunks). torchtune's
#: ``TransformerDecoder.chunked_output`` returns the list ``[self.output(chunk) for chunk in
#: last_hidden_state.tensor_split(num_output_chunks, dim=1)]``, all chunks alive until the loss, and
#: ``CEWithChunkedOutputLoss`` then runs ``F.cross_entropy(logits_chunk.float(), ...)`` one chunk at a time
#: ("upcasting one chunk at a time", torchtune ``modules/loss/ce_chunked_output_loss.py``), so chunking saves
#: the fp32 copies, not the 16-bit logits (the unchunked loss keeps 6 B: :func:`activations.logits_bytes`).
#: litgpt's ``chunked_cross_entropy`` over its chunked LM head keeps the same list of 16-bit chunks.
CHUNKED_LOSS_BYTES_PER_LOGIT = 2.0 + 4.0 / CHUNKED_LOSS_CHUNKS
#: LoRA dropout modes: where a trainer applies ``lora_dropout`` > 0 and so stores a dropout mask (1 B) and
#: the dropped input (16-bit) per adapter input for the backward: none (dropout 0: PEFT 0.21.2 LoraConfig,
#: torchtune configs, axolotl 0.19.0 schemas/peft.py default 0.0), ``shared_input`` (litgpt 0.5.13 lora.py
#: default lora_dropout 0.05 on q and v only, through the merged QKV layer: one ``self.lora_dropout(x)`` on
#: the attention input), ``per_module`` (PEFT ``LoraLayer.forward`` drops each target module's input
#: separately: q, k, v and gate, up take h each, o heads x head_dim, down the FFN width)
LORA_DROPOUT_MODES: tuple[str, ...] = ("none", "shared_input", "per_module")


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
    # ZeRO/FSDP group: all dp ranks, or one node under hybrid sharding; with context parallelism the cp ranks
    # of a sequence hold the same weights and shard with them (Megatron-Core distributed optimizer over the
    # data-parallel group with context parallelism)
    sharded = (q.shard_degree or q.dp) * q.cp
    # experts replicate over dp / ep ranks (Megatron expert-data-parallel), sharded within that group
    expert_dp = max(1, min(sharded, q.dp * q.cp // q.ep))

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

    # fp8 training keeps its linear layers' inputs in fp8 for the backward (Transformer Engine,
    # activations.fp8_linear_input_savings); a LoRA's frozen base computes no weight gradient
    te_fp8 = q.precision == "fp8" and q.task in ("pretrain", "full_finetune")

    def layers_sum(mode: str) -> float:
        def one(moe: bool) -> float:
            return activation_bytes_per_layer(
                m, seq_len=q.seq_len, batch=q.batch, tp=q.tp, sequence_parallel=q.sequence_parallel,
                recompute=mode, flash_attention=q.flash_attention, act_bytes=act_bytes, moe_layer=moe,
                fp8_linear_inputs=te_fp8,
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
        per_logit = CHUNKED_LOSS_BYTES_PER_LOGIT if q.chunked_loss else 6.0
        parts["logits"] = logits_bytes(
            m, tokens=q.seq_len * q.batch, tp=q.tp, logits_bytes_per_element=per_logit
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
        (
            f"Logits: all 16-bit chunks + one of {CHUNKED_LOSS_CHUNKS} chunks' fp32 upcast "
            f"({CHUNKED_LOSS_BYTES_PER_LOGIT:g} B per vocab entry per token, chunked cross entropy)"
            if q.chunked_loss
            else "Logits: 16-bit + fp32 upcast for the loss (6 B per vocab entry per token)"
        )
        + ", split over TP."
    )
    a.append(
        "No allocator fragmentation added (PyTorch's caching allocator may reserve more than it allocates)."
    )
    return a
