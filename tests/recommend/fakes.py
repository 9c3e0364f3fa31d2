"""A small, deterministic roofline stand-in for the estimator, and offer-table builders, for engine tests."""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.catalog.offers import Offer, OfferTable
from gpufleet.catalog.specs import get_spec
from gpufleet.errors import UnsupportedError
from gpufleet.estimate.types import Interval
from gpufleet.precision import bytes_per_element
from gpufleet.recommend.types import Workload
from gpufleet.units import GIB

PARAMS = {
    "fake-1b": 1e9,
    "fake-7b": 7e9,
    "fake-13b": 13e9,
    "fake-70b": 70e9,
    "fake-400b": 400e9,
    "fake-2t": 2e12,
    "SMALL": 13e9,
    "MEDIUM": 35e9,
    "LARGE": 70e9,
    "MASSIVE": 405e9,
}
KV_GIB_PER_TOKEN_PER_BPARAM = 2e-6  # toy KV cache size


@dataclass(frozen=True)
class Mem:
    per_gpu_gib: float
    capacity_gib: float


@dataclass(frozen=True)
class Inf:
    fits: bool
    memory: Mem
    tp: int
    pp: int
    replicas: int
    batch_per_replica: int
    ttft_s: Interval | None
    tpot_s: Interval | None
    output_tokens_per_s: Interval | None
    requests_per_s: Interval | None
    max_concurrency_per_replica: int
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Train:
    fits: bool
    memory: Mem
    tp: int
    pp: int
    dp: int
    tokens_per_s: Interval | None
    time_to_train_s: Interval | None
    notes: tuple[str, ...] = ()


def _iv(x: float) -> Interval:
    return Interval(central=x, p10=0.8 * x, p90=1.25 * x)


class FakeEstimator:
    """Roofline toy: weights stream at 70 % of bandwidth per token, prefill at 50 % of peak."""

    def __init__(self) -> None:
        self.calls = 0

    def inference(
        self,
        *,
        gpu: str,
        precision: str,
        gpu_count: int,
        tp: int,
        pp: int,
        batch: int | None,
        workload: Workload,
        ep: int = 1,
    ) -> Inf:
        self.calls += 1
        spec = get_spec(gpu)
        peak = spec.dense_peak_tflops(precision) or spec.bf16_tflops or spec.fp16_tflops
        if peak is None and spec.vendor == "NVIDIA":
            peak = 100.0  # toy value for NVIDIA parts with unpublished peaks (A10G)
        if peak is None:
            raise UnsupportedError(f"{precision} unsupported on {gpu}")
        params = PARAMS[workload.model]
        shards = tp * pp
        w_gib = params * bytes_per_element(precision) / GIB / shards
        kv_seq = (
            KV_GIB_PER_TOKEN_PER_BPARAM
            * params
            / 1e9
            * (workload.input_len_tokens + workload.output_len_tokens)
        )
        usable = 0.9 * spec.memory_gib - 1.0
        max_b = int((usable - w_gib) / (kv_seq / shards)) if usable > w_gib else 0
        mem = Mem(per_gpu_gib=w_gib + 1.0 + kv_seq / shards, capacity_gib=spec.memory_gib)
        replicas = gpu_count // shards
        if max_b < 1 or replicas < 1:
            return Inf(
                fits=False,
                memory=mem,
                tp=tp,
                pp=pp,
                replicas=replicas,
                batch_per_replica=0,
                ttft_s=None,
                tpot_s=None,
                output_tokens_per_s=None,
                requests_per_s=None,
                max_concurrency_per_replica=0,
            )
        b = max_b if batch is None else min(batch, max_b)
        tpot = (
            (params * bytes_per_element(precision) / shards)
            / (0.7 * spec.mem_bw_gb_per_s * 1e9)
            * (1 + 0.01 * b)
        )
        ttft = 2 * params * workload.input_len_tokens / (0.5 * peak * 1e12 * tp) * (1 + 0.05 * b)
        tput = replicas * b / tpot
        return Inf(
            fits=True,
            memory=mem,
            tp=tp,
            pp=pp,
            replicas=replicas,
            batch_per_replica=b,
            ttft_s=_iv(ttft),
            tpot_s=_iv(tpot),
            output_tokens_per_s=_iv(tput),
            requests_per_s=_iv(tput / workload.output_len_tokens),
            max_concurrency_per_replica=max_b,
        )

    def training(
        self,
        *,
        gpu: str,
        precision: str,
        gpu_count: int,
        gpus_per_node: int,
        workload: Workload,
        node_network: object = None,
    ) -> Train:
        self.calls += 1
        spec = get_spec(gpu)
        peak = spec.dense_peak_tflops(precision) or spec.bf16_tflops or spec.fp16_tflops
        if peak is None and spec.vendor == "NVIDIA":
            peak = 100.0  # toy value for NVIDIA parts with unpublished peaks (A10G)
        if peak is None:
            raise UnsupportedError(f"{precision} unsupported on {gpu}")
        params = PARAMS[workload.model]
        bytes_pp = {"full_finetune": 16.0, "pretrain": 16.0, "lora": 2.2, "qlora": 0.7}[workload.task]
        per_gpu = params * bytes_pp / GIB / gpu_count + 2.0
        mem = Mem(per_gpu_gib=per_gpu, capacity_gib=spec.memory_gib)
        if per_gpu > 0.9 * spec.memory_gib:
            return Train(
                fits=False, memory=mem, tp=1, pp=1, dp=gpu_count, tokens_per_s=None, time_to_train_s=None
            )
        eff = 0.4 if gpu_count <= gpus_per_node else 0.4 * 0.9
        tps = gpu_count * eff * peak * 1e12 / (6 * params)
        assert workload.train_tokens is not None
        return Train(
            fits=True,
            memory=mem,
            tp=1,
            pp=1,
            dp=gpu_count,
            tokens_per_s=_iv(tps),
            time_to_train_s=_iv(workload.train_tokens / tps),
        )


