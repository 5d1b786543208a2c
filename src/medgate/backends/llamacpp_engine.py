"""Parallel continuation of one prompt on a llama.cpp context of medgate's own.

The prompt is evaluated once into sequence 0 of the KV cache and kept there for later calls with
the same prompt (or a shared prefix). Each continuation gets its own sequence, copied from
sequence 0, and all continuations advance together: one decode call per step carries one token
of every live sequence, which on a CPU costs little more than a single token because the weights
are read once per call.

On one CPU thread a decode call of four tokens still costs about three of one token (measured:
docs/hrs.md), so continuations that have produced exactly the same tokens are decoded once: their
next token goes into the batch once, tagged with all their sequences, and they share its logits.
A low-temperature sample often repeats the greedy reasoning word for word; it then costs nothing
until it picks a different token, and from there on it runs in its own sequence. Results are the
ones separate decoding gives, since a shared cell holds the same token at the same position.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from medgate.errors import ModelError

Logits = npt.NDArray[np.float32]
FloatArray = npt.NDArray[np.float64]
IdArray = npt.NDArray[np.int64]

#: Parallel continuations one engine can run; sequence 0 holds the prompt.
MAX_PARALLEL = 8


def log_softmax(logits: npt.NDArray[np.floating[Any]]) -> FloatArray:
    x: FloatArray = logits.astype(np.float64)
    x -= x.max()
    out: FloatArray = x - np.log(np.exp(x).sum())
    return out


def penalise_repeats(
    logits: npt.NDArray[np.floating[Any]], tokens: Sequence[int], penalty: float, last_n: int
) -> FloatArray:
    """``logits`` with every token among the last ``last_n`` of ``tokens`` made less likely,
    as llama.cpp's repeat penalty does: a positive logit divided by ``penalty``, a negative one
    multiplied by it."""
    out: FloatArray = logits.astype(np.float64)
    recent = np.unique(np.asarray(tokens[-last_n:], dtype=np.int64))
    if recent.size:
        values = out[recent]
        out[recent] = np.where(values > 0, values / penalty, values * penalty)
    return out


class Vocabulary(Protocol):
    def text(self, tokens: list[int]) -> str: ...

    def is_end(self, token: int) -> bool: ...


@dataclass(frozen=True)
class ContinuationSpec:
    """How to continue the prompt once."""

    max_tokens: int
    temperature: float = 0.0
    seed: int | None = None
    min_tokens: int = 0
    stop: tuple[str, ...] = ()
    banned: IdArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Tokens forbidden before ``min_tokens`` (end of turn, stop words)."""
    cue: tuple[int, ...] = ()
    """Tokens to append after the continuation before reading the final distribution."""
    repeat_penalty: float = 1.0
    """Logit penalty for tokens among the last ``repeat_last_n`` generated (1: none)."""
    repeat_last_n: int = 64


@dataclass
class ContinuationResult:
    tokens: list[int]
    logprobs: list[float]
    text: str
    final_logprobs: FloatArray | None
    """Log-probabilities of the next token after the cue (None without a cue)."""
    opening_logprobs: FloatArray
    """Log-probabilities of the first generated token, before any token is forbidden."""


@dataclass
class _State:
    spec: ContinuationSpec
    seq: int
    logits: Logits
    rng: np.random.Generator
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    text: str = ""
    in_cache: int = 0
    done: bool = False


def sampling_cdf(pick: FloatArray, temperature: float) -> FloatArray:
    """Cumulative distribution of ``softmax(pick / temperature)``, normalised as
    ``Generator.choice`` normalises its ``p`` (so a draw against it picks the same token)."""
    z = pick / temperature
    p = np.exp(z - z.max())
    cdf: FloatArray = (p / p.sum()).cumsum()
    if not np.isfinite(cdf[-1]) or cdf[-1] <= 0:
        raise ModelError("the model's next-token distribution is not finite")
    cdf /= cdf[-1]
    return cdf


def _pick(st: _State, lp: FloatArray, banned: bool) -> FloatArray:
    """The log-probabilities ``st`` picks its next token from: ``lp`` after the repeat
    penalty and with forbidden tokens removed (``lp`` itself when neither applies)."""
    spec = st.spec
    if spec.repeat_penalty != 1.0 and st.tokens:
        pick = log_softmax(
            penalise_repeats(st.logits, st.tokens, spec.repeat_penalty, spec.repeat_last_n)
        )
    elif banned:
        pick = lp.copy()
    else:
        return lp
    if banned:
        pick[spec.banned] = -np.inf
    return pick


class _StepMemo:
    """What one decoding step computes once for every continuation sharing a logits row."""

    def __init__(self) -> None:
        self._lp: dict[int, FloatArray] = {}
        self.cdfs: dict[tuple[object, ...], FloatArray] = {}

    def log_softmax(self, logits: Logits) -> FloatArray:
        # Rows are alive for the whole step, so their ids do not repeat within it.
        lp = self._lp.get(id(logits))
        if lp is None:
            lp = self._lp[id(logits)] = log_softmax(logits)
        return lp


