"""The invariants a provider enforces on a request's messages: check them, and repair what breaks.

Contract:

- ``validate(conversation, provider=...)`` returns every :class:`Violation` found, as a tuple
  sorted by position (empty when the messages would be accepted). It never raises on odd content.
- ``repair(conversation, provider=...)`` returns ``(conversation, receipts)`` such that
  ``validate(repaired, provider=...) == ()`` for every conversation built from the block types. When
  nothing needs fixing it returns the *same* conversation object and no receipts; otherwise it
  reuses every message it does not change. It never edits, reorders or drops a signed thinking (or
  redacted thinking) block; an unsigned thinking block is dropped, because the provider rejects it
  wherever it stands and nothing offline can sign it.

Rules checked (Anthropic Messages API, as its 400 errors state them):

- ``first_not_user``: the first message must use the user role (the 1P API has accepted an assistant
  first since late 2024, Bedrock and Vertex do not; a view that starts on an assistant turn is
  almost always a window cut mid-turn, so it is flagged under every rule set).
- ``consecutive_same_role``: only where the provider does not merge neighbours (``strict``). The
  Anthropic API combines consecutive same-role messages into one turn, so under ``anthropic`` the
  tool pairing rules below are checked on those combined turns.
- ``empty_content``: every message needs content except an optional final assistant message
  (prefill); a text block must hold non-whitespace text (also inside a tool result); a tool result
  with ``is_error`` true must not be empty.
- ``trailing_whitespace``: a final assistant message (prefill) must not end with whitespace.
- ``tool_use_in_user`` / ``tool_result_in_assistant``: blocks in the wrong role.
- ``thinking_signature_missing``: a thinking block without its signature.
- ``duplicate_tool_use_id``: tool_use ids are unique across the conversation.
- ``dangling_tool_use``: a tool_use whose result is not in the very next user turn (never answered,
  or answered later).
- ``orphan_tool_result``: a result whose tool_use is not in the previous assistant turn.
- ``duplicate_tool_result``: a second result for the same tool_use in one turn.
- ``results_not_first``: a turn answering tool calls must begin with its tool results.

An empty message list is not a violation: a conversation under construction may be empty.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict

from contextkit.errors import ConfigError
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
from contextkit.messages._receipt import Receipt

Code = Literal[
    "first_not_user",
    "consecutive_same_role",
    "empty_content",
    "trailing_whitespace",
    "tool_use_in_user",
    "tool_result_in_assistant",
    "thinking_signature_missing",
    "duplicate_tool_use_id",
    "dangling_tool_use",
    "orphan_tool_result",
    "duplicate_tool_result",
    "results_not_first",
]
CODES: tuple[Code, ...] = get_args(Code)
"""Every violation code, in a stable order (also the order of same-position violations)."""

INTERRUPTED_TEXT = "Tool call interrupted: no result was recorded for this call."
"""The content of the error result :func:`repair` gives a tool_use that was never answered."""
FAILED_TEXT = "Tool call failed (no error output was recorded)."
"""The content :func:`repair` gives an error result that had none (the provider rejects those)."""
PLACEHOLDER_USER_TEXT = "(earlier conversation omitted)"
"""The user message :func:`repair` puts before a conversation that starts on an assistant turn."""


class Violation(BaseModel):
    """One broken rule, located by message and (where it applies) block index."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: Code
    message_index: int | None = None
    block_index: int | None = None
    detail: str = ""


