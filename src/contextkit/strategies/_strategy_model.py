"""The base every built-in strategy and trigger config derives from.

Contract: a built-in is a frozen pydantic model with a ``kind`` literal; the model *is* the config
(so it can be printed, saved and loaded) and is called as ``strategy(view, facts) -> Compacted``.
``a >> b`` builds a :class:`~contextkit.strategies._compose.Pipeline`; triggers combine with ``|``
and ``&`` (see :mod:`contextkit.strategies._compose`). Unknown fields are errors, never ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from contextkit.messages import Conversation
from contextkit.strategies._base import CallFacts, Compacted


class StrategyModel(BaseModel):
    """Base of built-in strategies: frozen config, callable, composable with ``>>``."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    kind: str

    pipeline: ClassVar[Callable[..., StrategyModel]]
    """What ``a >> b`` builds: :class:`~contextkit.strategies._compose.Pipeline`, set where it is
    defined (its steps are a union of every built-in, which all derive from this class: importing
    it here would make a circle)."""

    def __call__(self, view: Conversation, facts: CallFacts, /) -> Compacted:
        raise NotImplementedError  # every concrete strategy defines it

    def __rshift__(self, other: Any) -> StrategyModel:
        return self.pipeline(self, other)

    def __rrshift__(self, other: Any) -> StrategyModel:
        # A plain function on the left: ``my_fn >> SlidingWindow()``.
        return self.pipeline(other, self)


__all__ = ["StrategyModel"]
