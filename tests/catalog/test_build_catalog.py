"""The build's pure functions on tiny inline CSV fixtures (never the whole snapshot)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from gpufleet.catalog.specs import load_specs

_TOOL = Path(__file__).resolve().parents[2] / "tools" / "build_catalog.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_catalog", _TOOL)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["build_catalog"] = mod
    spec.loader.exec_module(mod)
    return mod


bc = _load()
MEM = {k: v.memory_gib for k, v in load_specs().items()}


def _src(provider: str, version: str = "v8") -> object:
    return bc.Input(
        provider=provider, file=f"{provider}/vms.csv", version=version, captured_at=bc.CAPTURED_V8
    )


AZURE_HEAD = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,"
    "Generation\n"
)
GPU_A100 = "{'Gpus': [{'Name': 'A100', 'MemoryInfo': {'SizeInMiB': 40960}}]}"
GCP_CSV = f"""\
InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,SpotPrice
a2-highgpu-1g,12.0,85.0,,,,asia-northeast1,asia-northeast1-a,0.94803,0.41783
a2-highgpu-1g,12.0,85.0,,,,asia-northeast1,asia-northeast1-a,0.94803,0.41783
,,,A100,1,"{GPU_A100}",asia-northeast1,asia-northeast1-a,1.70586,1.2307
,,,A100,1,"{GPU_A100}",asia-northeast1,asia-northeast1-b,1.70586,1.2307
n1-standard-8,8.0,30.0,,,,asia-east1,asia-east1-a,0.44,0.07126
n1-highmem-64,64.0,416.0,,,,asia-east1,asia-east1-a,4.0,0.8
,,,T4,1,,asia-east1,asia-east1-a,0.35,0.1383
,,,T4,2,,asia-east1,asia-east1-a,0.7,0.0
,,,T4,4,,asia-east1,asia-east1-a,1.4,0.5532
,,,V100,1,,asia-east1,asia-east1-a,2.48,0.98
a4-highgpu-8g,224.0,3968.0,,,,asia-northeast1,asia-northeast1-b,0.0,0.0
,,,B200,8,,asia-northeast1,asia-northeast1-b,64.44,39.128
,,,tpu-v6e-1,1,tpu-v6e-1,asia-east1,asia-east1-c,700.0,700.0
,,,tpu-v4-8,1,tpu-v4-8,us-central2,us-central2-b,12.88,3.864
"""


def _gcp() -> tuple[list[object], object]:
    log = bc.BuildLog()
    offers = bc.combine_gcp(bc.read_rows(GCP_CSV), _src("gcp"), log)
    return offers, log


def _find(offers: list[object], **kw: object) -> list[object]:
    return [o for o in offers if all(getattr(o, k) == v for k, v in kw.items())]


def test_gcp_host_plus_gpu_summed_by_hand() -> None:
    offers, log = _gcp()
    (a2,) = _find(offers, instance_type="a2-highgpu-1g")
    # checked by hand: host 0.94803 + A100 0.170586e1 = 2.65389; spot 0.41783 + 1.2307 = 1.64853
    assert a2.price_on_demand_usd_per_hour == pytest.approx(2.65389, abs=1e-9)
    assert a2.price_spot_usd_per_hour == pytest.approx(1.64853, abs=1e-9)
    assert (a2.gpu, a2.gpu_count, a2.zone, a2.vcpus) == ("A100-SXM-40GB", 1.0, "asia-northeast1-a", 12.0)
    assert log.corrections["gcp: exact duplicate rows removed"] == 1


def test_gcp_n1_attach_counts_and_limits() -> None:
    offers, _ = _gcp()
    small = _find(offers, instance_type="n1-standard-8")
    got = sorted((o.gpu, o.gpu_count) for o in small if o.gpu)
    # n1-standard-8 (8 vCPU, 30 GB): T4 x1/2/4 and V100 x1 (V100 x1 allows up to 12 vCPU / 78 GB)
    assert got == [("T4", 1.0), ("T4", 2.0), ("T4", 4.0), ("V100-SXM2-16GB", 1.0)]
    t4x2 = _find(small, gpu="T4", gpu_count=2.0)[0]
    assert t4x2.price_on_demand_usd_per_hour == pytest.approx(0.44 + 0.7)
    assert t4x2.price_spot_usd_per_hour is None  # GPU spot 0.0 is unknown, so the sum is unknown
    big = _find(offers, instance_type="n1-highmem-64")
    # 64 vCPU / 416 GB: only T4 x4 allows it (96 vCPU, 624 GB); V100 x1 does not
    assert sorted((o.gpu, o.gpu_count) for o in big if o.gpu) == [("T4", 4.0)]


def test_gcp_n1_hosts_stay_as_cpu_baseline() -> None:
    offers, _ = _gcp()
    cpu = [o for o in offers if o.gpu is None]
    assert {o.instance_type for o in cpu} == {"n1-standard-8", "n1-highmem-64"}
    assert all(o.gpu_count == 0 and o.gpu_memory_gib == 0 for o in cpu)


def test_gcp_unknown_host_price_drops_a4_and_sentinel_tpu() -> None:
    offers, log = _gcp()
    assert not _find(offers, instance_type="a4-highgpu-8g")
    assert not _find(offers, instance_type="tpu-v6e-1")
    assert log.corrections["gcp: tpu-v6e sentinel price 700.0 treated as missing"] == 1
    assert log.corrections["gcp: a4 offers dropped, host or GPU price unknown (0.0)"] == 1


def test_gcp_tpu_slice_counts_chips() -> None:
    offers, _ = _gcp()
    (tpu,) = _find(offers, instance_type="tpu-v4-8")
    assert (tpu.gpu, tpu.gpu_count, tpu.price_on_demand_usd_per_hour) == ("TPU-v4", 4.0, 12.88)


@pytest.mark.parametrize(
    ("name", "chips"),
    [("tpu-v2-8", 4), ("tpu-v5p-16", 8), ("tpu-v6e-8", 8), ("tpu-v5litepod-4", 4), ("A100", None)],
)
def test_tpu_chips(name: str, chips: int | None) -> None:
    assert bc.tpu_chips(name) == chips


@pytest.mark.parametrize(
    ("machine", "expected"),
    [
        ("a2-highgpu-4g", ("A100", 4)),
        ("a2-megagpu-16g", ("A100", 16)),
        ("a3-edgegpu-8g-nolssd", ("H100", 8)),
        ("a3-megagpu-8g", ("H100-MEGA", 8)),
        ("g2-standard-24", ("L4", 2)),
        ("g2-standard-32", ("L4", 1)),
        ("g2-standard-96", ("L4", 8)),
        ("n1-standard-8", None),
    ],
)
def test_gcp_fixed_gpus(machine: str, expected: tuple[str, int] | None) -> None:
    assert bc.gcp_fixed_gpus(machine) == expected


def _one(provider: str, csv_text: str, version: str = "v8") -> tuple[object, object]:
    log = bc.BuildLog()
    (row,) = bc.read_rows(csv_text)
    return bc.make_offer(_src(provider, version), row, log, MEM), log


def test_vast_spot_zero_becomes_null_and_h100_nvl_by_memory() -> None:
    offer, log = _one(
        "vast",
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region\n"
        "2x-H100_NVL-32-65536,H100,2,32,64.0,\"{'Gpus': [{'Name': 'H100', 'Count': 2, 'MemoryInfo': "
        "{'SizeInMiB': 191660}}], 'TotalGpuMemoryInMiB': 191660}\",4.53,0.00,\"Australia, AU, OC\"\n",
    )
    assert offer.price_spot_usd_per_hour is None
    assert (offer.gpu, offer.gpu_count, offer.gpu_memory_gib) == ("H100-NVL", 2.0, MEM["H100-NVL"])
    assert log.corrections["vast: spot price 0.0 -> null (unknown, never 0)"] == 1


def test_shadeform_memory_gb_labelled_mib_resolves_a100_80() -> None:
    offer, log = _one(
        "shadeform",
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice\n"
        "crusoe_A100x8,A100,8.0,96,960,14.0,us-east-1,\"{'Gpus': [{'Name': 'A100', 'Count': 8.0, "
        "'MemoryInfo': "
        "{'SizeInMiB': 80}, 'TotalGpuMemoryInMiB': 640}]}\",\n",
    )
    assert offer.gpu == "A100-SXM-80GB"  # 80 "MiB" is 80 GB; read as MiB it would be the 40 GB part
    assert log.corrections["shadeform: GPU memory labelled MiB read as GB"] == 1


def test_lambda_total_memory_is_per_gpu() -> None:
    row = {
        "GpuInfo": "{'Gpus': [{'Count': 8.0, 'MemoryInfo': {'SizeInMiB': 40960}}], 'TotalGpuMemoryInMiB': "
        "40960}"
    }
    log = bc.BuildLog()
    assert bc.per_gpu_memory_mib("lambda", row, 8.0, log) == 40960
    assert bc.per_gpu_memory_mib("aws", row, 8.0) == 5120  # elsewhere the total is divided by the count
    assert log.corrections["lambda: GpuInfo total memory taken as per GPU (not divided by count)"] == 1


def test_do_memory_not_multiplied_by_count() -> None:
    row = {
        "GpuInfo": "{'Gpus': [{'Count': 8.0, 'MemoryInfo': {'SizeInMiB': 81559}}], 'TotalGpuMemoryInMiB': "
        "81559}"
    }
    assert bc.per_gpu_memory_mib("do", row, 8.0) == 81559


def test_runpod_l40s_swapped_prices_fixed() -> None:
    offer, log = _one(
        "runpod",
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Region,SpotPrice,Price,"
        "AvailabilityZone\n1x_L40S_SECURE,L40S,1.0,16.0,62.0,L40S,US,0.86,0.71,US-GA-1\n",
        version="v7",
    )
    assert (offer.price_on_demand_usd_per_hour, offer.price_spot_usd_per_hour) == (0.86, 0.71)
    assert log.corrections["runpod: L40S spot and on-demand swapped back"] == 1


def test_azure_nd96isr_h100_v5_has_8_gpus() -> None:
    offer, log = _one(
        "azure",
        AZURE_HEAD + "Standard_ND96isr_H100_v5,H100,12,96.0,1900,H100,98.32,,eastus,V2\n",
        version="v6",
    )
    assert (offer.gpu, offer.gpu_count) == ("H100-SXM", 8.0)
    assert log.corrections["azure: Standard_ND96isr_H100_v5 GPU count 12 -> 8"] == 1


def test_fpga_rows_kept_out() -> None:
    offer, log = _one(
        "aws",
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,"
        "AvailabilityZone,Arch\nf1.2xlarge,Virtex UltraScale "
        "(VU9P),1.0,8.0,122.0,,1.65,0.5,us-east-1,use1-az1,x86_64\n",
    )
    assert offer is None
    assert log.corrections["aws: FPGA rows kept out of GPU offers"] == 1


def test_fractional_gpu_kept() -> None:
    offer, _ = _one(
        "aws",
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,"
        "AvailabilityZone,Arch\ng6f.large,L4,0.125,2.0,8.0,,0.2,,us-east-1,use1-az1,x86_64\n",
    )
    assert (offer.gpu, offer.gpu_count, offer.arch, offer.zone) == ("L4", 0.125, "x86_64", "use1-az1")


def test_rows_without_price_dropped_and_counted() -> None:
    offer, log = _one(
        "verda",
        "InstanceType,UpstreamCloudId,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,Price,"
        "SpotPrice\n2B300.60V,2B300.60V,60.0,550.0,B300,2.0,,FIN-03,,4.893\n",
    )
    assert offer is None
    assert log.corrections["verda: rows without an on-demand price dropped (spot-only)"] == 1


def test_cpu_row_and_empty_region() -> None:
    offer, log = _one(
        "seeweb",
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice\n"
        "eCS1,,,1,1.0,0.019,,,\n",
    )
    assert (offer.gpu, offer.gpu_count, offer.region) == (None, 0.0, bc.UNSPECIFIED_REGION)
    assert log.corrections["seeweb: empty region -> 'unspecified'"] == 1


def test_dedupe_keeps_cheapest_and_sorts() -> None:
    offer, _ = _one(
        "runpod",
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Region,SpotPrice,Price,"
        "AvailabilityZone\n2x_B200_SECURE,B200,2.0,56,566,B200,US,,15.98,US-CA-1\n",
        version="v7",
    )
    from dataclasses import replace

    log = bc.BuildLog()
    cheaper = replace(offer, price_on_demand_usd_per_hour=15.0)
    other = replace(offer, region="CA")
    out = bc.dedupe([offer, other, cheaper], log)
    assert [o.region for o in out] == ["CA", "US"]
    assert out[1].price_on_demand_usd_per_hour == 15.0
    assert log.corrections["runpod: duplicate offers removed"] == 1


def test_azure_v6_only_fills_rows_the_mirror_lacks(tmp_path: Path) -> None:
    head = AZURE_HEAD
    (tmp_path / "azure").mkdir()
    (tmp_path / "azure" / "vms.csv").write_text(
        head + "Standard_NC6s_v3,V100,1,6,112,V100,3.06,0.6,eastus,V1\n"
    )
    (tmp_path / "azure" / "vms.v6-us-only.csv").write_text(
        head
        + "Standard_NC6s_v3,V100,1,6,112,V100,9.99,,eastus,V1\n"
        + "Standard_NC6s_v3,V100,1,6,112,V100,3.1,,westus2,V1\n"
    )
    log = bc.BuildLog()
    inputs = tuple(i for i in bc.INPUTS if i.provider == "azure")
    orig = bc.INPUTS
    bc.INPUTS = inputs
    try:
        offers = bc.build(tmp_path, log)
    finally:
        bc.INPUTS = orig
    assert [(o.region, o.price_on_demand_usd_per_hour, o.captured_at) for o in offers] == [
        ("eastus", 3.06, "2026-05-20"),
        ("westus2", 3.1, "old"),
    ]
    assert offers[0].gpu == "V100-PCIe-16GB"


def test_parse_gpu_info_python_and_json() -> None:
    assert bc.parse_gpu_info(
        "{'Gpus': [{'MemoryInfo': {'SizeInMiB': 81920}}], 'TotalGpuMemoryInMiB': 655360}"
    ) == (
        81920,
        655360,
    )
    assert bc.parse_gpu_info(
        '{"Gpus": [{"MemoryInfo": {"SizeInMiB": 268288}}], "TotalGpuMemoryInMiB": 268288}'
    ) == (
        268288,
        268288,
    )
    assert bc.parse_gpu_info("H100") == (None, None)
    assert bc.parse_gpu_info("{'Gpus': [{'Manufacturer': null, 'MemoryInfo': {'SizeInMiB': 1}}]}") == (
        1,
        None,
    )
