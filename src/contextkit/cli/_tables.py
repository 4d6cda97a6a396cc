"""Tables that fit a terminal: every command's table is readable at 80 columns.

The rules, shared by ``compare``, ``replay``, ``cost``, ``inspect``, ``validate`` and ``demo``:

- numbers are never split across lines nor cut short: numeric columns are ``no_wrap`` and the
  figures are short by default (``15.9M`` tokens, ``$7.29``); ``--wide`` prints them whole
  (``15,912,334``, ``$7.2913``) for a wide terminal or a log;
- labels may wrap (rich folds the label column first when the table is too wide);
- a long path is shortened from the left (``…/project/session.jsonl``): its end names it.

rich is imported inside the functions, as everywhere in the command line (startup time).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from rich.table import Table

WideOption = Annotated[
    bool,
    typer.Option("--wide", help="Whole figures and paths (for a wide terminal or a log)."),
]
"""The ``--wide`` option of every command that prints a table."""

PATH_WIDTH = 30
"""Characters a path keeps in a table by default (``--wide``: all of it)."""


def table(title: str | None = None, caption: str | None = None) -> Table:
    """A table without outer borders, a rule under the header and one space between columns
    (the box's own separator)."""
    from rich import box  # noqa: PLC0415  (rich loads only when a command prints)
    from rich.table import Table  # noqa: PLC0415

    return Table(
        title=title,
        caption=caption,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 0),
        title_justify="left",
        caption_justify="left",
    )


def label_column(tab: Table, name: str) -> None:
    """A text column: wraps (folds) when the table needs the room."""
    tab.add_column(name, justify="left", overflow="fold")


def number_column(tab: Table, name: str) -> None:
    """A figure column: right-aligned, never wrapped, never cut."""
    tab.add_column(name, justify="right", no_wrap=True, overflow="ellipsis")


def tokens(value: float | None, wide: bool = False) -> str:
    """Tokens: ``987``, ``12.3k``, ``536k``, ``15.9M`` (``wide``: ``15,912,334``)."""
    if value is None:
        return "-"
    if wide:
        return f"{value:,.0f}"
    for size, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            scaled = value / size
            return f"{scaled:.1f}{unit}" if abs(scaled) < 100 else f"{scaled:.0f}{unit}"
    return f"{value:.0f}"


def money(value: float | None, wide: bool = False) -> str:
    """Dollars: ``$7.29``, ``$0.042``, ``$1,234`` (``wide``: four decimals); ``unknown`` when the
    price is not known."""
    if value is None:
        return "unknown"
    if wide:
        return f"${value:,.4f}"
    if abs(value) >= 1000:
        return f"${value:,.0f}"
    if abs(value) >= 1 or value == 0:
        return f"${value:,.2f}"
    return f"${value:.3f}" if abs(value) >= 0.01 else f"${value:.4f}"


def signed_money(value: float | None, wide: bool = False) -> str:
    """A difference in dollars: ``+$1.20``, ``-$0.031``."""
    if value is None:
        return "-"
    text = money(abs(value), wide)
    return ("-" if value < 0 else "+") + text


def percent(value: float | None) -> str:
    """A signed share: ``-44%``, ``+3%``."""
    return "-" if value is None else f"{value:+.0%}"


def short_path(path: str, wide: bool = False, width: int = PATH_WIDTH) -> str:
    """``path`` shortened from the left to ``width`` characters at a ``/`` where possible
    (``…/project/session.jsonl``); whole when ``wide`` or short enough."""
    if wide or len(path) <= width:
        return path
    tail = path[-(width - 2) :]
    cut = tail.find("/")
    if 0 <= cut < len(tail) - 1:
        tail = tail[cut + 1 :]
    return "…/" + tail


__all__ = [
    "PATH_WIDTH",
    "WideOption",
    "label_column",
    "money",
    "number_column",
    "percent",
    "short_path",
    "signed_money",
    "table",
    "tokens",
]
