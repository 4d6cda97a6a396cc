"""Wire codecs: request and response bodies of each provider API <-> contextkit's messages, and
stream reassembly. Pure payload mapping, no files: the harness readers in :mod:`contextkit.formats`,
the engine's SDK wrappers, the proxy, the adapters and the fakes in :mod:`contextkit.testing` all
go through this surface.

- Anthropic Messages (:mod:`.anthropic`): ``from_anthropic_request`` / ``to_anthropic_request``,
  ``from_anthropic_response`` / ``to_anthropic_response``, the detection rule, the request-body
  writer of ``replay --dump-requests``; the SSE stream (:mod:`.sse`).
- OpenAI Chat Completions (:mod:`.openai_chat`) and Responses (:mod:`.openai_responses`): messages
  and items, request and response bodies, detection; their streams (:mod:`.openai_sse`).
- Conversion between the three request forms with what the target cannot carry (:mod:`.convert`).
- Reuse of what a body repeats from an earlier one of the same file (:mod:`._reuse`).

Contract of every codec: writing what was read gives back the same payload (unknown fields and
block types are carried verbatim); a malformed payload raises an error naming the field.
"""

from __future__ import annotations

from contextkit.wire._chat_messages import SYSTEM_ROLES
from contextkit.wire._openai_common import (
    FINISH_REASONS,
    ParsedResponse,
    chat_usage,
    parse_tools,
    write_tools,
)
from contextkit.wire._responses_items import (
    item_side,
    message_blocks,
    output_blocks,
    result_block,
    user_message,
)
from contextkit.wire._reuse import BodyReuse
from contextkit.wire.anthropic import (
    AnthropicResponse,
    PayloadError,
    describe_validation_error,
    dump_request_line,
    from_anthropic_request,
    from_anthropic_response,
    is_anthropic_record,
    is_anthropic_request,
    is_anthropic_response,
    to_anthropic_request,
    to_anthropic_response,
    usage_to_anthropic,
    write_requests_jsonl,
)
from contextkit.wire.convert import (
    TARGETS,
    ConversionError,
    ConversionWarning,
    Target,
    WarningLog,
    from_format,
    to_format,
)
from contextkit.wire.openai_chat import (
    META,
    PAIR_KEYS,
    System,
    is_chat_body,
    is_chat_message_list,
    is_chat_record,
    meta_of,
    parse_chat_messages,
    parse_chat_request,
    parse_chat_response,
    to_chat_messages,
    to_chat_request,
)
from contextkit.wire.openai_chat import REQUEST_KEYS as CHAT_REQUEST_KEYS
from contextkit.wire.openai_responses import (
    ITEM_TYPES,
    from_responses_items,
    is_items_list,
    is_responses_body,
    is_responses_record,
    meta_of_conversation,
    parse_responses_request,
    parse_responses_response,
    to_responses_items,
    to_responses_request,
    usage_from_responses,
    with_instructions,
)
from contextkit.wire.openai_responses import REQUEST_KEYS as RESPONSES_REQUEST_KEYS
from contextkit.wire.openai_sse import (
    AssembledChat,
    assemble_chat_chunks,
    chat_chunks,
    responses_events,
    to_openai_sse,
)
from contextkit.wire.sse import (
    AssembledStream,
    SseEvent,
    StreamError,
    assemble_events,
    assemble_stream,
    parse_sse,
    stream_events,
    to_sse,
)

__all__ = [
    "CHAT_REQUEST_KEYS",
    "FINISH_REASONS",
    "ITEM_TYPES",
    "META",
    "PAIR_KEYS",
    "RESPONSES_REQUEST_KEYS",
    "SYSTEM_ROLES",
    "TARGETS",
    "AnthropicResponse",
    "AssembledChat",
    "AssembledStream",
    "BodyReuse",
    "ConversionError",
    "ConversionWarning",
    "ParsedResponse",
    "PayloadError",
    "SseEvent",
    "StreamError",
    "System",
    "Target",
    "WarningLog",
    "assemble_chat_chunks",
    "assemble_events",
    "assemble_stream",
    "chat_chunks",
    "chat_usage",
    "describe_validation_error",
    "dump_request_line",
    "from_anthropic_request",
    "from_anthropic_response",
    "from_format",
    "from_responses_items",
    "is_anthropic_record",
    "is_anthropic_request",
    "is_anthropic_response",
    "is_chat_body",
    "is_chat_message_list",
    "is_chat_record",
    "is_items_list",
    "is_responses_body",
    "is_responses_record",
    "item_side",
    "message_blocks",
    "meta_of",
    "meta_of_conversation",
    "output_blocks",
    "parse_chat_messages",
    "parse_chat_request",
    "parse_chat_response",
    "parse_responses_request",
    "parse_responses_response",
    "parse_sse",
    "parse_tools",
    "responses_events",
    "result_block",
    "stream_events",
    "to_anthropic_request",
    "to_anthropic_response",
    "to_chat_messages",
    "to_chat_request",
    "to_format",
    "to_openai_sse",
    "to_responses_items",
    "to_responses_request",
    "to_sse",
    "usage_from_responses",
    "usage_to_anthropic",
    "user_message",
    "with_instructions",
    "write_requests_jsonl",
    "write_tools",
]
