"""The embedded default backend: GGUF models on the CPU through llama-cpp-python.

White-box generation runs on medgate's own llama.cpp context (:mod:`llamacpp_engine`), so that
we control what the signals need: per-token log-probabilities at temperature 1, seeded sampling
with numpy's generator, forbidden tokens before a minimum length, the label distribution at the
answer slot, and several continuations of one prompt decoded in parallel from one cached prompt.
Chat (the agent roles, with JSON-schema grammars) goes through llama-cpp-python's completion API.
Both tokenise the prompt through :func:`~medgate.backends.chat_template.encode_prompt`: only the
chat template's own markup may produce special tokens, never text inside a message.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from medgate.backends.base import (
    ChatMessage,
    ChatReply,
    Completion,
    DecodeParams,
    label_surface_forms,
    renormalise,
)
from medgate.backends.chat_template import ChatTemplate, encode_prompt
from medgate.backends.embedded import EMBEDDED_MODELS, resolve_embedded, sha256_of
from medgate.backends.llamacpp_engine import ContinuationSpec, Engine
from medgate.backends.llamacpp_state import HiddenStateReader
from medgate.errors import ConfigError, ContextOverflowError, ModelError, PrerequisiteError
from medgate.records import Usage

if TYPE_CHECKING:
    from llama_cpp import Llama

    from medgate.config import MedgateConfig


#: Token texts that would start the answer line; forbidden until the minimum reasoning length.
ANSWER_PREFIXES = ("ans", "answ", "answe", "answer")


_quiet: Any = None


def _import_llama() -> type[Llama]:
    global _quiet
    try:
        import llama_cpp
        from llama_cpp import Llama
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise PrerequisiteError(
            "llama-cpp-python is not installed; "
            "install it with: pip install llama-cpp-python==0.3.36"
        ) from exc
    if _quiet is None:
        # llama.cpp logs every context creation to stderr, which would mix into CLI output.
        # The callback object must stay referenced for as long as the library may call it.
        _quiet = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
        llama_cpp.llama_log_set(_quiet, None)
    return Llama


class LlamaCppModel:
    """A GGUF model loaded with llama-cpp-python; implements ``WhiteBoxModel``.

    Calls are serialised with a lock: one llama context is not safe to share between threads.
    """

    def __init__(
        self,
        path: Path,
        *,
        name: str,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        sha256: str | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        if not path.is_file():
            raise PrerequisiteError(
                f"model file {path} does not exist; set MEDGATE_MODEL to a .gguf file or "
                "use an embedded model (medgate models lists them)"
            )
        Llama = _import_llama()
        self.path = path
        self._name = name
        self._sha256 = sha256
        self._cache_dir = cache_dir
        self._threads = n_threads or os.cpu_count() or 1
        self._lock = threading.RLock()
        try:
            self.llm = Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=self._threads,
                n_threads_batch=self._threads,
                logits_all=False,
                verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"llama.cpp could not load {path}: {exc}") from exc
        self._embedder: Any = None
        self._vocab = self.llm.n_vocab()
        self._eog = np.array([t for t in range(self._vocab) if self._is_eog(t)], dtype=np.int64)
        self._eog_set = {int(t) for t in self._eog}
        self._banned_cache: dict[tuple[str, ...], npt.NDArray[np.int64]] = {}
        self._label_cache: dict[tuple[str, ...], dict[str, list[int]]] = {}
        #: The GGUF's chat template; a server on the same file renders prompts with it too.
        self.chat_template = gguf_chat_template(self.llm, path)
        self._formatter = self.chat_template.formatter
        self._chat_sampling = self._chat_defaults()
        # White-box work runs on a context of its own with parallel sequences; chat uses llm's.
        self._engine = Engine(self.llm._model, n_ctx=n_ctx, n_threads=self._threads)
        self._state_reader: HiddenStateReader | None = None

    # -- identity -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def threads(self) -> int:
        """CPU threads llama.cpp uses for this model (``backend.n_threads``, else every core)."""
        return self._threads

    @property
    def fingerprint(self) -> str:
        if self._sha256 is None:
            self._sha256 = _cached_sha256(self.path, self._cache_dir)
        return self._sha256

    # -- tokens -----------------------------------------------------------------------------
    def _is_eog(self, token: int) -> bool:
        import llama_cpp

        vocab = llama_cpp.llama_model_get_vocab(self.llm.model)
        return bool(llama_cpp.llama_vocab_is_eog(vocab, token))

    def _piece(self, token: int) -> str:
        return self.llm.detokenize([token]).decode("utf-8", errors="ignore")

    def _tokens(self, text: str, special: bool = False) -> list[int]:
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=special))

    def _banned(self, stops: tuple[str, ...]) -> npt.NDArray[np.int64]:
        """End-of-generation tokens plus tokens that start a stop word or the answer line."""
        if stops not in self._banned_cache:
            starts = tuple(s.strip().lower() for s in stops if s.strip()) + ANSWER_PREFIXES
            ids = [
                t
                for t in range(self._vocab)
                if (p := self._piece(t).strip().lower())
                and any(s.startswith(p) or p.startswith(s) for s in starts if len(p) >= 3)
            ]
            self._banned_cache[stops] = np.union1d(self._eog, np.array(ids, dtype=np.int64))
        return self._banned_cache[stops]

    # -- prompts ----------------------------------------------------------------------------
    def _chat_defaults(self) -> dict[str, Any]:
        """Sampling settings of llama-cpp-python's own chat completion for a GGUF template,
        so that chat replies are what ``create_chat_completion`` gave before medgate tokenised
        the prompt itself: stop at the template's end-of-sequence token, and its defaults."""
        import llama_cpp

        eos_id = self.llm.token_eos()

        def at_eos(tokens: Any, logits: Any) -> bool:
            return bool(tokens[-1] == eos_id)

        return {
            "top_p": 0.95,
            "top_k": 40,
            "min_p": 0.05,
            "typical_p": 1.0,
            "repeat_penalty": 1.0,
            "stop": [self._formatter.eos_token] if self._formatter.eos_token else [],
            "stopping_criteria": llama_cpp.StoppingCriteriaList([at_eos]),
        }

    def render(self, messages: Sequence[ChatMessage]) -> str:
        """The prompt text of ``messages`` (for reading; :meth:`prompt_tokens` is what runs)."""
        return self._render_turns([m.model_dump() for m in messages])

    def _render_turns(self, turns: list[dict[str, str]]) -> str:
        return str(self._formatter(messages=turns).prompt)

    def prompt_tokens(self, messages: Sequence[ChatMessage]) -> list[int]:
        """The prompt's tokens: the template's special tokens as such, message text as plain
        text (a ``<|im_start|>`` typed into a question stays characters, not a turn)."""
        return encode_prompt(self._render_turns, messages, self._tokens)

    # -- white-box operations ---------------------------------------------------------------
    def text(self, tokens: list[int]) -> str:
        return self.llm.detokenize(tokens).decode("utf-8", errors="ignore")

    def is_end(self, token: int) -> bool:
        return token in self._eog_set

    def forget_prompt(self) -> None:
        """Drop the cached prompt state (the white-box engine's and chat's), so the next call
        reads its prompt from scratch.

        A prompt sharing a prefix with the previous one is decoded from where they part, in
        batches that start there: other matrix shapes than a fresh read, so its logits differ
        in the last bits and a greedy continuation can take another token. Forgetting makes a
        call's numbers independent of the calls made before it in this process.
        """
        with self._lock:
            self._engine.forget()
            llm: Any = self.llm  # llama-cpp-python is untyped
            llm.reset()

    def _label_ids(self, labels: tuple[str, ...]) -> dict[str, list[int]]:
        if labels not in self._label_cache:
            self._label_cache[labels] = {
                label: sorted({self._tokens(form)[0] for form in label_surface_forms(label)})
                for label in labels
            }
        return self._label_cache[labels]

    def complete(self, messages: Sequence[ChatMessage], params: DecodeParams) -> Completion:
        return self.complete_batch(messages, [params])[0]

    def complete_batch(
        self, messages: Sequence[ChatMessage], params: Sequence[DecodeParams]
    ) -> list[Completion]:
        """Continue the same prompt once per entry of ``params``, all in one parallel pass."""
        with self._lock:
            t0 = time.perf_counter()
            try:
                return self._complete_batch(messages, params, t0)
            except ModelError:
                raise
            except Exception as exc:
                raise ModelError(f"llama.cpp generation failed: {exc}") from exc

    def _complete_batch(
        self, messages: Sequence[ChatMessage], params: Sequence[DecodeParams], t0: float
    ) -> list[Completion]:
        prompt = self.prompt_tokens(messages)
        # Room for the longest continuation and its answer cue (a character is at most a token);
        # the engine itself keeps 64 free.
        longest = max(
            p.max_tokens + (len(p.answer_slot.cue) if p.answer_slot else 0) for p in params
        )
        room = max(64, longest + 8)
        if len(prompt) + room >= self._engine.n_ctx:
            raise ContextOverflowError(
                f"a prompt of {len(prompt)} tokens leaves no room for {room} more in the "
                f"context of {self._engine.n_ctx} (backend.n_ctx)",
                prompt_tokens=len(prompt),
                limit=self._engine.n_ctx - room - 1,
            )
        specs = [
            ContinuationSpec(
                max_tokens=p.max_tokens,
                temperature=p.temperature,
                seed=p.seed,
                min_tokens=p.min_tokens,
                stop=p.stop,
                banned=self._banned(p.stop),
                cue=tuple(self._tokens(p.answer_slot.cue)) if p.answer_slot else (),
                repeat_penalty=p.repeat_penalty,
                repeat_last_n=p.repeat_last_n,
            )
            for p in params
        ]
        results = self._engine.run(prompt, specs, self)
        seconds = time.perf_counter() - t0
        out = []
        for p, r in zip(params, results, strict=True):
            label_probs = label_mass = opening_probs = opening_mass = None
            if p.answer_slot is not None and r.final_logprobs is not None:
                labels = p.answer_slot.labels
                label_probs, label_mass = self._label_reading(r.final_logprobs, labels)
                opening_probs, opening_mass = self._label_reading(r.opening_logprobs, labels)
            out.append(
                Completion(
                    text=r.text,
                    token_logprobs=r.logprobs,
                    label_probs=label_probs,
                    label_mass=label_mass,
                    opening_label_probs=opening_probs,
                    opening_label_mass=opening_mass,
                    prompt_tokens=len(prompt),
                    seconds=seconds,
                )
            )
        return out

    def score_text(self, messages: Sequence[ChatMessage], text: str) -> list[float]:
        """Log-probability of each token of ``text`` as the assistant's reply to ``messages``
        (:class:`~medgate.backends.base.TextScorer`)."""
        with self._lock:
            try:
                return self._engine.score(self.prompt_tokens(messages), self._tokens(text))
            except ModelError:
                raise
            except Exception as exc:
                raise ModelError(f"llama.cpp scoring failed: {exc}") from exc

    def _label_reading(
        self, logprobs: npt.NDArray[np.float64], labels: tuple[str, ...]
    ) -> tuple[dict[str, float], float]:
        """The renormalised label distribution in one next-token distribution, and the raw
        mass the labels' surface forms had in it."""
        probs = np.exp(logprobs)
        raw = {label: float(probs[i].sum()) for label, i in self._label_ids(labels).items()}
        return renormalise(raw), float(sum(raw.values()))

    def state_reader(self) -> HiddenStateReader:
        """A reader of this model's final hidden states (a context of its own, made once)."""
        with self._lock:
            if self._state_reader is None:
                try:
                    self._state_reader = HiddenStateReader(self.llm._model, n_threads=self._threads)
                except Exception as exc:
                    raise ModelError(f"llama.cpp could not open a state context: {exc}") from exc
            return self._state_reader

    def embed(self, text: str) -> list[float]:
        with self._lock:
            try:
                if self._embedder is None:
                    import llama_cpp

                    self._embedder = _import_llama()(
                        model_path=str(self.path),
                        n_ctx=512,
                        n_batch=512,
                        n_threads=self._threads,
                        n_threads_batch=self._threads,
                        embedding=True,
                        pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
                        verbose=False,
                    )
                vector = self._embedder.embed(text, truncate=True)
            except Exception as exc:
                raise ModelError(f"llama.cpp embedding failed: {exc}") from exc
        flat = vector[0] if vector and isinstance(vector[0], list) else vector
        return [float(x) for x in flat]

    # -- chat -------------------------------------------------------------------------------
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
        with self._lock:
            t0 = time.perf_counter()
            try:
                out: Any = self.llm.create_completion(
                    prompt=self.prompt_tokens(messages),
                    max_tokens=max_tokens,
                    temperature=temperature,
                    seed=seed if seed is not None else 0,
                    grammar=_json_grammar(json_schema) if json_schema is not None else None,
                    **self._chat_sampling,
                )
            except Exception as exc:
                raise ModelError(f"llama.cpp chat failed: {exc}") from exc
        text = out["choices"][0]["text"] or ""
        usage = out.get("usage") or {}
        return ChatReply(
            text=text,
            usage=Usage(
                role=role,
                model=self._name,
                prompt_tokens=int(usage.get("prompt_tokens", 0)),
                completion_tokens=int(usage.get("completion_tokens", 0)),
                seconds=time.perf_counter() - t0,
            ),
        )


