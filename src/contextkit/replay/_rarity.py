"""Rarity weights for recall facts: an identifier most sessions hold says little about this one.

The weight of a fact is an inverse document frequency over the sessions of the corpus
(``data/fact_df.json``, written by ``scripts/fact_frequencies.py``): ``ln((N + 1) / (df + 1))``
for a fact found in ``df`` of ``N`` sessions. A fact every session holds weighs about 0; one the
table does not list (found in fewer than its ``min_df`` sessions, or never: the identifiers of
this session's own code) is taken as found in one session, the rarest weight. Weighted recall is
the weight of the needed facts a view kept over the weight of all needed facts.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

from contextkit.errors import ContextkitError


@dataclass(frozen=True)
class FactWeights:
    """Document frequencies of facts over ``sessions`` sessions, as weights."""

    sessions: int
    df: Mapping[str, int]

    def __post_init__(self) -> None:
        if self.sessions < 1:
            raise ContextkitError("fact weights need a corpus of at least one session")

    def __call__(self, fact: str) -> float:
        return math.log((self.sessions + 1) / (self.df.get(fact, 1) + 1))

    def total(self, facts: Iterable[str]) -> float:
        df, n = self.df, self.sessions + 1
        rare = math.log(n / 2)  # most facts of a session are its own: not in the table
        return sum([rare if (d := df.get(f)) is None else math.log(n / (d + 1)) for f in facts])


@cache
def default_weights() -> FactWeights:
    """The weights shipped with contextkit (the corpus's document frequencies)."""
    data = resources.files("contextkit.replay").joinpath("data", "fact_df.json")
    try:
        payload = json.loads(data.read_text(encoding="utf-8"))
        return FactWeights(int(payload["sessions"]), dict(payload["df"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ContextkitError(f"{data}: unreadable fact frequencies ({exc})") from None


__all__ = ["FactWeights", "default_weights"]
