"""Provider prompt-cache simulator: which input tokens of each call are read, written or uncached.

Contract: :func:`simulate_cache` (or :class:`CacheSimulator` one call at a time) takes requests in
the order they were sent, each with its start time, and returns one frozen :class:`CachedCall` per
request: the input split into Anthropic's token classes (:class:`~contextkit.session.Usage`, output
left at 0), the context size, the tokens never sent before, and every rule the request breaks.

Anthropic (:class:`AnthropicCache`, REFERENCE.md "Anthropic prompt caching"):

- The prefix is the blocks in order tools -> system -> messages (one position per tool, system
  block and message content block; a string message is one position). A cache entry is keyed by
  the exact prefix up to a block: a hash chain of block contents (``cache_control`` left out, so
  moving a breakpoint does not change a key), seeded by the model; the messages level also mixes in
  ``tool_choice``, ``thinking`` and whether the request holds images, so those invalidate the
  messages cache only, a system change invalidates system and messages, a tool change everything.
- Breakpoints: ``cache_control`` on tools, system blocks and message blocks, plus automatic caching
  (top-level ``cache_control``: the last cacheable block). More than 4, a 1h breakpoint after a 5m
  one, or ``cache_control`` on a thinking block are errors the provider raises: they are reported in
  ``CachedCall.errors`` and the request is still priced as sent. A breakpoint whose prefix is below
  the model's minimum cacheable length caches nothing.
- A read walks back from each breakpoint at most 20 positions (the breakpoint itself first) for an
  entry written by a request that started earlier and is still alive; the furthest hit wins and is
  refreshed (TTL counted again from this request's start). Entries named by this request's own
  breakpoints inside the read prefix are refreshed too (an assumption: they are read through).
  Each breakpoint beyond the read writes an entry; the tokens between the read and the last such
  breakpoint are billed as writes at the TTL of the breakpoint closing each stretch.
- Requests without breakpoints get them from a :data:`Placement` policy; ``"claude-code"`` mimics
  Claude Code, whose transcripts do not record them. Traffic captured from Claude Code (2025,
  claude-trace) marks every system block and the last block of the last two messages: the
  previous call's last message stays a breakpoint, so each call reads what the one before wrote
  and writes only the new turn. Claude Code on subscriptions writes with the 1h TTL (recorded
  usage shows only 1h writes); API-key users get 5m.
- Thinking of earlier turns: models that strip it
  (:meth:`~contextkit.models.ModelInfo.keeps_prior_thinking`) drop the thinking blocks of
  assistant messages before the last user message that holds no tool_result.
  Those blocks are still in the request as sent (a ``cache_control`` on one is still an error) but
  are neither billed nor part of the cached prefix: the first user turn after thinking rewrites the
  prefix from the first stripped block on, as the provider's cache does ("when thinking blocks are
  cleared, the cache is invalidated at the point where clearing occurs").
- Hidden prefix: files that omit system prompt and tools pass :class:`PrefixPart` s of known size
  that stand before every request; a ``warm`` part was cached before the first call.

OpenAI (:class:`OpenAICache`): automatic prefix caching, no breakpoints, no write charge. The cached
share is the longest prefix (at block boundaries) shared with a request seen within the retention
window, counted from 1,024 tokens in 128-token steps. Gemini's implicit caching
(:class:`GeminiCache`) is simulated the same way with its own minimum and no steps.

Cost: a request's flattened prefix is derived from the previous request's by object identity
(messages reused by structural sharing are not looked at again) and block contents are hashed once
per block object, so a session costs O(unique blocks) hashing plus cheap per-call pointer checks.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from contextkit.cache._config import (
    TTL_1H_S,
    TTL_5M_S,
    UNTIMED_STEP_S,
    AnthropicCache,
    CacheConfig,
    GeminiCache,
    OpenAICache,
    PrefixPart,
)
from contextkit.cache._prefix import _THINKING, _class_of, _Flat, _Prefixes, _ttl_of
from contextkit.messages import (
    Conversation,
    Message,
)
from contextkit.session import Usage
from contextkit.tokens import TokenCounter


@dataclass(frozen=True, slots=True)
class CachedCall:
    """One request as the cache saw it (a plain frozen record: one is made per simulated call,
    from values worked out here, so there is nothing to validate).

    The input split into uncached, written (5m, 1h) and read tokens, as in
    :class:`~contextkit.session.Usage` (:attr:`usage`; output is not the cache's to know: 0)."""

    input_tokens: int
    cache_write_5m: int
    cache_write_1h: int
    cache_read: int
    context_tokens: int
    new_tokens: int
    """Tokens of blocks whose content no earlier request carried."""
    breakpoints: int
    read_blocks: int = 0
    """Prefix positions read from the cache."""
    errors: tuple[str, ...] = ()

    @property
    def output_tokens(self) -> int:
        return 0

    @property
    def usage(self) -> Usage:
        return Usage(
            input_tokens=self.input_tokens,
            cache_write_5m=self.cache_write_5m,
            cache_write_1h=self.cache_write_1h,
            cache_read=self.cache_read,
        )


class CacheSimulator(_Prefixes):
    """The cache of one account and model family, fed one request at a time."""

    def __init__(
        self,
        config: CacheConfig,
        counter: TokenCounter,
        prefix: Sequence[PrefixPart] = (),
        warm_tokens: int = 0,
    ) -> None:
        super().__init__(config, counter, prefix)
        self.warm_tokens = warm_tokens
        self._n_prefix_marks = sum(part.ttl_s is not None for part in self.prefix)
        self._previous_end: Message | None = None
        """The last message of the previous request (``engine`` placement marks it again)."""
        self._entries: dict[int, list[float]] = {}  # key -> [written_at, expires_at, ttl_s]
        self._last_t: float | None = None
        self._calls = 0

    def resize_prefix(self, prefix: Sequence[PrefixPart]) -> None:
        """From the next request on, ``prefix`` (as many parts as before, sizes changed) stands
        before every request: a harness that built its hidden system prompt anew (a new
        process). Nothing cached from the first part that changed on matches any more."""
        parts = tuple(prefix)
        if len(parts) != len(self.prefix):
            raise ValueError(f"{len(parts)} prefix parts for {len(self.prefix)}")
        self.prefix = parts
        self._n_prefix_marks = sum(part.ttl_s is not None for part in parts)
        self._flat = _Flat()  # the head's keys change: flatten again

    # --- simulation -----------------------------------------------------------------------

    def step(
        self,
        request: Conversation,
        when: datetime | float | None = None,
        reset: Literal["messages", "system"] | None = None,
    ) -> CachedCall:
        """Send one request at ``when`` (datetime, epoch seconds, or None: right after the last).

        ``reset``: the harness changed content before this request that the request does not show
        (``Call.cache_reset``): nothing cached at that level or after it matches any more."""
        self._previous_end = self._flat.messages[-1] if self._flat.messages else None
        if reset is not None:
            self._resets[reset] += 1
            if reset == "system":
                self._flat = _Flat()  # the keys from the system level on change: flatten again
        t = self._clock(when)
        self._new = 0
        self._calls += 1
        flat = self._flatten(request, request.model)
        if self.config.kind != "anthropic":
            return self._automatic(flat, t, self.config)
        if self._calls == 1:
            self._warm(flat, t)
        return self._anthropic(flat, t, request, self.config)

    def _clock(self, when: datetime | float | None) -> float:
        if isinstance(when, datetime):
            t = when.timestamp()
        elif when is None:
            t = (self._last_t if self._last_t is not None else 0.0) + UNTIMED_STEP_S
        else:
            t = float(when)
        self._last_t = t
        return t

    def _warm(self, flat: _Flat, t: float) -> None:
        """Entries alive at the first call: warm prefix parts, and the longest prefix of at most
        ``warm_tokens`` (cached by requests before the session, such as a parent's history)."""
        warm = [i for i, part in enumerate(self.prefix) if part.warm and part.ttl_s is not None]
        if self.warm_tokens > 0:
            fits = [p for p in range(len(flat.acc)) if flat.acc[p] <= self.warm_tokens]
            warm += fits[-1:]
        ttl = float(getattr(self.config, "ttl_s", TTL_5M_S))
        for pos in warm:
            self._entries[flat.keys[pos]] = [-math.inf, t + 1e-6, ttl]

    def _breakpoints(
        self, flat: _Flat, request: Conversation, cfg: AnthropicCache
    ) -> tuple[list[tuple[int, int]], list[str]]:
        if cfg.placement == "off" or not flat.keys:
            return [], []
        marks = dict(flat.marks) if flat.marks else {}
        extra = request.__pydantic_extra__
        auto = _ttl_of(extra.get("cache_control")) if extra else None
        explicit = len(marks) + len(flat.bad_marks) - self._n_prefix_marks
        if cfg.placement == "engine":
            room = cfg.max_breakpoints - explicit - (auto is not None)
            marks.update(self._engine_marks(flat, room, cfg.ttl_s))
        if auto is not None:
            marks[_last_cacheable(flat, len(flat.keys) - 1)] = auto
        elif explicit == 0 and cfg.placement not in ("as-sent", "engine"):
            marks.update(_placed(flat, cfg))
        if len(marks) == 1 <= cfg.max_breakpoints and not flat.bad_marks:  # nothing to check
            return list(marks.items()), []
        return sorted(marks.items()), _mark_errors(marks, flat, cfg)

    def _engine_marks(self, flat: _Flat, room: int, ttl: int) -> dict[int, int]:
        """``engine.place_breakpoints`` on the flattened request: the same positions, no copies."""
        messages, previous = flat.messages, self._previous_end
        n = len(messages)
        ends = [_message_mark_position(flat, n - 1)] if n else []
        for i in range(n - 2, -1, -1):
            if messages[i] is previous:
                ends.append(_message_mark_position(flat, i))
                break
        n_tools = len(self.prefix) + len(flat.tools or ())
        if flat.n_head > n_tools:  # a system prompt is sent
            ends.append(flat.n_head - 1)
        if flat.tools:
            ends.append(n_tools - 1)
        placed: dict[int, int] = {}
        for pos in ends:
            if room > 0 and pos is not None and pos not in flat.marks and pos not in placed:
                placed[pos], room = ttl, room - 1
        return placed

    def _read(self, flat: _Flat, bps: list[tuple[int, int]], t: float, lookback: int) -> int:
        """The furthest position whose entry a breakpoint's lookback finds (-1: none)."""
        best = -1
        entries, keys = self._entries, flat.keys  # entries looked up inline: the hot loop
        # The furthest breakpoint first (``bps`` is in position order): its hit, usually the
        # previous call's end, bounds the walks of those before it, which then have none to do.
        for pos, _ in reversed(bps):
            if pos <= best:
                break
            for q in range(pos, max(pos - lookback, best, -1), -1):
                entry = entries.get(keys[q])
                if entry is not None and entry[0] < t < entry[1]:
                    best = q
                    break
        if best < 0:
            return best
        # Refresh the entry read and those of the breakpoints inside the read prefix (each
        # position once: a refresh is idempotent, so the order does not matter).
        for pos in [best, *[p for p, _ in bps if p < best]]:
            entry = entries.get(keys[pos])
            if entry is not None and entry[0] < t < entry[1]:
                entry[1] = max(entry[1], t + entry[2])
        return best

    def _anthropic(
        self, flat: _Flat, t: float, request: Conversation, cfg: AnthropicCache
    ) -> CachedCall:
        bps, errors = self._breakpoints(flat, request, cfg)
        # flat.cum inlined (base + acc[pos]; breakpoints are never before the first position):
        # a method call per use cost more than the arithmetic, on every call of a session.
        base, acc, keys, entries = flat.base, flat.acc, flat.keys, self._entries
        usable = [bp for bp in bps if base + acc[bp[0]] >= cfg.min_tokens]
        read = self._read(flat, usable, t, cfg.lookback_blocks)
        read_tokens = end_tokens = base + acc[read] if read >= 0 else 0
        write_5m = write_1h = 0
        for pos, ttl in usable:
            if pos <= read:
                continue
            tokens = base + acc[pos]
            if ttl == TTL_1H_S:
                write_1h += tokens - end_tokens
            else:  # 5m, and any other TTL (rejected by the provider) priced as 5m
                write_5m += tokens - end_tokens
            key = keys[pos]
            entry = entries.get(key)  # alive: extended; else written anew
            if entry is not None and entry[0] < t + 1e-9 < entry[1]:
                entry[1] = max(entry[1], t + ttl)
            else:
                entries[key] = [t, t + ttl, float(ttl)]
            end_tokens = tokens
        total = base + acc[-1] if acc else base
        return CachedCall(  # positional, in field order: the record of every call
            total - end_tokens,
            write_5m,
            write_1h,
            read_tokens,
            total,
            self._new + (base if self._calls == 1 else 0),
            len(bps),
            read + 1,  # read >= -1
            tuple(errors) if errors else (),
        )

    def _automatic(self, flat: _Flat, t: float, cfg: OpenAICache | GeminiCache) -> CachedCall:
        """Automatic prefix caching (OpenAI, Gemini): the longest prefix shared with a request
        still retained, from the minimum in the provider's steps; nothing is billed as written."""
        hit = -1
        for q in range(len(flat.keys) - 1, -1, -1):
            entry = self._entries.get(flat.keys[q])
            if entry is not None and entry[0] < t <= entry[1]:
                hit = q
                break
        matched = flat.cum(hit)
        cached = 0
        if matched >= cfg.min_tokens:
            cached = (
                cfg.min_tokens + (matched - cfg.min_tokens) // cfg.step_tokens * cfg.step_tokens
            )
        for key in flat.keys:  # every prefix of this request is retained (and refreshed)
            entry = self._entries.get(key)
            if entry is None or entry[1] < t:
                self._entries[key] = [t, t + cfg.retention_s, cfg.retention_s]
            else:
                entry[1] = t + cfg.retention_s
        return self._result(flat, (flat.total - cached, 0, 0, cached), 0, hit + 1, [])

    def _result(
        self,
        flat: _Flat,
        counts: tuple[int, int, int, int],
        breakpoints: int,
        read_blocks: int,
        errors: list[str],
    ) -> CachedCall:
        """``counts``: uncached input, 5m and 1h writes, reads."""
        return CachedCall(
            *counts,
            context_tokens=flat.total,
            new_tokens=self._new + (flat.base if self._calls == 1 else 0),
            breakpoints=breakpoints,
            read_blocks=max(read_blocks, 0),
            errors=tuple(errors),
        )


def _message_mark_position(flat: _Flat, m: int) -> int | None:
    """Position of message ``m``'s last block that may carry a breakpoint (not thinking); None
    when it holds none (only thinking, stripped or not)."""
    content = flat.messages[m].content
    if not isinstance(content, str):
        for block in reversed(content):  # the last block is nearly always the one
            if not _class_of(type(block))[0] & _THINKING:  # isinstance, once per class
                break
        else:
            return None
    pos = flat.msg_start[m + 1] - 1 if m + 1 < len(flat.messages) else len(flat.keys) - 1
    cacheable = flat.cacheable  # _last_cacheable inlined: twice per call with engine placement
    while pos > 0 and not cacheable[pos]:
        pos -= 1
    return pos


def _last_cacheable(flat: _Flat, pos: int) -> int:
    while pos > 0 and not flat.cacheable[pos]:
        pos -= 1
    return pos


def _placed(flat: _Flat, cfg: AnthropicCache) -> dict[int, int]:
    """Breakpoints of a placement policy for a request that marks none."""
    last = len(flat.keys) - 1
    if cfg.placement == "auto":
        return {_last_cacheable(flat, last): cfg.ttl_s}
    placed: dict[int, int] = {}
    if flat.n_head and flat.n_head - 1 not in flat.marks:
        placed[flat.n_head - 1] = cfg.ttl_s  # end of tools + system
    for m in range(max(len(flat.messages) - 2, 0), len(flat.messages)):
        end = flat.msg_start[m + 1] - 1 if m + 1 < len(flat.messages) else last
        if end >= flat.msg_start[m]:
            placed[_last_cacheable(flat, end)] = cfg.ttl_s
    room = cfg.max_breakpoints - len(flat.marks)
    keep = sorted(placed)[-room:] if room > 0 else []
    return {p: placed[p] for p in keep}


def _mark_errors(marks: dict[int, int], flat: _Flat, cfg: AnthropicCache) -> list[str]:
    count = len(marks) + len(flat.bad_marks)
    if count <= cfg.max_breakpoints and not flat.bad_marks and len(set(marks.values())) <= 1:
        return []  # the usual request: nothing to check further
    errors: list[str] = []
    if count > cfg.max_breakpoints:
        errors.append(
            f"{count} cache breakpoints; the provider accepts at most {cfg.max_breakpoints} "
            "and rejects the request (HTTP 400)"
        )
    if flat.bad_marks:
        errors.append("cache_control on a thinking block (the provider rejects it)")
    ttls = [ttl for _, ttl in sorted(marks.items())]
    if any(a < b for a, b in itertools.pairwise(ttls)):
        errors.append("a 1h cache breakpoint after a 5m one (1h entries must come first)")
    return errors


def simulate_cache(
    requests: Iterable[tuple[Conversation, datetime | float | None]],
    counter: TokenCounter,
    config: CacheConfig | None = None,
    prefix: Sequence[PrefixPart] = (),
) -> tuple[CachedCall, ...]:
    """Run the cache over requests in sending order (default config: Anthropic, as sent)."""
    sim = CacheSimulator(config or AnthropicCache(), counter, prefix)
    return tuple(sim.step(request, when) for request, when in requests)


__all__ = ["CacheSimulator", "CachedCall", "simulate_cache"]