def gguf_chat_template(llm: Llama, path: Path) -> ChatTemplate:
    """The chat template in a loaded GGUF's metadata, with its BOS and EOS token texts."""
    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        raise ConfigError(f"{path} has no chat template in its metadata")

    def token_text(key: str) -> str:
        # The token's own text ("<|im_end|>"), as llama-cpp-python gives its templates;
        # detokenising a special token would give "".
        tid = llm.metadata.get(key)
        return str(llm._model.token_get_text(int(tid))) if tid is not None else ""

    return ChatTemplate(
        template=template,
        eos_token=token_text("tokenizer.ggml.eos_token_id"),
        bos_token=token_text("tokenizer.ggml.bos_token_id"),
        source=str(path),
    )


def load_chat_template(source: str, cache_dir: Path) -> ChatTemplate:
    """A served model's chat template (``backend.chat_template``), read from ``source``:

    * ``embedded:NAME`` -- the embedded model's GGUF (assembled and verified first);
    * a ``.gguf`` file -- its ``tokenizer.chat_template`` and BOS/EOS token texts (only the
      vocabulary is loaded, not the weights);
    * a ``.json`` file -- a Hugging Face ``tokenizer_config.json`` (``chat_template``,
      ``bos_token``, ``eos_token``);
    * any other file -- the Jinja template itself, rendered without BOS/EOS texts.
    """
    if source.startswith("embedded:"):
        path = resolve_embedded(source.removeprefix("embedded:"), cache_dir)
    else:
        path = Path(source).expanduser()
    if not path.is_file():
        raise ConfigError(f"backend.chat_template: {path} is not a file")
    if path.suffix.lower() == ".gguf":
        Llama = _import_llama()
        try:
            llm = Llama(model_path=str(path), vocab_only=True, verbose=False)
        except (ValueError, RuntimeError) as exc:
            raise ConfigError(f"backend.chat_template: cannot read {path}: {exc}") from exc
        try:
            import llama_cpp

            vocab = llama_cpp.llama_model_get_vocab(llm.model)
            ends = tuple(
                str(llm._model.token_get_text(t))
                for t in range(llm.n_vocab())
                if llama_cpp.llama_vocab_is_eog(vocab, t)
            )
            return replace(gguf_chat_template(llm, path), end_tokens=ends)
        finally:
            llm.close()
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() != ".json":
        return ChatTemplate(template=text, source=str(path))
    try:
        config = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"backend.chat_template: {path} is not JSON ({exc})") from exc
    template = config.get("chat_template") if isinstance(config, dict) else None
    if isinstance(template, list):  # several named templates: the default one
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default")
    if not isinstance(template, str) or not template:
        raise ConfigError(f"backend.chat_template: {path} holds no chat_template")

    def token(key: str) -> str:
        value = config.get(key)
        if isinstance(value, dict):  # {"content": "<s>", ...}
            value = value.get("content")
        return value if isinstance(value, str) else ""

    bos, eos = token("bos_token"), token("eos_token")
    return ChatTemplate(
        template=template,
        bos_token=bos,
        eos_token=eos,
        source=str(path),
        end_tokens=tuple(t for t in (eos, bos) if t),
    )


