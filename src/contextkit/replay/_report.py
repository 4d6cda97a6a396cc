"""Tables of compared strategies: savings stated like for like, the gap to the oracle, and the
best strategy by the strict measures.

Like for like: every saving is against the *simulated* as-recorded cost (the recorded requests
priced by the same cache simulator as every strategy, the harness's own compaction calls
included) and against ``none`` (the full tape), so a saving is never a difference of cache models.
The recorded bill is shown beside it where the file has usage. The gap to ``oracle`` (the
hindsight bound, :mod:`._oracle`) says how much a strategy leaves on the table; the oracle is a
bound, never a recommendation, and is never the best.

"Best" is the cheapest strategy (not ``as-recorded``, not ``oracle``) by cost + recovery (what the
agent would pay to get back what the view dropped and a later call needed, :mod:`._recovery`),
with no unrecoverable loss and no call over the window. Fact recall, copied-span recall and edit
feasibility stay as columns: they say what was lost; recovery says what it costs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from contextkit.replay._oracle import BOUND_NOTE, ORACLE
from contextkit.replay._probes import CATEGORIES
from contextkit.replay._replay import AS_RECORDED, ASSUMPTION

SPAN_FLOOR = 0.95
"""The copied-span recall a strategy must keep to count as best."""
EDIT_FLOOR = 1.0
"""The share of feasible edits a strategy must keep to count as best (every one)."""
TARGET_SAVING = 0.30
"""The saving against as-recorded that :func:`best_saving` explains when it is missed."""
RULE = (
    "cheapest strategy by cost + recovery, with nothing lost that cannot be got back, no call "
    "over the window and no request the provider would refuse; one that must run a subagent "
    "again (its report may not come back the same) only when every other must too (oracle and "
    "as-recorded excluded)"
)


def strict_fit(summary: Mapping[str, Any]) -> bool:
    """Whether a replay summary passes the strict measures (and never overflows)."""
    spans, edits = summary.get("span_recall"), summary.get("edit_feasibility")
    return (
        summary.get("cost_usd") is not None
        and spans is not None
        and edits is not None
        and spans >= SPAN_FLOOR
        and edits >= EDIT_FLOOR
        and summary.get("overflow_calls", 0) == 0
        and summary.get("refused_calls", 0) == 0
    )


def _ratio(cost: float | None, base: float | None) -> float | None:
    return None if cost is None or not base else cost / base - 1


def total(summary: Mapping[str, Any]) -> float | None:
    """A strategy's cost + recovery (the cost alone where nothing needed recovering or the
    summary predates recovery; None where a price is unknown or a loss cannot be got back)."""
    if "cost_plus_recovery_usd" in summary:
        value: float | None = summary["cost_plus_recovery_usd"]
        return value
    cost: float | None = summary.get("cost_usd")
    return cost


def savings(row: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Per strategy: its cost + recovery against the simulated as-recorded cost, ``none`` and
    ``oracle`` (a ratio minus one: -0.35 is 35% cheaper; None where a side is unknown, absent
    or lost something for good)."""
    recorded = row.get(AS_RECORDED, {})
    base = recorded.get("simulated_cost_usd", recorded.get("cost_usd"))
    none = total(row.get("none", {}))
    oracle = total(row.get(ORACLE, {}))
    out: dict[str, dict[str, float | None]] = {}
    for name, s in row.items():
        cost = s.get("simulated_cost_usd") if name == AS_RECORDED else total(s)
        out[name] = {
            "vs_as_recorded": _ratio(cost, base),
            "vs_none": _ratio(cost, none),
            "vs_oracle": _ratio(cost, oracle),
        }
    return out


def can_be_best(summary: Mapping[str, Any]) -> bool:
    """Whether a replay summary may be best (:data:`RULE`): its cost + recovery known, nothing
    lost that cannot be got back, no call over the window, no request the provider would
    refuse."""
    return (
        summary.get("cost_plus_recovery_usd") is not None
        and summary.get("unrecoverable", 0) == 0
        and summary.get("overflow_calls", 0) == 0
        and summary.get("refused_calls", 0) == 0
    )


