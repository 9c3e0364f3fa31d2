"""Render recommendation results: terminal (rich renderables), JSON, Markdown and self-contained HTML.

The functions return strings or rich renderables; only the CLI prints or writes files.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gpufleet._lazy import lazy_getattr
from gpufleet.errors import InputError

if TYPE_CHECKING:
    from gpufleet.report.common import FORMATS, ReportFormat, Result
    from gpufleet.report.html import render_html
    from gpufleet.report.json_report import render_json, to_jsonable
    from gpufleet.report.markdown import render_markdown
    from gpufleet.report.terminal import render_terminal

#: Names load on first use (PEP 562): ``report.json_report`` alone does not import rich or the HTML renderer.
_LAZY: dict[str, str] = {
    "FORMATS": "gpufleet.report.common",
    "ReportFormat": "gpufleet.report.common",
    "Result": "gpufleet.report.common",
    "render_html": "gpufleet.report.html",
    "render_json": "gpufleet.report.json_report",
    "to_jsonable": "gpufleet.report.json_report",
    "render_markdown": "gpufleet.report.markdown",
    "render_terminal": "gpufleet.report.terminal",
}
__getattr__ = lazy_getattr(__name__, _LAZY)


def render_text(result: Result, fmt: str, *, assumptions: Sequence[str] = ()) -> str:
    """``result`` as a JSON, Markdown or HTML document (for ``table`` use :func:`render_terminal`)."""
    if fmt == "json":
        from gpufleet.report.json_report import render_json

        return render_json(result, assumptions=tuple(assumptions))
    if fmt == "markdown":
        from gpufleet.report.markdown import render_markdown

        return render_markdown(result, assumptions=assumptions)
    if fmt == "html":
        from gpufleet.report.html import render_html

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
