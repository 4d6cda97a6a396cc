"""The cache doctor: why each recorded cache write happened, and what it cost.

Contract: :func:`diagnose_cache` takes a session with recorded usage and returns a frozen
:class:`CacheDiagnosis` (None when no call has usage). Every call's recorded cache write, and every
shortfall of its reads against what the cache could have served, is attributed to a cause with
tokens and dollars:

- The cache could serve call ``i`` the prefix it shares with call ``i - 1``: all of the previous
  call's cached end (its reads + writes) when the request extends the previous one, else the part
  before the first message that differs (counted, with the hidden prefix a file omits inferred from
  call 0's recorded usage). What call ``i`` read short of that is its *shortfall*; the writes up to
  the shortfall are *rewrites*, the rest of its writes are ``new content`` (``first write`` at call
  0).
- A shortfall gets the first cause that holds: ``compaction``; ``model switch``; ``resume`` (a
  new process after ``/exit`` or a resume hook: ``Session.resumes``); ``harness reset``
  (the reader saw the harness change cached content the file does not show: ``Call.cache_reset``;
  or, for a file without its system prompt and tools, nothing was read, or the read stopped inside
  the prefix the file omits, which only a change there explains: pi writes the time into its
  system prompt, Claude Code rewrites the cached messages at some user turns; the detail says it
  is inferred, and which level); ``ttl expiry``
  (the gap since the previous call exceeds the TTL the writes used; the detail says whether a 1h
  TTL would have kept it); ``thinking stripped`` (a model that drops earlier turns' thinking, at
  a new user turn); ``prefix changed`` (the first differing message and what changed);
  ``routing`` (Bedrock or Vertex, where the read fell back to an older entry or to none: the
  detail names which); else ``unexplained``.
- Dollars: new content and first writes cost their write price; a rewrite costs what it cost
  beyond reading the same tokens (write price minus read price), at the call's model and date.
- Per session: hit rate (read / total input), write amplification (written / unique tokens, the
  tokens of content no earlier call sent), tokens and dollars by cause, and the share of written
  tokens with a named cause (``explained``).

The shortfall is measured in recorded tokens where it can be (the previous call's recorded reads
and writes); only where a request does not extend the previous one is the shared part counted, an
estimate that the detail marks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from contextkit.accounting._calibrate import session_counter
from contextkit.cache import TTL_1H_S, TTL_5M_S
from contextkit.messages import Conversation, Message, ThinkingBlock, Usage, same_prefix
from contextkit.pricing import PER_MILLION, lookup_price
from contextkit.session import Call, Session
from contextkit.tokens import TokenCounter

NEW = "new content"
FIRST = "first write"
CAUSES = (
    FIRST,
    NEW,
    "model switch",
    "resume",
    "harness reset",
    "ttl expiry",
    "compaction",
    "thinking stripped",
    "prefix changed",
    "routing",
    "unexplained",
)
"""Every cause, in the order the doctor tries them (the first two are not shortfalls)."""
NOTHING_READ = 1024
"""Fewer tokens read than the smallest cacheable prefix: nothing was read."""
HIDDEN_MARGIN = 0.1
HIDDEN_MARGIN_TOKENS = 2000
"""How near the inferred size of the hidden system prompt and tools a read must stop to be taken
as stopping there (the inference is a count, calibrated, not a record)."""


@dataclass(frozen=True)
class CacheEvent:
    """Tokens of one call's writes (or of its read shortfall) put down to one cause."""

    call: int
    cause: str
    tokens: int
    usd: float | None
    detail: str = ""
    inferred: bool = False
    """The cause was inferred from the recorded reads (a harness reset no file record shows)."""


@dataclass(frozen=True)
class CallCache:
    """One call as billed, beside what the cache could have served it."""

    call: int
    written: int
    read: int
    total_input: int
    servable: int
    """Tokens the cache could have served (the prefix shared with the previous call)."""
    shortfall: int
    events: tuple[CacheEvent, ...]


