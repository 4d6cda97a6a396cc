"""OpenAI Chat Completions messages <-> contextkit's canonical (Anthropic-shaped) messages.

Contract: ``to_chat_messages(*parse_chat_messages(m)) == m`` for every well-formed chat message
list (the OpenAI wire form, and the same lists with extra per-message fields as agent frameworks
record them: SWE-agent, tau-bench, litellm). Malformed input raises ``ValueError`` naming the
message index; file readers wrap it in ``FormatError`` with file and line.

The mapping:

- Leading ``system``/``developer`` messages become the system prompt: a plain string when there
  is exactly one ``system`` message with string content and no other field, otherwise a tuple of
  blocks (one text block per string content, one block per part for a parts list).
- ``user`` -> user message (string content stays a string; a parts list becomes blocks:
  ``text`` -> TextBlock, ``image_url`` -> ImageBlock with a ``url`` source, or a ``base64`` source
  for ``data:`` URLs; other part types are kept verbatim as OpaqueBlock).
- ``assistant`` -> assistant message: its text, then one ToolUseBlock per tool call (``input`` is
  the parsed ``function.arguments``; arguments that are not JSON stay a string).
- ``tool`` -> ToolResultBlock (``tool_use_id`` = ``tool_call_id``); consecutive tool messages
  become one user message holding only the results (a following user message stays apart).
  SWE-agent's ``tool_call_ids`` list is accepted: one result block per id; the first carries the
  content, the others are empty and marked as belonging to the same message.
- ``system``/``developer``/``function`` messages after the first non-system message (system
  messages mid-conversation) become user messages whose ``openai`` field records the role: the
  canonical model has no such role, and a conversion to Anthropic sends them as user text (with
  a warning, see ``contextkit.wire.convert``).

Everything the canonical blocks cannot say is kept in one extra field named ``openai`` (see
:data:`META`) on the message or block: the original role, fields unknown to the mapping (``name``,
``refusal``, SWE-agent's ``agent``/``thought``/``action``...), the exact ``arguments`` string,
content that was ``null``/empty/absent, a parts list where a string would be expected. Writers for
other formats drop this field (``contextkit.wire.convert`` strips it and warns where it
mattered).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from contextkit.messages import (
    Block,
    ImageBlock,
    Message,
    OpaqueBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)

META = "openai"
"""The extra field holding what only the OpenAI form can say (see module docstring)."""

SYSTEM_ROLES = ("system", "developer")
_OTHER_ROLES = ("system", "developer", "function")
_ABSENT = "omit"  # META key: list of message keys that the original did not have

System = str | tuple[Block, ...] | None


def meta_of(value: Message | Block) -> dict[str, Any]:
    """The ``openai`` extra of a message or block (empty when it has none)."""
    extra = value.model_extra or {}
    found = extra.get(META)
    return dict(found) if isinstance(found, Mapping) else {}


def _with_meta(cls: type[Any], fields: dict[str, Any], meta: Mapping[str, Any]) -> Any:
    if meta:
        fields = {**fields, META: dict(meta)}
    return cls.model_validate(fields)


# --------------------------------------------------------------------------------------------------
# Content parts


def _data_url_source(url: str) -> dict[str, Any] | None:
    """``data:<type>;base64,<data>`` as an Anthropic base64 source (None for other URLs)."""
    if not url.startswith("data:") or ";base64," not in url:
        return None
    media_type, data = url[5:].split(";base64,", 1)
    return {"type": "base64", "media_type": media_type, "data": data}


def _part_to_block(part: object, where: str) -> Block:
    if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
        raise ValueError(f"{where}: a content part must be an object with a 'type'")
    kind = part["type"]
    if kind == "text":
        if not isinstance(part.get("text"), str):
            raise ValueError(f"{where}: a text part needs a string 'text'")
        return TextBlock.model_validate(dict(part))
    if kind == "image_url":
        return _image_block(part, where)
    return OpaqueBlock.model_validate(dict(part))


def _image_block(part: Mapping[str, Any], where: str) -> ImageBlock:
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, Mapping) else image
    if not isinstance(url, str):
        raise ValueError(f"{where}: an image_url part needs a string url")
    source = _data_url_source(url) or {"type": "url", "url": url}
    meta: dict[str, Any] = {k: v for k, v in part.items() if k not in ("type", "image_url")}
    if isinstance(image, Mapping):
        meta["image_url"] = {k: v for k, v in image.items() if k != "url"}
    else:
        meta["image_url_string"] = True
    return _with_meta(ImageBlock, {"source": source}, meta)  # type: ignore[no-any-return]


def _block_to_part(block: Block) -> dict[str, Any]:
    if isinstance(block, ImageBlock):
        return _image_part(block)
    if isinstance(block, TextBlock | OpaqueBlock):
        return {k: v for k, v in _dump(block).items() if k != META}
    raise ValueError(f"a {block.type!r} block has no OpenAI chat form")


def _image_part(block: ImageBlock) -> dict[str, Any]:
    source = block.source
    if source.get("type") == "base64":
        url = f"data:{source.get('media_type')};base64,{source.get('data')}"
    elif source.get("type") == "url":
        url = str(source.get("url"))
    else:
        raise ValueError(f"an image with a {source.get('type')!r} source has no OpenAI chat form")
    meta = meta_of(block)
    image_meta = meta.pop("image_url", {})
    if meta.pop("image_url_string", False):
        return {"type": "image_url", "image_url": url, **meta}
    return {"type": "image_url", "image_url": {"url": url, **image_meta}, **meta}


def _dump(block: Block) -> dict[str, Any]:
    return block.model_dump(mode="json", exclude_unset=True, by_alias=True)


def _content_blocks(content: object, where: str) -> tuple[Block, ...]:
    if not isinstance(content, list):
        raise ValueError(f"{where}: content must be a string, null or a list of parts")
    return tuple(_part_to_block(p, f"{where}, part {i}") for i, p in enumerate(content))


# --------------------------------------------------------------------------------------------------
# Parsing


def parse_chat_messages(
    messages: Sequence[Mapping[str, Any]],
) -> tuple[System, tuple[Message, ...]]:
    """OpenAI chat messages -> (system, canonical messages). ``ValueError`` names the index."""
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise ValueError("messages must be a list of message objects")
    start = 0
    while start < len(messages) and _role(messages[start], start) in SYSTEM_ROLES:
        start += 1
    system = _parse_system(messages[:start])
    out: list[Message] = []
    results: list[Block] = []
    for index in range(start, len(messages)):
        raw = messages[index]
        role = _role(raw, index)
        if role == "tool":
            results.extend(_parse_tool(raw, index))
            continue
        if results:
            out.append(Message(role="user", content=tuple(results)))
            results = []
        out.append(_parse_message(raw, role, index))
    if results:
        out.append(Message(role="user", content=tuple(results)))
    return system, tuple(out)


def _role(raw: object, index: int) -> str:
    if not isinstance(raw, Mapping):
        raise ValueError(f"message {index}: expected an object, found {type(raw).__name__}")
    role = raw.get("role")
    if role not in ("user", "assistant", "tool", *_OTHER_ROLES):
        raise ValueError(f"message {index}: unknown role {role!r}")
    return str(role)


def _parse_system(raws: Sequence[Mapping[str, Any]]) -> System:
    if not raws:
        return None
    only = raws[0]
    plain = len(raws) == 1 and set(only) == {"role", "content"} and only["role"] == "system"
    if plain and isinstance(only["content"], str):
        return str(only["content"])
    blocks: list[Block] = []
    for index, raw in enumerate(raws):
        blocks.extend(_system_blocks(raw, index))
    return tuple(blocks)


def _system_blocks(raw: Mapping[str, Any], index: int) -> list[Block]:
    """One message's blocks; the first carries the message's role and other fields."""
    where = f"message {index}"
    meta = {k: v for k, v in raw.items() if k != "content"}
    content = raw.get("content")
    if "content" not in raw:
        meta[_ABSENT] = ["content"]
    if isinstance(content, str):
        return [_with_meta(TextBlock, {"text": content}, meta)]
    if content is None:
        return [_with_meta(TextBlock, {"text": ""}, {**meta, "content": None})]
    blocks = list(_content_blocks(content, where))
    if not blocks:
        return [_with_meta(TextBlock, {"text": ""}, {**meta, "content": []})]
    first = blocks[0].model_copy(update={META: {**meta_of(blocks[0]), **meta, "parts": True}})
    return [first, *blocks[1:]]


def _message_meta(raw: Mapping[str, Any], known: Sequence[str]) -> dict[str, Any]:
    meta = {k: v for k, v in raw.items() if k not in known}
    if "content" not in raw:
        meta[_ABSENT] = ["content"]
    return meta


def _parse_message(raw: Mapping[str, Any], role: str, index: int) -> Message:
    if role == "assistant":
        return _parse_assistant(raw, index)
    meta = _message_meta(raw, ("role", "content"))
    if role != "user":
        meta["role"] = role
    content = raw.get("content")
    if content is None:
        if "content" in raw:
            meta["content"] = None
        return _with_meta(Message, {"role": "user", "content": ()}, meta)  # type: ignore[no-any-return]
    if not isinstance(content, str):
        content = _content_blocks(content, f"message {index}")
    return _with_meta(Message, {"role": "user", "content": content}, meta)  # type: ignore[no-any-return]


def _parse_assistant(raw: Mapping[str, Any], index: int) -> Message:
    where = f"message {index}"
    meta = _message_meta(raw, ("role", "content", "tool_calls"))
    calls = raw.get("tool_calls")
    content = raw.get("content")
    if not calls:
        if "tool_calls" in raw:
            meta["tool_calls"] = calls  # an empty list or null, as some SDKs write it
        if isinstance(content, str):
            return _with_meta(Message, {"role": "assistant", "content": content}, meta)  # type: ignore[no-any-return]
    if not isinstance(calls, list | None):
        raise ValueError(f"{where}: tool_calls must be a list")
    text: tuple[Block, ...]
    if isinstance(content, str) and content:
        text = (TextBlock(text=content),)
    elif content is None or content == "":
        text = ()
        if "content" in raw:
            meta["content"] = content
    else:
        text = _content_blocks(content, where)
        meta["parts"] = True
    uses = tuple(_parse_tool_call(c, f"{where}, tool call {i}") for i, c in enumerate(calls or ()))
    return _with_meta(Message, {"role": "assistant", "content": (*text, *uses)}, meta)  # type: ignore[no-any-return]


def _parse_tool_call(call: object, where: str) -> ToolUseBlock:
    if not isinstance(call, Mapping) or not isinstance(call.get("id"), str):
        raise ValueError(f"{where}: a tool call must be an object with a string 'id'")
    kind = call.get("type", "function")
    body = call.get(kind) if isinstance(kind, str) else None
    if not isinstance(body, Mapping) or not isinstance(body.get("name"), str):
        raise ValueError(f"{where}: a tool call needs '{kind}' with a string 'name'")
    raw_input = body.get("arguments" if kind == "function" else "input")
    if not isinstance(raw_input, str):
        raise ValueError(f"{where}: the tool call's arguments must be a string")
    meta: dict[str, Any] = {k: v for k, v in call.items() if k not in ("id", "type", kind)}
    if kind != "function":
        meta["type"] = kind
    elif "type" not in call:
        meta[_ABSENT] = ["type"]
    meta.update({f"{kind}.{k}": v for k, v in body.items() if k not in ("name", "arguments")})
    meta["arguments"] = raw_input
    value: Any = raw_input
    if kind == "function":
        try:
            value = json.loads(raw_input)
        except ValueError:  # not JSON, or a number past the digit limit
            meta["invalid_json"] = True  # the model wrote broken JSON: kept as the raw string
    fields = {"id": call["id"], "name": body["name"], "input": value}
    return _with_meta(ToolUseBlock, fields, meta)  # type: ignore[no-any-return]


def _parse_tool(raw: Mapping[str, Any], index: int) -> list[Block]:
    where = f"message {index}"
    ids = _tool_ids(raw, where)
    meta = _message_meta(raw, ("role", "content", "tool_call_id"))
    content = raw.get("content")
    if content is not None and not isinstance(content, str):
        content = _content_blocks(content, where)
    fields: dict[str, Any] = {"tool_use_id": ids[0]}
    if "content" in raw:
        fields["content"] = content
    first: Block = _with_meta(ToolResultBlock, fields, meta)
    # SWE-agent answers several calls with one observation: the others get a marked empty result.
    rest: list[Block] = [
        _with_meta(ToolResultBlock, {"tool_use_id": i, "content": ""}, {"same_message": True})
        for i in ids[1:]
    ]
    return [first, *rest]


def _tool_ids(raw: Mapping[str, Any], where: str) -> list[str]:
    single = raw.get("tool_call_id")
    if isinstance(single, str):
        return [single]
    many = raw.get("tool_call_ids")
    if isinstance(many, list) and many and all(isinstance(i, str) for i in many):
        return list(many)
    raise ValueError(f"{where}: a tool message needs a string 'tool_call_id'")


# --------------------------------------------------------------------------------------------------
# Writing


def to_chat_messages(system: System, messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Canonical (system, messages) -> OpenAI chat messages; the inverse of the parser.

    Blocks with no chat form (thinking, documents, server tools) raise ``ValueError``: convert
    with :func:`contextkit.wire.to_format`, which drops them with warnings.
    """
    out = _system_messages(system)
    for index, message in enumerate(messages):
        try:
            out.extend(_write_message(message))
        except ValueError as exc:
            raise ValueError(f"message {index}: {exc}") from None
    return out


