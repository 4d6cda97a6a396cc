"""Digest every Claude Code corpus file as loaded by the ``contextkit`` on ``sys.path``.

Run it twice, once against another checkout's ``src`` (``PYTHONPATH=<checkout>/src``), and compare
the outputs: a line per file with the number of calls, of request messages, and a digest of every
call (request, response, usage, stop reason, line) and note, sessions and subagents included::

    uv run python scripts/compare_claude_code_loads.py > new.txt
    PYTHONPATH=../main/src uv run python scripts/compare_claude_code_loads.py > old.txt
    diff old.txt new.txt

Extra files to digest (synthetic transcripts, say) go as arguments.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import contextkit
from contextkit.errors import ContextkitError
from contextkit.formats import detect, load
from contextkit.messages import to_payload
from contextkit.session import Session


def _digest(session: Session, h: hashlib._Hash) -> tuple[int, int]:
    calls = messages = 0
    for call in session.calls:
        body = {
            "request": to_payload(call.request),
            "response": to_payload(call.response) if call.response else None,
            "usage": call.usage.model_dump() if call.usage else None,
            "stop": call.stop_reason,
            "line": call.line,
        }
        h.update(json.dumps(body, sort_keys=True).encode("utf-8", "surrogatepass"))
        calls += 1
        messages += len(call.request.messages)
    h.update(json.dumps([list(session.notes), list(session.compactions)]).encode())
    for sub in session.subagents:
        c, m = _digest(sub, h)
        calls, messages = calls + c, messages + m
    return calls, messages


def main() -> None:
    root = Path(os.environ.get("CONTEXTKIT_CORPUS", "/work/shared/data/sessions"))
    print(f"# contextkit from {Path(contextkit.__file__).parent}", file=sys.stderr)
    extra = [Path(p) for p in sys.argv[1:]]  # more files (synthetic transcripts, say)
    for path in [*sorted(root.rglob("*.jsonl")), *extra]:
        try:
            if detect(path).name != "claude-code":
                continue
        except Exception:
            continue
        try:
            loaded = load(path, lenient=True)
        except ContextkitError as exc:
            print(f"{path.name} error {exc}")
            continue
        h = hashlib.sha256()
        calls = messages = 0
        for session in loaded.sessions:
            c, m = _digest(session, h)
            calls, messages = calls + c, messages + m
        print(f"{path.name} calls={calls} messages={messages} {h.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
