"""Fit the cache miss model on recorded sessions, and measure the accountant leave-one-source-out.

``uv run python scripts/fit_miss_model.py [CORPUS] [--out PATH] [--check] [--loso] [--json]``

CORPUS defaults to ``$CONTEXTKIT_CORPUS``. The model (see ``contextkit.accounting._misses``) is
fitted on every session of the corpus with recorded usage and written to
``src/contextkit/accounting/data/miss_model.json`` (``--check``: printed, not written), naming the
sources it was fitted on; ``--hold-out SOURCE`` leaves a source out (the teams added to the corpus
in 2026-12, ``oh-my-posh-claude``, ``packmind-claude`` and ``agentv-codex``, are held out of the
shipped fit: they are the first check of it).

``--loso`` measures what the accountant would say on sources it has never seen: for each source (a
top-level folder of the corpus: one repository or team), the miss model is fitted on every other
source and the source's Claude Code sessions with 2+ calls are priced as recorded with it; the
error of the simulated input-side cost (uncached + cache writes + cache reads, in dollars)
against the recorded bill is reported per session and per source, with the median absolute and
mean signed error over all sessions, and the per-call error of total input. As the commands do,
each session's own recorded usage takes the fitted model's place where it has enough calls
(``session_miss_model``); ``--fitted-only`` measures the fitted model alone. Sessions whose usage
is synthetic (a recorded total below the count of the session's own messages) are listed apart:
they are test fixtures, not bills. The calibration of the token counter is the shipped one: it
was fitted on the corpus too, and ``scripts/fit_calibration.py --loso`` measures it on its own.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from contextkit.accounting import (
    MissModel,
    fit_miss_model,
    price_session,
    save_miss_model,
    session_miss_model,
)
from contextkit.formats import load
from contextkit.replay import find_session_files
from contextkit.session import Session

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "src" / "contextkit" / "accounting" / "data" / "miss_model.json"


def corpus_sessions(root: Path) -> Iterator[tuple[str, Path, Session]]:
    """(source, file, session) for every session with recorded usage on every call."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for path in find_session_files([root]).files:
            source = path.relative_to(root).parts[0]
            for top in load(path, lenient=True).sessions:
                for session in top.all_sessions():
                    if session.calls and all(c.usage is not None for c in session.calls):
                        yield source, path, session


def synthetic(session: Session) -> bool:
    """Recorded totals below the count of the session's own messages: not a real bill."""
    from contextkit.tokens import counter_for  # noqa: PLC0415 (script-local)

    counter = counter_for(session.model_info)
    for call in session.calls:
        assert call.usage is not None
        if call.usage.total_input < counter.count_conversation(call.request) * 0.9:
            return True
    return False


