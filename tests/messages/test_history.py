"""``History``: a request's messages as a view of one growing list (contextkit.messages._history).

A history must behave as the tuple it replaces (an immutable sequence, equal to and hashing as a
tuple of its messages) while the requests of a thread share one list: the tests hold it to a tuple
model under random growth, forks, slices and threads.
"""

from __future__ import annotations

import operator
import pickle
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from contextkit.messages import Conversation, History, Message, extends, same_prefix


def _m(i: int, role: str = "user") -> Message:
    return Message(role=role, content=f"message {i}")  # type: ignore[arg-type]


MESSAGES = [_m(i, "user" if i % 2 == 0 else "assistant") for i in range(40)]


def test_extending_the_end_shares_one_list_and_leaves_the_older_view_as_it_was() -> None:
    first = History(MESSAGES[:3])
    second = first.extended(MESSAGES[3:5])
    third = second.extended(MESSAGES[5:6])
    assert first == tuple(MESSAGES[:3])
    assert second == tuple(MESSAGES[:5])
    assert third == tuple(MESSAGES[:6])
    assert first.shares(second)
    assert second.shares(third)
    assert list(first) == MESSAGES[:3]  # iteration stops at the view's own end
    assert list(reversed(first)) == MESSAGES[:3][::-1]
    assert first[-1] is MESSAGES[2]


def test_a_branch_forks_and_a_retry_of_the_same_objects_shares() -> None:
    base = History(MESSAGES[:3])
    grown = base.extended(MESSAGES[3:5])
    retry = base.extended(MESSAGES[3:4])  # the very objects already after base: shared
    branch = base.extended([_m(99)])  # something else: a list of its own
    assert retry.shares(grown)
    assert not branch.shares(grown)
    assert branch == (*MESSAGES[:3], _m(99))
    assert grown == tuple(MESSAGES[:5])  # the branch did not touch the shared list
    assert base == tuple(MESSAGES[:3])


def test_the_empty_history_never_grows_its_list_in_place() -> None:
    empty: History[Message] = History()
    a = empty.extended(MESSAGES[:2])
    b = empty.extended(MESSAGES[2:4])
    assert len(empty) == 0
    assert a == tuple(MESSAGES[:2])
    assert b == tuple(MESSAGES[2:4])
    assert not a.shares(b)


def test_value_semantics_match_the_tuple_it_replaces() -> None:
    h = History(MESSAGES[:4])
    t = tuple(MESSAGES[:4])
    assert h == t
    assert t == h
    assert hash(h) == hash(t)
    assert h != list(t)  # a tuple was not equal to a list either
    assert h != tuple(MESSAGES[:3])
    assert h[:2] == t[:2]
    assert h[1:3] == t[1:3]
    assert h[::-1] == t[::-1]
    assert h[1:] == t[1:]
    assert operator.add(h, (MESSAGES[4],)) == (*t, MESSAGES[4])
    assert (MESSAGES[4], *h) == (MESSAGES[4], *t)
    assert operator.add((MESSAGES[4],), h) == (MESSAGES[4], *t)
    assert MESSAGES[2] in h
    assert MESSAGES[10] not in h
    assert h.index(MESSAGES[3]) == 3
    assert h.count(MESSAGES[0]) == 1
    table: dict[object, int] = {h: 1}
    assert table[t] == 1


def test_pickles_each_list_once_and_keeps_views_apart() -> None:
    a = History(MESSAGES[:10])
    b = a.extended(MESSAGES[10:20])
    a2, b2 = pickle.loads(pickle.dumps((a, b)))
    assert a2 == a
    assert b2 == b
    assert a2.shares(b2)
    one = len(pickle.dumps(b))
    assert len(pickle.dumps((a, b))) < one * 1.2  # the list once, not twice


def test_a_conversation_validates_and_serialises_its_messages_as_a_tuple() -> None:
    c = Conversation.model_validate({"messages": [m.model_dump() for m in MESSAGES[:3]]})
    assert isinstance(c.messages, History)
    assert c.messages == tuple(MESSAGES[:3])
    dumped = c.model_dump(mode="json")
    assert dumped["messages"] == [m.model_dump(mode="json") for m in MESSAGES[:3]]
    assert Conversation.model_validate_json(c.model_dump_json()) == c
    grown = c.append(MESSAGES[3])
    assert grown.messages.shares(c.messages)  # type: ignore[attr-defined]
    assert c.messages == tuple(MESSAGES[:3])
    assert extends(grown.messages, c.messages)


