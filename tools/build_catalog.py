"""Build the shipped offer table from the SkyPilot-format catalog snapshots.

Run by developers, never imported at run time::

    .venv/bin/python tools/build_catalog.py [--snapshot ../shared/data/catalog-snapshot] \
        [--out src/gpufleet/catalog/data]

Reads every ``<provider>/vms.csv`` by header name (column order differs between files), corrects the known
source errors listed in the snapshot's PROVENANCE.md, and writes ``offers.csv`` (sorted, deterministic),
``build_log.json`` (row counts per correction) and ``PROVENANCE.md``. The functions here are pure over rows so
that tests can run them on tiny inline CSV fixtures.
"""

from __future__ import annotations

import argparse
import ast
import csv
import io
import json
import math
import re
import statistics
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from gpufleet.catalog.offer_gpu import resolve_offer_gpu
from gpufleet.catalog.offers import Offer, OfferTable, write_offers_csv
from gpufleet.catalog.specs import load_specs
from gpufleet.errors import UnknownNameError
from gpufleet.units import GB, MIB, gib_from_mib

Row = Mapping[str, str]

# --- inputs: which file, which catalog version, which capture date (snapshot PROVENANCE.md) ---------------
CAPTURED_V8 = "2026-08/2026-11"
CAPTURED_MIRROR = "2026-05-20"
CAPTURED_OLD = "old"


@dataclass(frozen=True, slots=True, kw_only=True)
class Input:
    provider: str
    file: str  # relative to the snapshot folder
    version: str  # catalog version as PROVENANCE.md names it
    captured_at: str

    @property
    def source(self) -> str:
        return f"skypilot-catalog {self.version} {self.file}"


_V8 = "aws gcp oci lambda cudo vast shadeform nebius hyperbolic hyperstack jarvislabs lium mithril seeweb"
_V8 += " verda yotta"
INPUTS: tuple[Input, ...] = (
    *(Input(provider=p, file=f"{p}/vms.csv", version="v8", captured_at=CAPTURED_V8) for p in _V8.split()),
    Input(provider="azure", file="azure/vms.csv", version="mirror-2026-05-20", captured_at=CAPTURED_MIRROR),
    Input(provider="azure", file="azure/vms.v6-us-only.csv", version="v6", captured_at=CAPTURED_OLD),
    # RunPod's file is v7 (full); PROVENANCE.md gives no date for v7, so it is shown as "old" (of unknown
    # date).
    Input(provider="runpod", file="runpod/vms.csv", version="v7", captured_at=CAPTURED_OLD),
    *(
        Input(provider=p, file=f"{p}/vms.csv", version="v6", captured_at=CAPTURED_OLD)
        for p in ("do", "fluidstack", "paperspace")
    ),
)

UNSPECIFIED_REGION = "unspecified"


@dataclass(slots=True)
class BuildLog:
    """Row counts per correction (written to build_log.json and PROVENANCE.md)."""

    corrections: Counter[str] = field(default_factory=Counter)
    rows_in: Counter[str] = field(default_factory=Counter)
    rows_out: Counter[str] = field(default_factory=Counter)

    def add(self, what: str, n: int = 1) -> None:
        if n:
            self.corrections[what] += n


# --- small parsers ------------------------------------------------------------------------------------------
def read_rows(text: str) -> list[dict[str, str]]:
    """CSV text -> rows keyed by header (extra unquoted fields, e.g. Azure 'V1,V2', are ignored)."""
    return [
        {k: (v or "") for k, v in r.items() if isinstance(k, str)} for r in csv.DictReader(io.StringIO(text))
    ]


def num(raw: str | None) -> float | None:
    """A float, or None for empty / non-numeric / NaN."""
    s = (raw or "").strip()
    if not s:
        return None
    try:
        v = float(s)
    except ValueError:
        return None
    return None if math.isnan(v) else v


