"""`gpufleet recommend` and `gpufleet migrate`, plus the report output shared with `gpufleet scenarios`.

A workload comes from a file (WORKLOAD.yaml; our format or GPU Fleet Optimizer workloads.json) or from flags,
not both. Exit codes (gpufleet.cli.exit_codes): 0 with a candidate; 3 when no candidate meets the workload
(an infeasible SLO, a budget nobody fits, a model that cannot fit: reported in the output first, then the
exit); 2 for bad input (unknown names, malformed files, a zero budget).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpufleet.cli.console import console, err_console
from gpufleet.errors import InputError
from gpufleet.recommend.names import CLI_NAMES

if TYPE_CHECKING:
    from gpufleet.catalog.offers import OfferTable
    from gpufleet.recommend.types import Workload
    from gpufleet.report import Result

DEFAULT_HTML_FILE = Path("gpufleet-report.html")


class Format(StrEnum):
    table = "table"
    json = "json"
    markdown = "markdown"
    html = "html"


FormatOpt = Annotated[
    Format,
    typer.Option("--format", "-f", help="table (terminal), json, markdown or html (a self-contained file)."),
]
OutputOpt = Annotated[
    Path | None,
    typer.Option(
        "--output", "-o", help=f"Write the report to this file (html defaults to {DEFAULT_HTML_FILE})."
    ),
]


def assumption_notes(
    workloads: Sequence[Workload], commitments: Path | None = None, allow_unverified: bool = False
) -> list[str]:
    """Pricing assumptions in force for these workloads: commitment discounts (1y/3y) and the spot model."""
    pricings = {w.pricing for w in workloads} | {"on_demand" for w in workloads if w.current is not None}
    if not commitments and not pricings & {"1y", "3y", "spot"}:
        return []  # nothing to state: the pricing and report modules are not even imported
    from gpufleet.catalog.pricing import describe_assumptions, load_commitment_assumptions
    from gpufleet.cost.spot import load_spot_assumptions
    from gpufleet.report.assumptions import commitment_lines, spot_lines

    assumptions = load_commitment_assumptions(commitments) if commitments else None
    lines: list[str] = []
    for pricing, term in (("1y", 1), ("3y", 3)):
        if pricing in pricings:
            rows = describe_assumptions(assumptions)
            lines += commitment_lines(rows, term_years=term, allow_unverified=allow_unverified)
    if "spot" in pricings:
        lines += spot_lines(load_spot_assumptions())
    return lines


def emit(result: Result, fmt: Format, output: Path | None, assumptions: Sequence[str] = ()) -> None:
    """Render ``result`` and print it (stdout) or write it to ``output``; HTML always goes to a file."""
    if fmt is Format.html and output is None:
        output = DEFAULT_HTML_FILE
    if fmt is Format.table:
        from gpufleet.report.terminal import render_terminal  # rich: only for the terminal table

        renderable = render_terminal(result, assumptions=assumptions)
        if output is None:
            console.print(renderable)
            return
        from rich.console import Console

        buffer = io.StringIO()
        Console(file=buffer, width=200, color_system=None).print(renderable)
        text = buffer.getvalue()
    else:
        from gpufleet.report import render_text

        text = render_text(result, fmt.value, assumptions=assumptions)
        if output is None:
            typer.echo(text, nl=False)
            return
    from gpufleet.fileio import atomic_write_text, check_output_suffix

    check_output_suffix(output, fmt.value, what="report file (-o/--output)")
    atomic_write_text(output, text, what="report file (-o/--output)")
    err_console.print(f"Report written to {output}", highlight=False)


def _flag_fields(params: dict[str, Any]) -> dict[str, Any]:
    """Workload fields set on the command line (None = not given), renamed to the workload file's names.

    ``params`` is a command's ``locals()``: only the shared workload flags (:data:`WORKLOAD_FLAGS`) are read.
    """
    out: dict[str, Any] = {}
    for key in WORKLOAD_FLAGS:
        value = params.get(key)
        if value is None or value == []:
            continue
        out[FLAG_FIELDS.get(key, key)] = value
    return out


#: the workload flags `recommend` and `migrate` share (as Python parameter names)
WORKLOAD_FLAGS: tuple[str, ...] = (
    "model", "task", "precision", "input_len", "output_len", "seq_len", "batch", "concurrency", "target_rps",
    "target_tps",
    "ttft_ms", "tpot_ms", "tokens", "deadline_hours", "hours_per_month", "schedule", "pricing", "provider",
    "region", "vendor", "budget", "objective", "tier", "confidence", "max_risk", "allow_fallback", "geo",
    "gpu", "min_gpu_memory", "gpus_per_node", "max_nodes", "max_price_per_gpu_hour", "exclude_provider",
    "provider_class", "near_tie_pct", "recipe", "optimizer", "min_zones",
)  # fmt: skip

#: command-line flag (as a Python name) -> workload field, where they differ (shared with the Python API)
FLAG_FIELDS: dict[str, str] = CLI_NAMES


def resolve_workload(
    workload_file: Path | None,
    name: str | None,
    fields: dict[str, Any],
    current: dict[str, Any] | None = None,
) -> Workload:
    """The workload: from ``workload_file`` (entry ``name`` when it holds several) or from flags."""
    from gpufleet.recommend.workload import read_workload_file, workload_from_dict

    if workload_file is not None:
        given = sorted(fields) + (sorted(current) if current else [])
        if given:
            raise InputError(
                f"Give the workload either as a file ({workload_file}) or with flags, not both: remove "
                f"{', '.join('--' + g.replace('_', '-') for g in given)} or the file argument "
                "(change the file "
                "instead)."
            )
        workloads = read_workload_file(workload_file)
        if name is None:
            if len(workloads) == 1:
                return next(iter(workloads.values()))
            raise InputError(
                f"Workload file {workload_file} holds {len(workloads)} workloads "
                f"({', '.join(workloads)}). Pick one "
                "with --name, or run them all as a set with `gpufleet scenarios run-set`."
            )
        if name not in workloads:
            from gpufleet.errors import UnknownNameError

            raise UnknownNameError("workload", name, workloads, hint=f"Workloads in {workload_file}.")
        return workloads[name]
    if name is not None:
        raise InputError(
            f"--name {name!r} picks a workload out of a workload file, but no file was given. Pass the "
            "WORKLOAD file before the options, or drop --name."
        )
    if "model" not in fields:
        raise InputError(
            "No workload given: pass a WORKLOAD.yaml file, or at least --model (with --task, --precision, "
            "targets "
            "and SLOs as needed). See `gpufleet recommend --help`."
        )
    _check_length_flags(fields)
    data = dict(fields)
    if current:
        data["current"] = current
    labels = {field: "--" + flag.replace("_", "-") for flag, field in FLAG_FIELDS.items()}
    labels |= {k: "--" + k.replace("_", "-") for k in data if k not in labels}
    labels |= {f"current.{k}": f"--current-{k}" for k in ("provider", "count", "region")}
    labels |= {"current.instance_type": "--current-instance"}
    return workload_from_dict(
        data, source="Command-line options", entry=str(data.get("name", "workload")), labels=labels
    )


def _check_length_flags(fields: dict[str, Any]) -> None:
    """Refuse length flags the task ignores: a training job is sized by --seq-len and --batch, a service by
    --input-len and --output-len (a workload file's fields are checked by the workload model)."""
    from gpufleet.estimate.types import TRAINING_TASKS

    training = fields.get("task") in TRAINING_TASKS
    ignored = (
        ("input_len_tokens", "output_len_tokens")
        if training
        else ("seq_len_tokens", "global_batch_sequences")
    )
    given = [
        "--" + flag.replace("_", "-")
        for flag, field in FLAG_FIELDS.items()
        if field in ignored and field in fields
    ]
    if given:
        what = f"--task {fields.get('task')}" if training else "an inference workload"
        fix = (
            "A training job's sequences are --seq-len tokens, --batch of them per optimizer step."
            if training
            else "Requests are --input-len prompt and --output-len generated tokens; --seq-len and --batch "
            "size a training job (--task pretrain, full_finetune, lora or qlora)."
        )
        raise InputError(
            f"{', '.join(given)} {'has' if len(given) == 1 else 'have'} no effect with {what}, so "
            f"{'it' if len(given) == 1 else 'they'} would be silently ignored. {fix}"
        )


# --- options shared by `recommend` and `migrate` ----------------------------------------------------------
WorkloadArg = Annotated[
    Path | None,
    typer.Argument(
        help="Workload file (YAML/JSON; our format or GPU Fleet Optimizer workloads.json). Or use flags."
    ),
]
NameOpt = Annotated[
    str | None, typer.Option("--name", help="The workload to use when the file holds several.")
]
ModelOpt = Annotated[
    str | None, typer.Option("--model", help="Model id, alias, config.json path or size class.")
]
TaskOpt = Annotated[
    str | None, typer.Option("--task", help="inference, pretrain, full_finetune, lora or qlora.")
]
PrecisionOpt = Annotated[str | None, typer.Option("--precision", help="bf16, fp16, fp8, int8, int4, ...")]
InputLenOpt = Annotated[int | None, typer.Option("--input-len", help="Prompt length (tokens).")]
OutputLenOpt = Annotated[int | None, typer.Option("--output-len", help="Generated length (tokens).")]
SeqLenOpt = Annotated[
    int | None, typer.Option("--seq-len", help="Training: tokens per sequence (default 4096).")
]
BatchOpt = Annotated[
    int | None, typer.Option("--batch", help="Training: global batch in sequences (default 256).")
]
ConcurrencyOpt = Annotated[int | None, typer.Option("--concurrency", help="Concurrent requests to serve.")]
RpsOpt = Annotated[float | None, typer.Option("--target-rps", help="Target throughput (requests/s).")]
TpsOpt = Annotated[float | None, typer.Option("--target-tps", help="Target throughput (output tokens/s).")]
TtftOpt = Annotated[float | None, typer.Option("--ttft-ms", help="SLO: p95 time to first token (ms).")]
TpotOpt = Annotated[float | None, typer.Option("--tpot-ms", help="SLO: p95 time per output token (ms).")]
TokensOpt = Annotated[
    float | None, typer.Option("--tokens", help="Training: tokens to process (tokens; 5e10 or 50B).")
]
DeadlineOpt = Annotated[
    float | None, typer.Option("--deadline-hours", help="Training: must finish within (h).")
]
RecipeOpt = Annotated[
    str | None,
    typer.Option(
        "--recipe",
        help="Fine-tuning (full_finetune, lora, qlora): the trainer whose memory settings size each layout: "
        "torchtune, hf_trainer, unsloth, axolotl, litgpt, trl or bitsandbytes (default: generic AdamW with "
        "fp32 master weights).",
    ),
]
OptimizerOpt = Annotated[
    str | None,
    typer.Option(
        "--optimizer",
        help="Fine-tuning optimizer: adamw adam adamw_8bit adamw8bit paged_adamw8bit adafactor sgd "
        "sgd_momentum (default: the recipe's, else adamw). Overrides the recipe's.",
    ),
]
HoursOpt = Annotated[
    float | None, typer.Option("--hours-per-month", help="Hours the workload runs per month (h/month).")
]
ScheduleOpt = Annotated[
    str | None, typer.Option("--schedule", help="24/7 (default; or use --hours-per-month).")
]
PricingOpt = Annotated[str | None, typer.Option("--pricing", help="on_demand, spot, 1y or 3y.")]
ProviderOpt = Annotated[
    list[str] | None,
    typer.Option("--provider", help="Only this provider (repeatable or comma-separated)."),
]
RegionOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--region",
        help="Region glob over the provider's own region names, e.g. 'us-*' or eastus (repeatable or "
        "comma-separated); use --geo for a geography across providers.",
    ),
]
VendorOpt = Annotated[
    list[str] | None,
    typer.Option("--vendor", help="GPU vendor, e.g. NVIDIA (repeatable or comma-separated)."),
]
BudgetOpt = Annotated[float | None, typer.Option("--budget", help="Budget cap (USD/month); must be > 0.")]
ObjectiveOpt = Annotated[
    str | None, typer.Option("--objective", help="cheapest, fastest or throughput_per_dollar.")
]
TierOpt = Annotated[
    str | None,
    typer.Option(
        "--tier",
        help="dev, batch or production. production: no marketplace/community hosts, no stale prices, "
        "N+1 replicas on >= 2 nodes (one node lost keeps the SLOs), no end-of-support or workstation GPUs. "
        "Default: production for serving with a latency SLO, else batch.",
    ),
]
ConfidenceOpt = Annotated[
    str | None,
    typer.Option(
        "--confidence",
        help="Percentile of the estimate the SLOs, deadline and throughput target are checked at: p90 "
        "(default, pessimistic end of the interval) or p50 (central value).",
    ),
]
MaxRiskOpt = Annotated[
    str | None, typer.Option("--max-risk", help="Drop candidates above this risk: low, medium or high.")
]
FallbackOpt = Annotated[
    bool | None,
    typer.Option(
        "--allow-fallback/--no-allow-fallback",
        help="Let a GPU run the precision through a fallback (e.g. bf16 as fp16 on V100). Default: no.",
    ),
]
GeoOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--geo",
        help="Geography across every provider: us, ca, latam, eu, uk, me, africa, india, apac, cn, oceania, "
        "or europe/north_america/americas/asia (repeatable or comma-separated).",
    ),
]
GpuOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--gpu",
        help="GPU spec id, alias or family (H100 = SXM, PCIe and NVL; repeatable or comma-separated).",
    ),
]
MinGpuMemOpt = Annotated[float | None, typer.Option("--min-gpu-memory", help="Minimum memory per GPU (GiB).")]
GpusPerNodeOpt = Annotated[
    list[str] | None,
    typer.Option("--gpus-per-node", help="GPUs per instance allowed (count; repeatable or comma-separated)."),
]
MaxNodesOpt = Annotated[
    int | None, typer.Option("--max-nodes", help="Most nodes (instances) per offer considered (count, 1-64).")
]
MinZonesOpt = Annotated[
    int | None,
    typer.Option(
        "--min-zones",
        help="Production serving: spread the replicas over at least this many zones of the region and size "
        "them to survive one zone's loss (1-6; default 1: survive one node's loss).",
    ),
]
MaxPricePerGpuOpt = Annotated[
    float | None,
    typer.Option(
        "--max-price-per-gpu-hour", help="Maximum price per GPU-hour for the chosen pricing (USD/GPU-h)."
    ),
]
ExcludeProviderOpt = Annotated[
    list[str] | None,
    typer.Option("--exclude-provider", help="Leave out this provider (repeatable or comma-separated)."),
]
ProviderClassOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--provider-class",
        help="hyperscaler, gpu_cloud, marketplace or aggregator (repeatable or comma-separated).",
    ),
]
CommitmentsOpt = Annotated[
    Path | None,
    typer.Option(
        "--commitments",
        help="Commitment-discount override file (YAML/JSON, the format `gpufleet catalog commitments` shows) "
        "for --pricing 1y/3y.",
    ),
]
AllowUnverifiedOpt = Annotated[
    bool,
    typer.Option(
        "--allow-unverified-commitments",
        help="With --pricing 1y/3y: also use commitment rates without a per-offer source (the shipped "
        "providers' 'up to' ceilings); off by default, and the answer says when they are used.",
    ),
]
NearTieOpt = Annotated[
    float | None,
    typer.Option(
        "--near-tie-pct",
        help="Near-tie band (%, 0-50; default 3): candidates within it of the best rank the simpler first "
        "(fewer nodes, no cross-node TP, lower risk, no EP, no marketplace host, fewer GPUs; training: "
        "sooner done); 0 = strict order.",
    ),
]
TopOpt = Annotated[int, typer.Option("--top", min=1, help="Number of ranked candidates to show (1 to 1000).")]
CatalogOpt = Annotated[
    list[Path] | None,
    typer.Option("--catalog", help="User catalog (YAML/JSON or gpu_instances.json; repeatable)."),
]


