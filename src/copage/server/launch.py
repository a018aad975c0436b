"""Running the proxy under uvicorn, in one process or several worker processes.

With ``workers > 1`` uvicorn binds the listening socket itself as
``socket.socket(AF_INET)``, whose ``proto`` is 0, so asyncio's ``_set_nodelay``
(which checks ``proto == IPPROTO_TCP``) never sets ``TCP_NODELAY`` on the
accepted connections. Starlette sends the response head and body in two writes,
and Nagle's algorithm then holds the body back until the client's delayed ACK
(about 40 ms on Linux): every request at a multi-worker server took ~40 ms more.
We set ``TCP_NODELAY`` on the listening socket (Linux copies it to accepted
sockets) and run uvicorn's own supervisor with it.
"""

from __future__ import annotations

import socket
from typing import Any

import uvicorn
from uvicorn.supervisors import Multiprocess

APP_FACTORY = "copage.server.app:app_from_env"
KEEP_ALIVE_S = 30  # above the clients' idle times: avoids the idle-close race under load
#: uvicorn's event loop and HTTP parser ("auto": uvloop and httptools when installed,
#: as the ``server`` extra does); ``bench/bench_proxy.py --server-impl`` overrides it.
UVICORN_IMPL: dict[str, str] = {"loop": "auto", "http": "auto"}


class _NoDelayConfig(uvicorn.Config):
    """uvicorn's Config whose bound socket has ``TCP_NODELAY`` (see module docstring)."""

    def bind_socket(self) -> socket.socket:
        sock = super().bind_socket()
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock


def run_workers(*, host: str, port: int, workers: int, log_level: str) -> None:
    """Serve ``app_from_env`` in ``workers`` processes sharing one listening socket."""
    config = _NoDelayConfig(APP_FACTORY, factory=True, host=host, port=port, workers=workers,
                            log_level=log_level, timeout_keep_alive=KEEP_ALIVE_S,
                            **UVICORN_IMPL)  # type: ignore[arg-type]
    sock = config.bind_socket()
    try:
        Multiprocess(config, sockets=[sock]).run()
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()


def run_single(app: Any, *, host: str, port: int, log_level: str) -> None:
    """Serve ``app`` in this process (asyncio sets ``TCP_NODELAY`` itself here)."""
    uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_keep_alive=KEEP_ALIVE_S,
                **UVICORN_IMPL)  # type: ignore[arg-type]
