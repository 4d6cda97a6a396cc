"""OpenAI Responses API items <-> canonical messages (the mapping behind
:mod:`contextkit.wire.openai_responses`, which reads and writes whole bodies).

Contract: ``to_responses_items(*from_responses_items(items)) == items`` for every well-formed
list of Responses input/output items (Codex CLI rollouts hold such items). Malformed items raise
``ValueError`` naming the item index; file readers wrap it in ``FormatError``.

The mapping:

- Leading ``system``/``developer`` message items become the system prompt (a tuple of blocks,
  each item's first block carrying the item's role and fields). Later ones, and ``user`` message
  items, become user messages (the ``openai`` field records a role other than user).
- Consecutive model-output items become one assistant message: an ``output_text`` part ->
  TextBlock, ``reasoning`` -> ThinkingBlock (summary text; the item itself, with
  ``encrypted_content``, kept in the block's ``openai`` field), ``function_call`` /
  ``custom_tool_call`` -> ToolUseBlock (``id`` = ``call_id``; function arguments parsed as JSON,
  custom tool input kept as its string), ``compaction`` -> CompactionBlock (encrypted content
  kept). Other output items (``web_search_call``, ``mcp_call``, ...) are kept verbatim as
  OpaqueBlock.
- ``function_call_output`` / ``custom_tool_call_output`` -> ToolResultBlock; consecutive outputs
  share one user message. Unknown input items travel verbatim in that message as OpaqueBlock.

What the canonical blocks cannot say is kept in the extra field ``openai`` (as for Chat
Completions, see ``contextkit.wire._chat_messages``): ``item`` (the item's other fields: ``id``,
``status``, ``phase``...), ``part`` (a content part's other fields), ``continues`` (this block is a
further part of the item before it), ``verbatim`` (an unknown item kept whole).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from contextkit.messages import (
    Block,
    CompactionBlock,
    ImageBlock,
    Message,
    OpaqueBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from contextkit.wire._chat_messages import META, meta_of

System = str | tuple[Block, ...] | None

_CALLS = {"function_call": "arguments", "custom_tool_call": "input"}
_RESULTS = ("function_call_output", "custom_tool_call_output")
_INPUT_ONLY = ("item_reference",)


def _make(cls: type[Any], fields: Mapping[str, Any], meta: Mapping[str, Any]) -> Any:
    payload = dict(fields)
    if meta:
        payload[META] = dict(meta)
    return cls.model_validate(payload)


# --------------------------------------------------------------------------------------------------
# Parsing


def item_side(item: object, index: int) -> str:
    """``system``, ``user``, ``assistant`` or ``result``: where the item goes."""
    if not isinstance(item, Mapping):
        raise ValueError(f"item {index}: expected an object, found {type(item).__name__}")
    kind = item.get("type", "message" if "role" in item else None)
    if not isinstance(kind, str):
        raise ValueError(f"item {index}: an item needs a string 'type'")
    if kind == "message":
        role = item.get("role")
        if role == "assistant":
            return "assistant"
        if role in ("system", "developer"):
            return "system"
        if role == "user":
            return "user"
        raise ValueError(f"item {index}: unknown message role {role!r}")
    if kind in _RESULTS or kind in _INPUT_ONLY or kind.endswith("_output"):
        return "result"
    return "assistant"


def from_responses_items(items: Sequence[Mapping[str, Any]]) -> tuple[System, tuple[Message, ...]]:
    """Responses items -> (system, canonical messages). ``ValueError`` names the item index."""
    if isinstance(items, str | bytes) or not isinstance(items, Sequence):
        raise ValueError("items must be a list of item objects")
    start = 0
    while start < len(items) and item_side(items[start], start) == "system":
        start += 1
    system_blocks = [b for i in range(start) for b in message_blocks(items[i], i, "input_text")]
    system: System = tuple(system_blocks) if system_blocks else None
    out: list[Message] = []
    run: list[Block] = []
    run_side = ""
    for index in range(start, len(items)):
        item = items[index]
        side = item_side(item, index)
        if run and side != run_side:
            out.append(
                Message(role="assistant" if run_side == "assistant" else "user", content=tuple(run))
            )
            run = []
        if side in ("user", "system"):
            out.append(user_message(item, index))
            continue
        run_side = side
        run.extend(
            output_blocks(item, index) if side == "assistant" else [result_block(item, index)]
        )
    if run:
        out.append(
            Message(role="assistant" if run_side == "assistant" else "user", content=tuple(run))
        )
    return system, tuple(out)


def _item_fields(item: Mapping[str, Any], skip: Sequence[str]) -> dict[str, Any]:
    fields = {k: v for k, v in item.items() if k not in skip}
    if "type" not in item:
        fields["no_type"] = True
    return fields


def user_message(item: Mapping[str, Any], index: int) -> Message:
    meta: dict[str, Any] = {"item": _item_fields(item, ("type", "role", "content"))}
    if item["role"] != "user":
        meta["role"] = item["role"]
    content = item.get("content")
    if not isinstance(content, str):
        content = tuple(_parts(content, f"item {index}", "input_text"))
    return _make(Message, {"role": "user", "content": content}, meta)  # type: ignore[no-any-return]


def message_blocks(item: Mapping[str, Any], index: int, default: str) -> list[Block]:
    """A message item as blocks: the first carries the item's fields, the others continue it."""
    meta: dict[str, Any] = {"item": _item_fields(item, ("type", "content"))}
    content = item.get("content")
    if isinstance(content, str):
        return [_make(TextBlock, {"text": content}, {**meta, "string": True})]
    blocks = _parts(content, f"item {index}", default)
    if not blocks:  # nothing to hang the item's fields on: keep the item whole
        return [_make(OpaqueBlock, item, {"verbatim": True})]
    first = blocks[0].model_copy(update={META: {**meta_of(blocks[0]), **meta}})
    rest = [b.model_copy(update={META: {**meta_of(b), "continues": True}}) for b in blocks[1:]]
    return [first, *rest]


