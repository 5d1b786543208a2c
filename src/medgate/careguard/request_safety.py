"""The request-safety classifier: refuses a harmful request before any answer is drafted.

CareGuard's generator, a small model, complies with harmful requests phrased as ordinary clinical
tasks ("Draft a policy that ...", "How can a doctor ..."), and the keyword rules cannot name
every way to ask for harm. So a logistic regression scores the probability that a request asks
for help to harm, deceive or treat people unethically, over two blocks of features: the
question's sentence embedding (:mod:`medgate.embeddings`, all-MiniLM-L6-v2), and the TF-IDF of
its word unigrams and bigrams (:func:`ngrams`), which carry the markers of intent that do not
depend on the topic ("without their consent", "falsely", "to hide", "regardless of"). It is
fitted on MedSafetyBench's harmful requests, harmful requests written for medgate, and benign
requests of the same shapes (:mod:`medgate.careguard.request_safety_fit`).

The artifact is plain JSON (weights, the n-gram vocabulary and its IDF, threshold and training
provenance), so applying it runs no pickled code and needs no scikit-learn, only numpy and the
encoder; an artifact fitted on another encoder is refused. A request screen is a registered
component (entry-point group ``medgate.request_screens``; ``careguard.request_safety.screen``
names it), so another scorer can take this one's place without a change here.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np
import numpy.typing as npt
from pydantic import Field, ValidationError

from medgate.careguard.records import RequestSafety
from medgate.config import MedgateConfig
from medgate.embeddings import SentenceEmbedder
from medgate.errors import InputError, PrerequisiteError
from medgate.plugins import Registry
from medgate.records import Record

if TYPE_CHECKING:
    from medgate.backends.pool import ModelPool

DATA_DIR = Path(__file__).parent / "data"
ARTIFACT_FILE = DATA_DIR / "request_safety.json"
QUESTION_ARTIFACT_FILE = DATA_DIR / "request_safety_questions.json"
"""The question screen: fitted on harmful requests worded as questions, read beside the shipped
classifier (``medgate fit-request-safety --harm questions``)."""
HarmExamples = Literal["all", "questions", "both"]
Vectors = npt.NDArray[np.float64]
STATE_ARTIFACT_FILE = DATA_DIR / "request_safety_state.json"
"""The probe over the embedded model's reply state (``--encoder reply-state``)."""
REPLY_ARTIFACT_FILE = DATA_DIR / "reply_safety.json"
"""A classifier of the same format fitted on CareGuard's recorded drafts, labelled by the kind of
request they answer (``python scripts/reply_classifier.py``, docs/results/reply_classifier.md):
the reply screen reads drafts with it when ``reply_classifier`` is ``reply``."""
ARTIFACT_VERSION = 2
"""2: an n-gram TF-IDF block beside the embedding (1: the embedding alone)."""
REFIT = "refit it with `medgate fit-request-safety`"


class DataFile(Record):
    """One file the classifier was fitted or evaluated on, as it was then."""

    name: str = Field(description="Its path: under the data directory, or medgate:... if shipped.")
    sha256: str
    rows: int = Field(ge=0)
    role: str = Field(description="What it contributed: harmful, benign, or held-out benign.")


class SplitMetrics(Record):
    """Refusal rates of one part of the data at the shipped threshold."""

    n: int = Field(ge=0)
    refused: int = Field(ge=0)
    rate: float | None = Field(description="refused / n; None when n is 0.")


