"""Tolerant readers for the GPU Fleet Optimizer's ``config/workloads.json`` and ``config/model_config.json``.

We have no copy of those files; the accepted shape (documented in ``docs/recommend.md``, examples in
``tests/data/workloads/``) is built from what is known of them: a top-level ``workloads`` mapping of ids
(``inference_small_p5``) to workloads and ``workload_sets`` mapping set names to lists of ids. Field names are
matched case-insensitively against the synonyms below; unknown fields are ignored and reported in the
workload description, bad values of known fields raise :class:`ConfigFileError` naming file, entry and field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpufleet.catalog.user import GFO_FAMILY_INSTANCES
from gpufleet.errors import ConfigFileError, UnknownNameError
from gpufleet.fileio import document_kind, parse_yaml_or_json, read_user_text
from gpufleet.recommend.types import Workload
from gpufleet.recommend.workload import workload_from_dict

#: our field <- the GFO spellings accepted (lower case)
SYNONYMS: dict[str, tuple[str, ...]] = {
    "model": ("model", "model_size", "model_size_class", "size_class", "size", "model_name", "model_id"),
    "task": ("workload_type", "type", "task", "job_type"),
    "instance_type": ("current_instance", "current_instance_type", "instance_type", "instance"),
    "gpu_count": ("gpu_count", "num_gpus", "gpus", "current_gpu_count"),
    "instance_count": ("instance_count", "num_instances", "instances", "node_count", "nodes"),
    "hours_per_month": ("hours_per_month", "monthly_hours", "usage_hours_per_month", "hours"),
    "precision": ("precision", "dtype", "data_type"),
    "pricing": ("pricing", "pricing_model", "purchase_option", "pricing_type"),
    "description": ("description", "name", "title"),
    "region": ("region", "aws_region"),
    "provider": ("provider", "cloud"),
    "batch_size": ("batch_size",),
    "seq_len": ("sequence_length", "seq_len", "context_length", "max_seq_len"),
    "requests_per_s": ("requests_per_second", "target_rps", "rps"),
    "requests_per_hour": ("requests_per_hour",),
    "tokens_per_s": ("tokens_per_second", "target_tokens_per_second"),
    "train_tokens": ("train_tokens", "training_tokens", "tokens"),
    "input_len": ("input_tokens", "input_length", "prompt_tokens"),
    "output_len": ("output_tokens", "output_length", "max_new_tokens"),
}
_TASKS = {
    "inference": "inference",
    "serving": "inference",
    "real_time_inference": "inference",
    "batch_inference": "inference",
    "realtime_inference": "inference",
    "training": "pretrain",
    "pretraining": "pretrain",
    "pretrain": "pretrain",
    "fine_tuning": "full_finetune",
    "finetuning": "full_finetune",
    "fine-tuning": "full_finetune",
    "full_finetune": "full_finetune",
    "lora": "lora",
    "qlora": "qlora",
}
_PRECISIONS = {
    "fp16": "fp16",
    "float16": "fp16",
    "half": "fp16",
    "bf16": "bf16",
    "bfloat16": "bf16",
    "fp32": "fp32",
    "float32": "fp32",
    "fp8": "fp8",
    "int8": "int8",
    "int4": "int4",
    "nf4": "nf4",
    "4bit": "int4",
    "8bit": "int8",
    "mixed": "bf16",
}
_PRICING = {
    "on_demand": "on_demand",
    "on-demand": "on_demand",
    "ondemand": "on_demand",
    "spot": "spot",
    "reserved": "1y",
    "reserved_1y": "1y",
    "1yr": "1y",
    "1y": "1y",
    "reserved_3y": "3y",
    "3yr": "3y",
    "3y": "3y",
    "savings_plan": "1y",
    "savings_plan_1y": "1y",
    "savings_plan_3y": "3y",
}
#: GFO instance family key (its gpu_instances.json ids and the guide's ``current_instance``) -> the AWS
#: instance type with all the family's GPUs; a ``current_gpu_count`` below that picks the same family's
#: smaller size (see :func:`gpufleet.recommend.migrate.resolve_current`). Defined with the GFO catalog reader.
GFO_INSTANCES: Mapping[str, str] = GFO_FAMILY_INSTANCES

#: tokens for a GFO training workload with neither tokens nor a current instance: 1 B tokens per run (stated;
#: with a current instance the tokens are what it trains in monthly_hours, ``train_tokens_from_current``)
DEFAULT_GFO_TRAIN_TOKENS = 1e9


def is_gfo_workloads(data: Mapping[str, Any]) -> bool:
    """A GFO workloads.json: ``workload_sets`` present, or ``workloads`` entries using GFO field names."""
    if "workload_sets" in data:
        return True
    items = data.get("workloads")
    if not isinstance(items, Mapping):
        return False
    gfo_only = {"model_size", "workload_type", "current_instance", "current_instance_type", "pricing_model"}
    return any(
        isinstance(v, Mapping) and gfo_only & {k.lower() for k in flatten_entry(v)} for v in items.values()
    )


def flatten_entry(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The guide's shape ``{name, description, scenario: {...}, expected_outcome, tags}`` -> one mapping:
    the ``scenario`` fields, with the entry's own fields (name, description) where the scenario lacks them."""
    scenario = entry.get("scenario")
    if not isinstance(scenario, Mapping):
        return dict(entry)
    outer = {k: v for k, v in entry.items() if k != "scenario"}
    return outer | dict(scenario)


