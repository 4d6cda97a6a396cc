"""Tool-result eviction (observation masking): old results give way to a short placeholder.

Contract of :class:`EvictToolResults`:

- Which results stay: the ``keep_last`` most recent tool results, and/or the most recent ones
  whose tokens add up to at most ``keep_tokens``. With both None the strategy aims at the budget:
  it evicts oldest first only until the view fits ``facts.budget_tokens``.
- Results in the last message are never evicted: the model has not read them yet. Results of
  tools in ``exclude_tools``, results under ``min_result_tokens``, and results already evicted are
  left alone. A result is only replaced when its placeholder is smaller.
- The placeholder names the tool, the size removed and how to get it back (call the tool again;
  the tool_use id). It depends only on the result itself, so it is byte-identical at every later
  call and the cached prefix stays stable once an eviction has happened.
- ``clear_inputs`` also replaces the input of each evicted call (in its assistant message) with a
  small marker object.
- ``clear_edit_inputs`` also clears the large string fields (``old_string``, ``new_string``,
  ``content``, ``file_text``, ...) of old file-editing calls (``Edit``, ``MultiEdit``, ``Write``,
  ``str_replace`` editors, ``apply_patch``): those older than the oldest result kept. The call
  stays valid (same id, name and other fields, the result untouched); each cleared field says how
  many characters it held. Edit results are tiny, so result eviction alone never frees them.
- Minimum-freed guard: unless the view is over its budget, an edit that frees fewer than
  ``min_freed_tokens`` is not worth breaking the cache for, and the same view comes back.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from itertools import compress
from typing import Literal, NamedTuple

from pydantic import Field

from contextkit.messages import (
    Block,
    Conversation,
    DocumentBlock,
    ImageBlock,
    Message,
    ToolResultBlock,
    ToolUseBlock,
)
from contextkit.strategies._base import CallFacts, Compacted, Receipt
from contextkit.strategies._strategy_model import StrategyModel
from contextkit.strategies._structure import (
    forget_with_messages,
    info,
    replace_messages,
    tool_uses_by_id,
    with_blocks,
)
from contextkit.tokens import TokenCounter, block_text

PLACEHOLDER_PREFIX = "[contextkit: cleared the result of "
CLEARED_INPUT_KEY = "contextkit_cleared"


def placeholder(tool_name: str, tool_use_id: str, result: ToolResultBlock) -> str:
    """The stable text that replaces an evicted result (depends on the result alone)."""
    size = f"{len(block_text(result)):,} characters"
    media = sum(
        isinstance(b, ImageBlock | DocumentBlock)
        for b in (result.content if isinstance(result.content, tuple) else ())
    )
    if media:
        size += f" and {media} image/document block{'s' if media > 1 else ''}"
    return (
        f"{PLACEHOLDER_PREFIX}{tool_name} ({size}) to save context. "
        f"Call {tool_name} again if you need it (it answered tool_use id {tool_use_id})."
    )


def is_evicted(result: ToolResultBlock) -> bool:
    return isinstance(result.content, str) and result.content.startswith(PLACEHOLDER_PREFIX)


class _Found(NamedTuple):
    """A tool result that may be evicted: where it is, its tool and its size."""

    message: int
    block: int
    result: ToolResultBlock
    name: str
    tokens: int
    saving: int
    """Tokens freed by replacing it with its placeholder."""
    text: str
    """The placeholder."""


@dataclass(frozen=True)
class EvictionPlan:
    """How to choose and clear results (shared by the built-in and the server-side emulation)."""

    strategy: str
    keep_last: int | None
    keep_tokens: int | None
    min_result_tokens: int
    exclude_tools: Collection[str]
    clear_inputs: bool | Collection[str]
    min_freed_tokens: int
    clear_edit_inputs: bool = False


_Located = tuple[int, int, ToolResultBlock]
"""(message index, block index, result)."""


_LIVE: dict[int, tuple[tuple[int, ToolResultBlock], ...]] = {}
_LIVE_KEPT: list[Message] = []
_LIVE_LIMIT = 200_000


def _clear_live() -> None:
    _LIVE.clear()
    _LIVE_KEPT.clear()


forget_with_messages(_clear_live)


def _live(message: Message) -> tuple[tuple[int, ToolResultBlock], ...]:
    """(block index, result) of the results in ``message`` not evicted yet, memoised by identity.

    The memo keeps each message it holds alive (so its id cannot be reused and a hit needs no
    identity check: it is looked up in C over a whole view) and is bounded."""
    live = _LIVE.get(id(message))
    if live is None:
        live = tuple((j, r) for j, r in info(message).results if not is_evicted(r))
        if len(_LIVE) >= _LIVE_LIMIT:
            _clear_live()
        _LIVE[id(message)] = live
        _LIVE_KEPT.append(message)
    return live


def _results(messages: Sequence[Message]) -> list[_Located]:
    # Cheap on purpose: this runs over the whole view; sizes and names are looked up later, only
    # for the few results that may be evicted. Evicted results are left out: they are older than
    # every kept one, so the recent results that stay are the same either way.
    lives = list(map(_LIVE.get, map(id, messages)))
    try:
        first = lives.index(None)  # usually the newest messages only
    except ValueError:
        first = len(lives)
    for i in range(first, len(lives)):
        if lives[i] is None:
            lives[i] = _live(messages[i])
    # compress: only the messages holding live results are visited in Python.
    return [(i, j, r) for i in compress(range(len(lives)), lives) for j, r in lives[i] or ()]


def _tool_name(messages: Sequence[Message], index: int, result: ToolResultBlock) -> str:
    """The name of the call a result answers (in the assistant message just before it)."""
    if index > 0:
        for use in messages[index - 1].tool_uses():
            if use.id == result.tool_use_id:
                return use.name
    return "the tool"


def _kept(found: list[_Located], plan: EvictionPlan, counter: TokenCounter) -> int:
    """How many of the most recent results stay because they are recent."""
    kept = 0
    if plan.keep_last is not None:
        kept = min(plan.keep_last, len(found))
    if plan.keep_tokens is not None:
        total = 0
        for k in range(len(found) - 1, -1, -1):
            total += counter.count_block(found[k][2])
            if total > plan.keep_tokens:
                kept = max(kept, len(found) - 1 - k)
                break
        else:
            kept = len(found)
    return kept


def _candidates(
    messages: Sequence[Message], found: list[_Located], plan: EvictionPlan, counter: TokenCounter
) -> list[_Found]:
    last = len(messages) - 1
    out = []
    for i, j, result in found[: len(found) - _kept(found, plan, counter)]:
        # Results in the last message: the model has not read them yet.
        if i == last or is_evicted(result):
            continue
        tokens = counter.count_block(result)
        if tokens < plan.min_result_tokens:
            continue
        name = _tool_name(messages, i, result)
        if name in plan.exclude_tools:
            continue
        text = placeholder(name, result.tool_use_id, result)
        saving = tokens - counter.count_text(text)
        if saving > 0:
            out.append(_Found(i, j, result, name, tokens, saving, text))
    return out


def _clears_input(plan: EvictionPlan, name: str) -> bool:
    if isinstance(plan.clear_inputs, bool):
        return plan.clear_inputs
    return name in plan.clear_inputs


def _cleared_use(use: ToolUseBlock) -> ToolUseBlock | None:
    """The tool_use with its input replaced by a marker, or None when that would not be smaller."""
    if isinstance(use.input, dict) and CLEARED_INPUT_KEY in use.input:
        return None
    size = len(block_text(use)) - len(use.name) - 1
    marker = {CLEARED_INPUT_KEY: f"{size:,} characters of input cleared by contextkit"}
    cleared = use.model_copy(update={"input": marker})
    return cleared if len(block_text(cleared)) < len(block_text(use)) else None


EDIT_TOOLS = frozenset(
    {"Edit", "MultiEdit", "Write", "NotebookEdit", "apply_patch", "create_file", "edit", "write"}
)
"""File-editing tools of Claude Code, Codex, pi and others (``str_replace*`` editors too)."""
EDIT_FIELDS: tuple[str, ...] = ("old_string", "new_string", "content", "file_text", "old_str")
EDIT_FIELDS += ("new_str", "edits", "new_source", "patch", "input", "oldText", "newText")
CLEARED_FIELD_PREFIX = "[contextkit: "
_MIN_FIELD_CHARS = 200


def is_edit_call(use: ToolUseBlock) -> bool:
    return use.name in EDIT_TOOLS or use.name.startswith("str_replace")


def cleared_edit(use: ToolUseBlock) -> ToolUseBlock | None:
    """The edit call with its large string fields replaced by a marker, None when none is."""
    if not isinstance(use.input, dict) or not is_edit_call(use):
        return None
    data = dict(use.input)
    changed = False
    for key in EDIT_FIELDS:
        value = data.get(key)
        if isinstance(value, str) and value.startswith(CLEARED_FIELD_PREFIX):
            continue
        if value is None or isinstance(value, bool | int | float):
            continue
        size = len(value) if isinstance(value, str) else len(json.dumps(value))
        if size >= _MIN_FIELD_CHARS:
            data[key] = f"{CLEARED_FIELD_PREFIX}{size:,} characters cleared to save context]"
            changed = True
    return use.model_copy(update={"input": data}) if changed else None


def _old_edits(messages: Sequence[Message], boundary: int) -> list[tuple[int, int, ToolUseBlock]]:
    """(message, block, cleared call) of every edit call before message ``boundary``."""
    out = []
    for i in range(min(boundary, len(messages) - 1)):
        message = messages[i]
        if message.role != "assistant" or not info(message).tool_uses:
            continue
        for j, block in enumerate(message.blocks):
            if isinstance(block, ToolUseBlock):
                cleared = cleared_edit(block)
                if cleared is not None:
                    out.append((i, j, cleared))
    return out


def _boundary(messages: Sequence[Message], found: list[_Located], kept: int) -> int:
    """The message index before which calls count as old: that of the call whose result is the
    oldest kept (the assistant message just before it)."""
    if kept >= len(found):
        return 0 if found else len(messages) - 1
    return found[len(found) - kept][0] - 1 if kept else len(messages) - 1


def evict(view: Conversation, facts: CallFacts, plan: EvictionPlan) -> Compacted:
    """Evict old tool results from ``view`` according to ``plan``."""
    counter = facts.counter
    found = _results(view.messages)
    chosen = _candidates(view.messages, found, plan, counter)
    edits_old: list[tuple[int, int, ToolUseBlock]] = []
    if plan.clear_edit_inputs:
        kept = _kept(found, plan, counter)
        edits_old = _old_edits(view.messages, _boundary(view.messages, found, kept))
    if not chosen and not edits_old:
        return Compacted(view=view)
    total = facts.input_tokens(view)
    over = total > facts.budget_tokens
    if plan.keep_last is None and plan.keep_tokens is None:
        chosen = _until_fits(chosen, total - facts.budget_tokens)
    cheap = not plan.clear_inputs and not edits_old
    if not over and cheap and sum(c.saving for c in chosen) < plan.min_freed_tokens:
        return Compacted(view=view)  # cannot free enough: skip building the edit
    edits, receipts = _edits(view.messages, chosen, plan, counter, edits_old)
    new = replace_messages(view, edits)
    freed = total - facts.input_tokens(new)
    if freed <= 0 or (freed < plan.min_freed_tokens and not over):
        return Compacted(view=view)
    return Compacted(view=new, receipts=tuple(receipts))


def _until_fits(chosen: list[_Found], excess: int) -> list[_Found]:
    out: list[_Found] = []
    for item in chosen:
        if excess <= 0:
            break
        out.append(item)
        excess -= item.saving
    return out


def _edits(
    messages: Sequence[Message],
    chosen: list[_Found],
    plan: EvictionPlan,
    counter: TokenCounter,
    edits_old: Sequence[tuple[int, int, ToolUseBlock]] = (),
) -> tuple[dict[int, Message], list[Receipt]]:
    blocks: dict[int, list[Block]] = {}
    receipts: list[Receipt] = []
    for i, j, cleared in edits_old:
        row = blocks.setdefault(i, list(messages[i].blocks))
        old = row[j]
        row[j] = cleared
        receipts.append(
            Receipt(
                strategy=plan.strategy,
                action="cleared_input",
                tokens_freed=max(counter.count_block(old) - counter.count_block(cleared), 0),
                message_index=i,
                tool_use_id=cleared.id,
                detail=f"edit strings of {cleared.name}",
            )
        )
    uses: dict[str, tuple[int, ToolUseBlock]] | None = None  # looked up only to clear inputs
    for item in chosen:
        new_result = item.result.model_copy(update={"content": item.text})
        row = blocks.setdefault(item.message, list(messages[item.message].blocks))
        row[item.block] = new_result
        freed = item.tokens - counter.count_block(new_result)
        receipts.append(
            Receipt(
                strategy=plan.strategy,
                action="evicted",
                tokens_freed=freed,
                message_index=item.message,
                tool_use_id=item.result.tool_use_id,
                detail=f"result of {item.name}",
            )
        )
        if not _clears_input(plan, item.name):
            continue
        uses = tool_uses_by_id(messages) if uses is None else uses
        located = uses.get(item.result.tool_use_id)
        if located is not None:
            receipts.extend(_clear_input(messages, blocks, located, plan, counter))
    return {i: with_blocks(messages[i], row) for i, row in blocks.items()}, receipts


def _clear_input(
    messages: Sequence[Message],
    blocks: dict[int, list[Block]],
    located: tuple[int, ToolUseBlock],
    plan: EvictionPlan,
    counter: TokenCounter,
) -> list[Receipt]:
    index, use = located
    cleared = _cleared_use(use)
    if cleared is None:
        return []
    row = blocks.setdefault(index, list(messages[index].blocks))
    if use not in row:
        return []  # its edit strings were cleared already: leave that smaller form
    row[row.index(use)] = cleared
    freed = counter.count_block(use) - counter.count_block(cleared)
    return [
        Receipt(
            strategy=plan.strategy,
            action="cleared_input",
            tokens_freed=max(freed, 0),
            message_index=index,
            tool_use_id=use.id,
            detail=f"input of {use.name}",
        )
    ]


class EvictToolResults(StrategyModel):
    """Replace old tool results with a placeholder that says how to get them back."""

    kind: Literal["evict-tool-results"] = "evict-tool-results"
    keep_last: int | None = Field(3, ge=0)
    keep_tokens: int | None = Field(None, ge=0)
    min_result_tokens: int = Field(100, ge=0)
    exclude_tools: tuple[str, ...] = ()
    clear_inputs: bool = False
    clear_edit_inputs: bool = False
    """Also clear the large strings of old Edit / Write / str_replace calls (see above)."""
    min_freed_tokens: int = Field(1_000, ge=0)

    def __call__(self, view: Conversation, facts: CallFacts, /) -> Compacted:
        plan = EvictionPlan(
            strategy=self.kind,
            keep_last=self.keep_last,
            keep_tokens=self.keep_tokens,
            min_result_tokens=self.min_result_tokens,
            exclude_tools=frozenset(self.exclude_tools),
            clear_inputs=self.clear_inputs,
            min_freed_tokens=self.min_freed_tokens,
            clear_edit_inputs=self.clear_edit_inputs,
        )
        return evict(view, facts, plan)


__all__ = [
    "CLEARED_FIELD_PREFIX",
    "CLEARED_INPUT_KEY",
    "EDIT_TOOLS",
    "PLACEHOLDER_PREFIX",
    "EvictToolResults",
    "EvictionPlan",
    "cleared_edit",
    "evict",
    "is_edit_call",
    "is_evicted",
    "placeholder",
]
