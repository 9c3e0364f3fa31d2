"""Gaudi scale-up ports that reach node peers (the rest face the scale-out network)."""

from __future__ import annotations

import pytest

from gpufleet.catalog.specs import get_spec
from gpufleet.estimate import comms


@pytest.mark.parametrize(
    ("gpu", "share", "full_gb_per_s", "pair_gb_per_s"),
    [
        # HLS-Gaudi2: 21 of 24 x 100 GbE to the peers: 21 x 12.5 = 262.5 GB/s per direction, 3 x 12.5 per peer
        ("Gaudi2", 21 / 24, 262.5, 37.5),
        # HLS-Gaudi3: 21 of 24 x 200 GbE: 21 x 25 = 525 GB/s, 3 x 25 = 75 per peer
        ("Gaudi3", 21 / 24, 525.0, 75.0),
        # HLS-1: 7 of 10 x 100 GbE, one per peer: 87.5 GB/s, 12.5 per peer
        ("Gaudi", 7 / 10, 87.5, 12.5),
    ],
)
def test_gaudi_mesh_counts_only_peer_ports(
    gpu: str, share: float, full_gb_per_s: float, pair_gb_per_s: float
) -> None:
    spec = get_spec(gpu)
    assert comms.roce_peer_share(spec) == pytest.approx(share)
    assert comms.intra_node_link(spec, 1.0, 8).bw_gb_per_s == pytest.approx(full_gb_per_s)
    assert comms.intra_node_link(spec, 1.0, 2).bw_gb_per_s == pytest.approx(pair_gb_per_s)
    # TP4 drives 3 peers: 3 x the pair figure (Gaudi 2: 112.5 GB/s)
    assert comms.intra_node_link(spec, 1.0, 4).bw_gb_per_s == pytest.approx(3 * pair_gb_per_s)


@pytest.mark.parametrize("gpu", ["MI300X", "H100-SXM", "B200"])
def test_other_fabrics_keep_their_listed_rate(gpu: str) -> None:
    spec = get_spec(gpu)
    assert comms.roce_peer_share(spec) == 1.0
    assert comms.intra_node_link(spec, 1.0, 8).bw_gb_per_s == pytest.approx(spec.scaleup_bw_gb_per_s / 2)
