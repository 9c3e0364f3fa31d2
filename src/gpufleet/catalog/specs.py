"""Accelerator specifications: one typed loader over the shipped ``data/gpu_specs.csv``.

Every figure in the table cites its source in the ``source`` column (datasheets, device-reported MiB);
peaks are
DENSE (vendor sheets quoting 2:4 sparsity were halved). ``uncertain`` marks rows with unconfirmed figures, and
stays visible to users. Usable memory starts from ``memory_gib`` (the device-reported GiB), never the
marketing GB.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from gpufleet.errors import DataError, UnknownNameError
from gpufleet.precision import COMPUTE_COLUMN, check_precision
from gpufleet.validation import checked_output

_SPEC_FILE = "gpu_specs.csv"
_REQUIRED = (
    "id",
    "name",
    "vendor",
    "memory_gib_nominal",
    "memory_gb_marketing",
    "mem_bw_gbps",
    "source",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class AcceleratorSpec:
    """One accelerator model. Throughputs are dense peaks; ``None`` means no hardware support / not "
    "published."""

    id: str
    name: str
    vendor: str
    form_factor: str
    memory_gib: float  # device-reported capacity [GiB]
    memory_gb_marketing: float  # vendor's marketing capacity [GB = 1e9 bytes]
    memory_type: str
    mem_bw_gb_per_s: float  # peak DRAM bandwidth [GB/s]; 0 only for FPGA rows, which publish none
    fp32_tflops: float | None
    tf32_tflops: float | None
    fp16_tflops: float | None
    bf16_tflops: float | None
    fp8_tflops: float | None
    int8_tops: float | None
    fp4_tflops: float | None
    tdp_w: float | None
    scaleup_interconnect: str  # e.g. "NVLink 4", "none"
    scaleup_bw_gb_per_s: float  # per-GPU scale-up (NVLink/IF) bandwidth, 0 where none [GB/s]
    host_link: str
    release_year: int | None
    architecture: str
    uncertain: bool
    source: str
    notes: str

    @property
    def has_scaleup_fabric(self) -> bool:
        """True where GPUs talk over NVLink/NVSwitch/IF rather than PCIe only."""
        return self.scaleup_bw_gb_per_s > 0 and self.scaleup_interconnect.lower() != "none"

    def dense_peak_tflops(self, precision: str) -> float | None:
        """Dense peak [TFLOP/s or TOP/s] at which ``precision`` computes; ``None`` if unsupported in "
        "hardware."""
        col = COMPUTE_COLUMN[check_precision(precision)]
        return {
            "fp32": self.fp32_tflops,
            "tf32": self.tf32_tflops,
            "fp16": self.fp16_tflops,
            "bf16": self.bf16_tflops,
            "fp8": self.fp8_tflops,
            "fp4": self.fp4_tflops,
            "int8": self.int8_tops,
        }[col]


def _f(row: dict[str, str], key: str) -> float | None:
    raw = (row.get(key) or "").strip()
    if raw == "":
        return None
    return float(raw)


def _parse_row(row: dict[str, str], line: int) -> AcceleratorSpec:
    try:
        is_fpga = "fpga" in (row.get("form_factor") or "").lower()
        for key in _REQUIRED:
            if not (row.get(key) or "").strip() and not (is_fpga and key == "mem_bw_gbps"):
                raise ValueError(f"field {key!r} is empty")
        year = _f(row, "release_year")
        return AcceleratorSpec(
            id=row["id"].strip(),
            name=row["name"].strip(),
            vendor=row["vendor"].strip(),
            form_factor=(row.get("form_factor") or "").strip(),
            memory_gib=float(row["memory_gib_nominal"]),
            memory_gb_marketing=float(row["memory_gb_marketing"]),
            memory_type=(row.get("memory_type") or "").strip(),
            mem_bw_gb_per_s=_f(row, "mem_bw_gbps") or 0.0,
            fp32_tflops=_f(row, "fp32_tflops"),
            tf32_tflops=_f(row, "tf32_dense_tflops"),
            fp16_tflops=_f(row, "fp16_dense_tflops"),
            bf16_tflops=_f(row, "bf16_dense_tflops"),
            fp8_tflops=_f(row, "fp8_dense_tflops"),
            int8_tops=_f(row, "int8_dense_tops"),
            fp4_tflops=_f(row, "fp4_dense_tflops"),
            tdp_w=_f(row, "tdp_w"),
            scaleup_interconnect=(row.get("scaleup_interconnect") or "none").strip() or "none",
            scaleup_bw_gb_per_s=_f(row, "scaleup_bw_gbps_per_gpu") or 0.0,
            host_link=(row.get("host_link") or "").strip(),
            release_year=int(year) if year is not None else None,
            architecture=(row.get("architecture") or "").strip(),
            uncertain=(row.get("uncertain") or "").strip().lower() == "yes",
            source=row["source"].strip(),
            notes=(row.get("notes") or "").strip(),
        )
    except (KeyError, ValueError) as exc:
        raise DataError(
            f"The shipped accelerator table {_SPEC_FILE} is corrupted at line {line}: {exc}. "
            "Numbers must be plain decimals and id/name/vendor/memory/bandwidth/source must be set. "
            "Reinstall gpufleet (pip install --force-reinstall gpufleet) to restore it."
        ) from exc


