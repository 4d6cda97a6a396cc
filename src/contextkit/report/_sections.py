"""The report's sections after the cost charts: sessions, cache, context per call, heaviest tool
results, what-ifs, strategies, notes. Each returns escaped HTML (:mod:`contextkit.report._html`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from contextkit.accounting import CAUSES
from contextkit.replay import AS_RECORDED, best_saving
from contextkit.report._collect import ReportData, SessionFacts
from contextkit.report._fmt import e, pct, table, times, usd
from contextkit.report._svg import Bar, Stack, bar_chart, legend, stacked_columns

OPEN_SESSIONS = 8
"""Per-session charts open when the page loads (the costliest); the others open on a click."""
TOP_HEAVY = 20
TOP_EVENTS = 12

_SECTIONS = (
    ("time", "cost over time"),
    ("cost", "cost per session, model, project"),
    ("sessions", "sessions"),
    ("cache", "cache"),
    ("context", "context per call"),
    ("heavy", "heaviest tool results"),
    ("whatif", "what-ifs"),
    ("strategies", "strategies"),
    ("notes", "notes"),
)


def contents(data: ReportData) -> str:
    links = " · ".join(f'<a href="#{k}">{e(v)}</a>' for k, v in _SECTIONS)
    return f"<nav>{links}</nav>"


def failures(data: ReportData) -> str:
    if not data.failures and not data.skipped and not data.skipped_records:
        return ""
    rows = [
        (f"<code>{e(f.path)}</code>", f'<span class="bad">{e(f.error)}</span>')
        for f in data.failures
    ]
    rows += [(f"<code>{e(p)}</code>", e(f"not a session file: {r}")) for p, r in data.skipped]
    out = ""
    if rows:
        out += (
            f"<h2 id=failures>Not read ({len(data.failures)} failed, {len(data.skipped)} "
            "skipped)</h2>"
            '<p class="note">These files are left out of every figure below.</p>'
            + table(("file", "why"), rows)
        )
    if data.skipped_records:
        records = [(f"<code>{e(f.path)}</code>", e(f.error)) for f in data.skipped_records]
        out += (
            f"<h3>Records skipped ({len(records)})</h3>"
            '<p class="note">Their files were read without them; the rest of each file is in '
            "the figures.</p>" + table(("record", "why"), records)
        )
    return out


def sessions_table(data: ReportData) -> str:
    rows = [
        (
            f"<code>{e(s.name)}</code>",
            e(s.project),
            e(s.model or "unknown"),
            f"{s.calls:,}",
            usd(s.cost_usd),
            e(s.basis),
            usd(s.recorded_usd),
            usd(s.simulated_usd),
            pct(s.hit_rate),
            times(s.write_amplification),
            f"{s.peak_context:,}",
        )
        for s in data.sessions
    ]
    head = (
        "session",
        "project",
        "model",
        "calls",
        "cost",
        "basis",
        "recorded",
        "simulated",
        "hit rate",
        "write amp.",
        "peak context",
    )
    return f"<h2 id=sessions>Sessions ({len(data.sessions):,})</h2>" + table(
        head, rows, numeric=(3, 4, 6, 7, 8, 9, 10)
    )


def _causes(sessions: Sequence[SessionFacts]) -> dict[str, tuple[int, float, int]]:
    """Written tokens, dollars and sessions per cause over every diagnosed session; a cause
    inferred from the reads (no record shows it) is a row of its own, marked so."""
    out: dict[str, tuple[int, float, int]] = {}
    for s in sessions:
        if s.diagnosis is None:
            continue
        for inferred in (False, True):
            for cause, (tokens, cost) in s.diagnosis.by_cause(inferred=inferred).items():
                key = cause + (INFERRED if inferred else "")
                t, c, n = out.get(key, (0, 0.0, 0))
                out[key] = (t + tokens, c + (cost or 0.0), n + 1)
    order = [k + mark for mark in ("", INFERRED) for k in CAUSES]
    return {k: out[k] for k in order if k in out}


INFERRED = " (inferred)"


def cache(data: ReportData) -> str:
    diagnosed = [s for s in data.sessions if s.diagnosis is not None]
    by_cost = [s for s in data.sessions if s.hit_rate is not None][:20]
    hit_bars = [
        Bar(s.name, 100 * (s.hit_rate or 0.0), f"{s.name}: {pct(s.hit_rate)} ({s.cache_basis})")
        for s in by_cost
    ]
    amp_bars = [
        Bar(s.name, s.write_amplification or 0.0, f"{s.name}: {times(s.write_amplification)}")
        for s in by_cost
        if s.write_amplification is not None
    ]
    causes = _causes(diagnosed)
    written = sum(t for t, _, _ in causes.values()) or 1
    cause_bars = [
        Bar(k, t, f"{k}: {t:,} tokens written, {usd(c)}, in {n} session(s)")
        for k, (t, c, n) in sorted(causes.items(), key=lambda kv: -kv[1][0])
    ]
    rows = [(e(k), f"{n:,}", f"{t:,}", pct(t / written), usd(c)) for k, (t, c, n) in causes.items()]
    return (
        "<h2 id=cache>Cache: hit rate, write amplification, what caused each write</h2>"
        '<p class="note">Hit rate: tokens read from the cache over all input tokens. Write '
        "amplification: tokens written to the cache over tokens of new content (1x: each written "
        "once). From recorded usage where the session has it, else simulated.</p>"
        "<h3>Hit rate of the costliest sessions (%)</h3>"
        + bar_chart(hit_bars, "cache hit rate per session", lambda v: f"{v:.1f}%")
        + "<h3>Write amplification of the costliest sessions</h3>"
        + bar_chart(amp_bars, "write amplification per session", lambda v: f"{v:.2f}x")
        + f"<h3>The cache doctor: causes of the recorded writes ({len(diagnosed):,} sessions "
        "with recorded usage)</h3>"
        '<p class="note">A cause marked inferred was read from where the reads stopped (a '
        "harness reset no record of the file shows); every other cause is observed in the file "
        "or its usage.</p>"
        + bar_chart(cause_bars, "tokens written per cause", lambda v: f"{v:,.0f}")
        + table(("cause", "sessions", "written", "share", "cost"), rows, numeric=(1, 2, 3, 4))
        + _events(diagnosed)
    )


def _events(sessions: Sequence[SessionFacts]) -> str:
    """The costliest rewrites (new content and first writes left out)."""
    found = [
        (s.name, ev)
        for s in sessions
        if s.diagnosis is not None
        for c in s.diagnosis.calls
        for ev in c.events
        if ev.cause not in ("new content", "first write")
    ]
    found.sort(key=lambda x: -x[1].tokens)
    rows = [
        (
            f"<code>{e(name)}</code>",
            f"{ev.call + 1:,}",
            e(ev.cause + (" (inferred)" if ev.inferred else "")),
            f"{ev.tokens:,}",
            usd(ev.usd),
            e(ev.detail),
        )
        for name, ev in found[:TOP_EVENTS]
    ]
    if not rows:
        return '<p class="note">No rewrite: every recorded write was new content.</p>'
    return "<h3>The costliest rewrites</h3>" + table(
        ("session", "call", "cause", "tokens", "cost", "detail"), rows, numeric=(1, 3, 4)
    )


def _sawtooth(s: SessionFacts) -> str:
    stacks = [
        Stack(r, w, u, f"call {i + 1}: read {r:,}, write {w:,}, uncached {u:,} ({usd(c)})")
        for i, (r, w, u, c) in enumerate(zip(s.read, s.write, s.uncached, s.call_usd, strict=True))
    ]
    marks = f", {len(s.compactions)} compaction(s)" if s.compactions else ""
    title = f"context per call of {s.name} ({s.basis}{marks})"
    return stacked_columns(stacks, title, markers=s.compactions, window=s.window)


def context(data: ReportData) -> str:
    out = [
        "<h2 id=context>Context per call</h2>",
        '<p class="note">Each call\'s input tokens, stacked: read from the cache, written to it, '
        "uncached; a dashed line marks a compaction by the harness. The sawtooth is the history "
        "growing until a compaction cuts it.</p>",
        legend(
            [
                ("read", "cache read"),
                ("write", "cache write"),
                ("uncached", "uncached"),
                ("marker", "compaction"),
            ]
        ),
        '<p><button type="button" data-open="1">expand all</button>'
        '<button type="button" data-open="0">collapse all</button></p>',
    ]
    for i, s in enumerate(data.sessions):
        head = (
            f"<code>{e(s.name)}</code> · {e(s.model or 'unknown')} · {s.calls:,} calls · "
            f"{usd(s.cost_usd)} · peak {s.peak_context:,} tokens"
            + (f" · {len(s.compactions)} compaction(s)" if s.compactions else "")
        )
        attr = " open" if i < OPEN_SESSIONS else ""
        out.append(
            f'<details class="session"{attr}><summary>{head}</summary>{_sawtooth(s)}</details>'
        )
    return "".join(out)


def heaviest(data: ReportData) -> str:
    found = sorted(
        (h for s in data.sessions for h in s.heaviest), key=lambda h: (-h.tokens, h.session)
    )[:TOP_HEAVY]
    rows = [
        (
            f"<code>{e(h.session)}</code>",
            e(h.tool or "?"),
            f"{h.tokens:,}",
            f"{h.first_call + 1:,}",
            f"{h.carried_by:,}",
            usd(h.cost_usd),
            f"<pre>{e(h.preview)}</pre>",
        )
        for h in found
    ]
    return (
        "<h2 id=heavy>Heaviest tool results</h2>"
        '<p class="note">Each result\'s size, the call that first sent it, how many requests '
        "carried it, and what carrying it cost (at each carrying call's input price per token).</p>"
        + table(
            ("session", "tool", "tokens", "first call", "carried by", "cost", "begins with"),
            rows,
            numeric=(2, 3, 4, 5),
        )
    )


def what_ifs(data: ReportData) -> str:
    doc = data.what_ifs
    if doc is None:
        return "<h2 id=whatif>What-ifs</h2><p>No session with model calls.</p>"
    base = doc.get("mean_usd")
    rows = [("baseline (" + e(doc["basis"]) + ")", usd(base), "", "", usd(doc.get("p90_usd")))]
    bars = []
    for w in doc["what_if"]:
        rows.append(
            (
                e(w["change"]),
                usd(w["mean_usd"]),
                "-" if w["delta_usd"] is None else f"{w['delta_usd']:+,.4f}",
                "-" if w["delta_pct"] is None else f"{w['delta_pct']:+.1f}%",
                usd(w["p90_usd"]),
            )
        )
        if w["delta_pct"] is not None:
            bars.append(
                Bar(w["change"], abs(w["delta_pct"]), f"{w['change']}: {w['delta_pct']:+.1f}%")
            )
    return (
        "<h2 id=whatif>What-ifs: cost per ticket</h2>"
        f'<p class="note">{doc["tickets"]:,} tickets (a top-level session with its subagents). '
        "Each change is re-simulated over every call; where every ticket has a recorded bill the "
        "figures are the bill times the simulated ratio.</p>"
        + table(("change", "mean", "delta", "delta %", "p90"), rows, numeric=(1, 2, 3, 4))
        + "<h3>Size of each change (|delta %|)</h3>"
        + bar_chart(bars, "what-if deltas", lambda v: f"{v:.1f}%")
    )


def _by_session(results: Sequence[dict[str, Any]]) -> dict[tuple[str, str | None], dict[str, Any]]:
    rows: dict[tuple[str, str | None], dict[str, Any]] = {}
    for r in results:
        key = (r["path"], r.get("session_id"))
        rows.setdefault(key, {"calls": r["calls"], "by": {}})["by"][r["strategy"]] = r
    return rows


def strategies(data: ReportData) -> str:
    head = "<h2 id=strategies>Strategies compared</h2>"
    if data.strategies is None:
        return (
            head + '<p class="note">Not run: <code>contextkit report --strategies</code> replays '
            "every session under each preset (slow on a big folder).</p>"
        )
    specs = list(dict.fromkeys(r["strategy"] for r in data.strategies))
    sessions = _by_session(data.strategies)
    names = {(s.path, s.session_id): s.name for s in data.sessions}
    totals: dict[str, float] = defaultdict(float)
    recall: dict[str, list[float]] = defaultdict(list)
    rows = []
    for (path, sid), row in sessions.items():
        cells = []
        for spec in specs:
            r = row["by"].get(spec)
            if r is None:
                cells.append("")
                continue
            s = r["summary"]
            totals[spec] += s["cost_usd"] or 0.0
            recall[spec].append(s["recall"])
            over = f", {s['overflow_calls']} over" if s["overflow_calls"] else ""
            cells.append(
                f"{usd(s['cost_usd'])}<br><span class=note>recall {s['recall']:.2f}, peak "
                f"{s['peak_context_tokens']:,}, {s['compactions']} compactions{over}, "
                f"{len(r['lost_examples'])} lost</span>"
            )
        summaries = {k: v["summary"] for k, v in row["by"].items()}
        verdict = best_saving(summaries, row["calls"]) if AS_RECORDED in summaries else ""
        name = names.get((path, sid), path)
        rows.append((f"<code>{e(name)}</code>", f"{row['calls']:,}", *cells, e(verdict)))
    bars = [
        Bar(k, totals[k], f"{k}: {usd(totals[k])}, mean recall {_mean(recall[k]):.3f}")
        for k in specs
    ]
    return (
        head
        + '<p class="note">Each session replayed call by call under each strategy: cost, and the '
        "quality measures: recall (share of the facts later calls used that the view still held), "
        "peak context, calls over the window, results lost. Replay keeps the recorded responses: "
        "it measures what each view would have cost and kept, not how the model would have "
        "acted.</p><h3>Total cost per strategy</h3>"
        + bar_chart(bars, "total cost per strategy", usd)
        + table(("session", "calls", *specs, "best vs as-recorded"), rows, numeric=(1,))
    )


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def notes(data: ReportData) -> str:
    seen = dict.fromkeys(n for s in data.sessions[:50] for n in s.notes)
    items = [*data.warnings, *list(seen)[:30]]
    body = "".join(f"<li>{e(n)}</li>" for n in items)
    return (
        "<h2 id=notes>Notes</h2>"
        '<p class="note">Token counts of the simulation are estimates unless the counter is exact; '
        "recorded figures are the provider's own.</p>"
        f"<ul class=note>{body}</ul>"
    )


__all__ = [
    "cache",
    "contents",
    "context",
    "failures",
    "heaviest",
    "notes",
    "sessions_table",
    "strategies",
    "what_ifs",
]