def catalog_offers(catalogs: list[Path] | None) -> OfferTable | None:
    """The shipped catalog with the user catalogs applied; None (= the engine's default table) without any."""
    from gpufleet.catalog.offers import load_offers

    return load_offers(catalogs) if catalogs else None


def no_candidate_reason(result: Result) -> str | None:
    """Why ``result`` has no answer meeting its workload (exit 3), or None where it has one: a
    recommendation (or a scenario's) with a status other than ok; a migration with no alternative while the
    current deployment itself misses the workload (staying on a deployment that meets it is an answer)."""
    from gpufleet.recommend.types import Migration, Recommendation, ScenarioResult, ScenarioSetResult

    if isinstance(result, ScenarioSetResult):
        whys = [w for w in (no_candidate_reason(r) for r in result.results) if w]
        if whys:
            return f"{len(whys)} of {len(result.results)} scenarios have no answer: " + "; ".join(whys)
        return None
    if isinstance(result, ScenarioResult):
        if result.error is not None:
            return f"scenario {result.name}: {result.error}"
        inner = result.migration if result.migration is not None else result.recommendation
        why = no_candidate_reason(inner) if inner is not None else "no result"
        return f"scenario {result.name}: {why}" if why else None
    if isinstance(result, Recommendation):
        return None if result.status == "ok" else f"status {result.status}: {result.message}"
    if isinstance(result, Migration):
        from gpufleet.recommend.migrate import current_shortfall

        cur = result.current
        misses = not cur.meets_slo or bool(current_shortfall(result.workload, cur))
        if result.recommended is None and misses:
            return f"no alternative meets the workload and the current deployment misses it: {result.verdict}"
        return None
    return None


