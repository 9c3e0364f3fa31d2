"""Bad-input corpus, seventh pass: output paths, the Python API as a caller uses it, environment variables.

Before the fix each case tests, it exited 0 (or returned) with a wrong result, or failed with a traceback:

- ``--format json -o report.html`` wrote JSON into a file a browser opens as a page (every command with
  ``-o``, ``--parquet``); an output name with a line break was written (``a<newline>b.json``);
- a telemetry store under a path with a quote (``it's``) was a DuckDB ParserException traceback and left its
  staging folder; a store path with a line break was created;
- ``GPUFLEET_DATA_DIR`` relative (a store per working folder), with spaces around it (a folder named by the
  spaces) or not UTF-8 (a DuckDB encoding traceback); a relative ``GPUFLEET_CACHE_DIR`` made cache folders in
  every working folder;
- API: ``ignore_memory="no"`` / ``flash_attention="no"`` / ``use_spot="no"`` read as true, ``zero_stage=True``
  as stage 1, ``load_offers("cat.csv")`` iterated letters ("t does not exist"), ``load_offers("")`` silently
  used the shipped catalog, ``Workload(providers="aws")`` filtered providers a, w, s, a Workload with a NaN
  rate or a blank name reached the engine ("internal check failed"), numpy integers were refused as "not an
  integer", ``get_spec(None)`` / ``run_workload_by_id(None)`` were AttributeErrors;
- GFO compatibility: a config folder that does not exist or is a file was silently skipped.

Read-only folders are not cased: the suite runs as root, whom chmod does not stop.
"""

from __future__ import annotations

import decimal
import errno
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from corpus_files import Content, materialise
from test_cli_corpus import _check, runner

import gpufleet as g
from gpufleet.cli.app import app
from gpufleet.errors import ConfigFileError, GpufleetError, InputError

ROOT = Path(__file__).parents[2]
DATA = ROOT / "tests" / "data"
SMI = (
    b"timestamp, index, uuid, name, memory.total [MiB], memory.used [MiB], utilization.gpu [%], "
    b"power.draw [W]\n"
    + b"".join(
        f"2026/07/14 08:1{k}:38.696, 0, GPU-aaaa, NVIDIA H100 80GB HBM3, 81559 MiB, 1000 MiB, 50 %, "
        "69.85 W\n".encode()
        for k in range(2)
    )
)
WORKLOAD_JSON = (
    b'{"name": "w", "model": "llama-3-8b", "task": "inference", "precision": "bf16", '
    b'"target_requests_per_s": 1}'
)
REC = ["recommend", "--model", "llama-3-8b", "--target-rps", "1"]
PLAN = ["plan", str(ROOT / "examples" / "fleets" / "multicloud.yaml"), "--no-savings"]
SWEEP = ["simulate", "sweep", str(DATA / "simulate" / "sweep.yaml"), "--workers", "1"]
INGEST = ["telemetry", "ingest", "{smi}", "--timezone", "UTC"]
FINDINGS = ["telemetry", "findings", "--store", "{store}"]

# (id, argv, files, words, the output path that must not exist afterwards)
OUTPUTS: list[tuple[str, list[str], dict[str, Content], list[str], str]] = [
    ("json-as-html", [*REC, "-f", "json", "-o", "{tmp}/r.html"], {}, [".html", "--format json"], "r.html"),
    ("html-as-json", [*REC, "-f", "html", "-o", "{tmp}/r.json"], {}, [".json", "--format html"], "r.json"),
    (
        "table-as-csv",
        [*FINDINGS, "--format", "json", "-o", "{tmp}/f.csv"],
        {},
        [".csv", "--format json"],
        "f.csv",
    ),
    ("plan-csv-as-json", [*PLAN, "-f", "csv", "-o", "{tmp}/p.json"], {}, [".json", "--format csv"], "p.json"),
    ("sweep-parquet-as-csv", [*SWEEP, "--parquet", "{tmp}/s.csv"], {}, ["--parquet", ".csv"], "s.csv"),
    ("newline-name", [*REC, "-f", "json", "-o", "{tmp}/a\nb.json"], {}, ["control character"], "a\nb.json"),
    (
        "tab-name",
        [*FINDINGS, "--format", "csv", "-o", "{tmp}/a\tb.csv"],
        {},
        ["control character"],
        "a\tb.csv",
    ),
    (
        "output-is-input",
        ["recommend", "{w}", "-f", "json", "-o", "{w}"],
        {"w.json": WORKLOAD_JSON},
        ["input files"],
        "",
    ),
    ("store-newline", [*INGEST, "--store", "{tmp}/s\nt"], {"smi.csv": SMI}, ["--store", "control"], "s\nt"),
]


