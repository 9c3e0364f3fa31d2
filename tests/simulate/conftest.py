"""Fixtures for the simulators: the shipped request traces and a fixed estimator-fed deployment."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.simulate.autoscale import Deployment, deployment_for
from gpufleet.simulate.traces import RequestTrace, read_trace

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
AZURE_CONV = TRACES / "azure-llm-inference-2023" / "AzureLLMInferenceTrace_conv.csv"
MOONCAKE = TRACES / "mooncake-fast25" / "conversation_trace_first30min.jsonl"


@pytest.fixture(scope="session")
def azure_conv() -> RequestTrace:
    return read_trace(AZURE_CONV)


@pytest.fixture(scope="session")
def mooncake() -> RequestTrace:
    return read_trace(MOONCAKE)


@pytest.fixture(scope="session")
def l4_8b(azure_conv: RequestTrace) -> Deployment:
    return deployment_for(azure_conv, model="llama-3.1-8b", gpu="l4")
