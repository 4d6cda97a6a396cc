"""Dated reference facts about models, kept as data with their source and date.

Contract: every figure here is a :class:`~contextkit.models.Dated` value (or a table of them) that
says where it comes from and from when it holds; the functions take a model already parsed (its
:class:`ClaudeModel`, or its normalised name) and pick the entry valid at ``when`` (default: now).
Nothing here raises for an unknown model: the functions fall back to a documented default or
return None. Callers reach these through :class:`~contextkit.models.ModelInfo`.
"""

from __future__ import annotations

import math
from datetime import date, datetime
from typing import Any, Literal, NamedTuple

from genai_prices import data_snapshot

from contextkit.models._dated import Dated, _today, pick
from contextkit.models._ids import ClaudeModel, provider_of

# --- genai-prices' model data -------------------------------------------------------------


def genai_model_info(name: str) -> Any | None:
    """genai-prices' ``ModelInfo`` for a normalised id (None when the library does not know it)."""
    provider = provider_of(name)
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


def context_window(claude: ClaudeModel | None, name: str) -> int | None:
    """Maximum input tokens of a model (normalised ``name``, ``claude`` its parse); from
    genai-prices' data for models not listed here."""
    if claude is not None and claude.key in CONTEXT_WINDOWS:
        return CONTEXT_WINDOWS[claude.key].value
    if not name:
        return None
    info = genai_model_info(name)
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


_GEMINI_DOCS = "Gemini API docs, 'Context caching', implicit caching table"
_GEMINI_DOCS_2026_10 = date(2026, 10, 13)
"""The page's own "last updated" date of the table that raised every minimum (the day of the
change itself is not published; the table of 2026-05-07 still had the earlier values)."""
GEMINI_MIN_CACHEABLE: tuple[tuple[str, tuple[Dated[int], ...]], ...] = (
    (
        "gemini-2.5-flash",
        (Dated(1024, source=_GEMINI_DOCS), Dated(2048, _GEMINI_DOCS_2026_10, _GEMINI_DOCS)),
    ),
    (
        "gemini-2.5-pro",
        (Dated(4096, source=_GEMINI_DOCS), Dated(2048, _GEMINI_DOCS_2026_10, _GEMINI_DOCS)),
    ),
    (
        "gemini-3-flash",
        (Dated(1024, source=_GEMINI_DOCS), Dated(4096, _GEMINI_DOCS_2026_10, _GEMINI_DOCS)),
    ),
)
"""Shortest prefix Gemini's implicit cache serves, by name prefix (Gemini 2.5 and later; a model
the table does not name, Gemini 3 Pro and every newer one included, takes 4,096)."""
GEMINI_MIN_CACHEABLE_DEFAULT = 4096


def min_cacheable_tokens(
    claude: ClaudeModel | None, when: date | datetime | None = None, name: str = ""
) -> int:
    """Shortest prefix the provider caches for a model (below it nothing is cached, no error)."""
    if claude is not None and claude.key in MIN_CACHEABLE:
        return pick(MIN_CACHEABLE[claude.key], when).value
    if name.startswith("gemini-"):
        for prefix, entries in GEMINI_MIN_CACHEABLE:
            if name.startswith(prefix):
                return pick(entries, when).value
        return GEMINI_MIN_CACHEABLE_DEFAULT
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
    claude: ClaudeModel | None, tool_choice: object = None, when: date | datetime | None = None
) -> int:
    """Tokens of the hidden system prompt Anthropic adds when a request carries tools.

    ``tool_choice`` is the request's value (``{"type": "any"}``, ``"auto"``, None for auto).
    Returns 0 for non-Claude models (OpenAI documents no such overhead).
    """
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


def keeps_prior_thinking(claude: ClaudeModel | None, when: date | datetime | None = None) -> bool:
    """True when a model bills the thinking of turns before the last non-tool-result user message.

    False for models that strip it (Claude before Opus 4.5 / Sonnet 4.6, and every Haiku); a tier
    no rule names goes by the Sonnet rule. True for non-Claude or unknown models: nothing is
    stripped, the request is counted as sent.
    """
    if claude is None:
        return True
    entries = PRIOR_THINKING_KEPT.get(claude.key)
    if entries is not None:
        return pick(entries, when).value
    version = (claude.major, claude.minor)
    if claude.tier == "haiku":
        return False
    if claude.tier == "opus":
        return version >= (4, 5)
    # Sonnet from 4.6 on, and a tier no rule names yet (``claude-fable-5``) as Sonnet: the newer
    # generations keep it (a 5-series recording reads its cache across new user turns)
    return version >= (4, 6)


# --- images -----------------------------------------------------------------------------------

IMAGE_FORMULA_CHANGE = date(2026, 7, 1)
""""Until mid-2026" the docs gave w*h/750; the current docs give 28-pixel patches."""
IMAGE_LONG_EDGE_PX = 1568
IMAGE_OLD_MAX_TOKENS = 1600
IMAGE_PATCH_PX = 28
IMAGE_MAX_TOKENS: tuple[tuple[str, int], ...] = (("opus-4.7", 4784),)
IMAGE_MAX_TOKENS_DEFAULT = 1568


def _image_cap(claude: ClaudeModel | None) -> int:
    newer = claude is not None and (claude.major, claude.minor) >= (4, 7)
    return dict(IMAGE_MAX_TOKENS)["opus-4.7"] if newer else IMAGE_MAX_TOKENS_DEFAULT


def image_tokens(
    width: int, height: int, claude: ClaudeModel | None = None, when: date | datetime | None = None
) -> int:
    """Input tokens of one image of ``width`` x ``height`` pixels (an estimate, as documented)."""
    if width <= 0 or height <= 0:
        return 0
    if _today(when) < IMAGE_FORMULA_CHANGE:
        scale = min(1.0, IMAGE_LONG_EDGE_PX / max(width, height))
        w, h = width * scale, height * scale
        return min(math.ceil(w * h / 750), IMAGE_OLD_MAX_TOKENS)
    patches = math.ceil(width / IMAGE_PATCH_PX) * math.ceil(height / IMAGE_PATCH_PX)
    return min(patches, _image_cap(claude))


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


def openai_cached_discount(name: str) -> float | None:
    """Fraction taken off the input price for cached prompt tokens, or None when not known."""
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