#: Keys of a GFO workload entry that carry no field of ours (free text of the guide, and use_spot).
_GFO_EXTRA_KEYS = frozenset({"use_spot", "expected_outcome", "tags", "notes", "comment", "comments"})


def _check_keys(entry: Mapping[str, Any], source: str, name: str) -> None:
    """Each field of a (flattened) GFO entry is given once, and no key is a misspelling of a known one:
    matching is case-insensitive, so ``use_spot`` and ``Use_Spot`` (or ``model`` and ``model_size``, two
    spellings of one field) with different values silently chose one, and ``monthly_hourz`` silently left
    the default hours in force. Other unknown keys are the optimizer's own and stay ignored."""
    seen: dict[str, str] = {}
    for key in map(str, entry):
        low = key.lower()
        field = next((f for f, names in SYNONYMS.items() if low in names), None)
        slot = low if field is None or field == "description" else field  # name and description: texts
        if slot in seen and entry[seen[slot]] != entry[key]:
            raise ConfigFileError(
                f"GPU Fleet Optimizer workloads file {source}, entry {name!r}: keys {seen[slot]!r} and "
                f"{key!r} give the same field different values (keys are matched case-insensitively, "
                "synonyms as one field); keep one."
            )
        seen[slot] = key
        if field is None and low not in _GFO_EXTRA_KEYS:
            import difflib

            known = sorted({n for names in SYNONYMS.values() for n in names} | _GFO_EXTRA_KEYS)
            near = difflib.get_close_matches(low, known, n=2, cutoff=0.85)
            if near:  # other unknown keys are the optimizer's own (kept for compatibility, not read)
                raise ConfigFileError(
                    f"GPU Fleet Optimizer workloads file {source}, entry {name!r}: unknown key {key!r} "
                    f"(did you mean {' or '.join(near)}?). As written it would be ignored and its default "
                    "used; fix the spelling."
                )


def _pick(entry: Mapping[str, Any], field: str) -> tuple[str, Any] | None:
    lower = {str(k).lower(): (str(k), v) for k, v in entry.items()}
    for name in SYNONYMS[field]:
        if name in lower:
            return lower[name]
    return None


def _bad(source: str, entry: str, key: str, value: Any, allowed: str) -> ConfigFileError:
    return ConfigFileError(
        f"GPU Fleet Optimizer workloads file {source}, entry {entry!r}: field {key!r} = "
        f"{value!r} is not understood. Allowed: {allowed}. Fix the value or write the workload "
        "in gpufleet's format (docs/recommend.md)."
    )


def _mapped(
    entry: Mapping[str, Any], field: str, table: Mapping[str, str], source: str, name: str
) -> str | None:
    hit = _pick(entry, field)
    if hit is None:
        return None
    key, value = hit
    norm = str(value).strip().lower().replace(" ", "_")
    if norm not in table:
        raise _bad(source, name, key, value, ", ".join(sorted(set(table))))
    return table[norm]