@dataclass(frozen=True)
class CacheDiagnosis:
    path: str
    session_id: str | None
    calls: tuple[CallCache, ...]
    unique_tokens: int
    hidden_tokens: int = 0
    """The system prompt and tools (and anything else) the file omits, inferred from usage."""

    @property
    def written(self) -> int:
        return sum(c.written for c in self.calls)

    @property
    def read(self) -> int:
        return sum(c.read for c in self.calls)

    @property
    def total_input(self) -> int:
        return sum(c.total_input for c in self.calls)

    @property
    def hit_rate(self) -> float | None:
        return self.read / self.total_input if self.total_input else None

    @property
    def write_amplification(self) -> float | None:
        return self.written / self.unique_tokens if self.unique_tokens else None

    def by_cause(self, inferred: bool | None = None) -> dict[str, tuple[int, float | None]]:
        """Written tokens and dollars per cause (causes that wrote nothing left out); only the
        events inferred from the reads (``inferred=True``) or only the others (``False``)."""
        out: dict[str, tuple[int, float | None]] = {}
        for event in (e for c in self.calls for e in c.events):
            if inferred is not None and event.inferred != inferred:
                continue
            tokens, usd = out.get(event.cause, (0, 0.0))
            cost = None if usd is None or event.usd is None else usd + event.usd
            out[event.cause] = (tokens + event.tokens, cost)
        return {k: out[k] for k in CAUSES if k in out}

    @property
    def inferred(self) -> float | None:
        """Share of written tokens whose cause was inferred from the reads (a harness reset no
        record shows), not seen in the file or its usage (None: nothing written)."""
        if not self.written:
            return None
        return sum(t for t, _ in self.by_cause(inferred=True).values()) / self.written

    @property
    def observed(self) -> float | None:
        """Share of written tokens whose cause the file or its usage shows (named and not
        inferred; None: nothing written)."""
        if self.explained is None or self.inferred is None:
            return None
        return self.explained - self.inferred

    @property
    def explained(self) -> float | None:
        """Share of written tokens with a named cause (None: nothing written)."""
        if not self.written:
            return None
        unexplained = self.by_cause().get("unexplained", (0, None))[0]
        return 1 - unexplained / self.written


def diagnose_cache(session: Session, counter: TokenCounter | None = None) -> CacheDiagnosis | None:
    """The doctor's findings for ``session`` (see the module docstring); None without usage."""
    calls = session.calls
    if not calls or any(c.usage is None for c in calls):
        return None
    counter = counter or session_counter(session)
    hidden = _hidden_tokens(session, counter)
    out: list[CallCache] = []
    unique = 0
    for i, call in enumerate(calls):
        prev = calls[i - 1] if i else None
        shared = _shared(prev, call, counter, hidden)
        diag = _diagnose(session, i, call, prev, shared, hidden)
        out.append(diag)
        unique += max(diag.total_input - shared.cached, 0)
    return CacheDiagnosis(session.path, session.session_id, tuple(out), unique, hidden)


def _usage(call: Call) -> Usage:
    assert call.usage is not None  # diagnose_cache checked every call
    return call.usage


def _hidden_tokens(session: Session, counter: TokenCounter) -> int:
    """The system prompt and tools a file omits, inferred from the recorded total of the first
    call that billed any input (an aborted call bills none)."""
    if session.prefix_known:
        return 0
    first = next((c for c in session.calls if _usage(c).total_input > 0), None)
    if first is None:
        return 0
    return max(_usage(first).total_input - counter.count_conversation(first.request), 0)


def _shared_messages(before: Sequence[Message], now: Sequence[Message]) -> int:
    """How many leading messages are the same or equal. The usual call (the history grew) is
    decided in O(1) for histories of one list, else by one comparison in C: a loop here over
    every shared message made diagnosing a session quadratic in its calls (80% of a 4,000-call
    replay's time)."""
    n = min(len(before), len(now))
    if n and same_prefix(before, now, n):
        return n
    for k in range(n):
        if before[k] is not now[k] and before[k] != now[k]:
            return k
    return n


@dataclass(frozen=True)
class _Shared:
    """What call ``i`` shares with the call before it, in tokens."""

    cached: int
    """The previous call's cached end (its reads and writes, as recorded)."""
    servable: int
    """The part of it the cache could serve this call (a prefix change or stripped thinking
    ends it early)."""
    change: tuple[str, str] | None = None
    """(cause, detail) of what ended it early."""
    estimated: bool = False
    """``servable`` was counted (the shared part ends inside the recorded prefix)."""


def _shared(prev: Call | None, call: Call, counter: TokenCounter, hidden: int) -> _Shared:
    if prev is None:
        return _Shared(0, 0)
    before = _usage(prev)
    cached = min(before.cache_read + before.cache_write, _usage(call).total_input)
    now = call.model_info
    change = _prefix_change(prev.request, call.request, now.keeps_prior_thinking(call.timestamp))
    if change is None:
        return _Shared(cached, cached)
    cause, detail, keep = change
    head = call.request.with_messages(call.request.messages[:keep])
    counted = hidden + counter.count_conversation(head) if keep or hidden else 0
    return _Shared(cached, min(counted, cached), (cause, detail), True)