class Provenance(Record):
    """Where a fitted classifier came from, so its figures can be checked and it can be refitted."""

    created: str
    command: str
    seed: str = Field(description="Seed of the split hashes and the held-out category draw.")
    data: list[DataFile]
    heldout_categories: list[int] = Field(
        description="MedSafetyBench AMA principle categories kept out of fitting and choosing "
        "entirely (none for the shipped fit): their recall is for harm of a kind the "
        "classifier has not seen."
    )
    medsafetybench_train_ids: list[str] = Field(description="MedSafetyBench rows fitted on.")
    medsafetybench_validation_ids: list[str] = Field(
        description="MedSafetyBench rows the threshold and C were chosen on (never fitted)."
    )
    regularisation_c: float
    c_grid: list[float] = Field(
        description="The C values tried; the chosen one is best on "
        "validation recall at the false-refusal budget."
    )
    max_false_refusal_rate: float = Field(
        description="The budget for written clinician-style requests: on validation, each such "
        "benign kind's share refused is at most this."
    )
    max_question_false_refusal_rate: float = Field(
        description="The budget for questions (PubMedQA, BioASQ, patient questions) on validation."
    )
    ngram_scale_grid: list[float] = Field(
        description="The n-gram block scales tried (0: no n-gram block); the chosen one is "
        "best on validation recall."
    )
    threshold_rule: str
    encoder: str
    encoder_fingerprint: str
    encoder_kind: str = Field(
        default="minilm",
        description="Which encoder to build when applying it: minilm (a sentence encoder) or "
        "reply-state (the answering model's hidden state, bound to its weights).",
    )
    harm: HarmExamples = Field(
        default="all",
        description="Which harmful requests it learned from: all (MedSafetyBench's rows and "
        "the patient questions' harmful requests: the shipped classifier), questions (the "
        "harmful requests worded as questions alone: the question screen beside it) or both.",
    )
    sklearn_version: str
    train_counts: dict[str, int] = Field(description="Training rows by source.")
    validation: dict[str, SplitMetrics] = Field(description="Validation refusal rates by part.")
    heldout: dict[str, SplitMetrics] = Field(
        description="Held-out refusal rates by part, computed once when it was fitted "
        "(`medgate eval request-safety` recomputes them)."
    )


TOKEN_PATTERN = r"[a-z0-9]+(?:'[a-z]+)?"
_TOKEN = re.compile(TOKEN_PATTERN)


def ngrams(text: str, longest: int = 2) -> list[str]:
    """The request's word n-grams, 1 to ``longest`` words, lower-cased, in order.

    The fit hands this very function to scikit-learn's vectoriser as its analyser, so the terms
    counted when applying are the terms that were fitted.
    """
    tokens = _TOKEN.findall(text.lower())
    return [
        " ".join(tokens[i : i + n])
        for n in range(1, longest + 1)
        for i in range(len(tokens) - n + 1)
    ]


class NgramBlock(Record):
    """TF-IDF of word n-grams (sublinear term frequency, L2-normalised), times ``scale``."""

    longest: int = Field(ge=1, description="n-grams of 1 to this many words.")
    token_pattern: str = Field(default=TOKEN_PATTERN, description="What a word is (lower-cased).")
    min_df: int = Field(ge=1, description="Training requests a term had to occur in.")
    scale: float = Field(gt=0.0, description="The block's norm beside the unit embedding.")
    vocabulary: list[str] = Field(description="The terms, in feature order.")
    idf: list[float] = Field(description="Each term's smoothed inverse document frequency.")
    coef: list[float] = Field(description="One weight per term.")

    def vector(self, text: str, index: dict[str, int]) -> npt.NDArray[np.float64]:
        """The request's scaled TF-IDF vector over the vocabulary (``index``: term -> column)."""
        counts: dict[int, int] = {}
        for term in ngrams(text, self.longest):
            column = index.get(term)
            if column is not None:
                counts[column] = counts.get(column, 0) + 1
        row = np.zeros(len(self.vocabulary), dtype=np.float64)
        for column, count in counts.items():
            row[column] = (1.0 + math.log(count)) * self.idf[column]
        norm = float(np.linalg.norm(row))
        return row * (self.scale / norm) if norm > 0.0 else row


class RequestSafetyArtifact(Record):
    """The fitted weights and threshold, as JSON."""

    version: int = ARTIFACT_VERSION
    coef: list[float] = Field(description="One weight per embedding dimension.")
    ngrams: NgramBlock | None = Field(
        default=None, description="The n-gram block; None: the embedding alone."
    )
    intercept: float
    threshold: float = Field(ge=0.0, le=1.0, description="P(harmful) at or above which it refuses.")
    provenance: Provenance


