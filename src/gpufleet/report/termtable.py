"""Terminal tables that keep money and status columns whole at 80 columns and in pipes.

Rich shrinks every column of a table wider than the console, and a cell that does not fit its column ends
in an ellipsis: in an 80-column terminal or a pipe (rich's default width there is 80) a plan's "$/month"
column read "$11…". :func:`whole_table` builds the table so that money and status cells are never cut:
those columns do not wrap and are at least as wide as their longest cell (``no_wrap`` and ``min_width``);
every other column folds (wraps) to make room. A table that would still break a word of a cell there
(``northc/entral/us``) is printed stacked instead, one block per row with a header and its value per line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

#: a money cell: ``$1,234``, ``-$12.34``, ``$0.0123/h`` (optionally a trailing unit or percentage)
_MONEY = re.compile(r"^-?\$[\d,.]+(?:[kKMB])?(?:/[\w.-]+)?(?: \([\d.,]+ ?%\))?$")
#: a number cell (counts, hours, percentages): kept whole as well, short by nature
_NUMBER = re.compile(r"^-?[\d,.]+(?: ?%)?$")
#: cells that mean "no value" in a money or number column
_EMPTY = frozenset({"", "-", "n/a"})
#: the widest a kept-whole column may claim [characters]; a longer cell folds rather than squeeze the rest
MAX_WHOLE_WIDTH = 24


def is_money_column(cells: Iterable[str]) -> bool:
    """Whether every non-empty cell of a column is a dollar amount (and at least one is)."""
    seen = False
    for c in cells:
        if c in _EMPTY:
            continue
        if not _MONEY.match(c):
            return False
        seen = True
    return seen


def _is_number_column(cells: Iterable[str]) -> bool:
    seen = False
    for c in cells:
        if c in _EMPTY:
            continue
        if not _NUMBER.match(c):
            return False
        seen = True
    return seen


def whole_columns(
    headers: Sequence[str], rows: Sequence[Sequence[str]], status: Iterable[str] = ()
) -> set[int]:
    """Indices of the columns kept whole: money and number columns (by their cells) and the ``status``
    headers (finding, pay kind, risk level, strategy: a cut word reads as another word)."""
    wanted = set(status)
    out = set()
    for j, h in enumerate(headers):
        cells = [str(r[j]) for r in rows if j < len(r)]
        if h in wanted or is_money_column(cells) or _is_number_column(cells):
            out.add(j)
    return out


class WholeTable:
    """A table laid out at render time for the console's width: the kept-whole columns (money, numbers,
    status) get their longest cell; the other columns share what is left in proportion to their longest
    cell and fold (wrap, breaking long words) inside it. Rich's own shrinking cuts any column, money
    included, once the minimum widths add up to more than the console."""

    def __init__(
        self,
        headers: Sequence[str],
        rows: Sequence[Sequence[str]],
        *,
        title: str | None,
        status: Iterable[str],
        right: Iterable[str],
        table_kw: dict[str, object],
    ) -> None:
        self.headers = list(headers)
        self.rows = [[str(c) for c in r] for r in rows]
        self.title = title
        self.status = set(status)
        self.right = set(right)
        self.keep = whole_columns(self.headers, self.rows, self.status)
        self.table_kw = table_kw

    def longest(self, j: int, *, header: bool) -> int:
        cells = [r[j] for r in self.rows if j < len(r)]
        widest = max((max((len(x) for x in c.splitlines()), default=0) for c in cells), default=0)
        if header:
            widest = max(widest, max((len(w) for w in self.headers[j].split()), default=0))
        return widest

    def table(self, max_width: int) -> Table:
        n = len(self.headers)
        # kept columns: their longest cell; then, while the other columns keep 3 characters each, widened
        # toward their longest header word (a header may fold; a cell never does)
        kept = {j: min(max(self.longest(j, header=False), 1), MAX_WHOLE_WIDTH) for j in self.keep}
        other = [j for j in range(n) if j not in self.keep]
        natural = {j: max(self.longest(j, header=True), 1) for j in other}
        overhead = n + 1  # one space between columns and at each edge
        slack = max_width - overhead - sum(kept.values()) - sum(min(3, natural[j]) for j in other)
        for j in sorted(self.keep):
            want = min(self.longest(j, header=True), MAX_WHOLE_WIDTH) - kept[j]
            grow = max(0, min(want, slack))
            kept[j] += grow
            slack -= grow
        room = max_width - overhead - sum(kept.values())
        widths: dict[int, int | None] = dict.fromkeys(other)
        if other and sum(natural.values()) > room:
            total = sum(natural.values())
            for j in other:
                widths[j] = max(3, room * natural[j] // total)
        kw = dict(self.table_kw)
        # a header rule and no vertical lines: 1 character between columns instead of 3
        kw.setdefault("box", box.SIMPLE_HEAD)
        kw.setdefault("pad_edge", False)
        kw.setdefault("padding", (0, 0))
        kw.setdefault("title_justify", "left")
        table = Table(title=self.title, **kw)  # type: ignore[arg-type]
        for j, h in enumerate(self.headers):
            numeric = j in self.keep and h not in self.status
            justify = "right" if numeric or h in self.right else "left"
            if j in self.keep:
                width = max(kept[j], 1)
                table.add_column(Text(h), justify=justify, overflow="fold", width=width)  # type: ignore[arg-type]
            else:
                table.add_column(Text(h), justify=justify, overflow="fold", width=widths[j])  # type: ignore[arg-type]
        for r in self.rows:  # Text: a "[cost]" in a cell or header is not rich markup
            table.add_row(*(Text(c) for c in r))
        return table

    def breaks_words(self, table: Table) -> bool:
        """Whether ``table`` (:meth:`table` at some width) breaks a word of a cell (``northc/entral/us``): a
        folded column narrower than the longest word of its cells."""
        for j, column in enumerate(table.columns):
            if j in self.keep or column.width is None:
                continue
            words = [w for r in self.rows if j < len(r) for w in r[j].split()]
            if words and max(len(w) for w in words) > column.width:
                return True
        return False

    def stacked(self, max_width: int) -> Group:
        """One block per row, its ``Header: value`` pairs packed into lines of ``max_width`` (a pair is never
        split unless it alone is wider): what a table too wide for the console becomes, so that no cell is
        broken inside a word."""
        sep = "  "
        parts: list[RenderableType] = []
        if self.title:
            parts.append(Text(self.title, style="italic"))
        for r in self.rows:
            block = Text()
            used = 0
            for h, c in zip(self.headers, r, strict=False):
                if c in _EMPTY:
                    continue
                pair = len(h) + 2 + len(c)
                if used and used + len(sep) + pair > max_width:
                    block.append("\n")
                    used = 0
                elif used:
                    block.append(sep)
                    used += len(sep)
                block.append(f"{h}: ", style="dim").append(c)
                used += pair
            parts.append(Rule(style="dim"))
            parts.append(block)
        return Group(*parts)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = self.table(options.max_width)
        yield self.stacked(options.max_width) if self.rows and self.breaks_words(table) else table


def whole_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    title: str | None = None,
    status: Iterable[str] = (),
    right: Iterable[str] = (),
    **table_kw: object,
) -> WholeTable:
    """A table of ``rows`` whose money, number and ``status`` columns are never cut (module doc), laid out
    for the width it is printed at; the ``right`` headers are right-aligned (money and numbers always are)."""
    return WholeTable(headers, rows, title=title, status=status, right=right, table_kw=table_kw)


__all__ = ["MAX_WHOLE_WIDTH", "WholeTable", "is_money_column", "whole_columns", "whole_table"]
