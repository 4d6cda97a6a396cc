"""Probes: deterministic questions about what the agent must still know, asked wherever a
strategy edits the view, in the categories published probe evaluations of context compression
use. Fact recall (:mod:`._recall`) is the "facts later used" category; the others:

- ``artifacts``: the artifact trail, every file the agent read or modified so far (the paths its
  tool calls named: ``file_path``, ``path``, ``notebook_path``, ``filename``); a path passes when
  the view holds it whole, or its last two parts (``session/state.go``), or a file name
  distinctive enough to find it again (an extension and 12+ characters:
  ``manual_commit_session.go``), as summaries name files;
- ``task``: the task, the first request the user typed; it passes when the view holds its opening
  words verbatim, or at least 60% of the distinct words of 4+ letters of its first 200
  characters (a summary restates the task in its own words);
- ``instructions``: every constraint the user typed (a sentence with ``do not``, ``don't``,
  ``never``, ``always``, ``must``, ``only``, ``make sure``);
- ``decisions``: the agent's latest decisions (up to :data:`MAX_DECISIONS`), its sentences that
  state a choice or a cause ("decided", "instead of", "going with", "root cause", ...); one passes
  verbatim or, restated, on 60% of its words as the task does;
- ``errors``: errors still open, the first line of each tool result marked as an error in the
  current turn;
- ``next``: the next steps, every open item (pending or in progress) of the latest todo list the
  agent wrote (``TodoWrite``, ``todo_write``, Codex's ``update_plan``).

A probe passes when the view holds its answer, verbatim or inside a summary the strategy wrote
(the text of every message, the system prompt and the tools' descriptions are searched). Each is
asked from the tape of that call (what the agent had been told or had done by then), so a probe
is a question the full history can always answer: the view is scored against it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from contextkit.accounting import split_user_text
from contextkit.messages import Conversation, Message, TextBlock, ToolResultBlock, ToolUseBlock
from contextkit.replay._walk import _Walker, _with_head
from contextkit.session import Session
from contextkit.tokens import block_text

CATEGORIES = ("artifacts", "task", "instructions", "decisions", "errors", "next")
DECISION = re.compile(
    r"\b(?:decided|decision|instead of|chose|going with|we'll use|I'll use|root cause|"
    r"the fix is|the issue is|the problem is)\b",
    re.IGNORECASE,
)
MAX_DECISIONS = 10
"""The latest decisions a probe asks for (an agent's whole history of choices is not the
question: the ones still standing are)."""
TODO_TOOLS = frozenset({"TodoWrite", "todo_write", "update_plan"})
PATH_KEYS = ("file_path", "path", "notebook_path", "filename")
TASK_CHARS = 200
"""How much of the first request a ``task`` probe asks for (spaces folded): its opening
:data:`TASK_VERBATIM` characters verbatim, or most of its words (:data:`TASK_WORDS`)."""
TASK_VERBATIM = 60
_CONSTRAINT = re.compile(r"\b(?:do not|don't|never|always|must|only|make sure)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_SPACES = re.compile(r"\s+")


def _folded(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def _typed(message: Message) -> str | None:
    """The text a person typed in ``message``: the harness's injected parts (reminders, command
    caveats) left out (None for tool results and assistant messages)."""
    if message.role != "user":
        return None
    if isinstance(message.content, str):
        text = message.content
    elif any(isinstance(b, ToolResultBlock) for b in message.content):
        return None
    else:
        text = "\n".join(b.text for b in message.content if isinstance(b, TextBlock))
    return split_user_text(text)[0]


def questions(tape: Conversation) -> dict[str, tuple[str, ...]]:
    """Each category's answers, asked of the tape of one call (see the module docstring)."""
    paths: dict[str, None] = {}
    instructions: dict[str, None] = {}
    task: str | None = None
    errors: list[str] = []
    todos: tuple[str, ...] = ()
    decisions: dict[str, None] = {}
    for message in tape.messages:
        if message.role == "assistant":
            _decisions(message, decisions)
        typed = _typed(message)
        if typed is not None:
            if typed.strip():
                errors = []  # a new turn: the errors before it are not this turn's
            if task is None and typed.strip():
                task = _folded(typed)[:TASK_CHARS]
            for sentence in _SENTENCE.findall(typed):
                if _CONSTRAINT.search(sentence) and len(sentence.strip()) >= 12:
                    instructions[_folded(sentence)] = None
            continue
        if isinstance(message.content, str):
            continue
        for block in message.content:
            if isinstance(block, ToolUseBlock) and block.name in TODO_TOOLS:
                todos = _open_items(block.input)
            if isinstance(block, ToolUseBlock) and isinstance(block.input, Mapping):
                for key in PATH_KEYS:
                    value = block.input.get(key)
                    if isinstance(value, str) and value.strip():
                        paths[value.strip()] = None
            elif isinstance(block, ToolResultBlock) and block.is_error:
                first = _folded(block_text(block).split("\n", 1)[0])[:120]
                if first:
                    errors.append(first)
    return {
        "artifacts": tuple(paths),
        "task": (task,) if task else (),
        "instructions": tuple(instructions),
        "decisions": tuple(decisions)[-MAX_DECISIONS:],
        "errors": tuple(dict.fromkeys(errors)),
        "next": todos,
    }


