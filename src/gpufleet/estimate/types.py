"""Small value types shared by every estimator module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

Task = Literal["inference", "pretrain", "full_finetune", "lora", "qlora", "load"]
TASKS: tuple[str, ...] = get_args(Task)
TRAINING_TASKS: tuple[str, ...] = ("pretrain", "full_finetune", "lora", "qlora")
#: the tasks a fine-tuning recipe / optimizer applies to (gpufleet.estimate.recipes presets are fine-tuning
#: trainers' defaults; pre-training stacks set their own, inference has no optimizer)
FINE_TUNING_TASKS: tuple[str, ...] = ("full_finetune", "lora", "qlora")
#: software stacks the calibration-case schema names (blank = unknown); also what --engine/--software accept
SOFTWARES: tuple[str, ...] = (
    "nemo",
    "megatron",
    "deepspeed",
    "megatron_deepspeed",
    "pytorch",
    "trtllm",
    "vllm",
    "tgi",
    "llamacpp",
    "transformers",
    "paddle",
    "sglang",
    "jax",
    "torchtune",
    "unsloth",
    "axolotl",
)

#: other spellings of the schema's stacks -> its key (names as the projects write them; a wrapper maps to
#: the engine it runs: Ollama runs llama.cpp, optimum-habana is Hugging Face transformers on Gaudi, MaxText
#: is JAX, torchtitan and FSDP are PyTorch)
SOFTWARE_ALIASES: dict[str, str] = {
    "tensorrt-llm": "trtllm", "tensorrt_llm": "trtllm", "trt-llm": "trtllm", "trt_llm": "trtllm",
    "tensorrt": "trtllm", "llama.cpp": "llamacpp", "llama-cpp": "llamacpp", "llama_cpp": "llamacpp",
    "ggml": "llamacpp", "ollama": "llamacpp", "hf": "transformers", "huggingface": "transformers",
    "hf-transformers": "transformers", "peft": "transformers", "trl": "transformers",
    "hf trainer": "transformers", "optimum-habana": "transformers", "optimum_habana": "transformers",
    "text-generation-inference": "tgi", "tgi-gaudi": "tgi", "sgl": "sglang", "maxtext": "jax", "paxml": "jax",
    "pax": "jax", "flax": "jax", "megatron-lm": "megatron", "megatron_lm": "megatron",
    "megatron-core": "megatron", "mcore": "megatron", "nemo-megatron": "nemo", "nemo framework": "nemo",
    "megatron-deepspeed": "megatron_deepspeed", "torch": "pytorch", "fsdp": "pytorch",
    "torchtitan": "pytorch",
    "pytorch-fsdp": "pytorch", "pytorch fsdp": "pytorch", "ddp": "pytorch", "paddlepaddle": "paddle",
    "paddlenlp": "paddle",
}  # fmt: skip
#: architectures whose training stacks train with int8 matmuls: TPUs through AQT in MaxText (Google Cloud
#: "Accurate Quantized Training" docs; MLPerf Training v4.0/v4.1 Google gpt3 submissions)
INT8_TRAINING_ARCHS: tuple[str, ...] = ("TPU",)
#: frozen-base formats of an adapter fine-tune loaded through bitsandbytes: 4-bit (QLoRA, Dettmers et al.
#: 2023) and 8-bit (LLM.int8(), Dettmers et al. 2022; PEFT's ``prepare_model_for_kbit_training`` for
#: ``load_in_8bit``/``load_in_4bit`` bases, which turns gradient checkpointing on by default)
QUANTISED_ADAPTER_BASES: frozenset[str] = frozenset({"int4", "nf4", "int8"})


def adapter_task(task: str, precision: str, architecture: str) -> str:
    """The task a job really runs: a LoRA on a quantised frozen base (4-bit, or 8-bit on a GPU, where no
    stack trains int8 matmuls) is a QLoRA-style job (dequantise per matmul, bitsandbytes recipe)."""
    if task != "lora" or precision not in QUANTISED_ADAPTER_BASES:
        return task
    if precision == "int8" and architecture.startswith(INT8_TRAINING_ARCHS):
        return task  # TPU: LoRA with int8 (AQT) matmuls, like int8 training
    return "qlora"


@dataclass(frozen=True, slots=True, kw_only=True)
class Interval:
    """A central estimate with its p10-p90 interval, in the unit named by the field that holds it."""

    central: float
    p10: float
    p90: float

    def scaled(self, factor: float) -> Interval:
        """The same interval multiplied by a positive ``factor`` (unit conversion, per-GPU to total, ...)."""
        lo, hi = sorted((self.p10 * factor, self.p90 * factor))
        return Interval(central=self.central * factor, p10=lo, p90=hi)

    def inverted(self, numerator: float = 1.0) -> Interval:
        """``numerator / x`` for a positive quantity (time <-> rate); p10 and p90 swap."""
        return Interval(central=numerator / self.central, p10=numerator / self.p90, p90=numerator / self.p10)
