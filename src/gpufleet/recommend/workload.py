"""Workload specs at the I/O boundary: our YAML/JSON format (pydantic) and the GPU Fleet Optimizer's files.

The exact accepted shapes are documented in ``docs/recommend.md``. Every problem becomes a
:class:`~gpufleet.errors.ConfigFileError` naming the file, the entry, the field, the bad value and what is
allowed. Inside the library a workload is the frozen :class:`~gpufleet.recommend.types.Workload`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gpufleet.catalog.provider_class import check_provider_classes
from gpufleet.catalog.regions import expand_geos
from gpufleet.cost.schedule import Schedule
from gpufleet.errors import ConfigFileError, GpufleetError, capped_list
from gpufleet.estimate.types import FINE_TUNING_TASKS
from gpufleet.fileio import document_kind, parse_yaml_or_json, read_user_text
from gpufleet.precision import PRECISIONS, check_precision
from gpufleet.recommend.failure import MAX_ZONES
from gpufleet.recommend.filter_values import check_vendors, gpu_family, split_values
from gpufleet.recommend.types import (
    CONFIDENCES,
    DEFAULT_TRAINING_HORIZON_H,
    MAX_NEAR_TIE_FRACTION,
    NEAR_TIE_FRACTION,
    OBJECTIVES,
    PRICINGS,
    RISK_LEVELS,
    TIERS,
    CurrentDeployment,
    Workload,
)
from gpufleet.strict_model import NoBoolNumbers
from gpufleet.units import HOURS_PER_MONTH, MS_PER_S, SECONDS_PER_HOUR
from gpufleet.validation import (
    MAX_BATCH,
    MAX_CONCURRENCY,
    MAX_GPU_MEMORY_GIB,
    MAX_GPUS,
    MAX_HOURS,
    MAX_PRICE_USD_PER_HOUR,
    MAX_REQUESTS_PER_S,
    MAX_SEQUENCE_TOKENS,
    MAX_TRAIN_TOKENS,
    MAX_USD,
    MAXIMA,
)


class _Current(NoBoolNumbers):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    provider: str = "aws"
    instance_type: str
    count: int = Field(1, ge=1, le=4096)
    region: str | None = None
    gpu_count: int | None = Field(None, ge=1, le=MAX_GPUS)
    pricing: Literal["on_demand", "spot", "1y", "3y"] | None = None  # how it is billed today (default: the
    # workload's pricing)


class _GpuPreference(BaseModel):
    """SkyPilot-style GPU choice: ``{any_of: [H100, A100]}`` (rank all together) or
    ``{ordered: [H100, A100]}`` (the first that gives a feasible plan wins)."""

    model_config = ConfigDict(extra="forbid")
    any_of: list[str] | None = None
    ordered: list[str] | None = None

    @field_validator("any_of", "ordered", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        return list(split_values(v)) if isinstance(v, str | list | tuple) else v

    @model_validator(mode="after")
    def _one(self) -> _GpuPreference:
        if (self.any_of is None) == (self.ordered is None) or not (self.any_of or self.ordered):
            raise ValueError(
                "give exactly one non-empty list: gpus: {any_of: [...]} or gpus: {ordered: [...]}"
            )
        return self


def _names(check: Any, values: list[str]) -> list[str]:
    """Run a name check; its UnknownNameError becomes a ValueError pydantic reports on the field."""
    try:
        return list(check(values))
    except GpufleetError as exc:
        raise ValueError(str(exc)) from None


class WorkloadSpec(NoBoolNumbers):
    """One workload as written in a user file (YAML or JSON) or passed as keyword arguments."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=(), allow_inf_nan=False)
    SELECTORS: ClassVar[frozenset[str]] = frozenset(
        {"providers", "regions", "gpu_vendors", "geos", "provider_classes", "gpus"}
    )
    name: str = Field("workload", min_length=1, max_length=200)
    description: str = Field("", max_length=10_000)
    model: str = Field(min_length=1, max_length=4096)
    task: Literal["inference", "pretrain", "full_finetune", "lora", "qlora"] = "inference"
    precision: str = "bf16"
    input_len_tokens: int = Field(512, gt=0, le=2_000_000)
    output_len_tokens: int = Field(256, gt=0, le=2_000_000)
    concurrency: int | None = Field(None, gt=0, le=MAX_CONCURRENCY)
    target_output_tokens_per_s: float | None = Field(None, gt=0, le=MAX_REQUESTS_PER_S * 1e4)
    target_requests_per_s: float | None = Field(None, gt=0, le=MAX_REQUESTS_PER_S)
    target_requests_per_hour: float | None = Field(None, gt=0, le=MAX_REQUESTS_PER_S * SECONDS_PER_HOUR)
    ttft_p95_ms: float | None = Field(None, gt=0, le=MAX_HOURS * SECONDS_PER_HOUR * MS_PER_S)
    tpot_p95_ms: float | None = Field(None, gt=0, le=MAX_HOURS * SECONDS_PER_HOUR * MS_PER_S)
    train_tokens: float | None = Field(None, gt=0, le=MAX_TRAIN_TOKENS)
    train_tokens_from_current: bool = False  # training: the tokens the current deployment trains in
    # hours_per_month (the GPU Fleet Optimizer's monthly_hours); needs current, excludes train_tokens
    dataset_tokens: float | None = Field(None, gt=0, le=MAX_TRAIN_TOKENS)
    epochs: float | None = Field(None, gt=0, le=10_000)
    deadline_h: float | None = Field(None, gt=0, le=MAX_HOURS)
    global_batch_sequences: int = Field(256, gt=0, le=MAX_BATCH)
    seq_len_tokens: int = Field(4096, gt=0, le=MAX_SEQUENCE_TOKENS)
    recipe: str | None = Field(None, max_length=100)
    optimizer: str | None = Field(None, max_length=100)
    schedule: Literal["24/7"] | None = None
    hours_per_month: float | None = Field(None, gt=0, le=HOURS_PER_MONTH)
    hours_per_day: float | None = Field(None, gt=0, le=24)
    days_per_month: float | None = Field(None, gt=0, le=HOURS_PER_MONTH / 24)
    pricing: Literal["on_demand", "spot", "1y", "3y"] = "on_demand"
    commitments_file: str | None = None
    providers: list[str] = Field(default_factory=list, max_length=1000)
    regions: list[str] = Field(default_factory=list, max_length=1000)
    gpu_vendors: list[str] = Field(default_factory=list, max_length=100)
    geos: list[str] = Field(default_factory=list, max_length=1000)
    exclude_providers: list[str] = Field(default_factory=list, max_length=1000)
    provider_classes: list[str] = Field(default_factory=list, max_length=100)
    gpus: list[str] | _GpuPreference = Field(default_factory=list)
    min_gpu_memory_gib: float | None = Field(None, gt=0, le=MAX_GPU_MEMORY_GIB)
    gpus_per_node: list[int] = Field(default_factory=list, max_length=1000)
    max_price_per_gpu_usd_per_hour: float | None = Field(None, gt=0, le=MAX_PRICE_USD_PER_HOUR)
    max_nodes: int = Field(8, ge=1, le=64)
    min_zones: int = Field(1, ge=1, le=MAX_ZONES)
    runs_per_month: float | None = Field(None, gt=0, le=1e6)
    tier: Literal["dev", "batch", "production"] | None = None
    confidence: Literal["p50", "p90"] = "p90"
    max_risk: Literal["low", "medium", "high"] | None = None
    allow_fallback: bool = False
    allow_marketplace: bool = False
    allow_consumer_gpus: bool = False
    allow_stale_prices: bool = False
    allow_embargoed_countries: bool = False
    budget_usd_per_month: float | None = Field(None, le=MAX_USD)
    objective: Literal["cheapest", "fastest", "throughput_per_dollar"] = "cheapest"
    near_tie_pct: float = Field(NEAR_TIE_FRACTION * 100, ge=0, le=MAX_NEAR_TIE_FRACTION * 100)
    current: _Current | None = None

    @field_validator("precision")
    @classmethod
    def _precision(cls, v: str) -> str:
        try:
            return check_precision(v)
        except GpufleetError as exc:
            raise ValueError(f"unknown precision; allowed: {', '.join(PRECISIONS)}") from exc

    @field_validator("recipe")
    @classmethod
    def _recipe(cls, v: str | None) -> str | None:
        from gpufleet.estimate.recipes import get_recipe

        try:  # the library's check, its message naming the allowed recipes
            return None if v is None else get_recipe(v).name
        except GpufleetError as exc:
            raise ValueError(str(exc)) from exc

    @field_validator("optimizer")
    @classmethod
    def _optimizer(cls, v: str | None) -> str | None:
        from gpufleet.estimate.recipes import check_optimizer

        try:  # the library's check, its message naming the allowed optimizers
            return None if v is None else check_optimizer(v)
        except GpufleetError as exc:
            raise ValueError(str(exc)) from exc

    @field_validator(
        "providers", "regions", "gpu_vendors", "geos", "exclude_providers", "provider_classes", mode="before"
    )
    @classmethod
    def _comma_lists(cls, v: Any) -> Any:
        """A string or a list whose items may be comma lists ("aws,gcp") -> one flat list."""
        return list(split_values(v)) if isinstance(v, str | list | tuple) else v

    @field_validator("gpus", mode="before")
    @classmethod
    def _gpu_list(cls, v: Any) -> Any:
        return list(split_values(v)) if isinstance(v, str | list | tuple) else v

    @field_validator("gpus_per_node", mode="before")
    @classmethod
    def _counts(cls, v: Any) -> Any:
        if isinstance(v, int | str):
            v = [v]
        if isinstance(v, list | tuple):
            return [p for item in v for p in (split_values(item) if isinstance(item, str) else [item])]
        return v

    @field_validator("gpus_per_node")
    @classmethod
    def _positive_counts(cls, v: list[int]) -> list[int]:
        bad = [c for c in v if not 1 <= c <= MAXIMA["gpus_per_node"]]
        if bad:
            raise ValueError(
                f"GPUs per node must be whole numbers from 1 to {MAXIMA['gpus_per_node']:,.0f}; got {bad}"
            )
        return v

    @field_validator("geos")
    @classmethod
    def _geos(cls, v: list[str]) -> list[str]:
        return _names(expand_geos, v)

    @field_validator("provider_classes")
    @classmethod
    def _classes(cls, v: list[str]) -> list[str]:
        return _names(check_provider_classes, v)

    @field_validator("gpu_vendors")
    @classmethod
    def _vendors(cls, v: list[str]) -> list[str]:
        return _names(check_vendors, v)

    @field_validator("gpus")
    @classmethod
    def _gpus(cls, v: list[str] | _GpuPreference) -> list[str] | _GpuPreference:
        for name in v if isinstance(v, list) else (v.any_of or v.ordered or []):
            _names(lambda names: gpu_family(names[0]), [name])
        return v

    @field_validator("budget_usd_per_month")
    @classmethod
    def _budget(cls, v: float | None) -> float | None:
        if v is not None and v <= 0:
            raise ValueError("the budget must be a positive number of USD per month (omit it for no cap)")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> WorkloadSpec:
        targets = [
            self.concurrency,
            self.target_output_tokens_per_s,
            self.target_requests_per_s,
            self.target_requests_per_hour,
        ]
        if sum(t is not None for t in targets) > 1:
            raise ValueError(
                "give at most one of concurrency, target_output_tokens_per_s, target_requests_per_s, "
                "target_requests_per_hour"
            )
        sched = [
            self.schedule is not None,
            self.hours_per_month is not None,
            self.hours_per_day is not None or self.days_per_month is not None,
        ]
        if sum(sched) > 1:
            raise ValueError(
                "give one schedule: schedule: 24/7, hours_per_month, or hours_per_day with days_per_month"
            )
        if (self.hours_per_day is None) != (self.days_per_month is None):
            raise ValueError("hours_per_day and days_per_month go together (e.g. 8 and 22)")
        if self.train_tokens_from_current:
            if self.task == "inference" or self.current is None:
                raise ValueError(
                    "train_tokens_from_current applies to a training task with a current deployment (the "
                    "tokens are what it trains in hours_per_month); add current, or give train_tokens"
                )
            if self.train_tokens is not None or self.dataset_tokens is not None:
                raise ValueError(
                    "give train_tokens (or dataset_tokens) or train_tokens_from_current, not both"
                )
        elif self.task != "inference" and self.train_tokens is None and self.dataset_tokens is None:
            raise ValueError(f"a {self.task} workload needs train_tokens (or dataset_tokens with epochs)")
        if self.runs_per_month is not None and self.task == "inference":
            raise ValueError("runs_per_month applies to training tasks only (inference runs on the schedule)")
        if self.train_tokens is not None and self.dataset_tokens is not None:
            raise ValueError("give train_tokens or dataset_tokens (x epochs), not both")
        if self.epochs is not None and self.dataset_tokens is None:
            raise ValueError(
                "epochs multiply dataset_tokens: give dataset_tokens with epochs, or train_tokens"
            )
        tokens = self.train_tokens
        if self.dataset_tokens is not None:
            tokens = self.dataset_tokens * (self.epochs or 1.0)
        step = self.global_batch_sequences * self.seq_len_tokens
        if self.task != "inference" and tokens is not None and tokens < step:
            raise ValueError(
                f"train_tokens {tokens:,.0f} is less than one optimizer step of global_batch_sequences "
                f"{self.global_batch_sequences:,} x seq_len_tokens {self.seq_len_tokens:,} = {step:,} "
                "tokens, "
                "so the run would not complete a single step; allowed: train_tokens (or dataset_tokens x "
                "epochs) >= global_batch_sequences x seq_len_tokens. Raise the tokens or lower the batch or "
                "sequence length"
            )
        training = [
            n
            for n in ("train_tokens", "dataset_tokens", "epochs", "deadline_h")
            if getattr(self, n) is not None
        ]
        if self.task == "inference" and training:
            raise ValueError(
                f"an inference workload takes no {', '.join(training)} (training fields): remove them, "
                "or set task to pretrain, full_finetune, lora or qlora"
            )
        serving = [
            n
            for n in (
                "concurrency",
                "target_output_tokens_per_s",
                "target_requests_per_s",
                "target_requests_per_hour",
                "ttft_p95_ms",
                "tpot_p95_ms",
            )
            if getattr(self, n) is not None
        ]
        tuning = [n for n in ("recipe", "optimizer") if getattr(self, n) is not None]
        if tuning and self.task not in FINE_TUNING_TASKS:
            raise ValueError(
                f"{'an' if self.task == 'inference' else 'a'} {self.task} workload takes no "
                f"{' or '.join(tuning)}: the recipe presets and their "
                f"optimizer are fine-tuning settings; allowed with task {', '.join(FINE_TUNING_TASKS)}. "
                "Remove them, or set the fine-tuning task"
            )
        both = sorted({p.lower() for p in self.providers} & {p.lower() for p in self.exclude_providers})
        if both:
            raise ValueError(
                f"providers and exclude_providers (--provider, --exclude-provider) both name "
                f"{', '.join(both)}, so no offer could match; name each provider in one of the two"
            )
        if self.task != "inference" and serving:
            raise ValueError(
                f"a {self.task} workload takes no {', '.join(serving)} (serving targets): remove them, "
                "or set task: inference"
            )
        return self

    def default_tier(self) -> str:
        """``production`` for serving with a latency SLO (users wait on it), ``batch`` otherwise."""
        slo = self.ttft_p95_ms is not None or self.tpot_p95_ms is not None
        return "production" if self.task == "inference" and slo else "batch"

    def _training_deadline(self) -> float | None:
        """The deadline a training run is checked against: the one given, else
        :data:`DEFAULT_TRAINING_HORIZON_H` (serving: none). The engine notes the horizon where it drops a
        candidate (``engine.horizon_note``)."""
        if self.task == "inference" or self.deadline_h is not None:
            return self.deadline_h
        return DEFAULT_TRAINING_HORIZON_H

    def _precision_served(self) -> tuple[str, tuple[str, ...]]:
        """The precision to serve at: the one given, else, for inference of a model whose weights are
        published below 16 bit (FP8 DeepSeek-V3/R1, MXFP4 gpt-oss), that format, which is what a deployment
        of the released checkpoint runs (dequantising it to bf16 doubles or quadruples the memory)."""
        if "precision" in self.model_fields_set or self.task != "inference":
            return self.precision, ()
        from gpufleet.models.registry import released_precision

        released = released_precision(self.model)
        if released is None:
            return self.precision, ()
        prec, source = released
        return prec, (
            f"precision {prec}: the format {self.model} is published in ({source}); pass precision bf16 "
            "(--precision bf16) to serve it dequantised.",
        )

    def to_workload(self) -> Workload:
        if self.hours_per_day is not None and self.days_per_month is not None:
            hours = Schedule.daily(hours_per_day=self.hours_per_day, days_per_month=self.days_per_month)
        else:
            hours = Schedule(hours_per_month=self.hours_per_month or HOURS_PER_MONTH)
        rps = self.target_requests_per_s
        if self.target_requests_per_hour is not None:
            rps = self.target_requests_per_hour / SECONDS_PER_HOUR
        tokens = self.train_tokens
        if self.dataset_tokens is not None:
            tokens = self.dataset_tokens * (self.epochs or 1.0)
        precision, notes = self._precision_served()
        deadline_h = self._training_deadline()
        cur = self.current
        g = self.gpus
        gpu_names = g if isinstance(g, list) else (g.any_of or g.ordered or [])
        return Workload(
            name=self.name,
            description=self.description,
            model=self.model,
            task=self.task,
            precision=precision,
            notes=notes,
            input_len_tokens=self.input_len_tokens,
            output_len_tokens=self.output_len_tokens,
            concurrency=self.concurrency,
            target_output_tokens_per_s=self.target_output_tokens_per_s,
            target_requests_per_s=rps,
            ttft_p95_s=self.ttft_p95_ms / MS_PER_S if self.ttft_p95_ms else None,
            tpot_p95_s=self.tpot_p95_ms / MS_PER_S if self.tpot_p95_ms else None,
            train_tokens=tokens,
            train_tokens_from_current=self.train_tokens_from_current,
            deadline_h=deadline_h,
            global_batch_sequences=self.global_batch_sequences,
            seq_len_tokens=self.seq_len_tokens,
            recipe=self.recipe,
            optimizer=self.optimizer,
            hours_per_month=hours.hours_per_month,
            pricing=self.pricing,
            commitments_file=self.commitments_file,
            providers=tuple(p.lower() for p in self.providers),
            regions=tuple(self.regions),
            gpu_vendors=tuple(self.gpu_vendors),
            geos=tuple(self.geos),
            exclude_providers=tuple(p.lower() for p in self.exclude_providers),
            provider_classes=tuple(self.provider_classes),
            gpu_choices=tuple(gpu_family(g) for g in gpu_names),
            gpu_order="ordered" if isinstance(self.gpus, _GpuPreference) and self.gpus.ordered else "any_of",
            min_gpu_memory_gib=self.min_gpu_memory_gib,
            gpus_per_node=tuple(self.gpus_per_node),
            max_price_per_gpu_usd_per_hour=self.max_price_per_gpu_usd_per_hour,
            max_nodes=self.max_nodes,
            min_zones=self.min_zones,
            runs_per_month=self.runs_per_month,
            tier=self.tier or self.default_tier(),
            confidence=self.confidence,
            max_risk=self.max_risk
            or ("medium" if (self.tier or self.default_tier()) == "production" else None),
            allow_fallback=self.allow_fallback,
            allow_marketplace=self.allow_marketplace,
            allow_consumer_gpus=self.allow_consumer_gpus,
            allow_stale_prices=self.allow_stale_prices,
            allow_embargoed_countries=self.allow_embargoed_countries,
            budget_usd_per_month=self.budget_usd_per_month,
            objective=self.objective,
            near_tie_fraction=self.near_tie_pct / 100,
            current=CurrentDeployment(
                provider=cur.provider.lower(),
                instance_type=cur.instance_type,
                count=cur.count,
                region=cur.region,
                gpu_count=cur.gpu_count,
                pricing=cur.pricing,
            )
            if cur
            else None,
        )