def _system_messages(system: System) -> list[dict[str, Any]]:
    if system is None:
        return []
    if isinstance(system, str):
        return [{"role": "system", "content": system}]
    groups: list[tuple[dict[str, Any], list[Block]]] = []
    for block in system:
        meta = meta_of(block)
        if "role" in meta or not groups:
            groups.append((meta, [block]))
        else:
            groups[-1][1].append(block)
    return [_system_message(meta, blocks) for meta, blocks in groups]


def _system_message(meta: dict[str, Any], blocks: list[Block]) -> dict[str, Any]:
    absent = meta.pop(_ABSENT, [])
    parts = meta.pop("parts", False) or len(blocks) > 1
    raw: dict[str, Any] = {"role": meta.pop("role", "system")}
    if "content" in meta:
        raw["content"] = meta.pop("content")
    elif parts:
        raw["content"] = [_block_to_part(_strip_meta(b)) for b in blocks]
    else:
        only = blocks[0]
        if not isinstance(only, TextBlock):
            raw["content"] = [_block_to_part(_strip_meta(only))]
        else:
            raw["content"] = only.text
    raw.update(meta)
    return _drop_absent(raw, absent)


def _strip_meta(block: Block) -> Block:
    """The block without the message-level fields its first block carries."""
    meta = meta_of(block)
    keep = {k: v for k, v in meta.items() if k in ("image_url", "image_url_string")}
    fields = _dump(block)
    fields.pop(META, None)
    if keep:
        fields[META] = keep
    return type(block).model_validate(fields)


