"""Receipt: one change made to a conversation (by a strategy, or by ``repair``), with the tokens
it freed."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from contextkit.messages._usage import Usage


class Receipt(BaseModel):
    """One change a strategy made to the view."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    strategy: str
    action: str
    """What happened: ``evicted``, ``dropped``, ``summarised``, ``cleared_thinking``, ``prepended``,
    ``cleared_input``, ``repaired``..."""
    tokens_freed: int = 0
    message_index: int | None = None
    tool_use_id: str | None = None
    detail: str = ""
    usage: Usage | None = None
    """Tokens a strategy spent itself (an LLM summary call), billed apart from the view."""
    model: str | None = None
    """The model that produced ``usage`` (a summariser may run on a cheaper model)."""
    summary_tokens: int | None = None
    """Tokens of the summary a summariser wrote (its output), on ``summarised`` and
    ``summary_discarded`` receipts: a replay models the call of an offline summariser from it."""


__all__ = ["Receipt"]
