"""The GPU Fleet Optimizer's Python API (``gpu_migration_analyzer``), on top of gpufleet's engine.

Scripts written for the GPU Fleet Optimizer keep working unchanged::

    from gpu_migration_analyzer import AWSGPUMigrationAnalyzer, WorkloadType, ModelSize
    analyzer = AWSGPUMigrationAnalyzer()
    analyzer.run_workload_by_id('inference_small_p5')

Configuration, as the optimizer reads it: ``config/gpu_instances.json``, ``config/model_config.json`` and
``config/workloads.json`` under the working directory (or ``config_dir``), each optional. Workloads come
from ``workloads.json`` and, for ids it does not define, from gpufleet's shipped GFO scenarios (same ids);
``model_config.json`` maps size classes (a custom one such as ``extra_large`` with only
``parameter_count_billion`` becomes a scaled architecture); ``gpu_instances.json`` adds its instances, at
its prices, to gpufleet's catalog. A current instance given as the optimizer's family key (``P5``) is the
AWS instance of that family in the catalog (see ``gpufleet.recommend.gfo.GFO_INSTANCES``).

Every analysis is a gpufleet migration (:func:`gpufleet.migrate`); reports are gpufleet's Markdown report.
As in the optimizer, the ``run_*`` and ``list_*`` methods print; ``generate_migration_report`` returns the
report text. ``python -m gpu_migration_analyzer`` (or running this file) runs the ``basic_demos`` set.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from enum import Enum
from pathlib import Path
from typing import Any

from gpufleet.errors import ConfigFileError
from gpufleet.validation import checked_arguments

__all__ = ["AWSGPUMigrationAnalyzer", "ModelSize", "WorkloadType", "main"]


class WorkloadType(Enum):
    """The optimizer's workload types (gpufleet task in the comment)."""

    TRAINING = "TRAINING"  # pretrain
    FINE_TUNING = "FINE_TUNING"  # full_finetune
    INFERENCE = "INFERENCE"  # inference


class ModelSize(Enum):
    """The optimizer's size classes (gpufleet pins each to a published architecture)."""

    SMALL = "SMALL"  # 13B
    MEDIUM = "MEDIUM"  # 35B
    LARGE = "LARGE"  # 70B
    MASSIVE = "MASSIVE"  # 405B


#: the optimizer's nominal bytes per parameter (its guide, "Precision Formats (Memory Usage)"); gpufleet's
#: own estimates add quantisation scales (``gpufleet.precision.BYTES_PER_ELEMENT``, fp8 ~1.008)
GFO_BYTES_PER_PARAM: dict[str, float] = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "fp8": 1.0, "int8": 1.0}


def _key(value: Any) -> str:
    return str(value.value if isinstance(value, Enum) else value).strip().upper()


