"""The CLI's option names (as Python keywords) for workload fields, shared by the CLI and the Python API so
``gpufleet.recommend(target_rps=2)`` means what ``--target-rps 2`` means. Kept import-light (CLI start-up)."""

from __future__ import annotations

#: CLI option (Python keyword) -> workload field, where they differ
CLI_NAMES: dict[str, str] = {
    "target_rps": "target_requests_per_s",
    "target_tps": "target_output_tokens_per_s",
    "ttft_ms": "ttft_p95_ms",
    "tpot_ms": "tpot_p95_ms",
    "input_len": "input_len_tokens",
    "output_len": "output_len_tokens",
    "seq_len": "seq_len_tokens",
    "batch": "global_batch_sequences",
    "tokens": "train_tokens",
    "deadline_hours": "deadline_h",
    "provider": "providers",
    "region": "regions",
    "vendor": "gpu_vendors",
    "budget": "budget_usd_per_month",
    "geo": "geos",
    "gpu": "gpus",
    "min_gpu_memory": "min_gpu_memory_gib",
    "max_price_per_gpu_hour": "max_price_per_gpu_usd_per_hour",
    "exclude_provider": "exclude_providers",
    "provider_class": "provider_classes",
}

#: CLI option (Python keyword) -> field of the workload's ``current`` deployment
CURRENT_NAMES: dict[str, str] = {
    "current_provider": "provider",
    "current_instance": "instance_type",
    "current_count": "count",
    "current_region": "region",
}
