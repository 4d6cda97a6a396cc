"""``contextkit proxy``: a local recording, compacting proxy for Anthropic and OpenAI clients.

starlette, uvicorn and httpx (the ``proxy`` extra) are imported when the command runs, so
``contextkit --help`` stays fast without them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from contextkit.cli._app import app, console
from contextkit.errors import ContextkitError

UpstreamOption = Annotated[
    str,
    typer.Option(
        "--upstream",
        help="Where to forward: https://api.anthropic.com or https://api.openai.com.",
    ),
]
StrategyOption = Annotated[
    str | None,
    typer.Option(
        "--strategy", "-s", help="Preset, config file or inline spec to apply per conversation."
    ),
]
RecordOption = Annotated[
    Path | None,
    typer.Option("--record", help="Write every exchange here, one JSONL file per conversation."),
]
DryRunOption = Annotated[
    bool,
    typer.Option("--dry-run", help="Record what the strategy would change; forward unchanged."),
]
BudgetTokensOption = Annotated[
    int, typer.Option("--budget-tokens", help="Token budget the strategy aims at.")
]
ContextWindowOption = Annotated[
    int, typer.Option("--context-window", help="Context window the client runs.")
]
TimeoutSOption = Annotated[
    float, typer.Option("--timeout", help="Seconds to wait for the upstream.")
]
MaxBodyOption = Annotated[
    float,
    typer.Option("--max-body-mb", help="Refuse request bodies over this (413).", min=0.001),
]

MaxConversationsOption = Annotated[
    int,
    typer.Option(
        "--max-conversations",
        help="Conversations whose state is kept (least recently used dropped); bounds memory.",
        min=1,
    ),
]


@app.command("proxy")
def proxy_command(
    upstream: UpstreamOption,
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8787,
    strategy: StrategyOption = None,
    record: RecordOption = None,
    dry_run: DryRunOption = False,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    budget_tokens: BudgetTokensOption = 150_000,
    context_window: ContextWindowOption = 200_000,
    timeout_s: TimeoutSOption = 600.0,
    max_body_mb: MaxBodyOption = 32.0,
    max_conversations: MaxConversationsOption = 512,
) -> None:
    """Forward Anthropic / OpenAI API calls, record them, apply a strategy, show their cost.

    Point ANTHROPIC_BASE_URL (or OPENAI_BASE_URL, ending in /v1) at http://HOST:PORT."""
    if not upstream.startswith(("http://", "https://")):
        raise ContextkitError(f"--upstream {upstream!r}: give a URL (http:// or https://)")
    if dry_run and strategy is None:
        raise ContextkitError("--dry-run needs --strategy: there is nothing to try without one")
    from contextkit.strategies import strategy_from_spec  # noqa: PLC0415  (only with --strategy)

    chosen = strategy_from_spec(strategy) if strategy is not None else None
    from contextkit.proxy import ProxyConfig, serve  # noqa: PLC0415  (the extra loads slowly)

    config = ProxyConfig(
        upstream=upstream,
        strategy=chosen,
        dry_run=dry_run,
        record_dir=record,
        budget_tokens=budget_tokens,
        context_window=context_window,
        timeout_s=timeout_s,
        max_body_mb=max_body_mb,
        max_conversations=max_conversations,
    )
    from rich.markup import escape  # noqa: PLC0415  (rich loads only when a command prints)

    mode = "" if chosen is None else f", strategy {strategy}" + (" (dry run)" if dry_run else "")
    console.print(
        f"contextkit proxy on http://{host}:{port} -> {escape(upstream)}{escape(mode)}"
        + (f", recording to {escape(str(record))}" if record else ""),
        highlight=False,
    )
    proxy = serve(config, host=host, port=port, on_line=_print_line)
    total = proxy.stats.to_json()["total"]
    console.print(f"{total['calls']} calls, ${total['cost_usd']:.4f}", highlight=False)


def _print_line(line: str) -> None:
    from rich.markup import escape  # noqa: PLC0415

    console.print(escape(line), highlight=False, soft_wrap=True)
