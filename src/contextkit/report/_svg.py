"""Charts as inline SVG strings: horizontal bars, stacked columns per call, a step line.

Contract: every function returns one ``<svg>`` element (no script, no external reference) whose
text, labels and tooltips (``<title>`` children, shown by the browser on hover) are escaped here:
callers pass plain strings, never markup. Each chart draws at least one element (an empty series
draws a "no data" text), sizes itself through its ``viewBox`` and stretches to the page's width.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

COLOURS = {
    "read": "#4c9a6a",
    "write": "#e0a030",
    "uncached": "#c8553d",
    "bar": "#3f6fb5",
    "line": "#3f6fb5",
    "marker": "#7b3fb5",
    "grid": "#dddddd",
    "text": "#333333",
}
_FONT = 'font-family="system-ui, sans-serif" font-size="11"'


def _e(text: str) -> str:
    return escape(text, quote=True)


def _svg(width: int, height: int, title: str, body: Sequence[str], kind: str) -> str:
    return (
        f'<svg class="chart {kind}" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'viewBox="0 0 {width} {height}" width="100%" preserveAspectRatio="xMinYMin meet" '
        f'{_FONT} fill="{COLOURS["text"]}"><title>{_e(title)}</title>' + "".join(body) + "</svg>"
    )


def _empty(title: str, kind: str) -> str:
    text = '<text x="10" y="24">no data</text>'
    return _svg(400, 40, title, [text], kind)


def nice_max(value: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten at or above ``value`` (1.0 for nothing)."""
    if not value > 0 or not math.isfinite(value):
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if step * power >= value:
            return float(step * power)
    return float(10 * power)  # pragma: no cover  (the loop ends at 10)


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    tip: str = ""


def bar_chart(
    bars: Sequence[Bar], title: str, fmt: Callable[[float], str], *, label_width: int = 260
) -> str:
    """One horizontal bar per item, its value written after it; the tip (or the label and value)
    on hover."""
    if not bars:
        return _empty(title, "bars")
    row, width = 20, 820
    top = max((b.value for b in bars), default=0.0)
    scale = (width - label_width - 90) / (top if top > 0 else 1.0)
    body = []
    for i, b in enumerate(bars):
        y = i * row + 4
        w = max(b.value * scale, 1.0) if b.value > 0 else 0.0
        tip = b.tip or f"{b.label}: {fmt(b.value)}"
        body.append(
            f"<g><title>{_e(tip)}</title>"
            f'<text x="{label_width - 6}" y="{y + 13}" text-anchor="end">{_e(_short(b.label))}'
            f'</text><rect x="{label_width}" y="{y + 2}" width="{w:.1f}" height="{row - 6}" '
            f'fill="{COLOURS["bar"]}"/><text x="{label_width + w + 4:.1f}" y="{y + 13}">'
            f"{_e(fmt(b.value))}</text></g>"
        )
    return _svg(width, len(bars) * row + 8, title, body, "bars")


def _short(label: str, limit: int = 36) -> str:
    """Long labels (paths) shortened from the left, where they differ least."""
    return label if len(label) <= limit else "…" + label[-(limit - 1) :]


@dataclass(frozen=True)
class Stack:
    """One call's input by cache class."""

    read: int
    write: int
    uncached: int
    tip: str = ""


_STACK_ORDER = ("read", "write", "uncached")


def stacked_columns(
    stacks: Sequence[Stack], title: str, *, markers: Sequence[int] = (), window: int | None = None
) -> str:
    """One column per call, stacked cache read / cache write / uncached from the bottom; a dashed
    line before each call in ``markers`` (compactions), and the context ``window`` as a line when
    it is within twice the peak (a 1M window does not flatten a 100k session)."""
    if not stacks:
        return _empty(title, "sawtooth")
    width, height, left, bottom, top_pad = 820, 200, 56, 22, 8
    peak = max(s.read + s.write + s.uncached for s in stacks)
    show_window = window is not None and 0 < window <= 2 * max(peak, 1)
    top = nice_max(max(peak, window or 0) if show_window else peak)
    plot_h = height - bottom - top_pad
    step = (width - left - 8) / len(stacks)
    bar_w = max(step * 0.85, 0.6)
    body = [*_y_axis(left, width, top_pad, plot_h, top), _x_ticks(len(stacks), left, step, height)]
    for i, s in enumerate(stacks):
        x, y = left + i * step, top_pad + plot_h
        rects = []
        for cls in _STACK_ORDER:
            h = getattr(s, cls) / top * plot_h
            if h <= 0:
                continue
            y -= h
            rects.append(
                f'<rect x="{x:.2f}" y="{y:.2f}" width="{bar_w:.2f}" height="{h:.2f}" '
                f'fill="{COLOURS[cls]}"/>'
            )
        tip = s.tip or f"call {i + 1}: read {s.read:,}, write {s.write:,}, uncached {s.uncached:,}"
        body.append(f"<g><title>{_e(tip)}</title>{''.join(rects)}</g>")
    for k in markers:
        if 0 <= k < len(stacks):
            x = left + k * step - (step - bar_w) / 2
            body.append(
                f'<line class="compaction" x1="{x:.2f}" x2="{x:.2f}" y1="{top_pad}" '
                f'y2="{top_pad + plot_h}" stroke="{COLOURS["marker"]}" stroke-width="1.5" '
                f'stroke-dasharray="4 3"><title>compaction before call {k + 1}</title></line>'
            )
    if show_window and window is not None:
        wy = top_pad + plot_h - window / top * plot_h
        body.append(
            f'<line x1="{left}" x2="{width - 8}" y1="{wy:.2f}" y2="{wy:.2f}" stroke="#999" '
            f'stroke-dasharray="2 2"><title>context window {window:,} tokens</title></line>'
        )
    return _svg(width, height, title, body, "sawtooth")


