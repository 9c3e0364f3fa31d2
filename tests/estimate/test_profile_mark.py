"""The shipped calibration profile is validated with pydantic once per gpufleet version and file content; a
validation mark in the user cache (gpufleet/cache.py) lets later processes read it without pydantic, with the
same result. Edited, foreign or stale marks and unwritable cache directories fall back to full validation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from gpufleet import cache
from gpufleet.errors import ConfigFileError
from gpufleet.estimate import profile as prof

SHIPPED = resources.files("gpufleet.estimate").joinpath("data", "profile.json").read_text(encoding="utf-8")


def test_known_valid_reading_equals_pydantic_validation() -> None:
    doc = json.loads(SHIPPED)
    fast = prof._known_valid_fields(doc)
    slow = prof._validated_fields(doc, "shipped")
    assert repr(fast) == repr(slow)  # same values and types (1 vs 1.0 would differ in repr)
    name = "estimate/data/profile.json (shipped)"
    a = prof._profile_from_text(SHIPPED, name, known_valid=True)
    b = prof._profile_from_text(SHIPPED, name, known_valid=False)
    assert prof.profile_to_dict(a) == prof.profile_to_dict(b)


def test_known_valid_falls_back_to_validation_on_a_foreign_document() -> None:
    text = json.dumps({"version": 1, "params": {}})
    with pytest.raises(ConfigFileError, match="field fitted_at"):  # pydantic's message, not a KeyError
        prof._profile_from_text(text, "x", known_valid=True)
    bad = json.loads(SHIPPED)
    bad["version"] = "1"  # pydantic (lax) would accept "1"; the known-valid reader refuses and validates
    assert prof._profile_from_text(json.dumps(bad), "x", known_valid=True).version == 1


def test_marks_are_keyed_by_namespace_and_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUFLEET_CACHE_DIR", str(tmp_path / "c"))
    assert not cache.is_marked_valid("profile", "ns", "text")
    cache.mark_valid("profile", "ns", "text")
    assert cache.is_marked_valid("profile", "ns", "text")
    assert not cache.is_marked_valid("profile", "ns", "text2")
    assert not cache.is_marked_valid("profile", "ns2", "text")
    (mark,) = (tmp_path / "c").iterdir()
    mark.write_text("0" * 64 + "\n")  # same name, foreign content
    assert not cache.is_marked_valid("profile", "ns", "text")
    mark.write_bytes(b"\xff\xfe")
    assert not cache.is_marked_valid("profile", "ns", "text")


def test_an_unwritable_cache_dir_means_no_mark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("GPUFLEET_CACHE_DIR", str(blocker / "cache"))  # under a file: mkdir fails
    cache.mark_valid("profile", "ns", "text")
    assert not cache.is_marked_valid("profile", "ns", "text")


_CHILD = (
    "import sys, json\n"
    "from gpufleet.estimate.profile import load_profile, profile_to_dict\n"
    "d = profile_to_dict(load_profile())\n"
    "print(json.dumps({'pydantic': 'pydantic' in sys.modules, 'profile': d}))\n"
)


def _child(cache_dir: Path) -> dict[str, object]:
    env = os.environ | {"GPUFLEET_CACHE_DIR": str(cache_dir)}
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, env=env, check=True)
    doc: dict[str, object] = json.loads(out.stdout)
    return doc


def test_second_process_reads_the_shipped_profile_without_pydantic(tmp_path: Path) -> None:
    first = _child(tmp_path / "c")
    assert first["pydantic"] is True  # validated, and marked
    assert len(list((tmp_path / "c").glob("profile-*.validated"))) == 1
    second = _child(tmp_path / "c")
    assert second["pydantic"] is False
    assert second["profile"] == first["profile"]