def artifact_id(path: Path) -> str:
    """'request_safety.json v2 sha256:0123456789ab': which classifier scored a request."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return f"{path.name} v{ARTIFACT_VERSION} sha256:{digest[:12]}"


def read_artifact(path: Path = ARTIFACT_FILE) -> RequestSafetyArtifact:
    if not path.is_file():
        raise InputError(f"no request-safety classifier at {path}: {REFIT}")
    try:
        artifact = RequestSafetyArtifact.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as exc:
        raise InputError(f"{path} is not a request-safety classifier artifact ({exc})") from exc
    if artifact.version != ARTIFACT_VERSION:
        raise InputError(
            f"request-safety artifact version {artifact.version}, expected {ARTIFACT_VERSION}: "
            f"{REFIT}"
        )
    return artifact


def save_artifact(artifact: RequestSafetyArtifact, path: Path = ARTIFACT_FILE) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(artifact.model_dump(mode="json"), indent=1) + "\n", "utf-8")
    return path


class RequestScreen(Protocol):
    """Scores a request before any answer to it is drafted."""

    @property
    def name(self) -> str: ...

    def assess(self, question: str) -> RequestSafety:
        """The score of ``question``; raises when it cannot score (the gate then fails closed)."""
        ...


ScreenBuilder = Callable[[MedgateConfig, "ModelPool | None"], RequestScreen]
"""Builds a screen from the configuration and the gate's models (None: load its own)."""

REQUEST_SCREENS: Registry[ScreenBuilder] = Registry("medgate.request_screens", "request screen")
"""Request screens by name (entry-point group ``medgate.request_screens``)."""


class RequestSafetyClassifier:
    """Implements :class:`RequestScreen` from a fitted artifact and the encoder it was fitted on.

    ``threshold`` (configured) wins over the artifact's.
    """

    def __init__(
        self,
        artifact: RequestSafetyArtifact,
        embedder: SentenceEmbedder,
        *,
        artifact_name: str = "request_safety.json",
        threshold: float | None = None,
    ) -> None:
        if artifact.provenance.encoder_fingerprint != embedder.fingerprint:
            raise InputError(
                "the request-safety classifier was fitted on another sentence encoder "
                f"({artifact.provenance.encoder}, fingerprint "
                f"{artifact.provenance.encoder_fingerprint[:12]}), not {embedder.name} "
                f"({embedder.fingerprint[:12]}); {REFIT}"
            )
        if len(artifact.coef) != embedder.dimension:
            raise InputError(
                f"the request-safety classifier has {len(artifact.coef)} weights for a "
                f"{embedder.dimension}-dimensional encoder; {REFIT}"
            )
        block = artifact.ngrams
        if block is not None and not (len(block.vocabulary) == len(block.idf) == len(block.coef)):
            raise InputError(
                f"the request-safety classifier's n-gram block has {len(block.vocabulary)} terms, "
                f"{len(block.idf)} IDF values and {len(block.coef)} weights; {REFIT}"
            )
        self.artifact = artifact
        self.embedder = embedder
        self._index = (
            {term: i for i, term in enumerate(block.vocabulary)} if block is not None else {}
        )
        self._ngram_coef = (
            np.asarray(block.coef, dtype=np.float64) if block is not None else np.zeros(0)
        )
        self.artifact_name = artifact_name
        self.threshold = artifact.threshold if threshold is None else threshold
        self.threshold_source: Literal["artifact", "configured"] = (
            "artifact" if threshold is None else "configured"
        )
        self._coef = np.asarray(artifact.coef, dtype=np.float64)

    @property
    def name(self) -> str:
        return f"embedding:{self.artifact_name}"

    def scores(self, questions: Sequence[str], vectors: Vectors | None = None) -> list[float]:
        """P(harmful) of each question (an empty list for none); ``vectors``: their embeddings
        by this classifier's encoder, when already computed."""
        if not questions:
            return []
        if vectors is None:
            vectors = self.embedder.embed(list(questions)).astype(np.float64)
        if vectors.shape != (len(questions), len(self._coef)):
            raise InputError(
                f"the encoder returned vectors of shape {vectors.shape}, expected "
                f"({len(questions)}, {len(self._coef)})"
            )
        logits = vectors @ self._coef + self.artifact.intercept
        block = self.artifact.ngrams
        if block is not None:
            logits = logits + np.asarray(
                [block.vector(q, self._index) @ self._ngram_coef for q in questions]
            )
        return [float(p) for p in 1.0 / (1.0 + np.exp(-logits))]

    def assess(self, question: str, vectors: Vectors | None = None) -> RequestSafety:
        t0 = time.perf_counter()
        score = self.scores([question], vectors)[0]
        return RequestSafety(
            score=score,
            threshold=self.threshold,
            harmful=score >= self.threshold,
            artifact=self.artifact_name,
            threshold_source=self.threshold_source,
            seconds=time.perf_counter() - t0,
        )

    @classmethod
    def load(
        cls, embedder: SentenceEmbedder, path: Path = ARTIFACT_FILE, threshold: float | None = None
    ) -> RequestSafetyClassifier:
        return cls(
            read_artifact(path), embedder, artifact_name=artifact_id(path), threshold=threshold
        )