def parse_gpu_info(raw: str) -> tuple[float | None, float | None]:
    """(SizeInMiB of the first GPU entry, TotalGpuMemoryInMiB) from a GpuInfo cell; (None, None) if absent.

    Cells are Python literals (single quotes, sometimes ``null``) or JSON (Verda).
    """
    s = (raw or "").strip()
    if not s.startswith("{"):
        return None, None
    try:
        data = json.loads(s)
    except json.JSONDecodeError:
        try:
            data = ast.literal_eval(s.replace("null", "None"))
        except (ValueError, SyntaxError):
            return None, None
    gpus = data.get("Gpus") or [{}]
    first = gpus[0] if isinstance(gpus[0], dict) else {}
    size = num(str((first.get("MemoryInfo") or {}).get("SizeInMiB", "")))
    total = data.get("TotalGpuMemoryInMiB", first.get("TotalGpuMemoryInMiB"))
    return size, num(str(total)) if total is not None else None


#: Providers whose GpuInfo TotalGpuMemoryInMiB is per GPU, not per machine (snapshot PROVENANCE.md: "Lambda:
#: GpuInfo total memory is per GPU"; "DigitalOcean: GpuInfo memory is not multiplied by count").
TOTAL_IS_PER_GPU = frozenset({"lambda", "do"})
#: Providers whose GpuInfo memory is in GB though labelled MiB (PROVENANCE.md: "Shadeform GPU memory is in
#: GB").
MEMORY_IN_GB = frozenset({"shadeform"})


def per_gpu_memory_mib(provider: str, row: Row, count: float, log: BuildLog | None = None) -> float | None:
    """Provider-reported memory per GPU [MiB], normalised; None when not reported (or reported as 0)."""
    size, total = parse_gpu_info(row.get("GpuInfo", ""))
    if size is None and total is None:
        return None
    per: float | None
    if total is not None and total > 0 and count > 0:
        if provider in TOTAL_IS_PER_GPU:
            per = total
            if log is not None and count > 1:
                log.add(f"{provider}: GpuInfo total memory taken as per GPU (not divided by count)")
        else:
            per = total / count
    else:
        per = size
    if per is None or per <= 0:
        return None
    if provider in MEMORY_IN_GB:
        if log is not None:
            log.add(f"{provider}: GPU memory labelled MiB read as GB")
        per = per * GB / MIB
    return per


_TPU_RE = re.compile(r"^tpu-(v2|v3|v4|v5p|v5litepod|v6e)-(\d+)$")
#: TPU slice suffix unit (gpu_aliases.csv notes): TensorCores for v2/v3/v4/v5p (2 per chip), chips for
#: v5e/v6e.
_TPU_CORES_PER_CHIP = {"v2": 2, "v3": 2, "v4": 2, "v5p": 2, "v5litepod": 1, "v6e": 1}