class Engine:
    """Owns a llama.cpp context with several sequences and a batch to feed it."""

    def __init__(self, model: Any, *, n_ctx: int, n_threads: int, n_batch: int = 512) -> None:
        import llama_cpp
        from llama_cpp import _internals

        self._lib = llama_cpp
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = n_batch
        params.n_ubatch = n_batch
        params.n_seq_max = MAX_PARALLEL + 1
        params.kv_unified = True  # every sequence may use the whole context
        params.n_threads = n_threads
        params.n_threads_batch = n_threads
        params.embeddings = False
        params.no_perf = True
        self._ctx = _internals.LlamaContext(model=model, params=params, verbose=False)
        # A token may belong to every continuation at once (those that have not diverged).
        self._batch = _internals.LlamaBatch(
            n_tokens=n_batch, embd=0, n_seq_max=MAX_PARALLEL + 1, verbose=False
        )
        self.n_ctx = n_ctx
        self.n_batch = n_batch
        self.n_vocab = int(model.n_vocab())
        self._prompt: list[int] = []
        self._prompt_logits: Logits | None = None

    @property
    def _mem(self) -> Any:
        return self._lib.llama_get_memory(self._ctx.ctx)

    def forget(self) -> None:
        """Drop every cached token, so the next prompt is read from scratch."""
        self._lib.llama_memory_seq_rm(self._mem, -1, -1, -1)
        self._prompt, self._prompt_logits = [], None

    def _decode(
        self, entries: Sequence[tuple[int, int, int | Sequence[int], bool]]
    ) -> list[Logits]:
        """Decode (token, position, sequence(s), wants_logits) entries; logits in entry order."""
        out: list[Logits] = []
        for start in range(0, len(entries), self.n_batch):
            chunk = entries[start : start + self.n_batch]
            b = self._batch.batch
            for i, (tok, pos, seq, want) in enumerate(chunk):
                seqs = (seq,) if isinstance(seq, int) else tuple(seq)
                b.token[i] = tok
                b.pos[i] = pos
                b.n_seq_id[i] = len(seqs)
                for j, sid in enumerate(seqs):
                    b.seq_id[i][j] = sid
                b.logits[i] = want
            b.n_tokens = len(chunk)
            rc = self._lib.llama_decode(self._ctx.ctx, b)
            if rc != 0:
                raise ModelError(f"llama_decode returned {rc}")
            for i, entry in enumerate(chunk):
                if entry[3]:
                    ptr = self._lib.llama_get_logits_ith(self._ctx.ctx, i)
                    floats = ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float))
                    out.append(np.ctypeslib.as_array(floats, shape=(self.n_vocab,)).copy())
        return out

    def load_prompt(self, prompt: list[int]) -> Logits:
        """Make sequence 0 hold ``prompt``, reusing the longest cached prefix."""
        if not prompt or len(prompt) + 64 >= self.n_ctx:
            raise ModelError(f"a prompt of {len(prompt)} tokens does not fit ({self.n_ctx})")
        if prompt == self._prompt and self._prompt_logits is not None:
            return self._prompt_logits
        common = 0
        for a, b in zip(self._prompt, prompt, strict=False):
            if a != b:
                break
            common += 1
        common = min(common, len(prompt) - 1)  # re-read at least one token to get its logits
        self._lib.llama_memory_seq_rm(self._mem, 0, common, -1)
        self._prompt, self._prompt_logits = prompt[:common], None
        entries = [
            (t, common + i, 0, i == len(prompt) - common - 1) for i, t in enumerate(prompt[common:])
        ]
        (logits,) = self._decode(entries)
        self._prompt, self._prompt_logits = list(prompt), logits
        return logits

    def score(self, prompt: list[int], continuation: list[int]) -> list[float]:
        """Log-probability (at temperature 1) of each token of ``continuation`` after
        ``prompt``, read in one pass over a sequence of its own (teacher forcing)."""
        if not continuation:
            return []
        if len(prompt) + len(continuation) + 8 >= self.n_ctx:
            raise ModelError(
                f"{len(prompt)} prompt and {len(continuation)} scored tokens do not fit "
                f"({self.n_ctx})"
            )
        first = log_softmax(self.load_prompt(prompt))
        base, seq = len(prompt), 1
        self._lib.llama_memory_seq_rm(self._mem, seq, -1, -1)
        self._lib.llama_memory_seq_cp(self._mem, 0, seq, -1, -1)
        try:
            entries = [(t, base + i, seq, True) for i, t in enumerate(continuation[:-1])]
            rows = self._decode(entries) if entries else []
        finally:
            self._lib.llama_memory_seq_rm(self._mem, seq, -1, -1)
        out = [float(first[continuation[0]])]
        for row, token in zip(rows, continuation[1:], strict=True):
            out.append(float(log_softmax(row)[token]))
        return out

    def run(
        self, prompt: list[int], specs: Sequence[ContinuationSpec], vocab: Vocabulary
    ) -> list[ContinuationResult]:
        """Continue ``prompt`` once per spec, all in parallel."""
        if not 1 <= len(specs) <= MAX_PARALLEL:
            raise ModelError(f"between 1 and {MAX_PARALLEL} continuations per call")
        logits = self.load_prompt(prompt)
        base = len(prompt)
        states = [
            _State(spec=s, seq=i + 1, logits=logits, rng=np.random.default_rng(s.seed))
            for i, s in enumerate(specs)
        ]
        try:
            for st in states:
                self._lib.llama_memory_seq_rm(self._mem, st.seq, -1, -1)
                self._lib.llama_memory_seq_cp(self._mem, 0, st.seq, -1, -1)
            while live := [st for st in states if not st.done]:
                step = _StepMemo()
                moving = [st for st in live if self._advance(st, vocab, step)]
                if base + max(len(st.tokens) for st in states) + 8 >= self.n_ctx:
                    for st in states:
                        st.done = True
                if not moving:
                    continue
                # Continuations with the same tokens so far share their cells and logits.
                groups: dict[tuple[int, ...], list[_State]] = {}
                for st in moving:
                    groups.setdefault(tuple(st.tokens), []).append(st)
                entries = [
                    (toks[-1], base + len(toks) - 1, [st.seq for st in members], True)
                    for toks, members in groups.items()
                ]
                for members, row in zip(groups.values(), self._decode(entries), strict=True):
                    for st in members:
                        st.logits, st.in_cache = row, len(st.tokens)
            finals = self._read_cues(base, states)
        finally:
            for st in states:
                self._lib.llama_memory_seq_rm(self._mem, st.seq, -1, -1)
        opening = log_softmax(logits)
        return [
            ContinuationResult(st.tokens, st.logprobs, st.text, final, opening)
            for st, final in zip(states, finals, strict=True)
        ]

    def _advance(self, st: _State, vocab: Vocabulary, memo: _StepMemo) -> bool:
        """Pick ``st``'s next token; False when it ends instead (or needs no decode)."""
        spec = st.spec
        if len(st.tokens) >= spec.max_tokens:
            st.done = True
            return False
        lp = memo.log_softmax(st.logits)
        step = len(st.tokens)
        banned = step < spec.min_tokens and spec.banned.size > 0
        if spec.temperature <= 0:
            tok = int(np.argmax(_pick(st, lp, banned)))
        else:
            # Continuations that share logits (same tokens so far) and sampling settings share
            # one distribution; each still draws from its own generator.
            key: tuple[object, ...] = (
                id(st.logits),
                spec.temperature,
                spec.repeat_penalty,
                spec.repeat_last_n,
            )
            key += (id(spec.banned),) if banned else ()
            cdf = memo.cdfs.get(key)
            if cdf is None:
                cdf = memo.cdfs[key] = sampling_cdf(_pick(st, lp, banned), spec.temperature)
            # The draw Generator.choice(n, p=...) makes, without re-validating p every step.
            tok = int(cdf.searchsorted(st.rng.random(), side="right"))
        if vocab.is_end(tok):
            st.done = True
            return False
        st.tokens.append(tok)
        st.logprobs.append(float(lp[tok]))
        text = vocab.text(st.tokens)
        st.ends.append(len(text))
        cut = min((i for s in spec.stop if (i := text.find(s)) >= 0), default=-1)
        if cut >= 0 and step >= spec.min_tokens:
            keep = sum(1 for e in st.ends if e <= cut)
            del st.tokens[keep:], st.logprobs[keep:], st.ends[keep:]
            st.text, st.done = text[:cut], True
            return False
        st.text = text
        return True

    def _read_cues(self, base: int, states: list[_State]) -> list[FloatArray | None]:
        entries: list[tuple[int, int, int, bool]] = []
        owners: list[int] = []
        for i, st in enumerate(states):
            if not st.spec.cue:
                continue
            # The cache may hold a stop word the text no longer has: cut back, then re-feed.
            kept = min(st.in_cache, len(st.tokens))
            self._lib.llama_memory_seq_rm(self._mem, st.seq, base + kept, -1)
            feed = [*st.tokens[kept:], *st.spec.cue]
            for j, tok in enumerate(feed):
                entries.append((tok, base + kept + j, st.seq, j == len(feed) - 1))
            owners.append(i)
        finals: list[FloatArray | None] = [None] * len(states)
        if entries:
            for i, row in zip(owners, self._decode(entries), strict=True):
                finals[i] = log_softmax(row)
        return finals
