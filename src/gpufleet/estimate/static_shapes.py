"""Static-shape serving on Intel Gaudi: padded decode batches and padded attention context.

Gaudi runs a model as HPU graphs compiled for fixed tensor shapes, so its serving stacks pad every decode
step to a few bucketed shapes instead of running the exact batch and context (Intel Gaudi docs, "Optimizing
inference: static shapes and bucketing"):

* Optimum-Habana ``run_generation.py`` (the text-generation example behind Intel's published "LLM for
  Throughput" tables; a Gaudi case or call naming no stack, or HF ``transformers``, which Optimum-Habana
  patches): one static batch prefills together and decodes in lockstep (no continuous batching); the KV cache
  is allocated at the maximum length (``--reuse_cache``) and decode attention runs over the cache up to the
  current bucket (``--bucket_size 128 --bucket_internal`` in the throughput recipes; without it, over the
  whole padded cache) (optimum-habana ``examples/text-generation/README.md``).
* TGI on Gaudi (``tgi-gaudi``): continuous batching with the decode batch padded to ``BATCH_BUCKET_SIZE`` (8)
  and sequences to ``PAD_SEQUENCE_TO_MULTIPLE_OF`` (128) (tgi-gaudi README, environment variables).
* vLLM on Gaudi (``HabanaAI/vllm-fork``): continuous batching with decode batches padded to buckets of
  ``VLLM_DECODE_BS_BUCKET_STEP`` (32) sequences and KV reads to whole 128-token blocks bucketed by
  ``VLLM_DECODE_BLOCK_BUCKET_STEP`` (README_GAUDI.md, "Bucketing mechanism").

A decode step of ``b`` sequences at context ``c`` then computes ``ceil(b / batch_bucket) x batch_bucket``
rows and reads KV over ``c`` rounded up to ``context_bucket``; over a whole generation the mean padded
context is ``input + output / 2 + context_bucket / 2`` (positions spread evenly inside a bucket), at most the
padded full length. MLPerf submissions (``pytorch`` on Gaudi) use Intel's own harness and keep the default
continuous-batching model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpufleet.catalog.specs import AcceleratorSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class StaticShapes:
    """Padding a static-shape serving stack applies to each decode step."""

    stack: str  # the serving stack these shapes describe
    batch_bucket: int  # decode batch padded up to a multiple of this [sequences]
    context_bucket: int  # attention / KV reads padded up to a multiple of this [tokens]
    static_batching: bool  # the batch prefills together, then decodes in lockstep


#: software key -> the Gaudi stack's shapes (module doc for the sources)
GAUDI_STATIC_SHAPES: dict[str, StaticShapes] = {
    "unknown": StaticShapes(stack="optimum-habana", batch_bucket=1, context_bucket=128, static_batching=True),
    "transformers": StaticShapes(
        stack="optimum-habana", batch_bucket=1, context_bucket=128, static_batching=True
    ),
    "tgi": StaticShapes(stack="tgi-gaudi", batch_bucket=8, context_bucket=128, static_batching=False),
    "vllm": StaticShapes(stack="vllm-fork (HPU)", batch_bucket=32, context_bucket=128, static_batching=False),
}


def serving_shapes(spec: AcceleratorSpec, software: str) -> StaticShapes | None:
    """The static shapes ``software`` (a normalised stack key) serves with on ``spec``; None where the stack
    runs dynamic shapes (every GPU, and MLPerf-style ``pytorch`` harnesses on Gaudi)."""
    if not spec.architecture.startswith("Gaudi"):
        return None
    return GAUDI_STATIC_SHAPES.get(software)


def padded_batch(shapes: StaticShapes | None, batch: float) -> float:
    """Decode rows computed for ``batch`` sequences [sequences]."""
    if shapes is None or shapes.batch_bucket <= 1:
        return batch
    return float(math.ceil(batch / shapes.batch_bucket) * shapes.batch_bucket)


def mean_decode_context(shapes: StaticShapes | None, input_len: float, output_len: float) -> float:
    """Mean context a decode step's attention reads over a generation of ``output_len`` tokens [tokens]:
    ``input + output / 2`` exactly, or with static shapes that plus half a bucket, capped at the padded
    full length."""
    mean = input_len + output_len / 2.0
    if shapes is None:
        return mean
    bucket = shapes.context_bucket
    full = math.ceil((input_len + output_len) / bucket) * bucket
    return min(mean + bucket / 2.0, float(full))


__all__ = [
    "GAUDI_STATIC_SHAPES",
    "StaticShapes",
    "mean_decode_context",
    "padded_batch",
    "serving_shapes",
]