def _parts(content: object, where: str, default: str) -> list[Block]:
    if not isinstance(content, list):
        raise ValueError(f"{where}: content must be a string or a list of parts")
    return [_part(p, f"{where}, part {i}", default) for i, p in enumerate(content)]


def _part(part: object, where: str, default: str) -> Block:
    if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
        raise ValueError(f"{where}: a content part must be an object with a 'type'")
    kind = part["type"]
    if kind in ("input_text", "output_text"):
        if not isinstance(part.get("text"), str):
            raise ValueError(f"{where}: a {kind} part needs a string 'text'")
        extra = {k: v for k, v in part.items() if k not in ("type", "text")}
        if kind != default:
            extra["type"] = kind
        return _make(TextBlock, {"text": part["text"]}, {"part": extra} if extra else {})  # type: ignore[no-any-return]
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        url = part["image_url"]
        source = _data_url(url) or {"type": "url", "url": url}
        extra = {k: v for k, v in part.items() if k not in ("type", "image_url")}
        return _make(ImageBlock, {"source": source}, {"part": extra} if extra else {})  # type: ignore[no-any-return]
    return OpaqueBlock.model_validate(dict(part))


def _data_url(url: str) -> dict[str, Any] | None:
    if not url.startswith("data:") or ";base64," not in url:
        return None
    media_type, data = url[5:].split(";base64,", 1)
    return {"type": "base64", "media_type": media_type, "data": data}


def output_blocks(item: Mapping[str, Any], index: int) -> list[Block]:
    kind = item.get("type", "message")
    if kind == "message":
        return message_blocks(item, index, "output_text")
    if kind == "reasoning":
        thinking = _reasoning_text(item)
        return [
            _make(ThinkingBlock, {"thinking": thinking}, {"item": _item_fields(item, ("type",))})
        ]
    if kind in _CALLS:
        return [_tool_use(item, index, kind)]
    if kind == "compaction":
        return [_make(CompactionBlock, {}, {"item": _item_fields(item, ("type",))})]
    return [_make(OpaqueBlock, item, {"verbatim": True})]


def _reasoning_text(item: Mapping[str, Any]) -> str:
    """The summary text (or, when there is no summary, the reasoning text) of a reasoning item."""
    for key in ("summary", "content"):
        parts = item.get(key)
        if isinstance(parts, list) and parts:
            return "\n\n".join(str(p.get("text", "")) for p in parts if isinstance(p, Mapping))
    return ""


