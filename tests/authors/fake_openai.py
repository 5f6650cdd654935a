"""A scripted OpenAI-compatible chat server on 127.0.0.1, for tests that must not reach a network.

    with FakeOpenAI(["first reply", Scripted(status=500), "second reply"]) as server:
        LLMConfig(base_url=server.base_url, ...)
        ...
        server.requests[0]["messages"]

It serves POST /v1/chat/completions (and /chat/completions), answering each request with the
next scripted reply (or `default` when the queue is empty), and records every request body.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PATHS = ("/v1/chat/completions", "/chat/completions")


@dataclass
class Scripted:
    """One scripted answer: a chat reply, or a failure (HTTP status, raw body, delay)."""

    content: str = ""
    status: int = 200
    raw: bytes | None = None
    """Sent as the body instead of a chat completion (garbage, an error document)."""
    delay_s: float = 0.0
    finish_reason: str = "stop"
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


def words(text: str) -> int:
    return len(text.split())


class FakeOpenAI:
    def __init__(self, replies: Sequence[str | Scripted] = (), default: str | Scripted | None = None):
        self.queue: deque[Scripted] = deque(self._scripted(r) for r in replies)
        self.default = None if default is None else self._scripted(default)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @staticmethod
    def _scripted(reply: str | Scripted) -> Scripted:
        return reply if isinstance(reply, Scripted) else Scripted(content=reply)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def push(self, *replies: str | Scripted) -> None:
        with self._lock:
            self.queue.extend(self._scripted(r) for r in replies)

    def user_texts(self, i: int) -> str:
        """All user-message text of request i (what the model was asked)."""
        return "\n".join(m["content"] for m in self.requests[i]["messages"] if m["role"] == "user")

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> Scripted | None:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            return self.queue.popleft() if self.queue else self.default

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                if self.path.rstrip("/") not in PATHS:
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                reply = fake._next(body, {k.lower(): v for k, v in self.headers.items()})
                if reply is None:
                    return self._send(500, {"error": {"message": "no scripted reply left"}})
                time.sleep(reply.delay_s)
                if reply.raw is not None:
                    return self._send(reply.status, reply.raw)
                if reply.status != 200:
                    return self._send(reply.status, {"error": {"message": f"scripted HTTP {reply.status}",
                                                               "type": "scripted", "code": reply.status}})
                prompt = reply.prompt_tokens
                if prompt is None:
                    prompt = sum(words(str(m.get("content", ""))) for m in body.get("messages", []))
                completion = reply.completion_tokens
                if completion is None:
                    completion = words(reply.content)
                self._send(200, {
                    "id": f"chatcmpl-{len(fake.requests)}", "object": "chat.completion", "created": 0,
                    "model": body.get("model", "scripted"),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.content},
                                 "finish_reason": reply.finish_reason}],
                    "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                              "total_tokens": prompt + completion}})

            def _send(self, status: int, payload: dict[str, Any] | bytes) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a scripted delay past its timeout)

        return Handler
