"""The HTML report is one self-contained file with its charts inline."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from gpufleet.report import render_html, render_text

from . import samples

CASES = [
    samples.recommendation,
    samples.infeasible,
    samples.cannot_fit,
    samples.migration,
    samples.scenario_set,
]


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


@pytest.mark.parametrize("make", CASES)
def test_self_contained(make: object) -> None:
    html = render_html(make())  # type: ignore[operator]
    p = _Collect()
    p.feed(html)
    tags = {t for t, _ in p.tags}
    assert "script" not in tags and "link" not in tags and "img" not in tags
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", html), "no external URLs"
    assert "@import" not in html and "url(" not in html
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")


def test_set_report_has_all_three_charts() -> None:
    html = render_html(samples.scenario_set())
    assert "Savings by scenario" in html and "Recommended monthly cost by scenario" in html
    assert "Cost against throughput" in html
    assert "Monthly cost breakdown" in html and "Monthly cost: now vs after" in html
    assert html.count('class="mark pareto"') >= 2


def test_set_without_migrations_charts_best_cost() -> None:
    from dataclasses import replace

    s = samples.scenario_set()
    s = replace(s, results=tuple(replace(r, migration=None) for r in s.results))
    assert "Best option cost by scenario" in render_html(s)


def test_error_scenario_rendered() -> None:
    from dataclasses import replace

    s = samples.scenario_set()
    bad = replace(s.results[0], error="Unknown model 'x'.", migration=None)
    html = render_html(replace(s, results=(bad,)))
    assert "status-error" in html and "Unknown model &#x27;x&#x27;." in html


def test_render_text_rejects_table() -> None:
    from gpufleet.errors import InputError

    with pytest.raises(InputError, match="render_terminal"):
        render_text(samples.recommendation(), "table")


def test_render_text_dispatch() -> None:
    r = samples.recommendation()
    assert render_text(r, "json").startswith("{")
    assert render_text(r, "markdown").startswith("# Recommendation")
    assert render_text(r, "html").startswith("<!DOCTYPE html>")
