"""Request bodies that repeat the previous ones: parse only what is new, share the rest.

A file of request bodies (a raw API trace, a proxy record, a claude-trace log) holds the whole
history again in every request: n calls hold about n²/2 messages, and parsing each body on its own
builds that many message objects, so memory follows the file, not the conversation. A
:class:`BodyReuse` remembers the last few bodies a reader parsed (each message as JSON text, and
what it parsed to); a body whose ``messages`` begin with the same texts as one of them validates
only the messages after that prefix and extends that request's :class:`History`, and a ``tools``
or ``system`` with the same text as that body's takes its parsed value. Requests of one thread
then hold one list of messages between them, and loading costs writing each message as text and
comparing the texts (both in C) plus validating each message once.

Contract: the request parsed with reuse equals, and serialises exactly as, the one parsed from
the body alone: reuse is decided on the same JSON text (so ``"cache_control": null`` and no
``cache_control``, ``1`` and ``1.0``, or keys in another order stay apart), and the messages of
a request are validated independently of one another (no validator looks across messages).
Several threads interleaved in one file (a main agent and its subagents) each find their own
earlier body among the last :data:`RECENT`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from contextkit.messages import Conversation, History, Message

RECENT = 8
"""Bodies remembered per file (threads interleaved in one file find their own among them)."""

_FIELDS = ("system", "tools")
"""Request fields other than messages that repeat from call to call, reused when equal."""


@dataclass(frozen=True, slots=True)
class _Parsed:
    raw_messages: list[str]
    """Each message as JSON text (:func:`_text`)."""
    history: History[Message]
    raw: dict[str, str]
    """The values of :data:`_FIELDS` that the body had, as JSON text."""
    parsed: Conversation


def _text(value: Any) -> str:
    """A parsed JSON value as text: two values with the same text parse to the same request.
    Python's ``==`` is not enough: it takes ``1``, ``1.0`` and ``true`` for one another and dict
    keys in any order, and a field that holds any JSON (a tool's ``input``) writes them back as
    they were."""
    return json.dumps(value, separators=(",", ":"))


class BodyReuse:
    """The last request bodies one reader parsed, for the next to reuse (module docstring)."""

    def __init__(self, recent: int | None = None) -> None:
        self._recent: list[_Parsed] = []
        self._size = RECENT if recent is None else recent
        """0: parse every body on its own."""

    def parse(
        self,
        body: Mapping[str, Any],
        validate: Callable[[Mapping[str, Any], int], Conversation],
    ) -> Conversation:
        """``body`` as a request. ``validate(part, offset)`` validates a body whose ``messages``
        are the body's from index ``offset`` on (and that may lack reused fields); it names a
        bad message by its index in the whole body."""
        raw = body["messages"]
        if self._size <= 0 or not isinstance(raw, list):
            return validate(body, 0)
        texts = [_text(m) for m in raw]
        fields = {key: _text(body[key]) for key in _FIELDS if key in body}
        base, k = self._match(texts)
        part = dict(body)
        part["messages"] = raw[k:]
        reused: dict[str, Any] = {}
        if base is not None:
            for key, text in fields.items():
                if base.raw.get(key) == text:
                    reused[key] = getattr(base.parsed, key)
                    del part[key]
        request = validate(part, k)
        head: History[Message] = base.history[:k] if base is not None else History()
        history = head.extended(request.messages)
        request = request.model_copy(update={"messages": history, **reused})
        self._remember(_Parsed(texts, history, fields, request))
        return request

    def _match(self, raw: list[str]) -> tuple[_Parsed | None, int]:
        """The remembered body sharing the longest run of leading messages with ``raw``, and
        that run's length; with none, the newest body (its fields may still repeat) and 0."""
        best: _Parsed | None = None
        best_k = 0
        for earlier in reversed(self._recent):  # the newest first: it wins a tie
            old = earlier.raw_messages
            m = len(old)
            if not m or not raw or raw[0] != old[0]:
                continue  # another thread (a subagent), decided by the first message
            # Whole comparisons in C first: the body grew (the last message first, a miss in
            # O(1)); the body grew after its last message changed (a cache mark moved on).
            if m <= len(raw) and raw[m - 1] == old[-1] and raw[:m] == old:
                return earlier, m
            if m - 1 <= len(raw) and raw[: m - 1] == old[: m - 1]:
                k = m - 1
            else:  # an edit or a compaction: walk to the first difference
                pairs = enumerate(zip(raw, old, strict=False))
                k = next((i for i, (a, b) in pairs if a != b), min(m, len(raw)))
            if k > best_k:
                best, best_k = earlier, k
        if best is None:
            return (self._recent[-1] if self._recent else None), 0
        return best, best_k

    def _remember(self, parsed: _Parsed) -> None:
        recent = self._recent
        # The body this one grew from is superseded by it (its prefix is this one's).
        recent[:] = [p for p in recent if not parsed.history.shares(p.history)]
        recent.append(parsed)
        del recent[: -self._size]


__all__ = ["RECENT", "BodyReuse"]