def gfo_entry_to_dict(
    entry: Mapping[str, Any], *, source: str, name: str, models: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Translate one GFO workload entry into gpufleet's workload fields."""
    if not isinstance(entry, Mapping):
        raise ConfigFileError(
            f"GPU Fleet Optimizer workloads file {source}, entry {name!r}: expected a mapping "
            f"of fields, got {document_kind(entry)}."
        )
    entry = flatten_entry(entry)
    _check_keys(entry, source, name)
    out: dict[str, Any] = {"name": name}
    model = _pick(entry, "model")
    if model is None:
        raise ConfigFileError(
            f"GPU Fleet Optimizer workloads file {source}, entry {name!r}: no model field "
            f"(one of {', '.join(SYNONYMS['model'])}). Add model_size: SMALL|MEDIUM|LARGE|MASSIVE "
            "or a model id."
        )
    for field in SYNONYMS:
        hit = _pick(entry, field)
        if hit is not None and isinstance(hit[1], bool):
            raise _bad(source, name, hit[0], hit[1], "a number or text (true/false is neither)")
    for field in ("model", "instance_type", "task", "precision", "pricing", "provider", "region"):
        hit = _pick(entry, field)
        if hit is not None and (not isinstance(hit[1], str) or not hit[1].strip()):
            raise _bad(source, name, hit[0], hit[1], "a non-empty string")
    spot_alternatives = False
    for key in [k for k in entry if str(k).lower() == "use_spot"]:
        if not isinstance(entry[key], bool):
            raise _bad(source, name, key, entry[key], "true or false")
        if entry[key] and _pick(entry, "pricing") is None:
            # the guide's use_spot: true = "enable spot pricing" (its remedy for high monthly costs, "60-70 %
            # savings"): the alternatives at spot, the deployment of today as it is billed, on demand
            entry["pricing"] = "spot"
            spot_alternatives = True
    mval = str(model[1]).strip()
    out["model"] = (models or {}).get(mval.upper(), mval)
    if model[0].lower() in _SIZE_KEYS and mval.upper() not in (models or {}):
        _check_size_class(model[0], mval, models or {}, source, name)
    task = _mapped(entry, "task", _TASKS, source, name) or "inference"
    out["task"] = task
    if (p := _mapped(entry, "precision", _PRECISIONS, source, name)) is not None:
        out["precision"] = p
    if (pr := _mapped(entry, "pricing", _PRICING, source, name)) is not None:
        out["pricing"] = pr
    simple = {
        "hours_per_month": "hours_per_month",
        "description": "description",
        "seq_len": "seq_len_tokens",
        "requests_per_s": "target_requests_per_s",
        "requests_per_hour": "target_requests_per_hour",
        "tokens_per_s": "target_output_tokens_per_s",
        "train_tokens": "train_tokens",
        "input_len": "input_len_tokens",
        "output_len": "output_len_tokens",
    }
    for gfo_field, ours in simple.items():
        if (hit := _pick(entry, gfo_field)) is not None:
            out[ours] = hit[1]
    if (bs := _pick(entry, "batch_size")) is not None:
        out["global_batch_sequences" if task != "inference" else "concurrency"] = bs[1]
    inst = _pick(entry, "instance_type")
    if task != "inference" and "train_tokens" not in out:
        if inst is not None:  # monthly_hours: the current deployment trains that many hours a month
            out["train_tokens_from_current"] = True
        else:
            out["train_tokens"] = DEFAULT_GFO_TRAIN_TOKENS
    if inst is not None:
        cur: dict[str, Any] = {"provider": "aws"}
        if (prov := _pick(entry, "provider")) is not None:
            cur["provider"] = str(prov[1]).strip().lower()
        cur["instance_type"] = _instance_type(inst[0], str(inst[1]).strip(), cur["provider"], source, name)
        if (reg := _pick(entry, "region")) is not None:
            cur["region"] = str(reg[1])
        if (gc := _pick(entry, "gpu_count")) is not None:
            cur["gpu_count"] = gc[1]
        if (ic := _pick(entry, "instance_count")) is not None:
            cur["count"] = ic[1]
        if spot_alternatives:
            cur["pricing"] = "on_demand"
        out["current"] = cur
    return out


#: GFO keys whose value is a ModelSize enum member (SMALL, MEDIUM, ...), not a model id.
_SIZE_KEYS = frozenset({"model_size", "model_size_class", "size_class", "size"})


def _check_size_class(key: str, value: str, models: Mapping[str, str], source: str, name: str) -> None:
    """A ``model_size`` that is neither a size class (shipped or of the file's model_config) nor a model id
    is a :class:`ConfigFileError` naming the field and the classes (the guide's ModelSize enum)."""
    from gpufleet.errors import GpufleetError
    from gpufleet.models import SIZE_CLASSES, resolve_model

    try:
        resolve_model(value)
    except GpufleetError:
        classes = sorted({*SIZE_CLASSES, *models})
        raise _bad(
            source,
            name,
            key,
            value,
            f"a model size class ({', '.join(classes)}) or a gpufleet model id "
            "(`gpufleet catalog models` lists them)",
        ) from None


#: How the guide spells its instance families (messages only; matching is case-insensitive).
GFO_INSTANCE_NAMES: tuple[str, ...] = ("G4dn", "G5", "G6", "G6e", "P4d", "P4de", "P5", "P5e", "P6")


def _instance_type(key: str, value: str, provider: str, source: str, name: str) -> str:
    """The catalog instance type of a GFO ``current_instance``: a GFO family (``P5``) or an instance type of
    the provider in the shipped catalog (``p5.48xlarge``); anything else is a :class:`ConfigFileError` with
    the closest valid names. A provider the shipped catalog lacks (a user catalog's) is not checked here."""
    family = GFO_INSTANCES.get(value.upper())
    if family is not None:
        return family
    from gpufleet.catalog.offers_io import load_shipped_offers

    table = load_shipped_offers()
    prov = table.column("provider")
    if provider not in set(prov.tolist()):
        return value
    known = sorted({str(i) for i in table.column("instance_type")[prov == provider]})
    if value in known:
        return value
    error = UnknownNameError(
        "instance",
        value,
        [*GFO_INSTANCE_NAMES, *known] if provider == "aws" else known,
    )
    raise ConfigFileError(
        f"GPU Fleet Optimizer workloads file {source}, entry {name!r}: field {key!r}: {error} Allowed: a GPU "
        f"Fleet Optimizer instance family ({', '.join(GFO_INSTANCE_NAMES)}) or an instance type of provider "
        f"{provider} in the catalog (`gpufleet catalog offers --provider {provider}` lists them). Fix the "
        "name."
    )


def parse_gfo_workloads(
    data: Mapping[str, Any], *, source: str, models: Mapping[str, str] | None = None
) -> tuple[dict[str, Workload], dict[str, tuple[str, ...]]]:
    """(workloads by id, sets by name) from a parsed GFO ``workloads.json``."""
    items = data.get("workloads", {})
    if not isinstance(items, Mapping):
        raise ConfigFileError(
            f"GPU Fleet Optimizer workloads file {source}: 'workloads' must map ids to "
            f"workloads; got {document_kind(items)}."
        )
    workloads = {
        str(k): workload_from_dict(
            gfo_entry_to_dict(v, source=source, name=str(k), models=models), source=source, entry=str(k)
        )
        for k, v in items.items()
    }
    sets: dict[str, tuple[str, ...]] = {}
    raw_sets = data.get("workload_sets", {})
    if not isinstance(raw_sets, Mapping):
        raise ConfigFileError(
            f"GPU Fleet Optimizer workloads file {source}: 'workload_sets' must map set names "
            "to lists of workload ids."
        )
    for set_name, ids in raw_sets.items():
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids) or not ids:
            raise ConfigFileError(
                f"GPU Fleet Optimizer workloads file {source}, workload set {set_name!r}: "
                f"expected a list of workload ids (at least one), got {ids!r} (an empty set runs "
                "nothing). List the ids, or remove the set."
            )
        missing = [i for i in ids if i not in workloads]
        shipped = _shipped_scenarios()
        for i in [m for m in missing if m in shipped]:
            workloads[i] = shipped[i]  # the guide's set names gpufleet's own GFO scenario of that id
        missing = [i for i in missing if i not in shipped]
        if missing:
            raise ConfigFileError(
                f"GPU Fleet Optimizer workloads file {source}, workload set {set_name!r} names "
                f"unknown workload ids {missing}; known: {', '.join(sorted(workloads))} (the file's) and "
                f"{', '.join(sorted(shipped))} (gpufleet's GFO scenarios). Define them under 'workloads'."
            )
        sets[str(set_name)] = tuple(ids)
    return workloads, sets


