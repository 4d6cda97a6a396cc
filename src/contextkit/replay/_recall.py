"""What a view lost: a deterministic score of what later steps needed that the view no longer held.

For each call, the *needed facts* are the identifiers, file paths, numbers and error strings that
the recorded response uses and that appeared earlier in the full history (the tape). A needed fact
is *kept* when some message of the view (including a summary the strategy wrote) still holds it.
Recall is kept / needed over the session. Facts are extracted with the same rules from both sides,
so the measure is consistent; it is a proxy (a model might have re-derived a lost fact, or used one
the proxy does not see), and reports list examples so a person can judge.

A replay indexes messages with ``index = wanted_index(c.response for c in session.calls)``: the
same as ``FactIndex(wanted=wanted_facts(...))`` (``index.wanted`` is that set), but the responses
are extracted once, and their facts are already known when they come back in later requests.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from contextkit.messages import Conversation, Message
from contextkit.replay._facts import _RunFacts, _runs, _WantedFacts, extract_facts
from contextkit.tokens import block_text


def message_text(message: Message) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    if len(content) == 1:  # most messages: no joined copy
        return block_text(content[0])
    return "\n".join([block_text(b) for b in content])


@dataclass
class FactIndex:
    """Facts per message object, computed once per object (views share their messages).

    With ``wanted``, :meth:`of` gives only the facts among ``wanted`` (``extract_facts & wanted``):
    a replay passes the facts its recorded responses use (:func:`wanted_facts`), the only ones
    that can be needed, and scores exactly as with every fact, for less work.
    :func:`wanted_index` builds that index without extracting the responses twice."""

    wanted: frozenset[str] | None = None
    _memo: dict[int, tuple[Message, frozenset[str]]] = field(default_factory=dict)
    _per_run: _RunFacts | _WantedFacts = field(init=False)
    """Facts per run of path characters (a session repeats its runs message after message)."""
    _systems: dict[int, tuple[object, str]] = field(default_factory=dict)
    _learned: _RunFacts | None = field(default=None, repr=False)
    """Runs already learned (by :func:`wanted_index`), for a ``wanted`` index to start from."""

    def __post_init__(self) -> None:
        if self.wanted is None:
            self._per_run = self._learned or _RunFacts()
        else:
            self._per_run = _WantedFacts(self.wanted, self._learned)
        self._learned = None

    def of(self, message: Message) -> frozenset[str]:
        hit = self._memo.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        facts = self._per_run.facts(message_text(message))
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
        memo = self._memo
        for message in messages:  # the memo looked up here: a call per message cost more
            hit = memo.get(id(message))
            out |= hit[1] if hit is not None and hit[0] is message else self.of(message)
        return out


def _all_facts(messages: list[Message]) -> tuple[list[frozenset[str]], _RunFacts]:
    """Each message's facts, its runs learned in one batch (cheaper than text by text)."""
    learned = _RunFacts()
    texts = [message_text(m) for m in messages]
    runs = [_runs(t) for t in texts]
    learned.learn(set().union(*runs))
    return list(map(learned.of_runs, runs, texts)), learned


def wanted_facts(messages: Iterable[Message | None]) -> frozenset[str]:
    """Every fact the messages hold (the recorded responses of a session: what can be needed)."""
    return frozenset().union(*_all_facts([m for m in messages if m is not None])[0])


def wanted_index(responses: Iterable[Message | None]) -> FactIndex:
    """``FactIndex(wanted=wanted_facts(responses))`` (``.wanted`` holds that set), which already
    knows the responses' facts and their runs: they are not extracted again when they come back
    in later requests or are scored."""
    messages = [m for m in responses if m is not None]
    facts, learned = _all_facts(messages)
    index = FactIndex(wanted=frozenset().union(*facts), _learned=learned)
    # Every fact of a response is wanted: its memo entry is its facts.
    index._memo.update((id(m), (m, f)) for m, f in zip(messages, facts, strict=True))
    return index


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
    """The facts of ``wanted`` the tape held (needed), and those the view no longer held (lost,
    sorted). ``wanted`` is taken as a set: a fact listed twice is needed once.

    Replay keeps :class:`Held` sets up to date as messages append, so scoring a call costs the
    size of its response, not of the history."""
    facts = wanted if isinstance(wanted, AbstractSet) else frozenset(wanted)
    needed = _needed(facts, set(tape.facts & facts), tape.system)
    return _lost(needed, view.facts, view.system)


