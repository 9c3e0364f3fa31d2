"""Workload identity of telemetry samples: which Deployment, StatefulSet, Job or batch job a pod belongs to.

Pods come and go (a serving Deployment rolls its pods about daily), so right-sizing is per *workload*, across
its pods. The owner is found, first match wins:

1. an inventory ``workloads:`` entry whose ``pod`` glob (and ``namespace`` glob, when given) matches;
2. a batch job id label (``hpc_job``, ``exported_job``, ``workload``, ``job_name``): ``job:<id>``;
3. the pod name without the suffixes Kubernetes generates (:data:`POD_OWNER_RE`): a Deployment's pods are
   ``<name>-<pod-template-hash>-<5 chars>``, a Job's ``<name>-<5 chars>``, a CronJob's
   ``<name>-<scheduled minute>-<5 chars>``, a StatefulSet's ``<name>-<ordinal>``. The random parts use the
   alphabet of ``k8s.io/apimachinery/pkg/util/rand.SafeEncodeString`` (``bcdfghjklmnpqrstvwxz2456789``: no
   vowels, no 0, 1, 3), so ``chat-model`` keeps its name;
4. else the pod name itself.

The same regular expression (RE2 syntax) is used in PromQL ``label_replace`` by the Prometheus path, so both
paths group identically.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pydantic import ConfigDict, Field, ValidationError

from gpufleet.errors import ConfigFileError
from gpufleet.fileio import load_structured_file
from gpufleet.strict_model import NoBoolNumbers

#: ``k8s.io/apimachinery/pkg/util/rand`` alphanumerics (SafeEncodeString): generated name suffixes.
_SAFE: Final = "[bcdfghjklmnpqrstvwxz2456789]"
#: Pod name -> owner (group 1, 2, 3 or 4; exactly one matches). Full match, RE2 and Python compatible.
POD_OWNER_RE: Final = (
    rf"(.+)-[0-9]{{8,}}-{_SAFE}{{5}}"  # CronJob: <cronjob>-<scheduled unix minute>-<5>
    rf"|(.+)-{_SAFE}{{6,10}}-{_SAFE}{{5}}"  # Deployment: <name>-<pod-template-hash>-<5>
    rf"|(.+)-{_SAFE}{{5}}"  # Job (or a bare ReplicaSet): <name>-<5>
    r"|(.+)-(?:0|[1-9][0-9]*)"  # StatefulSet: <name>-<ordinal> (no leading zeros)
)
_OWNER: Final = re.compile(POD_OWNER_RE)
TIERS: Final[tuple[str, ...]] = ("auto", "dev", "batch", "production")


def pod_owner(pod: str) -> str:
    """The owner name of a pod (``chat-7d9f8b6c4-x2kq9`` -> ``chat``); the pod name when none matches."""
    m = _OWNER.fullmatch(pod)
    if m is None:
        return pod
    return next(g for g in m.groups() if g is not None)


class _TrainingIn(NoBoolNumbers):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    model: str
    gpus: int = Field(gt=0)
    global_batch: int = Field(gt=0)
    seq_len: int = Field(gt=0)
    precision: str = "bf16"
    task: str = "pretrain"


class _WorkloadIn(NoBoolNumbers):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    pod: str
    namespace: str | None = None
    workload: str
    team: str | None = None
    tier: str | None = None
    training: _TrainingIn | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingJob:
    """What a training workload runs (an inventory ``workloads:`` entry's ``training:``), for the estimator's
    expected step time on its GPU (:func:`gpufleet.estimate.estimate_training`)."""

    model: str  # a model id the estimator knows (gpufleet models)
    gpus: int  # GPUs of the whole job
    global_batch: int  # sequences per optimizer step
    seq_len: int  # tokens per sequence
    precision: str = "bf16"
    task: str = "pretrain"


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadRule:
    """An inventory ``workloads:`` entry: pods matching ``pod`` (glob; and ``namespace``) belong to
    ``workload``, charged to ``team``, judged at ``tier`` (the recommender's tiers)."""

    pod: str
    namespace: str | None
    workload: str
    team: str | None
    tier: str | None
    training: TrainingJob | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadId:
    key: str  # "<namespace>/<name>" or "job:<id>"
    namespace: str | None
    name: str
    team: str | None  # from the inventory rule; else the caller uses the namespace
    tier: str | None
    source: str  # "inventory", "job", "pod name", "pod"
    training: TrainingJob | None = None  # from the inventory rule: for the expected step time


def workload_of(
    *,
    namespace: str | None,
    pod: str | None,
    job: str | None,
    rules: Sequence[WorkloadRule] = (),
) -> WorkloadId | None:
    """The workload of a series' labels (see the module docstring); None without pod or job."""
    if pod:
        for r in rules:
            if fnmatch.fnmatchcase(pod, r.pod) and (
                r.namespace is None or fnmatch.fnmatchcase(namespace or "", r.namespace)
            ):
                return WorkloadId(
                    key=f"{namespace or '-'}/{r.workload}",
                    namespace=namespace,
                    name=r.workload,
                    team=r.team,
                    tier=r.tier,
                    source="inventory",
                    training=r.training,
                )
    if job:
        return WorkloadId(key=f"job:{job}", namespace=namespace, name=job, team=None, tier=None, source="job")
    if pod:
        owner = pod_owner(pod)
        return WorkloadId(
            key=f"{namespace or '-'}/{owner}",
            namespace=namespace,
            name=owner,
            team=None,
            tier=None,
            source="pod name" if owner != pod else "pod",
        )
    return None


def load_workload_rules(path: Path | str) -> tuple[WorkloadRule, ...]:
    """The ``workloads:`` entries of an inventory file (none when it has no such list)."""
    p = Path(path)
    if p.suffix.lower() == ".csv":
        return ()
    doc = load_structured_file(p, what="inventory file")
    rows = doc.get("workloads") if isinstance(doc, dict) else None
    if rows is None:
        return ()
    if not isinstance(rows, list) or not rows:
        raise ConfigFileError(
            f"The inventory file {p}: 'workloads:' must be a non-empty list of entries with pod (a glob), "
            "workload, and optionally namespace, team, tier."
        )
    out = []
    for i, row in enumerate(rows, start=1):
        try:
            e = _WorkloadIn.model_validate(row)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise ConfigFileError(
                f"The inventory file {p}, workloads entry {i}: "
                f"{'.'.join(str(x) for x in err['loc']) or 'entry'}: {err['msg']}. Allowed keys: pod (glob), "
                "namespace (glob), workload, team, tier, training (model, gpus, global_batch, seq_len, "
                "precision, task)."
            ) from None
        if e.tier is not None and e.tier not in TIERS[1:]:
            raise ConfigFileError(
                f"The inventory file {p}, workloads entry {i}: tier {e.tier!r} is not one of "
                f"{', '.join(TIERS[1:])} (the recommender's tiers)."
            )
        job = None if e.training is None else TrainingJob(**e.training.model_dump())
        out.append(
            WorkloadRule(
                pod=e.pod, namespace=e.namespace, workload=e.workload, team=e.team, tier=e.tier, training=job
            )
        )
    return tuple(out)


__all__ = [
    "POD_OWNER_RE",
    "TIERS",
    "TrainingJob",
    "WorkloadId",
    "WorkloadRule",
    "load_workload_rules",
    "pod_owner",
    "workload_of",
]