def _decisions(message: Message, found: dict[str, None]) -> None:
    """The sentences of an assistant message that state a choice or a cause, added in order."""
    content = message.content
    texts = (
        [content]
        if isinstance(content, str)
        else [b.text for b in content if isinstance(b, TextBlock)]
    )
    for text in texts:
        for sentence in _SENTENCE.findall(text):
            folded = _folded(sentence)
            if 20 <= len(folded) <= 300 and DECISION.search(folded):
                found.pop(folded, None)
                found[folded] = None


def _open_items(given: object) -> tuple[str, ...]:
    """The open items of a todo list call (``todos``: TodoWrite's; ``plan``: update_plan's)."""
    if not isinstance(given, Mapping):
        return ()
    items = given.get("todos") or given.get("plan") or []
    out = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, Mapping) or item.get("status") == "completed":
            continue
        text = item.get("content") or item.get("step")
        if isinstance(text, str) and text.strip():
            out.append(_folded(text))
    return tuple(dict.fromkeys(out))


def view_text(view: Conversation) -> str:
    """Everything the view shows the model, folded: system, tools' descriptions, messages."""
    parts: list[str] = []
    system = view.system
    if isinstance(system, str):
        parts.append(system)
    elif system:
        parts.extend(block_text(b) for b in system)
    parts.extend(t.description or "" for t in view.tools)
    for message in view.messages:
        if isinstance(message.content, str):
            parts.append(message.content)
        else:
            parts.extend(_texts(message))
    return _folded("\n".join(parts))


def _texts(message: Message) -> Iterator[str]:
    for block in message.content if not isinstance(message.content, str) else ():
        if isinstance(block, ToolUseBlock):
            given = block.input  # an object, or the text of a custom tool's call (apply_patch)
            yield " ".join(map(str, given.values())) if isinstance(given, Mapping) else str(given)
        else:
            yield block_text(block)


TASK_WORDS = 0.6
"""Share of the task's distinct words a view must hold for a restated task to pass."""
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'-]{3,}")


def _tails(path: str) -> tuple[str, ...]:
    """Shorter names a view may give a file by: its last two parts, and its file name when that
    is distinctive (an extension, 12+ characters)."""
    parts = [p for p in re.split(r"[\\/]", path) if p]
    tails = []
    if len(parts) >= 2:
        tails.append("/".join(parts[-2:]))
    if parts and "." in parts[-1].strip(".") and len(parts[-1]) >= 12:
        tails.append(parts[-1])
    return tuple(tails)


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def _restated(answer: str, held: set[str], others: Sequence[str] = ()) -> bool:
    """Whether ``held`` (the view's words) restates ``answer``: 60% of its words, and, where it
    has words that ``others`` (the other answers of its kind) lack, one of those (so a view that
    restates one of several alike decisions does not pass them all)."""
    words = _words(answer)
    if not words or len(words & held) < TASK_WORDS * len(words):
        return False
    own = words.difference(*map(_words, others)) if others else set()
    return not own or bool(own & held)


@dataclass
class ProbeScore:
    """Probes asked and passed per category, over every call where the strategy edited the view."""

    asked: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    passed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    failed: list[tuple[int, str, str]] = field(default_factory=list)
    """(call, category, answer) of the first few probes that failed."""

    def ask(self, call: int, tape: Conversation, view: Conversation) -> None:
        held = view_text(view)
        words: set[str] | None = None
        for category, answers in questions(tape).items():
            for answer in answers:
                self.asked[category] += 1
                if category in ("task", "decisions"):
                    size = TASK_VERBATIM if category == "task" else len(answer)
                    passed = _folded(answer)[:size] in held
                    if not passed:
                        words = words if words is not None else _words(held)
                        others = [a for a in answers if a is not answer]
                        passed = _restated(answer, words, others)
                elif _folded(answer) in held:
                    passed = True
                else:
                    passed = category == "artifacts" and any(t in held for t in _tails(answer))
                if passed:
                    self.passed[category] += 1
                elif len(self.failed) < 20:
                    self.failed.append((call, category, answer[:120]))

    def shares(self) -> dict[str, float | None]:
        """Per category, the share of probes that passed (None: none was asked)."""
        return {c: (self.passed[c] / self.asked[c] if self.asked[c] else None) for c in CATEGORIES}


def probe_edits(
    tapes: Sequence[Conversation],
    views: Sequence[Conversation],
    edited: Sequence[bool],
) -> ProbeScore:
    """Probes asked at every call whose view the strategy edited (``edited``)."""
    score = ProbeScore()
    for call, (tape, view, changed) in enumerate(zip(tapes, views, edited, strict=True)):
        if changed and view is not tape:
            score.ask(call, tape, view)
    return score


def probe_harness(session: Session) -> ProbeScore | None:
    """Probes of the harness's own compactions (None where it made none): at each call right
    after one (Claude Code's ``compact_boundary``), the questions the full history answers,
    asked of the request the harness sent, whose summary is its own (its compaction subagent's
    text). The same probes as a strategy's summary faces, so the two can be compared."""
    if not session.compactions:
        return None
    walker = _Walker(session)
    score = ProbeScore()
    wanted, last = set(session.compactions), max(session.compactions)
    for i, call in enumerate(session.calls[: last + 1]):
        thread, new = walker.step(i, call)
        thread.tape = _with_head(thread.tape, call.request, new)
        if i in wanted:
            score.ask(i, thread.tape, call.request)
    return score


__all__ = ["CATEGORIES", "ProbeScore", "probe_edits", "probe_harness", "questions", "view_text"]
