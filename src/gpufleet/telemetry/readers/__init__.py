"""Readers: each turns one input format into canonical samples
(:class:`~gpufleet.telemetry.schema.SampleBatch`).

Formats and the layouts accepted are described in ``docs/telemetry.md``.
"""

from __future__ import annotations

from gpufleet.telemetry.readers.cloudwatch import read_cloudwatch_csv
from gpufleet.telemetry.readers.exposition import read_exposition
from gpufleet.telemetry.readers.nvidia_smi import read_nvidia_smi_csv
from gpufleet.telemetry.readers.prom_json import read_query_range_json

__all__ = ["read_cloudwatch_csv", "read_exposition", "read_nvidia_smi_csv", "read_query_range_json"]
