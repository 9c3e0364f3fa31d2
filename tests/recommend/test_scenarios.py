"""Shipped scenarios and sets: names, parameters, unknown names, progress callback."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.errors import DataError, UnknownNameError
from gpufleet.recommend.api import run_scenario, run_scenario_set
from gpufleet.recommend.scenarios import get_scenario, load_scenarios, parse_scenarios

from .fakes import FakeEstimator, small_table

EST = FakeEstimator()

EXPECTED_SETS = {
    "basic_demos": ("fine_tuning_medium_p5", "inference_small_p5"),
    "cost_optimization_focus": ("inference_small_p5", "batch_inference_g5", "production_serving_g4dn"),
    "performance_focus": ("training_large_p4d", "inference_massive_p5e"),
    "comprehensive_suite": ("fine_tuning_medium_p5", "inference_small_p5", "training_large_p4d",
                            "inference_massive_p5e"),
    "research_academic": ("research_training_g6e", "batch_inference_g5"),
}  # fmt: skip


def test_sets_exactly_as_the_gfo() -> None:
    assert dict(load_scenarios().sets) == EXPECTED_SETS


def test_inference_small_p5_parameters() -> None:
    w = get_scenario("inference_small_p5")
    assert w.description == "Serving 13B model on 1x P5 H100"
    assert (w.model, w.precision, w.hours_per_month, w.pricing) == ("SMALL", "fp16", 720, "on_demand")
    assert w.current is not None and (w.current.instance_type, w.current.count) == ("p5.4xlarge", 1)  # 1 H100


def test_every_scenario_has_a_current_deployment() -> None:
    assert all(w.current is not None for w in load_scenarios().scenarios.values())


def test_unknown_scenario_close_matches() -> None:
    with pytest.raises(UnknownNameError, match="inference_small_p5"):
        run_scenario("inference_smal_p5")


def test_unknown_set_close_matches() -> None:
    with pytest.raises(UnknownNameError, match="basic_demos"):
        run_scenario_set("basic_demo")


def test_set_runs_with_progress() -> None:
    seen: list[tuple[int, int, str]] = []
    res = run_scenario_set("performance_focus", offers=small_table(), estimator=EST,
                           progress=lambda i, n, s: seen.append((i, n, s)))  # fmt: skip
    assert [r.name for r in res.results] == list(EXPECTED_SETS["performance_focus"])
    assert seen == [(1, 2, "training_large_p4d"), (2, 2, "inference_massive_p5e")]
    assert all(r.error is None and r.recommendation is not None for r in res.results)


def test_scenario_errors_are_kept_as_text() -> None:
    # the small table has no g6e.12xlarge: the migration cannot resolve the current instance
    res = run_scenario("research_training_g6e", offers=small_table(), estimator=EST)
    assert res.recommendation is None and res.error is not None and "g6e.12xlarge" in res.error


def test_bad_scenarios_document() -> None:
    with pytest.raises(DataError):
        parse_scenarios({"scenarios": {"a": {"model": "x"}}, "sets": {"s": ["b"]}}, "x.yaml")
    with pytest.raises(DataError):
        parse_scenarios([], "x.yaml")


def test_shipped_file_reads_the_same_with_libyaml_and_pure_python() -> None:
    from importlib import resources

    import yaml

    path = resources.files("gpufleet.recommend").joinpath("data", "scenarios.yaml")
    text = path.read_text(encoding="utf-8")
    pure = yaml.load(text, Loader=yaml.SafeLoader)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    assert yaml.load(text, Loader=loader) == pure
    assert repr(yaml.load(text, Loader=loader)) == repr(pure)  # same types too (1 vs 1.0, dict order)


def test_summaries_read_without_pydantic_are_the_validated_workloads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`scenarios list` reads the shipped file's entries directly once it is marked valid: the same
    summaries as from the validated workloads, entry for entry, and the same sets."""
    from gpufleet.recommend import scenarios as mod

    monkeypatch.setenv("GPUFLEET_CACHE_DIR", str(tmp_path))
    mod.load_scenarios.cache_clear()
    lib = load_scenarios()  # validates and leaves the mark
    validated = tuple(mod._summary(sid, w) for sid, w in lib.scenarios.items())
    _, data = mod._shipped_text()
    raw = tuple(mod._raw_summary(str(k), v) for k, v in data["scenarios"].items())
    assert raw == validated
    assert mod.scenario_summaries() == (validated, dict(lib.sets))
    assert list(tmp_path.glob("scenarios-*.validated"))
    assert any(s.current is not None and s.current.region for s in raw)  # the file exercises every field
    assert {s.task for s in raw} > {"inference"} and {s.pricing for s in raw} >= {"on_demand"}


def test_summaries_without_a_mark_validate_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpufleet.recommend import scenarios as mod

    monkeypatch.setenv("GPUFLEET_CACHE_DIR", str(tmp_path))
    mod.load_scenarios.cache_clear()
    calls = []
    real = mod.parse_scenarios
    monkeypatch.setattr(mod, "parse_scenarios", lambda d, s: calls.append(s) or real(d, s))
    first = mod.scenario_summaries()
    assert calls == ["scenarios.yaml"]  # no mark: every entry validated (and the mark left)
    mod.load_scenarios.cache_clear()
    assert mod.scenario_summaries() == first
    assert calls == ["scenarios.yaml"]  # marked: read directly
