"""Job files for the batch scheduler: a generic CSV and the public cluster-trace layouts.

Accepted layouts (``fmt="auto"`` picks one from the header; every column listed must be present, and a
column not listed is an error so that a misspelt one is never ignored):

* ``generic`` CSV: ``job_id,submit_s,gpus,duration_s,priority,deadline_s,preemptible,team`` where
  ``duration_s`` may be empty when ``model`` and ``tokens`` columns are added (the estimator then gives the
  duration on the pool's GPU); ``deadline_s`` may be empty; ``preemptible`` is true/false. Optional columns:
  ``model``, ``tokens``.
* ``pai`` (Alibaba PAI cluster-trace-gpu-v2020, ``pai_task_table``; Weng et al. NSDI'22): header
  ``job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type`` (the
  published file is headerless: prepend this line). GPUs = ceil(inst_num x plan_gpu / 100); submit =
  start_time; duration = end_time - start_time [s]; only ``Terminated`` tasks; team = ``default``.
* ``openb`` (Alibaba GPU cluster trace 2023 pods): ``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,
  qos,pod_phase,creation_time,deletion_time,scheduled_time``; GPUs = num_gpu (GPU-sharing pods with
  ``gpu_milli`` < 1000 take one GPU); submit = creation_time; duration = deletion_time - scheduled_time;
  ``qos`` BE = preemptible, priority LS 2 > Burstable 1 > BE 0.
* ``helios`` (SenseTime Helios, Hu et al. SC'21, ``cluster_log.csv``): ``job_id,user,gpu_num,cpu_num,
  node_num,state,submit_time,start_time,end_time,duration`` (times as ``YYYY-MM-DD HH:MM:SS``; duration
  [s]); team = user. Layout from the Helios repository's README; not checked against a file here.
* ``philly`` (Microsoft Philly, Jeon et al. ATC'19, ``cluster_job_log`` JSON): a list of jobs with
  ``jobid``, ``vc``, ``submitted_time`` and ``attempts`` [{``start_time``, ``end_time``, ``detail`` [{``gpus``
  [...]}]}]; GPUs = GPUs of the last attempt; duration = last end - first start; team = vc.

Submit times are made relative to the first job; rows must be sorted by submit time.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from gpufleet.errors import ConfigFileError
from gpufleet.fileio import (
    check_csv_header,
    csv_header_hint,
    iter_csv_text,
    load_structured_file,
    read_user_text,
)
from gpufleet.units import SECONDS_PER_HOUR
from gpufleet.validation import MAX_GPUS, MAX_HOURS, checked_arguments

JOB_FORMATS = ("auto", "generic", "pai", "openb", "helios", "philly")
_GENERIC = ("job_id", "submit_s", "gpus", "duration_s", "priority", "deadline_s", "preemptible", "team")
_GENERIC_OPTIONAL = ("model", "tokens")
_PAI = (
    "job_name",
    "task_name",
    "inst_num",
    "status",
    "start_time",
    "end_time",
    "plan_cpu",
    "plan_mem",
    "plan_gpu",
    "gpu_type",
)
_OPENB = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
_HELIOS = (
    "job_id",
    "user",
    "gpu_num",
    "cpu_num",
    "node_num",
    "state",
    "submit_time",
    "start_time",
    "end_time",
    "duration",
)
_TRUE = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False, "": False}
_QOS_PRIORITY = {"LS": 2, "Burstable": 1, "BE": 0}


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    job_id: str
    submit_h: float  # from the first submission [h]
    gpus: int  # gang: all at once, in one pool [count]
    duration_h: float | None  # on any pool; None: from the estimator (model, tokens) [h]
    priority: int = 0  # higher first
    deadline_h: float | None = None  # absolute, from the first submission [h]
    preemptible: bool = False
    team: str = "default"
    model: str | None = None
    tokens: float | None = None


@checked_arguments("job file reader")
def read_jobs(path: str | Path, fmt: str = "auto") -> tuple[Job, ...]:
    """Jobs from ``path`` in one of :data:`JOB_FORMATS` (module doc)."""
    p = Path(path)
    if fmt not in JOB_FORMATS:
        raise ConfigFileError(f"job file format {fmt!r} is unknown. Allowed: {', '.join(JOB_FORMATS)}.")
    if fmt == "philly" or (fmt == "auto" and p.suffix.lower() == ".json"):
        return _finish(p, _philly(p))
    text = read_user_text(p, what="job file", max_bytes=1024**3)
    rows = iter_csv_text(text, source=f"The job file {p}")
    try:
        _, header = next(rows)
    except StopIteration:
        raise ConfigFileError(
            f"The job file {p} is empty; it needs a header line and at least one job."
        ) from None
    header = [h.strip() for h in header]
    check_csv_header(header, source=f"The job file {p}")
    if fmt == "auto":
        fmt = _detect(p, header)
    layout = {"generic": _GENERIC, "pai": _PAI, "openb": _OPENB, "helios": _HELIOS}[fmt]
    allowed = layout + (_GENERIC_OPTIONAL if fmt == "generic" else ())
    missing = [c for c in layout if c not in header]
    unknown = [c for c in header if c not in allowed]
    if missing or unknown:
        raise ConfigFileError(
            f"The job file {p} ({fmt} layout): missing columns {missing}, unknown columns {unknown}. "
            f"The {fmt} layout has {','.join(allowed)}.{csv_header_hint(header)}"
        )
    jobs: list[Job] = []
    first_line: dict[str, int] = {}
    for line, cells in rows:
        if len(cells) != len(header):
            raise ConfigFileError(
                f"The job file {p}, line {line}: {len(cells)} cells for {len(header)} columns."
            )
        row = dict(zip(header, (c.strip() for c in cells), strict=True))
        job = {"generic": _generic, "pai": _pai, "openb": _openb, "helios": _helios}[fmt](p, line, row)
        if job is not None:
            if job.job_id in first_line:
                raise ConfigFileError(
                    f"The job file {p}, line {line}: job_id {job.job_id!r} repeats line "
                    f"{first_line[job.job_id]}. Each job needs its own id; rename one of them."
                )
            first_line[job.job_id] = line
            jobs.append(job)
    return _finish(p, jobs)


def _detect(p: Path, header: list[str]) -> str:
    for fmt, layout in (("generic", _GENERIC), ("pai", _PAI), ("openb", _OPENB), ("helios", _HELIOS)):
        if all(c in header for c in layout):
            return fmt
    raise ConfigFileError(
        f"The job file {p} has the columns {header}, which match no known layout "
        f"(generic {','.join(_GENERIC)}; pai; openb; helios; philly JSON). "
        f"See docs/simulate.md or pass --jobs-format.{csv_header_hint(header)}"
    )


def _num(p: Path, line: int, col: str, raw: str, *, allow_empty: bool = False) -> float | None:
    if raw == "" and allow_empty:
        return None
    try:
        v = float(raw)
    except ValueError:
        raise ConfigFileError(f"The job file {p}, line {line}: {col} = {raw!r} is not a number.") from None
    if not math.isfinite(v) or v < 0:
        raise ConfigFileError(f"The job file {p}, line {line}: {col} = {raw} must be a finite number >= 0.")
    return v


def _generic(p: Path, line: int, row: dict[str, str]) -> Job:
    gpus = _num(p, line, "gpus", row["gpus"]) or 0
    if gpus < 1 or gpus != int(gpus):
        raise ConfigFileError(f"The job file {p}, line {line}: gpus = {row['gpus']}; a whole number >= 1.")
    dur = _num(p, line, "duration_s", row["duration_s"], allow_empty=True)
    if dur == 0:
        raise ConfigFileError(
            f"The job file {p}, line {line}: duration_s = 0; a job runs for a positive number of seconds "
            "(leave it empty and give model and tokens to let the estimator size it)."
        )
    model = row.get("model") or None
    tokens = _num(p, line, "tokens", row.get("tokens", ""), allow_empty=True)
    if dur is None and (model is None or tokens is None):
        raise ConfigFileError(
            f"The job file {p}, line {line}: give duration_s, or model and tokens (the estimator's duration)."
        )
    if row["preemptible"].lower() not in _TRUE:
        raise ConfigFileError(
            f"The job file {p}, line {line}: preemptible = {row['preemptible']!r}; true/false."
        )
    dl = _num(p, line, "deadline_s", row["deadline_s"], allow_empty=True)
    submit_s = _num(p, line, "submit_s", row["submit_s"]) or 0.0
    if dl is not None and dl <= submit_s:
        raise ConfigFileError(
            f"The job file {p}, line {line}: deadline_s = {row['deadline_s']} is not after submit_s = "
            f"{row['submit_s']}; both are seconds on the same clock, so this job could never meet it. Give "
            "the deadline as that clock's time (submit_s + the time allowed), or leave it empty."
        )
    try:
        prio = int(row["priority"] or 0)
    except ValueError:
        raise ConfigFileError(f"The job file {p}, line {line}: priority must be an integer.") from None
    return Job(
        job_id=row["job_id"] or f"line{line}",
        submit_h=submit_s / 3600,
        gpus=int(gpus),
        duration_h=dur / SECONDS_PER_HOUR if dur is not None else None,
        priority=prio,
        deadline_h=dl / SECONDS_PER_HOUR if dl is not None else None,
        preemptible=_TRUE[row["preemptible"].lower()],
        team=row["team"] or "default",
        model=model,
        tokens=tokens,
    )


def _pai(p: Path, line: int, row: dict[str, str]) -> Job | None:
    if row["status"] != "Terminated" or not row["plan_gpu"]:
        return None
    start = _num(p, line, "start_time", row["start_time"]) or 0.0
    end = _num(p, line, "end_time", row["end_time"]) or 0.0
    gpus = math.ceil(
        (_num(p, line, "inst_num", row["inst_num"]) or 1)
        * (_num(p, line, "plan_gpu", row["plan_gpu"]) or 0)
        / 100
    )
    if gpus < 1 or end <= start:
        return None
    return Job(
        job_id=f"{row['job_name']}/{row['task_name']}",
        submit_h=start / 3600,
        gpus=gpus,
        duration_h=(end - start) / 3600,
    )


def _openb(p: Path, line: int, row: dict[str, str]) -> Job | None:
    gpus = _num(p, line, "num_gpu", row["num_gpu"]) or 0
    if gpus <= 0:
        return None
    create = _num(p, line, "creation_time", row["creation_time"]) or 0.0
    sched = _num(p, line, "scheduled_time", row["scheduled_time"], allow_empty=True)
    delete = _num(p, line, "deletion_time", row["deletion_time"], allow_empty=True)
    if sched is None or delete is None or delete <= sched:
        return None
    qos = row["qos"]
    return Job(
        job_id=row["name"],
        submit_h=create / 3600,
        gpus=math.ceil(gpus),
        duration_h=(delete - sched) / 3600,
        priority=_QOS_PRIORITY.get(qos, 0),
        preemptible=qos == "BE",
    )


def _time(p: Path, line: int, col: str, raw: str) -> datetime:
    try:
        return datetime.fromisoformat(raw)
    except ValueError:
        raise ConfigFileError(
            f"The job file {p}, line {line}: {col} {raw!r} is not YYYY-MM-DD HH:MM:SS."
        ) from None


def _helios(p: Path, line: int, row: dict[str, str]) -> Job | None:
    gpus = _num(p, line, "gpu_num", row["gpu_num"]) or 0
    dur = _num(p, line, "duration", row["duration"]) or 0.0
    if gpus < 1 or dur <= 0:
        return None
    t = _time(p, line, "submit_time", row["submit_time"])
    return Job(
        job_id=row["job_id"],
        submit_h=t.timestamp() / 3600,
        gpus=int(gpus),
        duration_h=dur / 3600,
        team=row["user"] or "default",
    )


def _philly(p: Path) -> list[Job]:
    doc = load_structured_file(p, what="Philly job log")
    if not isinstance(doc, list):
        raise ConfigFileError(f"The Philly job log {p} must be a JSON list of jobs.")
    jobs = []
    for k, j in enumerate(doc):
        if not isinstance(j, dict) or not {"jobid", "vc", "submitted_time", "attempts"} <= set(j):
            raise ConfigFileError(
                f"The Philly job log {p}, job {k}: needs jobid, vc, submitted_time, attempts."
            )
        att = [a for a in j["attempts"] if isinstance(a, dict) and a.get("start_time") and a.get("end_time")]
        if not att:
            continue
        try:
            start = datetime.fromisoformat(att[0]["start_time"])
            end = datetime.fromisoformat(att[-1]["end_time"])
            sub = datetime.fromisoformat(j["submitted_time"])
        except (TypeError, ValueError):
            raise ConfigFileError(
                f"The Philly job log {p}, job {j['jobid']}: times must be date-times."
            ) from None
        gpus = sum(len(d.get("gpus", [])) for d in att[-1].get("detail", []) if isinstance(d, dict))
        if gpus < 1 or end <= start:
            continue
        jobs.append(
            Job(
                job_id=str(j["jobid"]),
                submit_h=sub.timestamp() / 3600,
                gpus=gpus,
                duration_h=(end - start).total_seconds() / 3600,
                team=str(j["vc"]),
            )
        )
    return jobs


def _finish(p: Path, jobs: list[Job]) -> tuple[Job, ...]:
    if not jobs:
        raise ConfigFileError(f"The job file {p} has no usable jobs (GPU jobs with a positive duration).")
    for j in jobs:  # every layout: durations and times within MAX_HOURS, GPU counts within MAX_GPUS
        times = [t for t in (j.submit_h, j.duration_h, j.deadline_h) if t is not None]
        if not all(math.isfinite(t) and abs(t) <= MAX_HOURS for t in times) or not 1 <= j.gpus <= MAX_GPUS:
            raise ConfigFileError(
                f"The job file {p}, job {j.job_id}: submit {j.submit_h:g} h, duration {j.duration_h} h, "
                f"{j.gpus} GPUs; times must be finite and within {MAX_HOURS:,.0f} h and GPU counts from 1 "
                f"to {MAX_GPUS:,}. Check the time unit (seconds) and the row."
            )
    for a, b in itertools.pairwise(jobs):
        if b.submit_h < a.submit_h:
            raise ConfigFileError(
                f"The job file {p} is not sorted by submit time: job {b.job_id} is submitted before "
                f"{a.job_id}. Sort it by the submit column."
            )
    t0 = jobs[0].submit_h
    from dataclasses import replace

    return tuple(
        replace(
            j, submit_h=j.submit_h - t0, deadline_h=j.deadline_h - t0 if j.deadline_h is not None else None
        )
        for j in jobs
    )