def input_error(session: Session, misses: MissModel) -> tuple[float, list[float]]:
    """(relative error of the simulated input-side cost, per-call errors of total input)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ledger = price_session(session, output="recorded", misses=misses)
    assert ledger.recorded is not None
    simulated = float(np.nansum(ledger.simulated.input_cost_usd))
    recorded = float(np.nansum(ledger.recorded.input_cost_usd))
    totals = ledger.recorded.total_input
    per_call = [
        float(s / r - 1) for s, r in zip(ledger.context_tokens, totals, strict=True) if r > 0
    ]
    return (simulated / recorded - 1 if recorded else float("nan")), per_call


def client_family(version: str | None) -> str:
    """``2.1.2xx`` for ``2.1.209``, ``2.0.x`` for ``2.0.76``: releases grouped by hundreds."""
    if not version:
        return "unknown"
    parts = version.split(".")
    if len(parts) < 3 or not all(p.isdigit() for p in parts[:3]):
        return version
    patch = int(parts[2])
    return f"{parts[0]}.{parts[1]}.{patch // 100}xx" if patch >= 100 else f"{parts[0]}.{parts[1]}.x"


def _grouped(rows: list[dict[str, object]], key: str) -> list[str]:
    """Markdown rows: per group, sessions, median error, range."""
    groups: dict[str, list[float]] = {}
    for row in rows:
        groups.setdefault(str(row[key]), []).append(float(row["error"]))  # type: ignore[arg-type]
    out = []
    for name, errors in sorted(groups.items()):
        out.append(
            f"| {name} | {len(errors)} | {statistics.median(errors):+.1%} | "
            f"{min(errors):+.1%} to {max(errors):+.1%} |"
        )
    return out


def loso(rows: list[tuple[str, Path, Session]], *, own: bool = True) -> dict[str, object]:
    """``own``: each session's own measurement in place of the fitted model where it has enough
    calls, as ``replay``, ``compare`` and ``cost`` price a file with usage; else the model
    fitted on the other sources alone (what a session without usage would get)."""
    sources = sorted({s for s, _, _ in rows})
    per_session: list[dict[str, object]] = []
    per_call: list[float] = []
    for held in sources:
        others = [s for src, _, s in rows if src != held]
        model = fit_miss_model(others)
        for src, path, session in rows:
            if src != held or session.format != "claude-code" or len(session.calls) < 2:
                continue
            misses = session_miss_model(session, model) if own else model
            err, calls = input_error(session, misses)
            fake = synthetic(session)
            per_session.append(
                {
                    "source": src,
                    "file": path.name,
                    "session": session.session_id,
                    "calls": len(session.calls),
                    "client": client_family(session.client_version),
                    "error": err,
                    "synthetic usage": fake,
                }
            )
            if not fake:
                per_call.extend(calls)
    real = [r for r in per_session if not r["synthetic usage"]]
    errors = [float(r["error"]) for r in real]  # type: ignore[arg-type]
    return {
        "sessions": per_session,
        "median_abs_error": statistics.median(abs(e) for e in errors) if errors else None,
        "mean_signed_error": statistics.fmean(errors) if errors else None,
        "per_call_median_abs_error": (
            statistics.median(abs(e) for e in per_call) if per_call else None
        ),
        "calls": len(per_call),
    }


def _print_loso(result: dict[str, object]) -> None:
    print("| source | session | calls | simulated vs recorded input cost |")
    print("|---|---|---|---|")
    for row in result["sessions"]:  # type: ignore[attr-defined]
        mark = " (synthetic usage: left out)" if row["synthetic usage"] else ""
        print(
            f"| {row['source']} | {row['file']} {str(row['session'])[:8]} | {row['calls']} "
            f"| {row['error']:+.1%}{mark} |"
        )
    real = [r for r in result["sessions"] if not r["synthetic usage"]]  # type: ignore[attr-defined]
    for key, title in (("source", "held-out team"), ("client", "client version")):
        print(f"\n| {title} | sessions | median error | range |\n|---|---|---|---|")
        print("\n".join(_grouped(real, key)))
    print(
        f"\nmedian |error| {result['median_abs_error']:.1%}, mean signed "
        f"{result['mean_signed_error']:+.1%}, per-call total input median |error| "
        f"{result['per_call_median_abs_error']:.1%} over {result['calls']} calls"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", nargs="?", default=os.environ.get("CONTEXTKIT_CORPUS"))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--loso", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--hold-out",
        action="append",
        default=[],
        metavar="SOURCE",
        help="leave this source (a top-level corpus folder) out of the fit (repeatable): a team "
        "the model must be checked on before anything is fitted to it",
    )
    parser.add_argument(
        "--fitted-only",
        action="store_true",
        help="--loso without each session's own measurement (the fitted model alone)",
    )
    args = parser.parse_args(argv)
    if not args.corpus or not Path(args.corpus).is_dir():
        print("a corpus folder is needed (argument or $CONTEXTKIT_CORPUS)", file=sys.stderr)
        return 2
    root = Path(args.corpus)
    rows = list(corpus_sessions(root))
    if args.loso:
        result = loso(rows, own=not args.fitted_only)
        if args.json:
            print(json.dumps(result, indent=2, default=str))
        else:
            _print_loso(result)
        return 0
    rows = [row for row in rows if row[0] not in set(args.hold_out)]
    sources = sorted({s for s, _, _ in rows})
    data = [f"{src}: {sum(s == src for s, _, _ in rows)} sessions" for src in sources]
    model = fit_miss_model((s for _, _, s in rows), data=data)
    print(model.model_dump_json(indent=2))
    if not args.check:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        save_miss_model(model, args.out)
        print(f"written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
