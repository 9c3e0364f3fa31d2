"""Calibration cases: published or user-measured results in the validation schema, read from CSV.

The schema is ``docs/calibration-schema.md`` (a copy of ``shared/calibration/README.md``): one row per
measurement, columns in :data:`CASE_COLUMNS`, metrics and their units in :data:`METRIC_UNITS`. Any file in
that schema is accepted: blank optional fields, float-formatted integers (``1211000000.0``, ``8.0``), quoted
notes with commas, a UTF-8 BOM, optional columns left out. Everything else is a :class:`ConfigFileError` that
names the file, the row (case_id and line), the field, the bad value and what is allowed.
"""

from __future__ import annotations

import csv
import difflib
import io
import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator, model_validator

from gpufleet.errors import ConfigFileError
from gpufleet.estimate.types import SOFTWARE_ALIASES, SOFTWARES, TASKS
from gpufleet.fileio import check_csv_header, csv_header_hint, iter_csv_text, read_user_text
from gpufleet.precision import PRECISIONS
from gpufleet.strict_model import MAX_FILE_NUMBER
from gpufleet.validation import MAX_BATCH, MAX_GPUS, MAX_SEQUENCE_TOKENS, MAX_TRAIN_TOKENS

#: metric -> unit of ``measured``, exactly the schema's table
METRIC_UNITS: Mapping[str, str] = MappingProxyType(
    {
        "train_minutes": "min",
        "train_gpu_hours": "gpu_h",
        "train_step_s": "s",
        "train_tokens_per_s_per_gpu": "tok/s/gpu",
        "mfu": "fraction",
        "infer_output_tokens_per_s": "tok/s",
        "ttft_ms": "ms",
        "tpot_ms": "ms",
        "peak_memory_gib": "GiB",
    }
)

#: a version written after a stack's name ("vLLM 0.6.3", "PyTorch v2.4", "trtllm==0.12", "fsdp2")
_VERSION_SUFFIX = re.compile(r"[\s=@_/-]*v?\d+(?:\.\d+)*[a-z0-9.+-]*$")


def canonical_software(value: str) -> tuple[str | None, str | None]:
    """(schema key, None) for a stack the estimator models (its key, an alias, either with a version), or
    (None, the name) for a stack it does not model (a prediction then treats it as unknown and says so).
    ValueError when the name is a near-miss of a known one (a typo), naming the close matches."""
    low = " ".join(value.strip().lower().split())
    for cand in (low, _VERSION_SUFFIX.sub("", low)):
        if cand in SOFTWARES:
            return cand, None
        if cand in SOFTWARE_ALIASES:
            return SOFTWARE_ALIASES[cand], None
    names = [*SOFTWARES, *SOFTWARE_ALIASES]
    close = difflib.get_close_matches(_VERSION_SUFFIX.sub("", low) or low, names, n=3, cutoff=0.8)
    if close:
        raise ValueError(
            f"field 'software' has {value.strip()!r}: unknown software; did you mean "
            f"{' or '.join(repr(c) for c in close)}? Allowed: "
            f"{', '.join(SOFTWARES)}, their common spellings, or blank (unknown)"
        )
    return None, value.strip()


#: optimizers the schema names (training only; blank = unstated, read as mixed-precision AdamW)
OPTIMIZERS: tuple[str, ...] = ("adamw", "adamw8bit", "paged_adamw8bit", "sgd", "adafactor")

#: every column of the schema, in order
CASE_COLUMNS: tuple[str, ...] = (
    "case_id",
    "metric",
    "model",
    "task",
    "gpu",
    "gpu_count",
    "precision",
    "batch",
    "seq_len",
    "input_len",
    "output_len",
    "train_tokens",
    "tp",
    "pp",
    "dp",
    "ep",
    "cp",
    "software",
    "optimizer",
    "measured",
    "unit",
    "note",
    "source",
)

#: columns without which a row means nothing; the others may be left out of the header (read as blank)
REQUIRED_COLUMNS: tuple[str, ...] = (
    "case_id",
    "metric",
    "model",
    "task",
    "gpu",
    "gpu_count",
    "precision",
    "measured",
    "unit",
)

