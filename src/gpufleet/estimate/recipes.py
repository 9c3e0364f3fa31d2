"""Named fine-tuning recipe presets: the memory-relevant defaults of common trainers.

A preset fixes what a trainer does unless the user overrides it: the optimizer, whether weights keep an fp32
master copy, activation checkpointing, optimizer-in-backward and a chunked loss. Each value cites the
trainer's default configuration. :func:`recipe_for` picks a preset from a software name or a case note.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from gpufleet.errors import InputError

if TYPE_CHECKING:
    from gpufleet.estimate.memory import MemoryEstimate


@dataclass(frozen=True, slots=True, kw_only=True)
class Recipe:
    """Memory-relevant defaults of one trainer's single-node fine-tuning recipes."""

    name: str
    optimizer_full: str  # optimizer of full fine-tunes
    optimizer_adapter: str  # optimizer of LoRA / QLoRA
    master_weights: bool  # fp32 master copy of trainable weights (mixed precision) or pure 16-bit
    recompute: str  # none | selective | full (activation checkpointing = full)
    optimizer_in_backward: bool  # full fine-tunes step each parameter during the backward
    chunked_loss: bool  # cross entropy computed in chunks
    source: str
    #: activations offloaded to host memory on a side stream (torchtune ``enable_activation_offloading``):
    #: memory as with checkpointing, speed without recompute
    activation_offloading: bool = False
    #: LoRA adapters (and their gradients and optimizer states) in fp32: PEFT's ``get_peft_model``
    #: ``autocast_adapter_dtype=True`` upcasts bf16/fp16 adapters (peft 0.21.2 ``tuners_utils``
    #: ``_cast_adapter_dtype``); False = built in the model's 16-bit dtype (torchtune, litgpt bf16-true)
    adapter_fp32: bool = True
    #: optimizer of full fine-tunes on several GPUs when the trainer's distributed recipe differs from its
    #: single-device one (None: ``optimizer_full``)
    optimizer_full_distributed: str | None = None
    #: parameter sharding of the trainer's multi-GPU recipe as a ZeRO stage (3 = FSDP full sharding)
    distributed_zero_stage: int = 0
    #: activation checkpointing of the multi-GPU recipe when it differs from ``recompute`` (None: same)
    distributed_recompute: str | None = None
    #: where LoRA dropout stores masks and dropped inputs (memory.LORA_DROPOUT_MODES; none = dropout 0)
    lora_dropout: str = "none"
    #: checkpointed layer inputs copied to host memory (unsloth ``use_gradient_checkpointing="unsloth"``)
    checkpoint_offload: bool = False
    #: the trainer's CPU offload also moves the parameter shards (FSDP2 ``CPUOffloadPolicy``)
    cpu_offload_params: bool = False
    #: QLoRA runs PEFT ``prepare_model_for_kbit_training``, which upcasts the unquantised embeddings and
    #: LM head to fp32 (peft 0.21.2 utils/other.py)
    kbit_upcast: bool = False
    #: the trainer runs Hugging Face transformers' eager model code (``AutoModelForCausalLM`` modules, PEFT
    #: LoRA layers, the model's own ``ForCausalLMLoss``) under ``torch.autocast``: memory.estimate_memory
    #: ``hf_eager`` (what that code saves for the backward and the step's peak moment)
    hf_modeling: bool = False
    #: the trainer's published single-GPU rows keep the activations on the GPU (no checkpointing, no
    #: offloading) where that fits the card, and turn the memory savers on only where it does not
    fastest_fit_single_device: bool = False

    @property
    def speed_recompute(self) -> str:
        """Recompute mode that sets the speed: none when activations are offloaded instead of recomputed."""
        return "none" if self.activation_offloading else self.recompute