def _tool_use(item: Mapping[str, Any], index: int, kind: str) -> ToolUseBlock:
    where = f"item {index}"
    key = _CALLS[kind]
    call_id, name, raw = item.get("call_id"), item.get("name"), item.get(key)
    if not (isinstance(call_id, str) and isinstance(name, str) and isinstance(raw, str)):
        raise ValueError(f"{where}: a {kind} needs string 'call_id', 'name' and '{key}'")
    meta: dict[str, Any] = {"item": _item_fields(item, ("call_id", "name", key))}
    value: Any = raw
    if kind == "function_call":
        try:
            value = json.loads(raw)
        except ValueError:  # not JSON, or a number past the digit limit
            meta["invalid_json"] = True
    meta["arguments"] = raw
    return _make(ToolUseBlock, {"id": call_id, "name": name, "input": value}, meta)  # type: ignore[no-any-return]


def result_block(item: Mapping[str, Any], index: int) -> Block:
    kind = item.get("type")
    if kind not in _RESULTS:
        return _make(OpaqueBlock, item, {"verbatim": True})  # type: ignore[no-any-return]
    call_id = item.get("call_id")
    if not isinstance(call_id, str):
        raise ValueError(f"item {index}: a {kind} needs a string 'call_id'")
    output = item.get("output")
    if isinstance(output, list):
        output = tuple(_parts(output, f"item {index}", "input_text"))
    elif not isinstance(output, str):
        raise ValueError(f"item {index}: a {kind} needs 'output' as a string or a list of parts")
    meta = {"item": _item_fields(item, ("call_id", "output"))}
    return _make(ToolResultBlock, {"tool_use_id": call_id, "content": output}, meta)  # type: ignore[no-any-return]


# --------------------------------------------------------------------------------------------------
# Writing


