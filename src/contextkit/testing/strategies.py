"""Hypothesis strategies for conversations (needs ``hypothesis``, a test-only dependency).

- :func:`valid_conversations` draws requests the provider accepts: user turns of agent loops with
  parallel tool calls (results in any order, results first), signed and redacted thinking, server
  tool blocks, images, error results, huge results, text-only turns, unknown block types, and
  sometimes a system prompt and tool definitions. ``validate(x) == ()`` for every draw.
- :func:`any_conversations` draws anything the block types can express: blank text, unsigned
  thinking, results without calls, calls without results, repeated ids, wrong roles, empty
  messages, and valid conversations broken by random edits.
"""

from __future__ import annotations

from typing import Literal

from hypothesis import strategies as st

from contextkit.messages import (
    Block,
    CompactionBlock,
    Conversation,
    ImageBlock,
    Message,
    OpaqueBlock,
    RedactedThinkingBlock,
    ServerToolResultBlock,
    ServerToolUseBlock,
    TextBlock,
    ThinkingBlock,
    Tool,
    ToolResultBlock,
    ToolUseBlock,
)

End = Literal["user", "assistant"]

IMAGE = ImageBlock(source={"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="})

# Printable text with the odd character out (accents, CJK, emoji, newlines) and no surrounding
# whitespace, so that a final assistant message never ends with whitespace.
_ALPHABET = "abcxyz019 _-.:/\n\t\"'{}éßЖ中文🙂\u200b\u00a0"
_words = st.text(alphabet=_ALPHABET, min_size=1, max_size=24).map(lambda s: s.strip() or "x")
_huge = st.integers(2_000, 60_000).map(lambda n: ("0123456789abcdef\n" * (n // 17 + 1))[:n] + ".")


# Strategies are built once here: building them inside each draw costs more than the draw itself.
_result_content = st.one_of(_words, _words, _huge, _words.map(lambda w: (TextBlock(text=w), IMAGE)))
_bool = st.booleans()
_one_in_four = st.integers(0, 3).map(lambda n: n == 0)
_count_0_2 = st.integers(0, 2)
_user_kind = st.sampled_from(["string", "string", "blocks", "image", "opaque"])
_system_kind = st.sampled_from(["none", "string", "blocks"])
_tool_names = st.lists(_words, min_size=1, max_size=3, unique=True)


def _tool_result(draw: st.DrawFn, tool_use_id: str) -> ToolResultBlock:
    content = draw(_result_content)
    if draw(_one_in_four):
        return ToolResultBlock(tool_use_id=tool_use_id, content=content, is_error=True)
    return ToolResultBlock(tool_use_id=tool_use_id, content=content)


def _reasoning(draw: st.DrawFn) -> list[Block]:
    out: list[Block] = []
    for _ in range(draw(_count_0_2)):
        if draw(_bool):
            out.append(ThinkingBlock(thinking=draw(_words), signature="sig" + draw(_words)))
        else:
            out.append(RedactedThinkingBlock(data="EmwKAhgBEgy" + str(len(out))))
    return out


def _server_tool(draw: st.DrawFn, ids: list[int]) -> list[Block]:
    ids[0] += 1
    sid = f"srvtoolu_{ids[0]:04d}"
    return [
        ServerToolUseBlock(id=sid, name="web_search", input={"query": draw(_words)}),
        ServerToolResultBlock(type="web_search_tool_result", tool_use_id=sid, content=[]),
    ]


def _tool_round(draw: st.DrawFn, ids: list[int], max_tools: int) -> list[Message]:
    """An assistant message calling tools, and the user message answering every call."""
    blocks = _reasoning(draw)
    if draw(_bool):
        blocks.append(TextBlock(text=draw(_words)))
    if draw(_one_in_four):
        blocks += _server_tool(draw, ids)
    uses: list[str] = []
    for _ in range(draw(st.integers(1, max_tools))):
        ids[0] += 1
        uses.append(f"toolu_{ids[0]:04d}")
        blocks.append(ToolUseBlock(id=uses[-1], name=draw(_words), input={"arg": draw(_words)}))
    answers: list[Block] = [_tool_result(draw, u) for u in draw(st.permutations(uses))]
    if draw(_one_in_four):
        answers.append(TextBlock(text=draw(_words)))
    return [
        Message(role="assistant", content=tuple(blocks)),
        Message(role="user", content=tuple(answers)),
    ]


def _user_message(draw: st.DrawFn) -> Message:
    kind = draw(_user_kind)
    if kind == "string":
        return Message(role="user", content=draw(_words))
    blocks: list[Block] = [TextBlock(text=draw(_words))]
    if kind == "image":
        blocks.insert(0, IMAGE)
    elif kind == "opaque":
        blocks.append(OpaqueBlock(type="future_block", payload={"n": draw(_count_0_2)}))
    return Message(role="user", content=tuple(blocks))


def _final_answer(draw: st.DrawFn) -> Message:
    if draw(_bool):
        return Message(role="assistant", content=draw(_words))
    blocks = [*_reasoning(draw), TextBlock(text=draw(_words))]
    return Message(role="assistant", content=tuple(blocks))


def _prefix(draw: st.DrawFn) -> dict[str, object]:
    fields: dict[str, object] = {}
    system = draw(_system_kind)
    if system == "string":
        fields["system"] = draw(_words)
    elif system == "blocks":
        cached = TextBlock(text=draw(_words), cache_control={"type": "ephemeral"})
        fields["system"] = (TextBlock(text=draw(_words)), cached)
    if draw(_bool):
        schema = {"type": "object", "properties": {"arg": {"type": "string"}}}
        tools = (Tool(name=n, description=n, input_schema=schema) for n in draw(_tool_names))
        fields["tools"] = tuple(tools)
    return fields


@st.composite
def valid_conversations(
    draw: st.DrawFn,
    max_turns: int = 3,
    *,
    max_rounds: int = 3,
    max_tools: int = 3,
    end: End | None = None,
) -> Conversation:
    """A request the provider accepts: ``max_turns`` user turns at most, each an agent loop of up
    to ``max_rounds`` tool rounds of up to ``max_tools`` parallel calls. ``end`` fixes the role of
    the last message (``"user"``: a request awaiting a reply; ``"assistant"``: a finished turn);
    None draws either."""
    ids = [0]
    messages: list[Message] = []
    turns = draw(st.integers(1, max_turns))
    for turn in range(turns):
        messages.append(_user_message(draw))
        for _ in range(draw(st.integers(0, max_rounds))):
            messages += _tool_round(draw, ids, max_tools)
        last = turn == turns - 1
        finish = end == "assistant" if end else draw(_bool)
        if not last or finish:
            messages.append(_final_answer(draw))
    return Conversation.model_validate({**_prefix(draw), "messages": tuple(messages)})


# --------------------------------------------------------------------------------------------------
# anything at all

_IDS = st.sampled_from(["toolu_a", "toolu_b", "toolu_c", ""])
_any_text = st.sampled_from(["", " ", "\n", "ok", "ok ", " ok", "ok\n"]) | _words


@st.composite
def _any_result(draw: st.DrawFn) -> ToolResultBlock:
    content = draw(
        st.sampled_from([None, "", "  ", "out", (), (TextBlock(text=""),), (TextBlock(text="x"),)])
    )
    error = draw(st.sampled_from([None, False, True]))
    if error is None:
        return ToolResultBlock(tool_use_id=draw(_IDS), content=content)
    return ToolResultBlock(tool_use_id=draw(_IDS), content=content, is_error=error)


_any_block: st.SearchStrategy[Block] = st.one_of(
    _any_text.map(lambda t: TextBlock(text=t)),
    st.builds(ToolUseBlock, id=_IDS, name=st.just("run"), input=st.just({})),
    _any_result(),
    st.builds(ThinkingBlock, thinking=_any_text, signature=st.sampled_from([None, "", "sig"])),
    st.just(RedactedThinkingBlock(data="EmwK")),
    st.just(IMAGE),
    st.just(OpaqueBlock(type="future_block")),
    st.builds(ServerToolUseBlock, id=_IDS, name=st.just("web_search")),
    st.just(CompactionBlock(content="summary")),
)

_any_message = st.builds(
    Message,
    role=st.sampled_from(["user", "assistant"]),
    content=_any_text | st.lists(_any_block, max_size=4).map(tuple),
)


@st.composite
def _broken(draw: st.DrawFn) -> Conversation:
    """A valid conversation after a few random edits (drop, duplicate, swap, retype, move)."""
    conv = draw(valid_conversations(max_turns=3, max_rounds=2))
    messages = list(conv.messages)
    for _ in range(draw(st.integers(1, 3))):
        if not messages:
            break
        i = draw(st.integers(0, len(messages) - 1))
        edit = draw(st.sampled_from(["drop", "dup", "swap", "role", "drop_block", "add_block"]))
        messages = _edit(messages, i, edit, draw(_any_block), draw(st.integers(0, 7)))
    return conv.with_messages(messages)


def _edit(messages: list[Message], i: int, edit: str, block: Block, k: int) -> list[Message]:
    out = list(messages)
    m = out[i]
    if edit == "drop":
        del out[i]
    elif edit == "dup":
        out.insert(i, m)
    elif edit == "swap" and i + 1 < len(out):
        out[i], out[i + 1] = out[i + 1], m
    elif edit == "role":
        out[i] = m.model_copy(update={"role": "user" if m.role == "assistant" else "assistant"})
    elif edit == "drop_block" and m.blocks:
        blocks = list(m.blocks)
        del blocks[k % len(blocks)]
        out[i] = m.model_copy(update={"content": tuple(blocks)})
    elif edit == "add_block":
        blocks = list(m.blocks)
        blocks.insert(k % (len(blocks) + 1), block)
        out[i] = m.model_copy(update={"content": tuple(blocks)})
    return out


def any_conversations(max_messages: int = 8) -> st.SearchStrategy[Conversation]:
    """Conversations of any shape, valid or not (random messages, or valid ones broken)."""
    random = st.lists(_any_message, max_size=max_messages).map(
        lambda ms: Conversation(messages=tuple(ms))
    )
    return st.one_of(random, _broken())


__all__ = ["IMAGE", "any_conversations", "valid_conversations"]
