"""The report page: one self-contained HTML document rendered from a :class:`ReportData`.

Contract: :func:`render_html` returns the whole page as a string: inline CSS, inline SVG charts
(:mod:`contextkit.report._svg`), and a few lines of inline script (expand and collapse the
per-session charts); no network reference of any kind (no CDN, no font, no image URL). Every
string that comes from a recording (paths, tool names, tool results, models, error messages) is
escaped here or in the chart functions: the page never carries markup it did not write.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime

from contextkit.report import _sections as sections
from contextkit.report._collect import ReportData, SessionFacts, total
from contextkit.report._fmt import e, pct, times, usd
from contextkit.report._svg import Bar, Point, bar_chart, step_line

TOP_BARS = 20
"""Bars per chart of sessions; the rest are summed into one bar."""

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:0 16px 40px;
color:#222}
h1{font-size:22px;margin:18px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid
#ddd;padding-bottom:4px}h3{font-size:15px;margin:16px 0 6px}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:12px 0}.card{border:1px solid #ddd;
border-radius:6px;padding:8px 12px;min-width:140px}.card b{display:block;font-size:18px}
table{border-collapse:collapse;width:100%;margin:6px 0 12px;font-size:13px}
th,td{border-bottom:1px solid #eee;padding:3px 6px;text-align:left;vertical-align:top;
overflow-wrap:anywhere}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
code,pre{font:12px/1.4 ui-monospace,monospace;background:#f6f6f6}
pre{white-space:pre-wrap;word-break:break-all;max-height:7em;max-width:36em;overflow:auto;
margin:0;padding:3px}summary code,td code{word-break:break-all}
.note{color:#666;font-size:12.5px}.bad{color:#a00}
.legend span{margin-right:14px}.legend i{display:inline-block;width:11px;height:11px;
margin-right:4px;vertical-align:-1px}
details{border:1px solid #eee;border-radius:4px;margin:4px 0;padding:2px 8px}
summary{cursor:pointer}svg.chart{display:block;margin:4px 0}
button{font:inherit;margin-right:6px}.scroll{overflow-x:auto}
"""

_JS = """
document.querySelectorAll('button[data-open]').forEach(function (b) {
  b.addEventListener('click', function () {
    var open = b.getAttribute('data-open') === '1';
    document.querySelectorAll('details.session').forEach(function (d) { d.open = open; });
  });
});
"""


def _cards(data: ReportData) -> str:
    s = data.sessions
    read = sum(sum(x.read) for x in s)
    written = sum(sum(x.write) for x in s)
    inputs = read + written + sum(sum(x.uncached) for x in s)
    unique = sum(x.unique_tokens for x in s)
    recorded = sum(1 for x in s if x.basis == "recorded")
    cards = [
        ("cost", usd(total([x.cost_usd for x in s]), 2)),
        ("sessions", f"{len(s):,} ({recorded:,} billed)"),
        ("model calls", f"{sum(x.calls for x in s):,}"),
        ("cache hit rate", pct(read / inputs if inputs else None)),
        ("write amplification", times(written / unique if unique else None)),
        ("files not read", f"{len(data.failures):,}"),
    ]
    return (
        '<div class="cards">'
        + "".join(f'<div class="card">{e(k)}<b>{e(v)}</b></div>' for k, v in cards)
        + "</div>"
    )


def _time_label(x: float) -> str:
    return datetime.fromtimestamp(x, UTC).strftime("%Y-%m-%d %H:%M")


def cost_over_time(data: ReportData) -> str:
    """The cumulative cost of every timed, priced call."""
    calls = [
        (t, c, s.name)
        for s in data.sessions
        for t, c in zip(s.times, s.call_usd, strict=True)
        if t is not None and not math.isnan(c)
    ]
    calls.sort(key=lambda x: x[0].timestamp())
    untimed = sum(s.calls for s in data.sessions) - len(calls)
    points: list[Point] = []
    running = 0.0
    for when, cost, name in calls:
        running += cost
        tip = f"{_time_label(when.timestamp())} {name}: {usd(cost)} (total {usd(running, 2)})"
        points.append(Point(when.timestamp(), running, tip))
    chart = step_line(points, "cumulative cost over time", lambda v: usd(v, 2), _time_label)
    note = (
        f'<p class="note">{untimed:,} call(s) without a timestamp or a price are left out.</p>'
        if untimed
        else ""
    )
    return "<h2 id=time>Cost over time</h2>" + chart + note


def _grouped(sessions: Sequence[SessionFacts], key: str) -> list[Bar]:
    sums: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for s in sessions:
        label = str(getattr(s, key) or "unknown")
        sums[label] += s.cost_usd or 0.0
        counts[label] += 1
    order = sorted(sums, key=lambda k: -sums[k])
    return [Bar(k, sums[k], f"{k}: {usd(sums[k])} over {counts[k]} session(s)") for k in order]


def _top(bars: list[Bar]) -> list[Bar]:
    if len(bars) <= TOP_BARS:
        return bars
    rest = bars[TOP_BARS - 1 :]
    other = Bar(f"{len(rest)} others", sum(b.value for b in rest))
    return [*bars[: TOP_BARS - 1], other]


def cost_breakdown(data: ReportData) -> str:
    fmt = usd
    by_session = [
        Bar(s.name, s.cost_usd or 0.0, f"{s.name}: {usd(s.cost_usd)} ({s.basis}, {s.calls} calls)")
        for s in data.sessions
    ]
    unpriced = [s for s in data.sessions if s.cost_usd is None]
    note = (
        f'<p class="note">{len(unpriced):,} session(s) have no known price (shown as $0 here): '
        + e(", ".join(sorted({str(s.model) for s in unpriced}))[:300])
        + "</p>"
        if unpriced
        else ""
    )
    return (
        "<h2 id=cost>Cost per session, model and project</h2>"
        '<p class="note">Each session\'s recorded bill where every call recorded usage, '
        "else the simulation (the table says which).</p>"
        "<h3>Per session</h3>"
        + bar_chart(_top(by_session), "cost per session", fmt)
        + "<h3>Per model</h3>"
        + bar_chart(_top(_grouped(data.sessions, "model")), "cost per model", fmt)
        + "<h3>Per project</h3>"
        + bar_chart(_top(_grouped(data.sessions, "project")), "cost per project", fmt)
        + note
    )


def render_html(data: ReportData) -> str:
    """The whole page."""
    parts = [
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(data.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{e(data.title)}</h1>",
        f'<p class="note">generated {e(data.generated)} in {data.elapsed_s:.1f} s from '
        f"{len(data.sessions):,} session(s) of {e(', '.join(data.inputs))}</p>",
        sections.contents(data),
        _cards(data),
        sections.failures(data),
        cost_over_time(data),
        cost_breakdown(data),
        sections.sessions_table(data),
        sections.cache(data),
        sections.context(data),
        sections.heaviest(data),
        sections.what_ifs(data),
        sections.strategies(data),
        sections.notes(data),
        f"<script>{_JS}</script></body></html>",
    ]
    return "\n".join(parts)


__all__ = ["render_html"]
