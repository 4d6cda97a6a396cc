"""messages.extends (the one check that a history begins with an earlier one) and the copies
Conversation.append and with_messages make."""

from __future__ import annotations

from contextkit.messages import Conversation, Message, TextBlock, Tool, extends, to_payload


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


def _state(conversation: Conversation) -> tuple[object, ...]:
    return (
        type(conversation),
        conversation.__dict__,
        conversation.__pydantic_extra__,
        conversation.__pydantic_fields_set__,
        conversation.__pydantic_private__,
    )


def test_append_and_with_messages_copy_as_model_copy_does() -> None:
    """The copies are the ones pydantic's model_copy makes (fields, extras, fields set, payload),
    and share no mutable state with the original."""
    base = Conversation.model_validate(
        {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]}
    )
    bare = Conversation(system=(TextBlock(text="s"),), tools=(Tool(name="t"),))
    new = _history(2, "new")
    for conversation in (base, bare):
        appended = conversation.append(*new)
        expected = conversation.model_copy(update={"messages": (*conversation.messages, *new)})
        assert _state(appended) == _state(expected)
        assert to_payload(appended) == to_payload(expected)
        replaced = conversation.with_messages(new)
        assert _state(replaced) == _state(conversation.model_copy(update={"messages": new}))
        for copy in (appended, replaced):
            assert copy.__dict__ is not conversation.__dict__
            assert copy.__pydantic_fields_set__ is not conversation.__pydantic_fields_set__
            if conversation.__pydantic_extra__ is not None:
                assert copy.__pydantic_extra__ is not conversation.__pydantic_extra__
    assert "messages" not in bare.__pydantic_fields_set__  # the original is left as it was
    assert base.with_messages(base.messages) is base