RECIPES: Mapping[str, Recipe] = MappingProxyType(
    {
        "torchtune": Recipe(
            name="torchtune",
            optimizer_full="paged_adamw8bit",
            optimizer_adapter="adamw",
            master_weights=False,
            recompute="full",
            optimizer_in_backward=True,
            chunked_loss=True,
            activation_offloading=True,
            adapter_fp32=False,
            optimizer_full_distributed="adamw",
            distributed_zero_stage=3,
            cpu_offload_params=True,
            fastest_fit_single_device=True,
            source="torchtune recipes/configs/llama3_1/8B_full_single_device.yaml (bnb PagedAdamW8bit, "
            "optimizer_in_bwd: True, dtype bf16) and 8B_lora_single_device.yaml (AdamW, "
            "CEWithChunkedOutputLoss); activations offloaded (enable_activation_offloading): torchtune's "
            "README speed/memory table is consistent with the hardware peak only without recompute and with "
            "the memory column only with activations off the GPU. LoRA adapters are built under "
            "set_default_dtype(bf16) (no fp32 upcast). Distributed configs (torchtune 0.6.1 "
            "llama3_1/8B_full.yaml, 70B_full.yaml, llama3_2/3B_full.yaml): torch.optim.AdamW on bf16 "
            "parameters (bf16 moments), optimizer_in_bwd False, FSDP2 fully_shard over all ranks; "
            "fsdp_cpu_offload (70B_full.yaml) = CPUOffloadPolicy: parameters, gradients and optimizer "
            "states on the host (training/_distributed.py shard_model). The README 'Memory and training "
            "speed' table (0.6.1 package description) runs the same batch-2 x 2048 recipes at 18.9 GiB "
            "(full) and 16.2 GiB (LoRA) on a 24 GB RTX 4090 but 37.4 and 30.3 GiB on a 48 GB A6000, at "
            "1.56x and 1.52x the tokens/s: the LoRA row has no paged optimizer and torch's allocator "
            "statistics (training/memory.py get_memory_stats) never count bitsandbytes' managed memory, so "
            "the A6000 rows keep the activations on the GPU (fastest_fit_single_device)",
        ),
        "hf_trainer": Recipe(
            name="hf_trainer",
            hf_modeling=True,
            optimizer_full="adamw",
            optimizer_adapter="adamw",
            master_weights=True,
            recompute="selective",
            optimizer_in_backward=False,
            chunked_loss=False,
            source="transformers TrainingArguments defaults: optim adamw_torch, gradient_checkpointing False "
            "(flash/SDPA attention keeps no scores), bf16 AMP keeps fp32 weights; PEFT LoRA likewise",
        ),
        "unsloth": Recipe(
            name="unsloth",
            optimizer_full="adamw8bit",
            optimizer_adapter="adamw8bit",
            master_weights=False,
            recompute="full",
            optimizer_in_backward=False,
            chunked_loss=True,
            checkpoint_offload=True,
            source="unsloth notebooks: optim adamw_8bit, use_gradient_checkpointing='unsloth', bf16 base, "
            "fused chunked cross entropy (unsloth README); 'unsloth' checkpointing copies each layer's input "
            "to pinned host buffers (unsloth_zoo 2026.10.9 gradient_checkpointing.py "
            "UnslothCheckpointFunction); LoRA through peft get_peft_model (fp32 adapters)",
        ),
        "axolotl": Recipe(
            name="axolotl",
            hf_modeling=True,
            optimizer_full="adamw8bit",
            optimizer_adapter="adamw8bit",
            master_weights=False,
            recompute="full",
            optimizer_in_backward=False,
            chunked_loss=False,
            source="axolotl examples (llama-3 lora/qlora/fft yml): optimizer adamw_bnb_8bit, "
            "gradient_checkpointing: true, bf16: auto, flash_attention: true, sample_packing: true",
        ),
        "litgpt": Recipe(
            name="litgpt",
            optimizer_full="adamw",
            optimizer_adapter="adamw",
            master_weights=False,
            recompute="none",
            optimizer_in_backward=False,
            chunked_loss=True,
            adapter_fp32=False,
            distributed_zero_stage=3,
            distributed_recompute="full",
            lora_dropout="shared_input",
            source="Lightning-AI litgpt finetune/lora.py and full.py defaults: --precision bf16-true "
            "(weights, gradients and AdamW states in bf16, no fp32 master copy), torch AdamW (bitsandbytes "
            "PagedAdamW when --quantize bnb.*), no activation checkpointing on one device, LM head and cross "
            "entropy in chunks (lm_head_chunk_size=128, chunked_cross_entropy); LoRA adapters created under "
            "fabric.init_module in bf16. Several devices (litgpt 0.5.13 finetune/full.py): FSDPStrategy "
            "(full sharding) with activation_checkpointing_policy={Block}; lora.py ModelParallelStrategy "
            "(FSDP2); lora_dropout 0.05 on the merged QKV input (lora.py: lora_query and lora_value only)",
        ),
        "trl": Recipe(
            name="trl",
            hf_modeling=True,
            optimizer_full="adamw",
            optimizer_adapter="adamw",
            master_weights=False,
            recompute="full",
            optimizer_in_backward=False,
            chunked_loss=False,
            source="trl 1.16.0 trainer/sft_config.py SFTConfig: gradient_checkpointing True (trl 0.19.0 left "
            "the TrainingArguments default False), bf16 True; the model loads in its checkpoint dtype "
            "(transformers 5.24.0 from_pretrained dtype None -> 'auto': bf16 for Llama/Qwen), so the Trainer "
            "updates bf16 weights with torch AdamW (bf16 moments, no fp32 master); PEFT adapters fp32 "
            "(autocast_adapter_dtype, kept bf16 only under ZeRO-3)",
        ),
        "bitsandbytes": Recipe(
            name="bitsandbytes",
            hf_modeling=True,
            optimizer_full="paged_adamw8bit",
            optimizer_adapter="paged_adamw8bit",
            master_weights=False,
            recompute="full",
            optimizer_in_backward=False,
            chunked_loss=False,
            kbit_upcast=True,
            source="low-memory recipes built on bitsandbytes: the QLoRA reference trainer (artidoro/qlora "
            "qlora.py: model loaded in bf16, gradient_checkpointing True, paged optimizer; Dettmers et al. "
            "2023 sec. 3-4) and PEFT's prepare_model_for_kbit_training (use_gradient_checkpointing=True by "
            "default); bitsandbytes 8-bit optimizers update the 16-bit parameters in place, no fp32 master "
            "copy (bitsandbytes docs '8-bit optimizers'); prepare_model_for_kbit_training casts every "
            "non-Params4bit fp16/bf16 parameter (embeddings, lm_head, norms) to fp32 (peft 0.21.2 "
            "utils/other.py)",
        ),
    }
)

