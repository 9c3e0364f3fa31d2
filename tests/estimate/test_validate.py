"""validate_cases with injected predictors: error definitions, coverage and the summary statistics."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.errors import DataError, GpufleetError, InputError, UnknownNameError
from gpufleet.estimate.cases import CalibrationCase, read_cases
from gpufleet.estimate.validate import validate_cases

DATA = Path(__file__).parent.parent / "data" / "cases"


@dataclass(frozen=True)
class _Pred:
    predicted: float
    p10: float
    p90: float
    notes: tuple[str, ...] = ()


def _cases() -> list[CalibrationCase]:
    return read_cases(DATA / "small.csv")  # U1 ttft 133 ms, U2 4267 tok/s/gpu, U3 0.385 GiB


def test_signed_error_ratio_and_interval() -> None:
    factors = {"U1": 1.5, "U2": 0.5, "U3": 1.0}

    def pred(case: CalibrationCase, profile: Any) -> _Pred:
        p = case.measured * factors[case.case_id]
        return _Pred(p, p * 0.9, p * 1.1)

    report = validate_cases(_cases(), predictor=pred)
    rows = {r.case_id: r for r in report.rows}
    assert rows["U1"].error_pct == pytest.approx(50.0) and rows["U1"].ratio == pytest.approx(1.5)
    assert rows["U2"].error_pct == pytest.approx(-50.0)
    assert rows["U3"].in_interval is True and rows["U1"].in_interval is False
    s = report.summary
    assert (s.cases, s.predicted, s.coverage) == (3, 3, 1.0)
    assert s.median_ape_pct == pytest.approx(50.0)
    assert s.p90_ape_pct == pytest.approx(50.0)
    assert s.share_within_2x == pytest.approx(1.0)
    assert s.interval_coverage == pytest.approx(1 / 3)
    assert list(report.by_metric) == ["ttft_ms", "train_tokens_per_s_per_gpu", "peak_memory_gib"]


def test_unsupported_case_is_kept_with_reason_and_counts_against_coverage() -> None:
    class CaseNotSupported(GpufleetError):
        pass

    def pred(case: CalibrationCase, profile: Any) -> _Pred:
        if case.metric == "peak_memory_gib":
            raise CaseNotSupported("load cases are not estimated")
        if case.case_id == "U2":
            raise UnknownNameError("model", case.model, ["llama-2-7b"])
        return _Pred(case.measured * 3, case.measured, case.measured * 4)

    report = validate_cases(_cases(), predictor=pred)
    assert [r.case_id for r in report.rows] == ["U1", "U2", "U3"]
    u3 = report.rows[2]
    assert u3.predicted is None and u3.p10 is None and u3.reason == "load cases are not estimated"
    assert "Unknown model" in (report.rows[1].reason or "")
    s = report.summary
    assert (s.cases, s.predicted) == (3, 1) and s.coverage == pytest.approx(1 / 3)
    assert s.share_within_2x == 0.0 and s.interval_coverage == 1.0
    assert report.by_metric["peak_memory_gib"].median_ape_pct is None


def test_non_positive_prediction_is_a_reason_not_a_crash() -> None:
    report = validate_cases(_cases()[:1], predictor=lambda c, p: _Pred(0.0, 0.0, 1.0))
    assert report.rows[0].predicted is None and "non-positive" in (report.rows[0].reason or "")
    assert report.summary.predicted == 0 and report.summary.median_ape_pct is None


def test_profile_is_passed_to_the_predictor() -> None:
    seen: list[Any] = []

    def pred(case: CalibrationCase, profile: Any) -> _Pred:
        seen.append(profile)
        return _Pred(1.0, 1.0, 1.0)

    marker = object()
    validate_cases(_cases(), marker, predictor=pred)  # type: ignore[arg-type]
    assert seen == [marker] * 3


def test_no_cases_is_an_input_error() -> None:
    with pytest.raises(InputError, match="No cases"):
        validate_cases([], predictor=lambda c, p: _Pred(1, 1, 1))


@given(st.lists(st.floats(0.01, 100.0), min_size=1, max_size=40))
def test_summary_matches_numpy_definitions(factors: list[float]) -> None:
    base = _cases()[0]
    cases = [replace(base, case_id=f"C{i}") for i in range(len(factors))]
    by_id = {c.case_id: f for c, f in zip(cases, factors, strict=True)}

    def pred(case: CalibrationCase, profile: Any) -> _Pred:
        p = case.measured * by_id[case.case_id]
        return _Pred(p, p / 2, p * 2)

    s = validate_cases(cases, predictor=pred).summary
    f = np.array(factors)
    ape = np.abs(f - 1) * 100
    assert s.median_ape_pct == pytest.approx(np.median(ape))
    assert s.p90_ape_pct == pytest.approx(np.percentile(ape, 90))
    assert s.median_ape_pct is not None and s.p90_ape_pct is not None
    assert s.median_ape_pct <= s.p90_ape_pct + 1e-9
    within = np.mean((f >= 0.5) & (f <= 2.0))
    assert s.share_within_2x == pytest.approx(within)
    assert s.interval_coverage == pytest.approx(within)  # [p/2, 2p] holds measured iff 0.5 <= f <= 2
    assert s.coverage == 1.0


def test_data_error_is_raised_not_hidden_in_rows() -> None:
    def pred(case: CalibrationCase, profile: Any) -> _Pred:
        raise DataError("The shipped calibration profile is missing. Reinstall gpufleet.")

    with pytest.raises(DataError, match="Reinstall"):
        validate_cases(_cases(), predictor=pred)
