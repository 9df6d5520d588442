"""A small TCP proxy for tests: sits between a client and a live server and, per connection,
passes bytes through, resets the connection, loses the answer after the server got the request,
or plays a slow link.

    with TCPProxy(("127.0.0.1", server_port)) as proxy:
        proxy.plan("reset", "pass")         # next connections, in order; then `proxy.default`
        httpx.get(proxy.url + "/healthz")

A reset is a real TCP RST (SO_LINGER 0), which the application layer cannot fake."""

from __future__ import annotations

import contextlib
import select
import socket
import struct
import threading
import time
from collections import Counter, deque
from typing import Literal

Action = Literal["pass", "reset", "reset_after_request", "slow"]


def _reset(sock: socket.socket) -> None:
    """Close with an RST instead of a FIN: the peer sees 'connection reset by peer'."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class TCPProxy:
    def __init__(
        self,
        upstream: tuple[str, int],
        *,
        default: Action = "pass",
        slow_chunk: int = 256,
        slow_delay: float = 0.05,
    ) -> None:
        self.upstream = upstream
        self.default: Action = default
        self.slow_chunk = slow_chunk  # bytes per write on a slow link
        self.slow_delay = slow_delay  # seconds between writes on a slow link
        self.taken: Counter[str] = Counter()  # actions applied so far
        self._plan: deque[Action] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._listener.settimeout(0.1)  # so the accept loop notices __exit__ promptly
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def plan(self, *actions: Action) -> None:
        """Actions for the next connections, in order."""
        with self._lock:
            self._plan.extend(actions)

    def __enter__(self) -> TCPProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self._thread.join(timeout=5)
        self._listener.close()

    def _next_action(self) -> Action:
        with self._lock:
            action = self._plan.popleft() if self._plan else self.default
            self.taken[action] += 1
            return action

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            action = self._next_action()
            threading.Thread(target=self._serve, args=(client, action), daemon=True).start()

    def _serve(self, client: socket.socket, action: Action) -> None:
        if action == "reset":
            _reset(client)
            return
        try:
            upstream = socket.create_connection(self.upstream, timeout=5)
        except OSError:
            _reset(client)
            return
        for sock in (client, upstream):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self._pump(client, upstream, action)
        finally:
            for sock in (client, upstream):
                with contextlib.suppress(OSError):
                    sock.close()

    def _pump(self, client: socket.socket, upstream: socket.socket, action: Action) -> None:
        sockets = [client, upstream]
        while not self._closing.is_set():
            try:
                ready, _, _ = select.select(sockets, [], [], 0.2)
            except (OSError, ValueError):
                return
            for sock in ready:
                try:
                    data = sock.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                try:
                    if sock is client:
                        upstream.sendall(data)
                    elif action == "reset_after_request":
                        # The server has answered, so it ran the request: lose the answer.
                        _reset(client)
                        return
                    elif action == "slow":
                        for i in range(0, len(data), self.slow_chunk):
                            time.sleep(self.slow_delay)
                            client.sendall(data[i : i + self.slow_chunk])
                    else:
                        client.sendall(data)
                except OSError:
                    return
