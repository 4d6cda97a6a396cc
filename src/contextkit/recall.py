"""What a view lost: a deterministic score of what later steps needed that the view no longer held.

For each call, the *needed facts* are the identifiers, file paths, numbers and error strings that
the recorded response uses and that appeared earlier in the full history (the tape). A needed fact
is *kept* when some message of the view (including a summary the strategy wrote) still holds it.
Recall is kept / needed over the session. Facts are extracted with the same rules from both sides,
so the measure is consistent; it is a proxy (a model might have re-derived a lost fact, or used one
the proxy does not see), and reports list examples so a person can judge.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from contextkit.messages import Conversation, Message
from contextkit.tokens import block_text

# Each pattern is written so that the regex engine can skip ahead cheaply (a literal or a
# character set first, lookbehinds after it); they match exactly what the plain forms match:
# _PATH  (?:[\w.-]+/)+[\w.-]+\.[A-Za-z]\w{0,5}\b | \b[\w-]+\.(?:py|js|...)\b
# _NUMBER (?<![\w.])\d{3,}(?:\.\d+)?(?![\w.])   _IDENT \b[A-Za-z_][A-Za-z0-9_]{5,}\b
# _ERROR \b[A-Z]\w*(?:Error|Exception)\b(?::[^\n]{1,120})?
_PATH = re.compile(
    r"(?:[\w.-]+/)+[\w.-]+\.[A-Za-z]\w{0,5}\b|\b[\w-]+\.(?:py|js|ts|tsx|rs|go|java|md|json|toml|ya?ml|txt|c|h|cpp|rb|sh|cfg|ini|html|css)\b"
)
_PATH_RUN = re.compile(r"(?<![\w./-])[\w./-]*?\.[A-Za-z][\w./-]*")
"""Maximal runs of path characters holding a dot before a letter: a path match never crosses a
run's ends (the characters around a run are non-word, as the ``\b`` in ``_PATH`` need), so
``_PATH`` over the runs finds what it finds over the text, without trying every word. The
lookbehind starts a run only at its first character and the lazy scan finds its first dot once
(a greedy scan from every position of a long dotless run was quadratic in the run)."""
_ERROR = re.compile(r"[A-Z](?<!\w[A-Z])\w*(?:Error|Exception)\b(?::[^\n]{1,120})?")
_NUMBER = re.compile(r"\d(?<![\w.]\d)\d{2,}(?:\.\d+)?(?![\w.])")
_IDENT = re.compile(r"[A-Za-z_](?<!\w[A-Za-z_])[A-Za-z0-9_]{5,}\b")
_STOP = frozenset(
    {
        "return",
        "import",
        "should",
        "python",
        "string",
        "number",
        "object",
        "function",
        "because",
    }
)


def _is_identifier(word: str) -> bool:
    """snake_case, a digit, or mixed case (an upper-case letter after the first). Words are
    ASCII ``[A-Za-z0-9_]`` (see ``_IDENT``), so str methods stand in for per-character loops."""
    if word.lower() in _STOP:
        return False
    tail, letters_digits = word[1:], word.replace("_", "")
    has_digit = bool(letters_digits) and not letters_digits.isalpha()
    has_mixed = tail != tail.lower() and word != word.upper()
    return "_" in word.strip("_") or has_digit or has_mixed


def extract_facts(text: str, verdicts: dict[str, bool] | None = None) -> frozenset[str]:
    r"""Identifiers, paths, numbers and error strings in ``text``.

    ``verdicts`` memoises :func:`_is_identifier` per word (a :class:`FactIndex` passes its own:
    a session repeats its words in message after message).

    Why whitespace-separated pieces: no path, number or identifier match holds or looks past
    whitespace (it is neither ``\w`` nor ``.``, so it bounds ``\b`` and the lookarounds as the
    text's ends do), so the patterns find the same over each distinct piece, joined by newlines,
    as over the text, and a message that repeats a line or a word is scanned once per distinct
    piece. Only error strings (whose message runs on past spaces) are read from the text itself.
    """
    facts: set[str] = set()
    pieces = set(text.split())
    dotted = "\n".join([p for p in pieces if "." in p])  # a path holds a dot
    for run in _PATH_RUN.findall(dotted):
        facts.update(_PATH.findall(run))
    if "Error" in text or "Exception" in text:  # _ERROR needs one of them; skip the scan
        facts.update(m.strip() for m in _ERROR.findall(text))
    joined = "\n".join(pieces)
    facts.update(_NUMBER.findall(joined))
    words = set(_IDENT.findall(joined))
    if verdicts is None:
        facts.update(w for w in words if _is_identifier(w))
        return frozenset(facts)
    for word in words:
        verdict = verdicts.get(word)
        if verdict is None:
            verdict = verdicts[word] = _is_identifier(word)
        if verdict:
            facts.add(word)
    return frozenset(facts)


def message_text(message: Message) -> str:
    if isinstance(message.content, str):
        return message.content
    return "\n".join(block_text(b) for b in message.content)


@dataclass
class FactIndex:
    """Facts per message object, computed once per object (views share their messages)."""

    _memo: dict[int, tuple[Message, frozenset[str]]] = field(default_factory=dict)
    _verdicts: dict[str, bool] = field(default_factory=dict)
    """Whether a word is an identifier, per word (bounded by the session's vocabulary)."""
    _systems: dict[int, tuple[object, str]] = field(default_factory=dict)

    def of(self, message: Message) -> frozenset[str]:
        hit = self._memo.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        facts = extract_facts(message_text(message), self._verdicts)
        self._memo[id(message)] = (message, facts)
        return facts

    def system_text(self, conversation: Conversation) -> str:
        """:func:`system_text`, once per system prompt object (views share their head's)."""
        system = conversation.system
        hit = self._systems.get(id(system))
        if hit is None or hit[0] is not system:
            hit = self._systems[id(system)] = (system, system_text(conversation))
        return hit[1]

    def held(self, fact: str, messages: Sequence[Message], system: str = "") -> bool:
        if fact in system:
            return True
        return any(fact in self.of(m) for m in reversed(messages))

    def union(self, messages: Iterable[Message]) -> set[str]:
        """Every fact the messages hold (a new set: callers may grow it as messages append)."""
        out: set[str] = set()
        for message in messages:
            out |= self.of(message)
        return out


@dataclass(frozen=True)
class Held:
    """What a conversation holds: the facts of its messages and its system text (a fact counts
    as held by the system prompt when it occurs in it as a substring)."""

    facts: AbstractSet[str]
    system: str = ""

    def __contains__(self, fact: object) -> bool:
        return fact in self.facts or (isinstance(fact, str) and fact in self.system)


@dataclass(frozen=True)
class CallRecall:
    needed: int
    kept: int
    lost: tuple[str, ...]


def score_call(
    index: FactIndex, response: Message | None, tape: Conversation, view: Conversation
) -> CallRecall:
    """Needed facts of one call (used by the response, present in the tape) and which survived."""
    if response is None:
        return CallRecall(0, 0, ())
    tape_held = Held(index.union(tape.messages), system_text(tape))
    view_held = Held(index.union(view.messages), system_text(view))
    return score_facts(index.of(response), tape_held, view_held)


def score_facts(wanted: Iterable[str], tape: Held, view: Held) -> CallRecall:
    """The facts of ``wanted`` the tape held (needed), and those the view no longer held (lost).

    Replay keeps :class:`Held` sets up to date as messages append, so scoring a call costs the
    size of its response, not of the history."""
    needed = sorted(f for f in wanted if f in tape)
    lost = tuple(f for f in needed if f not in view)
    return CallRecall(len(needed), len(needed) - len(lost), lost)


def system_text(conversation: Conversation) -> str:
    return "\n".join(block_text(b) for b in conversation.system_blocks)


@dataclass(frozen=True)
class RecallReport:
    needed: int
    kept: int
    examples: tuple[tuple[int, str], ...]
    """(call index, lost fact), the first few."""

    @property
    def recall(self) -> float:
        """Share of needed facts still held (1.0 when nothing was needed)."""
        return self.kept / self.needed if self.needed else 1.0


def summarise(calls: Iterable[CallRecall], max_examples: int = 12) -> RecallReport:
    needed = kept = 0
    examples: list[tuple[int, str]] = []
    for i, call in enumerate(calls):
        needed += call.needed
        kept += call.kept
        examples.extend((i, f) for f in call.lost[: max(0, max_examples - len(examples))])
    return RecallReport(needed, kept, tuple(examples))


__all__ = [
    "CallRecall",
    "FactIndex",
    "Held",
    "RecallReport",
    "extract_facts",
    "message_text",
    "score_call",
    "score_facts",
    "summarise",
    "system_text",
]
