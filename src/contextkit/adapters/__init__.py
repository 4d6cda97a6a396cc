"""Adapters to the agent frameworks people use, each a thin shell over a contextkit strategy.

One module per framework, each imported on use (it loads its framework, an optional extra):

- :mod:`contextkit.adapters.hermes`: a Hermes agent context engine plugin (extra ``hermes``);
- :mod:`contextkit.adapters.pydantic_ai`: a pydantic-ai history processor (extra ``pydantic-ai``);
- :mod:`contextkit.adapters.langchain`: a LangChain v1 agent middleware (extra ``langchain``);
- :mod:`contextkit.adapters.openai_agents`: an OpenAI Agents SDK session (extra
  ``openai-agents``).

What they share is :class:`Compactor`: a strategy and its per-call facts, applied to a history in
the OpenAI chat or Responses form.
"""

from __future__ import annotations

from contextkit.adapters._core import Compactor

__all__ = ["Compactor"]
