"""Reading calibration cases: the schema is accepted in full; every bad input names file, row and field."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.errors import ConfigFileError
from gpufleet.estimate.cases import (
    CASE_COLUMNS,
    METRIC_UNITS,
    CalibrationCase,
    parse_cases_csv,
    read_cases,
    shipped_cases_path,
    write_cases_csv,
)

HEAD = "case_id,metric,model,task,gpu,gpu_count,precision,measured,unit\n"
DATA = Path(__file__).parent.parent / "data" / "cases"


def test_metric_units_match_the_schema_table() -> None:
    schema = (Path(__file__).parents[2] / "docs" / "calibration-schema.md").read_text(encoding="utf-8")
    rows = [line.split("|") for line in schema.splitlines() if line.startswith("| ") and line.count("|") == 4]
    table = {r[1].strip(): r[2].strip() for r in rows if r[1].strip() not in ("metric", "column")}
    assert table == dict(METRIC_UNITS)


def test_shipped_cases_read_completely() -> None:
    cases = read_cases(shipped_cases_path())
    assert len(cases) == 164
    ours = [c for c in cases if c.case_id.startswith("P-")]  # measured on the lent H200 (PROVENANCE.md)
    assert len(ours) == 90 and all(c.source.startswith("gpufleet benchmarks/") for c in ours)
    assert all(c.gpu == "H200-SXM" and c.software == "transformers" for c in ours)
    assert not any(c.metric == "tpot_ms" for c in ours)  # host-bound eager decode is not fitted (PROVENANCE)
    by_id = {c.case_id: c for c in cases}
    assert by_id["T11"].train_tokens == 1_211_000_000.0  # float-formatted integer
    assert by_id["T11"].tp is None and by_id["T11"].software == "nemo"
    assert by_id["T07"].note == "same GPUs as T01, other software stack"  # quoted comma
    assert by_id["T17"].software is None  # blank = unknown
    assert by_id["I01"].batch is None and by_id["I01"].input_len == 300
    assert by_id["X01"].unit == "GiB" and by_id["X01"].measured == pytest.approx(0.404)


def test_user_file_normalises_case_and_float_ints() -> None:
    cases = read_cases(DATA / "small.csv")
    u2 = cases[1]
    assert u2.gpu_count == 8 and isinstance(u2.gpu_count, int)
    assert u2.batch == 2048 and isinstance(u2.batch, int)
    assert u2.precision == "fp16"
    assert u2.note == "ZeRO-2, flash attention"
    assert cases[2].note == "" and cases[2].source == ""


def test_optional_columns_may_be_left_out() -> None:
    (case,) = read_cases(DATA / "minimal_columns.csv")
    assert case.batch is None and case.software is None and case.note == ""


def test_bom_and_blank_lines_are_accepted() -> None:
    text = "\ufeff" + (DATA / "minimal_columns.csv").read_text(encoding="utf-8") + "\n,,,,,,,,\n"
    assert len(parse_cases_csv(text, "bom.csv")) == 1


def test_round_trip_of_shipped_cases() -> None:
    cases = read_cases(shipped_cases_path())
    assert parse_cases_csv(write_cases_csv(cases), "rt.csv") == cases


@pytest.mark.parametrize(
    ("name", "fragments"),
    [
        ("bad_metric.csv", ["line 2", "'B1'", "'metric'", "'throughput'", "train_minutes"]),
        ("bad_unit.csv", ["line 2", "'unit'", "'s'", "'ms'"]),
        ("bad_task.csv", ["'task'", "'serving'", "pretrain"]),
        ("bad_precision.csv", ["'precision'", "'fp12'", "bf16"]),
        ("bad_negative.csv", ["'measured'", "'-133'", "> 0"]),
        ("bad_missing_column.csv", ["missing column", "gpu_count"]),
        ("bad_fractional_batch.csv", ["'batch'", "'1.5'", "whole number"]),
        ("bad_duplicate.csv", ["line 3", "repeats case_id 'B1'"]),
        ("bad_unquoted_comma.csv", ["line 2", "Quote"]),
        ("bad_empty.csv", ["no cases"]),
    ],
)
def test_bad_files_name_file_row_field_and_value(name: str, fragments: list[str]) -> None:
    with pytest.raises(ConfigFileError) as info:
        read_cases(DATA / name)
    msg = str(info.value)
    assert name in msg
    for frag in fragments:
        assert frag in msg, (frag, msg)
    assert "\n" not in msg


def test_unknown_column_is_an_error() -> None:
    text = "case_id,metric,model,task,gpu,gpu_count,precision,measured,unit,seqlen\n"
    with pytest.raises(ConfigFileError, match=r"unknown column.*'seqlen'"):
        parse_cases_csv(text + "A,mfu,m,pretrain,H100,1,bf16,0.4,fraction,2048\n", "u.csv")


def test_mfu_above_one_is_an_error() -> None:
    text = HEAD + "A,mfu,m,pretrain,H100,1,bf16,41,fraction\n"
    with pytest.raises(ConfigFileError, match=r"0\.41"):
        parse_cases_csv(text, "m.csv")


def test_non_numeric_value_is_an_error() -> None:
    text = HEAD + "A,mfu,m,pretrain,H100,eight,bf16,0.4,fraction\n"
    with pytest.raises(ConfigFileError, match="'gpu_count' has 'eight': must be a number"):
        parse_cases_csv(text, "n.csv")


def test_empty_and_missing_files() -> None:
    with pytest.raises(ConfigFileError, match="empty"):
        parse_cases_csv("", "e.csv")
    with pytest.raises(ConfigFileError, match="does not exist"):
        read_cases(DATA / "nope.csv")


_pos_int = st.one_of(st.none(), st.integers(1, 10**6))
_pos_float = st.one_of(st.none(), st.floats(1.0, 1e13, allow_nan=False, allow_infinity=False))
#: prompt lengths up to the 10M-token maximum the cases reader accepts (MAX_SEQUENCE_TOKENS)
_prompt_len = st.one_of(st.none(), st.floats(1.0, 1e7, allow_nan=False, allow_infinity=False))


@given(
    metric=st.sampled_from(sorted(METRIC_UNITS)),
    measured=st.floats(1e-6, 1.0, allow_nan=False),
    batch=_pos_int,
    tp=_pos_int,
    input_len=_prompt_len,
    train_tokens=_pos_float,
    note=st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=30),
)
def test_any_valid_row_round_trips(
    metric: str,
    measured: float,
    batch: int | None,
    tp: int | None,
    input_len: float | None,
    train_tokens: float | None,
    note: str,
) -> None:
    task = "inference" if train_tokens is None else "pretrain"  # an inference case has no train_tokens
    case = CalibrationCase(
        case_id="H1", metric=metric, model="llama-2-7b", task=task, gpu="H100-SXM", gpu_count=2,
        precision="bf16", batch=batch, seq_len=None, input_len=input_len, output_len=None,
        train_tokens=train_tokens, tp=tp, pp=None, dp=None, ep=None, cp=None, software="vllm",
        measured=measured, unit=METRIC_UNITS[metric], note=note.strip(), source="hypothesis",
    )  # fmt: skip
    (back,) = parse_cases_csv(write_cases_csv([case]), "h.csv")
    assert back == case
    assert tuple(write_cases_csv([case]).splitlines()[0].split(",")) == CASE_COLUMNS


_SW_HEAD = "case_id,metric,model,task,gpu,gpu_count,precision,software,measured,unit\n"


@pytest.mark.parametrize(
    ("written", "key"),
    [("TensorRT-LLM", "trtllm"), ("llama.cpp", "llamacpp"), ("vLLM 0.10.0", "vllm"), ("MaxText", "jax"),
     ("PyTorch v2.4", "pytorch"), ("fsdp2", "pytorch"), ("optimum-habana", "transformers"),
     ("SGLang", "sglang")],
)  # fmt: skip
def test_software_spellings_and_versions_map_to_the_schema_key(written: str, key: str) -> None:
    row = f"c1,infer_output_tokens_per_s,llama-3.1-8b,inference,H100-SXM,1,bf16,{written},1000,tok/s\n"
    (case,) = parse_cases_csv(_SW_HEAD + row, "s.csv")
    assert case.software == key and case.software_unmodelled is None


def test_an_unmodelled_stack_is_predicted_as_unknown_and_says_so() -> None:
    from gpufleet.estimate.predict import predict_case

    row = "c1,infer_output_tokens_per_s,llama-3.1-8b,inference,H100-SXM,1,bf16,lmdeploy,1000,tok/s\n"
    (case,) = parse_cases_csv(_SW_HEAD + row, "s.csv")
    assert case.software is None and case.software_unmodelled == "lmdeploy"
    pred = predict_case(case)
    assert pred.predicted > 0 and any("lmdeploy" in n for n in pred.notes)
    assert "lmdeploy" in write_cases_csv([case])  # written back as stated


@pytest.mark.parametrize("typo", ["vlm", "trtlm", "megatrn"])
def test_a_software_typo_is_an_error_with_close_matches(typo: str) -> None:
    row = f"c1,infer_output_tokens_per_s,llama-3.1-8b,inference,H100-SXM,1,bf16,{typo},1000,tok/s\n"
    with pytest.raises(ConfigFileError, match="did you mean"):
        parse_cases_csv(_SW_HEAD + row, "s.csv")