def best_strategy(row: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The cheapest strategy by :data:`RULE` (None when none qualifies)."""
    fit = {n: s for n, s in row.items() if n not in (AS_RECORDED, ORACLE) and can_be_best(s)}
    exact = {n: s for n, s in fit.items() if not s.get("subagent_reruns", 0)}
    pool = exact or fit
    return min(pool, key=lambda n: pool[n]["cost_plus_recovery_usd"]) if pool else None


def best_saving(row: Mapping[str, Mapping[str, Any]], calls: int) -> str:
    """The best strategy (:data:`RULE`) by cost + recovery against the simulated as-recorded
    cost, and against ``none`` (saying so when ``none`` overflows); below a 30% saving, why
    (nothing acted, or only strategies that lose text did)."""
    recorded = row.get(AS_RECORDED, {})
    base = recorded.get("simulated_cost_usd", recorded.get("cost_usd"))
    if not base:
        return "no as-recorded cost (usage or price unknown)"
    name = best_strategy(row)
    if name is None:
        return (
            "no strategy kept every call in the window and every request one the provider "
            "accepts without an unrecoverable loss"
        )
    cost = total(row[name])
    assert cost is not None  # can_be_best: cost + recovery is known
    saving = 1 - cost / base
    none = total(row.get("none", {}))
    text = f"{name} {-saving:+.0%}"  # -35%: cost + recovery that much below as recorded
    if none and name != "none":
        text += f", {cost / none - 1:+.0%} vs none"
        over = row["none"].get("overflow_calls", 0)
        if over:
            text += f" (which overflows the window at {over} calls)"
    recovery = row[name].get("recovery_usd")
    if recovery:
        text += f" (recovery ${recovery:,.2f})"
    if saving >= TARGET_SAVING:
        return text
    acted = [s for n, s in row.items() if n not in (AS_RECORDED, ORACLE) and s["compactions"]]
    if calls < 2:
        return f"{text}: one call, nothing to compact"
    if not acted:
        peak = max(s["peak_context_tokens"] for n, s in row.items() if n != AS_RECORDED)
        return f"{text}: no strategy acted (peak context {peak:,} tokens)"
    if not any(can_be_best(s) for s in acted):
        return f"{text}: only strategies that lost what cannot be got back acted"
    return text


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value:+.0%}"


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _cell(summary: Mapping[str, Any]) -> str:
    cost = summary["cost_usd"]
    text = "unknown" if cost is None else f"${cost:,.4f}"
    recovery = summary.get("recovery_usd")
    if recovery:
        text += f" +{recovery:,.4f} recovery"
    if summary.get("unrecoverable"):
        text += f" ({summary['unrecoverable']} lost)"
    spans, edits = summary.get("span_recall"), summary.get("edit_feasibility")
    if spans is not None and edits is not None:
        text += f" / {spans:.2f} / {edits:.0%}"
    text += f" ({summary['overflow_calls']} over)" if summary["overflow_calls"] else ""
    refused = summary.get("refused_calls")
    return text + (f" ({refused} refused)" if refused else "")


_Key = tuple[str, str | None]


def _rows(
    results: Sequence[Mapping[str, Any]], root: str | Path | None
) -> tuple[list[str], dict[_Key, dict[str, Any]], dict[_Key, int]]:
    strategies = list(dict.fromkeys(r["strategy"] for r in results))
    rows: dict[_Key, dict[str, Any]] = {}
    calls: dict[_Key, int] = {}
    for r in results:
        path = str(Path(r["path"]).relative_to(root)) if root else r["path"]
        key = (path, r.get("session_id"))
        rows.setdefault(key, {})[r["strategy"]] = r["summary"]
        calls[key] = r["calls"]
    return strategies, rows, calls


def _name(path: str, session_id: str | None) -> str:
    return path if session_id is None else f"{path} `{session_id[:8]}`"


def markdown_table(results: Sequence[Mapping[str, Any]], root: str | Path | None = None) -> str:
    """One row per session, one column per strategy: ``$cost / copied-span recall / feasible
    edits`` (and overflowing calls), and (when ``as-recorded`` is among them) the best strategy
    against it (:func:`best_saving`).

    ``results`` are :func:`compare_file` summaries; paths are shown relative to ``root``."""
    strategies, rows, calls = _rows(results, root)
    verdict = AS_RECORDED in strategies and len(strategies) > 1
    head = ["session", "calls", *strategies, *(["best vs as-recorded"] if verdict else [])]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, row in rows.items():
        cells = [_cell(row[s]) if s in row else "" for s in strategies]
        if verdict:
            cells.append(best_saving(row, calls[key]))
        lines.append("| " + " | ".join([_name(*key), str(calls[key]), *cells]) + " |")
    return "\n".join(lines) + "\n"


SESSION_COLUMNS = (
    "strategy",
    "cost",
    "summariser",
    "recovery",
    "cost + recovery",
    "with retrieval",
    "vs as-recorded",
    "vs none",
    "vs oracle",
    "fact recall",
    "copied spans",
    "edits feasible",
    "probes: artifacts / task / instructions / decisions / errors / next",
    "compactions",
    "overflows",
)
"""The per-session table's columns; the savings are of cost + recovery (:func:`savings`); "with
retrieval": cost + recovery had the engine's retrieve tool been offered (each recovery one
``contextkit_retrieve`` round trip, the tool's definition carried in every request)."""


def _probe_cell(s: Mapping[str, Any]) -> str:
    if not s.get("probes"):
        return "-"
    shares = [s.get(f"probe_{c}") for c in CATEGORIES]
    return " / ".join("-" if v is None else f"{v:.2f}" for v in shares)


def _recovery_cells(s: Mapping[str, Any]) -> list[str]:
    recovery = s.get("recovery_usd")
    if recovery is None:
        return ["n/a", "n/a", "n/a"]
    text = f"${recovery:,.2f}"
    if s.get("recoveries"):
        text += f" ({s['recoveries']})"
    lost = s.get("unrecoverable", 0)
    if lost:
        text += f", {lost} lost for good"
    both = s.get("cost_plus_recovery_usd")
    undo = s.get("cost_plus_recovery_with_retrieval_usd")
    return [
        text,
        "unknown" if both is None else f"${both:,.2f}",
        "unknown" if undo is None else f"${undo:,.2f}",
    ]


def _session_row(name: str, s: Mapping[str, Any], saved: Mapping[str, float | None]) -> list[str]:
    cost = s["simulated_cost_usd"] if name == AS_RECORDED else s["cost_usd"]
    money = "unknown" if cost is None else f"${cost:,.2f}"
    if name == AS_RECORDED and s["cost_usd"] is not None and s["cost_usd"] != cost:
        money += f" (billed ${s['cost_usd']:,.2f})"
    edits = s.get("edit_feasibility")
    edit_cell = (
        "n/a" if edits is None else f"{edits:.0%} ({s['edits_infeasible']} of {s['edits']} not)"
    )
    extra = s.get("summariser_usd")
    calls = s.get("summariser_calls") or 0
    summariser = "unknown" if extra is None else f"${extra:,.2f} ({calls})" if calls else "-"
    return [
        f"**{name}**" if name == ORACLE else name,
        money,
        summariser,
        *(["-", money, "n/a"] if name == AS_RECORDED else _recovery_cells(s)),
        _pct(saved["vs_as_recorded"]),
        _pct(saved["vs_none"]),
        _pct(saved["vs_oracle"]),
        f"{s['recall']:.3f}" if name != AS_RECORDED else "n/a",
        _share(s.get("span_recall")),
        edit_cell,
        _probe_cell(s),
        str(s["compactions"]),
        str(s["overflow_calls"])
        + (f" (+{s['refused_calls']} refused)" if s.get("refused_calls") else ""),
    ]


def _recovered(name: str, recoveries: Sequence[Mapping[str, Any]]) -> str:
    """What the best strategy had to get back, in a line: how many, of which kind, what cost."""
    if not recoveries:
        return f"{name} recovered nothing: no later call needed what it dropped."
    kinds: dict[str, list[float]] = {}
    for r in recoveries:
        kinds.setdefault(str(r["kind"]), []).append(float(r.get("cost_usd") or 0.0))
    parts = [f"{len(v)} {k} (${sum(v):,.2f})" for k, v in sorted(kinds.items())]
    top = max(recoveries, key=lambda r: float(r.get("cost_usd") or 0.0))
    return (
        f"{name} recovered {len(recoveries)} items: {', '.join(parts)}; the dearest at call "
        f"{top['call']}: {str(top['source'])[:80]} (${float(top.get('cost_usd') or 0.0):,.2f})."
    )


def session_tables(
    results: Sequence[Mapping[str, Any]], root: str | Path | None = None, min_calls: int = 0
) -> str:
    """A markdown table per session of more than ``min_calls`` calls: every strategy's cost
    (as-recorded simulated, with its bill beside it), savings like for like, the gap to the
    oracle, the three quality measures and compactions; then the best by :data:`RULE`."""
    _, rows, calls = _rows(results, root)
    recovered = {
        (
            str(Path(r["path"]).relative_to(root)) if root else r["path"],
            r.get("session_id"),
            r["strategy"],
        ): r.get("recoveries") or ()
        for r in results
    }
    out: list[str] = []
    for key, row in rows.items():
        if calls[key] <= min_calls:
            continue
        saved = savings(row)
        out += [f"### {_name(*key)}: {calls[key]} calls", ""]
        out += ["| " + " | ".join(SESSION_COLUMNS) + " |", "|" + "---|" * len(SESSION_COLUMNS)]
        out += ["| " + " | ".join(_session_row(n, s, saved[n])) + " |" for n, s in row.items()]
        out += ["", f"Best ({RULE}): {best_saving(row, calls[key])}.", ""]
        best = best_strategy(row)
        if best is not None:
            out += [_recovered(best, recovered.get((*key, best), ())), ""]
        over = row.get("none", {}).get("overflow_calls", 0)
        if over:
            out += [
                f'`none` overflows the window at {over} calls: its "vs none" figures '
                "compare with a run that could not have happened.",
                "",
            ]
    out += [f"_{ASSUMPTION}; {BOUND_NOTE}._", ""]
    return "\n".join(out)


__all__ = [
    "EDIT_FLOOR",
    "RULE",
    "SESSION_COLUMNS",
    "SPAN_FLOOR",
    "TARGET_SAVING",
    "best_saving",
    "best_strategy",
    "can_be_best",
    "markdown_table",
    "savings",
    "session_tables",
    "strict_fit",
    "total",
]