def _json_grammar(schema: Mapping[str, Any]) -> Any:
    """A grammar that holds decoding to ``schema`` (plain JSON where the converter cannot)."""
    from llama_cpp.llama_grammar import JSON_GBNF, LlamaGrammar

    try:
        return LlamaGrammar.from_json_schema(json.dumps(dict(schema)), verbose=False)
    except Exception:  # the converter does not know every keyword; the reply is validated anyway
        return LlamaGrammar.from_string(JSON_GBNF, verbose=False)


def _cached_sha256(path: Path, cache_dir: Path | None) -> str:
    """sha256 of a model file, remembered per (path, size, mtime) since hashing GBs is slow."""
    st = path.stat()
    key = hashlib.sha256(f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()
    memo = (cache_dir / "fingerprints" / f"{key}.json") if cache_dir else None
    if memo is not None and memo.is_file():
        return str(json.loads(memo.read_text())["sha256"])
    digest = sha256_of(path)
    if memo is not None:
        memo.parent.mkdir(parents=True, exist_ok=True)
        memo.write_text(json.dumps({"path": str(path), "sha256": digest}))
    return digest


class LlamaCppBackend:
    """Entry point for ``llamacpp:PATH`` and ``embedded:NAME`` specs."""

    @classmethod
    def from_spec(cls, target: str, config: MedgateConfig) -> LlamaCppModel:
        opts = config.backend
        if target in EMBEDDED_MODELS or target.startswith("embedded:"):
            name = target.removeprefix("embedded:")
            path = resolve_embedded(name, config.cache_dir)
            return LlamaCppModel(
                path,
                name=f"embedded:{name}",
                n_ctx=opts.n_ctx,
                n_threads=opts.n_threads,
                sha256=EMBEDDED_MODELS[name].sha256,
                cache_dir=config.cache_dir,
            )
        if not target:
            raise ConfigError("llamacpp needs a path: llamacpp:/path/to/model.gguf")
        path = Path(target).expanduser()
        return LlamaCppModel(
            path,
            name=f"llamacpp:{path.name}",
            n_ctx=opts.n_ctx,
            n_threads=opts.n_threads,
            cache_dir=config.cache_dir,
        )


class EmbeddedBackend(LlamaCppBackend):
    """Entry point for ``embedded:NAME``: a model shipped inside a PyPI package."""

    @classmethod
    def from_spec(cls, target: str, config: MedgateConfig) -> LlamaCppModel:
        if target not in EMBEDDED_MODELS:
            known = ", ".join(sorted(EMBEDDED_MODELS))
            raise ConfigError(f"unknown embedded model {target!r}; known: {known}")
        return super().from_spec(f"embedded:{target}", config)
