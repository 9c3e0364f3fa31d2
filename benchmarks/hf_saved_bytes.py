"""Measure on CPU what Hugging Face transformers training code keeps for the backward (docs/memory.md).

Grounds ``gpufleet.estimate.activations.hf_eager_layer_bytes``: builds a shipped ``models.json`` config
at full width with 1 and 2 decoder layers (random weights, ``sdpa`` attention), runs one forward under
``torch.autocast("cpu", bfloat16)`` with ``labels`` (the model's own ``ForCausalLMLoss``) inside
``torch.autograd.graph.saved_tensors_hooks`` and sums the unique storages saved, without the parameters
and without autocast's bf16 weight copies (storages shaped like a weight). The 2-layer minus the 1-layer
total, per token, is one layer's saved bytes. Modes: ``amp_full`` (fp32 model, HF Trainer ``bf16=True``),
``bf16_full`` (a bf16 model trained whole), ``lora`` (bf16 base, PEFT r=16 all-linear, fp32 adapters),
``qlora`` (NF4 base via bitsandbytes ``Linear4bit``, PEFT ``prepare_model_for_kbit_training``, then LoRA as
above) and ``qlora_plain`` (the same without the prepare step).

torch, transformers and peft are imported lazily. Usage::

    PYTHONPATH=src python benchmarks/hf_saved_bytes.py --model llama-3.2-1b --mode amp_full --tokens 256
"""

from __future__ import annotations

import argparse
from typing import Any

from gpu_probe import hf_config_dict, load_model_entries

LORA_RANK = 16


def build(model_id: str, layers: int, mode: str) -> tuple[Any, Any]:
    """A random-weight model of ``layers`` decoder layers in the dtype ``mode`` trains (needs torch)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg_dict = hf_config_dict(load_model_entries()[model_id])
    cfg_dict["num_hidden_layers"] = layers
    cfg_dict.pop("layer_types", None)
    cfg_dict.pop("max_window_layers", None)
    config = AutoConfig.for_model(cfg_dict.pop("model_type"), **cfg_dict)
    config.use_cache = False
    dtype = torch.float32 if mode == "amp_full" else torch.bfloat16
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation="sdpa")
    if mode in ("qlora", "qlora_plain"):
        _quantise_nf4(model)
        if mode == "qlora":
            from peft import prepare_model_for_kbit_training

            model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
    if mode in ("lora", "qlora", "qlora_plain"):
        from peft import LoraConfig, get_peft_model

        lora = LoraConfig(
            r=LORA_RANK, lora_alpha=2 * LORA_RANK, lora_dropout=0.0, target_modules="all-linear",
            task_type="CAUSAL_LM",
        )  # fmt: skip
        model = get_peft_model(model, lora)
    model.train()
    return model, config


def _quantise_nf4(model: Any) -> None:
    """Swap every decoder-layer ``nn.Linear`` for a bitsandbytes NF4 ``Linear4bit`` with bf16 compute, as
    ``from_pretrained(quantization_config=BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
    bnb_4bit_compute_dtype=bfloat16))`` builds it (needs bitsandbytes; its CPU backend quantises on CPU)."""
    import bitsandbytes as bnb
    import torch

    for module in list(model.model.layers.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, torch.nn.Linear):
                q = bnb.nn.Linear4bit(
                    child.in_features, child.out_features, bias=child.bias is not None,
                    compute_dtype=torch.bfloat16, quant_type="nf4",
                )  # fmt: skip
                q.weight = bnb.nn.Params4bit(child.weight.data.float(), requires_grad=False, quant_type="nf4")
                if child.bias is not None:
                    q.bias = child.bias
                setattr(module, name, q.to("cpu"))
    model.is_loaded_in_4bit = True


def saved_activation_bytes(model_id: str, layers: int, mode: str, tokens: int) -> int:
    """Unique storages autograd saves in one forward, without parameters and bf16 weight copies [bytes]."""
    import torch

    model, config = build(model_id, layers, mode)
    weight_shapes = {tuple(p.shape) for p in model.parameters()} | {
        tuple(p.shape[::-1]) for p in model.parameters()
    }
    seen: dict[int, tuple[int, tuple[int, ...]]] = {}

    def pack(t: Any) -> Any:
        s = t.untyped_storage()
        seen[s.data_ptr()] = (s.nbytes(), tuple(t.shape))
        return t

    ids = torch.randint(0, int(config.vocab_size), (1, tokens))
    with (
        torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t),
        torch.autocast("cpu", dtype=torch.bfloat16),
    ):
        model(input_ids=ids, labels=ids)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    return sum(
        nbytes
        for ptr, (nbytes, shape) in seen.items()
        if ptr not in params and not (shape in weight_shapes and tokens not in shape)
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="llama-3.2-1b")
    ap.add_argument(
        "--mode", choices=("amp_full", "bf16_full", "lora", "qlora", "qlora_plain"), default="amp_full"
    )
    ap.add_argument("--tokens", type=int, default=256)
    args = ap.parse_args(argv)
    one = saved_activation_bytes(args.model, 1, args.mode, args.tokens)
    two = saved_activation_bytes(args.model, 2, args.mode, args.tokens)
    print(f"{args.model} {args.mode}: {(two - one) / args.tokens:.0f} B saved per token per decoder layer")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