def _needed(facts: AbstractSet[str], held: set[str], system: str) -> set[str]:
    """The facts the tape held: ``held`` (those its messages hold, found by set operations in
    C), then the rest looked for in the system text (a substring test each)."""
    if len(held) < len(facts) and system:
        held.update(f for f in facts - held if f in system)
    return held


def _lost(needed: set[str], facts: AbstractSet[str], system: str) -> CallRecall:
    """The score of ``needed`` against a view whose messages hold ``facts``."""
    lost = needed - facts
    if lost and system:
        lost = {f for f in lost if f not in system}
    if not lost:
        return _all_kept(len(needed))
    return CallRecall(len(needed), len(needed) - len(lost), tuple(sorted(lost)))


def score_sets(
    facts: AbstractSet[str],
    tape_facts: set[str],
    tape_system: str,
    view_facts: AbstractSet[str],
    view_system: str,
) -> CallRecall:
    """:func:`score_facts` on the sets themselves (no :class:`Held` to build per call). A view
    holding the tape's own fact set and system text keeps every needed fact. ``tape_facts`` is
    a ``set`` (not a frozenset): its intersection with ``facts`` is grown in place."""
    needed = _needed(facts, tape_facts & facts, tape_system)
    if view_facts is tape_facts and view_system == tape_system:
        return _all_kept(len(needed))
    return _lost(needed, view_facts, view_system)


def needed_facts(facts: AbstractSet[str], tape_facts: set[str], tape_system: str) -> set[str]:
    """The facts of ``facts`` the tape held (messages or system): what :func:`score_sets`
    counts as needed."""
    return _needed(facts, tape_facts & facts, tape_system)


def _all_kept(needed: int) -> CallRecall:
    """``CallRecall(needed, needed, ())``, one per count (it is frozen: sharing is safe, and
    cheaper than building a frozen dataclass per call)."""
    hit = _ALL_KEPT.get(needed)
    if hit is None:
        hit = _ALL_KEPT[needed] = CallRecall(needed, needed, ())
    return hit


_ALL_KEPT: dict[int, CallRecall] = {}


def all_kept(needed: int) -> CallRecall:
    """The score of a call whose view kept all of its ``needed`` facts."""
    return _all_kept(needed)


def lost_facts(needed: set[str], facts: AbstractSet[str], system: str) -> CallRecall:
    """The score of ``needed`` (:func:`needed_facts`) against a view whose messages hold
    ``facts`` and whose system prompt is ``system``."""
    return _lost(needed, facts, system)


def system_text(conversation: Conversation) -> str:
    return "\n".join(block_text(b) for b in conversation.system_blocks)


@dataclass(frozen=True)
class RecallReport:
    needed: int
    kept: int
    examples: tuple[tuple[int, str], ...]
    """(call index, lost fact), the first few."""
    weighted_needed: float = 0.0
    weighted_kept: float = 0.0
    """The same counts with each fact weighted by its rarity (:class:`FactWeights`)."""

    @property
    def recall(self) -> float:
        """Share of needed facts still held (1.0 when nothing was needed)."""
        return self.kept / self.needed if self.needed else 1.0

    @property
    def weighted_recall(self) -> float:
        """Share of the needed facts' rarity weight still held (1.0 when none was needed)."""
        if self.weighted_needed <= 0:
            return 1.0
        return self.weighted_kept / self.weighted_needed


def summarise(
    calls: Iterable[CallRecall],
    max_examples: int = 12,
    weighted: Sequence[tuple[float, float]] = (),
) -> RecallReport:
    """The session's recall; ``weighted``: (needed, kept) rarity weight per call."""
    needed = kept = 0
    examples: list[tuple[int, str]] = []
    for i, call in enumerate(calls):
        needed += call.needed
        kept += call.kept
        examples.extend((i, f) for f in call.lost[: max(0, max_examples - len(examples))])
    w_needed = sum(w for w, _ in weighted)
    w_kept = sum(k for _, k in weighted)
    return RecallReport(needed, kept, tuple(examples), w_needed, w_kept)


__all__ = [
    "CallRecall",
    "FactIndex",
    "Held",
    "RecallReport",
    "all_kept",
    "extract_facts",
    "lost_facts",
    "message_text",
    "needed_facts",
    "score_call",
    "score_facts",
    "score_sets",
    "summarise",
    "system_text",
    "wanted_facts",
    "wanted_index",
]