def _drop_absent(raw: dict[str, Any], absent: Sequence[str]) -> dict[str, Any]:
    for key in absent:
        raw.pop(key, None)
    return raw


def _write_message(message: Message) -> list[dict[str, Any]]:
    if message.role == "assistant":
        return [_write_assistant(message)]
    blocks = message.blocks if isinstance(message.content, tuple) else ()
    results = [b for b in blocks if isinstance(b, ToolResultBlock)]
    if not results:
        return [_write_user(message)]
    out = [_write_tool(b) for b in results if not meta_of(b).get("same_message")]
    rest = tuple(b for b in blocks if not isinstance(b, ToolResultBlock))
    if rest:
        out.append(_write_user(message.model_copy(update={"content": rest})))
    return out


def _write_user(message: Message) -> dict[str, Any]:
    meta = meta_of(message)
    absent = meta.pop(_ABSENT, [])
    raw: dict[str, Any] = {"role": meta.pop("role", "user")}
    if "content" in meta:
        raw["content"] = meta.pop("content")
    elif isinstance(message.content, str):
        raw["content"] = message.content
    else:
        raw["content"] = [_block_to_part(b) for b in message.content]
    raw.update(meta)
    return _drop_absent(raw, absent)


def _write_assistant(message: Message) -> dict[str, Any]:
    meta = meta_of(message)
    absent = meta.pop(_ABSENT, [])
    raw: dict[str, Any] = {"role": "assistant"}
    if isinstance(message.content, str):
        raw["content"] = message.content
    else:
        uses = [b for b in message.content if isinstance(b, ToolUseBlock)]
        others = [b for b in message.content if not isinstance(b, ToolUseBlock)]
        raw["content"] = _assistant_content(others, meta)
        if uses:
            raw["tool_calls"] = [_write_tool_call(b) for b in uses]
    raw.update(meta)
    return _drop_absent(raw, absent)


