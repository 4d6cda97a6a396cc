"""What a summariser returns and the protocols it implements (shared by every summariser).

Contract: a :class:`Summariser` has one method,
``summarise(messages, facts, /, *, instructions=None) -> Summary``. A summariser that can read the
whole view (to send it as the cached prefix of its own request) also implements
:class:`ViewSummariser`; strategies then call ``summarise_view(view, span, facts, ...)``.
``Summary.usage`` is what producing it cost (None when it cost no model call).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from contextkit.messages import Conversation, Message
from contextkit.session import Usage
from contextkit.strategies._base import CallFacts

SUMMARY_OPEN = "<context-summary>"
SUMMARY_CLOSE = "</context-summary>"


class Summary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    usage: Usage | None = None
    model: str | None = None


@runtime_checkable
class Summariser(Protocol):
    def summarise(
        self, messages: Sequence[Message], facts: CallFacts, /, *, instructions: str | None = None
    ) -> Summary: ...


@runtime_checkable
class ViewSummariser(Protocol):
    """A summariser that reads the whole view: ``span`` is the part being replaced."""

    def summarise_view(
        self,
        view: Conversation,
        span: Sequence[Message],
        facts: CallFacts,
        /,
        *,
        instructions: str | None = None,
    ) -> Summary: ...


__all__ = ["SUMMARY_CLOSE", "SUMMARY_OPEN", "Summariser", "Summary", "ViewSummariser"]