def _y_axis(left: int, width: int, top_pad: int, plot_h: float, top: float) -> list[str]:
    out = []
    for frac in (0.0, 0.5, 1.0):
        y = top_pad + plot_h - frac * plot_h
        out.append(
            f'<line x1="{left}" x2="{width - 8}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="{COLOURS["grid"]}"/><text x="{left - 4}" y="{y + 4:.1f}" '
            f'text-anchor="end">{_e(_tokens(top * frac))}</text>'
        )
    return out


def _x_ticks(n: int, left: int, step: float, height: int) -> str:
    ticks = sorted({1, n, *range(1, n + 1, max(1, nice_step(n)))})
    return "".join(
        f'<text x="{left + (k - 0.5) * step:.1f}" y="{height - 6}" text-anchor="middle">{k}</text>'
        for k in ticks
        if k in (1, n) or (n - k) * step > 24  # the last tick keeps its room
    )


def nice_step(n: int, ticks: int = 8) -> int:
    """A round step that puts about ``ticks`` ticks on an axis of ``n`` items."""
    return max(1, int(nice_max(n / ticks)))


def _tokens(value: float) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if value >= 1000:
        return f"{value / 1000:.0f}k"
    return f"{value:.0f}"


@dataclass(frozen=True)
class Point:
    x: float
    """Seconds since the epoch."""
    y: float
    tip: str = ""


def step_line(
    points: Sequence[Point],
    title: str,
    fmt: Callable[[float], str],
    x_label: Callable[[float], str],
) -> str:
    """A cumulative step line over time (``points`` sorted by ``x``), a dot per point with its
    tip, labelled at both ends of each axis."""
    if not points:
        return _empty(title, "line")
    width, height, left, bottom, top_pad = 820, 220, 70, 24, 10
    x0, x1 = points[0].x, points[-1].x
    span = (x1 - x0) or 1.0
    top = nice_max(max(p.y for p in points))
    plot_w, plot_h = width - left - 16, height - bottom - top_pad

    def xy(p: Point) -> tuple[float, float]:
        return left + (p.x - x0) / span * plot_w, top_pad + plot_h - p.y / top * plot_h

    path: list[str] = []
    prev_y: float = top_pad + plot_h
    for p in points:
        x, y = xy(p)
        path.append(f"{'M' if not path else 'L'}{x:.1f},{prev_y:.1f} L{x:.1f},{y:.1f}")
        prev_y = y
    body = [
        *_money_axis(left, width, top_pad, plot_h, top, fmt),
        f'<path d="{" ".join(path)}" fill="none" stroke="{COLOURS["line"]}" stroke-width="1.5"/>',
    ]
    stride = max(1, len(points) // 400)  # at most ~400 dots keep a tip each: the page stays light
    for p in points[::stride]:
        x, y = xy(p)
        body.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2" fill="{COLOURS["line"]}">'
            f"<title>{_e(p.tip or fmt(p.y))}</title></circle>"
        )
    for x, anchor, value in ((left, "start", x0), (left + plot_w, "end", x1)):
        body.append(
            f'<text x="{x}" y="{height - 6}" text-anchor="{anchor}">{_e(x_label(value))}</text>'
        )
    return _svg(width, height, title, body, "line")


def _money_axis(
    left: int, width: int, top_pad: int, plot_h: float, top: float, fmt: Callable[[float], str]
) -> list[str]:
    out = []
    for frac in (0.0, 0.5, 1.0):
        y = top_pad + plot_h - frac * plot_h
        out.append(
            f'<line x1="{left}" x2="{width - 16}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="{COLOURS["grid"]}"/><text x="{left - 4}" y="{y + 4:.1f}" '
            f'text-anchor="end">{_e(fmt(top * frac))}</text>'
        )
    return out


def legend(items: Sequence[tuple[str, str]]) -> str:
    """A small inline legend (colour key, label) as HTML."""
    return (
        '<p class="legend">'
        + " ".join(
            f'<span><i style="background:{COLOURS[key]}"></i>{_e(label)}</span>'
            for key, label in items
        )
        + "</p>"
    )


__all__ = [
    "COLOURS",
    "Bar",
    "Point",
    "Stack",
    "bar_chart",
    "legend",
    "nice_max",
    "nice_step",
    "stacked_columns",
    "step_line",
]
