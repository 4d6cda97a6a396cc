"""An OpenAI Agents SDK session that hands the agent a compacted history (the ``openai-agents``
extra).

``Runner.run(agent, input, session=CompactingSession(SQLiteSession("run-1"), strategy))``: the
wrapped session stores every item as it would (the tape, never edited); ``get_items`` returns the
history shaped by the contextkit strategy (the view), which is what the runner sends the model.
``add_items``, ``pop_item`` and ``clear_session`` are the wrapped session's own. Items go through
:class:`~contextkit.adapters.Compactor` in the Responses form (lossless: what the strategy keeps
goes back exactly as stored).

Within one run the runner does not read the session again, so a long tool loop grows until the
next run; to shape every model call of a run too, pass the same session's filter:
``Runner.run(agent, input, session=session, run_config=RunConfig(call_model_input_filter=
session.model_input_filter))`` (it compacts the input the runner is about to send; the session
still stores everything).

``get_items(limit=n)`` returns the last ``n`` items of the view, as the protocol says; a limit
that cuts between a tool call and its output is the caller's choice, not repaired here.
"""

from __future__ import annotations

from typing import Any

from contextkit.adapters._core import Compactor
from contextkit.errors import ContextkitError
from contextkit.strategies import Strategy, strategy_from_spec
from contextkit.tokens import TokenCounter

try:
    from agents.memory import Session, SessionABC
    from agents.run import CallModelData, ModelInputData
except ImportError as exc:  # pragma: no cover - only without the extra
    raise ContextkitError(
        "contextkit.adapters.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'contextkit[openai-agents]'"
    ) from exc


class CompactingSession(SessionABC):
    """A session whose history reads back compacted (see the module docstring)."""

    def __init__(
        self,
        inner: Session,
        strategy: Strategy | str,
        *,
        budget_tokens: int = 150_000,
        context_window: int = 200_000,
        counter: TokenCounter | None = None,
    ) -> None:
        self.inner = inner
        self.session_id = inner.session_id
        self.session_settings = getattr(inner, "session_settings", None)
        chosen = strategy_from_spec(strategy) if isinstance(strategy, str) else strategy
        self.compactor = Compactor(
            chosen, counter=counter, budget_tokens=budget_tokens, context_window=context_window
        )

    async def get_items(self, limit: int | None = None) -> list[Any]:
        items = [dict(item) for item in await self.inner.get_items()]
        view = self.compactor.items(items)
        return view if limit is None else view[-limit:] if limit > 0 else []

    def model_input_filter(self, data: CallModelData[Any]) -> ModelInputData:
        """A ``RunConfig.call_model_input_filter``: the input of each model call, compacted."""
        items = [dict(item) for item in data.model_data.input]
        view: list[Any] = self.compactor.items(items)  # dicts of the SDK's item TypedDicts
        return ModelInputData(input=view, instructions=data.model_data.instructions)

    async def add_items(self, items: list[Any]) -> None:
        await self.inner.add_items(items)

    async def pop_item(self) -> Any:
        return await self.inner.pop_item()

    async def clear_session(self) -> None:
        await self.inner.clear_session()


__all__ = ["CompactingSession"]
