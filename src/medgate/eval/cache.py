"""A persistent cache of model calls, so re-running an experiment reuses work.

A call is keyed by the model's weight fingerprint, the exact messages (or text) and every decoding
parameter, so a hit is the same computation. The embedded model decodes greedily or with a fixed
seed, which makes a cached reply identical to a fresh one. The wrapped model is created only on
the first miss: a fully cached run never loads the weights.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medgate.backends.base import (
    ChatMessage,
    ChatReply,
    Completion,
    DecodeParams,
    LanguageModel,
    WhiteBoxModel,
)
from medgate.errors import ConfigError


@dataclass
class CallStats:
    """Counters since the last :meth:`CallCache.reset_stats`."""

    hits: int = 0
    misses: int = 0
    fresh_seconds: float = 0.0
    replayed_seconds: float = 0.0
    """What the cached calls took when they were first made."""


#: One stored call: key, kind, JSON value, seconds it originally took.
CallRow = tuple[str, str, str, float]


class CallCache:
    """SQLite store of call results: ``key -> (json value, seconds it originally took)``.

    Several processes of one machine may use one file at once (Ray actors do): WAL lets readers
    go on while one writes, each write is its own short transaction, and a writer that finds
    the file locked waits up to 60 s. WAL needs memory shared between the processes, so the
    file must be on a local disk, never on a network file system shared between machines.
    """

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, kind TEXT, value TEXT, "
            "seconds REAL)"
        )
        self._db.commit()
        self.stats = CallStats()
        self.journal: list[CallRow] | None = None
        """When a list, every call stored from now on is appended to it too (to be sent to
        another machine's cache with :meth:`merge`)."""

    def reset_stats(self) -> CallStats:
        old, self.stats = self.stats, CallStats()
        return old

    def get(self, key: str) -> tuple[str, float] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT value, seconds FROM calls WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        return str(row[0]), float(row[1])

    def put(self, key: str, kind: str, value: str, seconds: float) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO calls VALUES (?, ?, ?, ?)", (key, kind, value, seconds)
            )
            self._db.commit()
        if self.journal is not None:
            self.journal.append((key, kind, value, seconds))

    def merge(self, rows: Sequence[CallRow]) -> None:
        """Store calls made on another machine; a call already here is kept as it is (both are
        the same computation)."""
        with self._lock:
            self._db.executemany("INSERT OR IGNORE INTO calls VALUES (?, ?, ?, ?)", rows)
            self._db.commit()

    def size(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


def call_key(fingerprint: str, kind: str, payload: Mapping[str, Any]) -> str:
    text = json.dumps({"model": fingerprint, "kind": kind, **payload}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CachedModel:
    """A :class:`WhiteBoxModel` (and :class:`LanguageModel`) answering from a :class:`CallCache`.

    ``factory`` builds the real model on the first miss. ``fingerprint`` must identify the
    weights without loading them (for the embedded models it is their published sha256).
    """

    def __init__(
        self,
        factory: Callable[[], LanguageModel],
        name: str,
        fingerprint: str,
        cache: CallCache,
        numerics: str = "",
    ) -> None:
        self._factory = factory
        self._model: LanguageModel | None = None
        self._name = name
        self._fingerprint = fingerprint
        # Part of every call's key, not of the fingerprint: the same weights run with another
        # thread count give slightly different numbers, and a cached call must not stand in for
        # one made under other numerics (artifacts stay bound to the weights alone).
        self._key_fingerprint = f"{fingerprint}@{numerics}" if numerics else fingerprint
        self.cache = cache

    @property
    def name(self) -> str:
        return self._name

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def forget_prompt(self) -> None:
        """Make the wrapped model read its next prompt from scratch, if it is loaded and keeps
        prompt state (llama.cpp); a model not yet loaded has nothing to forget."""
        forget = getattr(self._model, "forget_prompt", None)
        if callable(forget):
            forget()

    def _real(self) -> LanguageModel:
        if self._model is None:
            self._model = self._factory()
            real_fp = getattr(self._model, "fingerprint", None)
            if real_fp is not None and real_fp != self._fingerprint:
                raise ConfigError(
                    f"model fingerprint {real_fp[:16]}... differs from the cache key "
                    f"{self._fingerprint[:16]}...; refusing to mix cached calls"
                )
        return self._model

    def _white(self) -> WhiteBoxModel:
        model = self._real()
        if not isinstance(model, WhiteBoxModel):
            raise ConfigError(f"{self._name} is not a white-box model")
        return model

    def _cached(self, kind: str, payload: Mapping[str, Any], run: Callable[[], str]) -> str:
        key = call_key(self._key_fingerprint, kind, payload)
        hit = self.cache.get(key)
        if hit is not None:
            self.cache.stats.hits += 1
            self.cache.stats.replayed_seconds += hit[1]
            return hit[0]
        t0 = time.perf_counter()
        value = run()
        seconds = time.perf_counter() - t0
        self.cache.stats.misses += 1
        self.cache.stats.fresh_seconds += seconds
        self.cache.put(key, kind, value, seconds)
        return value

    def complete(self, messages: Sequence[ChatMessage], params: DecodeParams) -> Completion:
        payload = {
            "messages": [m.model_dump() for m in messages],
            "params": params.model_dump(mode="json"),
        }
        text = self._cached(
            "complete", payload, lambda: self._white().complete(messages, params).model_dump_json()
        )
        return Completion.model_validate_json(text)

    def complete_batch(
        self, messages: Sequence[ChatMessage], params: Sequence[DecodeParams]
    ) -> list[Completion]:
        # Cached as one call: a batch decodes its continuations together, so its numbers can
        # differ slightly from the same continuations run one by one.
        payload = {
            "messages": [m.model_dump() for m in messages],
            "batch": [p.model_dump(mode="json") for p in params],
        }

        def run() -> str:
            done = self._white().complete_batch(messages, params)
            return json.dumps([c.model_dump(mode="json") for c in done])

        return [
            Completion.model_validate(c)
            for c in json.loads(self._cached("complete_batch", payload, run))
        ]

    def embed(self, text: str) -> list[float]:
        value = self._cached("embed", {"text": text}, lambda: json.dumps(self._white().embed(text)))
        out: list[float] = json.loads(value)
        return out

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int | None = None,
        json_schema: Mapping[str, Any] | None = None,
        role: str = "agent",
    ) -> ChatReply:
        payload = {
            "messages": [m.model_dump() for m in messages],
            "max_tokens": max_tokens,
            "temperature": temperature,
            "seed": seed,
            "json_schema": dict(json_schema) if json_schema is not None else None,
            "role": role,
        }

        def run() -> str:
            reply = self._real().chat(
                messages,
                max_tokens=max_tokens,
                temperature=temperature,
                seed=seed,
                json_schema=json_schema,
                role=role,
            )
            return reply.model_dump_json()

        return ChatReply.model_validate_json(self._cached("chat", payload, run))
