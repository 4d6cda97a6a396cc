"""Strict quality measures of a view: what a recorded response copied, and the edits it made.

Fact recall (:mod:`._recall`) asks whether a view still holds the identifiers a response used;
an identifier is usually repeated all over a session, so a view that dropped every tool result
keeps most of them. The measures here ask for the text itself:

- **Copied-span recall.** A *span* is a line of the recorded response (its text, thinking and the
  string values of its tool inputs), stripped, of at least :data:`SPAN_MIN_CHARS` characters with
  a letter or digit in it. A span is *needed* at a call when some message of the tape at that call
  (or its system prompt) holds the same line: the response copied it from there. It is *kept*
  when the view still holds it. Lines are compared after stripping and after removing a
  line-number gutter (``"    12→"`` or ``"    12<TAB>"``, as ``Read`` and ``cat -n`` print it).
- **Edit feasibility.** Every ``old_string`` (``old_str``, ``oldText``; each of a ``MultiEdit``'s
  ``edits``) of a tool call in the response must occur verbatim in the view (after gutters are
  removed), or the edit the model made could not have been made from what it saw. An edit is
  *needed* when the tape held its ``old_string``; one the tape never held (the model wrote it from
  a grep line or memory) is counted as *unseen* and left out of the fraction. A Codex
  ``apply_patch`` patch counts one edit per hunk of an updated file: its context and removed
  lines, in order (:mod:`._patch`), are its ``old_string``.

Both are exact string tests, deterministic, and depend only on the tape, the view and the recorded
response. What they cannot say: replay keeps the recorded responses, so a lost span means the
recorded model could not have copied it from this view, not that a model on this view would have
failed (it might have read the file again, at a cost replay does not see).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from contextkit.messages import (
    Block,
    Conversation,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
)
from contextkit.replay._patch import is_patch, patch_old_texts
from contextkit.tokens import block_text

SPAN_MIN_CHARS = 30
"""The shortest line that counts as a copied span (shorter lines repeat by chance)."""
EDIT_KEYS = ("old_string", "old_str", "oldText")
"""Input keys that hold the text an edit replaces (Claude Code ``Edit``, Anthropic's
``str_replace`` tools, pi's ``edit``); a list under ``edits`` holds a ``MultiEdit``'s edits."""
_GUTTER = re.compile(r"\n[ \t]*\d+(?:→|\t)")
"""A line-number gutter after a newline (a literal first: the engine skips ahead to each
newline in C, where a multiline ``^`` is tried at every position)."""
_ALNUM = re.compile(r"[A-Za-z0-9]")


def _strings(value: object) -> Iterator[str]:
    """Every string inside a JSON value (a tool input), depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _tool_input_text(block: ToolUseBlock) -> str:
    return "\n".join(_strings(block.input))


def _reader(cls: type) -> Callable[[Any], str]:
    if issubclass(cls, TextBlock):
        return attrgetter("text")
    if issubclass(cls, ThinkingBlock):
        return attrgetter("thinking")
    if issubclass(cls, ToolUseBlock):
        return _tool_input_text
    return block_text


_READERS: dict[type, Callable[[Any], str]] = {}
"""How each block class's quote text is read, worked out once per class (an ``isinstance``
chain against pydantic models runs their metaclass check in Python, block after block)."""


def _block_quote_text(block: Block) -> str:
    read = _READERS.get(type(block))
    if read is None:
        read = _READERS[type(block)] = _reader(type(block))
    return read(block)


def quote_text(message: Message) -> str:
    """The text of a message as a model would copy from it, line-number gutters removed: tool
    inputs as their string values (not JSON, whose escapes would hide multi-line text)."""
    content = message.content
    text = content if isinstance(content, str) else "\n".join(map(_block_quote_text, content))
    return _without_gutters(text)


def _without_gutters(text: str) -> str:
    if "→" not in text and "\t" not in text:
        return text
    return _GUTTER.sub("\n", "\n" + text)[1:]


def span_lines(text: str) -> frozenset[str]:
    """The lines of ``text`` that can be copied spans (stripped, long enough, not decoration)."""
    stripped = (line.strip() for line in text.splitlines())
    return frozenset(s for s in stripped if len(s) >= SPAN_MIN_CHARS and _ALNUM.search(s))


def edit_strings(response: Message) -> tuple[str, ...]:
    """The ``old_string`` of every edit the response makes (in order; empty ones left out)."""
    if isinstance(response.content, str):
        return ()
    found: list[str] = []
    for block in response.content:
        if not isinstance(block, ToolUseBlock):
            continue
        payload = block.input
        if isinstance(payload, Mapping):
            _edit_strings(payload, found)
            _patches(payload.values(), found)
        elif isinstance(payload, str):  # a free-text tool's input (Codex's apply_patch)
            _patches((payload,), found)
    return tuple(found)


def _edit_strings(payload: Mapping[str, object], found: list[str]) -> None:
    for key in EDIT_KEYS:
        value = payload.get(key)
        if isinstance(value, str) and value:
            found.append(value)
    edits = payload.get("edits")
    if isinstance(edits, list | tuple):
        for edit in edits:
            if isinstance(edit, Mapping):
                _edit_strings(edit, found)


def _patches(values: Iterable[object], found: list[str]) -> None:
    """The hunks of the patches among ``values``: a free-text input, a top-level string field
    (``cmd``, ``input``) or an item of a top-level list (``command: ["bash", "-lc", ...]``, a
    shell command piping a patch into ``apply_patch``). Shallow on purpose: this runs on every
    tool call of every response."""
    for value in values:
        if isinstance(value, str):
            if is_patch(value):
                found.extend(patch_old_texts(value))
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, str) and is_patch(item):
                    found.extend(patch_old_texts(item))


