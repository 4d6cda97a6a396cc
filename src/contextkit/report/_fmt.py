"""Formatting shared by the page's sections: escaping, money, shares, tables of escaped cells."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from html import escape


def e(text: object) -> str:
    return escape(str(text), quote=True)


def usd(value: float | None, digits: int = 4) -> str:
    return "unknown" if value is None or math.isnan(value) else f"${value:,.{digits}f}"


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def times(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def table(head: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[int] = ()) -> str:
    """An HTML table (in a box that scrolls sideways when it is wider than the page); cells are
    already-escaped HTML; ``numeric`` columns align right."""
    cls = [' class="n"' if i in numeric else "" for i in range(len(head))]
    out = ['<div class="scroll"><table><thead><tr>']
    out.extend(f"<th{c}>{e(h)}</th>" for h, c in zip(head, cls, strict=True))
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join(f"<td{c}>{v}</td>" for v, c in zip(row, cls, strict=True)))
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


__all__ = ["e", "pct", "table", "times", "usd"]
