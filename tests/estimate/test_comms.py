"""Collective-communication cost model."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.catalog.specs import get_spec
from gpufleet.estimate import comms


def test_ring_all_reduce_bandwidth_term() -> None:
    link = comms.Link(bw_gb_per_s=100.0, hop_latency_s=0.0, kind="nvlink")
    # 2 (n-1)/n x 1 GB / 100 GB/s with n = 8
    assert comms.all_reduce_s(1e9, 8, link) == pytest.approx(2 * 7 / 8 / 100)
    assert comms.all_gather_s(1e9, 8, link) == pytest.approx(7 / 8 / 100)
    assert comms.all_reduce_s(1e9, 1, link) == 0.0


def test_links_from_specs() -> None:
    h100 = get_spec("H100-SXM")
    nv = comms.intra_node_link(h100, 1.0)
    assert nv.kind == "nvlink" and nv.bw_gb_per_s == pytest.approx(450.0)
    l4 = comms.intra_node_link(get_spec("L4"), 1.0)
    assert l4.kind == "pcie" and l4.bw_gb_per_s == pytest.approx(31.5)
    assert comms.inter_node_link(h100, 1.0).bw_gb_per_s == 50.0
    assert comms.inter_node_link(get_spec("A100-SXM-80GB"), 1.0).bw_gb_per_s == 25.0


def test_group_beyond_a_node_uses_the_network() -> None:
    h100 = get_spec("H100-SXM")
    assert comms.group_link(h100, group=8, stride=1, gpus_per_node=8, link_eff=1.0).kind == "nvlink"
    assert comms.group_link(h100, group=4, stride=4, gpus_per_node=8, link_eff=1.0).kind == "network"


@given(n=st.integers(2, 1024), size=st.floats(1.0, 1e11), bw=st.floats(1.0, 1000.0))
def test_more_bandwidth_never_slower(n: int, size: float, bw: float) -> None:
    slow = comms.Link(bw_gb_per_s=bw, hop_latency_s=1e-5, kind="nvlink")
    fast = comms.Link(bw_gb_per_s=bw * 2, hop_latency_s=1e-5, kind="nvlink")
    assert comms.all_reduce_s(size, n, fast) <= comms.all_reduce_s(size, n, slow)