_OPTIONAL_INT = ("batch", "seq_len", "tp", "pp", "dp", "ep", "cp")
_OPTIONAL_FLOAT = ("input_len", "output_len", "train_tokens")


@dataclass(frozen=True, slots=True, kw_only=True)
class CalibrationCase:
    """One measurement in the calibration schema. Units follow the schema's columns (lengths in tokens)."""

    case_id: str
    metric: str  # a key of METRIC_UNITS
    model: str  # model id, alias, config.json path or size class
    task: str  # a Task
    gpu: str  # accelerator id or alias
    gpu_count: int  # GPUs in the whole measured system [count]
    precision: str
    batch: int | None  # training: global batch [sequences]; inference: concurrent sequences; None = saturated
    seq_len: int | None  # training sequence length [tokens]
    input_len: float | None  # inference prompt length [tokens] (an average where the source gives a dataset)
    output_len: float | None  # generated tokens per request [tokens]
    train_tokens: float | None  # tokens processed, for train_minutes / train_gpu_hours [tokens]
    tp: int | None
    pp: int | None
    dp: int | None
    ep: int | None
    cp: int | None
    software: str | None
    measured: float  # in ``unit``
    unit: str  # METRIC_UNITS[metric]
    note: str
    source: str
    optimizer: str | None = None  # one of OPTIMIZERS; None = unstated (mixed-precision AdamW)
    software_unmodelled: str | None = None  # a stated stack the estimator does not model (software is None)


def _lower_choice(v: str, kind: str, allowed: Collection[str]) -> str:
    """``v`` lower-cased; ValueError naming the allowed values when it is not one of them."""
    low = v.lower()
    if low not in allowed:
        raise ValueError(f"unknown {kind}; allowed: {', '.join(allowed)}")
    return low


def _blank(v: Any) -> bool:
    return v is None or (isinstance(v, str) and v.strip() == "")


def _number(v: Any) -> float:
    text = str(v).strip()
    try:
        if not text.isascii():  # float() reads Arabic-Indic and full-width digits too
            raise ValueError(text)
        return float(text)
    except ValueError:
        raise ValueError(
            "must be a number: a plain value such as 133, 0.5 or 1e9 (ASCII digits, a point for decimals, no "
            "unit or thousands separator)"
        ) from None


def _to_int(v: Any) -> int | None:
    if _blank(v):
        return None
    x = _number(v)
    if not math.isfinite(x) or x != int(x):
        raise ValueError("must be a whole number (8 or 8.0)")
    return int(x)


def _to_float(v: Any) -> float | None:
    if _blank(v):
        return None
    x = _number(v)
    if not math.isfinite(x):
        raise ValueError("must be a finite number")
    return x


