"""Request and response bodies of the API that the library has no type for (jobs, tokens, estimates, pages),
as pydantic models; workloads and fleets use the library's own (``WorkloadSpec``, the fleet file mapping).
The documents the CLI prints are the shipped JSON Schemas (``report/schemas``), published in the OpenAPI
components by :func:`add_shipped_schemas`."""

from __future__ import annotations

import json
import unicodedata
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from gpufleet.service.db import Job
from gpufleet.strict_model import NoBoolNumbers


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, protected_namespaces=())


def printable_name(value: str) -> str:
    """A name shown in listings and pages: not blank, no control or format characters (NUL is refused by
    PostgreSQL, a right-to-left override reverses what follows it on the page)."""
    if not value.strip():
        raise ValueError("a name must not be blank: give 1-100 visible characters, e.g. nightly-findings")
    bad = [c for c in value if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn")]
    if bad:
        raise ValueError(
            f"a name must not hold control or invisible characters (found {bad[0]!r}): use letters, digits, "
            "spaces and punctuation"
        )
    return value


#: a name given by the user (schedules, tokens, fleets), checked by :func:`printable_name`
Name = Annotated[str, AfterValidator(printable_name)]


class JobRequest(_Body):
    """A job: ``kind`` and its ``params`` (docs/service.md lists each kind's)."""

    kind: Literal[
        "plan", "scenario_set", "catalog_refresh", "simulate", "sweep", "telemetry_pull", "findings"
    ]
    params: dict[str, Any]
    time_limit_s: float | None = Field(
        None, gt=0, le=24 * 3600, strict=True, description="Stop the job after [s]."
    )


class PlanRequest(_Body):
    """Plan a fleet: the fleet file as a mapping (what `gpufleet plan FLEET_FILE` reads)."""

    fleet: dict[str, Any]
    source: str = Field("fleet.yaml", min_length=1, max_length=200, description="A name for messages.")
    solver_time_limit_s: float = Field(
        60.0, gt=0, le=3600, strict=True, description="The MILP's time limit [s]."
    )
    time_limit_s: float | None = Field(
        None, gt=0, le=24 * 3600, strict=True, description="Stop the job after [s]."
    )


class JobOut(BaseModel):
    id: int
    kind: str
    status: Literal["queued", "running", "succeeded", "failed", "cancelled"]
    progress_fraction: float
    progress_text: str
    error: str | None
    attempts: int
    idempotency_key: str | None
    time_limit_s: float
    created_unix_s: float
    started_unix_s: float | None
    finished_unix_s: float | None
    reused: bool = Field(False, description="True: an earlier job with the same Idempotency-Key.")

    @classmethod
    def of(cls, job: Job, *, reused: bool = False) -> JobOut:
        return cls(
            id=job.id,
            kind=job.kind,
            status=job.status,
            progress_fraction=job.progress_fraction,
            progress_text=job.progress_text,
            error=job.error,
            attempts=job.attempts,
            idempotency_key=job.idempotency_key,
            time_limit_s=job.time_limit_s,
            created_unix_s=job.created_unix_s,
            started_unix_s=job.started_unix_s,
            finished_unix_s=job.finished_unix_s,
            reused=reused,
        )


class JobPage(BaseModel):
    jobs: list[JobOut]
    total: int
    limit: int
    offset: int


class FleetRequest(_Body):
    name: Name = Field(min_length=1, max_length=200)
    text: str = Field(min_length=1, max_length=2_000_000, description="The fleet file (YAML or JSON).")


class FleetOut(BaseModel):
    id: int
    name: str
    created_unix_s: float
    workloads: int


class UserCatalogRequest(_Body):
    name: str = Field(
        min_length=1, max_length=100, description="A file name; .json for JSON, else YAML (e.g. acme.yaml)."
    )
    text: str = Field(
        min_length=1,
        max_length=2_000_000,
        description="The catalog, as `gpufleet ... --catalog FILE` reads it (offers, price_overrides).",
    )


class UserCatalogOut(BaseModel):
    id: int
    name: str
    offers: int = Field(description="Machines the catalog adds.")
    price_overrides: int = Field(description="Prices it replaces or discounts.")
    created_unix_s: float


class TokenRequest(_Body):
    name: Name = Field(min_length=1, max_length=100)
    role: Literal["viewer", "editor", "admin"]


class TokenOut(BaseModel):
    id: int
    team: str
    name: str
    role: str
    prefix: str
    created_unix_s: float
    revoked_unix_s: float | None


class NewTokenOut(TokenOut):
    token: str = Field(description="The secret: shown this once, stored hashed.")


class Me(BaseModel):
    team: str
    token_name: str
    role: str


class _EstimateBase(_Body, NoBoolNumbers):
    """The estimate routes' common fields; JSON ``true`` in a count (``"tp": true``) is refused, not read as 1
    (pydantic's lax int)."""

    model: str = Field(min_length=1, max_length=4096, description="Model id, alias or size class.")
    gpu: str = Field(min_length=1, max_length=200, description="Accelerator spec id or alias.")
    precision: str = Field("bf16", max_length=40)
    tp: int = Field(1, gt=0, le=4096, description="Tensor-parallel degree.")
    pp: int = Field(1, gt=0, le=4096, description="Pipeline-parallel degree.")


class MemoryRequest(_EstimateBase):
    """`gpufleet estimate memory`: memory per GPU for a task."""

    task: Literal["inference", "load", "pretrain", "full_finetune", "lora", "qlora"] = "inference"
    dp: int = Field(1, gt=0, le=4096, description="Data-parallel degree.")
    batch: int = Field(1, gt=0, le=1_000_000, description="Sequences per GPU step.")
    seq_len_tokens: int = Field(2048, gt=0, le=2_000_000, description="Tokens per sequence.")


class InferRequest(_EstimateBase):
    """`gpufleet estimate infer`: TTFT, TPOT and throughput."""

    gpu_count: int = Field(1, gt=0, le=4096)
    batch: int = Field(1, gt=0, le=1_000_000, description="Concurrent sequences.")
    input_len_tokens: int = Field(512, gt=0, le=2_000_000)
    output_len_tokens: int = Field(256, gt=0, le=2_000_000)


class TrainRequest(_EstimateBase):
    """`gpufleet estimate train`: step time, MFU, time and GPU-hours."""

    task: Literal["pretrain", "full_finetune", "lora", "qlora"] = "pretrain"
    gpu_count: int = Field(1, gt=0, le=100_000)
    dp: int = Field(1, gt=0, le=100_000, description="Data-parallel degree.")
    batch: int = Field(256, gt=0, le=10_000_000, description="Global batch [sequences].")
    seq_len_tokens: int = Field(4096, gt=0, le=2_000_000, description="Tokens per sequence.")


class ErrorDetail(BaseModel):
    status: int
    type: str
    message: str


class ErrorOut(BaseModel):
    error: ErrorDetail


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorOut, "description": text}
    for code, text in (
        (400, "A bad value (one paragraph: what is wrong, what is allowed, how to fix)."),
        (401, "No token, or an unknown or revoked one."),
        (403, "The token's role does not allow this."),
        (404, "Not found (also another team's object)."),
        (422, "The body does not validate."),
        (429, "Too many requests with this token."),
    )
}