ENCODER_KINDS = ("minilm", "reply-state", "minilm+reply-state")


def request_encoder(
    config: MedgateConfig, kind: str, pool: ModelPool | None = None, *, cache: bool = False
) -> SentenceEmbedder:
    """The encoder a classifier of ``kind`` reads requests with.

    ``reply-state`` reads the hidden states of CareGuard's generator model (from ``pool`` when
    the gate has one; it must be an in-process GGUF); with ``cache`` its readings are kept under
    ``cache_dir/request_probe`` (for fitting).
    """
    from medgate.embeddings import INSTALL, default_embedder

    if kind == "minilm":
        try:
            return default_embedder(config.backend.n_threads or 1)
        except PrerequisiteError as exc:
            raise PrerequisiteError(
                f"the request-safety classifier needs sentence embeddings: {INSTALL} (or switch "
                "it off: MEDGATE_CAREGUARD__REQUEST_SAFETY__ENABLED=false)"
            ) from exc
    if kind == "minilm+reply-state":
        from medgate.embeddings import JoinedEmbedder

        return JoinedEmbedder(
            [
                request_encoder(config, "minilm", pool),
                request_encoder(config, "reply-state", pool, cache=cache),
            ]
        )
    if kind == "reply-state":
        from medgate.backends.pool import ModelPool
        from medgate.careguard.request_probe import FeatureCache
        from medgate.careguard.request_state import STATE_READING, ReplyStateEmbedder

        spec = config.careguard.spec("generator", config.model)
        model = (pool or ModelPool(config)).white_box(spec, role="request screen")
        if not hasattr(model, "state_reader"):
            raise PrerequisiteError(
                f"the reply-state request screen reads hidden states, which {model.name} does "
                "not expose: use an in-process GGUF model (llama.cpp) or the minilm classifier"
            )
        store = (
            FeatureCache(config.cache_dir / "request_probe", model.fingerprint, STATE_READING)
            if cache
            else None
        )
        return ReplyStateEmbedder(model, store)  # type: ignore[arg-type]
    raise InputError(f"unknown request encoder {kind!r}; known: {', '.join(ENCODER_KINDS)}")


class PairedScreen:
    """Implements :class:`RequestScreen` with two classifiers: the shipped one (``primary``,
    learned from harm of every wording) and the question screen (learned from harmful requests
    worded as questions, which the first scores as benign). A request is refused when either
    scores it at or above its own threshold; the reading returned is the one nearer to refusing
    (score minus threshold), so the trace names the classifier that decided."""

    def __init__(self, primary: RequestSafetyClassifier, questions: RequestSafetyClassifier):
        self.primary = primary
        self.questions = questions

    @property
    def name(self) -> str:
        return f"{self.primary.name}+{self.questions.name}"

    def assess(self, question: str) -> RequestSafety:
        t0 = time.perf_counter()
        # One embedding serves both when they read with the same encoder.
        vectors = (
            self.primary.embedder.embed([question]).astype(np.float64)
            if self.primary.embedder is self.questions.embedder
            else None
        )
        readings = (
            self.primary.assess(question, vectors),
            self.questions.assess(question, vectors),
        )
        decided = max(readings, key=lambda r: r.score - r.threshold)
        return decided.model_copy(update={"seconds": time.perf_counter() - t0})


def reply_reader(screen: RequestScreen) -> RequestScreen:
    """The screen that reads draft replies: the primary classifier of a pair (the reply
    threshold was chosen for it alone), else the screen itself."""
    return screen.primary if isinstance(screen, PairedScreen) else screen