class Rules(BaseModel):
    """What one provider accepts. Presets are in :data:`PROVIDER_RULES`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    merges_same_role: bool = True
    """The provider combines consecutive same-role messages into one turn before checking them."""
    first_must_be_user: bool = True
    thinking_needs_signature: bool = True
    unique_tool_use_ids: bool = True
    """Tool-use ids are unique across the whole conversation (else: within one assistant turn)."""


PROVIDER_RULES: Mapping[str, Rules] = {
    "anthropic": Rules(name="anthropic"),
    "strict": Rules(name="strict", merges_same_role=False),
    # OpenAI Chat/Responses: tool-call ids may repeat across turns (gpt-4o reuses them), reasoning
    # items carry no signature, and an assistant message may follow the system message directly.
    "openai": Rules(
        name="openai",
        first_must_be_user=False,
        thinking_needs_signature=False,
        unique_tool_use_ids=False,
    ),
}


OPENAI_WIRE_FORMATS = frozenset(
    {"openai-chat", "openai-responses", "codex", "tau-bench", "swe-agent", "mini-swe-agent"}
)
"""File formats that record OpenAI-style messages (used when a session names no model)."""


def rules_for_model(model: str | None, format: str | None = None) -> Rules:
    """The rules of the provider that served ``model``: OpenAI-style for GPT, o-series, Codex and
    Gemini models, Anthropic's for the rest; with no model, by the file format's wire form."""
    name = (model or "").lower().rsplit("/", 1)[-1]
    if name:
        openai_like = name.startswith(("gpt", "o1", "o3", "o4", "codex", "gemini", "chatgpt"))
    else:
        openai_like = format in OPENAI_WIRE_FORMATS
    return PROVIDER_RULES["openai" if openai_like else "anthropic"]


def rules_for(provider: str | Rules) -> Rules:
    """The rule set named ``provider`` (or ``provider`` itself); :class:`ConfigError` if unknown."""
    if isinstance(provider, Rules):
        return provider
    rules = PROVIDER_RULES.get(provider)
    if rules is None:
        known = ", ".join(sorted(PROVIDER_RULES))
        raise ConfigError(f"unknown provider rules {provider!r} (known: {known})")
    return rules


# --------------------------------------------------------------------------------------------------
# validate


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
            yield from _check_results(located, _use_ids(messages, before))


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


# --------------------------------------------------------------------------------------------------
# repair

_MAX_PASSES = 3
_Item = tuple[int | None, Message]
"""A message in the making, with its index in the input conversation (None when inserted)."""


def repair(
    conversation: Conversation, *, provider: str | Rules = "anthropic"
) -> tuple[Conversation, tuple[Receipt, ...]]:
    """Fix what breaks the rules; ``(conversation, ())`` itself when nothing does.

    Receipts (strategy ``"repair"``) say what changed; their ``message_index`` is the index in the
    input conversation of the message concerned (None for a message repair inserted). Repair counts
    no tokens, so ``tokens_freed`` stays 0.
    """
    rules = rules_for(provider)
    if not validate(conversation, provider=rules):
        return conversation, ()
    items: list[_Item] = list(enumerate(conversation.messages))
    receipts: list[Receipt] = []
    # One pass settles every input seen so far; the loop is a guard for orderings no one foresaw.
    for _ in range(_MAX_PASSES):
        items = _repair_pass(items, rules, receipts)
        repaired = conversation.with_messages([m for _, m in items])
        if not validate(repaired, provider=rules):
            return repaired, tuple(receipts)
    left = validate(repaired, provider=rules)
    raise RuntimeError(f"repair did not converge (a contextkit bug), left: {left!r}")


def _repair_pass(items: list[_Item], rules: Rules, receipts: list[Receipt]) -> list[_Item]:
    items = [(o, _clean_message(o, m, rules, receipts)) for o, m in items]
    items = _drop_empty(items, receipts)
    items = _pair_turns(items, receipts, rules)
    items = _drop_empty(items, receipts)
    if not rules.merges_same_role:
        items = _merge_runs(items, receipts)
    if rules.first_must_be_user and items and items[0][1].role != "user":
        receipts.append(_receipt("inserted", None, "a placeholder user message first"))
        items.insert(0, (None, Message(role="user", content=PLACEHOLDER_USER_TEXT)))
    return _trim_final(items, receipts)


def _receipt(
    action: str, origin: int | None, detail: str, tool_use_id: str | None = None
) -> Receipt:
    return Receipt(
        strategy="repair",
        action=action,
        message_index=origin,
        tool_use_id=tool_use_id,
        detail=detail,
    )


def _clean_message(
    origin: int | None, message: Message, rules: Rules, receipts: list[Receipt]
) -> Message:
    """Drop or fix the blocks that are wrong wherever they stand (the message is reused if none)."""
    if isinstance(message.content, str):
        return message
    kept: list[Block] = []
    for block in message.content:
        fixed, why = _clean_block(block, message.role, rules)
        if why:
            action = "dropped" if fixed is None else "filled"
            receipts.append(_receipt(action, origin, why, _block_id(block)))
        if fixed is not None:
            kept.append(fixed)
    if len(kept) == len(message.content) and all(
        a is b for a, b in zip(kept, message.content, strict=True)
    ):
        return message
    return message.model_copy(update={"content": tuple(kept)})


def _block_id(block: Block) -> str | None:
    if isinstance(block, ToolUseBlock | ServerToolUseBlock):
        return block.id
    if isinstance(block, ToolResultBlock):
        return block.tool_use_id
    return None


def _clean_block(block: Block, role: str, rules: Rules) -> tuple[Block | None, str]:
    """The block to keep (None: drop it) and why it changed (``""``: unchanged)."""
    if isinstance(block, TextBlock) and not block.text.strip():
        return None, "blank text block (empty_content)"
    if isinstance(block, ToolUseBlock | ServerToolUseBlock) and role == "user":
        return None, f"{block.type} in a user message (tool_use_in_user)"
    if isinstance(block, ToolResultBlock) and role == "assistant":
        return None, "tool_result in an assistant message (tool_result_in_assistant)"
    if isinstance(block, ToolResultBlock) and _result_problem(block):
        return _fix_result(block), f"{_result_problem(block)} (empty_content)"
    if _unsigned(block, rules):
        return None, "thinking block without signature (thinking_signature_missing)"
    return block, ""


def _fix_result(block: ToolResultBlock) -> ToolResultBlock:
    content = block.content
    if isinstance(content, tuple):
        content = tuple(b for b in content if not _blank_text(b))
    if block.is_error and (not content or (isinstance(content, str) and not content.strip())):
        content = FAILED_TEXT
    return block.model_copy(update={"content": content})


def _is_empty(message: Message) -> bool:
    if isinstance(message.content, str):
        return not message.content.strip()
    return not message.content


def _drop_empty(items: list[_Item], receipts: list[Receipt]) -> list[_Item]:
    out: list[_Item] = []
    for n, (origin, message) in enumerate(items):
        prefill = n == len(items) - 1 and message.role == "assistant"
        if _is_empty(message) and not (prefill and message.content in ("", ())):
            receipts.append(_receipt("dropped", origin, f"empty {message.role} message"))
            continue
        out.append((origin, message))
    return out


def _runs(items: list[_Item]) -> list[list[_Item]]:
    runs: list[list[_Item]] = []
    for item in items:
        if runs and runs[-1][0][1].role == item[1].role:
            runs[-1].append(item)
        else:
            runs.append([item])
    return runs


def _pair_turns(items: list[_Item], receipts: list[Receipt], rules: Rules) -> list[_Item]:
    """Answer every tool_use in the next user turn, exactly once, results first."""
    out: list[_Item] = []
    seen: set[str] = set()
    pending: list[str] = []
    for turn in _runs(items):
        if turn[0][1].role == "assistant":
            if not rules.unique_tool_use_ids:
                seen = set()
            kept, pending = _dedupe_uses(turn, seen, receipts)
            out.extend(kept)
        else:
            out.extend(_answer(turn, pending, receipts))
            pending = []
    if pending:
        out.extend(_answer([], pending, receipts))
    return out


def _dedupe_uses(
    turn: list[_Item], seen: set[str], receipts: list[Receipt]
) -> tuple[list[_Item], list[str]]:
    """Drop tool_use blocks whose id was used before; the turn's remaining tool_use ids."""
    out: list[_Item] = []
    uses: list[str] = []
    for origin, message in turn:
        kept: list[Block] = []
        for block in message.blocks:
            if isinstance(block, ToolUseBlock):
                if block.id in seen:
                    why = "tool_use with an id used before (duplicate_tool_use_id)"
                    receipts.append(_receipt("dropped", origin, why, block.id))
                    continue
                seen.add(block.id)
                uses.append(block.id)
            kept.append(block)
        if len(kept) != len(message.blocks):
            out.append((origin, message.model_copy(update={"content": tuple(kept)})))
        else:
            out.append((origin, message))
    return out, uses