@dataclass(frozen=True)
class CallQuality:
    """The strict measures at one call."""

    spans_needed: int
    spans_kept: int
    edits_needed: int
    edits_feasible: int
    edits_unseen: int = 0
    lost: tuple[str, ...] = ()
    """Spans lost and ``old_string``\\ s the view no longer held (the first few, shortened)."""


NOTHING = CallQuality(0, 0, 0, 0)


@dataclass
class QuoteIndex:
    """Copied-span lines and quote texts per message object, computed once per object.

    ``wanted``: every span line some recorded response has (no other line can be needed), so a
    message's set holds only those and stays small."""

    wanted: frozenset[str]
    _lines: dict[int, tuple[Message, frozenset[str]]] = field(default_factory=dict)
    _texts: dict[int, tuple[Message, str]] = field(default_factory=dict)
    _systems: dict[int, tuple[object, frozenset[str], str]] = field(default_factory=dict)

    @classmethod
    def of_responses(cls, responses: Iterable[Message | None]) -> QuoteIndex:
        lines: set[str] = set()
        for response in responses:
            if response is not None:
                lines |= span_lines(quote_text(response))
        return cls(frozenset(lines))

    def text(self, message: Message) -> str:
        hit = self._texts.get(id(message))
        if hit is None or hit[0] is not message:
            hit = self._texts[id(message)] = (message, quote_text(message))
        return hit[1]

    def lines(self, message: Message) -> frozenset[str]:
        hit = self._lines.get(id(message))
        if hit is None or hit[0] is not message:
            found: frozenset[str] = frozenset()
            if self.wanted:  # every wanted line is a span line: no need to filter the rest
                found = self.wanted.intersection(map(str.strip, self.text(message).splitlines()))
            hit = self._lines[id(message)] = (message, found)
        return hit[1]

    def union(self, messages: Iterable[Message]) -> set[str]:
        out: set[str] = set()
        for message in messages:
            out |= self.lines(message)
        return out

    def system(self, conversation: Conversation) -> tuple[frozenset[str], str]:
        """The span lines and quote text of a conversation's system prompt."""
        system = conversation.system
        hit = self._systems.get(id(system))
        if hit is None or hit[0] is not system:
            text = _without_gutters("\n".join(block_text(b) for b in conversation.system_blocks))
            hit = self._systems[id(system)] = (system, span_lines(text) & self.wanted, text)
        return hit[1], hit[2]

    def holds(self, needle: str, conversation: Conversation) -> bool:
        """Whether some message of ``conversation`` (newest first) or its system holds it."""
        if any(needle in self.text(m) for m in reversed(conversation.messages)):
            return True
        return needle in self.system(conversation)[1]