def embedding_screen(config: MedgateConfig, pool: ModelPool | None = None) -> RequestScreen:
    """The ``embedding`` request screen: the shipped (or configured) fitted classifier, with the
    encoder it was fitted on, paired with the question screen unless that is switched off."""
    settings = config.careguard.request_safety
    path = settings.artifact or ARTIFACT_FILE
    artifact = read_artifact(path)
    encoder = request_encoder(config, artifact.provenance.encoder_kind, pool)
    primary = RequestSafetyClassifier(
        artifact, encoder, artifact_name=artifact_id(path), threshold=settings.threshold
    )
    if not settings.question_screen:
        return primary
    question_path = settings.question_artifact or QUESTION_ARTIFACT_FILE
    second = read_artifact(question_path)
    if second.provenance.encoder_kind != artifact.provenance.encoder_kind:
        encoder = request_encoder(config, second.provenance.encoder_kind, pool)
    return PairedScreen(
        primary,
        RequestSafetyClassifier(
            second,
            encoder,
            artifact_name=artifact_id(question_path),
            threshold=settings.question_threshold,
        ),
    )


def build_request_screen(
    config: MedgateConfig, pool: ModelPool | None = None
) -> RequestScreen | None:
    """The configured request screen, or None when it is switched off."""
    settings = config.careguard.request_safety
    if not settings.enabled:
        return None
    return REQUEST_SCREENS.load(settings.screen)(config, pool)


#: The reply threshold of the shipped classifier, chosen on replies to validation requests only
#: (``python scripts/reply_screen.py --choose``, docs/results/reply_screen.md). It belongs to that
#: artifact's weights, so it applies only while the artifact in use has this sha256.
SHIPPED_REPLY_THRESHOLD = 0.5203387761316506
SHIPPED_REPLY_ARTIFACT_SHA256 = "18a5f3ff31f76120cd6c374c317bc1c7c03b41cf4599b1c783a7ab4d9bfcbd2f"


@dataclass(frozen=True)
class ReplyScreen:
    """Where each draft reply is read too: refuse at or above ``threshold``. ``reader`` None:
    the request screen reads it (:func:`reply_reader`); else a classifier fitted on replies."""

    threshold: float
    source: Literal["artifact", "configured"]
    reader: RequestSafetyClassifier | None = None

    def read(self, screen: RequestScreen, draft: str) -> RequestSafety:
        """The draft's score against the reply threshold."""
        reader = self.reader if self.reader is not None else reply_reader(screen)
        reading = reader.assess(draft)
        return RequestSafety(
            score=reading.score,
            threshold=self.threshold,
            harmful=reading.score >= self.threshold,
            artifact=reading.artifact,
            threshold_source=self.source,
            seconds=reading.seconds,
        )


def reply_screen(config: MedgateConfig) -> ReplyScreen | None:
    """The reply screen the configuration asks for, or None: switched off, or no threshold
    known for the classifier in use (a configured threshold always applies)."""
    settings = config.careguard.request_safety
    if not (settings.enabled and settings.reply_screen):
        return None
    if settings.reply_classifier == "reply":
        path = settings.reply_artifact or REPLY_ARTIFACT_FILE
        fitted = read_artifact(path)
        reader = RequestSafetyClassifier(
            fitted,
            request_encoder(config, fitted.provenance.encoder_kind),
            artifact_name=artifact_id(path),
            threshold=settings.reply_threshold,
        )
        return ReplyScreen(reader.threshold, reader.threshold_source, reader)
    if settings.reply_threshold is not None:
        return ReplyScreen(settings.reply_threshold, "configured")
    path = settings.artifact or ARTIFACT_FILE
    if settings.screen != "embedding" or not path.is_file():
        return None
    if hashlib.sha256(path.read_bytes()).hexdigest() != SHIPPED_REPLY_ARTIFACT_SHA256:
        return None
    return ReplyScreen(SHIPPED_REPLY_THRESHOLD, "artifact")


def used_medsafetybench_ids(path: Path = ARTIFACT_FILE) -> frozenset[str]:
    """The MedSafetyBench rows the shipped classifier was fitted or chosen on."""
    p = read_artifact(path).provenance
    return frozenset([*p.medsafetybench_train_ids, *p.medsafetybench_validation_ids])


def medsafetybench_digest(path: Path = ARTIFACT_FILE) -> str | None:
    """sha256 of the MedSafetyBench file the shipped classifier was fitted on."""
    for f in read_artifact(path).provenance.data:
        if f.role == "harmful" and "medsafetybench" in f.name:
            return f.sha256
    return None
