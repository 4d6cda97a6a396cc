"""The in-turn, cache-timed and edit-clearing strategies, set to act often, at every call of the
corpus sessions long enough for them to act (over 30 calls; a sample that keeps this under a
minute): every view keeps every invariant the tape keeps, holds no more tokens than the tape, and
keeps the newest message and the latest user request verbatim. (Every preset, at its own
thresholds, runs on every session in ``test_corpus_strategies.py``.)"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_corpus_strategies import _problems

from contextkit.pricing import UnknownPriceWarning
from contextkit.replay import replay, replay_as_recorded
from contextkit.strategies import (
    AnthropicCompact,
    ColdCache,
    EvictToolResults,
    Hysteresis,
    OverTokens,
    ReplaceWithSummary,
    SlidingWindow,
    Strategy,
    ToolResultsOver,
    When,
)
from contextkit.testing.corpus import labelled_sessions
from contextkit.tokens import ApproxCounter

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

MIN_CALLS = 30
AGGRESSIVE: dict[str, Strategy] = {
    "summary-in-turn": When(OverTokens(40_000), ReplaceWithSummary(keep_last_rounds=2)),
    "compact-in-turn": AnthropicCompact(trigger_tokens=50_000, keep_last_rounds=1),
    "window-in-turn": SlidingWindow(max_tokens=30_000, keep_last_rounds=2),
    "evict-edits-cold": When(
        ColdCache() | ToolResultsOver(10_000),
        EvictToolResults(keep_last=1, clear_edit_inputs=True, min_freed_tokens=0),
    ),
    "hysteresis-cold": Hysteresis(SlidingWindow(), high=0.3, low=0.15, when_cold=0.2),
}


@dataclass(frozen=True)
class Acted:
    """One session under every strategy above, kept as what the tests need (one session's
    replays at a time are held: see ``test_corpus_strategies.Digest``)."""

    key: str
    problems: dict[str, list[str]]
    compactions: dict[str, int]


@pytest.fixture(scope="module")
def replayed(corpus: Path) -> list[Acted]:
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownPriceWarning)
        for key, session in labelled_sessions(corpus):
            if len(session.calls) <= MIN_CALLS:
                continue
            counter = ApproxCounter()
            problems: dict[str, list[str]] = {}
            compactions: dict[str, int] = {}
            for name, strategy in AGGRESSIVE.items():
                result = replay(session, strategy, name=name, counter=counter)
                problems[name] = _problems(key, session, counter, result, name)
                compactions[name] = result.summary()["compactions"]
                del result
            replay_as_recorded(session, counter=counter)  # reads every session as recorded too
            out.append(Acted(key, problems, compactions))
    assert len(out) >= 5, "the corpus holds too few long sessions"
    return out


@pytest.mark.parametrize("name", list(AGGRESSIVE))
def test_in_turn_views_keep_every_invariant(replayed: list[Acted], name: str) -> None:
    problems = [p for item in replayed for p in item.problems[name]]
    acted = sum(1 for item in replayed if item.compactions[name])
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:40])
    assert acted >= 3, f"{name} acted on only {acted} sessions: the test would prove nothing"