def _shipped_scenarios() -> Mapping[str, Workload]:
    from gpufleet.recommend.scenarios import load_scenarios

    return load_scenarios().scenarios


def file_workload_ids(data: Mapping[str, Any]) -> tuple[str, ...]:
    """Workload ids the GFO file itself defines (the others its sets name come from gpufleet's scenarios)."""
    items = data.get("workloads")
    return tuple(str(k) for k in items) if isinstance(items, Mapping) else ()


def parse_gfo_model_config(data: Mapping[str, Any], *, source: str) -> dict[str, str]:
    """Size class -> model reference from a GFO ``model_config.json``.

    Accepts ``{"models": {...}}``, ``{"model_sizes": {...}}`` or the classes at top level. An entry naming a
    model (``model_id``, ``hf_model_id``, ``hf_model``, ``model_name``, ``example_model``) maps the class to
    that model; otherwise the class keeps gpufleet's pinned architecture (``gpufleet.models.size_classes``).
    """
    body = data.get("models", data.get("model_sizes", data))
    if not isinstance(body, Mapping) or not body:
        raise ConfigFileError(
            f"GPU Fleet Optimizer model config {source}: expected a non-empty mapping of size classes "
            f"(small, medium, large, massive), got {document_kind(body) if body != {} else 'an empty one'}. "
            "Give at least one class, or leave the file out."
        )
    from gpufleet.models.size_classes import SIZE_CLASSES, custom_size_ref

    out: dict[str, str] = {}
    for cls, entry in body.items():
        ref = str(cls).upper()
        if not isinstance(entry, Mapping):  # `small: 0` kept the pinned class silently
            raise ConfigFileError(
                f"GPU Fleet Optimizer model config {source}, entry {cls!r}: expected a mapping of fields "
                f"(name, parameter_count_billion, model_id, ...), got {document_kind(entry)}. Write the "
                "class as a mapping (e.g. small: {parameter_count_billion: 13}), or leave it out."
            )
        if isinstance(entry, Mapping):
            lower = {str(k).lower(): v for k, v in entry.items()}
            _check_model_numbers(lower, source, str(cls))
            for key in ("model_id", "hf_model_id", "hf_model", "model_name", "example_model"):
                if isinstance(lower.get(key), str) and lower[key].strip():
                    ref = lower[key].strip()
                    break
            else:
                count = lower.get("parameter_count_billion")
                if count is not None and not _number(count):
                    raise ConfigFileError(
                        f"GPU Fleet Optimizer model config {source}, entry {cls!r}: parameter_count_billion "
                        f"= {count!r} is not a positive number of billions. Fix the value."
                    )
                nominal = SIZE_CLASSES[ref][0] / 1e9 if ref in SIZE_CLASSES else None
                if count is not None and (nominal is None or abs(float(count) / nominal - 1) > 0.1):
                    ref = custom_size_ref(float(count))  # a custom size (extra_large: 200) or a changed one
        out[str(cls).upper()] = ref
    return out


