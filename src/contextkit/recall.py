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
from dataclasses import dataclass, field

from contextkit.messages import Conversation, Message
from contextkit.tokens import block_text

_PATH = re.compile(
    r"(?:[\w.-]+/)+[\w.-]+\.[A-Za-z]\w{0,5}\b|\b[\w-]+\.(?:py|js|ts|tsx|rs|go|java|md|json|toml|ya?ml|txt|c|h|cpp|rb|sh|cfg|ini|html|css)\b"
)
_ERROR = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b(?::[^\n]{1,120})?")
_NUMBER = re.compile(r"(?<![\w.])\d{3,}(?:\.\d+)?(?![\w.])")
_IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]{5,}\b")
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
    if word.lower() in _STOP:
        return False
    has_mixed = any(c.isupper() for c in word[1:]) and any(c.islower() for c in word)
    return "_" in word.strip("_") or any(c.isdigit() for c in word) or has_mixed


def extract_facts(text: str) -> frozenset[str]:
    """Identifiers, paths, numbers and error strings in ``text``."""
    facts: set[str] = set(_PATH.findall(text))
    facts.update(m.strip() for m in _ERROR.findall(text))
    facts.update(_NUMBER.findall(text))
    facts.update(w for w in _IDENT.findall(text) if _is_identifier(w))
    return frozenset(facts)


def message_text(message: Message) -> str:
    if isinstance(message.content, str):
        return message.content
    return "\n".join(block_text(b) for b in message.content)


@dataclass
class FactIndex:
    """Facts per message object, computed once per object (views share their messages)."""

    _memo: dict[int, tuple[Message, frozenset[str]]] = field(default_factory=dict)

    def of(self, message: Message) -> frozenset[str]:
        hit = self._memo.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        facts = extract_facts(message_text(message))
        self._memo[id(message)] = (message, facts)
        return facts

    def held(self, fact: str, messages: Sequence[Message], system: str = "") -> bool:
        if fact in system:
            return True
        return any(fact in self.of(m) for m in reversed(messages))


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
    system = _system_text(view)
    wanted = sorted(index.of(response))
    needed = [f for f in wanted if index.held(f, tape.messages, _system_text(tape))]
    lost = tuple(f for f in needed if not index.held(f, view.messages, system))
    return CallRecall(len(needed), len(needed) - len(lost), lost)


def _system_text(conversation: Conversation) -> str:
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
    "RecallReport",
    "extract_facts",
    "message_text",
    "score_call",
    "summarise",
]