def offer(
    provider: str,
    instance: str,
    gpu: str,
    count: float,
    price: float,
    spot: float | None = None,
    region: str = "us-east-1",
) -> Offer:
    return Offer(
        provider=provider,
        region=region,
        zone=None,
        instance_type=instance,
        gpu=gpu,
        gpu_count=count,
        gpu_memory_gib=get_spec(gpu).memory_gib,
        vcpus=max(8.0, 12.0 * count),  # a typical cloud GPU host: 12 vCPUs and 2x the GPU memory per GPU
        ram_gib=max(32.0, 2.0 * get_spec(gpu).memory_gib * count),
        arch=None,
        price_on_demand_usd_per_hour=price,
        price_spot_usd_per_hour=spot,
        captured_at="2026-01-01",
        source="test",
    )


def small_table() -> OfferTable:
    return OfferTable.from_offers(
        [
            offer("aws", "g5.xlarge", "A10G", 1, 1.006, 0.40),
            offer("aws", "g5.12xlarge", "A10G", 4, 5.672, 2.10),
            offer("aws", "g6e.xlarge", "L40S", 1, 1.861, 0.80),
            offer("aws", "g6e.xlarge", "L40S", 1, 2.10, None, region="eu-west-1"),
            offer("aws", "p5.4xlarge", "H100-SXM", 1, 6.88, 3.0),
            offer("aws", "p5.48xlarge", "H100-SXM", 8, 55.04, 30.0),
            offer("aws", "p5en.48xlarge", "H200-SXM", 8, 63.296, 17.0),
            offer("aws", "p4d.24xlarge", "A100-SXM-40GB", 8, 21.96, 9.0),
            offer("aws", "g4dn.xlarge", "T4", 1, 0.526, 0.20),
            offer("gcp", "a2-ultragpu-1g", "A100-SXM-80GB", 1, 5.07, 2.0, region="us-central1"),
            offer("azure", "ND96isr_MI300X_v5", "MI300X", 8, 48.0, None, region="eastus"),
        ]
    )
