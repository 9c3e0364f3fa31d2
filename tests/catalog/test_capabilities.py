"""Provider classes, fabrics and multi-node support read from the shipped capability tables."""

from __future__ import annotations

import pytest

from gpufleet.catalog.capabilities import (
    ASSUMED_TCP_GBPS_PER_NODE,
    fabric_for,
    offer_class,
    provider_capabilities,
    provider_class,
)
from gpufleet.catalog.offers import load_offers


@pytest.mark.parametrize(
    ("provider", "instance", "gpu", "kind", "gbps", "multi"),
    [
        ("aws", "p5.48xlarge", "H100-SXM", "EFA", 3200.0, True),  # AWS markets p5 as 3,200 Gbps EFA
        ("aws", "g5.xlarge", "A10G", "TCP", 2.5, True),  # "up to" size: the 2.5 Gb/s baseline, no EFA
        ("azure", "Standard_ND96isr_H100_v5", "H100-SXM", "InfiniBand NDR", 3200.0, True),
        ("gcp", "a3-highgpu-8g", "H100-SXM", "GPUDirect-TCPX", 800.0, True),
        ("vast", "1x-H100_SXM-32-65536", "H100-SXM", "TCP", ASSUMED_TCP_GBPS_PER_NODE, False),
        ("runpod", "8x_H100-SXM_SECURE", "H100-SXM", "TCP", ASSUMED_TCP_GBPS_PER_NODE, False),
        ("seeweb", "ECS1GPU3", "A100-SXM-80GB", "TCP", ASSUMED_TCP_GBPS_PER_NODE, False),  # SkyPilot: no
        ("do", "gpu-h100x8-640gb", "H100-SXM", "RDMA fabric (multi-node GPU Droplets, by contract)", 400.0,
         False),  # multi-node by contract only
    ],
)  # fmt: skip
def test_fabric_and_multi_node(
    provider: str, instance: str, gpu: str, kind: str, gbps: float, multi: bool
) -> None:
    f = fabric_for(provider, instance, gpu)
    assert (f.kind, f.gbps_per_node, f.multi_node) == (kind, gbps, multi)
    assert f.label.startswith(kind)


def test_classes() -> None:
    assert provider_class("aws") == "hyperscaler" and provider_class("lambda") == "gpu_cloud"
    assert provider_class("vast") == "marketplace" and provider_class("shadeform") == "aggregator"
    assert provider_class("my-private-cloud") == "unknown"
    assert offer_class("runpod", "1x_A40_COMMUNITY") == "marketplace"  # peer-hosted tier
    assert offer_class("runpod", "1x_A40_SECURE") == "gpu_cloud"


def test_every_catalog_provider_has_a_class() -> None:
    caps = provider_capabilities()
    for p in load_offers().providers():
        assert p in caps, p


def test_compiled_instance_patterns_match_as_fnmatch() -> None:
    """_match (globs compiled once, plain names only in the exact pass) picks the row that the plain rule
    picks: exact names first, then fnmatch globs, in file order; for every offer of the shipped table and
    for names that only a glob or nothing matches."""
    import fnmatch

    from gpufleet.catalog import capabilities as cap
    from gpufleet.catalog.offers import load_offers

    def reference(provider: str, instance_type: str, gpu: str) -> object:
        rows = cap._instance_rows().get(provider, ())
        for row in rows:
            if any(g == instance_type and (not sub or sub in gpu) for g, sub in row.patterns):
                return row
        for row in rows:
            if any(
                fnmatch.fnmatchcase(instance_type, g) and (not sub or sub in gpu) for g, sub in row.patterns
            ):
                return row
        return None

    table = load_offers()
    triples = set(
        zip(table.column("provider"), table.column("instance_type"), table.column("gpu"), strict=True)
    )
    for provider in cap._instance_rows():
        triples |= {(provider, "no-such-instance", ""), (provider, "p5.48xlarge-x", "H100-SXM")}
    assert len(triples) > 500
    for p, i, g in sorted(triples):
        assert cap._match(p, i, g) is reference(p, i, g), (p, i, g)
