"""Write docs/strategy-results.md: as-recorded, ``none``, every preset, the ``oracle`` bound and
the peers (Headroom, LangChain; those installed) on each corpus session of more than 100 calls.

``uv run python scripts/strategy_results.py [CORPUS] [--out PATH] [--min-calls N] [--jobs N]``

CORPUS defaults to ``$CONTEXTKIT_CORPUS``. For each session (subagents included, each its own)
with more than ``--min-calls`` calls (default 100): a table of every strategy (cost, its
summariser's calls, recovery, cost + recovery without and with the engine's retrieve tool,
savings of cost + recovery against the simulated as-recorded cost, ``none`` and the oracle, fact
recall, copied-span recall, edit feasibility, probe scores per category, compactions, overflows),
the best by the rule and what it recovered; first, one line per session with the baselines, the
bound, the best and the best peer. Everything in the file is computed; nothing is typed by hand.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from contextkit.errors import ContextkitError
from contextkit.formats import load
from contextkit.peers import PEER_NAMES, peer
from contextkit.replay import (
    AS_RECORDED,
    ASSUMPTION,
    BOUND_NOTE,
    ORACLE,
    RULE,
    best_strategy,
    find_session_files,
    run_strategy,
    savings,
    session_tables,
    total,
)
from contextkit.strategies import PRESETS

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "docs" / "strategy-results.md"
SPECS = (AS_RECORDED, *PRESETS, ORACLE)


def file_results(path: str, min_calls: int, specs: Sequence[str]) -> list[dict[str, Any]]:
    """Every strategy's summary on each long session of one file."""
    out: list[dict[str, Any]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for top in load(path, lenient=True).sessions:
            for session in top.all_sessions():
                if len(session.calls) <= min_calls:
                    continue
                made: dict[str, Any] = {}
                for spec in sorted(specs, key=lambda s: s == ORACLE):  # the oracle reuses them
                    made[spec] = run_strategy(session, spec, presets=made)
                for spec in specs:
                    result = made[spec].to_json(rows=False)
                    result["session_id"] = session.session_id
                    out.append(result)
    return out


def _available_peers() -> tuple[str, ...]:
    """The peers whose extra is installed (each named in the file when left out)."""
    found = []
    for name in PEER_NAMES:
        try:
            peer(name)
        except ContextkitError as exc:
            print(f"peer {name} left out: {exc}", file=sys.stderr)
            continue
        found.append(name)
    return tuple(found)


def floors(results: Sequence[dict[str, Any]]) -> list[str]:
    """Per session: the baselines, the bound, the best by the rule and the best peer."""
    sessions: dict[tuple[str, str | None], dict[str, dict[str, Any]]] = {}
    for r in results:
        sessions.setdefault((r["path"], r.get("session_id")), {})[r["strategy"]] = r["summary"]
    lines = [
        "| session | as-recorded (simulated) | none | oracle (cost + recovery) | best by the rule "
        "(cost + recovery, vs as-recorded) | best peer (cost + recovery, vs as-recorded) |",
        "|---|---|---|---|---|---|",
    ]
    for (path, session_id), row in sessions.items():
        saved = savings(row)
        recorded = row.get(AS_RECORDED, {})
        base = recorded.get("simulated_cost_usd", recorded.get("cost_usd"))
        none = row.get("none", {})
        none_text = _money(total(none))
        if none.get("overflow_calls"):
            none_text += f" (overflows at {none['overflow_calls']} calls)"
        best = best_strategy({n: v for n, v in row.items() if n not in PEER_NAMES})
        peers = {n: v for n, v in row.items() if n in PEER_NAMES}
        peer_best = best_strategy(peers) if peers else None
        cells = [
            f"{Path(path).parent.name}/{Path(path).name} `{(session_id or '')[:8]}`",
            _money(base),
            none_text,
            _money(total(row.get(ORACLE, {}))),
            _named(best, row, saved),
            _named(peer_best, row, saved) if peers else "not run",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.2f}"


def _named(name: str | None, row: dict[str, Any], saved: dict[str, Any]) -> str:
    if name is None:
        return "none qualifies"
    vs = saved[name]["vs_as_recorded"]
    return f"{name} {_money(total(row[name]))}" + ("" if vs is None else f" ({vs:+.0%})")


def render(results: Sequence[dict[str, Any]], root: Path, min_calls: int) -> str:
    head = [
        "# Strategies on the long corpus sessions",
        "",
        "Generated by `uv run python scripts/strategy_results.py` (corpus from "
        f"`$CONTEXTKIT_CORPUS`, sessions of more than {min_calls} calls). Do not edit by hand.",
        "",
        "Costs are simulated by the same cache simulator for every row (peers included: "
        "Headroom's offline `compress()` as its proxy applies it and as a library called on "
        "every request, LangChain's `trim_messages` and its summarisation middleware, see "
        "`contextkit.peers`): `as-recorded` is the "
        "recorded requests priced that way (the harness's own compaction calls included; the "
        "recorded bill in brackets where it differs), so every saving is like for like. "
        "**`oracle` is a hindsight bound, not a recommendation**: it knew which results later "
        "calls would quote. Quality: fact recall and its rarity-weighted form, copied-span recall "
        "(lines of 30+ characters a response copied from the tape that the view still held), "
        "edits feasible (`old_string`s the view still held; `n of m not`: infeasible of needed). "
        "Recovery: what a later call needed that the view had dropped, priced as getting it "
        "back (the tool again, the subagent again at its recorded cost, or lost for good when "
        'the user typed it); "with retrieval": the same had the engine\'s retrieve tool been '
        "offered (one round trip each, the tool carried in every request). Probes (artifacts / "
        "task / instructions / decisions / errors / next steps): the share of questions whose "
        "answer the view still held where the strategy edited it. "
        "What these cannot say: replay keeps the recorded responses, so a loss is what the "
        "recorded model could not have copied from that view, not how a model would have acted. "
        "See [replay-quality.md](replay-quality.md).",
        "",
        "## Per session, in one line",
        "",
        f"Best = {RULE}; savings are of cost + recovery. Peers are ranked among themselves in "
        "the last column and with everything in the per-session tables.",
        "",
        *floors(results),
        "",
        "## Per session",
        "",
    ]
    return "\n".join(head) + "\n" + session_tables(results, root, min_calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", default=os.environ.get("CONTEXTKIT_CORPUS"))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--min-calls", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    if not args.corpus:
        parser.error("give the corpus folder or set CONTEXTKIT_CORPUS")
    root = Path(args.corpus)
    files = [str(f) for f in find_session_files([root]).files]
    with ProcessPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        specs = (*SPECS, *_available_peers())
        n = len(files)
        chunks = pool.map(file_results, files, [args.min_calls] * n, [specs] * n)
        results = [r for chunk in chunks for r in chunk]
    args.out.write_text(render(results, root, args.min_calls), encoding="utf-8")
    sessions = len({(r["path"], r.get("session_id")) for r in results})
    print(f"{sessions} sessions written to {args.out}", file=sys.stderr)
    print(f"{ASSUMPTION}; {BOUND_NOTE}", file=sys.stderr)


if __name__ == "__main__":
    main()
