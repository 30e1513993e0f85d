"""A real HTTP scheduler extender on loopback, for the extender plugin's tests.

``LoopbackExtender`` serves ``POST <prefix>/<verb>`` from a thread (``http.server``, HTTP/1.1 with
keep-alive), answers each verb with a function of the decoded JSON request, and records every request
(path, headers, body) for the test to check what the scheduler sent.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PREFIX = "/ext"


@dataclass
class Received:
    path: str
    verb: str
    headers: dict[str, str]
    body: Any


@dataclass
class Answer:
    """An answer other than 200 with a JSON body: a status, a raw body, a delay before answering, or
    closing the connection without a word."""

    status: int = 200
    body: bytes | Any = b""
    delay: float = 0.0
    hang_up: bool = False


@dataclass
class LoopbackExtender:
    handlers: dict[str, Callable[[Any], Any]] = field(default_factory=dict)
    received: list[Received] = field(default_factory=list)
    # close the connection after every answer without saying so (a server dropping idle connections)
    drop_after_answer: bool = False

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self.connections = 0
        ext = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with ext._lock:
                    ext.connections += 1

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                verb = self.path.rsplit("/", 1)[-1]
                with ext._lock:
                    ext.received.append(Received(self.path, verb, dict(self.headers.items()), body))
                fn = ext.handlers.get(verb) if self.path.startswith(PREFIX + "/") else None
                answer = fn(body) if fn is not None else Answer(404, b"no such verb")
                if not isinstance(answer, Answer):
                    answer = Answer(200, answer)
                if answer.delay:
                    time.sleep(answer.delay)
                if answer.hang_up:
                    self.close_connection = True
                    return
                data = answer.body if isinstance(answer.body, bytes) else json.dumps(answer.body).encode()
                try:
                    self.send_response(answer.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True
                    return
                if ext.drop_after_answer:
                    self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="loopback-extender", daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}{PREFIX}"

    def verbs(self) -> list[str]:
        with self._lock:
            return [r.verb for r in self.received]

    def bodies(self, verb: str) -> list[Any]:
        with self._lock:
            return [r.body for r in self.received if r.verb == verb]

    def __enter__(self) -> "LoopbackExtender":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def unused_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
