"""The model's final hidden state at the last position of a prompt, on a llama.cpp context.

A probe over this state (the vector from which the model would write the first token of its
reply) reads what the model made of a prompt without generating anything. The reader owns an
embedding context of its own on the weights the white-box engine already holds, so it adds a
context's memory, not a second copy of the model.

Prompts of one probe share a fixed opening (instructions, then the text being read). That opening
is decoded once and kept in the cache; each prompt then decodes only what follows it. Because the
split is always at the same token, a prompt's state does not depend on which prompt came before
it, and fitting and applying a probe read every prompt the same way.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from medgate.errors import ModelError

State = npt.NDArray[np.float32]


class HiddenStateReader:
    """Reads the final hidden state at a prompt's last token (pooling none, one sequence)."""

    def __init__(self, model: Any, *, n_ctx: int = 512, n_threads: int = 1) -> None:
        import llama_cpp
        from llama_cpp import _internals

        self._lib = llama_cpp
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = n_ctx
        params.n_ubatch = n_ctx
        params.n_seq_max = 1
        params.n_threads = n_threads
        params.n_threads_batch = n_threads
        params.embeddings = True
        params.pooling_type = llama_cpp.LLAMA_POOLING_TYPE_NONE
        params.no_perf = True
        self._ctx = _internals.LlamaContext(model=model, params=params, verbose=False)
        self._batch = _internals.LlamaBatch(n_tokens=n_ctx, embd=0, n_seq_max=1, verbose=False)
        self.n_ctx = n_ctx
        self.dimension = int(llama_cpp.llama_model_n_embd(model.model))
        self._prefix: list[int] = []
        self._lock = threading.Lock()

    def _decode(self, tokens: Sequence[int], start: int, want_last: bool) -> None:
        b = self._batch.batch
        for i, tok in enumerate(tokens):
            b.token[i] = tok
            b.pos[i] = start + i
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = 0
            b.logits[i] = want_last and i == len(tokens) - 1
        b.n_tokens = len(tokens)
        rc = self._lib.llama_decode(self._ctx.ctx, b)
        if rc != 0:
            raise ModelError(f"llama_decode returned {rc} while reading a hidden state")

    def read(self, prefix: Sequence[int], prompt: Sequence[int]) -> State:
        """The state after the last token of ``prompt``.

        ``prefix`` is the probe's fixed opening: decoded once, kept for later calls with the same
        prefix. A prompt that parts from it earlier (text whose first token merges with the
        opening's last) is read from where they part, its own opening decoded first.
        """
        prompt = list(prompt)
        if not prompt:
            raise ModelError("an empty prompt has no hidden state")
        if len(prompt) + 1 > self.n_ctx:
            raise ModelError(
                f"a prompt of {len(prompt)} tokens does not fit the state reader ({self.n_ctx})"
            )
        shared = 0
        for a, b in zip(prefix, prompt[:-1], strict=False):
            if a != b:
                break
            shared += 1
        opening = prompt[:shared]
        with self._lock:
            mem = self._lib.llama_get_memory(self._ctx.ctx)
            if opening != self._prefix:
                self._lib.llama_memory_seq_rm(mem, -1, -1, -1)
                self._prefix = []
                if opening:
                    self._decode(opening, 0, want_last=False)
                self._prefix = opening
            self._lib.llama_memory_seq_rm(mem, 0, shared, -1)
            self._decode(prompt[shared:], shared, want_last=True)
            ptr = self._lib.llama_get_embeddings_ith(self._ctx.ctx, -1)
            if not ptr:
                raise ModelError("llama.cpp returned no hidden state")
            floats = ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float))
            state: State = np.ctypeslib.as_array(floats, shape=(self.dimension,)).copy()
        if not np.all(np.isfinite(state)):
            raise ModelError("the hidden state is not finite")
        return state