#: Numeric fields of the guide's model_config.json entries (gpufleet uses only parameter_count_billion; a
#: bad value in the others is still a mistake in the file).
_GFO_MODEL_NUMBERS = ("parameter_count_billion", "memory_overhead_multiplier")


def _check_model_numbers(entry: Mapping[str, Any], source: str, cls: str) -> None:
    """Every number of a model_config.json entry is finite; its known numeric fields are positive numbers
    below 100,000."""
    for key, value in entry.items():
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        if (key in _GFO_MODEL_NUMBERS and not _number(value)) or (numeric and not math.isfinite(value)):
            raise ConfigFileError(
                f"GPU Fleet Optimizer model config {source}, entry {cls!r}: {key} = {value!r} is not a "
                "finite number (parameter_count_billion and memory_overhead_multiplier: > 0 and below "
                "100,000). Fix the value."
            )


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and 0 < float(v) < 1e5


def read_gfo_files(
    workloads_path: Path | str, model_config_path: Path | str | None = None
) -> tuple[dict[str, Workload], dict[str, tuple[str, ...]]]:
    """Read GFO ``workloads.json`` (and optionally ``model_config.json``)."""
    models = None
    if model_config_path is not None:
        models = parse_gfo_model_config(_read_json(Path(model_config_path)), source=str(model_config_path))
    return parse_gfo_workloads(_read_json(Path(workloads_path)), source=str(workloads_path), models=models)


def _read_json(path: Path) -> Mapping[str, Any]:
    text = read_user_text(path, what="GPU Fleet Optimizer file")
    data = parse_yaml_or_json(
        path.with_suffix(".json"),
        text,
        lambda kind, error: f"{path} is not valid {kind}: {error}. Fix the syntax there.",
    )
    if not isinstance(data, Mapping):
        raise ConfigFileError(f"{path} must hold a JSON object at top level.")
    return data
