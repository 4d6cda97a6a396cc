"""``validate``: every rule of :mod:`contextkit.messages._rules` a request's messages break, as
violations sorted by position (empty when the provider would accept them); it never raises on odd
content."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from contextkit.messages._model import (
    Block,
    Conversation,
    Message,
    ServerToolUseBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from contextkit.messages._rules import CODES, Code, Rules, Violation, rules_for


def validate(
    conversation: Conversation, *, provider: str | Rules = "anthropic"
) -> tuple[Violation, ...]:
    """Every rule the request's messages break, sorted by position; ``()`` when valid."""
    rules = rules_for(provider)
    messages = conversation.messages
    found = [
        *_check_roles(messages, rules),
        *_check_blocks(messages, rules),
        *_check_pairing(messages, rules),
    ]
    return tuple(sorted(found, key=_position))


def _position(v: Violation) -> tuple[int, int, int]:
    return (
        -1 if v.message_index is None else v.message_index,
        -1 if v.block_index is None else v.block_index,
        CODES.index(v.code),
    )


def _check_roles(messages: Sequence[Message], rules: Rules) -> Iterator[Violation]:
    if rules.first_must_be_user and messages and messages[0].role != "user":
        yield Violation(code="first_not_user", message_index=0, detail="first message is assistant")
    if not rules.merges_same_role:
        for i in range(1, len(messages)):
            if messages[i].role == messages[i - 1].role:
                detail = f"two {messages[i].role} messages in a row"
                yield Violation(code="consecutive_same_role", message_index=i, detail=detail)


def _is_final_assistant(messages: Sequence[Message], i: int) -> bool:
    return i == len(messages) - 1 and messages[i].role == "assistant"


def _check_blocks(messages: Sequence[Message], rules: Rules) -> Iterator[Violation]:
    for i, message in enumerate(messages):
        final = _is_final_assistant(messages, i)
        if isinstance(message.content, str):
            yield from _check_string(i, message.content, final)
            continue
        if not message.content and not final:
            yield _at("empty_content", i, None, "no content blocks")
        for j, block in enumerate(message.content):
            yield from _check_block(i, j, block, message.role, rules)
        last = message.content[-1] if message.content else None
        if final and isinstance(last, TextBlock) and last.text.strip() and _trails(last.text):
            yield _trailing(i, len(message.content) - 1)


def _at(code: Code, i: int, j: int | None, detail: str) -> Violation:
    return Violation(code=code, message_index=i, block_index=j, detail=detail)


def _trails(text: str) -> bool:
    return text != text.rstrip()


def _trailing(i: int, j: int | None) -> Violation:
    return _at("trailing_whitespace", i, j, "final assistant content ends with whitespace")


def _check_string(i: int, text: str, final: bool) -> Iterator[Violation]:
    if text == "":
        if not final:
            yield _at("empty_content", i, None, "empty string content")
    elif not text.strip():
        yield _at("empty_content", i, None, "whitespace-only content")
    elif final and _trails(text):
        yield _trailing(i, None)


def _check_block(i: int, j: int, block: Block, role: str, rules: Rules) -> Iterator[Violation]:
    if isinstance(block, TextBlock) and not block.text.strip():
        yield _at("empty_content", i, j, "blank text block")
    elif isinstance(block, ToolUseBlock | ServerToolUseBlock) and role == "user":
        yield _at("tool_use_in_user", i, j, f"{block.type} {block.id}")
    elif isinstance(block, ToolResultBlock) and role == "assistant":
        yield _at("tool_result_in_assistant", i, j, f"tool_result for {block.tool_use_id}")
    elif isinstance(block, ToolResultBlock):
        problem = _result_problem(block)
        if problem:
            yield _at("empty_content", i, j, problem)
    elif _unsigned(block, rules):
        yield _at("thinking_signature_missing", i, j, "thinking block without its signature")


def _unsigned(block: Block, rules: Rules) -> bool:
    return (
        isinstance(block, ThinkingBlock) and not block.signature and rules.thinking_needs_signature
    )


