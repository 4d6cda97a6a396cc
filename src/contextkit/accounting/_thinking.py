"""Thinking a file records without its text, sized from the billed output and put back.

Claude Code 2.1.2xx on the 5-series models records each thinking block with its signature and an
empty ``thinking`` (the API's omitted display: the model thought, the response carried no text of
it). The provider still bills that thinking: as output on the call that produced it, and as input
on every later call whose request carries the block back (within a tool-use loop always; across
user turns where the model keeps earlier turns' thinking). Counted from the file such a block is
0 tokens, and every later call is short by the thinking it carries: on a corpus session, one
response's 1,555 output tokens (a short tool call and about 1,400 of thinking) reappear as a
1,540-token jump of the next call's billed input that the file does not explain.

- :func:`omitted_thinking` sizes each such block from its call's recorded usage: the billed output
  less the response's visible blocks as counted (text, tool calls), shared among the response's
  thinking blocks by signature length (the signature carries the thinking, encrypted). A call
  without usage, or whose output count the reader estimated from content
  (``Call.output_estimated``), sizes nothing: its figure holds no thinking. A block is known by
  its signature, so a signature the file holds more than once (redacted: spotter's files write
  ``[REDACTED_SIGNATURE]`` for every one) sizes nothing either.
- :func:`with_thinking` puts the sized thinking into any list of requests (the recording's, or a
  strategy's views): each such block, wherever a request carries it, becomes a thinking block of
  that many tokens with the same signature. The cache simulator then bills it, and strips it where
  the model drops earlier turns' thinking, as it does any thinking block. Messages are rebuilt once
  each, so requests that shared a message still share it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from contextkit.accounting._gaps import filler
from contextkit.messages import Block, Conversation, Message, ThinkingBlock
from contextkit.session import Session
from contextkit.tokens import TokenCounter

_FILLER_WORD = "ponder "


MIN_SHORT_TOKENS = 64
MIN_SHORT_SHARE = 0.1
"""The file's thinking must count short of what was billed for it by this many tokens and this
share of its count before the bill sizes it (rounding and the counter's error stay below)."""


def _signed(block: Block) -> bool:
    return isinstance(block, ThinkingBlock) and bool(block.signature)


def omitted_thinking(session: Session, counter: TokenCounter) -> dict[str, int]:
    """Signature -> billed tokens of each thinking block whose text in the file counts short of
    what its call billed for it (see the module docstring); empty when the file has none or no
    usage sizes them."""
    sizes: dict[str, int] = {}
    seen = Counter(
        b.signature
        for c in session.calls
        if c.response is not None and not isinstance(c.response.content, str)
        for b in c.response.content
        if isinstance(b, ThinkingBlock) and b.signature
    )
    for call in session.calls:
        response, usage = call.response, call.usage
        if response is None or usage is None or call.output_estimated:
            continue
        if isinstance(response.content, str):
            continue
        thinking = [b for b in response.content if isinstance(b, ThinkingBlock) and _signed(b)]
        if not thinking:
            continue
        visible = sum(counter.count_block(b) for b in response.content if not _signed(b))
        billed = max(usage.output_tokens - visible, 0)
        shown = sum(counter.count_block(b) for b in thinking)
        if billed - shown < max(MIN_SHORT_TOKENS, MIN_SHORT_SHARE * shown):
            continue  # the file holds the thinking as billed
        weights = [len(b.signature or "") for b in thinking]
        total = sum(weights)
        for block, weight in zip(thinking, weights, strict=True):
            share = round(billed * weight / total) if total else billed // len(thinking)
            if share > 0 and block.signature and seen[block.signature] == 1:
                sizes[block.signature] = share
    return sizes


def thinking_text(tokens: int, counter: TokenCounter) -> str:
    """Thinking text that ``counter`` counts as about ``tokens`` tokens (thinking may be scaled
    apart from other text)."""
    return filler(
        tokens,
        counter,
        word=_FILLER_WORD,
        count=lambda text: counter.count_block(ThinkingBlock(thinking=text)),
    )


def with_thinking(
    requests: Sequence[Conversation], sizes: Mapping[str, int], counter: TokenCounter
) -> list[Conversation]:
    """``requests`` with every block of ``sizes`` (by signature) given its thinking."""
    texts: dict[str, str] = {}

    def text_for(signature: str) -> str:
        text = texts.get(signature)
        if text is None:
            text = texts[signature] = thinking_text(sizes[signature], counter)
        return text

    return _replaced(requests, sizes, text_for)


def without_thinking(
    requests: Sequence[Conversation], sizes: Mapping[str, int]
) -> list[Conversation]:
    """``requests`` with the text of every block of ``sizes`` left out (what the bill sizes)."""
    return _replaced(requests, sizes, lambda _: "")


def _replaced(
    requests: Sequence[Conversation], sizes: Mapping[str, int], text_for: Callable[[str], str]
) -> list[Conversation]:
    if not sizes:
        return list(requests)
    rebuilt: dict[int, Message] = {}  # id of a message -> the message with its thinking

    def fill(message: Message) -> Message:
        done = rebuilt.get(id(message))
        if done is not None:
            return done
        content = message.content
        if isinstance(content, str) or not any(
            isinstance(b, ThinkingBlock) and b.signature in sizes for b in content
        ):
            rebuilt[id(message)] = message
            return message
        blocks: list[Block] = []
        for block in content:
            if isinstance(block, ThinkingBlock) and block.signature in sizes:
                assert block.signature is not None  # a key of sizes
                blocks.append(block.model_copy(update={"thinking": text_for(block.signature)}))
            else:
                blocks.append(block)
        rebuilt[id(message)] = out = message.model_copy(update={"content": tuple(blocks)})
        return out

    out: list[Conversation] = []
    for request in requests:
        messages = [fill(m) for m in request.messages]
        same = all(a is b for a, b in zip(messages, request.messages, strict=True))
        out.append(request if same else request.with_messages(messages))
    return out


def describe_thinking(sizes: Mapping[str, int]) -> str:
    return (
        f"thinking the file holds without its text or summarised: {len(sizes)} block(s), "
        f"{sum(sizes.values()):,} tokens as billed, sized from their calls' output less the "
        "visible content and carried by every later request that holds them"
    )


__all__ = [
    "describe_thinking",
    "omitted_thinking",
    "thinking_text",
    "with_thinking",
    "without_thinking",
]
