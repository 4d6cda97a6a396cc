"""``repair``: a conversation that passes ``validate`` under the same rules, with a receipt for
every change. The same object when nothing needs fixing; every message it does not change is
reused. Signed thinking (or redacted thinking) is never edited, reordered or dropped; unsigned
thinking is dropped (the provider rejects it wherever it stands and nothing offline can sign it).
"""

from __future__ import annotations

from contextkit.messages._model import (
    Block,
    Conversation,
    Message,
    ServerToolUseBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from contextkit.messages._receipt import Receipt
from contextkit.messages._rules import Rules, rules_for
from contextkit.messages._validate import _blank_text, _result_problem, _trails, _unsigned, validate

INTERRUPTED_TEXT = "Tool call interrupted: no result was recorded for this call."
"""The content of the error result :func:`repair` gives a tool_use that was never answered."""
FAILED_TEXT = "Tool call failed (no error output was recorded)."
"""The content :func:`repair` gives an error result that had none (the provider rejects those)."""
PLACEHOLDER_USER_TEXT = "(earlier conversation omitted)"
"""The user message :func:`repair` puts before a conversation that starts on an assistant turn."""


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


__all__ = ["FAILED_TEXT", "INTERRUPTED_TEXT", "PLACEHOLDER_USER_TEXT", "repair"]