def parse_specs(text: str) -> dict[str, AcceleratorSpec]:
    """Parse the spec table from CSV text (pure; used by the loader and by tests)."""
    reader = csv.DictReader(text.splitlines())
    missing = [c for c in _REQUIRED if c not in (reader.fieldnames or [])]
    if missing:
        raise DataError(
            f"The shipped accelerator table {_SPEC_FILE} lacks columns {missing}. "
            "Reinstall gpufleet to restore it."
        )
    specs: dict[str, AcceleratorSpec] = {}
    for i, row in enumerate(reader, start=2):
        spec = _parse_row(row, i)
        if spec.id in specs:
            raise DataError(f"{_SPEC_FILE} line {i}: duplicate id {spec.id!r}. Reinstall gpufleet.")
        specs[spec.id] = spec
    return specs


@cache
def load_specs() -> dict[str, AcceleratorSpec]:
    """All shipped accelerator specs by id (cached; no network, no writes)."""
    try:
        text = resources.files("gpufleet.catalog").joinpath("data", _SPEC_FILE).read_text(encoding="utf-8")
    except (FileNotFoundError, OSError) as exc:
        raise DataError(
            f"The shipped accelerator table {_SPEC_FILE} is missing. Reinstall gpufleet."
        ) from exc
    return parse_specs(text)


#: vendor words that prefix a GPU name in nvidia-smi output and the GPU Fleet Optimizer's gpu_type
VENDOR_PREFIXES: tuple[str, ...] = ("nvidia", "amd", "intel", "google", "aws", "habana")


def strip_vendor_prefix(gpu: str) -> str:
    """``"NVIDIA L40S"`` -> ``"L40S"``; names without a leading vendor word are returned unchanged."""
    head, _, rest = gpu.strip().partition(" ")
    return rest.strip() if rest.strip() and head.lower() in VENDOR_PREFIXES else gpu


def _as_written(gpu: str, specs: dict[str, AcceleratorSpec], aliases: Any) -> AcceleratorSpec | None:
    """A GPU as people and nvidia-smi write it: words for hyphens ("RTX 4090", "H100 PCIe", "GeForce RTX
    4090"), a trailing memory size and type ("H100 80GB", "H100 80GB HBM3", "A100-SXM4-80GB", "H200 141GB":
    the size must match the spec's marketed GB, so "A100 80GB" is never the 40 GB part); None when that names
    no spec."""

    def exact(name: str) -> AcceleratorSpec | None:
        low = name.lower()
        hit = next((v for k, v in specs.items() if k.lower() == low), None)
        if hit is None:
            alias = aliases.get(name) or aliases.get(low)
            hit = specs[alias.spec_id] if alias is not None else None
        return hit

    # nvidia-smi spellings: "GeForce"/"Tesla", a trailing memory type ("80GB HBM3"), the A100/H100 SXM
    # generation ("SXM4"/"SXM5"; the spec ids say "SXM", V100's keep "SXM2")
    words = [re.sub(r"(?i)^SXM[45]$", "SXM", w) for w in re.split(r"[\s_-]+", gpu.strip())]
    words = [w for w in words if w and w.lower() not in ("geforce", "tesla")]
    while len(words) > 1 and re.fullmatch(r"(?i)HBM\w*|GDDR\w*", words[-1]):
        words.pop()
    size = re.fullmatch(r"(\d+)\s*GB?", words[-1], flags=re.IGNORECASE) if len(words) > 1 else None
    if size is None:
        return exact("-".join(words)) if "-".join(words) != gpu else None
    gb = float(size.group(1))
    head = "-".join(words[:-1])
    for name in (head, f"{head}-{size.group(1)}GB"):
        hit = exact(name)
        if hit is not None and hit.memory_gb_marketing == gb:
            return hit
    return None


@checked_output("accelerator lookup")
def get_spec(gpu: str) -> AcceleratorSpec:
    """Return the spec for a spec id or any known alias (case-insensitive), or raise with close matches."""
    specs = load_specs()
    if gpu in specs:
        return specs[gpu]
    by_lower = {k.lower(): v for k, v in specs.items()}
    if gpu.lower() in by_lower:
        return by_lower[gpu.lower()]
    from gpufleet.catalog.aliases import load_aliases  # local import: aliases depend on specs

    aliases = load_aliases()
    for key in (gpu, gpu.lower()):
        if key in aliases:
            return specs[aliases[key].spec_id]
    bare = strip_vendor_prefix(gpu)
    if bare != gpu:  # "NVIDIA L40S" (GPU Fleet Optimizer, nvidia-smi) -> "L40S"
        return get_spec(bare)
    spelled = _as_written(gpu, specs, aliases)
    if spelled is not None:
        return spelled
    raise UnknownNameError(
        "GPU",
        gpu,
        list(specs),
        hint="Run `gpufleet catalog gpus` to list every accelerator id.",
    )
