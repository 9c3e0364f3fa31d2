"""Shipped model architectures (``data/models.json``) and :func:`resolve_model`.

``models.json`` holds config.json facts as published, with each model's stated parameter count and its source
(``config_source``, ``params_source`` per entry). Resolution order: shipped id, alias, Hugging Face repo
id (all case-insensitive), size class (SMALL, MEDIUM, LARGE, MASSIVE), a release of one shipped model
(``meta-llama/Llama-3.1-8B-Instruct``, ``gemma-2-9b-it``, ``DeepSeek-V3-0324``: same architecture), then a
path to a ``config.json`` (or its folder).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from gpufleet.errors import ConfigFileError, DataError, GpufleetError, UnknownNameError
from gpufleet.models.arch import ModelArch
from gpufleet.models.hf_config import arch_from_config, read_config_file
from gpufleet.models.size_classes import (
    SIZE_CLASSES,
    custom_size_arch,
    parse_custom_size,
    size_class_arch,
)
from gpufleet.validation import checked_output

_MODELS_FILE = "models.json"
_UNITS = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}
_NUM = r"(\d+(?:\.\d+)?)\s*([KMBT])"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelEntry:
    """One shipped model: its architecture plus the provenance and notes of models.json."""

    arch: ModelArch
    hf_repo: str
    stated_params_text: str
    reported_exact_params: float | None
    config_source: str
    params_source: str
    notes: str
    #: the precision the weights are published in, where it is not 16-bit (FP8 DeepSeek-V3/R1, MXFP4
    #: gpt-oss: config.json ``quantization_config``), and its source; "" = 16-bit
    released_precision: str = ""
    released_precision_source: str = ""


def parse_stated_params(text: str) -> tuple[float, float | None]:
    """Parse a stated count -> (total, active or None) [count].

    "46.7B total / 12.9B active" -> (46.7e9, 12.9e9); "1B (1.23B)" -> 1.23e9 (a bare parenthesised number is
    the precise one); "0.49B (0.36B non-embedding)" -> 0.49e9; "124M" -> 124e6.
    """
    m = re.match(rf"\s*{_NUM}", text, re.IGNORECASE)
    if not m:
        raise ValueError(f"no count in {text!r}")
    total = float(m.group(1)) * _UNITS[m.group(2).upper()]
    precise = re.match(rf"\s*\(\s*{_NUM}\s*\)", text[m.end() :], re.IGNORECASE)
    if precise:
        total = float(precise.group(1)) * _UNITS[precise.group(2).upper()]
    act = re.search(rf"{_NUM}\s+activ", text, re.IGNORECASE)
    active = float(act.group(1)) * _UNITS[act.group(2).upper()] if act else None
    return total, active


def _entry(raw: dict[str, Any]) -> ModelEntry:
    mid = raw["id"]
    stated_text = str(raw.get("stated_params", ""))
    total, active = parse_stated_params(stated_text)
    exact = raw.get("reported_exact_params")
    cfg = {k: v for k, v in raw["config"].items() if not k.startswith("note_")}
    arch = arch_from_config(
        cfg,
        model_id=mid,
        name=raw.get("name", mid),
        source=f"models.json entry {mid!r}",
        family_hint=raw.get("architecture", ""),
        stated_params=float(exact) if exact else total,
        stated_active_params=active,
    )
    return ModelEntry(
        arch=arch,
        hf_repo=raw.get("hf_repo", ""),
        stated_params_text=stated_text,
        reported_exact_params=float(exact) if exact else None,
        config_source=raw.get("config_source", ""),
        params_source=raw.get("params_source", ""),
        notes=raw.get("notes", ""),
        released_precision=raw.get("released_precision", ""),
        released_precision_source=raw.get("released_precision_source", ""),
    )


def released_precision(model: str) -> tuple[str, str] | None:
    """(precision, source) a shipped model's weights are published in when that is not 16-bit (FP8
    DeepSeek-V3/R1, MXFP4 gpt-oss), else None (also for size classes, config.json paths and unknown names)."""
    try:
        arch = resolve_model(model)
    except GpufleetError:
        return None
    entry = load_model_entries().get(arch.id)
    if entry is None or not entry.released_precision:
        return None
    return entry.released_precision, entry.released_precision_source


@cache
def load_model_entries() -> dict[str, ModelEntry]:
    """All shipped models by id (cached; read once from the package data)."""
    try:
        text = resources.files("gpufleet.models").joinpath("data", _MODELS_FILE).read_text(encoding="utf-8")
        data = json.loads(text)
        return {raw["id"]: _entry(raw) for raw in data["models"]}
    except (OSError, KeyError, TypeError, ValueError, ConfigFileError) as exc:
        raise DataError(
            f"The shipped model table {_MODELS_FILE} is missing or corrupted ({exc}). "
            "Reinstall gpufleet (pip install --force-reinstall gpufleet) to restore it."
        ) from exc


@cache
def load_model_aliases() -> dict[str, str]:
    """Alias (lower-case) -> shipped id, from models.json ``aliases``."""
    text = resources.files("gpufleet.models").joinpath("data", _MODELS_FILE).read_text(encoding="utf-8")
    aliases: dict[str, str] = json.loads(text).get("aliases", {})
    return {k.lower(): v for k, v in aliases.items()}


#: a release of a checkpoint that keeps its architecture: a trailing ``-Instruct``, ``-chat``, ``-hf``,
#: ``-it``, ``-base`` or ``-pt`` (optionally versioned, ``-Instruct-v0.3``, ``-Instruct-2501``), or a bare
#: four-digit release date (``DeepSeek-V3-0324``); Hugging Face naming of fine-tuned and dated re-releases
_RELEASE_SUFFIX = re.compile(r"[-_](?:(?:instruct|chat|hf|it|base|pt)(?:[-_]v?\d+(?:\.\d+)*)?|\d{4})$")


def _base_name(name: str) -> str:
    """``name`` (lower case) without its Hugging Face organisation, a ``meta-`` vendor prefix and its release
    suffixes; ``llama3.1-8b`` spelled ``llama-3.1-8b``."""
    base = re.sub(r"^llama(\d)", r"llama-\1", name.rsplit("/", 1)[-1].removeprefix("meta-"))
    while (shorter := _RELEASE_SUFFIX.sub("", base)) != base:
        base = shorter
    return base


@cache
def _by_base_name() -> dict[str, frozenset[str]]:
    """Base name (:func:`_base_name`) of every id, alias and repo name -> the shipped ids it may mean."""
    out: dict[str, set[str]] = {}
    names = [(k, k) for k in load_model_entries()] + list(load_model_aliases().items())
    names += [(e.hf_repo, k) for k, e in load_model_entries().items() if e.hf_repo]
    for name, model_id in names:
        out.setdefault(_base_name(name.lower()), set()).add(model_id)
    return {k: frozenset(v) for k, v in out.items()}


def _release_of(lower: str) -> str | None:
    """The shipped id ``lower`` names as a release of it (an Instruct/chat/dated variant, a Hugging Face
    repo id with another organisation or suffix, ``llama3.1-8b``), or None when that is not one id."""
    ids = _by_base_name().get(_base_name(lower), frozenset())
    return next(iter(ids)) if len(ids) == 1 else None


def known_model_names() -> list[str]:
    """Every name :func:`resolve_model` accepts besides paths: ids, aliases and size classes."""
    return [*load_model_entries(), *load_model_aliases(), *SIZE_CLASSES]


#: whether :func:`resolve_model` may read a config.json named by the caller. The service turns it off for
#: every request and job (:func:`model_files_forbidden`): a model name sent over HTTP must never make the
#: server read one of its own files.
_MODEL_FILES_ALLOWED: ContextVar[bool] = ContextVar("gpufleet_model_files_allowed", default=True)


@contextmanager
def model_files_forbidden() -> Iterator[None]:
    """Within the block, a model given as a path is an error instead of a file read (the HTTP service)."""
    token = _MODEL_FILES_ALLOWED.set(False)
    try:
        yield
    finally:
        _MODEL_FILES_ALLOWED.reset(token)


def forbid_model_files() -> None:
    """Forbid model config paths for the rest of this context (a job's own process)."""
    _MODEL_FILES_ALLOWED.set(False)


@checked_output("model lookup")
def resolve_model(name_or_path: str | Path | ModelArch) -> ModelArch:
    """Shipped id, alias or Hugging Face repo id (case-insensitive), size class, or config.json path."""
    if isinstance(name_or_path, ModelArch):
        return name_or_path
    name = str(name_or_path).strip()
    entries = load_model_entries()
    if name in entries:
        return entries[name].arch
    lower = name.lower()
    by_lower = {k.lower(): v for k, v in entries.items()}
    if lower in by_lower:
        return by_lower[lower].arch
    aliases = load_model_aliases()
    if lower in aliases:
        return entries[aliases[lower]].arch
    by_repo = {e.hf_repo.lower(): e for e in entries.values() if e.hf_repo}
    if lower in by_repo:
        return by_repo[lower].arch
    if name.upper() in SIZE_CLASSES:
        return size_class_arch(name.upper())
    release = _release_of(lower) if len(name) <= 200 else None
    if release is not None:
        return entries[release].arch
    if len(name) > 1024:
        raise UnknownNameError(
            "model",
            name[:60] + "...",
            (),
            hint=f"The name is {len(name)} characters long; model ids, aliases and paths are at most 1024. "
            "Pass a shipped model id or alias, a size class, or the path of a Hugging Face config.json.",
        )
    custom = parse_custom_size(name)
    if custom is not None:  # a GPU Fleet Optimizer custom size class, e.g. size:200B
        return custom_size_arch(custom)
    if not _MODEL_FILES_ALLOWED.get():
        raise UnknownNameError(
            "model",
            name[:200],
            known_model_names(),
            hint="This server does not read model config files named in a request. Pass a shipped model id "
            "or alias, a Hugging Face repo id of a shipped model, a size class (SMALL, MEDIUM, LARGE, "
            "MASSIVE) or a custom size (size:200B); GET /api/v1/catalog/models lists them.",
        )
    path = Path(name).expanduser()
    try:
        is_dir = path.is_dir()
        if is_dir:
            path = path / "config.json"
        exists = path.exists() or path.is_symlink()  # a looping or dangling link: the input layer says which
    except PermissionError as exc:  # a folder the user may not enter
        raise ConfigFileError(
            f"The model config {path} cannot be read ({exc.strerror or exc}): the folder holding it is not "
            "readable. Check the folder's permissions, or pass a shipped model id or a size class."
        ) from None
    except OSError:  # e.g. a path component over the file system's limit
        is_dir = exists = False
    if exists:
        return model_from_config_file(path)  # the input layer rejects FIFOs, devices, directories
    if is_dir or isinstance(name_or_path, Path) or name.endswith(".json"):
        raise ConfigFileError(
            f"The model config file {path} does not exist. Pass the path of a Hugging Face config.json "
            "(or the folder that holds it), a shipped model id, or a size class."
        )
    raise UnknownNameError(
        "model",
        name,
        known_model_names(),
        hint="Pass a shipped model id or alias, a size class (SMALL, MEDIUM, LARGE, MASSIVE), or the path "
        "of a Hugging Face config.json.",
    )


def model_from_config_file(path: Path) -> ModelArch:
    """Parse a Hugging Face config.json file (the model id is its folder name)."""
    cfg = read_config_file(path)
    model_id = path.parent.name or path.stem
    name = str(cfg.get("_name_or_path") or model_id)
    return arch_from_config(cfg, model_id=model_id, name=name, source=str(path))