def _diagnose(
    session: Session, i: int, call: Call, prev: Call | None, shared: _Shared, hidden: int
) -> CallCache:
    usage = _usage(call)
    rates = _rates(call)
    written, read = usage.cache_write, usage.cache_read
    write_rate = None if rates is None else _rate_of(rates, usage)
    extra = None if rates is None or write_rate is None else write_rate - rates["read"]
    events: list[CacheEvent] = []
    left = written

    def put(
        cause: str, tokens: int, rate: float | None, detail: str = "", guess: bool = False
    ) -> None:
        nonlocal left
        tokens = min(tokens, left)
        if tokens > 0:
            events.append(CacheEvent(i, cause, tokens, _usd(tokens, rate), detail, guess))
            left -= tokens

    whole = _whole_cache_event(session, i, call, prev)
    if whole is not None:  # nothing of the previous entry could be read
        put(whole[0], shared.cached - read, extra, whole[1])
        shortfall = max(shared.cached - read, 0)
    else:
        if shared.change is not None:
            cause, detail = shared.change
            detail += " (the shared part counted, not recorded)" if shared.estimated else ""
            put(cause, shared.cached - max(shared.servable, read), extra, detail)
        shortfall = max(shared.servable - read, 0)
        if shortfall and prev is not None:
            cause, detail, guess = _miss(session, i, call, hidden)
            put(cause, shortfall, extra, detail, guess)
    put(FIRST if i == 0 else NEW, left, write_rate)
    return CallCache(i, written, read, usage.total_input, shared.servable, shortfall, tuple(events))


def _miss(session: Session, i: int, call: Call, hidden: int) -> tuple[str, str, bool]:
    """Why a call read less than the cache could serve it, when nothing the file shows
    invalidated it: the route, or a change of the levels the file omits, inferred from where
    the read stopped against the hidden system prompt and tools."""
    if call.model_info.route is not None:
        return "routing", _fallback(session, i, call), False
    read = _usage(call).cache_read
    if hidden and read < NOTHING_READ:
        detail = (
            "inferred from the reads: nothing was read though the file shows the prefix "
            "unchanged: the harness changed its system prompt or tools (system level)"
        )
        return "harness reset", detail, True
    if hidden and read <= hidden + max(HIDDEN_MARGIN * hidden, HIDDEN_MARGIN_TOKENS):
        detail = (
            f"inferred from the reads: the read stopped at {read} tokens, inside the "
            f"{hidden}-token prefix the file omits: the harness changed the cached messages "
            "(messages level)"
        )
        return "harness reset", detail, True
    return "unexplained", "", False


def _usd(tokens: int, rate: float | None) -> float | None:
    return None if rate is None else tokens * rate / PER_MILLION


def _rates(call: Call) -> Mapping[str, float] | None:
    price = lookup_price(call.model_info, call.timestamp)
    if price is None:
        return None
    rates = price.rates_for(_usage(call).total_input)
    return {"5m": rates.cache_write_5m, "1h": rates.cache_write_1h, "read": rates.cache_read}


def _rate_of(rates: Mapping[str, float], usage: Usage) -> float:
    """The write rate of a call's writes (5m and 1h weighted by what it wrote)."""
    written = usage.cache_write
    if not written:
        return rates["5m"]
    return (usage.cache_write_5m * rates["5m"] + usage.cache_write_1h * rates["1h"]) / written


def _whole_cache_event(
    session: Session, i: int, call: Call, prev: Call | None
) -> tuple[str, str] | None:
    """An event that leaves nothing of the previous entry readable: (cause, detail), or None."""
    if prev is None:
        return None
    if i in session.compactions:
        return "compaction", "the harness compacted its history before this call"
    before, now = prev.model_info, call.model_info
    if before.name != now.name:
        return "model switch", f"{before.id or 'no model'} -> {now.id or 'no model'}"
    if i in session.resumes:
        return "resume", "the session was resumed: a new process built its system prompt anew"
    if call.cache_reset is not None:
        return "harness reset", f"the harness changed the {call.cache_reset} level"
    expired = _expired(prev, call, _ttl(session.calls, i))
    return ("ttl expiry", expired) if expired else None


def _ttl(calls: Sequence[Call], i: int) -> int:
    """The TTL of what call ``i`` could read: that of the latest call before it that wrote (a
    call that only read refreshed the entries at the TTL they were written with)."""
    for j in range(i - 1, -1, -1):
        usage = _usage(calls[j])
        if usage.cache_write:
            return TTL_1H_S if usage.cache_write_1h > usage.cache_write_5m else TTL_5M_S
    return TTL_5M_S