def to_responses_items(system: System, messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Canonical (system, messages) -> Responses items; the inverse of :func:`from_responses_items`.

    A string system prompt becomes a ``system`` message item (a request body puts it in
    ``instructions`` instead, see :func:`to_responses_request`). Blocks with no Responses form
    raise ``ValueError``; :func:`contextkit.wire.to_format` drops them with warnings.
    """
    out: list[dict[str, Any]] = []
    if isinstance(system, str):
        out.append(_message_item("system", {}, [TextBlock(text=system)], "input_text"))
    elif system:
        out.extend(_system_items(system))
    for index, message in enumerate(messages):
        try:
            out.extend(_write_message(message))
        except ValueError as exc:
            raise ValueError(f"message {index}: {exc}") from None
    return out


def _system_items(blocks: Sequence[Block]) -> list[dict[str, Any]]:
    return _grouped_items(
        [b for b in blocks if not meta_of(b).get("instructions")], "system", "input_text"
    )


def _grouped_items(blocks: Sequence[Block], role: str, default: str) -> list[dict[str, Any]]:
    """Blocks of message items (and whole items) back to items, grouping continued parts."""
    out: list[dict[str, Any]] = []
    group: list[Block] = []
    for block in blocks:
        meta = meta_of(block)
        if meta.get("continues") and group:
            group.append(block)
            continue
        if group:
            out.append(_item_from_group(group, role, default))
            group = []
        if meta.get("verbatim") or not isinstance(block, TextBlock | OpaqueBlock | ImageBlock):
            out.append(_item_from_block(block))
        else:
            group = [block]
    if group:
        out.append(_item_from_group(group, role, default))
    return out


def _item_from_group(group: Sequence[Block], role: str, default: str) -> dict[str, Any]:
    item = dict(meta_of(group[0]).get("item", {}))
    if meta_of(group[0]).get("string") and isinstance(group[0], TextBlock):
        return _finish({"type": "message", **item, "content": group[0].text})
    item.setdefault("role", role)
    return _message_item(str(item.pop("role")), item, group, default)


def _message_item(
    role: str, fields: Mapping[str, Any], blocks: Sequence[Block], default: str
) -> dict[str, Any]:
    parts = [_write_part(b, default) for b in blocks]
    return _finish({"type": "message", "role": role, **fields, "content": parts})


def _finish(item: dict[str, Any]) -> dict[str, Any]:
    if item.pop("no_type", False):
        item.pop("type", None)
    return item


def _write_part(block: Block, default: str) -> dict[str, Any]:
    part = dict(meta_of(block).get("part", {}))
    if isinstance(block, TextBlock):
        fresh: dict[str, Any] = (
            {"annotations": []} if default == "output_text" and not meta_of(block) else {}
        )
        return {"type": part.pop("type", default), "text": block.text, **fresh, **part}
    if isinstance(block, ImageBlock):
        url = _image_url(block.source)
        return {"type": "input_image", "image_url": url, **({"detail": "auto"} | part)}
    if isinstance(block, OpaqueBlock):
        return _plain(block)
    raise ValueError(f"a {block.type!r} block has no Responses content-part form")


def _image_url(source: Mapping[str, Any]) -> str:
    if source.get("type") == "base64":
        return f"data:{source.get('media_type')};base64,{source.get('data')}"
    if source.get("type") == "url":
        return str(source.get("url"))
    raise ValueError(f"an image with a {source.get('type')!r} source has no Responses form")


def _plain(block: Block) -> dict[str, Any]:
    data = block.model_dump(mode="json", exclude_unset=True, by_alias=True)
    data.pop(META, None)
    return data


def _item_from_block(block: Block) -> dict[str, Any]:
    meta = meta_of(block)
    item = dict(meta.get("item", {}))
    if isinstance(block, ThinkingBlock):
        return _reasoning_item(block, item)
    if isinstance(block, ToolUseBlock):
        return _call_item(block, meta, item)
    if isinstance(block, ToolResultBlock):
        return _output_item(block, item)
    if isinstance(block, CompactionBlock) and item:
        return _finish({"type": "compaction", **item})
    if isinstance(block, OpaqueBlock):
        return _plain(block)
    raise ValueError(f"a {block.type!r} block has no Responses item form")


def _reasoning_item(block: ThinkingBlock, item: dict[str, Any]) -> dict[str, Any]:
    if not item:
        raise ValueError("a thinking block not read from a Responses reasoning item")
    out = _finish({"type": "reasoning", **item})
    if _reasoning_text(out) != block.thinking:  # edited: the summary says what the block says
        out["summary"] = [{"type": "summary_text", "text": block.thinking}]
    return out


def _call_item(
    block: ToolUseBlock, meta: Mapping[str, Any], item: dict[str, Any]
) -> dict[str, Any]:
    kind = str(item.pop("type", "function_call"))
    key = _CALLS.get(kind, "arguments")
    raw = meta.get("arguments")
    value: str
    if kind == "function_call" and not meta.get("invalid_json"):
        same = isinstance(raw, str) and _loads(raw) == block.input
        value = (
            raw if same and isinstance(raw, str) else json.dumps(block.input, ensure_ascii=False)
        )
    else:
        value = block.input if isinstance(block.input, str) else json.dumps(block.input)
    return _finish({"type": kind, **item, "call_id": block.id, "name": block.name, key: value})


def _loads(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:  # not JSON, or a number past the digit limit
        return None


def _output_item(block: ToolResultBlock, item: dict[str, Any]) -> dict[str, Any]:
    kind = str(item.pop("type", "function_call_output"))
    content = block.content
    output: Any
    if isinstance(content, tuple):
        output = [_write_part(b, "input_text") for b in content]
    else:
        output = content if content is not None else ""
    return _finish({"type": kind, **item, "call_id": block.tool_use_id, "output": output})


def _write_message(message: Message) -> list[dict[str, Any]]:
    if message.role == "assistant":
        if isinstance(message.content, str):
            return [
                _message_item("assistant", {}, [TextBlock(text=message.content)], "output_text")
            ]
        return _grouped_items(message.content, "assistant", "output_text")
    meta = meta_of(message)
    if isinstance(message.content, str):
        return [_user_item(meta, message.content)]
    whole = [b for b in message.content if _is_item(b)]
    rest = [b for b in message.content if not _is_item(b)]
    out = [_item_from_block(b) for b in whole]
    if rest or not whole:
        out.append(_user_item(meta, rest))
    return out


def _is_item(block: Block) -> bool:
    return isinstance(block, ToolResultBlock) or bool(meta_of(block).get("verbatim"))


def _user_item(meta: Mapping[str, Any], content: str | Sequence[Block]) -> dict[str, Any]:
    item = dict(meta.get("item", {}))
    role = str(meta.get("role", "user"))
    if isinstance(content, str):
        return _finish({"type": "message", "role": role, **item, "content": content})
    return _message_item(role, item, content, "input_text")


__all__ = [
    "System",
    "from_responses_items",
    "item_side",
    "message_blocks",
    "output_blocks",
    "result_block",
    "to_responses_items",
    "user_message",
]
