"""What the Claude Code reader rebuilds beside what the real CLI sent (test_claude_code_cli).

Contract:

- :func:`pair_calls` matches every request the fake server accepted with the call the reader
  rebuilt from the transcript, by response: the server's ``request-id`` header is
  ``req_fake_<n>`` for response ``msg_fake_<n>``, and the transcript records it as ``requestId``.
  A request no call answers must be a compaction request (the transcript does not record it): any
  other is reported as unmatched.
- :func:`compare_messages` puts the messages side by side, normalised only where the wire is
  equivalent: ``cache_control`` marks dropped (the transcript does not record where the client
  put its breakpoints) and a string content read as one text block. Every sent block the rebuilt
  message lacks is classified by :func:`hidden_kind`: known kinds are what the transcript does not
  hold; ``None`` is a reader bug. Rebuilt blocks the sent message lacks are always reader bugs.
- Token differences are counted with tiktoken (``cl100k_base``, via :func:`counter_for` of the
  model): a proxy for Claude's tokenizer, close enough to say how big a gap is.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextkit.messages import Message, parse_conversation, to_payload
from contextkit.models import resolve_model
from contextkit.session import Call, Session
from contextkit.testing.fake_anthropic import ReceivedRequest
from contextkit.tokens import TokenCounter, counter_for

COMPACT_MARK = "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools."
USER_CONTEXT = "<system-reminder>\nAs you answer the user's questions, you can use the following"
USER_CONTEXT_KIND = "user context (date, CLAUDE.md)"
"""The client prepends its user context (today's date, CLAUDE.md files) to the first user message
of every request and never writes it down."""
COMPACT_KIND = "compaction instruction"
"""The summary request of an auto-compaction is the history so far with this instruction (about
6k characters) appended to its last user message; the transcript records neither."""
AGENT_LISTING = "\n\n<system-reminder>\nAvailable agent types for the Agent tool:"
SUBAGENT_LISTING_KIND = "agent listing sent to a subagent (not in its file)"
"""A subagent's second request appends the agent listing to its first tool result; the subagent's
file has no attachment record for it (the main file's listing is its own)."""


def counter(model: str) -> TokenCounter:
    return counter_for(resolve_model(model))


def is_compaction(request: ReceivedRequest) -> bool:
    return COMPACT_MARK in request.raw


def explain(block: Mapping[str, Any], rebuilt: list[dict[str, Any]]) -> tuple[str, Any] | None:
    """(kind, what the block is without its hidden part: None when all of it is hidden) for a sent
    block that differs from the rebuilt ones only by what the transcript does not hold."""
    text = block.get("text")
    if block.get("type") == "text" and isinstance(text, str) and text.startswith(USER_CONTEXT):
        return USER_CONTEXT_KIND, None
    if block.get("type") == "text" and isinstance(text, str) and text.startswith(COMPACT_MARK):
        return COMPACT_KIND, None
    content = block.get("content")
    if block.get("type") == "tool_result" and isinstance(content, str) and AGENT_LISTING in content:
        bare = {**block, "content": content[: content.index(AGENT_LISTING)]}
        if bare in rebuilt:
            return SUBAGENT_LISTING_KIND, bare
    return None


def wire(value: Any) -> Any:
    """A payload without ``cache_control`` marks."""
    if isinstance(value, Mapping):
        return {k: wire(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list | tuple):
        return [wire(v) for v in value]
    return value


def blocks_of(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [wire(b) for b in content or ()]


@dataclass
class MessageDiff:
    index: int
    role: str
    sent_tokens: int
    rebuilt_tokens: int
    hidden: dict[str, int] = field(default_factory=dict)
    """Tokens of sent blocks the transcript does not hold, by kind."""
    missing: list[dict[str, Any]] = field(default_factory=list)
    """Sent blocks the rebuilt message lacks that the transcript should hold (reader bugs)."""
    extra: list[dict[str, Any]] = field(default_factory=list)
    """Rebuilt blocks the sent message lacks (reader bugs)."""

    @property
    def unexplained(self) -> int:
        return self.sent_tokens - self.rebuilt_tokens - sum(self.hidden.values())

    @property
    def exact(self) -> bool:
        return not self.missing and not self.extra and self.unexplained == 0


@dataclass
class CallDiff:
    request: ReceivedRequest
    call: Call | None
    messages: list[MessageDiff]
    count_mismatch: int = 0
    """Sent messages minus rebuilt messages."""
    prefix: dict[str, int] = field(default_factory=dict)
    """Tokens of what every request carries that no transcript holds: system, tools."""

    @property
    def exact(self) -> bool:
        return self.count_mismatch == 0 and all(m.exact for m in self.messages)


def all_calls(sessions: Iterable[Session]) -> dict[str, Call]:
    out: dict[str, Call] = {}
    for top in sessions:
        for session in top.all_sessions():
            for call in session.calls:
                if call.request_id:
                    out[call.request_id] = call
    return out


def pair_calls(
    requests: Sequence[ReceivedRequest], sessions: Iterable[Session]
) -> list[tuple[ReceivedRequest, Call | None]]:
    calls = all_calls(sessions)
    out: list[tuple[ReceivedRequest, Call | None]] = []
    for r in requests:
        if not r.accepted or r.response is None:
            continue
        key = str(json.loads(r.response)["id"]).replace("msg_", "req_", 1)
        out.append((r, calls.get(key)))
    return out


def compare_call(request: ReceivedRequest, call: Call) -> CallDiff:
    body = request.body
    count = counter(str(body["model"]))
    sent = [dict(m) for m in body["messages"]]
    rebuilt = [to_payload(m) for m in call.request.messages]
    diffs = [
        compare_message(i, s, r, count) for i, (s, r) in enumerate(zip(sent, rebuilt, strict=False))
    ]
    return CallDiff(
        request=request,
        call=call,
        messages=diffs,
        count_mismatch=len(sent) - len(rebuilt),
        prefix=prefix_tokens(body, count),
    )


def compare_message(
    index: int, sent: Mapping[str, Any], rebuilt: Mapping[str, Any], count: TokenCounter
) -> MessageDiff:
    """Sent and rebuilt side by side: the sent message with each hidden part taken out must equal
    the rebuilt one; each kind's tokens are what taking out only that kind's parts removes."""
    s_blocks, r_blocks = blocks_of(sent), blocks_of(rebuilt)
    role = str(sent.get("role"))
    diff = MessageDiff(index, role, message_tokens(sent, count), message_tokens(rebuilt, count))
    explained: list[dict[str, Any]] = []
    parts: list[tuple[int, str, Any]] = []
    for i, block in enumerate(s_blocks):
        found = None if block in r_blocks else explain(block, r_blocks)
        if found is None:
            explained.append(block)
            continue
        parts.append((i, *found))
        if found[1] is not None:
            explained.append(found[1])
    for kind in dict.fromkeys(k for _, k, _ in parts):
        without = _replaced(s_blocks, {i: bare for i, k, bare in parts if k == kind})
        rest = message_tokens({"role": role, "content": without}, count)
        diff.hidden[kind] = diff.sent_tokens - rest
    if sent.get("role") != rebuilt.get("role") or explained != r_blocks:
        diff.missing = [b for b in explained if b not in r_blocks] or [{"type": "(order)"}]
        diff.extra = [b for b in r_blocks if b not in explained]
    return diff


def _replaced(blocks: list[dict[str, Any]], parts: Mapping[int, Any]) -> list[dict[str, Any]]:
    out = []
    for i, block in enumerate(blocks):
        if i not in parts:
            out.append(block)
        elif parts[i] is not None:
            out.append(parts[i])
    return out


def message_tokens(message: Mapping[str, Any], count: TokenCounter) -> int:
    return count.count_message(Message.model_validate({**message, "content": blocks_of(message)}))


def prefix_tokens(body: Mapping[str, Any], count: TokenCounter) -> dict[str, int]:
    """Tokens of the system blocks and of the tool definitions (as one request would count)."""
    bare = {"model": body["model"], "max_tokens": 1, "messages": [{"role": "user", "content": "x"}]}
    base = count.count_conversation(parse_conversation(bare))
    out: dict[str, int] = {}
    for key in ("system", "tools"):
        if body.get(key):
            with_key = parse_conversation({**bare, key: body[key]})
            out[key] = count.count_conversation(with_key) - base
    return out


def report(diffs: Sequence[CallDiff]) -> str:
    """One line per message: sent and rebuilt tokens, the hidden part, what is unexplained."""
    lines = []
    for d in diffs:
        label = d.call.request_id if d.call else "(no call)"
        prefix = ", ".join(f"{k} {v}" for k, v in d.prefix.items())
        lines.append(f"request {d.request.index} ({label}): hidden prefix {prefix}")
        if d.count_mismatch:
            lines.append(f"  message count differs by {d.count_mismatch}")
        for m in d.messages:
            hidden = ", ".join(f"{k} {v}" for k, v in m.hidden.items()) or "-"
            lines.append(
                f"  msg {m.index:2d} {m.role:9s} sent {m.sent_tokens:6d} rebuilt "
                f"{m.rebuilt_tokens:6d} diff {m.sent_tokens - m.rebuilt_tokens:5d} hidden: "
                f"{hidden}; unexplained {m.unexplained}"
                + (f" MISSING {_short(m.missing)}" if m.missing else "")
                + (f" EXTRA {_short(m.extra)}" if m.extra else "")
            )
    return "\n".join(lines)


def _short(blocks: list[dict[str, Any]]) -> str:
    return "; ".join(json.dumps(b)[:160] for b in blocks)
