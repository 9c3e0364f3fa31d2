"""Serving memory: the engines' KV cache, prefill activations, sampling logits, CUDA context, NCCL
buffers, CUDA graphs and pre-reservation (docs/memory.md; split from :mod:`gpufleet.estimate.memory`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from gpufleet.errors import InputError
from gpufleet.estimate.activations import (
    inference_activation_bytes,
)
from gpufleet.estimate.kv_cache import _KV_BYTES as _KV_BYTES
from gpufleet.estimate.kv_cache import _kv_per_token_layer as _kv_per_token_layer
from gpufleet.estimate.kv_cache import _round_up as _round_up
from gpufleet.estimate.kv_cache import kv_cache_bytes as kv_cache_bytes
from gpufleet.estimate.kv_cache import kv_cache_bytes_per_sequence
from gpufleet.estimate.kv_cache import kv_cache_bytes_per_token as kv_cache_bytes_per_token
from gpufleet.estimate.kv_cache import mla_kv_cache_bytes as mla_kv_cache_bytes
from gpufleet.estimate.memory_params import (
    _Query,
    _Stage,
    _weight_bytes,
)
from gpufleet.units import GIB

Engine = Literal["vllm", "trtllm", "transformers", "pytorch"]
ENGINES: tuple[str, ...] = ("vllm", "trtllm", "transformers", "pytorch")
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
#: vLLM ``max_num_seqs`` default 256: its profiling run samples that many sequences' logits (fp32)
VLLM_MAX_NUM_SEQS = 256


def _check_engine(engine: str) -> str:
    if engine not in ENGINES:
        raise InputError(
            f"Unknown inference engine {engine!r}. Allowed: {', '.join(ENGINES)}. "
            "vllm and trtllm pre-reserve a KV pool; transformers/pytorch allocate on demand."
        )
    return engine


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


def _overheads(q: _Query) -> dict[str, float]:
    """Memory outside torch's allocator: CUDA context, NCCL buffers, vLLM CUDA graphs [bytes]."""
    out = {"cuda_context": CUDA_CONTEXT_GIB * GIB}
    if q.tp * q.pp * (q.dp * q.cp if q.task != "inference" else q.ep) > 1:
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
