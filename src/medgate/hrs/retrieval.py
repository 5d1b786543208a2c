"""BM25 retrieval over a local JSONL document collection.

Each line is ``{"id": ..., "text": ...}`` (``title`` optional). Every retrieved passage keeps its
document id so an injected fact can always be traced to its source.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from pydantic import Field

from medgate.errors import InputError
from medgate.records import Record

_TOKEN = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "does",
        "do",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "what",
        "which",
        "with",
        "whether",
        "than",
        "not",
        "no",
        "yes",
    ]
)


def tokenize(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOPWORDS]


class Document(Record):
    id: str
    text: str
    title: str = ""


class Hit(Record):
    document: Document
    score: float = Field(description="BM25 score; higher is more relevant.")


class BM25Index:
    """Okapi BM25 (k1=1.5, b=0.75) over tokenised documents; small enough to hold in memory."""

    def __init__(self, documents: Iterable[Document], k1: float = 1.5, b: float = 0.75) -> None:
        self.documents = list(documents)
        self.k1, self.b = k1, b
        self._tf = [Counter(tokenize(f"{d.title} {d.text}")) for d in self.documents]
        self._len = [sum(tf.values()) for tf in self._tf]
        self._avg = (sum(self._len) / len(self._len)) if self._len else 0.0
        df: Counter[str] = Counter()
        for tf in self._tf:
            df.update(tf.keys())
        n = len(self.documents)
        self._idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    @classmethod
    def from_jsonl(cls, path: Path) -> BM25Index:
        docs = []
        try:
            with path.open(encoding="utf-8") as fh:
                for lineno, line in enumerate(fh, 1):
                    if line.strip():
                        try:
                            docs.append(Document.model_validate(json.loads(line)))
                        except ValueError as exc:
                            raise InputError(
                                f"{path}:{lineno}: not a corpus document: {exc}"
                            ) from exc
        except OSError as exc:
            raise InputError(f"cannot read corpus {path}: {exc}") from exc
        return cls(docs)

    def search(self, query: str, k: int = 5, exclude: Iterable[str] = ()) -> list[Hit]:
        skip = set(exclude)
        terms = tokenize(query)
        hits = []
        for doc, tf, length in zip(self.documents, self._tf, self._len, strict=True):
            if doc.id in skip:
                continue
            score = 0.0
            for t in terms:
                f = tf.get(t, 0)
                if f:
                    norm = self.k1 * (1 - self.b + self.b * length / (self._avg or 1.0))
                    score += self._idf[t] * f * (self.k1 + 1) / (f + norm)
            if score > 0:
                hits.append(Hit(document=doc, score=score))
        hits.sort(key=lambda h: (-h.score, h.document.id))
        return hits[:k]
