"""Request size limits and per-key rate limiting."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class _TooLarge(Exception):
    pass


class BodySizeLimit:
    """Refuse bodies over ``max_bytes`` with 413, whether or not they declare their length."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None:
            try:
                length = int(declared)
            except ValueError:
                await _reply(send, 400, "the Content-Length header is not a number")
                return
            if length > self.max_bytes:
                await _reply(send, 413, self._message())
                return
        seen = 0
        overflowed = False
        replaced = False

        async def counting_receive() -> Message:
            nonlocal seen, overflowed
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    overflowed = True
                    raise _TooLarge
            return message

        async def guarded_send(message: Message) -> None:
            # The framework may turn the exception into its own 400 ("error parsing the body");
            # whatever it answers, an oversized body gets the 413 that says why.
            nonlocal replaced
            if overflowed:
                if not replaced and message["type"] == "http.response.start":
                    replaced = True
                    await _reply(send, 413, self._message())
                return
            await send(message)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except _TooLarge:
            if not replaced:
                await _reply(send, 413, self._message())

    def _message(self) -> str:
        return f"the request body is larger than {self.max_bytes} bytes"


async def _reply(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    """A token bucket per API key: ``burst`` at once, refilled at ``per_minute`` per minute."""

    def __init__(self, per_minute: float, burst: int) -> None:
        self.rate = per_minute / 60.0
        self.burst = float(burst)
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        """Take one token; returns 0 if allowed, else the seconds until one is available."""
        now = time.monotonic()
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = _Bucket(self.burst, now)
            bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.updated) * self.rate)
            bucket.updated = now
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return 0.0
            return (1.0 - bucket.tokens) / self.rate
