"""The cyclic collector is paused while a session is walked, and restored as it was found."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from contextkit._gc import no_cycle_collection
from contextkit.messages import Conversation
from contextkit.replay import replay
from contextkit.session.examples import ExampleSpec, generate_session
from contextkit.strategies import CallFacts, Compacted
from contextkit.tokens import ApproxCounter


@pytest.fixture(autouse=True)
def _restore_gc() -> Iterator[None]:
    was = gc.isenabled()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


@no_cycle_collection
def _state() -> bool:
    return gc.isenabled()


@no_cycle_collection
def _fail() -> None:
    assert not gc.isenabled()
    raise ValueError("boom")


def test_paused_inside_and_enabled_after() -> None:
    gc.enable()
    assert _state() is False
    assert gc.isenabled()


def test_restored_after_an_error() -> None:
    gc.enable()
    with pytest.raises(ValueError, match="boom"):
        _fail()
    assert gc.isenabled()


def test_a_caller_that_paused_it_keeps_it_paused() -> None:
    gc.disable()
    assert _state() is False
    assert not gc.isenabled()


def test_nested_calls_restore_once() -> None:
    @no_cycle_collection
    def outer() -> tuple[bool, bool]:
        inner = _state()
        return inner, gc.isenabled()

    gc.enable()
    assert outer() == (False, False)
    assert gc.isenabled()


def test_replay_runs_its_strategy_with_the_collector_paused() -> None:
    seen: list[bool] = []

    def strategy(view: Conversation, facts: CallFacts, /) -> Compacted:
        seen.append(gc.isenabled())
        return Compacted(view=view)

    gc.enable()
    session = generate_session(ExampleSpec(calls=4, user_turns=1, seed=3))
    result = replay(session, strategy, counter=ApproxCounter())
    assert seen == [False] * len(session.calls)
    assert len(result.rows) == len(session.calls)
    assert gc.isenabled()
