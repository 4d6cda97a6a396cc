"""Digests of every corpus session replayed as recorded and under every preset: the rows, the
recall, the quality measures, the receipts and the dumped requests (as ``replay --dump-requests``
writes them), one line per session and strategy.

A restructure that changes no behaviour leaves this output byte-identical. Run it before and after
and compare::

    CONTEXTKIT_CORPUS=../shared/data/sessions uv run python scripts/replay_digests.py > before.txt
    ...
    diff before.txt after.txt

One session is replayed at a time and dropped (a replay holds every view and request of its
session), so memory follows the largest session, not the corpus.
"""

from __future__ import annotations

import hashlib
import os
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

from contextkit.pricing import UnknownPriceWarning
from contextkit.replay import Replay, replay, replay_as_recorded
from contextkit.strategies import PRESETS, strategy_from_spec
from contextkit.testing.corpus import labelled_sessions
from contextkit.tokens import counter_for
from contextkit.wire import dump_request_line


def _hash(parts: Iterator[str]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\n")
    return digest.hexdigest()[:16]


def digest(result: Replay) -> str:
    rows = _hash(row.model_dump_json() for row in result.rows)
    receipts = _hash(repr([r.model_dump(mode="json") for r in step]) for step in result.receipts)
    requests = _hash(dump_request_line(c) for c in result.requests)
    quality = repr(result.quality) if result.quality is not None else "-"
    summary = _hash(iter([repr(sorted(result.summary().items()))]))
    recall = repr(result.recall)
    return (
        f"rows={rows} receipts={receipts} requests={requests} summary={summary} "
        f"recall={_hash(iter([recall]))} quality={_hash(iter([quality]))}"
    )


def main() -> int:
    if os.environ.get("PYTHONHASHSEED") != "0":
        # The recall report keeps its first few lost facts in set order, which follows string
        # hashing: one seed for both runs, or the digests differ where the code does not.
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        os.execve(sys.executable, [sys.executable, *sys.argv], env)
    root = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ["CONTEXTKIT_CORPUS"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownPriceWarning)
        for key, session in labelled_sessions(root):
            counter = counter_for(session.model_info)
            print(f"{key} as-recorded {digest(replay_as_recorded(session, counter=counter))}")
            for name in PRESETS:
                result = replay(session, strategy_from_spec(name), name=name, counter=counter)
                print(f"{key} {name} {digest(result)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