class _CaseRow(BaseModel):
    """The boundary model of one CSV row (strings in, checked values out)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    case_id: str
    metric: str
    model: str
    task: str
    gpu: str
    gpu_count: int
    precision: str
    batch: int | None = None
    seq_len: int | None = None
    input_len: float | None = None
    output_len: float | None = None
    train_tokens: float | None = None
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    ep: int | None = None
    cp: int | None = None
    software: str | None = None
    software_unmodelled: str | None = None  # set by the validator, not a column
    optimizer: str | None = None
    measured: float
    unit: str
    note: str = ""
    source: str = ""

    @field_validator("case_id", "model", "gpu")
    @classmethod
    def _nonblank(cls, v: str) -> str:
        if not v:
            raise ValueError("must not be blank")
        return v

    @field_validator("metric")
    @classmethod
    def _metric(cls, v: str) -> str:
        return _lower_choice(v, "metric", METRIC_UNITS)

    @field_validator("task")
    @classmethod
    def _task(cls, v: str) -> str:
        return _lower_choice(v, "task", TASKS)

    @field_validator("precision")
    @classmethod
    def _precision(cls, v: str) -> str:
        return _lower_choice(v, "precision", PRECISIONS)

    @field_validator("software", mode="before")
    @classmethod
    def _software(cls, v: Any) -> str | None:
        if _blank(v):
            return None
        return str(v).strip()  # canonicalised in _unit_matches (one place for both fields)

    @field_validator("optimizer", mode="before")
    @classmethod
    def _optimizer(cls, v: Any) -> str | None:
        if _blank(v):
            return None
        s = str(v).strip().lower()
        if s not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer; allowed: {', '.join(OPTIMIZERS)} or blank (unstated)")
        return s

    @field_validator("gpu_count", mode="before")
    @classmethod
    def _count(cls, v: Any) -> int:
        n = _to_int(v)
        if n is None or n < 1:
            raise ValueError("must be a whole number of GPUs >= 1")
        if n > MAX_GPUS:
            raise ValueError(f"must be at most {MAX_GPUS:,} GPUs")
        return n

    @field_validator(*_OPTIONAL_INT, mode="before")
    @classmethod
    def _opt_int(cls, v: Any) -> int | None:
        n = _to_int(v)
        if n is not None and n < 1:
            raise ValueError("must be a whole number >= 1, or blank")
        if n is not None and n > MAX_BATCH:
            raise ValueError(f"must be at most {MAX_BATCH:,}")
        return n

    @field_validator(*_OPTIONAL_FLOAT, mode="before")
    @classmethod
    def _opt_float(cls, v: Any, info: ValidationInfo) -> float | None:
        x = _to_float(v)
        if x is not None and x <= 0:
            raise ValueError("must be a number of tokens > 0, or blank")
        limit = MAX_TRAIN_TOKENS if info.field_name == "train_tokens" else MAX_SEQUENCE_TOKENS
        if x is not None and x > limit:
            raise ValueError(f"must be at most {limit:,.0f} tokens")
        return x

    @field_validator("measured", mode="before")
    @classmethod
    def _measured(cls, v: Any) -> float:
        x = _to_float(v)
        if x is None or x <= 0:
            raise ValueError("must be a measured value > 0")
        if x > MAX_FILE_NUMBER:
            raise ValueError(f"must be at most {MAX_FILE_NUMBER:g} (check the unit column)")
        return x

    @field_validator("note", "source", mode="before")
    @classmethod
    def _text(cls, v: Any) -> str:
        return "" if v is None else str(v).strip()

    @model_validator(mode="after")
    def _unit_matches(self) -> _CaseRow:
        if self.software is not None:
            self.software, self.software_unmodelled = canonical_software(self.software)
        expected = METRIC_UNITS[self.metric]
        if self.unit.lower() != expected.lower():
            raise ValueError(
                f"field 'unit' has {self.unit!r}, but metric {self.metric!r} is measured in {expected!r}; "
                "convert the value to that unit and write it in the 'unit' column"
            )
        self.unit = expected
        if self.task == "inference" and self.train_tokens is not None:
            raise ValueError(
                f"field 'train_tokens' has {self.train_tokens:g}, but an inference case processes no "
                "training tokens (the column is for train_minutes and train_gpu_hours); leave it blank or "
                "fix the task"
            )
        if self.metric == "mfu" and self.measured > 1.0:
            raise ValueError(
                f"field 'measured' has {self.measured!r}, but mfu is a fraction in (0, 1]; write 41% as 0.41"
            )
        return self


def _row_error(source_name: str, line: int, case_id: str, exc: ValidationError) -> ConfigFileError:
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(x) for x in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        if loc:
            parts.append(f"field {loc!r} has {err['input']!r}: {msg}")
        else:
            parts.append(msg)
    ident = f"case_id {case_id!r}" if case_id else "no case_id"
    return ConfigFileError(
        f"{source_name}: row at line {line} ({ident}) is invalid: {'; '.join(parts)}. "
        "Fix that row following the calibration schema (docs/calibration-schema.md) and run again."
    )


def parse_cases_csv(text: str, source_name: str) -> list[CalibrationCase]:
    """Parse calibration cases from CSV ``text``; ``source_name`` (the file) is named in every error."""
    for _ in iter_csv_text(text, source=source_name):  # CSV syntax and field sizes, with the line
        pass
    # newline="" as iter_csv_text reads it: a file with bare CR line ends (classic Mac) raised csv.Error
    reader = csv.DictReader(io.StringIO(text.removeprefix("\ufeff"), newline=""), restkey="\x00extra")
    header = [h.strip() for h in (reader.fieldnames or [])]
    if not header:
        raise ConfigFileError(
            f"{source_name} is empty. A cases file is a CSV with the header "
            f"{','.join(CASE_COLUMNS)} and one row per measurement (see docs/calibration-schema.md)."
        )
    reader.fieldnames = header
    check_csv_header(header, source=source_name)
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    unknown = [c for c in header if c not in CASE_COLUMNS]
    if missing or unknown:
        what = []
        if missing:
            what.append(f"missing column(s) {', '.join(missing)}")
        if unknown:
            what.append(f"unknown column(s) {', '.join(repr(c) for c in unknown)}")
        raise ConfigFileError(
            f"{source_name}: the header has {' and '.join(what)}. Allowed columns: {', '.join(CASE_COLUMNS)} "
            f"(required: {', '.join(REQUIRED_COLUMNS)}). Fix the header line and run again."
            + csv_header_hint(header)
        )
    cases: list[CalibrationCase] = []
    seen: dict[str, int] = {}
    for raw in reader:
        line = reader.line_num
        if "\x00extra" in raw:
            raise ConfigFileError(
                f"{source_name}: row at line {line} has more fields than the header's {len(header)} columns. "
                'Quote any value that contains a comma (for example "a, b") and run again.'
            )
        if all(_blank(v) for v in raw.values()):
            continue
        short = [c for c in REQUIRED_COLUMNS if raw.get(c) is None]
        if short:  # DictReader gives None to the columns a short row has no cell for
            cells = sum(v is not None for v in raw.values())
            raise ConfigFileError(
                f"{source_name}: row at line {line} has {cells} cell(s) but the header has {len(header)} "
                f"columns, so it gives no value for the required column(s) {', '.join(short)}. Give every "
                "column a cell (leave optional ones empty between commas: a,,b) and quote any value that "
                'contains a comma ("a, b").'
            )
        case_id = (raw.get("case_id") or "").strip()
        values = {k: v for k, v in raw.items() if v is not None}
        try:
            row = _CaseRow.model_validate(values)
        except ValidationError as exc:
            raise _row_error(source_name, line, case_id, exc) from None
        if row.case_id in seen:
            raise ConfigFileError(
                f"{source_name}: row at line {line} repeats case_id {row.case_id!r} (first at line "
                f"{seen[row.case_id]}). Each case_id must be unique; rename one of them."
            )
        seen[row.case_id] = line
        cases.append(CalibrationCase(**row.model_dump()))
    if not cases:
        raise ConfigFileError(
            f"{source_name} has a header but no cases. Add one row per measurement "
            "(see docs/calibration-schema.md)."
        )
    return cases


def read_cases(path: Path) -> list[CalibrationCase]:
    """Read a cases CSV file. A missing or unreadable file is a :class:`ConfigFileError`."""
    text = read_user_text(path, what="cases file")
    return parse_cases_csv(text, str(path))


def shipped_cases_path() -> Path:
    """The path of the shipped published cases (``estimate/data/cases.csv``)."""
    return Path(__file__).parent / "data" / "cases.csv"


def case_to_row(case: CalibrationCase) -> dict[str, str]:
    """One case as a CSV row of strings in :data:`CASE_COLUMNS` order (blank for None)."""
    out: dict[str, str] = {}
    for col in CASE_COLUMNS:
        v = getattr(case, col)
        if col == "software" and v is None:
            v = case.software_unmodelled  # the stack as stated, when the estimator does not model it
        if v is None:
            out[col] = ""
        elif isinstance(v, float) and v.is_integer() and col != "measured":
            out[col] = str(int(v))
        else:
            out[col] = str(v)
    return out


def write_cases_csv(cases: list[CalibrationCase]) -> str:
    """Serialise cases to CSV text in the schema (round-trips through :func:`parse_cases_csv`)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(CASE_COLUMNS), lineterminator="\n")
    writer.writeheader()
    for c in cases:
        writer.writerow(case_to_row(c))
    return buf.getvalue()