#: optimizers that mark a low-memory bitsandbytes recipe when no trainer preset is named
LOW_MEMORY_OPTIMIZERS: tuple[str, ...] = ("adamw8bit", "adamw_8bit", "paged_adamw8bit")

#: words in a software name or note that name a preset
_ALIASES: tuple[tuple[str, str], ...] = (
    ("torchtune", "torchtune"),
    ("unsloth", "unsloth"),
    ("axolotl", "axolotl"),
    ("litgpt", "litgpt"),
    ("lit-gpt", "litgpt"),
    ("trl", "trl"),
    ("sfttrainer", "trl"),
    ("peft", "hf_trainer"),
    ("hf trainer", "hf_trainer"),
    ("transformers", "hf_trainer"),
)


def get_recipe(name: str) -> Recipe:
    """The preset called ``name``; :class:`InputError` naming the allowed ones otherwise."""
    key = name.strip().lower()
    if key not in RECIPES:
        raise InputError(
            f"Unknown fine-tuning recipe {name!r}. Allowed: {', '.join(RECIPES)}. Pick the trainer you use, "
            "or leave it out to use the estimator's generic defaults."
        )
    return RECIPES[key]


def implied_recipe(task: str, optimizer: str | None, gpu_count: int) -> Recipe | None:
    """The preset a job implies when it names no trainer: QLoRA (any GPU count), or a single-GPU fine-tune
    with an 8-bit or paged optimizer, runs the bitsandbytes low-memory recipe (pure 16-bit weights,
    gradient checkpointing); None otherwise."""
    if task == "qlora" or (gpu_count == 1 and optimizer in LOW_MEMORY_OPTIMIZERS and task != "inference"):
        return RECIPES["bitsandbytes"]
    return None


