"""The input layer: every bad user file is a ConfigFileError that names the file and the fix."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpufleet.errors import ConfigFileError
from gpufleet.fileio import load_structured_file, read_csv_file, read_user_text


def _w(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        ("ok.yaml", b"a: 1\n", {"a": 1}),
        ("bom.json", b'\xef\xbb\xbf{"a": 1}', {"a": 1}),
        ("u16.yaml", "a: é\n".encode("utf-16"), {"a": "é"}),
        ("anchor.yaml", b"a: &x 1\n", {"a": 1}),
    ],
)
def test_valid_files_load(tmp_path: Path, name: str, data: bytes, expected: object) -> None:
    assert load_structured_file(_w(tmp_path, name, data)) == expected


@pytest.mark.parametrize(
    ("name", "data", "words"),
    [
        ("bomb.yaml", b"a: &a [1,2]\nb: [*a, *a]\n", "alias"),
        ("dup.yaml", b"a: 1\na: 2\n", "duplicate key"),
        ("dup.json", b'{"a":1,"a":2}', "duplicate key"),
        ("deep.json", b"[" * 5000 + b"]" * 5000, "nesting"),
        ("deep.yaml", b"[" * 5000 + b"]" * 5000, "nesting"),
        ("latin1.yaml", "a: é\n".encode("latin-1"), "Latin-1"),
        ("binary.yaml", bytes(range(256)) * 4, "binary"),
        ("syntax.json", b"{", "not valid JSON"),
    ],
)
def test_bad_structured_files(tmp_path: Path, name: str, data: bytes, words: str) -> None:
    with pytest.raises(ConfigFileError, match=words) as info:
        load_structured_file(_w(tmp_path, name, data), what="workload file")
    assert name in str(info.value)


def test_special_files_are_refused_without_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, words in [
        (fifo, "FIFO"),
        (tmp_path, "directory"),
        (Path("/dev/zero"), "device"),
        (tmp_path / "missing.yaml", "does not exist"),
        (Path("x" * 5000), "too long"),
    ]:
        with pytest.raises(ConfigFileError, match=words):
            read_user_text(path)


def test_size_limit(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="larger than"):
        read_user_text(_w(tmp_path, "big.yaml", b"a" * 2048), max_bytes=1024)


def test_csv_rows_and_limits(tmp_path: Path) -> None:
    header, rows = read_csv_file(_w(tmp_path, "a.csv", b" a ,b\n1,2\n\n3\n"), required_columns=["a"])
    assert header == ["a", "b"]
    assert rows == [(2, {"a": "1", "b": "2"}), (4, {"a": "3", "b": ""})]
    with pytest.raises(ConfigFileError, match="line 2"):
        read_csv_file(_w(tmp_path, "big.csv", b'a,b\n"' + b"x" * 200_000 + b'",1\n'))
    with pytest.raises(ConfigFileError, match="required columns"):
        read_csv_file(_w(tmp_path, "c.csv", b"x\n1\n"), required_columns=["a"])
    with pytest.raises(ConfigFileError, match="empty"):
        read_csv_file(_w(tmp_path, "e.csv", b""))
    with pytest.raises(ConfigFileError, match="3 cells"):
        read_csv_file(_w(tmp_path, "w.csv", b"a,b\n1,2,3\n"))


def test_atomic_write_gives_the_usual_file_mode(tmp_path: Path) -> None:
    from gpufleet.fileio import atomic_write_text

    target = tmp_path / "report.html"
    atomic_write_text(target, "x")
    umask = os.umask(0)
    os.umask(umask)
    assert (target.stat().st_mode & 0o777) == 0o666 & ~umask
    target.chmod(0o640)
    atomic_write_text(target, "y")
    assert (target.stat().st_mode & 0o777) == 0o640


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["recommend", "{f}"], "Workload file"),
        (["plan", "{f}"], "Fleet file"),
        (["config", "check", "{f}"], "top level"),
    ],
)
def test_an_empty_file_is_called_empty_not_a_python_type(tmp_path: Path, argv: list[str], words: str) -> None:
    from typer.testing import CliRunner

    from gpufleet.cli.app import app

    f = _w(tmp_path, "empty.yaml", b"# only a comment\n")
    res = CliRunner().invoke(app, [a.replace("{f}", str(f)) for a in argv])
    assert res.exit_code == 2, res.output
    assert words in res.output and "the file is empty" in res.output and "NoneType" not in res.output
