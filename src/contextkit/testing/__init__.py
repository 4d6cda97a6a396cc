"""Test doubles that contextkit's own tests, other engineers and users reuse.

- Message builders: :func:`user`, :func:`assistant`, :func:`tool_use`, :func:`tool_result`,
  :func:`thinking`, :func:`conversation`.
- :class:`FixedCounter`: a deterministic :class:`~contextkit.tokens.TokenCounter` (one token per
  four characters), so token arithmetic in tests is exact and offline.
- :func:`fixed_price`: Sonnet-like rates under any model name, for exact dollars in tests.
- :func:`inject_violation`: a conversation that breaks exactly one named rule (plus whatever it
  already broke), for tests of validators and strategies.
- Hypothesis strategies live in :mod:`contextkit.testing.strategies` (``valid_conversations``,
  ``any_conversations``); that module imports ``hypothesis``, a test-only dependency, so this
  package does not import it.
"""

from __future__ import annotations

from contextkit.testing.builders import (
    assistant,
    conversation,
    redacted_thinking,
    thinking,
    tool_result,
    tool_use,
    user,
)
from contextkit.testing.counter import FixedCounter, WordCounter, words
from contextkit.testing.inject import inject_violation
from contextkit.testing.prices import fixed_price

__all__ = [
    "FixedCounter",
    "WordCounter",
    "assistant",
    "conversation",
    "fixed_price",
    "inject_violation",
    "redacted_thinking",
    "thinking",
    "tool_result",
    "tool_use",
    "user",
    "words",
]
