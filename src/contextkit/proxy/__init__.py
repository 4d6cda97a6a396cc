"""``contextkit proxy``: a local HTTP proxy for the Anthropic Messages and the OpenAI Chat
Completions and Responses APIs that records every exchange (credentials never written), applies
a strategy per conversation with stable cache breakpoints, and prices each call as it goes.

Needs the ``proxy`` extra (starlette, uvicorn, httpx). Point ``ANTHROPIC_BASE_URL`` or
``OPENAI_BASE_URL`` at it; see docs/proxy.md. The records are read back by
:mod:`contextkit.formats.proxy_record` (``contextkit replay`` / ``inspect`` / ``cost``).
"""

from __future__ import annotations

from contextkit.proxy._apis import Api, api_of, assemble
from contextkit.proxy._app import EDIT_HEADER, HOP_BY_HOP, Proxy, ProxyConfig
from contextkit.proxy._conversations import Conversations, Edit, conversation_key
from contextkit.proxy._record import SECRET_HEADERS, RecordWriter, redacted
from contextkit.proxy._server import ProxyServer, serve
from contextkit.proxy._stats import ConversationStats, Stats, console_line, price_usage

__all__ = [
    "EDIT_HEADER",
    "HOP_BY_HOP",
    "SECRET_HEADERS",
    "Api",
    "ConversationStats",
    "Conversations",
    "Edit",
    "Proxy",
    "ProxyConfig",
    "ProxyServer",
    "RecordWriter",
    "Stats",
    "api_of",
    "assemble",
    "console_line",
    "conversation_key",
    "price_usage",
    "redacted",
    "serve",
]
