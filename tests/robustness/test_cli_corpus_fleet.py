"""The fleet half's bad-input corpus (issue 26): telemetry inputs (nvidia-smi CSV, dcgm-exporter text,
Prometheus JSON and a live Prometheus, CloudWatch), request traces, batch job files, batch fleets, sweep
files, fleet files, inventories, alert rules, spot traces, outputs and the environment, and the telemetry
store.

Every case states its outcome: exit 2 with one paragraph naming its key words, or exit 0 with sane figures
(no NaN/inf, no traceback) naming its key words; each within the 10 s alarm of ``cli_case_guard``. The cases
live in ``fleet_corpus_cases.py``; the generic damage matrix (every reader x truncated, NUL bytes, UTF-16/8
BOMs, CRLF, blank, symlink loop, dangling link, a link to /dev/zero, a FIFO, a 600 MiB sparse file,
Windows-1252, and alias bombs, deep nesting and wrong top levels for YAML/JSON) is expanded here.

Defects this corpus found and the fixes made with it (before -> after):

- ``telemetry findings -o STORE/manifest.json``: overwrote the store's manifest (store lost) -> refused as
  one of the command's inputs;
- a live Prometheus that streams without end: hung (httpx times out per read) -> cut at --timeout; a JSON
  list body: AttributeError traceback -> FetchError;
- a 600 MiB sparse file as a telemetry file, trace or job file: read whole (5-7 s) before "binary" ->
  named from its first 4 KiB;
- an alert rule ``for: 99999999d``: accepted, a rule that can never fire -> refused;
- ``sharing: mig`` on a workload limited to GPUs without MIG: "no offer holds the model" -> names the GPUs;
- a telemetry store manifest with malformed parts and Parquet files damaged inside: KeyError, TypeError and
  DuckDB tracebacks -> exit 2 naming the damaged store.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fleet_corpus_cases import (
    ENV_CASES,
    EXPO,
    JOBS,
    KINDS,
    TRACE,
    Case,
    damage_cases,
    materialise_case,
    output_cases,
)
from fleet_corpus_values import VALUE_CASES
from typer.testing import CliRunner

from gpufleet.cli.app import app

ROOT = Path(__file__).parents[2]
runner = CliRunner()

# ---- expected outcomes of the damage matrix ----------------------------------------------------------------
_FMT = {kind: fmt for kind, (_, _, _, fmt) in KINDS.items()}
_TELEMETRY_TEXT = {"smi", "dcgm", "cloudwatch"}  # line readers: a bad line is counted, the rest stored
_BLANK = {  # a file of blank lines, per reader
    "smi": "empty",
    "dcgm": "holds no samples",
    "promjson": "not valid JSON",
    "cloudwatch": "empty",
    "trace": "empty",
    "jobs": "empty",
    "spottrace": "not valid JSON",
}
_TRUNCATED = {
    "promjson": "not valid JSON",
    "jobs": "line 2",
    "sweep": "grid",
    "spottrace": "not valid JSON",
}
_TOP_LEVEL = {"promjson": "not a Prometheus API response", "spottrace": "SkyPilot"}


def _expected(kind: str, damage: str) -> tuple[bool, tuple[str, ...]]:
    """(exits 0, key words) of reader ``kind`` given the damaged file."""
    fmt = _FMT[kind]
    if damage in ("utf16-bom", "utf8-bom", "crlf"):
        return True, ()  # decoded and read as the valid file
    if damage == "truncated":
        if kind in _TELEMETRY_TEXT:
            return True, ("malformed_line",)  # the cut line counted and dropped, the others stored
        if kind in ("trace", "rules"):
            return True, ()  # the cut ends on a well-formed row / rule: the rows before it are used
        return False, (_TRUNCATED.get(kind, "not valid YAML"),)
    if damage == "whitespace-only":
        return False, (_BLANK.get(kind, "not valid YAML"),)
    if damage == "sparse-600mib":
        return False, ("NUL bytes",) if fmt in ("csv", "text") or kind == "promjson" else ("larger than",)
    if damage in ("top-level-list", "nan-literal"):
        return False, (_TOP_LEVEL.get(kind, "mapping"),)
    return False, {
        "nul-bytes": ("NUL bytes",),
        "symlink-loop": ("Too many levels of symbolic links",),
        "dangling-link": ("does not exist",),
        "dev-zero-link": ("device",),
        "fifo": ("FIFO",),
        "cp1252": ("not UTF-8", "Latin-1"),
        "alias-bomb": ("aliases",),
        "deep-nesting": ("nesting deeper",),
    }[damage]


DAMAGE_CASES = [
    Case(
        f"{kind}:{damage}",
        argv,
        {f"f{suffix}": content, **({"jobs.csv": JOBS} if kind == "sweep" else {})},  # the sweep's job file
        *reversed(_expected(kind, damage)),
    )
    for kind, damage, argv, suffix, content in damage_cases()
]


# ---- the telemetry store, damaged --------------------------------------------------------------------------
def _edit_manifest(edit: Callable[[dict[str, object]], object]) -> Callable[[Path], None]:
    def make(store: Path) -> None:
        doc = json.loads((store / "manifest.json").read_text())
        edit(doc)
        (store / "manifest.json").write_text(json.dumps(doc))

    return make


def _parquet(store: Path, kind: str = "samples") -> Path:
    return sorted((store / kind).rglob("*.parquet"))[0]


def _overwrite(start: int, length: int, kind: str = "samples") -> Callable[[Path], None]:
    def make(store: Path) -> None:
        f = _parquet(store, kind)
        data = bytearray(f.read_bytes())
        data[start : start + length] = b"A" * length
        f.write_bytes(bytes(data))

    return make


def _part0(doc: dict[str, object]) -> dict[str, object]:
    parts = doc["parts"]
    assert isinstance(parts, list)
    return parts[0]  # type: ignore[no-any-return]


STORE_DAMAGE: dict[str, tuple[Callable[[Path], object], tuple[str, ...]]] = {
    "manifest-binary": (lambda s: (s / "manifest.json").write_bytes(b"\xff\xfe\x00"), ("cannot be read",)),
    "manifest-empty": (lambda s: (s / "manifest.json").write_bytes(b""), ("cannot be read",)),
    "manifest-truncated": (
        lambda s: (s / "manifest.json").write_bytes((s / "manifest.json").read_bytes()[:40]),
        ("cannot be read",),
    ),
    "manifest-foreign": (lambda s: (s / "manifest.json").write_text('{"format": "x"}'), ("not a gpufleet",)),
    "manifest-parts-string": (_edit_manifest(lambda d: d.update(parts="abc")), ("must be lists",)),
    "manifest-part-bad-keys": (_edit_manifest(lambda d: d.update(parts=[{"x": 1}])), ("part 0",)),
    "manifest-part-null-ts": (
        _edit_manifest(lambda d: _part0(d).update(min_ts_us=None)),
        ("not whole numbers",),
    ),
    "manifest-part-escapes": (
        _edit_manifest(lambda d: _part0(d).update(file="../../etc/passwd")),
        ("not inside",),
    ),
    "manifest-no-series": (_edit_manifest(lambda d: d.pop("series_files")), ("must be lists",)),
    "manifest-ts-reversed": (
        _edit_manifest(lambda d: _part0(d).update(min_ts_us=2**62)),
        ("first timestamp after its last",),
    ),
    "parquet-missing": (lambda s: _parquet(s).unlink(), ("is missing",)),
    "parquet-truncated": (
        lambda s: _parquet(s).write_bytes(_parquet(s).read_bytes()[:100]),
        ("not a whole Parquet file",),
    ),
    "parquet-pages-overwritten": (_overwrite(4, 56), ("damaged",)),
    "parquet-footer-length": (  # the 4 bytes before the closing magic give the footer's length
        lambda s: _overwrite(_parquet(s).stat().st_size - 8, 4)(s),
        ("damaged",),
    ),
    "series-file-truncated": (
        lambda s: _parquet(s, "series").write_bytes(b"PAR1" + b"\0" * 20 + b"PAR1"),
        ("damaged",),
    ),
}
STORE_COMMANDS = {
    "findings": ["telemetry", "findings", "--store", "{store}"],
    "alerts": ["telemetry", "alerts", "--store", "{store}"],
    "ingest": ["telemetry", "ingest", "{more}", "--store", "{store}"],
}
STORE_CASES = [
    pytest.param(cmd, damage, id=f"store-{damage}:{cmd}")
    for damage in STORE_DAMAGE
    for cmd in STORE_COMMANDS
    if not (cmd == "alerts" and damage.startswith("manifest-part"))  # the same reader as findings
]


# ---- a live Prometheus on 127.0.0.1 ------------------------------------------------------------------------
def _matrix_body() -> bytes:
    now = int(time.time()) - 3600
    values = [[now + 60 * k, str(40 + k)] for k in range(5)]
    metric = {"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": "h", "gpu": "0", "UUID": "GPU-9"}
    doc = {
        "status": "success",
        "data": {"resultType": "matrix", "result": [{"metric": metric, "values": values}]},
    }
    return json.dumps(doc).encode()


class _Prometheus(http.server.BaseHTTPRequestHandler):
    """Behaves by the first path segment: ok, slow, error500, garbage, html, list, stream, nan."""

    def log_message(self, *_: object) -> None:
        pass

    def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        mode = self.path.strip("/").split("/")[0]
        try:
            if mode == "ok":
                self._send(200, _matrix_body())
            elif mode == "slow":
                time.sleep(3)
                self._send(200, _matrix_body())
            elif mode == "error500":
                self._send(500, b'{"status": "error", "errorType": "internal", "error": "boom"}')
            elif mode == "garbage":
                self._send(200, bytes(range(256)) * 4, "application/octet-stream")
            elif mode == "html":
                self._send(200, b"<html><body>Grafana</body></html>", "text/html")
            elif mode == "list":
                self._send(200, b"[1, 2, 3]")
            elif mode == "nan":
                self._send(200, _matrix_body().replace(b'"40"', b'"NaN"').replace(b'"41"', b'"1e308"'))
            elif mode == "stream":  # a body that never ends
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"status": "success", "data": {"resultType": "matrix", "result": [')
                for _ in range(600):
                    self.wfile.write(b" " * 64)
                    self.wfile.flush()
                    time.sleep(0.05)
            else:
                self._send(404, b"not found", "text/plain")
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture(scope="module")
def prometheus() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Prometheus)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


PROM_CASES: list[tuple[str, bool, tuple[str, ...]]] = [
    # (mode, exits 0, words)
    ("ok", True, ("stored 5 samples",)),
    ("nan", True, ("stored 3 samples", "missing_value")),
    ("down", False, ("cannot be reached",)),
    ("slow", False, ("did not answer within 1 s",)),
    ("error500", False, ("HTTP 500", "internal")),
    ("garbage", False, ("not JSON",)),
    ("html", False, ("not JSON", "UI or proxy page")),
    ("list", False, ("not an API response",)),
    ("stream", False, ("did not finish answering within 1 s",)),
    ("notfound", False, ("HTTP 404",)),
]


# ---- running -----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("fleet-corpus")
    (d / "jobs.csv").write_bytes(JOBS)
    (d / "t.csv").write_bytes(TRACE)
    (d / "e.prom").write_bytes(EXPO)
    res = runner.invoke(app, ["telemetry", "ingest", str(d / "e.prom"), "--store", str(d / "store")])
    assert res.exit_code == 0, res.output
    return {"store": str(d / "store"), "jobs": str(d / "jobs.csv"), "trace": str(d / "t.csv")}


def _own_store(shared: dict[str, str], tmp: Path) -> dict[str, str]:
    """``shared`` with ``{store}`` a copy of the store (cases may write or damage it)."""
    shutil.copytree(shared["store"], tmp / "own-store")
    return {**shared, "store": str(tmp / "own-store")}


_NON_FINITE = re.compile(r"(?<![\w.])(nan|-?inf(inity)?)(?![\w])", re.IGNORECASE)


def _check(case: Case, code: int, out: str, exc: BaseException | None) -> None:
    assert not isinstance(exc, TimeoutError), f"hang: {case.id}"
    assert "Traceback" not in out, out[-1500:]
    flat = " ".join(out.split())
    if case.ok:
        assert code == case.code, f"{case.id}: exit {code} ({exc!r}): {flat[-800:]}"
        figures = re.split(r"\b(?:dropped|warning): ", flat)[0]  # the counted problems quote the input lines
        assert not _NON_FINITE.search(figures), f"{case.id}: a non-finite figure in: {figures[-800:]}"
    else:
        assert code == 2, f"{case.id}: exit {code} ({exc!r}): {flat[-800:]}"
        paragraphs = re.findall(r"^Error:", out, re.MULTILINE)
        assert len(paragraphs) <= 1, f"{case.id}: more than one paragraph: {flat[-800:]}"
    for w in case.words:
        assert w.lower() in flat.lower(), f"{case.id}: {w!r} not in: {flat[-800:]}"


def _run(case: Case, tmp: Path, shared: dict[str, str]) -> None:
    argv = materialise_case(case, tmp, _own_store(shared, tmp))
    res = runner.invoke(app, argv)
    _check(case, res.exit_code, res.output, res.exception)


IN_PROCESS = [*DAMAGE_CASES, *VALUE_CASES, *output_cases()]


@pytest.mark.parametrize("case", IN_PROCESS, ids=[c.id for c in IN_PROCESS])
def test_case(case: Case, tmp_path: Path, shared: dict[str, str]) -> None:
    _run(case, tmp_path, shared)


@pytest.mark.parametrize(("cmd", "damage"), STORE_CASES)
def test_damaged_store(cmd: str, damage: str, tmp_path: Path, shared: dict[str, str]) -> None:
    """A store whose manifest or Parquet files are damaged: exit 2 naming the store, the files untouched
    (an ingest into it refuses before writing)."""
    subs = _own_store(shared, tmp_path)
    store = Path(subs["store"])
    make, words = STORE_DAMAGE[damage]
    make(store)
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file() and p.name != ".lock"}
    (tmp_path / "more.prom").write_bytes(EXPO.replace(b" 4", b" 5"))
    argv = [
        a.replace("{store}", str(store)).replace("{more}", str(tmp_path / "more.prom"))
        for a in STORE_COMMANDS[cmd]
    ]
    res = runner.invoke(app, argv)
    _check(Case(f"store-{damage}:{cmd}", argv, words=words), res.exit_code, res.output, res.exception)
    after = {p: p.read_bytes() for p in store.rglob("*") if p.is_file() and p.name != ".lock"}
    assert after == before, "a damaged store was changed"


@pytest.mark.parametrize(("mode", "ok", "words"), PROM_CASES, ids=[m for m, _, _ in PROM_CASES])
def test_live_prometheus(
    mode: str, ok: bool, words: tuple[str, ...], prometheus: str, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}" if mode == "down" else f"{prometheus}/{mode}"
    start = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 7200))
    argv = ["telemetry", "ingest", "--prometheus", url, "--start", start, "--step", "60s", "--timeout", "1"]
    t0 = time.monotonic()
    res = runner.invoke(app, [*argv, "--store", str(tmp_path / "st")])
    _check(Case(f"prometheus-{mode}", argv, words=words, ok=ok), res.exit_code, res.output, res.exception)
    assert time.monotonic() - t0 < 8, "a Prometheus that does not answer must be given up on at --timeout"


@pytest.mark.parametrize("case", ENV_CASES, ids=[c.id for c in ENV_CASES])
def test_environment(case: Case, tmp_path: Path, shared: dict[str, str]) -> None:
    """Run in a subprocess: the encoding and locale are read at interpreter start."""
    argv = materialise_case(case, tmp_path, _own_store(shared, tmp_path))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "GPUFLEET_DATA_DIR": str(tmp_path / "data")}
    env["HOME"] = str(tmp_path / "home")
    for key, value in case.env.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    proc = subprocess.run(
        [sys.executable, "-c", "from gpufleet.cli.entry import main; main()", *argv],
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    out = proc.stdout.decode("utf-8", "replace") + proc.stderr.decode("utf-8", "replace")
    _check(case, proc.returncode, out, None)


def test_corpus_size() -> None:
    n = len(IN_PROCESS) + len(STORE_CASES) + len(PROM_CASES) + len(ENV_CASES)
    assert n >= 250, n


@pytest.fixture(autouse=True)
def _isolated(cli_case_guard: None) -> None:
    """Every case of this module runs under the shared guard (own data dir, 10 s alarm)."""