def _answer(turn: list[_Item], pending: list[str], receipts: list[Receipt]) -> list[_Item]:
    """The user turn with the results for ``pending`` first, once each, and nothing else moved."""
    located = [(origin, block) for origin, message in turn for block in message.blocks]
    results: list[int] = []
    others: list[int] = []
    answered: set[str] = set()
    for n, (origin, block) in enumerate(located):
        if not isinstance(block, ToolResultBlock):
            others.append(n)
        elif block.tool_use_id not in pending or block.tool_use_id in answered:
            code = (
                "duplicate_tool_result" if block.tool_use_id in answered else "orphan_tool_result"
            )
            receipts.append(_receipt("dropped", origin, f"tool_result ({code})", block.tool_use_id))
        else:
            answered.add(block.tool_use_id)
            results.append(n)
    missing = [u for u in pending if u not in answered]
    order = results + others
    if order == list(range(len(located))) and not missing:
        return turn
    origin = turn[0][0] if turn else None
    if others and results and others[0] < results[-1]:
        receipts.append(_receipt("moved", origin, "tool results before other content"))
    for u in missing:
        why = "interrupted error result for an unanswered tool_use (dangling_tool_use)"
        receipts.append(_receipt("inserted", origin, why, u))
    blocks: list[Block] = [located[n][1] for n in results]
    blocks += [
        ToolResultBlock(tool_use_id=u, content=INTERRUPTED_TEXT, is_error=True) for u in missing
    ]
    blocks += [located[n][1] for n in others]
    if len(turn) > 1:
        receipts.append(_receipt("merged", origin, f"{len(turn)} user messages into one"))
    base = turn[0][1] if turn else Message(role="user", content=())
    return [(origin, base.model_copy(update={"content": tuple(blocks)}))]