def shipped_schema_ref(kind: str) -> dict[str, Any]:
    """An OpenAPI response whose JSON body is the shipped schema of ``kind``."""
    return {"content": {"application/json": {"schema": {"$ref": f"#/components/schemas/gpufleet_{kind}"}}}}


def add_shipped_schemas(openapi: dict[str, Any], kinds: tuple[str, ...]) -> None:
    """Put the shipped JSON Schemas of ``kinds`` into ``openapi``'s components (their ``$defs`` too, with
    the ``$ref``s rewritten to where they land)."""
    from gpufleet.report.json_schemas import load_schema

    comps = openapi.setdefault("components", {}).setdefault("schemas", {})
    for kind in kinds:
        schema = json.loads(json.dumps(load_schema(kind)))
        defs = schema.pop("$defs", {})
        prefix = f"gpufleet_{kind}__"
        text = json.dumps(schema | {"$defs": defs}).replace('"#/$defs/', f'"#/components/schemas/{prefix}')
        moved = json.loads(text)
        for name, sub in moved.pop("$defs").items():
            comps[prefix + name] = sub
        moved.pop("$schema", None)
        moved.pop("$id", None)
        comps[f"gpufleet_{kind}"] = moved


WebhookEvent = Literal[
    "job_succeeded", "job_failed", "job_cancelled", "saving_found", "alert_fired", "price_change"
]


def _failed_only() -> list[WebhookEvent]:
    return ["job_failed"]


class WebhookRequest(_Body):
    """Notify ``url`` of the listed events: a job of the team ends, a new saving appears in its findings, an
    alert rule fires there, a price changes in a catalog refresh."""

    url: str = Field(min_length=1, max_length=2000, description="http(s) URL, e.g. a Slack incoming webhook.")
    format: Literal["slack", "generic"] = "slack"
    events: list[WebhookEvent] = Field(default_factory=_failed_only, min_length=1, max_length=6)
    min_saving_usd_per_month: float | None = Field(
        None,
        ge=0,
        le=1e9,
        strict=True,
        description="saving_found: only savings of at least this [USD/month].",
    )
    min_price_change_fraction: float | None = Field(
        None,
        ge=0,
        le=10,
        strict=True,
        description="price_change: only changes of at least this share, 0.05 = 5 %.",
    )


class WebhookOut(BaseModel):
    id: int
    url: str
    format: str
    events: list[str]
    created_unix_s: float
    last_delivery_unix_s: float | None
    last_status: int | None
    last_error: str | None
    min_saving_usd_per_month: float | None = None
    min_price_change_fraction: float | None = None