def recipe_for_job(
    software: str | None, note: str, *, task: str, optimizer: str | None, gpu_count: int
) -> Recipe | None:
    """The preset of a job: the trainer its software or note names, else the one it implies
    (:func:`implied_recipe`). QLoRA through HF Trainer/PEFT takes the bitsandbytes preset: PEFT's
    ``prepare_model_for_kbit_training`` turns gradient checkpointing on by default."""
    named = recipe_for(software, note)
    if named is None or (named.name == "hf_trainer" and task == "qlora"):
        return implied_recipe(task, optimizer, gpu_count) or named
    return named


def recipe_kwargs(recipe: Recipe, *, task: str, gpu_count: int) -> dict[str, Any]:
    """The :func:`gpufleet.estimate.memory.estimate_memory` options ``recipe`` sets for ``task`` on
    ``gpu_count`` GPUs, plus ``speed_recompute`` (the recompute that sets the speed) and ``zero_stage`` (the
    sharding of the trainer's multi-GPU recipe, when it has one): the single-device optimizer and recompute
    on one GPU, the distributed ones on several; optimizer-in-backward only for single-device full
    fine-tunes (torchtune's distributed configs and every LoRA recipe step after the backward)."""
    kw: dict[str, Any] = {}
    adapter = task in ("lora", "qlora")
    single = gpu_count == 1
    full_opt = recipe.optimizer_full_distributed if not single else None
    kw["optimizer"] = recipe.optimizer_adapter if adapter else (full_opt or recipe.optimizer_full)
    kw["master_weights"] = recipe.master_weights
    kw["recompute"] = (None if single else recipe.distributed_recompute) or recipe.recompute
    kw["speed_recompute"] = "none" if recipe.activation_offloading else kw["recompute"]
    kw["chunked_loss"] = recipe.chunked_loss
    kw["optimizer_in_backward"] = recipe.optimizer_in_backward and single and not adapter
    if recipe.checkpoint_offload:
        kw["offload_checkpoints"] = True
    if recipe.hf_modeling:
        kw["hf_eager"] = True  # Hugging Face modeling code: memory.estimate_memory's hf_eager timeline
    if recipe.cpu_offload_params:
        kw["offload_params"] = True  # applied only where the job offloads to the CPU under ZeRO-3
    if adapter:
        kw["adapter_fp32"] = recipe.adapter_fp32
        if recipe.kbit_upcast and task == "qlora":
            kw["kbit_upcast"] = True
        kw["lora_dropout"] = recipe.lora_dropout
    if not single and recipe.distributed_zero_stage:
        kw["zero_stage"] = recipe.distributed_zero_stage
    return kw