def _assistant_content(blocks: Sequence[Block], meta: dict[str, Any]) -> Any:
    if "content" in meta and not blocks:
        return meta.pop("content")
    meta.pop("content", None)
    if meta.pop("parts", False):
        return [_block_to_part(b) for b in blocks]
    if not blocks:
        return None
    if (
        len(blocks) == 1
        and isinstance(blocks[0], TextBlock)
        and set(_dump(blocks[0]))
        <= {
            "type",
            "text",
        }
    ):
        return blocks[0].text
    return [_block_to_part(b) for b in blocks]


def _write_tool_call(block: ToolUseBlock) -> dict[str, Any]:
    meta = meta_of(block)
    absent = meta.pop(_ABSENT, [])
    kind = str(meta.pop("type", "function"))
    original = meta.pop("arguments", None)
    invalid = meta.pop("invalid_json", False)
    body: dict[str, Any] = {"name": block.name}
    body_key = "arguments" if kind == "function" else "input"
    body[body_key] = _arguments(block.input, original, kind == "function" and not invalid)
    prefix = f"{kind}."
    for key in [k for k in meta if k.startswith(prefix)]:
        body[key[len(prefix) :]] = meta.pop(key)
    return _drop_absent({"id": block.id, "type": kind, kind: body, **meta}, absent)


def _arguments(value: Any, original: object, is_json: bool) -> str:
    """The original arguments string while it still says the same thing, else fresh JSON."""
    if isinstance(original, str):
        if not is_json and value == original:
            return original
        if is_json:
            try:
                if json.loads(original) == value:
                    return original
            except ValueError:  # not JSON, or a number past the digit limit
                pass
    if isinstance(value, str) and not is_json:
        return value
    return json.dumps(value, ensure_ascii=False)


def _write_tool(block: ToolResultBlock) -> dict[str, Any]:
    meta = meta_of(block)
    absent = meta.pop(_ABSENT, [])
    raw: dict[str, Any] = {"role": "tool", "tool_call_id": block.tool_use_id}
    if "content" in block.model_fields_set:
        content = block.content
        if isinstance(content, tuple):
            raw["content"] = [_block_to_part(b) for b in content]
        else:
            raw["content"] = content
    raw.update(meta)
    if "tool_call_ids" in meta:
        raw.pop("tool_call_id")
    return _drop_absent(raw, absent)