def exit_if_no_candidate(result: Result) -> None:
    """Exit 3 (after the output is printed) where ``result`` has no answer meeting its workload."""
    from gpufleet.cli.exit_codes import ExitCode, exit_with

    why = no_candidate_reason(result)
    if why is not None:
        exit_with(ExitCode.NO_CANDIDATE, why)


def register(app: typer.Typer) -> None:
    """Attach `gpufleet recommend` and `gpufleet migrate` to the root app."""

    @app.command("recommend")
    def recommend_cmd(
        workload_file: WorkloadArg = None,
        name: NameOpt = None,
        model: ModelOpt = None,
        task: TaskOpt = None,
        precision: PrecisionOpt = None,
        input_len: InputLenOpt = None,
        output_len: OutputLenOpt = None,
        seq_len: SeqLenOpt = None,
        batch: BatchOpt = None,
        concurrency: ConcurrencyOpt = None,
        target_rps: RpsOpt = None,
        target_tps: TpsOpt = None,
        ttft_ms: TtftOpt = None,
        tpot_ms: TpotOpt = None,
        tokens: TokensOpt = None,
        deadline_hours: DeadlineOpt = None,
        recipe: RecipeOpt = None,
        optimizer: OptimizerOpt = None,
        hours_per_month: HoursOpt = None,
        schedule: ScheduleOpt = None,
        pricing: PricingOpt = None,
        provider: ProviderOpt = None,
        region: RegionOpt = None,
        vendor: VendorOpt = None,
        budget: BudgetOpt = None,
        objective: ObjectiveOpt = None,
        tier: TierOpt = None,
        confidence: ConfidenceOpt = None,
        max_risk: MaxRiskOpt = None,
        allow_fallback: FallbackOpt = None,
        geo: GeoOpt = None,
        gpu: GpuOpt = None,
        min_gpu_memory: MinGpuMemOpt = None,
        gpus_per_node: GpusPerNodeOpt = None,
        max_nodes: MaxNodesOpt = None,
        min_zones: MinZonesOpt = None,
        max_price_per_gpu_hour: MaxPricePerGpuOpt = None,
        exclude_provider: ExcludeProviderOpt = None,
        provider_class: ProviderClassOpt = None,
        commitments: CommitmentsOpt = None,
        allow_unverified_commitments: AllowUnverifiedOpt = False,
        near_tie_pct: NearTieOpt = None,
        top: TopOpt = 5,
        catalog: CatalogOpt = None,
        fmt: FormatOpt = Format.table,
        output: OutputOpt = None,
    ) -> None:
        """Rank where to run a workload: offers x GPU counts x parallelism, with cost, speed and risk.

        An SLO nobody meets, a budget nobody fits or a model that fits nowhere is reported with the closest
        options or what would fit, then exits 3; bad input exits 2.
        """
        from gpufleet.recommend.api import recommend

        fields = _flag_fields(locals())
        w = resolve_workload(workload_file, name, fields)
        rec = recommend(
            w,
            offers=catalog_offers(catalog),
            limit=top,
            commitments=commitments,
            allow_unverified_commitments=allow_unverified_commitments,
        )
        emit(rec, fmt, output, assumption_notes([w], commitments, allow_unverified_commitments))
        exit_if_no_candidate(rec)

    @app.command("migrate")
    def migrate_cmd(
        workload_file: WorkloadArg = None,
        name: NameOpt = None,
        current_provider: Annotated[
            str | None, typer.Option(help="Provider it runs on today, e.g. aws.")
        ] = None,
        current_instance: Annotated[str | None, typer.Option(help="Instance type it runs on today.")] = None,
        current_count: Annotated[int | None, typer.Option(help="Number of such instances today.")] = None,
        current_region: Annotated[
            str | None, typer.Option(help="Region today (default: cheapest listed).")
        ] = None,
        model: ModelOpt = None,
        task: TaskOpt = None,
        precision: PrecisionOpt = None,
        input_len: InputLenOpt = None,
        output_len: OutputLenOpt = None,
        seq_len: SeqLenOpt = None,
        batch: BatchOpt = None,
        concurrency: ConcurrencyOpt = None,
        target_rps: RpsOpt = None,
        target_tps: TpsOpt = None,
        ttft_ms: TtftOpt = None,
        tpot_ms: TpotOpt = None,
        tokens: TokensOpt = None,
        deadline_hours: DeadlineOpt = None,
        recipe: RecipeOpt = None,
        optimizer: OptimizerOpt = None,
        hours_per_month: HoursOpt = None,
        schedule: ScheduleOpt = None,
        pricing: PricingOpt = None,
        provider: ProviderOpt = None,
        region: RegionOpt = None,
        vendor: VendorOpt = None,
        budget: BudgetOpt = None,
        objective: ObjectiveOpt = None,
        tier: TierOpt = None,
        confidence: ConfidenceOpt = None,
        max_risk: MaxRiskOpt = None,
        allow_fallback: FallbackOpt = None,
        geo: GeoOpt = None,
        gpu: GpuOpt = None,
        min_gpu_memory: MinGpuMemOpt = None,
        gpus_per_node: GpusPerNodeOpt = None,
        max_nodes: MaxNodesOpt = None,
        min_zones: MinZonesOpt = None,
        max_price_per_gpu_hour: MaxPricePerGpuOpt = None,
        exclude_provider: ExcludeProviderOpt = None,
        provider_class: ProviderClassOpt = None,
        commitments: CommitmentsOpt = None,
        allow_unverified_commitments: AllowUnverifiedOpt = False,
        near_tie_pct: NearTieOpt = None,
        top: TopOpt = 5,
        catalog: CatalogOpt = None,
        fmt: FormatOpt = Format.table,
        output: OutputOpt = None,
    ) -> None:
        """Compare the current deployment with the best alternative: savings, speed, risk, complexity.

        Shows now vs after: cost per month, savings in $ and %, the performance change, the risk level with
        its reasons and the migration complexity; says so when nothing beats the current setup."""
        from gpufleet.recommend.api import migrate

        fields = _flag_fields(locals())
        given = {
            "provider": current_provider,
            "instance_type": current_instance,
            "count": current_count,
            "region": current_region,
        }
        current = {k: v for k, v in given.items() if v is not None}
        if workload_file is None and "instance_type" not in current:
            raise InputError(
                "migrate needs the current deployment: pass --current-instance (with --current-provider, "
                "default "
                "aws, and --current-count), or a workload file with a `current:` section."
            )
        w = resolve_workload(workload_file, name, fields, current)
        mig = migrate(
            w,
            offers=catalog_offers(catalog),
            limit=top,
            commitments=commitments,
            allow_unverified_commitments=allow_unverified_commitments,
        )
        emit(mig, fmt, output, assumption_notes([w], commitments, allow_unverified_commitments))
        exit_if_no_candidate(mig)