def _merge_runs(items: list[_Item], receipts: list[Receipt]) -> list[_Item]:
    """One message per run of same-role messages (for providers that do not merge them)."""
    out: list[_Item] = []
    for run in _runs(items):
        if len(run) == 1:
            out.extend(run)
            continue
        origin, first = run[0]
        blocks = tuple(b for _, m in run for b in m.blocks)
        receipts.append(_receipt("merged", origin, f"{len(run)} {first.role} messages into one"))
        out.append((origin, first.model_copy(update={"content": blocks})))
    return out


def _trim_final(items: list[_Item], receipts: list[Receipt]) -> list[_Item]:
    """Strip trailing whitespace from a final assistant message (prefill)."""
    if not items or items[-1][1].role != "assistant":
        return items
    origin, message = items[-1]
    content = message.content
    if isinstance(content, str):
        if not _trails(content):
            return items
        new: str | tuple[Block, ...] = content.rstrip()
    else:
        last = content[-1] if content else None
        if not isinstance(last, TextBlock) or not _trails(last.text):
            return items
        new = (*content[:-1], last.model_copy(update={"text": last.text.rstrip()}))
    receipts.append(
        _receipt("trimmed", origin, "trailing whitespace of the final assistant message")
    )
    return [*items[:-1], (origin, message.model_copy(update={"content": new}))]


__all__ = [
    "CODES",
    "FAILED_TEXT",
    "INTERRUPTED_TEXT",
    "OPENAI_WIRE_FORMATS",
    "PLACEHOLDER_USER_TEXT",
    "PROVIDER_RULES",
    "Code",
    "Rules",
    "Violation",
    "repair",
    "rules_for",
    "rules_for_model",
    "validate",
]
