"""What contextkit knows about a model, resolved once where its id enters (:func:`resolve_model`
gives a frozen :class:`ModelInfo`): provider, family and version, the route it was served by, the
context window the harness ran, the tokenizer and calibration family, the cache minimum, the hidden
tool-use prompt, whether earlier thinking stays in context. The facts behind it are dated data
(:class:`Dated`, the tables below) with their source. The lowest layer: it imports nothing from
contextkit.
"""

from __future__ import annotations

from contextkit.models._dated import REFERENCE_DOC, Dated, pick
from contextkit.models._facts import (
    CONTEXT_WINDOWS,
    MIN_CACHEABLE,
    MIN_CACHEABLE_DEFAULT,
    OPENAI_CACHE_MIN_TOKENS,
    OPENAI_CACHE_STEP_TOKENS,
    OPENAI_CACHED_INPUT_DISCOUNT,
    PRIOR_THINKING_KEPT,
    TOOL_USE_OVERHEAD,
    ToolOverhead,
    genai_model_info,
    openai_cached_tokens,
)
from contextkit.models._ids import (
    ClaudeModel,
    is_openai,
    normalise_model,
    parse_claude,
    provider_of,
    route_of,
    route_of_response,
)
from contextkit.models._info import UNKNOWN_MODEL, ModelInfo, calibration_family, resolve_model

__all__ = [
    "CONTEXT_WINDOWS",
    "MIN_CACHEABLE",
    "MIN_CACHEABLE_DEFAULT",
    "OPENAI_CACHED_INPUT_DISCOUNT",
    "OPENAI_CACHE_MIN_TOKENS",
    "OPENAI_CACHE_STEP_TOKENS",
    "PRIOR_THINKING_KEPT",
    "REFERENCE_DOC",
    "TOOL_USE_OVERHEAD",
    "UNKNOWN_MODEL",
    "ClaudeModel",
    "Dated",
    "ModelInfo",
    "ToolOverhead",
    "calibration_family",
    "genai_model_info",
    "is_openai",
    "normalise_model",
    "openai_cached_tokens",
    "parse_claude",
    "pick",
    "provider_of",
    "resolve_model",
    "route_of",
    "route_of_response",
]