def _expired(prev: Call, call: Call, ttl: int) -> str:
    """Why the previous entry had expired ('' when it had not, or no times are known)."""
    if prev.timestamp is None or call.timestamp is None:
        return ""
    gap = (call.timestamp - prev.timestamp).total_seconds()
    if gap <= ttl:
        return ""
    kept = " (a 1h TTL would have kept it)" if ttl < TTL_1H_S and gap <= TTL_1H_S else ""
    return f"{_duration(gap)} since the previous call > the {_duration(ttl)} TTL{kept}"


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _prefix_change(
    before: Conversation, now: Conversation, keeps: bool
) -> tuple[str, str, int] | None:
    """(cause, detail, messages still shared) when the cached prefix ends early, else None."""
    if before.tools != now.tools:
        return "prefix changed", "the tool definitions changed", 0
    if before.system != now.system:
        return "prefix changed", "the system prompt changed", 0
    k = _shared_messages(before.messages, now.messages)
    if k == len(before.messages):
        if not keeps and opens_turn(now):
            # Thinking before the previous request's own turn opened was stripped from it too:
            # what this turn strips starts at the first thinking after that.
            first = _first_thinking(before.messages, _turn_start(before.messages))
            if first is not None:
                return (
                    "thinking stripped",
                    "earlier turns' thinking dropped at a new user turn",
                    first,
                )
        return None
    if k >= len(now.messages):
        return "prefix changed", f"messages from {k} on were removed", k
    if _without_thinking(before.messages[k]) == _without_thinking(now.messages[k]):
        return "thinking stripped", f"thinking of message {k} was dropped", k
    return "prefix changed", f"message {k} ({before.messages[k].role}) differs", k


def opens_turn(request: Conversation) -> bool:
    """The request ends on a new user turn: its trailing user messages (which the provider
    merges into one turn) hold no tool result."""
    trailing = 0
    for message in reversed(request.messages):
        if message.role != "user":
            break
        trailing += 1
        if not isinstance(message.content, str) and any(message.tool_results()):
            return False
    return trailing > 0


def _turn_start(messages: Sequence[Message]) -> int:
    """Index of the last user message holding no tool result (0: none does)."""
    for k in range(len(messages) - 1, -1, -1):
        message = messages[k]
        if message.role == "user" and not any(message.tool_results()):
            return k
    return 0


def _first_thinking(messages: Sequence[Message], start: int = 0) -> int | None:
    """Index of the first message from ``start`` on holding a thinking block (None: none)."""
    for k in range(start, len(messages)):
        message = messages[k]
        if not isinstance(message.content, str) and any(
            isinstance(b, ThinkingBlock) for b in message.content
        ):
            return k
    return None


def _without_thinking(message: Message) -> object:
    if isinstance(message.content, str):
        return message
    return (message.role, tuple(b for b in message.content if not isinstance(b, ThinkingBlock)))


def _fallback(session: Session, i: int, call: Call) -> str:
    """Which earlier entry a routed call's read matched (an older call's cached end, or none)."""
    route = call.model_info.route
    read = _usage(call).cache_read
    if read == 0:
        return f"{route}: nothing was read"
    for j in range(i - 2, -1, -1):
        earlier = _usage(session.calls[j])
        if earlier.cache_read + earlier.cache_write == read:
            return f"{route}: the read fell back to call {j}'s entry"
    return f"{route}: the read fell back to an older prefix of {read} tokens"


def diagnosis_json(diagnosis: CacheDiagnosis, events: bool = True) -> dict[str, object]:
    """The doctor's findings as JSON (``events``: every attributed write, else totals only)."""
    doc: dict[str, object] = {
        "path": diagnosis.path,
        "session_id": diagnosis.session_id,
        "calls": len(diagnosis.calls),
        "total_input": diagnosis.total_input,
        "written": diagnosis.written,
        "read": diagnosis.read,
        "unique_tokens": diagnosis.unique_tokens,
        "hit_rate": diagnosis.hit_rate,
        "write_amplification": diagnosis.write_amplification,
        "explained": diagnosis.explained,
        "observed": diagnosis.observed,
        "inferred": diagnosis.inferred,
        "by_cause": {k: {"tokens": t, "usd": u} for k, (t, u) in diagnosis.by_cause().items()},
        "inferred_by_cause": {
            k: {"tokens": t, "usd": u} for k, (t, u) in diagnosis.by_cause(inferred=True).items()
        },
    }
    if events:
        doc["events"] = [
            {
                "call": e.call,
                "cause": e.cause,
                "tokens": e.tokens,
                "usd": e.usd,
                "detail": e.detail,
                "inferred": e.inferred,
            }
            for c in diagnosis.calls
            for e in c.events
        ]
    return doc


__all__ = [
    "CAUSES",
    "CacheDiagnosis",
    "CacheEvent",
    "CallCache",
    "diagnose_cache",
    "diagnosis_json",
]