_ALLOWED_HINT = {
    "task": "inference, pretrain, full_finetune, lora, qlora",
    "pricing": ", ".join(PRICINGS),
    "objective": ", ".join(OBJECTIVES),
    "precision": ", ".join(PRECISIONS),
    "schedule": "24/7 (or use hours_per_month, or hours_per_day with days_per_month)",
    "tier": ", ".join(TIERS),
    "confidence": ", ".join(CONFIDENCES),
    "max_risk": ", ".join(RISK_LEVELS),
}


def validation_message(
    exc: ValidationError,
    source: str,
    entry: str,
    data: Mapping[str, Any],
    labels: Mapping[str, str] | None = None,
) -> str:
    """One paragraph naming file, entry, field(s), bad value(s) and what is allowed.

    ``labels`` maps field names to what the user typed (e.g. ``budget_usd_per_month`` -> ``--budget``); with
    it the message speaks of those names instead of a file entry.
    """
    parts = []
    unknown: list[str] = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "(workload)"
        top = str(err["loc"][0]) if err["loc"] else ""
        value = data.get(top, "<missing>") if top else "<workload>"
        name = labels[top] if labels and top in labels and loc == top else f"field {loc!r}"
        sub = str(err["loc"][1]) if len(err["loc"]) == 2 else ""
        if labels and loc in labels:  # a nested field given by its own option, e.g. current.count
            name = labels[loc]
            nested = data.get(top)
            value = nested.get(sub, "<missing>") if isinstance(nested, Mapping) else value
        if err["type"] == "extra_forbidden":
            unknown.append(name)
            continue
        hint = _ALLOWED_HINT.get(top, "")
        msg = err["msg"].removeprefix("Value error, ").rstrip(".")
        if hint and msg.startswith("Input should be '"):
            msg = "not an allowed value"  # pydantic's list repeats the hint below
        elif "allowed" in msg:
            hint = ""  # the message already lists the allowed values
        parts.append(f"{name} = {value!r}: {msg}" + (f" (allowed: {hint})" if hint else ""))
    if unknown:  # named once, with the allowed fields once (100,000 unknown keys made a 78 MB message)
        allowed = ", ".join(sorted(WorkloadSpec.model_fields))
        verb = "is not a workload field" if len(unknown) == 1 else "are not workload fields"
        parts.append(f"{capped_list(unknown)} {verb} (allowed: {allowed})")
    where = f"{source}: " if labels else f"Workload file {source}, entry {entry!r}: "
    fix = (
        "Fix these options; `gpufleet recommend --help` gives each unit."
        if labels
        else "Fix these fields; docs/recommend.md lists every field with its unit."
    )
    return where + capped_list(parts, sep="; ", what="more problems") + ". " + fix


