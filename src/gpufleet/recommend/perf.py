"""Performance of one (GPU, GPUs per node, precision) combination for a workload, computed once and cached.

Estimates depend only on the accelerator, the node shape, the node count and the workload (model, precision,
lengths, batch), never on the price, provider or region; so the engine evaluates each unique combination once
here and broadcasts prices over every offer that shares it (:mod:`gpufleet.recommend.candidates`).

The estimator is injected (:class:`Estimator`); :class:`DefaultEstimator` calls ``gpufleet.estimate``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from gpufleet.cost.startup import training_startup_s
from gpufleet.errors import InputError, UnknownNameError
from gpufleet.estimate.comms import NodeNetwork
from gpufleet.estimate.types import Interval
from gpufleet.recommend.deployability import PRODUCTION_MEMORY_HEADROOM
from gpufleet.recommend.types import Workload
from gpufleet.units import GIB, MS_PER_S, SECONDS_PER_HOUR, SECONDS_PER_MINUTE

if TYPE_CHECKING:
    from gpufleet.estimate.recipes import TrainingOptions

#: fine-tuning tasks run without pipeline parallelism whenever a layout without it fits, with any ZeRO/FSDP
#: stage and recompute (torchtune, HF Trainer/PEFT, Axolotl and Unsloth shard with FSDP/DeepSpeed ZeRO and
#: offer no pipeline schedule); pre-training whenever one fits with Megatron-LM's defaults, the distributed
#: optimizer (ZeRO-1) and selective recompute (NeMo's Llama 3 8B recipes run TP1 PP1; PP enters at 70B+);
#: docs/recommend.md "Practitioners' rules we check"
NO_PIPELINE_TASKS: frozenset[str] = frozenset({"lora", "qlora", "full_finetune"})
#: ZeRO stage and recompute of the pre-training layout without pipeline parallelism (Megatron-LM defaults)
PRETRAIN_FLAT_LAYOUT: tuple[int, str] = (1, "selective")
#: operating batches (concurrent sequences per replica) tried when latency SLOs bound the batch
BATCH_LADDER: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


class Estimator(Protocol):
    """What the engine needs from the estimator (``gpufleet.estimate`` contract, duck-typed results)."""

    def inference(
        self,
        *,
        gpu: str,
        precision: str,
        gpu_count: int,
        tp: int,
        pp: int,
        batch: int | None,
        workload: Workload,
        ep: int = 1,
    ) -> Any: ...

    def training(
        self,
        *,
        gpu: str,
        precision: str,
        gpu_count: int,
        gpus_per_node: int,
        workload: Workload,
        node_network: NodeNetwork | None = None,
    ) -> Any: ...


class DefaultEstimator:
    """Calls ``gpufleet.estimate.estimate_inference/estimate_training``; a precision fallback only where the
    workload allows it (``allow_fallback``)."""

    def __init__(self) -> None:
        self._models: dict[str, Any] = {}

    def _model(self, name: str) -> Any:
        if name not in self._models:
            from gpufleet.models import resolve_model

            self._models[name] = resolve_model(name)
        return self._models[name]

    def inference(
        self,
        *,
        gpu: str,
        precision: str,
        gpu_count: int,
        tp: int,
        pp: int,
        batch: int | None,
        workload: Workload,
        ep: int = 1,
    ) -> Any:
        model = self._model(workload.model)
        # from its own module (gpufleet.estimate.performance re-exports it but also loads the training model)
        from gpufleet.estimate.inference import estimate_inference

        return estimate_inference(
            model=model,
            gpu=gpu,
            precision=precision,
            input_len=workload.input_len_tokens,
            output_len=workload.output_len_tokens,
            gpu_count=gpu_count,
            batch=batch,
            tp=tp,
            pp=pp,
            ep=ep,
            allow_fallback=workload.allow_fallback,
        )

    def expert_parallel_layouts(
        self, *, gpu: str, gpu_count: int, workload: Workload
    ) -> tuple[tuple[int, int], ...]:
        """(ep, attention tp) layouts a serving engine offers for a mixture-of-experts model on one node of
        ``gpu_count`` x ``gpu`` (vLLM/SGLang ``--enable-expert-parallel``: the routed experts split over the
        replica's ``ep`` GPUs, attention TP ``tp`` x data parallel ``ep / tp`` inside it); () for a dense
        model. The same degrees the estimator times for a MoE model when no layout is given
        (:func:`gpufleet.estimate.parallelism.ep_inference_layouts`): EP powers of two dividing the routed
        experts within the scale-up domain, attention TP powers of two dividing the heads and ``ep``."""
        model = self._model(workload.model)
        if not model.is_moe:
            return ()
        from gpufleet.catalog.specs import get_spec
        from gpufleet.estimate.moe_serving import ep_degrees
        from gpufleet.estimate.parallelism import tp_candidates
        from gpufleet.estimate.rates import MAX_AUTO_TP, scaleup_domain_gpus

        domain = scaleup_domain_gpus(get_spec(gpu), gpu_count)
        return tuple(
            (e, t)
            for e in ep_degrees(model, gpu_count, domain)
            for t in tp_candidates(model, min(e, MAX_AUTO_TP))
            if e % t == 0
        )

    def training(
        self,
        *,
        gpu: str,
        precision: str,
        gpu_count: int,
        gpus_per_node: int,
        workload: Workload,
        node_network: NodeNetwork | None = None,
    ) -> Any:
        """The estimator's fastest fitting layout, but without pipeline parallelism whenever a layout
        without it fits (PP only when needed): fine-tuning (:data:`NO_PIPELINE_TASKS`) with any ZeRO/FSDP
        stage, pre-training with :data:`PRETRAIN_FLAT_LAYOUT`."""
        model = self._model(workload.model)
        from gpufleet.estimate.performance import estimate_training

        options = fine_tuning_options(workload, gpu_count)

        def run(pp: int | None, zero_stage: int | None = None, recompute: str | None = None) -> Any:
            return estimate_training(
                model=model,
                task=workload.task,
                gpu=gpu,
                precision=precision,
                gpu_count=gpu_count,
                global_batch=workload.global_batch_sequences,
                seq_len=workload.seq_len_tokens,
                train_tokens=workload.train_tokens,
                gpus_per_node=gpus_per_node,
                allow_fallback=workload.allow_fallback,
                node_network=node_network,
                pp=pp,
                zero_stage=zero_stage,
                recompute=recompute,
                options=options,
            )

        best = run(None)
        if int(best.pp) > 1:
            try:
                flat = run(1) if workload.task in NO_PIPELINE_TASKS else run(1, *PRETRAIN_FLAT_LAYOUT)
            except InputError:
                return best
            if flat.fits and flat.time_to_train_s is not None:
                return flat
        return best


def fine_tuning_options(w: Workload, gpu_count: int) -> TrainingOptions | None:
    """The fine-tuning options sizing ``w`` on ``gpu_count`` GPUs: its recipe preset with its optimizer on
    top (:func:`gpufleet.estimate.recipes.training_options`; a recipe's optimizer and recompute differ on one
    GPU and on several, so the options are built per GPU count); None when the workload names neither, which
    keeps the estimator's generic defaults (AdamW, fp32 master weights, the layout search's recompute)."""
    if w.recipe is None and w.optimizer is None:
        return None
    from gpufleet.estimate.recipes import training_options

    return training_options(task=w.task, gpu_count=gpu_count, recipe=w.recipe, optimizer=w.optimizer)


_CALLS: dict[tuple[object, ...], Any] = {}
_CALLS_MAX = 500_000


def _memo(key: tuple[object, ...], fn: Any) -> Any:
    """Memoise one estimator call (results and rejections) on everything it depends on."""
    hit = _CALLS.get(key)
    if hit is None:
        if len(_CALLS) >= _CALLS_MAX:
            _CALLS.clear()
        try:
            hit = (True, fn())
        except InputError as exc:
            hit = (False, exc)
        _CALLS[key] = hit
    ok, value = hit
    if not ok:
        raise value
    return value


def cached_training(
    est_fn: Estimator,
    w: Workload,
    *,
    gpu: str,
    gpu_count: int,
    gpus_per_node: int,
    node_network: NodeNetwork | None = None,
) -> Any:
    """``est_fn.training`` memoised on everything it reads."""
    key = ("train", id(est_fn), w.model, w.task, w.precision, w.global_batch_sequences, w.seq_len_tokens,
           w.train_tokens, gpu, gpu_count, gpus_per_node, w.allow_fallback, node_network, w.recipe,
           w.optimizer)  # fmt: skip
    if node_network is None:  # single node: the network is never used (keeps simple fakes working)
        return _memo(key, lambda: est_fn.training(gpu=gpu, precision=w.precision, gpu_count=gpu_count,
                                                  gpus_per_node=gpus_per_node, workload=w))  # fmt: skip
    return _memo(key, lambda: est_fn.training(gpu=gpu, precision=w.precision, gpu_count=gpu_count,
                                              gpus_per_node=gpus_per_node, workload=w,
                                              node_network=node_network))  # fmt: skip


class _Placement:
    """Estimates of one placement (model, precision, lengths, GPU, GPU count, TP, PP, EP) by batch, memoised
    so workloads differing only in targets, SLOs, schedule, price or filters reuse them. ``ep`` > 1: the
    routed experts of a MoE model split over ``ep`` GPUs per replica, attention TP ``tp`` inside them."""

    __slots__ = ("ep", "est_fn", "evals", "gpu", "gpus", "pp", "sat", "tp", "w")

    def __init__(
        self, est_fn: Estimator, w: Workload, gpu: str, gpus: int, tp: int, pp: int, ep: int = 1
    ) -> None:
        self.est_fn, self.w, self.gpu, self.gpus, self.tp, self.pp, self.ep = est_fn, w, gpu, gpus, tp, pp, ep
        self.evals: dict[int, Any] = {}
        self.sat = self._estimate(None)
        b = getattr(self.sat, "batch_per_replica", None)
        if b is not None and int(b) == int(getattr(self.sat, "max_concurrency_per_replica", -1)):
            self.evals[int(b)] = self.sat

    def _estimate(self, batch: int | None) -> Any:
        w = self.w
        kw: dict[str, Any] = {"ep": self.ep} if self.ep > 1 else {}  # estimators without EP keep working
        return self.est_fn.inference(gpu=self.gpu, precision=w.precision, gpu_count=self.gpus, tp=self.tp,
                                     pp=self.pp, batch=batch, workload=w, **kw)  # fmt: skip

    def at(self, batch: int) -> Any:
        hit = self.evals.get(batch)
        if hit is None:
            hit = self._estimate(batch)
            self.evals[batch] = hit
        return hit


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """One way to place the workload on ``nodes_per_unit`` nodes of a shape; ``units`` copies meet the target.

    Inference: a unit is ``nodes_per_unit`` nodes holding ``replicas_per_unit`` model replicas (TP within a
    node, PP across nodes only when one node cannot hold a replica). Training: the unit is the whole job.
    """

    gpu: str
    gpus_per_node: int
    nodes_per_unit: int
    tp: int  # tensor parallel (with ep > 1: attention TP inside the expert-parallel group)
    pp: int
    dp: int
    replicas_per_unit: int
    units: int  # unit copies the concurrency needs (inference; the throughput target is applied per offer)
    fits: bool
    mem_per_gpu_gib: float
    mem_capacity_gib: float
    meets_slo: bool
    slo_misses: tuple[str, ...]
    batch_per_replica: int | None = None
    unit_output_tokens_per_s: Interval | None = None  # inference, one unit at the operating batch
    unit_requests_per_s: Interval | None = None
    ttft_s: Interval | None = None
    tpot_s: Interval | None = None
    tokens_per_s: Interval | None = None  # training
    time_to_train_s: Interval | None = None  # training, on demand (no interruptions)
    weights_per_gpu_gib: float = 0.0  # model weights held per GPU (host RAM rule) [GiB]
    #: training: the checkpoint state held per GPU (weights, optimizer states, adapters), which an
    #: asynchronous checkpoint stages in host RAM (host RAM rule; deploy.HostRules) [GiB]
    checkpoint_per_gpu_gib: float = 0.0
    saturated_unit_output_tokens_per_s: float | None = None  # inference, one unit at the saturated batch
    notes: tuple[str, ...] = ()
    ep: int = 1  # inference: expert-parallel degree of a MoE model's routed experts (1 = split by TP)
    recipe: str | None = None  # training: the fine-tuning recipe that sized the memory (None: generic)
    optimizer: str | None = None  # training: the optimizer the memory was sized for (None: inference)

    @property
    def gpus_per_replica(self) -> int:
        """GPUs one model replica (or the training job's TP x PP group) spans: max(TP, EP) x PP."""
        return max(self.tp, self.ep) * self.pp


def _pow2_upto(n: int) -> list[int]:
    out, t = [], 1
    while t <= n:
        if n % t == 0:
            out.append(t)
        t *= 2
    return out


def at_confidence(iv: Interval, w: Workload) -> float:
    """A time (latency, time to train) at the workload's confidence: the central value (``p50``) or the
    pessimistic end of the estimate's interval (``p90``). The interval is estimation uncertainty (p10-p90
    of the calibrated model's error), not the latency distribution of requests."""
    return iv.central if w.confidence == "p50" else max(iv.central, iv.p90)


def rate_at_confidence(iv: Interval, w: Workload) -> float:
    """A rate (throughput) at the workload's confidence: central (``p50``) or the interval's low end."""
    return iv.central if w.confidence == "p50" else min(iv.central, iv.p10)


def user_tpot(est: Any) -> Interval | None:
    """The TPOT a request sees at the estimate's concurrency: the decode step plus the prompts of the requests
    that join meanwhile (``tpot_loaded_s``; how vLLM's ``benchmark_serving`` and practitioners' SLOs measure
    it), else the bare decode step."""
    loaded: Interval | None = getattr(est, "tpot_loaded_s", None)
    return loaded if loaded is not None else est.tpot_s


def _slo_misses(est: Any, w: Workload) -> tuple[str, ...]:
    """SLO misses of an estimate, judged at the workload's confidence (:func:`at_confidence`)."""
    misses = []
    q = w.confidence
    if w.ttft_p95_s is not None and est.ttft_s is not None and at_confidence(est.ttft_s, w) > w.ttft_p95_s:
        v = at_confidence(est.ttft_s, w)
        misses.append(f"TTFT {q} {v * MS_PER_S:.0f} ms > SLO {w.ttft_p95_s * MS_PER_S:.0f} ms")
    tpot = user_tpot(est)
    if w.tpot_p95_s is not None and tpot is not None and at_confidence(tpot, w) > w.tpot_p95_s:
        v = at_confidence(tpot, w)
        misses.append(f"TPOT {q} {v * MS_PER_S:.1f} ms > SLO {w.tpot_p95_s * MS_PER_S:.1f} ms")
    return tuple(misses)


def slo_gap(cfg: Config, w: Workload) -> float:
    """How far a placement is from its SLOs at the workload's confidence: max(actual / limit) (<= 1 meets)."""
    ratios = [0.0]
    if w.ttft_p95_s is not None and cfg.ttft_s is not None:
        ratios.append(at_confidence(cfg.ttft_s, w) / w.ttft_p95_s)
    if w.tpot_p95_s is not None and cfg.tpot_s is not None:
        ratios.append(at_confidence(cfg.tpot_s, w) / w.tpot_p95_s)
    if w.deadline_h is not None and cfg.time_to_train_s is not None:
        ratios.append(at_confidence(cfg.time_to_train_s, w) / (w.deadline_h * SECONDS_PER_HOUR))
    return max(ratios)


def target_output_tokens_per_s(w: Workload) -> float | None:
    """The whole-system decode-rate target [tokens/s] (requests/s x output length), or None."""
    if w.target_output_tokens_per_s is not None:
        return w.target_output_tokens_per_s
    if w.target_requests_per_s is not None:
        return w.target_requests_per_s * w.output_len_tokens
    return None


def _meets(est: Any, w: Workload) -> bool:
    """Fast form of ``not _slo_misses(est, w)`` for the batch search."""
    if w.ttft_p95_s is not None and est.ttft_s is not None and at_confidence(est.ttft_s, w) > w.ttft_p95_s:
        return False
    tpot = user_tpot(est)
    return not (w.tpot_p95_s is not None and tpot is not None and at_confidence(tpot, w) > w.tpot_p95_s)


def _inference_config(w: Workload, gpu: str, g: int, nodes: int, tp: int, pp: int, pl: _Placement) -> Config:
    sat = pl.sat
    common: dict[str, Any] = {
        "ep": pl.ep,
        "weights_per_gpu_gib": _weights_gib(sat),
        "gpu": gpu,
        "gpus_per_node": g,
        "nodes_per_unit": nodes,
        "tp": tp,
        "pp": pp,
        "dp": 1,
        "mem_per_gpu_gib": float(sat.memory.per_gpu_gib),
        "mem_capacity_gib": float(sat.memory.capacity_gib),
    }
    if not sat.fits or sat.output_tokens_per_s is None:
        return Config(
            **common,
            replicas_per_unit=0,
            units=0,
            fits=False,
            meets_slo=False,
            slo_misses=(),
            notes=tuple(sat.notes),
        )
    replicas = max(1, int(sat.replicas))
    # the saturated operating batch (KV cache and engine limit), never above the KV bound
    max_b = max(1, min(int(sat.max_concurrency_per_replica), int(sat.batch_per_replica or 10**9)))
    # largest ladder batch (<= the KV bound) meeting the SLOs; latencies grow with batch -> bisect the ladder
    at = pl.at
    sat_mem_gib = float(sat.memory.per_gpu_gib)
    sat_tput = float(sat.output_tokens_per_s.central)
    headroom_capped = False
    if w.tier == "production":  # >= 10 % of device memory stays free at the operating point
        capped = _headroom_batch(at, max_b, float(sat.memory.capacity_gib))
        if capped == 0:
            need = float(at(1).memory.per_gpu_gib)
            return Config(**common, replicas_per_unit=0, units=0, fits=False, meets_slo=False, slo_misses=(),
                          notes=(f"production keeps {PRODUCTION_MEMORY_HEADROOM:.0%} of GPU memory free: one "
                                 f"sequence needs {need:.1f} of {float(sat.memory.capacity_gib):.1f} GiB per "
                                 "GPU",))  # fmt: skip
        if capped < max_b:
            max_b = capped
            headroom_capped = True
            sat_mem_gib = float(at(max_b).memory.per_gpu_gib)
            capped_tput = at(max_b).output_tokens_per_s
            sat_tput = float(capped_tput.central) if capped_tput is not None else sat_tput
            common["mem_per_gpu_gib"] = sat_mem_gib
    ladder = [b for b in BATCH_LADDER if b < max_b] + [max_b]
    lo, hi, best = 0, len(ladder) - 1, -1
    # no latency SLO, or the saturated batch already meets it: no search (latency grows with batch)
    if (w.ttft_p95_s is None and w.tpot_p95_s is None) or _meets(at(ladder[hi]), w):
        lo, best = hi + 1, hi
    while lo <= hi:
        mid = (lo + hi) // 2
        if not _meets(at(ladder[mid]), w):
            hi = mid - 1
        else:
            best, lo = mid, mid + 1
    b_slo = ladder[best] if best >= 0 else 1
    b_op = min(b_slo, math.ceil(w.concurrency / replicas)) if w.concurrency is not None else b_slo
    est = at(b_op)
    if est.output_tokens_per_s is None or est.tpot_s is None:  # the estimator says this batch does not fit
        return Config(**common, replicas_per_unit=0, units=0, fits=False, meets_slo=False, slo_misses=(),
                      notes=tuple(est.notes))  # fmt: skip
    misses = _slo_misses(est, w)
    unit_tput: Interval = est.output_tokens_per_s
    units = 1  # the throughput target is applied per offer in candidates.py (vectorised)
    if w.concurrency is not None:
        units = max(units, math.ceil(w.concurrency / (replicas * b_op) - 1e-9))
    return Config(
        **common,
        replicas_per_unit=replicas,
        units=units,
        fits=True,
        meets_slo=not misses,
        slo_misses=misses,
        batch_per_replica=b_op,
        unit_output_tokens_per_s=unit_tput,
        unit_requests_per_s=est.requests_per_s,
        saturated_unit_output_tokens_per_s=sat_tput,
        ttft_s=est.ttft_s,
        tpot_s=user_tpot(est),
        notes=_operating_notes(
            est, replicas, nodes, b_op, why=_batch_reason(w, b_op, b_slo, max_b, headroom_capped)
        ),
    )


def _headroom_batch(at: Any, max_b: int, capacity_gib: float) -> int:
    """Largest batch <= ``max_b`` whose memory per GPU leaves :data:`PRODUCTION_MEMORY_HEADROOM` of
    ``capacity_gib`` free (0 when one sequence does not). Memory grows about linearly with the batch (the
    KV cache), so a secant guess through batch 1 and ``max_b`` is checked and stepped down."""
    cap = (1.0 - PRODUCTION_MEMORY_HEADROOM) * capacity_gib

    def mem(b: int) -> float:
        m = getattr(at(b), "memory", None)
        return float(m.per_gpu_gib) if m is not None else 0.0

    if mem(max_b) <= cap:
        return max_b
    m1 = mem(1)
    if m1 > cap:
        return 0
    if max_b <= 1:
        return 1
    per_seq = (mem(max_b) - m1) / (max_b - 1)
    b = max(1, min(max_b - 1, 1 + int((cap - m1) / per_seq))) if per_seq > 0 else 1
    while b > 1 and mem(b) > cap:
        b -= 1
    while b + 1 < max_b and mem(b + 1) <= cap:
        b += 1
    return b


def _batch_reason(w: Workload, b_op: int, b_slo: int, max_b: int, headroom: bool = False) -> str:
    """Why a replica runs ``b_op`` concurrent sequences (what vLLM's ``--max-num-seqs`` is set to)."""
    if w.concurrency is not None and b_op < b_slo:
        return "the stated concurrency spread over the replicas"
    if b_op >= max_b and headroom:
        return f"production keeps {PRODUCTION_MEMORY_HEADROOM:.0%} of GPU memory free"
    if b_op >= max_b:
        return "saturated: KV cache / engine limit"
    return f"the largest batch meeting the latency SLOs at {w.confidence}; KV cache and engine allow {max_b}"


def _operating_notes(est: Any, replicas: int, nodes: int, b_op: int, why: str) -> tuple[str, ...]:
    """The estimator's notes with its layout note (written for the batch it was asked for) restated for the
    placement: replicas per node (or per group of nodes), the operating batch per replica and why that batch;
    a reader configures ``--max-num-seqs`` from it, so it must not read as the deployment's replica count or
    as a concurrency the user gave."""
    from gpufleet.estimate.inference import layout_note

    note = getattr(est, "layout_note", "")  # estimates from other callables (tests' fakes) may have none
    if not note:
        return tuple(est.notes)
    where = "per node" if nodes == 1 else f"per {nodes} nodes"
    placed = layout_note(replicas, est.layout_text, b_op, why, est.stack_text, where=where)
    return tuple(placed if n == note else n for n in est.notes)


def _checkpoint_gib(est: Any) -> float:
    """Checkpoint state held per GPU [GiB]: weights, optimizer states and adapters from an estimate's memory
    breakdown (0 when it gives none)."""
    mem = getattr(est, "memory", None)
    breakdown = getattr(mem, "breakdown_gib", None) or {}
    return float(sum(breakdown.get(k, 0.0) for k in ("weights", "optimizer_states", "lora_adapters")))


def _weights_gib(est: Any) -> float:
    """Weights held per GPU [GiB] from an estimate's memory breakdown (0 when it gives none)."""
    mem = getattr(est, "memory", None)
    breakdown = getattr(mem, "breakdown_gib", None) or {}
    return float(breakdown.get("weights", 0.0))


def _shape_placements(
    est_fn: Estimator, w: Workload, gpu: str, g: int, multi_node: bool = True
) -> tuple[tuple[int, int, int, Any], ...]:
    """(nodes, tp, pp, placement) tried on nodes of ``g`` x ``gpu``: every TP degree within one node; if none
    fits and the offer forms clusters (``multi_node``), the fewest nodes (up to ``max_nodes``) with PP across
    them. Memoised on what estimates depend on."""

    def build() -> tuple[tuple[int, int, int, Any], ...]:
        out: list[tuple[int, int, int, Any]] = []
        if multi_node:  # the single-node placements are shared with single-node offers (same estimates)
            out = list(_shape_placements(est_fn, w, gpu, g, False))
        else:
            for tp in _pow2_upto(g):
                pl = _try_placement(est_fn, w, gpu, g, tp, 1)
                if pl is not None:
                    out.append((1, tp, 1, pl))
            for ep, tp in expert_layouts(est_fn, w, gpu, g):
                pl = _try_placement(est_fn, w, gpu, g, tp, 1, ep)
                if pl is not None:
                    out.append((1, tp, 1, pl))
        if any(pl.sat.fits for *_, pl in out) or not multi_node:
            return tuple(out)
        for nodes in range(2, w.max_nodes + 1):
            pl = _try_placement(est_fn, w, gpu, g * nodes, g, nodes)
            if pl is not None:
                out.append((nodes, g, nodes, pl))
                if pl.sat.fits:
                    break
        return tuple(out)

    key = ("shape", id(est_fn), w.model, w.precision, w.input_len_tokens, w.output_len_tokens, gpu, g,
           w.max_nodes, w.allow_fallback, multi_node)  # fmt: skip
    return _memo(key, build)  # type: ignore[no-any-return]


def expert_layouts(est_fn: Estimator, w: Workload, gpu: str, g: int) -> tuple[tuple[int, int], ...]:
    """(ep, attention tp) layouts of a MoE model on one node, from the estimator's optional
    ``expert_parallel_layouts`` (:meth:`DefaultEstimator.expert_parallel_layouts`); () when it has none."""
    fn = getattr(est_fn, "expert_parallel_layouts", None)
    if fn is None:
        return ()
    try:
        return tuple(fn(gpu=gpu, gpu_count=g, workload=w))
    except UnknownNameError:
        raise
    except InputError:
        return ()


def _try_placement(
    est_fn: Estimator, w: Workload, gpu: str, gpus: int, tp: int, pp: int, ep: int = 1
) -> _Placement | None:
    """A placement, or None when the estimator rejects it (TP not dividing the heads, a precision the GPU
    cannot run). Unknown names (model, GPU) are workload errors and propagate."""
    try:
        return _Placement(est_fn, w, gpu, gpus, tp, pp, ep)
    except UnknownNameError:
        raise
    except InputError:
        return None


def inference_configs(
    est_fn: Estimator, w: Workload, gpu: str, g: int, network: NodeNetwork | None = None
) -> list[Config]:
    """Configs of every placement tried (see :func:`_shape_placements`); non-fitting ones are returned too
    (``fits=False``) so CANNOT FIT can report memory figures. ``network`` None = single-node offers."""
    return [
        _inference_config(w, gpu, g, n, tp, pp, pl)
        for n, tp, pp, pl in _shape_placements(est_fn, w, gpu, g, network is not None)
    ]


#: a training job is tried on one more node only while the last node counts still cut its time by at least
#: MIN_NODE_GAIN; after STOP_AFTER_NO_GAIN node counts without such a gain (communication-bound over the
#: offer's network) larger counts are not estimated: they are slower per GPU and cost more
MIN_NODE_GAIN = 0.05
STOP_AFTER_NO_GAIN = 2


def training_configs(
    est_fn: Estimator, w: Workload, gpu: str, g: int, network: NodeNetwork | None = None
) -> list[Config]:
    """The job on 1..max_nodes nodes over ``network`` (one node when None); the estimator picks TP/PP/DP."""
    out: list[Config] = []
    best_s = math.inf
    stale = 0
    for nodes in range(1, (w.max_nodes if network is not None else 1) + 1):
        if stale >= STOP_AFTER_NO_GAIN:
            break  # more nodes stopped paying off: the network, not the GPUs, bounds the job
        try:
            est = cached_training(est_fn, w, gpu=gpu, gpu_count=g * nodes, gpus_per_node=g,
                                  node_network=network if nodes > 1 else None)  # fmt: skip
        except UnknownNameError:
            raise
        except InputError:
            continue
        fits = bool(est.fits) and est.time_to_train_s is not None
        if fits and w.global_batch_sequences % max(int(est.dp), 1):
            continue  # Megatron-LM/DeepSpeed: the global batch splits evenly over the data-parallel ranks
        ttt, notes = est.time_to_train_s, tuple(est.notes)
        if fits:
            # a run bills its start-up on every GPU it holds (cost.startup): what keeps a short job off a
            # large slice; each node reads its share of the checkpoint in parallel (none when pre-training)
            read = 0.0 if w.task == "pretrain" else _weights_gib(est) * GIB * g
            up = training_startup_s(read)
            ttt = Interval(central=ttt.central + up, p10=ttt.p10 + up, p90=ttt.p90 + up)
            notes += (
                f"Start-up {up / SECONDS_PER_MINUTE:.1f} min per run (provisioning, image pull, weight "
                "load, warm-up) included in the time and cost.",
            )
        if fits:
            t = float(ttt.central)
            stale = 0 if t < best_s * (1.0 - MIN_NODE_GAIN) else stale + 1
            best_s = min(best_s, t)
        misses: tuple[str, ...] = ()
        if fits and w.deadline_h is not None and at_confidence(ttt, w) > w.deadline_h * SECONDS_PER_HOUR:
            hours = at_confidence(ttt, w) / SECONDS_PER_HOUR
            misses = (f"time to train {w.confidence} {hours:.1f} h > deadline {w.deadline_h:g} h",)
        out.append(
            Config(
                gpu=gpu,
                gpus_per_node=g,
                nodes_per_unit=nodes,
                tp=int(est.tp),
                pp=int(est.pp),
                dp=int(est.dp),
                replicas_per_unit=1,
                units=1 if fits else 0,
                fits=fits,
                mem_per_gpu_gib=float(est.memory.per_gpu_gib),
                mem_capacity_gib=float(est.memory.capacity_gib),
                meets_slo=fits and not misses,
                slo_misses=misses,
                tokens_per_s=est.tokens_per_s if fits else None,
                weights_per_gpu_gib=_weights_gib(est),
                checkpoint_per_gpu_gib=_checkpoint_gib(est),
                time_to_train_s=ttt if fits else None,
                notes=notes,
                recipe=getattr(est, "recipe", None),  # estimators without recipes (tests' fakes) keep working
                optimizer=getattr(est, "optimizer", None),
            )
        )
    return out


def configs_for(
    est_fn: Estimator, w: Workload, gpu: str, g: int, network: NodeNetwork | None = None
) -> tuple[Config, ...]:
    """All placements of ``w`` on nodes of ``g`` x ``gpu`` (several nodes only over ``network``); () when
    the estimator cannot run that GPU."""
    if w.is_training:
        return tuple(training_configs(est_fn, w, gpu, g, network))
    return tuple(inference_configs(est_fn, w, gpu, g, network))


def perf_cache_key(w: Workload) -> tuple[object, ...]:
    """The workload fields performance depends on (not price, schedule, filters or budget)."""
    return (
        w.model,
        w.task,
        w.precision,
        w.input_len_tokens,
        w.output_len_tokens,
        w.concurrency,
        w.ttft_p95_s,
        w.tpot_p95_s,
        w.train_tokens,
        w.deadline_h,
        w.global_batch_sequences,
        w.seq_len_tokens,
        w.max_nodes,
        w.confidence,
        w.allow_fallback,
        w.recipe,
        w.optimizer,
        w.tier == "production",  # memory headroom (deployability.PRODUCTION_MEMORY_HEADROOM)
    )


def unique_shapes(gpus: Sequence[str], counts: Sequence[float]) -> list[tuple[str, int]]:
    """Distinct (gpu, whole GPUs per node) pairs; fractional and CPU-only rows are excluded."""
    seen: dict[tuple[str, int], None] = {}
    for gpu, c in zip(gpus, counts, strict=True):
        if gpu and c >= 1 and float(c).is_integer():
            seen[(str(gpu), int(c))] = None
    return list(seen)