def tpu_chips(name: str) -> int | None:
    """Chip count of a GCP TPU slice name (``tpu-v4-8`` -> 4 chips, ``tpu-v6e-8`` -> 8), None if not a TPU."""
    m = _TPU_RE.match(name)
    if not m:
        return None
    return max(1, int(m.group(2)) // _TPU_CORES_PER_CHIP[m.group(1)])


#: Sentinel prices that mean "unknown" (snapshot PROVENANCE.md): GCP tpu-v6e rows carry 700.0, a4-highgpu 0.0.
def is_sentinel_price(provider: str, name: str, price: float | None) -> bool:
    if price is None:
        return False
    return provider == "gcp" and name.startswith("tpu-v6e") and price == 700.0


# --- one row -> one offer -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class Prices:
    on_demand: float | None
    spot: float | None


def clean_prices(provider: str, name: str, row: Row, log: BuildLog) -> Prices:
    """Prices with 0/negative/sentinel -> None, and RunPod's swapped L40S spot/on-demand fixed."""
    od, sp = num(row.get("Price")), num(row.get("SpotPrice"))
    if is_sentinel_price(provider, name, od) or is_sentinel_price(provider, name, sp):
        log.add("gcp: tpu-v6e sentinel price 700.0 treated as missing")
        od = None if is_sentinel_price(provider, name, od) else od
        sp = None if is_sentinel_price(provider, name, sp) else sp
    if od is not None and od <= 0:
        log.add(f"{provider}: on-demand price {od} treated as missing")
        od = None
    if sp is not None and sp <= 0:
        log.add(f"{provider}: spot price {sp} -> null (unknown, never 0)")
        sp = None
    if provider == "mithril" and od is not None and od == sp and od == round(od):
        # Mithril rows list a whole-dollar price equal for spot and on-demand ($1.00 per GPU-hour for H100
        # and H200 alike): a placeholder of its auction market, not a price. Kept out rather than ranked.
        log.add("mithril: placeholder price (spot == on-demand == whole $ per GPU-hour) treated as missing")
        od = sp = None
    if provider == "runpod" and name == "L40S" and od is not None and sp is not None and sp > od:
        log.add("runpod: L40S spot and on-demand swapped back")
        od, sp = sp, od
    return Prices(on_demand=od, spot=sp)


def make_offer(src: Input, row: Row, log: BuildLog, specs_memory: Mapping[str, float]) -> Offer | None:
    """Normalise one snapshot row (any provider but GCP GPU/host pairs) into an Offer, or None if dropped."""
    p = src.provider
    name = row.get("AcceleratorName", "").strip()
    count = num(row.get("AcceleratorCount")) or 0.0
    instance = row.get("InstanceType", "").strip() or name
    prices = clean_prices(p, name, row, log)
    if prices.on_demand is None:
        log.add(
            f"{p}: rows without an on-demand price dropped"
            + (" (spot-only)" if prices.spot is not None else " (no price at all)")
        )
        return None
    gpu: str | None = None
    mem_gib = 0.0
    if name and count > 0:
        reported = per_gpu_memory_mib(p, row, count, log)
        try:
            gpu = resolve_offer_gpu(name, p, instance, reported)
        except UnknownNameError:
            log.add(f"{p}: rows dropped, accelerator {name!r} has no spec in gpu_specs.csv")
            return None
        if gpu.startswith("Xilinx-"):
            log.add(f"{p}: FPGA rows kept out of GPU offers")
            return None
        chips = tpu_chips(name)
        if chips is not None:
            count = float(chips) * count
        if p == "azure" and instance == "Standard_ND96isr_H100_v5" and count == 12:
            log.add("azure: Standard_ND96isr_H100_v5 GPU count 12 -> 8")
            count = 8.0
        mem_gib = specs_memory[gpu]
        if reported is not None and gib_from_mib(reported) > 1.1 * mem_gib:
            log.add(
                f"{p}: per-GPU memory taken from GpuInfo (exceeds the spec by >10%, e.g. modded 48 GB 4090)"
            )
            mem_gib = round(gib_from_mib(reported), 2)
        if 0 < count < 1:  # a GPU slice (AWS g6f/gr6f, Azure NVadsA10_v5): its share of the GPU's memory
            log.add(f"{p}: fractional GPU rows carry their fraction of the GPU memory")
            mem_gib = round(mem_gib * count, 2)
    region = row.get("Region", "").strip()
    if not region:
        log.add(f"{p}: empty region -> {UNSPECIFIED_REGION!r}")
        region = UNSPECIFIED_REGION
    zone = row.get("AvailabilityZone", "").strip() or None
    region = local_zone_region(p, region, zone, log)
    return Offer(
        provider=p,
        region=region,
        zone=zone,
        instance_type=instance,
        gpu=gpu,
        gpu_count=count if gpu else 0.0,
        gpu_memory_gib=mem_gib,
        vcpus=num(row.get("vCPUs")),
        ram_gib=num(row.get("MemoryGiB")),
        arch=row.get("Arch", "").strip() or None,
        price_on_demand_usd_per_hour=prices.on_demand,
        price_spot_usd_per_hour=prices.spot,
        captured_at=src.captured_at,
        source=src.source,
    )


#: AWS Local Zone ids carry a metro code between the region code and the zone number ("use1-atl2-az1" =
#: Atlanta Local Zone of us-east-1; AWS Local Zones docs, "Local Zone IDs"); ordinary zones do not
#: ("use1-az1")
_AWS_LOCAL_ZONE = re.compile(r"^[a-z]+\d+-([a-z]+\d+)-az\d+$")


def local_zone_region(provider: str, region: str, zone: str | None, log: BuildLog) -> str:
    """A Local Zone is a separate place with its own prices and capacity, not the parent region: its rows
    get the region ``<parent>-<metro>`` (e.g. ``us-east-1-atl2``): region prices and spot are not mixed."""
    if provider != "aws" or zone is None:
        return region
    m = _AWS_LOCAL_ZONE.match(zone)
    if m is None:
        return region
    log.add("aws: Local Zone rows get their own region (<parent>-<metro>)")
    return f"{region}-{m.group(1)}"


def representative_spot(offers: list[Offer], log: BuildLog) -> list[Offer]:
    """Spot per region = the representative (lower median) zone price of the region, on every zone row.

    Spot prices differ by zone (AWS publishes per-AZ spot price history); taking each zone row as its own
    offer lets the cheapest zone, often one with little capacity, win. The lower median of the region's zone
    prices is a price that at least half the zones offer, and it is an actual zone's price."""
    groups: dict[tuple[str, str, str, str, float], list[float]] = {}
    for o in offers:
        if o.zone and o.price_spot_usd_per_hour is not None:
            key = (o.provider, o.region, o.instance_type, o.gpu or "", o.gpu_count)
            groups.setdefault(key, []).append(o.price_spot_usd_per_hour)
    out = []
    for o in offers:
        key = (o.provider, o.region, o.instance_type, o.gpu or "", o.gpu_count)
        zone_prices = groups.get(key, [])
        if o.price_spot_usd_per_hour is not None and len(zone_prices) > 1:
            rep_price = statistics.median_low(zone_prices)
            if rep_price != o.price_spot_usd_per_hour:
                log.add(
                    f"{o.provider}: zone spot price -> the region's representative (lower median) zone price"
                )
                o = replace(o, price_spot_usd_per_hour=rep_price)
        out.append(o)
    return out


# --- GCP: host VM + attached GPUs = one machine -------------------------------------------------------------
#: Fixed GPU counts per GCP machine type (https://cloud.google.com/compute/docs/gpus: A2, A3, A4 and G2
#: machine
#: types come with their GPUs attached; g2-standard-4/8/12/16/32 have 1 L4, -24 has 2, -48 has 4, -96 has 8).
_G2_L4 = {4: 1, 8: 1, 12: 1, 16: 1, 32: 1, 24: 2, 48: 4, 96: 8}
_FIXED_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^a2-highgpu-(\d+)g$"), "A100"),
    (re.compile(r"^a2-megagpu-(\d+)g$"), "A100"),
    (re.compile(r"^a2-ultragpu-(\d+)g$"), "A100-80GB"),
    (re.compile(r"^a3-highgpu-(\d+)g$"), "H100"),
    (re.compile(r"^a3-edgegpu-(\d+)g(-nolssd)?$"), "H100"),
    (re.compile(r"^a3-megagpu-(\d+)g$"), "H100-MEGA"),
    (re.compile(r"^a3-ultragpu-(\d+)g(-nolssd)?$"), "H200"),
    (re.compile(r"^a4-highgpu-(\d+)g(-nolssd)?$"), "B200"),
)

