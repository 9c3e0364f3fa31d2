"""The CLI consoles are made on first use (no rich import for JSON output) but behave as if made at start-up:
environment read then, later size reads live, attributes and ``with`` go to the real console."""

from __future__ import annotations

import pytest

from gpufleet.cli.console import _LazyConsole


def test_size_fixed_by_the_environment_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "77")
    lazy = _LazyConsole()
    monkeypatch.setenv("COLUMNS", "133")
    assert lazy.width == 77  # as a Console() made when COLUMNS was 77


def test_size_not_fixed_follows_the_live_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    lazy = _LazyConsole()
    monkeypatch.setenv("COLUMNS", "99")
    assert lazy.width == 99
    monkeypatch.setenv("COLUMNS", "101")
    assert lazy.width == 101


def test_no_color_read_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    lazy = _LazyConsole(force_terminal=True)
    monkeypatch.delenv("NO_COLOR")
    assert lazy.no_color is True


def test_attributes_and_context_manager_reach_the_real_console(monkeypatch: pytest.MonkeyPatch) -> None:
    lazy = _LazyConsole(stderr=True)
    assert lazy.stderr is True
    monkeypatch.setattr(lazy, "_width", 55)
    assert lazy.width == 55
    with lazy.capture() as cap:
        lazy.print("hello")
    assert cap.get() == "hello\n"
    with lazy as real:
        assert real.width == 55
    assert repr(lazy).startswith("<console width=55")
