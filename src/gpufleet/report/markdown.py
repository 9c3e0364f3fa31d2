"""Results as GitHub-flavoured Markdown (tables, headings, bullet lists)."""

from __future__ import annotations

from collections.abc import Sequence

from gpufleet.recommend.types import (
    Candidate,
    Migration,
    Recommendation,
    ScenarioResult,
)
from gpufleet.report.common import (
    CANDIDATE_COLUMNS,
    STATUS_TITLES,
    Result,
    assumption_lines,
    candidate_label,
    candidate_row,
    cost_text,
    interval,
    miss_reason,
    speed_text,
    suggestion_text,
    usd,
    workload_lines,
)
from gpufleet.report.summary import (
    SET_COLUMNS,
    migration_rows,
    performance_lines,
    savings_text,
    scenario_set_row,
)
from gpufleet.units import MS_PER_S


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown pipe table."""
    lines = ["| " + " | ".join(_cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _candidates(cands: Sequence[Candidate]) -> str:
    rows = [list(candidate_row(i, c).values()) for i, c in enumerate(cands, 1)]
    return table([h for _, h in CANDIDATE_COLUMNS], rows)


def _recommendation(rec: Recommendation, level: int, extra: Sequence[str]) -> list[str]:
    h = "#" * level
    out = [f"**Status:** {STATUS_TITLES.get(rec.status, rec.status)}"]
    if rec.message:
        out.append(rec.message)
    out.append(f"{h} Workload\n\n" + "\n".join(f"- {line}" for line in workload_lines(rec.workload)))
    if rec.best is not None:
        b = rec.best
        out.append(
            f"{h} Best option\n\n**{candidate_label(b)}**: {b.total_gpus} x {b.gpu}, "
            f"{cost_text(b)}, {speed_text(b)}" + (f"\n\n**Survives:** {b.survives}" if b.survives else "")
        )
    if rec.ranked:
        out.append(f"{h} Top candidates\n\n{_candidates(rec.ranked)}")
    if rec.pareto:
        training = rec.workload.is_training
        cost_head = "$/run" if training else "$/month"

        def cost_of(c: Candidate) -> str:
            return usd(c.cost_usd_per_run if training else c.cost_usd_per_month)

        rows = [[candidate_label(c), cost_of(c), _throughput_text(c)] for c in rec.pareto]
        out.append(
            f"{h} Pareto front (cost vs throughput)\n\n" + table(["Option", cost_head, "Throughput"], rows)
        )
        if rec.pareto_latency:
            lat_head = "Time to train" if training else "TPOT (p10-p90)"
            rows = [[candidate_label(c), cost_of(c), _latency_text(c)] for c in rec.pareto_latency]
            out.append(
                f"{h} Pareto front (cost vs latency)\n\n" + table(["Option", cost_head, lat_head], rows)
            )
    if rec.closest:
        misses = [f"- {candidate_label(c)}: {miss_reason(c, rec)}" for c in rec.closest]
        out.append(f"{h} Closest options\n\n{_candidates(rec.closest)}\n\n" + "\n".join(misses))
    if rec.cannot_fit is not None:
        cf = rec.cannot_fit
        lines = [f"{h} Why it cannot fit", ""]
        if cf.reason not in rec.message:
            lines += [cf.reason, ""]
        lines += [
            f"- memory needed on one GPU: {cf.mem_needed_single_gpu_gib:.1f} GiB",
            f"- largest GPU offered: {cf.largest_gpu_memory_gib:.1f} GiB; largest node: "
            f"{cf.largest_node_memory_gib:.1f} GiB",
            "",
            "Suggestions:",
            "",
        ]
        lines += [f"- {suggestion_text(s)}" for s in cf.suggestions]
        out.append("\n".join(lines))
    out.append(
        f"{h} Search\n\n{rec.offers_considered} offers considered, "
        f"{rec.candidates_evaluated} candidates evaluated."
    )
    assumptions = assumption_lines(rec, extra)
    if assumptions:
        out.append(f"{h} Assumptions\n\n" + "\n".join(f"- {a}" for a in assumptions))
    return out


def _migration(m: Migration, level: int) -> list[str]:
    h = "#" * level
    out = [f"{h} Migration\n\n" + table(["", "Now", "After"], [list(r) for r in migration_rows(m)])]
    facts = [f"- **Savings:** {savings_text(m)}"]
    perf = performance_lines(m)
    if perf:
        facts.append(f"- **Performance:** {'; '.join(perf)}")
    facts.append(f"- **Risk:** {m.risk}" + (f": {'; '.join(m.risk_reasons)}" if m.risk_reasons else ""))
    facts.append(
        f"- **Complexity:** {m.complexity}"
        + (f": {'; '.join(m.complexity_reasons)}" if m.complexity_reasons else "")
    )
    out.append("\n".join(facts))
    out.append(f"**Verdict:** {m.verdict}")
    return out


def _scenario(s: ScenarioResult, level: int, extra: Sequence[str]) -> list[str]:
    out = [f"{'#' * level} Scenario {s.name}"]
    if s.description:
        out.append(s.description)
    if s.error is not None or s.recommendation is None:
        out.append(f"**Error:** {s.error}")
        return out
    if s.migration is not None:
        out += _migration(s.migration, level + 1)
    out += _recommendation(s.recommendation, level + 1, extra)
    return out


def _throughput_text(c: Candidate) -> str:
    iv = c.output_tokens_per_s if c.output_tokens_per_s is not None else c.tokens_per_s
    return interval(iv, unit="tok/s")


def _latency_text(c: Candidate) -> str:
    if c.tpot_s is not None:
        return interval(c.tpot_s, factor=MS_PER_S, unit="ms")
    return speed_text(c)


def render_markdown(result: Result, *, assumptions: Sequence[str] = ()) -> str:
    """The Markdown document for ``result``; ``assumptions`` are extra lines for the assumptions section."""
    if isinstance(result, Recommendation):
        parts = [f"# Recommendation: {result.workload.name}", *_recommendation(result, 2, assumptions)]
    elif isinstance(result, Migration):
        parts = [
            f"# Migration: {result.workload.name}",
            *_migration(result, 2),
            *_recommendation(result.recommendation, 2, assumptions),
        ]
    elif isinstance(result, ScenarioResult):
        parts = [f"# gpufleet report: {result.name}", *_scenario(result, 2, assumptions)]
    else:
        summary = table(SET_COLUMNS, [list(scenario_set_row(s)) for s in result.results])
        parts = [f"# Scenario set: {result.name}", summary]
        for s in result.results:
            parts += _scenario(s, 2, assumptions)
    return "\n\n".join(parts).rstrip() + "\n"