def workload_from_dict(
    data: Mapping[str, Any],
    *,
    source: str = "<arguments>",
    entry: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> Workload:
    """Validate one workload mapping (our format) into a :class:`Workload`.

    ``labels``: field name -> the option the user typed, for error messages (see :func:`validation_message`).
    """
    if not isinstance(data, Mapping):
        raise ConfigFileError(
            f"Workload file {source}, entry {entry!r}: expected a mapping of fields, got "
            f"{document_kind(data)}. Write the workload as key: value pairs."
        )
    payload = dict(data)
    if entry is not None and "name" not in payload:
        payload["name"] = entry
    try:
        return WorkloadSpec.model_validate(payload).to_workload()
    except ValidationError as exc:
        raise ConfigFileError(
            validation_message(exc, source, entry or str(payload.get("name", "workload")), payload, labels)
        ) from exc


def _load_text(path: Path) -> Any:
    text = read_user_text(path, what="workload file")
    return parse_yaml_or_json(
        path,
        text,
        lambda kind, error: f"Workload file {path} is not valid {kind}: {error}. Fix the syntax there.",
    )


def read_workload_file(path: Path | str) -> dict[str, Workload]:
    """Read a workload file: one workload, ``workloads: {name: workload}`` in our format, or a GPU Fleet
    Optimizer ``workloads.json`` (detected by its fields; see :mod:`gpufleet.recommend.gfo`)."""
    from gpufleet.recommend.gfo import is_gfo_workloads, parse_gfo_workloads

    p = Path(path)
    data = _load_text(p)
    if not isinstance(data, Mapping):
        raise ConfigFileError(
            f"Workload file {p} must hold a mapping (one workload, or 'workloads:' mapping "
            f"names to workloads); it holds {document_kind(data)}."
        )
    if is_gfo_workloads(data):
        return parse_gfo_workloads(data, source=str(p))[0]
    if "workloads" in data:
        items = data["workloads"]
        if not isinstance(items, Mapping) or not items:
            raise ConfigFileError(
                f"Workload file {p}: 'workloads' must map names to workloads; got {items!r}."
            )
        beside = [str(k) for k in data if k != "workloads"]
        if beside:  # fields next to 'workloads:' belong to no workload: they were silently ignored
            raise ConfigFileError(
                f"Workload file {p} has {', '.join(repr(k) for k in beside)} next to 'workloads:'; a file "
                "holds either one workload (its fields at the top level) or 'workloads:' alone, mapping "
                "names to workloads. Move these fields into each workload under 'workloads:'."
            )
        return {str(k): workload_from_dict(v, source=str(p), entry=str(k)) for k, v in items.items()}
    w = workload_from_dict(data, source=str(p), entry=str(data.get("name", p.stem)))
    return {w.name: w}
