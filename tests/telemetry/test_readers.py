"""Readers: every format, label variant, sentinel and bad-input path (counted or a clear error)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.errors import ConfigFileError, InputError
from gpufleet.telemetry.ingest import read_file
from gpufleet.telemetry.readers import read_exposition, read_query_range_json
from gpufleet.telemetry.readers.common import is_dcgm_blank
from gpufleet.telemetry.readers.exposition import parse_labels
from gpufleet.telemetry.schema import ProblemCounter, SampleBatch

SMI = """timestamp, index, uuid, name, memory.total [MiB], memory.used [MiB], utilization.gpu [%], power.draw [W], mig.mode.current
2026/07/14 08:12:38.696, 0, GPU-aaaa, NVIDIA H100 80GB HBM3, 81559 MiB, 0 MiB, 0 %, 69.85 W, Disabled
2026/07/14 08:12:53.353, 0, GPU-aaaa, NVIDIA H100 80GB HBM3, 81559 MiB, 19818 MiB, 100 %, 631.95 W, Disabled
2026/07/14 08:13:00.000, 1, GPU-bbbb, NVIDIA H100 80GB HBM3, 81559 MiB, [N/A], [Not Supported], 70.00 W, Enabled
this line is broken
"""

EXPO = """# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",modelName="NVIDIA H100 80GB HBM3",hostname="node-a",container="t",namespace="ml",pod="p0"} 100 1784009558000
DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-1",modelName="NVIDIA H100 80GB HBM3",Hostname="node-a",exported_pod="p0",exported_namespace="ml"} 0.183 1784009558000
dcgm_fi_dev_fb_used{gpu="1",uuid="GPU-2",modelname="NVIDIA A100 80GB PCIe",GPU_I_PROFILE="3g.40gb",GPU_I_ID="1",hostname="node-b"} 512 1784009558000
DCGM_FI_DEV_MEMORY_TEMP{gpu="2",UUID="GPU-3",hostname="node-c"} 9223372036854775794 1784009558000
DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-1",hostname="node-a"} 0 1784009558000
DCGM_FI_DEV_GPU_UTIL{gpu="0"} 5 1784009558000
DCGM_FI_DEV_GPU_UTIL{gpu="0",hostname="node-z"} 7
DCGM_FI_DEV_GPU_UTIL{gpu="0",hostname="node-z" 7
DCGM_FI_DEV_GPU_UTIL{gpu="0",hostname="node-y"} 170 1784009558000
"""


def _read(tmp_path: Path, name: str, text: str, **kw: object) -> tuple[SampleBatch, ProblemCounter]:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    b, pc = SampleBatch(), ProblemCounter()
    read_file(p, batch=b, problems=pc, **kw)  # type: ignore[arg-type]
    return b, pc


def _kinds(pc: ProblemCounter) -> dict[str, int]:
    return {p.kind: p.count for p in pc.problems()}


def test_nvidia_smi_units_na_timezone_and_bad_lines(tmp_path: Path) -> None:
    b, pc = _read(tmp_path, "node1.csv", SMI, timezone="Europe/Berlin")
    c = b.columns
    rows = list(zip(c["gpu_key"], c["metric"], c["value"], c["ts_us"], c["host"], strict=True))
    assert (
        "GPU-aaaa",
        "fb_used_mib",
        19818.0,
        1784009573353000,
        "node1",
    ) in rows  # 08:12:53 CEST = 06:12:53 UTC
    assert ("GPU-aaaa", "power_w", 631.95, 1784009573353000, "node1") in rows
    kinds = _kinds(pc)
    assert kinds["missing_value"] == 2  # [N/A] and [Not Supported]
    assert kinds["malformed_line"] == 1
    assert "unknown_metric" not in kinds  # mig.mode.current is a known descriptive field


def test_nvidia_smi_needs_timezone_and_header(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--timezone"):
        _read(tmp_path, "a.csv", SMI)
    with pytest.raises(ConfigFileError, match="time zone"):
        _read(tmp_path, "a.csv", SMI, timezone="Mars/Base")
    with pytest.raises(ConfigFileError, match="lacks 'timestamp'"):
        _read(
            tmp_path,
            "a.csv",
            "timestamp, name\n2026/07/14 08:12:38.696, x\n",
            input_format="nvidia-smi",
            timezone="UTC",
        )


def test_nvidia_smi_unknown_column_counted(tmp_path: Path) -> None:
    text = "timestamp, index, weird.field [%]\n2026/07/14 08:12:38.696, 0, 5 %\n"
    _, pc = _read(tmp_path, "a.csv", text, timezone="UTC")
    assert _kinds(pc)["unknown_metric"] == 1


def test_exposition_label_variants_sentinels_and_bad_lines(tmp_path: Path) -> None:
    b, pc = _read(tmp_path, "scrape.prom", EXPO, scrape_ts_us=1784009558000000)
    c = b.columns
    got = {
        (k, m): (v, h, pod, ns, mig)
        for k, m, v, h, pod, ns, mig in zip(
            c["gpu_key"],
            c["metric"],
            c["value"],
            c["host"],
            c["pod"],
            c["namespace"],
            c["mig_profile"],
            strict=True,
        )
    }
    assert got[("GPU-1", "gpu_util_pct")] == (100.0, "node-a", "p0", "ml", "")
    assert got[("GPU-1", "sm_active_ratio")] == (0.183, "node-a", "p0", "ml", "")  # Hostname + exported_*
    assert got[("GPU-2/mig1", "fb_used_mib")] == (
        512.0,
        "node-b",
        "",
        "",
        "3g.40gb",
    )  # lower-cased names, MIG
    assert ("node-z:0", "gpu_util_pct") in got  # no timestamp: scrape time used, counted
    kinds = _kinds(pc)
    assert kinds == {
        "missing_value": 1,
        "unknown_metric": 1,
        "missing_labels": 1,
        "no_timestamp": 1,
        "malformed_line": 1,
        "out_of_range": 1,
    }


def test_query_range_json(tmp_path: Path) -> None:
    doc = {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {
                    "metric": {
                        "__name__": "DCGM_FI_PROF_SM_ACTIVE",
                        "Hostname": "h",
                        "gpu": "3",
                        "UUID": "GPU-9",
                    },
                    "values": [[1784009558, "0.5"], [1784009618, "NaN"], [1784009678, "x"]],
                },
                {"metric": {"gpu": "0", "hostname": "h"}, "values": [[1784009558, "1"]]},
            ],
        },
    }
    b, pc = SampleBatch(), ProblemCounter()
    n = read_query_range_json(doc, source="q.json", batch=b, problems=pc)
    assert n == 3 and b.columns["value"] == [0.5] and b.columns["gpu_index"] == [3]
    assert _kinds(pc) == {"missing_value": 1, "malformed_line": 1, "unknown_metric": 1}
    with pytest.raises(ConfigFileError, match="bad_data"):
        read_query_range_json(
            {"status": "error", "errorType": "bad_data", "error": "parse error"},
            source="q",
            batch=b,
            problems=pc,
        )
    with pytest.raises(ConfigFileError, match="not a Prometheus API response"):
        read_query_range_json([], source="q", batch=b, problems=pc)


def test_cloudwatch_csv(tmp_path: Path) -> None:
    text = (
        "Timestamp,MetricName,Value,Unit,host,index,name,InstanceId,InstanceType\n"
        "2026-07-14T08:00:00Z,nvidia_smi_utilization_gpu,55,Percent,ip-10-0-0-1,0,NVIDIA A10G,i-1,g5.xlarge\n"
        "2026-07-14T08:00:00Z,nvidia_smi_memory_used,1073741824,Bytes,ip-10-0-0-1,0,NVIDIA A10G,i-1,g5.xlarge\n"
        "2026-07-14T08:00:00,nvidia_smi_memory_used,5,Bytes,ip-10-0-0-1,0,NVIDIA A10G,i-1,g5.xlarge\n"
        "2026-07-14T08:00:00Z,nvidia_smi_fan_speed,5,Percent,ip-10-0-0-1,0,NVIDIA A10G,i-1,g5.xlarge\n"
    )
    b, pc = _read(tmp_path, "cw.csv", text)
    assert sorted(zip(b.columns["metric"], b.columns["value"], strict=True)) == [
        ("fb_used_mib", 1024.0),
        ("gpu_util_pct", 55.0),
    ]
    assert b.columns["instance_type"] == ["g5.xlarge", "g5.xlarge"]
    assert _kinds(pc) == {"malformed_line": 1, "unknown_metric": 1}
    with pytest.raises(ConfigFileError, match="lacks the columns"):
        _read(tmp_path, "cw2.csv", "Timestamp,MetricName\n1,2\n", input_format="cloudwatch")


def test_unknown_format_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="Cannot tell the format"):
        _read(tmp_path, "x.txt", "hello world\n")


def test_dcgm_blank_sentinels() -> None:
    assert (
        is_dcgm_blank(9223372036854775794.0)
        and is_dcgm_blank(2147483632.0)
        and is_dcgm_blank(140737488355328.0)
    )
    assert not is_dcgm_blank(100.0)


_FIRST = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
_NAMES = st.builds(
    lambda a, b: a + b, st.sampled_from(_FIRST), st.text(alphabet=_FIRST + "0123456789", max_size=8)
)
_VALUES = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters='\\"\n'), max_size=12
)


@given(st.dictionaries(_NAMES, _VALUES, max_size=5))
def test_label_parser_round_trip(labels: dict[str, str]) -> None:
    text = ",".join(f'{k}="{v}"' for k, v in labels.items())
    assert parse_labels(text) == labels


def test_exposition_direct_counts_lines() -> None:
    b, pc = SampleBatch(), ProblemCounter()
    n = read_exposition("# only comments\n\n", source="s", scrape_ts_us=0, batch=b, problems=pc)
    assert n == 0 and len(b) == 0


def test_openmetrics_timestamps_are_seconds(tmp_path: Path) -> None:
    text = (
        "# TYPE DCGM_FI_PROF_SM_ACTIVE gauge\n"
        'DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-1",Hostname="h"} 0.5 1784009558.5\n'
        "# EOF\n"
    )
    b, _ = _read(tmp_path, "data.om", text)
    assert b.ts_us == [1784009558500000]
