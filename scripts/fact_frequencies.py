"""Count in how many corpus sessions each recall fact occurs: the document frequencies behind the
rarity-weighted recall (``contextkit.replay``'s ``fact_weight``).

``uv run python scripts/fact_frequencies.py [CORPUS] [--out PATH] [--min-df N]``

CORPUS defaults to ``$CONTEXTKIT_CORPUS``. A document is one session (subagents included, each its
own): the facts (``extract_facts``: identifiers, paths, numbers, error strings) of every message
of its requests and responses, counted once per session. Facts found in fewer than ``--min-df``
sessions (default 3) are not written: they are rare, and the weight treats every fact missing
from the table as found in one session. Written to
``src/contextkit/replay/data/fact_df.json`` (sorted, so a re-run on the same corpus is
byte-identical).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from collections import Counter
from pathlib import Path

from contextkit.errors import ContextkitError
from contextkit.formats import load
from contextkit.replay import FactIndex, find_session_files
from contextkit.session import Session

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "src" / "contextkit" / "replay" / "data" / "fact_df.json"


def session_facts(session: Session) -> set[str]:
    """Every fact the session's messages hold (each distinct message object read once)."""
    index = FactIndex()
    seen: set[int] = set()
    facts: set[str] = set()
    for call in session.calls:
        messages = [*call.request.messages, *([call.response] if call.response else [])]
        fresh = [m for m in messages if id(m) not in seen]
        seen.update(id(m) for m in fresh)
        facts |= index.union(fresh)
    return facts


def count(root: Path) -> tuple[int, Counter[str]]:
    df: Counter[str] = Counter()
    sessions = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for path in find_session_files([root]).files:
            try:
                loaded = load(path, lenient=True)
            except ContextkitError as exc:  # a file no reader takes: skipped, and said
                print(f"skipped {path}: {exc}", file=sys.stderr)
                continue
            for top in loaded.sessions:
                for session in top.all_sessions():
                    if session.calls:
                        sessions += 1
                        df.update(session_facts(session))
    return sessions, df


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", default=os.environ.get("CONTEXTKIT_CORPUS"))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--min-df", type=int, default=3)
    args = parser.parse_args()
    if not args.corpus:
        parser.error("give the corpus folder or set CONTEXTKIT_CORPUS")
    sessions, df = count(Path(args.corpus))
    kept = {f: n for f, n in sorted(df.items()) if n >= args.min_df}
    payload = {
        "about": "sessions of the corpus holding each recall fact (scripts/fact_frequencies.py)",
        "sessions": sessions,
        "min_df": args.min_df,
        "df": kept,
    }
    args.out.write_text(json.dumps(payload, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{sessions} sessions, {len(df)} distinct facts, {len(kept)} written to {args.out}")


if __name__ == "__main__":
    main()
