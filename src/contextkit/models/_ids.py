"""Model ids as providers and gateways spell them, reduced to what contextkit keys on.

:func:`parse_claude` accepts the provider's own ids (``claude-sonnet-4-5-20250929``,
``claude-3-5-haiku-latest``), dotted and provider-prefixed forms (``anthropic/claude-sonnet-4.5``),
Bedrock (``us.anthropic.claude-...-v1:0``) and Vertex (``claude-...@20250514``) ids;
:func:`route_of` names the route an id itself shows (Bedrock, Vertex), where it shows one.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple


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


_NEW_STYLE = re.compile(r"^claude-([a-z]+)-(\d)(?:-(\d{1,2}))?(?=-|$)")
"""``claude-<tier>-<major>[-<minor>]``: any tier, so a model that shipped after the last fit
(``claude-fable-5``) is still a Claude model, of its version's tokenizer generation."""
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


_BEDROCK = re.compile(r"^(?:[a-z]{2,6}\.)?anthropic\.claude|^arn:aws:bedrock")
_VERTEX = re.compile(r"^claude-[a-z0-9.-]+@\d{8}$")


def route_of(model: str) -> str | None:
    """``"bedrock"`` or ``"vertex"`` where the id is spelled as those routes spell it, else None
    (a first-party id says nothing about the route: a gateway may have served it)."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    if _BEDROCK.match(name):
        return "bedrock"
    if _VERTEX.match(name):
        return "vertex"
    return None


_RESPONSE_ID_ROUTES = (("msg_bdrk_", "bedrock"), ("msg_vrtx_", "vertex"))


def route_of_response(response_id: str | None) -> str | None:
    """The route a response id shows: Bedrock's ``msg_bdrk_...``, Vertex's ``msg_vrtx_...``;
    None for a first-party ``msg_...`` id or none (a gateway may still have served it)."""
    if response_id:
        for prefix, route in _RESPONSE_ID_ROUTES:
            if response_id.startswith(prefix):
                return route
    return None


def is_gemini(model: str | None) -> bool:
    return bool(model) and normalise_model(model or "").startswith("gemini-")


def provider_of(name: str) -> str | None:
    """``"anthropic"``, ``"openai"`` or ``"google"`` (Gemini) for a normalised id, else None."""
    if parse_claude(name) is not None or name.startswith("claude"):
        return "anthropic"
    if is_gemini(name):
        return "google"
    return "openai" if is_openai(name) else None


__all__ = [
    "ClaudeModel",
    "is_gemini",
    "is_openai",
    "normalise_model",
    "parse_claude",
    "provider_of",
    "route_of",
    "route_of_response",
]