#: recipes whose trainer is also a speed stack of its own (rates.SOFTWARES): a job that names the recipe
#: and no software runs on that stack (as calibration cases do, predict.case_software)
STACK_RECIPES: tuple[str, ...] = ("torchtune", "unsloth", "axolotl")


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingOptions:
    """The fine-tuning options of one training job: a recipe's defaults (:data:`RECIPES`) with the user's
    explicit optimizer and recompute on top (:func:`training_options`). The defaults (no recipe) are the
    estimator's generic ones: AdamW with an fp32 master copy, the layout search's recompute."""

    recipe: str | None = None  # the preset applied (None: the estimator's generic defaults)
    optimizer: str = "adamw"
    master_weights: bool = True
    #: the recompute the recipe (or the user) sets; None = the layout search's choice
    recompute: str | None = None
    #: True when the user stated ``recompute``: kept even where it does not fit; a recipe's default is
    #: relaxed to full recompute as a practitioner would turn checkpointing on
    recompute_stated: bool = False
    #: activations offloaded to host memory (torchtune): memory as full recompute, speed without recompute
    activation_offloading: bool = False
    optimizer_in_backward: bool = False
    chunked_loss: bool = False
    adapter_fp32: bool = True
    lora_dropout: str = "none"
    offload_checkpoints: bool = False
    kbit_upcast: bool = False
    #: the trainer runs Hugging Face transformers modeling code (Recipe.hf_modeling): memory by its eager
    #: timeline where that applies (memory.estimate_memory ``hf_eager``)
    hf_eager: bool = False
    #: ZeRO stage of the trainer's multi-GPU recipe (FSDP = 3); None = the layout search's choice
    zero_stage: int | None = None
    #: the recipe keeps activations on the GPU where they fit one card (Recipe.fastest_fit_single_device),
    #: on one GPU with no recompute stated: size that first (:meth:`held_on_gpu`), the savers only where it
    #: does not fit
    fastest_fit: bool = False

    def memory_kwargs(self) -> dict[str, Any]:
        """The :func:`~gpufleet.estimate.memory.estimate_memory` options, except recompute and ZeRO stage."""
        return {"optimizer": self.optimizer, "master_weights": self.master_weights, **self.knobs()}

    def knobs(self) -> dict[str, Any]:
        """:meth:`memory_kwargs` less the optimizer and master weights (the layout search's ``knobs``)."""
        return {
            "optimizer_in_backward": self.optimizer_in_backward,
            "chunked_loss": self.chunked_loss,
            "adapter_fp32": self.adapter_fp32,
            "lora_dropout": self.lora_dropout,
            "offload_checkpoints": self.offload_checkpoints,
            "kbit_upcast": self.kbit_upcast,
            "hf_eager": self.hf_eager,
        }

    def held_on_gpu(self) -> TrainingOptions:
        """These options with every activation kept on the GPU: no recompute, nothing offloaded (the
        fastest single-GPU setting, which a recipe with :attr:`fastest_fit` runs where it fits)."""
        import dataclasses

        return dataclasses.replace(
            self, recompute="none", recompute_stated=True, activation_offloading=False,
            offload_checkpoints=False, fastest_fit=False,
        )  # fmt: skip

    def speed_recompute(self, recompute: str) -> str:
        """The recompute that sets the speed of a layout sized with ``recompute``: none when the recipe
        offloads activations instead of recomputing them."""
        return "none" if self.activation_offloading else recompute

    @property
    def stack(self) -> str | None:
        """The speed stack the recipe implies when no software is given (:data:`STACK_RECIPES`)."""
        return self.recipe if self.recipe in STACK_RECIPES else None

    @property
    def is_generic(self) -> bool:
        """No recipe, and memory settings the estimator's generic defaults (AdamW, fp32 master copy)."""
        return self.recipe is None and self.memory_kwargs() == TrainingOptions().memory_kwargs()

    @property
    def summary(self) -> str:
        """One line naming the optimizer and the recipe's memory settings, for notes."""
        parts = [self.optimizer, "fp32 master weights" if self.master_weights else "pure 16-bit weights"]
        if self.optimizer_in_backward:
            parts.append("optimizer step in the backward")
        if self.chunked_loss:
            parts.append("chunked loss")
        if self.activation_offloading:
            parts.append("activations offloaded to host memory (speed without recompute)")
        if self.offload_checkpoints:
            parts.append("checkpointed layer inputs in host memory")
        head = f"recipe {self.recipe}" if self.recipe else "no recipe (generic defaults)"
        return f"Fine-tuning options: {head}: {', '.join(parts)}."


