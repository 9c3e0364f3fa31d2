"""Render recommendation results: terminal (rich renderables), JSON, Markdown and self-contained HTML.

The functions return strings or rich renderables; only the CLI prints or writes files.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpufleet.errors import InputError
from gpufleet.report.common import FORMATS, ReportFormat, Result
from gpufleet.report.html import render_html
from gpufleet.report.json_report import render_json, to_jsonable
from gpufleet.report.markdown import render_markdown
from gpufleet.report.terminal import render_terminal


def render_text(result: Result, fmt: str, *, assumptions: Sequence[str] = ()) -> str:
    """``result`` as a JSON, Markdown or HTML document (for ``table`` use :func:`render_terminal`)."""
    if fmt == "json":
        return render_json(result, assumptions=tuple(assumptions))
    if fmt == "markdown":
        return render_markdown(result, assumptions=assumptions)
    if fmt == "html":
        return render_html(result, assumptions=assumptions)
    raise InputError(
        f"Unknown report format {fmt!r} for a text document. Allowed: json, markdown, html "
        "(the terminal table is a rich renderable: use render_terminal)."
    )


__all__ = [
    "FORMATS",
    "ReportFormat",
    "Result",
    "render_html",
    "render_json",
    "render_markdown",
    "render_terminal",
    "render_text",
    "to_jsonable",
]
