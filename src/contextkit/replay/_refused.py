"""Requests the provider would refuse: a strategy's view with no message left, or one that breaks
a rule of :func:`contextkit.messages.validate` the full history did not break (such a strategy is
never ranked best, whatever it costs)."""

from __future__ import annotations

from collections.abc import Sequence

from contextkit.messages import Conversation, validate


def refused_calls(
    tapes: Sequence[Conversation], views: Sequence[Conversation], edited: Sequence[bool]
) -> tuple[int, ...]:
    """The calls whose edited view the provider would refuse: no message left, or a rule of
    :func:`~contextkit.messages.validate` broken that the full history (tape) did not break (a
    tool result whose call was cut away, a history that starts with the assistant)."""
    out = []
    for call, (tape, view, changed) in enumerate(zip(tapes, views, edited, strict=True)):
        if not changed or view is tape:
            continue
        if not view.messages:
            out.append(call)
            continue
        broken = {v.code for v in validate(view)}
        if broken and broken - {v.code for v in validate(tape)}:
            out.append(call)
    return tuple(out)


__all__ = ["refused_calls"]