def score_quality(
    index: QuoteIndex,
    response: Message | None,
    tape: Conversation,
    tape_lines: set[str],
    view: Conversation,
    view_lines: set[str],
) -> CallQuality:
    """The strict measures of one call: ``tape_lines`` / ``view_lines`` are the span lines the
    tape's and the view's messages hold (kept up to date by the caller as messages append)."""
    if response is None:
        return NOTHING
    spans = index.lines(response)  # a response's span lines are all wanted
    edits = edit_strings(response)
    if not spans and not edits:
        return NOTHING
    same = view is tape or (view_lines is tape_lines and view.system is tape.system)
    tape_system = index.system(tape)[0]
    needed = spans & tape_lines
    if tape_system and len(needed) < len(spans):
        needed |= spans & tape_system
    view_system = tape_system if view.system is tape.system else index.system(view)[0]
    lost = [] if same else sorted(needed - view_lines - view_system)
    wanted = [e for e in edits if index.holds(e, tape)]
    infeasible = [] if same else [e for e in wanted if not index.holds(e, view)]
    examples = tuple(_short(t) for t in [*infeasible, *lost][:4])
    return CallQuality(
        spans_needed=len(needed),
        spans_kept=len(needed) - len(lost),
        edits_needed=len(wanted),
        edits_feasible=len(wanted) - len(infeasible),
        edits_unseen=len(edits) - len(wanted),
        lost=examples,
    )


def _short(text: str, limit: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


@dataclass(frozen=True)
class QualityReport:
    """The strict measures over a session."""

    spans_needed: int
    spans_kept: int
    edits_needed: int
    edits_feasible: int
    edits_unseen: int
    examples: tuple[tuple[int, str], ...] = ()
    """(call index, lost span or infeasible ``old_string``), the first few."""

    @property
    def span_recall(self) -> float:
        """Share of copied spans the views still held (1.0 when none was copied)."""
        return self.spans_kept / self.spans_needed if self.spans_needed else 1.0

    @property
    def edit_feasibility(self) -> float:
        """Share of edits whose ``old_string`` the views still held (1.0 when none)."""
        return self.edits_feasible / self.edits_needed if self.edits_needed else 1.0

    @property
    def edits_infeasible(self) -> int:
        return self.edits_needed - self.edits_feasible


def summarise_quality(calls: Sequence[CallQuality], max_examples: int = 12) -> QualityReport:
    examples: list[tuple[int, str]] = []
    for i, call in enumerate(calls):
        examples.extend((i, t) for t in call.lost[: max(0, max_examples - len(examples))])
    return QualityReport(
        spans_needed=sum(c.spans_needed for c in calls),
        spans_kept=sum(c.spans_kept for c in calls),
        edits_needed=sum(c.edits_needed for c in calls),
        edits_feasible=sum(c.edits_feasible for c in calls),
        edits_unseen=sum(c.edits_unseen for c in calls),
        examples=tuple(examples),
    )


__all__ = [
    "EDIT_KEYS",
    "NOTHING",
    "SPAN_MIN_CHARS",
    "CallQuality",
    "QualityReport",
    "QuoteIndex",
    "edit_strings",
    "quote_text",
    "score_quality",
    "span_lines",
    "summarise_quality",
]