def _result_problem(block: ToolResultBlock) -> str:
    """Why a result's content would be rejected, or ``""``."""
    content = block.content
    if isinstance(content, tuple) and any(_blank_text(b) for b in content):
        return f"tool_result {block.tool_use_id} holds a blank text block"
    if block.is_error and _result_empty(block):
        return f"error tool_result {block.tool_use_id} has no content"
    return ""


def _blank_text(block: Block) -> bool:
    return isinstance(block, TextBlock) and not block.text.strip()


def _result_empty(block: ToolResultBlock) -> bool:
    content = block.content
    if content is None:
        return True
    if isinstance(content, str):
        return not content.strip()
    return all(_blank_text(b) for b in content)


def _turns(messages: Sequence[Message], merges: bool) -> list[list[int]]:
    """Message indices grouped into turns: runs of one role where the provider merges them."""
    turns: list[list[int]] = []
    for i, message in enumerate(messages):
        if merges and turns and messages[turns[-1][0]].role == message.role:
            turns[-1].append(i)
        else:
            turns.append([i])
    return turns


def _located(messages: Sequence[Message], turn: Sequence[int]) -> list[tuple[int, int, Block]]:
    return [(i, j, b) for i in turn for j, b in enumerate(messages[i].blocks)]


def _check_pairing(messages: Sequence[Message], rules: Rules) -> Iterator[Violation]:
    yield from _duplicate_uses(messages, rules.unique_tool_use_ids)
    turns = _turns(messages, rules.merges_same_role)
    for k, turn in enumerate(turns):
        located = _located(messages, turn)
        if messages[turn[0]].role == "assistant":
            after = turns[k + 1] if k + 1 < len(turns) else []
            answered = _result_ids(messages, after)
            for i, j, b in located:
                if isinstance(b, ToolUseBlock) and b.id not in answered:
                    detail = f"tool_use {b.id} has no tool_result in the next user turn"
                    yield _at("dangling_tool_use", i, j, detail)
        else:
            before = turns[k - 1] if k > 0 else []
            if rules.instructions_between_calls:
                located = [(i, j, b) for i, j, b in located if not _instruction(messages[i])]
            yield from _check_results(located, _use_ids(messages, before))


INSTRUCTION_ROLES = frozenset({"developer", "system"})


def _instruction(message: Message) -> bool:
    """A developer or system message recorded in the user role (its original role kept by the
    reader in the ``openai`` field)."""
    meta = (message.model_extra or {}).get("openai")
    return isinstance(meta, dict) and meta.get("role") in INSTRUCTION_ROLES


def _duplicate_uses(messages: Sequence[Message], across_turns: bool) -> Iterator[Violation]:
    seen: set[str] = set()
    for i, message in enumerate(messages):
        if message.role != "assistant":
            if not across_turns:
                seen = set()
            continue
        for j, b in enumerate(message.blocks):
            if isinstance(b, ToolUseBlock):
                if b.id in seen:
                    yield _at("duplicate_tool_use_id", i, j, f"tool_use id {b.id} already used")
                seen.add(b.id)


def _use_ids(messages: Sequence[Message], turn: Sequence[int]) -> set[str]:
    if not turn or messages[turn[0]].role != "assistant":
        return set()
    return {b.id for i in turn for b in messages[i].tool_uses()}


def _result_ids(messages: Sequence[Message], turn: Sequence[int]) -> set[str]:
    if not turn or messages[turn[0]].role != "user":
        return set()
    return {b.tool_use_id for i in turn for b in messages[i].tool_results()}


def _check_results(
    located: Sequence[tuple[int, int, Block]], expected: set[str]
) -> Iterator[Violation]:
    seen: set[str] = set()
    other_before = False
    for i, j, b in located:
        if not isinstance(b, ToolResultBlock):
            other_before = True
            continue
        if b.tool_use_id not in expected:
            detail = f"tool_result {b.tool_use_id} answers no tool_use of the previous turn"
            yield _at("orphan_tool_result", i, j, detail)
        elif b.tool_use_id in seen:
            yield _at("duplicate_tool_result", i, j, f"second tool_result for {b.tool_use_id}")
        else:
            seen.add(b.tool_use_id)
            if other_before:
                detail = f"tool_result {b.tool_use_id} comes after other content"
                yield _at("results_not_first", i, j, detail)


__all__ = ["validate"]
