"""Measure Claude Code's hidden prefix from captured requests and record it in the package data.

Usage: ``uv run python scripts/claude_code_prefix.py REQUESTS.jsonl [--seen YYYY-MM-DD] [--out PATH]
[--check]``. ``REQUESTS.jsonl`` is what ``tests/claude_cli_helper.Lab.keep`` writes beside a
scripted session (one ``{"path", "headers", "body"}`` object per request the fake server received;
run ``CONTEXTKIT_CLI_ARTIFACTS=DIR uv run pytest tests/formats/test_claude_code_cli.py`` to keep
them): the first main-conversation request gives ``main``, the first subagent request (header
``x-claude-code-agent-id``) gives ``subagent``, the version comes from the ``user-agent`` header
(``claude-cli/2.1.197 ...``). The entry replaces the one of the same version in ``--out``
(default ``src/contextkit/formats/claude_code/data/claude_code_prefix.json``); ``--check``
prints it instead.

Tokens are counted with tiktoken ``o200k_base`` (:data:`COUNTER`), a stable proxy for Claude's
tokenizer.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping
from datetime import date
from pathlib import Path
from typing import Any

from contextkit.formats.claude_code.prefix import (
    ClaudeCodePrefix,
    RequestPrefix,
    SystemBlock,
    release,
)
from contextkit.messages import parse_conversation
from contextkit.tokens import TiktokenCounter, TokenCounter

DATA = (
    Path(__file__).resolve().parent.parent
    / "src/contextkit/formats/claude_code/data/claude_code_prefix.json"
)
COUNTER = "o200k_base"
OPENING_CHARS = 60
NOTE = (
    "captured from the real CLI driving a local fake server "
    "(tests/formats/test_claude_code_cli.py); tokens are tiktoken o200k_base counts, "
    "a proxy for Claude's tokenizer"
)


def request_prefix(
    body: Mapping[str, Any], headers: Mapping[str, str], counter: TokenCounter
) -> RequestPrefix:
    """The system blocks, tools and settings of one captured request body."""
    system = body.get("system") or []
    blocks = [{"type": "text", "text": system}] if isinstance(system, str) else list(system)
    tools = list(body.get("tools") or [])
    beta = headers.get("anthropic-beta", "")
    return RequestPrefix(
        system=tuple(_system_block(b, counter) for b in blocks),
        tool_count=len(tools),
        tool_tokens=tool_tokens(body, counter),
        tool_names=tuple(str(t.get("name")) for t in tools),
        max_tokens=int(body["max_tokens"]),
        thinking=body.get("thinking"),
        context_management=body.get("context_management"),
        betas=tuple(b for b in beta.split(",") if b),
    )


def _system_block(block: Mapping[str, Any], counter: TokenCounter) -> SystemBlock:
    text = str(block.get("text", ""))
    mark = block.get("cache_control")
    cache = None
    if isinstance(mark, Mapping):
        cache = str(mark.get("type")) + (f"/{mark['ttl']}" if mark.get("ttl") else "")
    return SystemBlock(
        chars=len(text),
        tokens=counter.count_text(text),
        cache_control=cache,
        opening=text.strip()[:OPENING_CHARS],
    )


def tool_tokens(body: Mapping[str, Any], counter: TokenCounter) -> int:
    """What the tool definitions add to a request, as the counter counts it."""
    bare = {"model": body["model"], "max_tokens": 1, "messages": [{"role": "user", "content": "x"}]}
    with_tools = parse_conversation({**bare, "tools": body.get("tools") or []})
    return counter.count_conversation(with_tools) - counter.count_conversation(
        parse_conversation(bare)
    )


def measure(requests: Iterable[Mapping[str, Any]], seen: date) -> ClaudeCodePrefix:
    """The entry for the client that sent ``requests`` (Lab.keep records)."""
    messages = [r for r in requests if str(r.get("path", "")).startswith("/v1/messages?")]
    messages = [r for r in messages if isinstance(r.get("body"), dict)] or messages
    main = next(r for r in messages if "x-claude-code-agent-id" not in r["headers"])
    sub = next((r for r in messages if "x-claude-code-agent-id" in r["headers"]), None)
    counter = TiktokenCounter(COUNTER)
    agent = str(main["headers"].get("user-agent", ""))
    version = release(agent.removeprefix("claude-cli/"))
    return ClaudeCodePrefix(
        version=version,
        seen=seen,
        model=str(main["body"]["model"]),
        counter=counter.name,
        main=request_prefix(main["body"], main["headers"], counter),
        subagent=None if sub is None else request_prefix(sub["body"], sub["headers"], counter),
        notes=(NOTE,),
    )


def record(entry: ClaudeCodePrefix, path: Path) -> None:
    """Write ``entry`` into the data file, replacing the one of the same version."""
    data = json.loads(path.read_text()) if path.exists() else {"versions": []}
    others = [e for e in data["versions"] if e["version"] != entry.version]
    versions = sorted([*others, entry.model_dump(mode="json")], key=lambda e: e["version"])
    path.write_text(json.dumps({"versions": versions}, indent=2, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("requests", type=Path)
    parser.add_argument("--seen", type=date.fromisoformat, default=date.today())
    parser.add_argument("--out", type=Path, default=DATA)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    lines = [json.loads(line) for line in args.requests.read_text().splitlines() if line.strip()]
    entry = measure(lines, args.seen)
    if args.check:
        print(entry.model_dump_json(indent=2))
    else:
        record(entry, args.out)
        print(f"recorded Claude Code {entry.version} in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
