"""Dated reference facts about providers, kept as data with their source and date.

Contract: every figure here is a :class:`Dated` value (or a table of them) that says where it comes
from and from when it holds; the functions pick the entry valid at ``when`` (default: now) for a
model. Nothing here raises for an unknown model: the functions fall back to a documented default
(``min_cacheable_tokens``, ``tool_use_overhead``) or return None (``context_window``).

Model names are resolved by :func:`parse_claude`, which accepts the provider's own ids
(``claude-sonnet-4-5-20250929``, ``claude-3-5-haiku-latest``), dotted and provider-prefixed forms
(``anthropic/claude-sonnet-4.5``), Bedrock (``us.anthropic.claude-...-v1:0``) and Vertex
(``claude-...@20250514``) ids.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import lru_cache
from typing import Any, Generic, Literal, NamedTuple, TypeVar

from genai_prices import data_snapshot

REFERENCE_DOC = "Anthropic/OpenAI docs via /work/shared/REFERENCE.md (collected 2026)"
"""Source of the figures below unless an entry says otherwise."""


class ClaudeModel(NamedTuple):
    """A Claude model id reduced to what the reference tables key on."""

    tier: str  # opus, sonnet, haiku
    major: int
    minor: int

    @property
    def key(self) -> str:
        """``sonnet-4.5``, ``haiku-3.5``, ``opus-4`` (minor 0 omitted)."""
        version = f"{self.major}.{self.minor}" if self.minor else str(self.major)
        return f"{self.tier}-{version}"


_NEW_STYLE = re.compile(r"^claude-(opus|sonnet|haiku)-(\d)(?:-(\d{1,2}))?(?=-|$)")
_OLD_STYLE = re.compile(r"^claude-(\d)(?:-(\d))?-(opus|sonnet|haiku)(?=-|$)")


def normalise_model(model: str) -> str:
    """Lower-case id without provider prefix, Bedrock region/version or Vertex date suffix.

    Dots between version digits become dashes (``claude-sonnet-4.5`` -> ``claude-sonnet-4-5``).
    """
    name = model.strip().lower().rsplit("/", 1)[-1]
    name = re.sub(r"^(?:[a-z]{2,6}\.)?anthropic\.", "", name)  # Bedrock: us.anthropic.claude-...
    name = re.sub(r"-v\d+(?::\d+)?$", "", name)  # Bedrock: ...-v1:0
    name = name.replace("@", "-")  # Vertex: claude-sonnet-4@20250514
    return re.sub(r"(?<=\d)\.(?=\d)", "-", name) if name.startswith("claude") else name


@lru_cache(maxsize=1024)
def parse_claude(model: str | None) -> ClaudeModel | None:
    """The tier and version of a Claude model id, or None when it is not one (remembered per id:
    a strategy's trigger counts the view, hidden tool prompt included, at every call)."""
    if not model:
        return None
    name = normalise_model(model)
    if m := _NEW_STYLE.match(name):
        return ClaudeModel(m.group(1), int(m.group(2)), int(m.group(3) or 0))
    if m := _OLD_STYLE.match(name):
        return ClaudeModel(m.group(3), int(m.group(1)), int(m.group(2) or 0))
    return None


def is_openai(model: str | None) -> bool:
    if not model:
        return False
    name = normalise_model(model)
    return bool(re.match(r"^(gpt-|chatgpt-|o[1-9](?:-|$)|text-embedding-|davinci|babbage)", name))


T = TypeVar("T")


@dataclass(frozen=True)
class Dated(Generic[T]):
    """A value valid from ``since`` (None: from the start of records) until the next entry."""

    value: T
    since: date | None = None
    source: str = REFERENCE_DOC


def _today(when: date | datetime | None) -> date:
    if when is None:
        return datetime.now(UTC).date()
    if isinstance(when, datetime):
        return (when.astimezone(UTC) if when.tzinfo else when).date()
    return when


def pick(entries: Sequence[Dated[T]], when: date | datetime | None = None) -> Dated[T]:
    """The entry valid on ``when``; before the first dated entry, the earliest one."""
    day = _today(when)
    ordered = sorted(entries, key=lambda e: e.since or date.min)
    chosen = ordered[0]
    for entry in ordered:
        if entry.since is None or entry.since <= day:
            chosen = entry
    return chosen


# --- genai-prices' model data -------------------------------------------------------------


def _provider_id(name: str) -> str | None:
    if parse_claude(name) is not None or name.startswith("claude"):
        return "anthropic"
    return "openai" if is_openai(name) else None


def genai_model_info(model: str) -> Any | None:
    """genai-prices' ``ModelInfo`` for ``model`` (None when the library does not know it)."""
    name = normalise_model(model)
    provider = _provider_id(name)
    try:
        _, info = data_snapshot.get_snapshot().find_provider_model(name, None, provider, None)
    except LookupError:
        return None
    return info


# --- context windows (tokens) ---------------------------------------------------------------

CONTEXT_WINDOWS: dict[str, Dated[int]] = {
    **{k: Dated(1_000_000) for k in ("opus-4.6", "opus-4.7", "sonnet-4.6")},
    **{
        k: Dated(200_000)
        for k in (
            "opus-4.5", "sonnet-4.5", "haiku-4.5", "opus-4", "opus-4.1", "sonnet-4",
            "haiku-3.5", "sonnet-3.7", "sonnet-3.5", "haiku-3", "opus-3", "sonnet-3",
        )
    },
}  # fmt: skip


def context_window(model: str | None) -> int | None:
    """Maximum input tokens of ``model``; from genai-prices' data for models not listed here."""
    claude = parse_claude(model)
    if claude is not None and claude.key in CONTEXT_WINDOWS:
        return CONTEXT_WINDOWS[claude.key].value
    if not model:
        return None
    info = genai_model_info(model)
    return info.context_window if info is not None else None


# --- minimum cacheable prefix (tokens) --------------------------------------------------------

MIN_CACHEABLE: dict[str, tuple[Dated[int], ...]] = {
    **{k: (Dated(1024),) for k in ("sonnet-4", "sonnet-4.5", "opus-4", "opus-4.1", "sonnet-3.7")},
    # Sonnet 4.6 launched with a 2,048-token minimum, lowered to 1,024 on 2026-05-13.
    "sonnet-4.6": (Dated(2048), Dated(1024, since=date(2026, 5, 13))),
    **{k: (Dated(2048),) for k in ("opus-4.7", "haiku-3", "haiku-3.5")},
    **{k: (Dated(4096),) for k in ("opus-4.5", "opus-4.6", "haiku-4.5")},
}
MIN_CACHEABLE_DEFAULT = 1024
"""Unknown Claude models and OpenAI (automatic caching from 1,024 prompt tokens)."""


def min_cacheable_tokens(model: str | None, when: date | datetime | None = None) -> int:
    """Shortest prefix the provider caches for ``model`` (below it nothing is cached, no error)."""
    claude = parse_claude(model)
    if claude is not None and claude.key in MIN_CACHEABLE:
        return pick(MIN_CACHEABLE[claude.key], when).value
    return MIN_CACHEABLE_DEFAULT


# --- hidden tool-use system prompt (tokens), by tool_choice ----------------------------------


class ToolOverhead(NamedTuple):
    auto: int  # tool_choice auto or none
    any: int  # tool_choice any or a named tool


_EARLY_2026 = date(2026, 1, 1)  # "early 2026" in the docs: date of the figure, not of a change
_REVISED = date(2026, 7, 1)  # "revised in July 2026"

TOOL_USE_OVERHEAD: dict[str, tuple[Dated[ToolOverhead], ...]] = {
    **{
        k: (Dated(ToolOverhead(346, 313), _EARLY_2026), Dated(ToolOverhead(496, 588), _REVISED))
        for k in ("opus-4.5", "sonnet-4.5", "haiku-4.5")
    },
    **{
        k: (Dated(ToolOverhead(346, 313), _EARLY_2026), Dated(ToolOverhead(497, 589), _REVISED))
        for k in ("opus-4.6", "sonnet-4.6")
    },
    "opus-4.7": (
        Dated(ToolOverhead(346, 313), _EARLY_2026),
        Dated(ToolOverhead(675, 804), _REVISED),
    ),
    **{
        k: (Dated(ToolOverhead(346, 313), _EARLY_2026), Dated(ToolOverhead(313, 315), _REVISED))
        for k in ("opus-4", "opus-4.1", "sonnet-4")
    },
    "haiku-3.5": (Dated(ToolOverhead(264, 340)),),
    # Not in REFERENCE.md: Anthropic's tool-use pricing table of 2025 listed Sonnet 3.7 as 346/313.
    "sonnet-3.7": (Dated(ToolOverhead(346, 313), source="Anthropic tool-use docs, 2025"),),
}
TOOL_USE_OVERHEAD_DEFAULT = ToolOverhead(346, 313)
"""Unknown Claude model: the Claude 4 family figure of early 2026."""


def tool_use_overhead(
    model: str | None, tool_choice: object = None, when: date | datetime | None = None
) -> int:
    """Tokens of the hidden system prompt Anthropic adds when a request carries tools.

    ``tool_choice`` is the request's value (``{"type": "any"}``, ``"auto"``, None for auto).
    Returns 0 for non-Claude models (OpenAI documents no such overhead).
    """
    claude = parse_claude(model)
    if claude is None:
        return 0
    entries = TOOL_USE_OVERHEAD.get(claude.key)
    figures = pick(entries, when).value if entries else TOOL_USE_OVERHEAD_DEFAULT
    kind = tool_choice.get("type") if isinstance(tool_choice, dict) else tool_choice
    return figures.any if kind in ("any", "tool") else figures.auto


# --- thinking blocks of earlier turns ---------------------------------------------------------

PRIOR_THINKING_KEPT: dict[str, tuple[Dated[bool], ...]] = {
    # "Opus 4.5+ and Sonnet 4.6+ keep earlier turns' thinking in context (billed as input)".
    **{k: (Dated(True),) for k in ("opus-4.5", "opus-4.6", "opus-4.7", "sonnet-4.6")},
    # "earlier models and Haiku strip it once a non-tool-result user message arrives".
    **{
        k: (Dated(False),)
        for k in ("opus-4", "opus-4.1", "sonnet-3.7", "sonnet-4", "sonnet-4.5", "haiku-4.5")
    },
}
"""Whether a model keeps the thinking blocks of earlier turns in context (REFERENCE.md, "Anthropic
prompt caching"). Models not listed follow the documented rule by version
(:func:`keeps_prior_thinking`)."""


def keeps_prior_thinking(model: str | None, when: date | datetime | None = None) -> bool:
    """True when ``model`` bills the thinking of turns before the last non-tool-result user message.

    False for models that strip it (Claude before Opus 4.5 / Sonnet 4.6, and every Haiku). True for
    non-Claude or unknown models: nothing is stripped, the request is counted as sent.
    """
    claude = parse_claude(model)
    if claude is None:
        return True
    entries = PRIOR_THINKING_KEPT.get(claude.key)
    if entries is not None:
        return pick(entries, when).value
    version = (claude.major, claude.minor)
    if claude.tier == "opus":
        return version >= (4, 5)
    return claude.tier == "sonnet" and version >= (4, 6)


# --- images -----------------------------------------------------------------------------------

IMAGE_FORMULA_CHANGE = date(2026, 7, 1)
""""Until mid-2026" the docs gave w*h/750; the current docs give 28-pixel patches."""
IMAGE_LONG_EDGE_PX = 1568
IMAGE_OLD_MAX_TOKENS = 1600
IMAGE_PATCH_PX = 28
IMAGE_MAX_TOKENS: tuple[tuple[str, int], ...] = (("opus-4.7", 4784),)
IMAGE_MAX_TOKENS_DEFAULT = 1568


def _image_cap(model: str | None) -> int:
    claude = parse_claude(model)
    newer = claude is not None and (claude.major, claude.minor) >= (4, 7)
    return dict(IMAGE_MAX_TOKENS)["opus-4.7"] if newer else IMAGE_MAX_TOKENS_DEFAULT


def image_tokens(
    width: int, height: int, model: str | None = None, when: date | datetime | None = None
) -> int:
    """Input tokens of one image of ``width`` x ``height`` pixels (an estimate, as documented)."""
    if width <= 0 or height <= 0:
        return 0
    if _today(when) < IMAGE_FORMULA_CHANGE:
        scale = min(1.0, IMAGE_LONG_EDGE_PX / max(width, height))
        w, h = width * scale, height * scale
        return min(math.ceil(w * h / 750), IMAGE_OLD_MAX_TOKENS)
    patches = math.ceil(width / IMAGE_PATCH_PX) * math.ceil(height / IMAGE_PATCH_PX)
    return min(patches, _image_cap(model))


# --- OpenAI prompt caching ---------------------------------------------------------------------

OPENAI_CACHED_INPUT_DISCOUNT: tuple[tuple[str, float], ...] = (
    # Longest prefix first: the first match wins.
    ("gpt-4o-mini", 0.50),
    ("gpt-4o", 0.50),
    ("gpt-4.1", 0.75),
    ("gpt-5", 0.90),
    ("o1", 0.50),
    ("o3-mini", 0.50),
    ("o3", 0.75),
    ("o4-mini", 0.75),
)
OPENAI_CACHE_MIN_TOKENS = 1024
OPENAI_CACHE_STEP_TOKENS = 128
OPENAI_CACHE_ROUTING_PREFIX_TOKENS = 256
OPENAI_CACHE_RETENTION: tuple[Literal["in_memory", "24h"], ...] = ("in_memory", "24h")


def openai_cached_discount(model: str | None) -> float | None:
    """Fraction taken off the input price for cached prompt tokens, or None when not known."""
    if not model:
        return None
    name = normalise_model(model)
    for prefix, discount in OPENAI_CACHED_INPUT_DISCOUNT:
        if name.startswith(prefix):
            return discount
    return None


def openai_cached_tokens(prompt_prefix_tokens: int) -> int:
    """Cacheable part of a shared prefix: nothing below 1,024 tokens, then 128-token steps."""
    if prompt_prefix_tokens < OPENAI_CACHE_MIN_TOKENS:
        return 0
    extra = prompt_prefix_tokens - OPENAI_CACHE_MIN_TOKENS
    return OPENAI_CACHE_MIN_TOKENS + extra // OPENAI_CACHE_STEP_TOKENS * OPENAI_CACHE_STEP_TOKENS


__all__ = [
    "CONTEXT_WINDOWS",
    "MIN_CACHEABLE",
    "OPENAI_CACHED_INPUT_DISCOUNT",
    "OPENAI_CACHE_MIN_TOKENS",
    "OPENAI_CACHE_STEP_TOKENS",
    "PRIOR_THINKING_KEPT",
    "TOOL_USE_OVERHEAD",
    "ClaudeModel",
    "Dated",
    "ToolOverhead",
    "context_window",
    "genai_model_info",
    "image_tokens",
    "is_openai",
    "keeps_prior_thinking",
    "min_cacheable_tokens",
    "normalise_model",
    "openai_cached_discount",
    "openai_cached_tokens",
    "parse_claude",
    "pick",
    "tool_use_overhead",
]
