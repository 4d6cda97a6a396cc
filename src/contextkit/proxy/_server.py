"""Running the proxy: :func:`serve` in the foreground (the CLI), :class:`ProxyServer` in a
background thread (tests, notebooks, benchmarks), both with uvicorn."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType

import uvicorn

from contextkit.proxy._app import Proxy, ProxyConfig

STARTUP_TIMEOUT_S = 20.0


def _server(proxy: Proxy, host: str, port: int) -> uvicorn.Server:
    config = uvicorn.Config(
        proxy.app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=2,
        timeout_keep_alive=30,
    )
    return uvicorn.Server(config)


def serve(
    config: ProxyConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 8787,
    on_line: Callable[[str], None] | None = None,
) -> Proxy:
    """Run the proxy until interrupted (Ctrl-C); the proxy, with its stats, when it stops."""
    proxy = Proxy(config, on_line=on_line)
    _server(proxy, host, port).run()
    return proxy


class ProxyServer:
    """The proxy on ``host`` and an ephemeral port (``port=0``) in a background thread::

    with ProxyServer(ProxyConfig(upstream=url)) as server:
        client = anthropic.Anthropic(base_url=server.base_url)
    """

    def __init__(
        self,
        config: ProxyConfig,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        on_line: Callable[[str], None] | None = None,
    ) -> None:
        self.proxy = Proxy(config, on_line=on_line)
        self._server = _server(self.proxy, host, port)
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        servers = self._server.servers
        if not servers:
            raise RuntimeError("the proxy is not running: use it as a context manager")
        host, port = servers[0].sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    def start(self) -> ProxyServer:
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the proxy did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def __enter__(self) -> ProxyServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


__all__ = ["ProxyServer", "serve"]