#: N1 attachable GPUs: count -> (max vCPUs, max memory [GB]) per GCP docs (Compute Engine, "GPU machine
#: types",
#: N1 general-purpose table), as encoded in SkyPilot's gcp_catalog._NUM_ACC_TO_MAX_CPU_AND_MEMORY.
N1_GPU_LIMITS: dict[str, dict[int, tuple[float, float]]] = {
    "T4": {1: (48, 312), 2: (48, 312), 4: (96, 624)},
    "P4": {1: (24, 156), 2: (48, 312), 4: (96, 624)},
    "V100": {1: (12, 78), 2: (24, 156), 4: (48, 312), 8: (96, 624)},
    "P100": {1: (16, 104), 2: (32, 208), 4: (64, 208)},
}


def gcp_fixed_gpus(machine_type: str) -> tuple[str, int] | None:
    """(GPU catalog name, count) of a GCP machine type with GPUs attached; None for n1 and others."""
    m = re.match(r"^g2-standard-(\d+)$", machine_type)
    if m:
        n = _G2_L4.get(int(m.group(1)))
        return ("L4", n) if n else None
    for pattern, gpu in _FIXED_PATTERNS:
        m = pattern.match(machine_type)
        if m:
            return gpu, int(m.group(1))
    return None


def _sum_optional(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


def combine_gcp(rows: Iterable[Row], src: Input, log: BuildLog) -> list[Offer]:
    """GCP rows -> whole-machine offers (host + GPUs, same zone), TPU slices, and n1 CPU baseline rows."""
    specs = {k: v.memory_gib for k, v in load_specs().items()}
    seen: set[tuple[tuple[str, str], ...]] = set()
    hosts: list[Row] = []
    gpus: dict[tuple[str, str, int], Row] = {}
    out: list[Offer] = []
    for row in rows:
        key = tuple(sorted(row.items()))
        if key in seen:
            log.add("gcp: exact duplicate rows removed")
            continue
        seen.add(key)
        name, machine = row.get("AcceleratorName", "").strip(), row.get("InstanceType", "").strip()
        if name.startswith("tpu-"):
            offer = make_offer(src, {**row, "InstanceType": name}, log, specs)
            if offer is not None:
                out.append(offer)
        elif name and not machine:
            gpus[(row.get("AvailabilityZone", ""), name, int(num(row.get("AcceleratorCount")) or 0))] = row
        elif machine:
            hosts.append(row)
    used: set[tuple[str, str, int]] = set()
    for host in hosts:
        machine, zone = host["InstanceType"].strip(), host.get("AvailabilityZone", "")
        fixed = gcp_fixed_gpus(machine)
        if fixed is not None:
            pairs = [(fixed[0], fixed[1])]
        elif machine.startswith("n1-"):
            cpu = make_offer(src, {**host, "AcceleratorName": "", "AcceleratorCount": ""}, log, specs)
            if cpu is not None:
                out.append(cpu)
            vcpus, mem = num(host.get("vCPUs")) or 0.0, num(host.get("MemoryGiB")) or 0.0
            pairs = [
                (g, n)
                for g, limits in N1_GPU_LIMITS.items()
                for n, (max_cpu, max_mem) in limits.items()
                if vcpus <= max_cpu and mem <= max_mem and (zone, g, n) in gpus
            ]
        else:
            log.add("gcp: host rows of families without GPUs or a known GPU pairing dropped")
            continue
        for gpu_name, n in pairs:
            gpu_row = gpus.get((zone, gpu_name, n))
            if gpu_row is None:
                log.add("gcp: GPU machine types without a GPU price row in the same zone dropped")
                continue
            used.add((zone, gpu_name, n))
            offer = _gcp_pair(host, gpu_row, src, log, specs)
            if offer is not None:
                out.append(offer)
    log.add(
        "gcp: GPU price rows without a host machine type in the same zone (unused)", len(set(gpus) - used)
    )
    return out


def _gcp_pair(host: Row, gpu_row: Row, src: Input, log: BuildLog, specs: Mapping[str, float]) -> Offer | None:
    name = gpu_row["AcceleratorName"].strip()
    host_p = clean_prices("gcp", host["InstanceType"], host, log)
    gpu_p = clean_prices("gcp", name, gpu_row, log)
    od = _sum_optional(host_p.on_demand, gpu_p.on_demand)
    if od is None:
        log.add(f"gcp: {host['InstanceType'].split('-')[0]} offers dropped, host or GPU price unknown (0.0)")
        return None
    log.add("gcp: host VM + GPU rows summed into whole-machine offers")
    merged = {
        **gpu_row,
        "InstanceType": host["InstanceType"],
        "vCPUs": host.get("vCPUs", ""),
        "MemoryGiB": host.get("MemoryGiB", ""),
        "Price": str(od),
    }
    offer = make_offer(src, merged, Log0(), specs)
    if offer is None:
        return None
    return replace(offer, price_spot_usd_per_hour=_sum_optional(host_p.spot, gpu_p.spot))


class Log0(BuildLog):
    """A log that discards (for inner calls whose corrections were already counted)."""

    def add(self, what: str, n: int = 1) -> None:
        return None


# --- whole build --------------------------------------------------------------------------------------------
def offer_key(o: Offer) -> tuple[str, str, str, str, str, float]:
    return (o.provider, o.region, o.zone or "", o.instance_type, o.gpu or "", o.gpu_count)


def build(snapshot: Path, log: BuildLog) -> list[Offer]:
    """All offers from the snapshot folder, corrected, de-duplicated and sorted."""
    specs = {k: v.memory_gib for k, v in load_specs().items()}
    offers: list[Offer] = []
    azure_mirror_keys: set[tuple[str, str]] = set()
    for src in INPUTS:
        rows = read_rows((snapshot / src.file).read_text(encoding="utf-8"))
        log.rows_in[src.file] = len(rows)
        if src.provider == "gcp":
            got = combine_gcp(rows, src, log)
        else:
            got = [o for o in (make_offer(src, r, log, specs) for r in rows) if o is not None]
        if src.provider == "azure" and src.version == "v6":
            kept = [o for o in got if (o.instance_type, o.region) not in azure_mirror_keys]
            log.add("azure: v6 rows dropped because the 2026-05-20 mirror has them", len(got) - len(kept))
            got = kept
        elif src.provider == "azure":
            azure_mirror_keys |= {(o.instance_type, o.region) for o in got}
        offers.extend(got)
    return representative_spot(dedupe(offers, log), log)


def dedupe(offers: Iterable[Offer], log: BuildLog) -> list[Offer]:
    """One offer per key (provider, region, zone, instance type, GPU, count): the cheapest wins; sorted."""
    best: dict[tuple[str, str, str, str, str, float], Offer] = {}
    for o in offers:
        k = offer_key(o)
        if k in best:
            log.add(f"{o.provider}: duplicate offers removed")
            if o.price_on_demand_usd_per_hour >= best[k].price_on_demand_usd_per_hour:
                continue
        best[k] = o
    return [best[k] for k in sorted(best)]


GAPS = (
    "Azure v8 (the newest Azure rows are the 2026-05-20 third-party mirror; US rows absent there come "
    "from the "
    "old v6 file).",
    "AWS CPU families (Graviton c7g/m7g, x86 c7i/m7i): no CPU baseline rows for AWS.",
    "GCP a4-highgpu-8g (B200): the host VM price is 0.0 (unknown) in the source, so no GCP B200 offer is "
    "built.",
    "OCI GB300 (no spec row in gpu_specs.csv yet, rows dropped); OCI/DO families beyond the listed shapes.",
    "RunPod v8 beyond the v7 file; IBM, SCP, PrimeIntellect, Spheron, Daytona, CoreWeave.",
    "Reserved and committed prices (not in any input file).",
)


NOTES = (
    "GPU names resolve through gpu_aliases.csv plus the per-provider rules in "
    "`gpufleet.catalog.offer_gpu.RULES` (each cites its alias note).",
    "`gpu_memory_gib` = the spec's device-reported GiB; the provider's GpuInfo memory (normalised: Lambda/DO "
    "totals are per GPU, Shadeform's 'MiB' are GB) is used to pick the part (A100 40 vs 80 GB, H100 SXM "
    "vs NVL) "
    "and replaces the spec value only when it exceeds it by >10% (Vast's modded 48 GB RTX 4090).",
    "GCP: offer = host VM + GPU price row in the same zone. a2/a3/a4/g2 machine types have fixed GPU "
    "counts; n1 "
    "hosts get T4/P4 (1/2/4), V100 (1/2/4/8), P100 (1/2/4) where the host's vCPUs and memory are within "
    "GCP's "
    "per-count limits; spot = host spot + GPU spot, null if either is unknown. n1 hosts are also kept "
    "as CPU rows.",
    "TPU slices: `gpu_count` = chips (v2/v3/v4/v5p suffix counts TensorCores, 2 per chip; v5e/v6e count "
    "chips).",
    "Fractional GPUs (AWS g6f/gr6f, Azure NVadsA10_v5) keep the fraction; `gpu_memory_gib` is the slice's "
    "share (fraction x the GPU's memory); the engine ranks whole GPUs only.",
    "Spot per region: every zone row of a (provider, region, instance type) carries the region's "
    "representative spot price, the lower median of its zones' prices (an actual zone price that at least "
    "half the zones offer), not each zone's own. AWS Local Zone rows (zone id with a metro code, e.g. "
    "use1-atl2-az1) get their own region `<parent>-<metro>` (e.g. us-east-1-atl2).",
    "Azure: the 2026-05-20 mirror wins; v6 rows are used only for (instance type, region) pairs it "
    "lacks, which "
    "includes retired K80/M60 sizes: treat those as historical.",
    "Mithril lists round prices (1.00 USD per GPU-hour, on-demand = spot, H100 and H200 alike): "
    "placeholders of its auction market, so those rows are left out (see the corrections above).",
    "Duplicates (same provider, region, zone, instance type, GPU, count): the cheapest row is kept.",
)


def provenance_md(log: BuildLog, offers: list[Offer]) -> str:
    """PROVENANCE.md text: inputs, dates, corrections with row counts, gaps."""
    by_p = Counter(o.provider for o in offers)
    lines = [
        "# Offer catalog: provenance",
        "",
        "Generated by `tools/build_catalog.py` from the SkyPilot-format snapshot "
        "(skypilot-org/skypilot-catalog "
        "and a third-party mirror, collected 2026-11-22; see the snapshot's own PROVENANCE.md). Do not "
        "edit by "
        "hand: rerun the build. Prices are USD per hour for the whole machine; `gpu_memory_gib` is per GPU, "
        "device-reported (from gpu_specs.csv), unless the provider reports more than the spec by >10%.",
        "",
        "## Inputs",
        "",
        "| file | version | captured_at | rows in |",
        "|---|---|---|---|",
    ]
    lines += [f"| {s.file} | {s.version} | {s.captured_at} | {log.rows_in[s.file]} |" for s in INPUTS]
    lines += [
        "",
        '`captured_at`: v8 = "2026-08/2026-11" (newer than 2026-08-24), mirror = "2026-05-20", v6 and RunPod '
        'v7 = "old" (unknown date).',
        "",
        "## Corrections (rows touched)",
        "",
        "| correction | rows |",
        "|---|---|",
    ]
    lines += [f"| {k} | {v} |" for k, v in sorted(log.corrections.items())]
    lines += ["", "## Output", "", f"{len(offers)} offers.", "", "| provider | offers |", "|---|---|"]
    lines += [f"| {p} | {n} |" for p, n in sorted(by_p.items())]
    lines += ["", "## Judgment calls", ""]
    lines += [f"- {n}" for n in NOTES]
    lines += ["", "## Gaps (nothing added: no citable source was available offline)", ""]
    lines += [f"- {g}" for g in GAPS]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    root = Path(__file__).resolve().parents[1]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--snapshot", type=Path, default=root.parent / "shared" / "data" / "catalog-snapshot")
    ap.add_argument("--out", type=Path, default=root / "src" / "gpufleet" / "catalog" / "data")
    args = ap.parse_args(argv)
    log = BuildLog()
    offers = build(args.snapshot, log)
    log.rows_out.update(Counter(o.provider for o in offers))
    text = write_offers_csv(OfferTable.from_offers(offers))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "offers.csv").write_text(text, encoding="utf-8")
    (args.out / "build_log.json").write_text(
        json.dumps(
            {
                "offers": len(offers),
                "rows_in": dict(sorted(log.rows_in.items())),
                "offers_per_provider": dict(sorted(log.rows_out.items())),
                "corrections": dict(sorted(log.corrections.items())),
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    (args.out / "PROVENANCE.md").write_text(provenance_md(log, offers), encoding="utf-8")
    print(
        f"wrote {len(offers)} offers to {args.out / 'offers.csv'} ({len(text) / 1e6:.2f} MB)", file=sys.stderr
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
