"""Request trace readers: the shipped public traces and every bad-input path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpufleet.errors import ConfigFileError
from gpufleet.simulate.traces import RequestTrace, read_trace, repeat, scale_rate


def test_azure_conversation_trace_reads_completely(azure_conv: RequestTrace) -> None:
    assert len(azure_conv) == 19_366  # PROVENANCE.md: the complete conv file
    assert azure_conv.layout == "azure"
    assert azure_conv.arrival_s[0] == 0.0
    assert 3400 < azure_conv.duration_s < 3600  # 18:15:46 to 19:14:08
    assert azure_conv.start_time_of_day_s == 18 * 3600 + 15 * 60 + 46
    assert np.median(azure_conv.input_tokens) == 1020 and np.median(azure_conv.output_tokens) == 129


def test_mooncake_trace_reads_completely(mooncake: RequestTrace) -> None:
    assert len(mooncake) == 5_719
    assert mooncake.layout == "mooncake"
    assert mooncake.duration_s == pytest.approx(1797.0)
    assert np.median(mooncake.input_tokens) > 5000  # long contexts


def test_burstgpt_layout_drops_failed_requests(tmp_path: Path) -> None:
    f = tmp_path / "burst.csv"
    f.write_text(
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
        "5,ChatGPT,100,20,120,Conversation log\n7,GPT-4,50,0,50,API log\n9,ChatGPT,10,5,15,API log\n"
    )
    t = read_trace(f)
    assert t.layout == "burstgpt" and len(t) == 2 and t.dropped == 1
    assert list(t.arrival_s) == [0.0, 4.0]


def test_generic_layout_and_time_scaling(tmp_path: Path) -> None:
    f = tmp_path / "g.csv"
    f.write_text("timestamp_s,input_tokens,output_tokens\n10,100,20\n12,50,5\n20,10,1\n")
    t = read_trace(f)
    assert list(t.arrival_s) == [0.0, 2.0, 10.0]
    assert list(scale_rate(t, 2.0).arrival_s) == [0.0, 1.0, 5.0]
    assert len(repeat(t, 3)) == 9


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("timestamp_s,input_tokens,output_tokens\n10,100,20\n5,50,5\n", "not sorted"),
        ("timestamp_s,input_tokens,output_tokens\n1,-100,20\n", "input tokens = -100"),
        ("timestamp_s,input_tokens,output_tokens\n1,100,0\n", "output tokens = 0"),
        ("timestamp_s,prompt,output_tokens\n1,100,20\n", "match no known layout"),
        ("", "empty"),
        ("timestamp_s,input_tokens,output_tokens\n1,abc,3\n", "not a number"),
    ],
)
def test_bad_traces_get_clear_errors(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "bad.csv"
    f.write_text(text)
    with pytest.raises(ConfigFileError, match=message):
        read_trace(f)


def test_header_only_trace_is_an_error(tmp_path: Path) -> None:
    f = tmp_path / "h.csv"
    f.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n")
    with pytest.raises(ConfigFileError, match="no requests"):
        read_trace(f)


def test_bad_mooncake_lines(tmp_path: Path) -> None:
    f = tmp_path / "m.jsonl"
    f.write_text('{"timestamp": 0, "input_length": 5, "output_length": 3, "session": 1}\n')
    with pytest.raises(ConfigFileError, match="unknown keys"):
        read_trace(f)
    f.write_text(
        '{"timestamp": 5, "input_length": 5, "output_length": 3}\n'
        '{"timestamp": 1, "input_length": 5, "output_length": 3}\n'
    )
    with pytest.raises(ConfigFileError, match="not sorted"):
        read_trace(f)
