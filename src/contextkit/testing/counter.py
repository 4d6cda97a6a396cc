"""Deterministic token counters for tests: exact, offline, and memoised like the real ones."""

from __future__ import annotations

import math

from contextkit.tokens import MemoCounter


class FixedCounter(MemoCounter):
    """``ceil(len(text) / chars_per_token)`` tokens per text; named ``"fixed"``.

    Message and conversation overheads are :class:`MemoCounter`'s (3 tokens a message), so a test
    can compute any expected count by hand.
    """

    def __init__(self, chars_per_token: int = 4) -> None:
        super().__init__()
        if chars_per_token < 1:
            raise ValueError("chars_per_token must be at least 1")
        self.chars_per_token = chars_per_token

    @property
    def name(self) -> str:
        return "fixed"

    def _count_text(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)


class WordCounter(MemoCounter):
    """One token per whitespace-separated word, and no message overhead: a test's expected counts
    are the words it wrote (:func:`words` writes ``n`` distinct ones)."""

    per_message = 0

    def _count_text(self, text: str) -> int:
        return len(text.split())


def words(n: int, tag: str = "w") -> str:
    """``n`` distinct words (``w0 w1 ...``): ``n`` tokens to :class:`WordCounter`."""
    return " ".join(f"{tag}{i}" for i in range(n))


__all__ = ["FixedCounter", "WordCounter", "words"]