class AWSGPUMigrationAnalyzer:
    """Migration analysis for the optimizer's workloads, answered by gpufleet (within AWS by default)."""

    @checked_arguments("optimizer set-up")
    def __init__(self, config_dir: str | Path = "config", providers: Sequence[str] | None = ("aws",)) -> None:
        """``providers``: where alternatives are looked for. The optimizer analyses AWS instances (its guide
        promises G6/G6e, P5/P6): AWS by default; name others (``("aws", "gcp")``), or None for every
        provider gpufleet knows. A workload that names its own providers keeps them."""
        from gpufleet.catalog.offers import load_offers
        from gpufleet.fileio import load_structured_file
        from gpufleet.recommend.gfo import parse_gfo_model_config, parse_gfo_workloads
        from gpufleet.recommend.scenarios import load_scenarios

        if isinstance(providers, str):
            providers = (providers,)
        self.providers = tuple(p.strip().lower() for p in providers) if providers else ()
        self.config_dir = Path(config_dir)
        if self.config_dir.exists() and not self.config_dir.is_dir():
            raise ConfigFileError(
                f"The optimizer's config folder {self.config_dir} is a file. Pass the folder that holds "
                "gpu_instances.json, model_config.json and workloads.json."
            )
        if str(config_dir) != "config" and not self.config_dir.exists():  # the default may be absent
            raise ConfigFileError(
                f"The optimizer's config folder {self.config_dir} does not exist, so its files would be "
                "silently skipped. Pass the folder that holds gpu_instances.json, model_config.json and "
                "workloads.json, or leave config_dir out for the shipped workloads."
            )
        files = {n: self.config_dir / f"{n}.json" for n in ("gpu_instances", "model_config", "workloads")}
        self._model_sizes: dict[str, Mapping[str, Any]] = {}
        self._models: dict[str, str] = {}
        if files["model_config"].is_file():
            doc = load_structured_file(files["model_config"], what="model config")
            self._models = parse_gfo_model_config(doc, source=str(files["model_config"]))
            body = doc.get("model_sizes", doc.get("models", {}))
            self._model_sizes = {str(k).upper(): v for k, v in body.items() if isinstance(v, Mapping)}
        shipped = load_scenarios()
        self.workloads = dict(shipped.scenarios)
        self.workload_sets = dict(shipped.sets)
        if files["workloads"].is_file():
            doc = load_structured_file(files["workloads"], what="workloads file")
            own, sets = parse_gfo_workloads(doc, source=str(files["workloads"]), models=self._models)
            self.workloads |= own
            self.workload_sets |= sets
        catalogs = (files["gpu_instances"],) if files["gpu_instances"].is_file() else ()
        self._offers = load_offers(catalogs)

    # --- the optimizer's API -------------------------------------------------------------------------
    @checked_arguments("workload listing")
    def list_available_workloads(self) -> dict[str, str]:
        """Print (and return) every workload id with its description, then the workload sets."""
        out = {name: w.description for name, w in self.workloads.items()}
        print("Available workloads:")
        for name, text in out.items():
            print(f"  {name}: {text}")
        print("Workload sets:")
        for name, ids in self.workload_sets.items():
            print(f"  {name}: {', '.join(ids)}")
        return out

    @checked_arguments("workload run")
    def run_workload_by_id(self, workload_id: str) -> str:
        """Analyse one workload (id from workloads.json or gpufleet's scenarios); print, return the report."""
        from gpufleet.errors import UnknownNameError

        if workload_id not in self.workloads:
            raise UnknownNameError("workload", workload_id, self.workloads)
        report = self._report(self.workloads[workload_id])
        print(report)
        return report

    @checked_arguments("workload-set run")
    def run_workload_set(self, set_name: str) -> list[str]:
        """Analyse every workload of a set; print and return the reports."""
        from gpufleet.errors import UnknownNameError

        if set_name not in self.workload_sets:
            raise UnknownNameError("workload set", set_name, self.workload_sets)
        return [self.run_workload_by_id(i) for i in self.workload_sets[set_name]]

    @checked_arguments("migration report")
    def generate_migration_report(
        self,
        current_instance: str,
        current_gpu_count: int = 1,
        workload_type: WorkloadType | str = WorkloadType.INFERENCE,
        model_size: ModelSize | str = ModelSize.SMALL,
        monthly_hours: float = 720,
        use_spot: bool = False,
        precision: str = "fp16",
    ) -> str:
        """The migration report (Markdown text) for a current deployment described as the optimizer does."""
        from gpufleet.recommend.gfo import gfo_entry_to_dict
        from gpufleet.recommend.workload import workload_from_dict

        entry = {
            "current_instance": current_instance,
            "current_gpu_count": current_gpu_count,
            "workload_type": _key(workload_type),
            "model_size": _key(model_size),
            "monthly_hours": monthly_hours,
            "use_spot": use_spot,  # the guide's meaning: spot alternatives to today's on-demand deployment
            "precision": precision,
        }
        name = f"{_key(model_size).lower()}_{_key(workload_type).lower()}_{current_instance}"
        source = "generate_migration_report() arguments"
        data = gfo_entry_to_dict(entry, source=source, name=name, models=self._models)
        return self._report(workload_from_dict(data, source=source, entry=name))

    @checked_arguments("model size lookup")
    def get_model_size_gb(self, model_size: ModelSize | str, precision: str = "fp16") -> float:
        """Weights of a size class in GB (1e9 bytes), as the optimizer computes it: parameter_count_billion
        (model_config.json, else the class's nominal count) x the optimizer's nominal bytes per parameter
        (:data:`GFO_BYTES_PER_PARAM`; other precisions: gpufleet's stored size with quantisation scales)."""
        from gpufleet.errors import UnknownNameError
        from gpufleet.models.size_classes import SIZE_CLASSES
        from gpufleet.precision import bytes_per_element

        key = _key(model_size)
        entry = self._model_sizes.get(key, {})
        billions = entry.get("parameter_count_billion")
        if billions is None:
            if key not in SIZE_CLASSES:
                raise UnknownNameError("model size", key, [*SIZE_CLASSES, *self._model_sizes])
            billions = SIZE_CLASSES[key][0] / 1e9
        p = precision.lower()
        size = float(billions) * GFO_BYTES_PER_PARAM.get(p, bytes_per_element(p))
        return int(size) if size.is_integer() else round(size, 2)

    # --- gpufleet underneath ---------------------------------------------------------------------------
    def _report(self, workload: Any) -> str:
        from gpufleet.recommend.api import evaluate_workload
        from gpufleet.report import render_text

        if self.providers and not workload.providers:
            scope = ", ".join(self.providers)
            workload = replace(
                workload,
                providers=self.providers,
                notes=(
                    *workload.notes,
                    f"Alternatives within {scope} (AWSGPUMigrationAnalyzer's scope; pass providers=None "
                    "for every cloud gpufleet knows).",
                ),
            )
        result = evaluate_workload(workload, offers=self._offers, limit=5)
        head = ""
        if (
            result.error is not None
            and workload.current is not None
            and not workload.train_tokens_from_current
        ):
            # e.g. the current instance cannot hold the model ("CANNOT FIT"): say so, then where it fits
            head = f"# {workload.name}\n\nNo migration analysis: {result.error}\n\n"
            result = evaluate_workload(replace(workload, current=None), offers=self._offers, limit=5)
        if result.error is not None:
            return f"{head}# {workload.name}\n\nCannot analyse this workload: {result.error}\n"
        shown = result.migration if result.migration is not None else result.recommendation
        assert shown is not None
        return head + render_text(shown, "markdown")


def main(argv: list[str] | None = None) -> int:
    """Run the ``basic_demos`` workload set, as ``python3 gpu_migration_analyzer.py`` does."""
    from gpufleet.errors import GpufleetError

    try:
        AWSGPUMigrationAnalyzer().run_workload_set("basic_demos")
    except GpufleetError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