def check_optimizer(optimizer: str) -> str:
    """``optimizer`` normalised, or :class:`InputError` naming the optimizers the memory model knows."""
    from gpufleet.estimate.memory import OPTIMIZERS

    key = optimizer.strip().lower()
    if key not in OPTIMIZERS:
        raise InputError(
            f"Unknown optimizer {optimizer!r}. Allowed: {', '.join(OPTIMIZERS)}. Pick the optimizer your "
            "trainer runs, or leave it out for AdamW (or the recipe's)."
        )
    return key


def training_options(
    *,
    task: str,
    gpu_count: int,
    recipe: str | None = None,
    optimizer: str | None = None,
    recompute: str | None = None,
    software: str | None = None,
) -> TrainingOptions:
    """The fine-tuning options of a training job (:class:`TrainingOptions`).

    The preset is ``recipe`` when given; else the one ``software`` names (:func:`recipe_for`) or, when an
    optimizer is given, the one the job implies (:func:`recipe_for_job`: a single-GPU 8-bit optimizer or a
    QLoRA runs the bitsandbytes low-memory recipe), as calibration cases resolve theirs; else none (generic
    defaults). An explicit ``optimizer`` or ``recompute`` overrides the preset's value. A ``recipe`` that
    contradicts the trainer ``software`` names is an :class:`InputError` (which stack would run?)."""
    from gpufleet.estimate.activations import check_recompute

    opt = None if optimizer is None else check_optimizer(optimizer)
    if recompute is not None:
        check_recompute(recompute)
    named = None if recipe is None else get_recipe(recipe)
    by_software = recipe_for(software)
    if named is not None and by_software is not None and by_software.name != named.name:
        raise InputError(
            f"recipe {named.name!r} contradicts software {software!r}, which runs the {by_software.name!r} "
            f"recipe. Give one of them, or both naming the same trainer."
        )
    chosen = named
    if chosen is None and (by_software is not None or opt is not None):
        chosen = recipe_for_job(software, "", task=task, optimizer=opt, gpu_count=gpu_count)
    kw = recipe_kwargs(chosen, task=task, gpu_count=gpu_count) if chosen is not None else {}
    kw.pop("offload_params", None)  # needs a CPU offload, which these options do not set
    speed = kw.pop("speed_recompute", None)
    if opt is not None:
        kw["optimizer"] = opt
    offloading = speed is not None and speed != kw.get("recompute")
    if recompute is not None:  # the user's recompute replaces the recipe's, offloading included
        kw["recompute"], offloading = recompute, False
    return TrainingOptions(
        recipe=None if chosen is None else chosen.name,
        recompute_stated=recompute is not None,
        activation_offloading=offloading,
        fastest_fit=(
            chosen is not None and chosen.fastest_fit_single_device and gpu_count == 1 and recompute is None
        ),
        **kw,
    )


def estimate_recipe_memory(options: TrainingOptions, *, recompute: str, **kwargs: Any) -> MemoryEstimate:
    """:func:`~gpufleet.estimate.memory.estimate_memory` of a training job under ``options`` (its memory
    settings, ``recompute`` as given), labelled with the options' optimizer and recipe and noting them."""
    import dataclasses

    from gpufleet.estimate.memory import estimate_memory

    mem = estimate_memory(recompute=recompute, **options.memory_kwargs(), **kwargs)
    return dataclasses.replace(mem, recipe=options.recipe, assumptions=(options.summary, *mem.assumptions))


def recipe_for(software: str | None, note: str = "") -> Recipe | None:
    """The preset a software name or a case note names (software first), None when neither names one."""
    for text in (software or "", note):
        low = text.lower()
        for word, name in _ALIASES:
            if re.search(rf"\b{re.escape(word)}\b", low):  # whole words: "trl", not "ctrl"
                return RECIPES[name]
    return None


__all__ = [
    "LOW_MEMORY_OPTIMIZERS",
    "RECIPES",
    "STACK_RECIPES",
    "Recipe",
    "TrainingOptions",
    "check_optimizer",
    "estimate_recipe_memory",
    "get_recipe",
    "implied_recipe",
    "recipe_for",
    "recipe_for_job",
    "recipe_kwargs",
    "training_options",
]
