"""messages.extends: the one check that a history begins with an earlier one."""

from __future__ import annotations

from contextkit.messages import Message, extends


def _history(n: int, tag: str = "m") -> tuple[Message, ...]:
    return tuple(Message(role="user", content=f"{tag} {i}") for i in range(n))


def test_extends_a_grown_history_and_nothing_else() -> None:
    base = _history(4)
    grown = (*base, *_history(2, "new"))
    assert extends(grown, base)
    assert extends(base, base)
    assert extends(base, ())  # every history begins with the empty one
    assert extends((), ())
    assert not extends(base, grown)  # a longer "before" is never a prefix
    assert not extends((*base[:3], *_history(3, "other")), base)  # differs at the last shared one
    assert not extends((*_history(1, "x"), *base[1:], *_history(1)), base)  # differs at the first


def test_equal_copies_extend_as_the_same_objects_do() -> None:
    """Equality after identity: a history rebuilt from equal messages (a re-parsed request)
    extends the earlier one, as its counts and marks are the same."""
    base = _history(3)
    copies = tuple(m.model_copy() for m in base)
    assert all(a is not b for a, b in zip(base, copies, strict=True))
    assert extends((*copies, *_history(1, "new")), base)
    edited = (*copies[:2], Message(role="user", content="m 2 changed"))
    assert not extends(edited, base)
