"""ModelInfo: a model id resolved once, where it enters contextkit.

A model id is a string in a recorded file, a CLI flag or a wrapper call. :func:`resolve_model`
turns it into a frozen :class:`ModelInfo` (remembered per id, so resolving the same id again costs
a dictionary look-up), and every layer below the point of entry takes the value: the token counter
is chosen from its ``tokenizer`` and ``calibration_family``, the cache simulator reads its cache
minimum and thinking rule, the accountant its provider, the replay its ``context_window``.

Contract:

- :func:`resolve_model` never raises and never returns None: an id nothing is known about (or no
  id at all, :data:`UNKNOWN_MODEL`) gives a ModelInfo whose facts are the documented defaults
  (1,024-token cache minimum, no hidden tool prompt, thinking kept, window unknown).
- ``context_window`` is the window the harness ran the model with; it is the model's maximum
  (``max_context_window``) unless the recording says otherwise (a ``[1m]`` suffix, a reader that
  knows its harness: :meth:`ModelInfo.with_context_window`).
- ``route`` is how the call was served (``"bedrock"``, ``"vertex"``; None when nothing says): from
  the id where it is spelled as that route spells it, or from the reader.
- Prices are not a field: they are dated per call and can be overridden after a file was read
  (``--prices``), so :func:`contextkit.pricing.lookup_price` takes this value and the call's time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date, datetime
from functools import lru_cache

from contextkit.models._facts import (
    context_window,
    image_tokens,
    keeps_prior_thinking,
    min_cacheable_tokens,
    openai_cached_discount,
    tool_use_overhead,
)
from contextkit.models._ids import ClaudeModel, normalise_model, parse_claude, provider_of, route_of

_WINDOW_SUFFIX = re.compile(r"\[(\d+)([km])\]$", re.IGNORECASE)
"""Claude Code's way of naming the window it runs a model with: ``claude-opus-4-6[1m]``."""


def calibration_family(claude: ClaudeModel | None) -> str | None:
    """Tokenizer generation of a Claude model (what a calibration is fitted per); None for
    others."""
    if claude is None:
        return None
    version = (claude.major, claude.minor)
    if version < (4, 0):
        return "claude-3"
    if version < (4, 5):
        return "claude-4"
    if version < (4, 7):
        return "claude-4.5"
    return "claude-opus-4.7"  # Opus 4.7 and later: the newer tokenizer


def _openai_encoding(name: str) -> str:
    """tiktoken's encoding for an OpenAI model (o200k_base when tiktoken does not know it)."""
    import tiktoken.model  # noqa: PLC0415  (loads tiktoken's registry: only for OpenAI ids)

    try:
        return str(tiktoken.model.encoding_name_for_model(name))
    except KeyError:
        return "o200k_base"


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What contextkit knows about one model id (see the module docstring)."""

    id: str
    """The id as given (``us.anthropic.claude-sonnet-4-5-20250929-v1:0``); '' for no id."""
    name: str
    """Normalised: lower case, without provider prefix, Bedrock or Vertex decoration."""
    provider: str | None
    """``"anthropic"``, ``"openai"``, or None when not known."""
    claude: ClaudeModel | None
    """Tier and version of a Claude model."""
    route: str | None
    max_context_window: int | None
    context_window: int | None
    tokenizer: str | None
    """tiktoken encoding for OpenAI models; None for others (Claude's tokenizer is not public: its
    counts are calibrated, see ``calibration_family``)."""
    calibration_family: str | None

    @property
    def family(self) -> str | None:
        """``sonnet-4.5``, ``opus-4``, ...: the key of the reference tables (Claude models)."""
        return self.claude.key if self.claude is not None else None

    @property
    def version(self) -> tuple[int, int] | None:
        return (self.claude.major, self.claude.minor) if self.claude is not None else None

    @property
    def is_claude(self) -> bool:
        return self.claude is not None

    @property
    def is_openai(self) -> bool:
        return self.provider == "openai"

    @property
    def is_gemini(self) -> bool:
        return self.provider == "google"

    def cache_min_tokens(self, when: date | datetime | None = None) -> int:
        """Shortest prefix the provider caches (below it nothing is cached, no error; Gemini by
        its dated table; OpenAI and unknown models: 1,024)."""
        return min_cacheable_tokens(self.claude, when, self.name or "")

    def tool_overhead(self, tool_choice: object = None, when: date | datetime | None = None) -> int:
        """Tokens of the hidden system prompt Anthropic adds when a request carries tools (0 for
        other providers)."""
        return tool_use_overhead(self.claude, tool_choice, when)

    def keeps_prior_thinking(self, when: date | datetime | None = None) -> bool:
        """True when the thinking of earlier turns stays in context (billed as input)."""
        return keeps_prior_thinking(self.claude, when)

    def image_tokens(self, width: int, height: int, when: date | datetime | None = None) -> int:
        return image_tokens(width, height, self.claude, when)

    def cached_input_discount(self) -> float | None:
        """OpenAI: the fraction taken off the input price for cached tokens (None: not known)."""
        return openai_cached_discount(self.name) if self.name else None

    def with_context_window(self, tokens: int) -> ModelInfo:
        """The same model run with a ``tokens`` window (the harness's, not the model's maximum)."""
        return replace(self, context_window=tokens)

    def with_route(self, route: str | None) -> ModelInfo:
        return replace(self, route=route)


@lru_cache(maxsize=4096)
def _resolve(model: str) -> ModelInfo:
    suffix = _WINDOW_SUFFIX.search(model.strip())
    bare = model.strip()[: suffix.start()] if suffix else model
    name = normalise_model(bare) if bare.strip() else ""
    claude = parse_claude(bare) if name else None
    provider = provider_of(name) if name else None
    maximum = context_window(claude, name) if name else None
    window = maximum
    if suffix:
        window = int(suffix.group(1)) * (1_000 if suffix.group(2).lower() == "k" else 1_000_000)
    return ModelInfo(
        id=model,
        name=name,
        provider=provider,
        claude=claude,
        route=route_of(bare) if name else None,
        max_context_window=maximum,
        context_window=window,
        tokenizer=_openai_encoding(name) if provider == "openai" else None,
        calibration_family=calibration_family(claude),
    )


def resolve_model(model: str | None) -> ModelInfo:
    """The :class:`ModelInfo` of ``model`` (remembered per id); :data:`UNKNOWN_MODEL` for None."""
    return _resolve(model) if model else UNKNOWN_MODEL


UNKNOWN_MODEL = ModelInfo(
    id="",
    name="",
    provider=None,
    claude=None,
    route=None,
    max_context_window=None,
    context_window=None,
    tokenizer=None,
    calibration_family=None,
)
"""A call whose file names no model: every fact at its documented default."""


__all__ = ["UNKNOWN_MODEL", "ModelInfo", "calibration_family", "resolve_model"]