@pytest.fixture(autouse=True)
def _isolated(cli_case_guard: None) -> None:
    """Every case of this module runs under the shared guard."""


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("bad7")
    (d / "smi.csv").write_bytes(SMI)
    res = runner.invoke(
        app, ["telemetry", "ingest", str(d / "smi.csv"), "--store", str(d / "st"), *INGEST[3:]]
    )
    assert res.exit_code == 0, res.output
    return d / "st"


def _no_leftovers(folder: Path) -> None:
    stray = [p.name for p in folder.iterdir() if p.name.endswith(".tmp") or p.name.startswith(".staging")]
    assert not stray, stray


@pytest.mark.parametrize(
    ("argv", "files", "words", "out"), [pytest.param(a, f, w, o, id=i) for i, a, f, w, o in OUTPUTS]
)
def test_bad7_output(
    store: Path, tmp_path: Path, argv: list[str], files: dict[str, Content], words: list[str], out: str
) -> None:
    subs = {**materialise(tmp_path, files), "store": str(store)}
    before = {p: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    _check(argv, words, subs)
    if out:
        assert not (tmp_path / out).exists()
    assert {p: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before  # inputs untouched
    _no_leftovers(tmp_path)


def test_disk_full_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC while writing (a full disk; /dev/full itself is refused as a special file): exit 2 naming the
    reason, the earlier report kept whole, no temporary file left."""
    target = tmp_path / "r.json"
    target.write_text("earlier report")

    def full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("gpufleet.fileio.os.fsync", full)
    _check([*REC, "-f", "json", "-o", str(target)], ["No space left on device", str(target)])
    assert target.read_text() == "earlier report"
    _no_leftovers(tmp_path)


# (id, variable, value, argv, words)
ENV: list[tuple[str, str, str, list[str], list[str]]] = [
    ("data-dir-relative", "GPUFLEET_DATA_DIR", "rel/data", INGEST, ["GPUFLEET_DATA_DIR", "relative"]),
    ("data-dir-padded", "GPUFLEET_DATA_DIR", " {tmp}/d ", INGEST, ["GPUFLEET_DATA_DIR", "spaces"]),
    ("data-dir-not-utf8", "GPUFLEET_DATA_DIR", "{tmp}/\udcff", INGEST, ["GPUFLEET_DATA_DIR", "UTF-8"]),
    ("data-dir-newline", "GPUFLEET_DATA_DIR", "{tmp}/a\nb", INGEST, ["GPUFLEET_DATA_DIR", "control"]),
]


@pytest.mark.parametrize(
    ("var", "value", "argv", "words"), [pytest.param(v, x, a, w, id=i) for i, v, x, a, w in ENV]
)
def test_bad7_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, var: str, value: str, argv: list[str], words: list[str]
) -> None:
    subs = materialise(tmp_path, {"smi.csv": SMI})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(var, value.replace("{tmp}", str(tmp_path)))
    _check(argv, words, subs)
    assert not (tmp_path / "rel").exists() and not (tmp_path / " ").exists()


def test_relative_cache_dir_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpufleet.cache import cache_dir

    monkeypatch.setenv("GPUFLEET_CACHE_DIR", "rel-cache")
    assert cache_dir().is_absolute()
    monkeypatch.setenv("GPUFLEET_CACHE_DIR", f" {tmp_path} ")
    assert cache_dir().is_absolute() and not str(cache_dir()).startswith(" ")
    monkeypatch.setenv("GPUFLEET_CACHE_DIR", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"


# ------------------------------------------------------------------------------------------------ API
MEM = {"model": "llama-3.1-8b", "task": "inference", "precision": "bf16", "gpu": "H100", "seq_len": 4096}
INF = {"model": "llama-3.1-8b", "gpu": "H100", "precision": "bf16", "input_len": 512, "output_len": 128}
TRAIN = {
    "model": "llama-3.1-8b",
    "task": "pretrain",
    "gpu": "H100",
    "precision": "bf16",
    "gpu_count": 8,
    "global_batch": 64,
    "seq_len": 4096,
}
W = {
    "name": "w",
    "model": "llama-3.1-8b",
    "task": "inference",
    "precision": "bf16",
    "target_requests_per_s": 1.0,
}


def _gfo(**kw: Any) -> Callable[[], object]:
    def run() -> object:
        from gpu_migration_analyzer import AWSGPUMigrationAnalyzer

        return AWSGPUMigrationAnalyzer(**kw)

    return run


def _gfo_call(method: str, *args: Any, **kw: Any) -> Callable[[], object]:
    def run() -> object:
        from gpu_migration_analyzer import AWSGPUMigrationAnalyzer

        return getattr(AWSGPUMigrationAnalyzer(), method)(*args, **kw)

    return run


def _workload(**kw: Any) -> Callable[[], object]:
    return lambda: g.recommend(g.Workload(**{**W, **kw}))


# (id, call, error class, words)
API: list[tuple[str, Callable[[], object], type[GpufleetError], list[str]]] = [
    (
        "infer-ignore-memory-no",
        lambda: g.estimate_inference(**INF, ignore_memory="no"),
        InputError,
        ["ignore_memory"],
    ),
    (
        "train-flash-no",
        lambda: g.estimate_training(**TRAIN, flash_attention="no"),
        InputError,
        ["flash_attention"],
    ),
    ("memory-zero-stage-true", lambda: g.estimate_memory(**MEM, zero_stage=True), InputError, ["zero_stage"]),
    (
        "train-tokens-decimal-nan",
        lambda: g.estimate_training(**TRAIN, train_tokens=decimal.Decimal("NaN")),
        InputError,
        ["train_tokens", "finite"],
    ),
    ("spec-none", lambda: g.get_spec(None), InputError, ["gpu", "required"]),  # type: ignore[arg-type]
    ("spec-list", lambda: g.get_spec(["H100"]), InputError, ["gpu", "text"]),  # type: ignore[arg-type]
    (
        "offers-str",
        lambda: g.load_offers(str(DATA / "user_catalogs" / "onprem.yaml")),
        InputError,
        ["user_catalogs", "letter by letter"],
    ),
    ("offers-blank", lambda: g.load_offers(""), InputError, ["user_catalogs", "single text"]),
    ("model-blank", lambda: g.resolve_model(" "), InputError, ["name_or_path", "blank"]),
    ("price-kind-none", lambda: g.prices_usd_per_hour(g.load_offers(), None), InputError, ["kind"]),  # type: ignore[arg-type]
    ("recommend-objective-blank", lambda: g.recommend(W, objective=""), InputError, ["objective", "allowed"]),
    ("recommend-limit-true", lambda: g.recommend(W, limit=True), InputError, ["limit", "boolean"]),
    ("recommend-blank-path", lambda: g.recommend(""), InputError, ["workload", "blank"]),
    ("workload-providers-str", _workload(providers="aws"), InputError, ["providers", "letter by letter"]),
    ("workload-gpu-choices-flat", _workload(gpu_choices=("H100",)), InputError, ["gpu_choices[0]"]),
    ("workload-rate-nan", _workload(target_requests_per_s=math.nan), InputError, ["target_requests_per_s"]),
    ("workload-np-nan", _workload(near_tie_fraction=np.float64("nan")), InputError, ["near_tie_fraction"]),
    ("workload-fallback-no", _workload(allow_fallback="no"), InputError, ["allow_fallback"]),
    ("workload-name-blank", _workload(name=""), InputError, ["name", "blank"]),
    ("workload-nodes-negative", _workload(max_nodes=-1), InputError, ["max_nodes", ">= 0"]),
    ("store-newline", lambda: g.TelemetryStore("a\nb"), InputError, ["control character"]),
    ("gfo-config-none", _gfo(config_dir=None), InputError, ["config_dir"]),
    ("gfo-config-file", _gfo(config_dir=str(ROOT / "README.md")), ConfigFileError, ["is a file"]),
    ("gfo-config-missing", _gfo(config_dir="/nonexistent/gfo"), ConfigFileError, ["does not exist"]),
    ("gfo-id-none", _gfo_call("run_workload_by_id", None), InputError, ["workload_id"]),
    ("gfo-set-list", _gfo_call("run_workload_set", ["a"]), InputError, ["set_name"]),
    ("gfo-precision-none", _gfo_call("get_model_size_gb", "SMALL", None), InputError, ["precision"]),
    ("gfo-spot-no", _gfo_call("generate_migration_report", "P5", 8, use_spot="no"), InputError, ["use_spot"]),
]


@pytest.mark.parametrize(("call", "error", "words"), [pytest.param(c, e, w, id=i) for i, c, e, w in API])
def test_bad7_api(call: Callable[[], object], error: type[GpufleetError], words: list[str]) -> None:
    with pytest.raises(error) as info:
        call()
    for w in words:
        assert w.lower() in str(info.value).lower(), str(info.value)


# ------------------------------------------------------------------------------------------------ near misses
def test_numpy_and_decimal_numbers_work_as_plain_ones() -> None:
    plain = g.estimate_memory(**MEM, tp=2)
    assert g.estimate_memory(**{**MEM, "seq_len": np.int32(4096)}, tp=np.int64(2)) == plain
    assert g.estimate_memory(**MEM, tp=2.0) == plain  # a whole float, as before
    from gpu_migration_analyzer import AWSGPUMigrationAnalyzer, ModelSize

    assert AWSGPUMigrationAnalyzer().get_model_size_gb(ModelSize.SMALL, "fp16") > 0


def test_workload_with_numpy_fields_recommends() -> None:
    rec = g.recommend(
        g.Workload(**{**W, "max_nodes": np.int64(4), "target_requests_per_s": decimal.Decimal("1")})
    )
    assert rec.status == "ok"
    assert rec.workload.max_nodes == 4 and type(rec.workload.max_nodes) is int


def test_user_catalog_as_a_list_still_loads() -> None:
    assert len(g.load_offers([str(DATA / "user_catalogs" / "onprem.yaml")])) > 0


GOOD: list[tuple[str, list[str], dict[str, Content]]] = [
    ("upper-case-suffix", [*REC, "-f", "json", "-o", "{tmp}/r.JSON"], {}),
    ("txt-suffix", [*REC, "-f", "json", "-o", "{tmp}/r.txt"], {}),
    ("no-suffix", [*FINDINGS, "--format", "csv", "-o", "{tmp}/findings"], {}),
    ("markdown-md", [*FINDINGS, "--format", "markdown", "-o", "{tmp}/f.md"], {}),
    ("store-with-quote", [*INGEST, "--store", "{tmp}/it's store"], {"smi.csv": SMI}),
    ("unicode-name", [*FINDINGS, "--format", "json", "-o", "{tmp}/Übersicht.json"], {}),
]


@pytest.mark.parametrize(("argv", "files"), [pytest.param(a, f, id=i) for i, a, f in GOOD])
def test_good(store: Path, tmp_path: Path, argv: list[str], files: dict[str, Content]) -> None:
    subs = {**materialise(tmp_path, files), "store": str(store), "tmp": str(tmp_path)}
    argv = [a.format(**subs) if "{" in a else a for a in argv]
    res = runner.invoke(app, argv)
    assert res.exit_code == 0, res.output
    _no_leftovers(tmp_path)


def test_store_with_quote_is_read_back(tmp_path: Path) -> None:
    subs = materialise(tmp_path, {"smi.csv": SMI})
    st = str(tmp_path / "it's")
    for argv in ([subs["smi"], *INGEST[3:]], [subs["smi"], *INGEST[3:]]):  # the second finds the duplicates
        res = runner.invoke(app, ["telemetry", "ingest", *argv, "--store", st])
        assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["telemetry", "findings", "--store", st, "--format", "json"])
    assert res.exit_code == 0 and '"gpus"' in res.output, res.output
    _no_leftovers(Path(st))
