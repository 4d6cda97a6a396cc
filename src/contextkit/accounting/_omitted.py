"""What a file omits of what the harness sent, measured once on the recording: the one value that
pricing consumes (:class:`Omitted`).

A recorded file is not the requests as sent. The accountant puts back, from the recorded usage:

- the hidden prefix: the system prompt and tools a file does not hold, measured from call 1's
  billed input, or taken from the capture of the client's version where there is no usage
  (:mod:`._hidden`);
- the content after a compaction that the file does not hold (restored files, todos), measured at
  the first call after it (:mod:`._gaps`);
- content the harness added or cleared mid-session without a trace in the file, seen as a step in
  the residual of the calls (:mod:`._content_gaps`);
- the hidden prefix built anew on a resume, measured from that call's usage (:mod:`._gaps`);
- thinking the file holds without its text, sized from the billed output (:mod:`._thinking`).

Contract: :func:`measure_omitted` measures all of it on the recorded requests (never on a
strategy's views: what the harness sent does not depend on what a replay would send);
:meth:`Omitted.fill` puts it into any list of requests aligned with the calls (the recording's,
or a replay's views), and :attr:`Omitted.recorded` holds the recording's own requests filled.
:func:`omitted_content` is the same measure for a hidden prefix the caller sized itself (the
cost estimate's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from contextkit.accounting._content_gaps import (
    ContentGap,
    content_gaps,
    describe_content_gaps,
    with_content_gaps,
)
from contextkit.accounting._gaps import (
    CompactionGap,
    compaction_gaps,
    filled_summaries,
    resized_prefix,
    resumed_prefix,
    with_gaps,
)
from contextkit.accounting._hidden import hidden_prefix
from contextkit.accounting._thinking import describe_thinking, omitted_thinking, with_thinking
from contextkit.cache import CacheConfig, PrefixPart
from contextkit.messages import Conversation, Message
from contextkit.session import Session, Usage
from contextkit.tokens import TokenCounter


@dataclass(frozen=True)
class OmittedContent:
    """What the messages of a file omit (everything but the hidden prefix), measured on the
    recording for a hidden prefix of ``hidden_tokens``."""

    gaps: tuple[CompactionGap, ...] = ()
    """Content after each compaction that the file does not hold."""
    filled: tuple[Message, ...] = ()
    """The compaction summaries with their gaps filled, counted once for every list filled."""
    steps: tuple[ContentGap, ...] = ()
    """Content added or cleared mid-session."""
    resumes: Mapping[int, int] = field(default_factory=dict)
    """Call index -> the hidden prefix's change in size from that call on (a resume)."""
    thinking: Mapping[str, int] = field(default_factory=dict)
    """Signature -> billed tokens of each thinking block the file holds without its text."""
    recorded: tuple[Conversation, ...] = ()
    """The recording's own requests with the gaps and steps in place."""
    notes: tuple[str, ...] = ()

    def fill(self, requests: Sequence[Conversation], counter: TokenCounter) -> list[Conversation]:
        """``requests`` (one per call) as the harness would have sent them: the thinking, the
        compaction gaps and the mid-session steps in place."""
        requests = with_thinking(requests, self.thinking, counter)
        filled = with_gaps(requests, list(self.gaps), counter, filled=self.filled)
        return with_content_gaps(filled, list(self.steps)) if self.steps else filled


@dataclass(frozen=True)
class Omitted:
    """Everything a file omits of what the harness sent (see the module docstring)."""

    prefix: tuple[PrefixPart, ...] = ()
    """The hidden prefix's parts (empty: the file holds its prefix, or its size is unknown)."""
    content: OmittedContent = field(default_factory=OmittedContent)
    resized: Mapping[int, tuple[PrefixPart, ...]] = field(default_factory=dict)
    """Call index -> the hidden prefix from that call on, where a resume built it anew."""
    notes: tuple[str, ...] = ()
    """What was measured, and on what, in the order measured."""

    @property
    def hidden_tokens(self) -> int:
        return sum(p.tokens for p in self.prefix)

    def fill(self, requests: Sequence[Conversation], counter: TokenCounter) -> list[Conversation]:
        """See :meth:`OmittedContent.fill`."""
        return self.content.fill(requests, counter)


def omitted_content(
    session: Session,
    counter: TokenCounter,
    config: CacheConfig,
    recorded: Sequence[Usage] | None,
    hidden_tokens: int,
) -> OmittedContent:
    """The gaps, steps and resumes of ``session``'s recording (see :class:`OmittedContent`)."""
    notes: list[str] = []
    thinking = omitted_thinking(session, counter) if recorded is not None else {}
    if thinking:
        notes.append(describe_thinking(thinking))
    requests = with_thinking([c.request for c in session.calls], thinking, counter)
    gaps: tuple[CompactionGap, ...] = ()
    resumes: dict[int, int] = {}
    for _ in range(3):  # a resume moves the prefix a later compaction is measured against
        measured = compaction_gaps(session, counter, recorded, hidden_tokens, resumes)
        filled = filled_summaries(measured, counter)  # counted once, for views and recording
        as_recorded = with_gaps(requests, measured, counter, filled=filled)
        steps = content_gaps(session, as_recorded, counter, config, recorded, hidden_tokens)
        if steps:
            as_recorded = with_content_gaps(as_recorded, steps)
        again = resumed_prefix(session, counter, recorded, as_recorded, hidden_tokens)
        stable = (measured, again) == (gaps, resumes)
        gaps, resumes = measured, again
        later = [i for i in session.compactions if resumes and i > min(resumes)]
        if stable or not later:  # no compaction after a resume: nothing to measure again
            break
    if gaps:
        sizes = ", ".join(f"{g.tokens:,} tokens at call {g.call}" for g in gaps)
        notes.append(
            f"content after a compaction not in the file (restored files, todos): {sizes}, "
            "inferred from the recorded usage of the first call after it"
        )
    if steps:
        notes.append(describe_content_gaps(steps))
    if resumes:
        sizes = ", ".join(f"{d:+,} tokens at call {i}" for i, d in resumes.items())
        notes.append(
            f"hidden system prompt built anew on resume: {sizes}, measured from those calls' usage"
        )
    return OmittedContent(
        gaps=tuple(gaps),
        filled=filled,
        steps=tuple(steps),
        resumes=resumes,
        thinking=thinking,
        recorded=tuple(as_recorded),
        notes=tuple(notes),
    )


def measure_omitted(
    session: Session,
    counter: TokenCounter,
    config: CacheConfig,
    recorded: Sequence[Usage] | None,
) -> Omitted:
    """Everything ``session``'s file omits, measured on its recording (see the module docstring)."""
    notes: list[str] = []
    prefix = hidden_prefix(session, counter, recorded, notes)
    content = omitted_content(session, counter, config, recorded, sum(p.tokens for p in prefix))
    resized = {i: resized_prefix(prefix, d) for i, d in content.resumes.items()}
    return Omitted(prefix, content, resized, (*notes, *content.notes))


__all__ = ["Omitted", "OmittedContent", "measure_omitted", "omitted_content"]