def test_same_prefix_agrees_with_slicing() -> None:
    a = History(MESSAGES[:8])
    b = a.extended(MESSAGES[8:12])
    c = (*MESSAGES[:5], _m(77))
    for n in range(6):
        assert same_prefix(a, b, n)
        assert same_prefix(a, c, n) == (tuple(a[:n]) == c[:n])
        assert same_prefix(c, tuple(b), n) == (c[:n] == tuple(b)[:n])
    assert not same_prefix(a, c, 6)


def test_threads_extending_one_history_never_lose_or_mix_messages() -> None:
    base = History(MESSAGES[:2])
    results: dict[int, History[Message]] = {}
    barrier = threading.Barrier(8)

    def grow(k: int) -> None:
        barrier.wait()
        mine = [_m(1000 + k * 10 + j) for j in range(5)]
        h = base
        for m in mine:
            h = h.extended([m])
        results[k] = h

    threads = [threading.Thread(target=grow, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, h in results.items():
        assert h == (*MESSAGES[:2], *(_m(1000 + k * 10 + j) for j in range(5)))
    assert base == tuple(MESSAGES[:2])


_STEP = st.one_of(
    st.tuples(st.just("extend"), st.integers(0, 9), st.lists(st.integers(0, 39), max_size=4)),
    st.tuples(st.just("slice"), st.integers(0, 9), st.integers(-12, 12), st.integers(-12, 12)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 39), max_size=6), st.lists(_STEP, max_size=25))
def test_every_history_shows_what_a_tuple_model_shows(
    start: list[int], steps: list[tuple[object, ...]]
) -> None:
    """Random growth from random earlier views, and slices: each view equals its tuple model, and
    goes on equalling it whatever is done to the views after it."""
    views = [History(MESSAGES[i] for i in start)]
    models = [tuple(MESSAGES[i] for i in start)]
    for step in steps:
        pick = int(step[1]) % len(views)  # type: ignore[call-overload]
        if step[0] == "extend":
            new = [MESSAGES[i] for i in step[2]]  # type: ignore[attr-defined]
            views.append(views[pick].extended(new))
            models.append(models[pick] + tuple(new))
        else:
            cut = slice(step[2], step[3])
            views.append(views[pick][cut])
            models.append(models[pick][cut])
        for view, model in zip(views, models, strict=True):
            assert view == model
            assert len(view) == len(model)
            assert tuple(view) == model
            assert tuple(reversed(view)) == model[::-1]
            assert hash(view) == hash(model)


def test_negative_index_bounds_count_from_the_history_end_not_the_list_end() -> None:
    h = History(MESSAGES[:2])
    h.extended(MESSAGES[2:3])  # the shared list is longer than h now
    t = tuple(MESSAGES[:2])
    assert h.index(MESSAGES[1], -1) == t.index(MESSAGES[1], -1)
    with pytest.raises(ValueError, match="not in list"):
        h.index(MESSAGES[1], 0, -1)
    with pytest.raises(ValueError, match="not in list"):
        h.index(MESSAGES[2])


def test_same_prefix_needs_equal_items_not_ordered_ones() -> None:
    assert not same_prefix((0, 5), (1, 5), 2)
    assert same_prefix((0, 5), (0, 5, 7), 2)
    assert not same_prefix([0, 5], (0, 6, 7), 2)


def test_a_history_of_raw_items_is_validated_and_a_validated_one_is_kept() -> None:
    raw = History([MESSAGES[0].model_dump(), MESSAGES[1].model_dump()])
    c = Conversation.model_validate({"messages": raw})
    assert c.messages == tuple(MESSAGES[:2])
    assert all(isinstance(m, Message) for m in c.messages)
    assert isinstance(c.messages, History)
    grown = c.messages.extended(MESSAGES[2:4])
    d = Conversation(messages=grown)
    assert d.messages is grown  # the new items checked once, the list kept
    bad: History[Any] = History.of(grown).extended([{"role": "nobody", "content": "x"}])
    with pytest.raises(ValidationError):
        Conversation(messages=bad)


def test_a_conversation_has_a_json_schema() -> None:
    schema = Conversation.model_json_schema()
    assert "messages" in schema["properties"]
