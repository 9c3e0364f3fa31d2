"""Review scenario: an A100 -> newer-GPU migration of a 70B chat service compares now and after at the
workload's load, and the current deployment's figures keep their labels (operating batch, within the SLOs).

Before: the current deployment (2 x p4d.24xlarge, TP8) was re-estimated at the recommended deployment's full
capacity (4 replicas x 32 = 128 requests in flight, 64 per current replica) although 3 req/s keep ~31 in
flight; it then showed TPOT p90 75 ms against a 60 ms SLO next to ``meets_slo: true`` and a capacity of
2,166 tok/s labelled "at the SLO batch" (it was at twice that batch), and the TPOT ratio (0.56x) compared a
load the user does not have."""

from __future__ import annotations

import math
from functools import cache

from gpufleet.recommend.api import migrate
from gpufleet.recommend.types import Migration
from gpufleet.units import HOURS_PER_MONTH, MILLION, SECONDS_PER_HOUR

RPS = 3.0
OUTPUT_TOKENS = 300
TPOT_SLO_S = 0.060
TTFT_SLO_S = 1.0


@cache
def _a100_move() -> Migration:
    return migrate(
        model="llama-3.1-70b",
        precision="bf16",
        target_requests_per_s=RPS,
        ttft_p95_ms=TTFT_SLO_S * 1e3,
        tpot_p95_ms=TPOT_SLO_S * 1e3,
        input_len_tokens=1500,
        output_len_tokens=OUTPUT_TOKENS,
        current={"provider": "aws", "instance_type": "p4d.24xlarge", "count": 2, "region": "us-east-1"},
    )


def test_current_deployment_shown_within_the_slos_it_is_said_to_meet() -> None:
    m = _a100_move()
    cur = m.current
    assert cur.meets_slo and not cur.slo_misses
    assert cur.tpot_s is not None and cur.ttft_s is not None
    # checked at p90 of the estimate (the workload's confidence): the label must agree with the figure
    assert cur.tpot_s.p90 <= TPOT_SLO_S + 1e-9, cur.tpot_s
    assert cur.ttft_s.p90 <= TTFT_SLO_S + 1e-9, cur.ttft_s


def test_now_and_after_compared_at_the_workloads_load() -> None:
    m = _a100_move()
    new = m.recommended
    assert new is not None and new.output_tokens_per_s is not None and new.batch_per_replica
    load_tok_s = RPS * OUTPUT_TOKENS  # 900 output tokens/s
    streams = new.batch_per_replica * new.replicas
    conc = math.ceil(streams * load_tok_s / new.output_tokens_per_s.central)
    assert conc < streams  # the load keeps fewer requests in flight than the new deployment can carry
    cur_per_replica = math.ceil(conc / m.current.replicas)
    new_per_replica = math.ceil(conc / new.replicas)
    note = next(n for n in m.recommendation.notes if n.startswith("TTFT and TPOT changes"))
    expected = f"{conc} concurrent requests ({cur_per_replica} per current replica, {new_per_replica} per new"
    assert expected in note
    # the unit cost at the load, recomputed: $/month / (tokens/s x 3,600 s/h x 730 h/month) x 10^6
    tokens_month = load_tok_s * SECONDS_PER_HOUR * HOURS_PER_MONTH
    assert math.isclose(
        m.current.cost_usd_per_million_output_tokens_at_load or 0.0,
        m.current_cost_usd_per_month / tokens_month * MILLION,
        rel_tol=1e-9,
    )
    assert m.savings_usd_per_month is not None
    assert math.isclose(m.savings_usd_per_month, m.current_cost_usd_per_month - new.cost_usd_per_month)
