"""Claude Code transcripts, step 3: output token counts the file does not hold.

Claude Code writes each assistant line with the response's ``usage`` as it stood when the line was
written, which on most calls of 2.x clients (and on some of 1.0.x) is the count at stream start:
``output_tokens`` of 1 to 10 (sometimes a constant near 25) for a response whose content runs to
hundreds of tokens. Input and cache fields are final at stream start (the API sends them in
``message_start``); the output count is not.

Contract of :func:`count_placeholder_outputs`:

- The response content of a call is counted by the session's counter
  (:func:`contextkit.tokens.counter_for` of the call's model, the counter pricing uses): the text
  of each block as the model writes it (text, thinking, tool name and input JSON), without the
  per-block framing the counter adds for a block sent back as input.
- The recorded output is a placeholder when the content counts at least :data:`RATIO` times the
  recorded figure and at least :data:`MIN_GAP` tokens more. ``output_tokens`` counts every token
  generated (text, tool input, thinking), so content that counts well above it cannot have been
  generated within it. On recorded final counts the counted content is 0.9 to 1.1 times the
  recorded output for text (less for tool calls and thinking, whose framing and hidden thinking
  are not in the content); the margins leave room for the counter's error on short texts.
- Such a call gets ``usage.output_tokens`` = the counted content and ``output_estimated=True``;
  every other usage field stays as recorded. The count is a lower bound: tool-call framing and
  thinking the API bills in full but returns as a summary are not in the content.
- The returned note says how many calls were corrected (None when none was); a session whose
  outputs are real is returned unchanged, the same objects.
"""

from __future__ import annotations

from collections.abc import Sequence

from contextkit.messages import Message
from contextkit.session import Call
from contextkit.tokens import TokenCounter, block_text, counter_for

RATIO = 2
"""The counted content must be at least this many times the recorded output."""
MIN_GAP = 5
"""... and exceed it by at least this many tokens (a reply of a few words is left alone)."""


def count_output(message: Message, counter: TokenCounter) -> int:
    """Tokens of ``message``'s content as generated output: each block's text, counted."""
    return sum(counter.count_text(text) for b in message.blocks if (text := block_text(b)))


def is_placeholder(recorded: int, counted: int) -> bool:
    """True when ``recorded`` output tokens cannot have produced content counting ``counted``."""
    return counted >= max(RATIO * recorded, recorded + MIN_GAP)


def count_placeholder_outputs(calls: Sequence[Call]) -> tuple[tuple[Call, ...], str | None]:
    """``calls`` with placeholder output counts replaced by the counted content, and a note."""
    counters: dict[str | None, TokenCounter] = {}
    out: list[Call] = []
    recorded = counted = 0
    for call in calls:
        usage = call.usage
        if usage is None or call.response is None:
            out.append(call)
            continue
        counter = counters.get(call.model)
        if counter is None:
            counter = counters[call.model] = counter_for(call.model_info)
        tokens = count_output(call.response, counter)
        if not is_placeholder(usage.output_tokens, tokens):
            out.append(call)
            continue
        recorded += usage.output_tokens
        counted += tokens
        fixed = usage.model_copy(update={"output_tokens": tokens})
        out.append(call.model_copy(update={"usage": fixed, "output_estimated": True}))
    corrected = sum(a is not b for a, b in zip(out, calls, strict=True))
    if not corrected:
        return tuple(calls), None
    names = ", ".join(sorted({c.name for c in counters.values()}))
    note = (
        f"output_tokens counted from the response content for {corrected} of {len(out)} calls "
        f"({recorded:,} recorded, {counted:,} counted with {names}; output_estimated=True): the "
        "file holds their usage as it stood at stream start (content counting at least "
        f"{RATIO}x the recorded output cannot have been generated within it); input and cache "
        "figures are as recorded"
    )
    return tuple(out), note


__all__ = ["MIN_GAP", "RATIO", "count_output", "count_placeholder_outputs", "is_placeholder"]
