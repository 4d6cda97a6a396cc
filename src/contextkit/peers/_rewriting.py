"""What a peer's rewrite of each request looks like as a contextkit strategy.

Contract of :class:`RequestRewriter`: a peer tool is a function from the messages a request would
carry to the messages it sends instead (:meth:`RequestRewriter.rewrite`). Tools differ in what
they are given:

- ``keeps_history=True`` (a library called on every request, a request-scoped trim): the client
  keeps its full history and the tool rewrites a copy of it for each request. The rewriter
  remembers, per conversation, the full history behind each view it returned, so it is given
  that history plus what was appended since, whatever it sent last time.
- ``keeps_history=False`` (a proxy that replays its earlier output, a middleware whose edits
  persist): the tool is given its own previous output plus what was appended, which is the view
  contextkit hands a strategy anyway.

``frozen`` tells the tool how many leading messages the previous request already sent while the
provider's cache still holds them (0 when it is cold: the TTL passed, the model changed, the
harness reset it), which is what a cache-aware proxy may not rewrite. Each call that changes what
is sent gets one ``rewritten`` (or the tool's own) receipt with the tokens it freed against the
full history; a call that sends the full history unchanged returns the same view object.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contextkit.messages import Conversation, Message, Receipt, extends
from contextkit.strategies import CallFacts, ColdCache, Compacted, head_tokens

_COLD = ColdCache()
_REMEMBERED = 16
"""Conversations remembered at once (a replay interleaves a session's side threads)."""


@dataclass(frozen=True)
class _Sent:
    output: tuple[Message, ...]
    """What the rewriter returned."""
    full: tuple[Message, ...]
    """The full history that output stood for."""


class RequestRewriter:
    """Base of the peers: ``rewrite`` each request; see the module docstring."""

    name = "peer"
    keeps_history = True

    def __init__(self) -> None:
        self._sent: list[_Sent] = []
        self.head = 0
        """Tokens of the current call's system prompt and tools as the server counts them (what
        a peer given only the messages must leave room for)."""

    def rewrite(
        self, messages: tuple[Message, ...], facts: CallFacts, frozen: int
    ) -> tuple[tuple[Message, ...], tuple[Receipt, ...]]:
        """The messages to send instead of ``messages``, and receipts of what changed (none:
        one ``rewritten`` receipt is made when the messages differ)."""
        raise NotImplementedError

    def __call__(self, view: Conversation, facts: CallFacts, /) -> Compacted:
        prefix = facts.prefix_tokens
        self.head = prefix if prefix is not None else head_tokens(view, facts.counter)
        messages = tuple(view.messages)
        prior = self._prior(messages)
        sent = len(prior.output) if prior is not None else 0
        appended = messages[sent:]
        full = (*prior.full, *appended) if prior is not None else messages
        given = full if self.keeps_history else messages
        warm = prior is not None and facts.previous_call_at is not None and not _COLD(view, facts)
        frozen = sent if warm else 0
        out, receipts = self.rewrite(given, facts, frozen)
        self._remember(_Sent(out, full))
        if len(out) == len(messages) and all(a is b for a, b in zip(out, messages, strict=True)):
            return Compacted(view=view)
        new = view.with_messages(out)
        if not receipts:
            whole = view.with_messages(full)
            freed = facts.counter.count_conversation(whole) - facts.counter.count_conversation(new)
            detail = f"{self.name} sent {len(out)} of {len(full)} messages, rewritten"
            receipts = (
                Receipt(strategy=self.name, action="rewritten", tokens_freed=freed, detail=detail),
            )
        return Compacted(view=new, receipts=receipts)

    def _prior(self, messages: Sequence[Message]) -> _Sent | None:
        """The newest remembered output the view continues (an empty output only as the last)."""
        for index in range(len(self._sent) - 1, -1, -1):
            sent = self._sent[index]
            if sent.output and extends(messages, sent.output):
                return sent
        last = self._sent[-1] if self._sent else None
        return last if last is not None and not last.output else None

    def _remember(self, sent: _Sent) -> None:
        self._sent = [*self._sent[-_REMEMBERED + 1 :], sent]


def reuse_unchanged(before: Sequence[Message], after: Sequence[Message]) -> tuple[Message, ...]:
    """``after`` with each message equal to the one at the same position of ``before`` replaced by
    that object (unchanged messages stay the same objects: cheap to compare, cache-safe)."""
    n = len(before)
    return tuple(before[i] if i < n and before[i] == m else m for i, m in enumerate(after))


__all__ = ["RequestRewriter", "reuse_unchanged"]
