"""The learned claim detector: a sentence classifier on the shared sentence embeddings.

A multinomial logistic regression over all-MiniLM-L6-v2 embeddings (:mod:`medgate.embeddings`)
predicts "no claim" or a claim type. It is trained on the training part of the labelled
sentences that ship in ``claims/data/claim_sentences.jsonl`` and is asked only about sentences
the rules did not match, so the rules keep precedence for type and severity. The held-out part
is never used to fit or to choose anything.

The artifact is plain JSON (weights, classes, threshold and training provenance: the data's
sha256, the ids trained on, the seed, the cross-validated figures), so loading it runs no
pickled code and needs no scikit-learn; training does (``pip install 'medgate[eval]'``). An
artifact fitted on another encoder is refused.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, ValidationError

from medgate.claims.citations import without_citations
from medgate.claims.detection import LearnedVerdict
from medgate.claims.rules import ClaimType
from medgate.embeddings import SentenceEmbedder
from medgate.errors import InputError, PrerequisiteError
from medgate.records import Record

DATA_DIR = Path(__file__).parent / "data"
SENTENCES_FILE = DATA_DIR / "claim_sentences.jsonl"
ARTIFACT_FILE = DATA_DIR / "claim_detector.json"
ARTIFACT_VERSION = 1

#: The held-out part is decided by this seeded hash of each sentence id, before any detector ran.
SPLIT_SEED = "medgate-claims-2026"
HELD_OUT_PERCENT = 30

NO_CLAIM = "none"


class LabelledSentence(Record):
    """One sentence written for medgate and labelled by hand before any detector saw it."""

    id: str
    text: str
    group: str = Field(description="What the sentence was written to test (dose_words, ...).")
    claim_type: ClaimType | None = Field(description="The claim it makes, or None.")
    severity: str | None = Field(description="high, medium, low, or None for no claim.")
    cited: bool
    split: str = Field(description="train or heldout.")

    @property
    def must_flag(self) -> bool:
        """An uncited claim: what the uncited-claim flag should fire on."""
        return self.claim_type is not None and not self.cited


def split_of(sentence_id: str) -> str:
    digest = hashlib.sha256(f"{SPLIT_SEED}:{sentence_id}".encode()).hexdigest()
    return "heldout" if int(digest[:8], 16) % 100 < HELD_OUT_PERCENT else "train"


def load_sentences(path: Path = SENTENCES_FILE) -> list[LabelledSentence]:
    """The labelled sentences; a row whose split disagrees with the seeded hash is an error."""
    if not path.is_file():
        raise InputError(f"{path} is not a file")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = LabelledSentence.model_validate_json(line)
        except ValidationError as exc:
            raise InputError(f"{path}:{number}: not a labelled sentence ({exc})") from exc
        if row.split != split_of(row.id):
            raise InputError(f"{path}:{number}: split {row.split!r} is not the seeded split")
        rows.append(row)
    return rows


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class DetectorProvenance(Record):
    """Where a fitted detector came from, so its figures can be checked and it can be refitted."""

    data_file: str
    data_sha256: str
    train_ids: list[str]
    seed: int
    regularisation_c: float
    max_false_positive_rate: float
    encoder: str
    encoder_fingerprint: str
    sklearn_version: str
    created: str
    command: str
    cv_recall: float = Field(description="Out-of-fold recall of claims at the threshold.")
    cv_false_positive_rate: float = Field(description="Out-of-fold share of non-claims flagged.")
    cv_type_accuracy: float = Field(description="Out-of-fold type accuracy on true claims.")


class DetectorArtifact(Record):
    """The fitted weights and threshold, as JSON."""

    version: int = ARTIFACT_VERSION
    classes: list[str] = Field(description="'none' and the claim types, in weight-row order.")
    coef: list[list[float]]
    intercept: list[float]
    threshold: float = Field(ge=0.0, le=1.0, description="P(claim) at or above which it fires.")
    provenance: DetectorProvenance


def _softmax(scores: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    shifted = scores - scores.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    result: np.ndarray[Any, Any] = exp / exp.sum(axis=1, keepdims=True)
    return result


class LearnedClaimDetector:
    """Implements :class:`~medgate.claims.detection.ClaimDetector` from a fitted artifact."""

    def __init__(self, artifact: DetectorArtifact, embedder: SentenceEmbedder) -> None:
        if artifact.version != ARTIFACT_VERSION:
            raise InputError(
                f"claim detector artifact version {artifact.version}, expected "
                f"{ARTIFACT_VERSION}: refit it with `medgate fit-claims-detector`"
            )
        if artifact.provenance.encoder_fingerprint != embedder.fingerprint:
            raise InputError(
                "the claim detector was fitted on another sentence encoder "
                f"({artifact.provenance.encoder}); refit it with `medgate fit-claims-detector`"
            )
        self.artifact = artifact
        self.embedder = embedder
        self._coef = np.asarray(artifact.coef, dtype=np.float64)
        self._intercept = np.asarray(artifact.intercept, dtype=np.float64)
        self._none = artifact.classes.index(NO_CLAIM)
        self._types = [None if c == NO_CLAIM else ClaimType(c) for c in artifact.classes]

    @property
    def name(self) -> str:
        return f"learned:{self.embedder.name}"

    def probabilities(self, sentences: Sequence[str]) -> np.ndarray[Any, Any]:
        vectors = self.embedder.embed([without_citations(s) for s in sentences])
        return _softmax(vectors.astype(np.float64) @ self._coef.T + self._intercept)

    def predict(self, sentences: Sequence[str]) -> list[LearnedVerdict]:
        if not sentences:
            return []
        verdicts = []
        for row in self.probabilities(sentences):
            p_claim = float(1.0 - row[self._none])
            claim_type = None
            if p_claim >= self.artifact.threshold:
                masked = row.copy()
                masked[self._none] = -1.0
                claim_type = self._types[int(masked.argmax())]
            verdicts.append(
                LearnedVerdict(claim_type=claim_type, probability=min(1.0, max(0.0, p_claim)))
            )
        return verdicts

    @classmethod
    def load(cls, embedder: SentenceEmbedder, path: Path = ARTIFACT_FILE) -> LearnedClaimDetector:
        if not path.is_file():
            raise InputError(
                f"no claim detector at {path}: fit one with `medgate fit-claims-detector`"
            )
        try:
            artifact = DetectorArtifact.model_validate_json(path.read_text(encoding="utf-8"))
        except ValidationError as exc:
            raise InputError(f"{path} is not a claim detector artifact ({exc})") from exc
        return cls(artifact, embedder)


# --- training -----------------------------------------------------------------------------------


def _labels(rows: Sequence[LabelledSentence]) -> list[str]:
    return [r.claim_type.value if r.claim_type else NO_CLAIM for r in rows]


def choose_threshold(
    p_claim: Sequence[float], is_claim: Sequence[bool], max_false_positive_rate: float
) -> float:
    """The lowest threshold whose share of non-claims at or above it is within the budget.

    The lowest such threshold catches the most claims; a budget no threshold meets gives 1.0,
    which turns the classifier off rather than letting it flood the reader with flags.
    """
    negatives = sorted((p for p, y in zip(p_claim, is_claim, strict=True) if not y), reverse=True)
    allowed = int(max_false_positive_rate * len(negatives))
    if not negatives:
        return 0.5
    if allowed >= len(negatives):
        return 0.0
    # Strictly above the (allowed+1)-th highest negative score.
    return float(np.nextafter(negatives[allowed], 1.0))


def _sklearn() -> tuple[Any, Any, str]:
    try:
        import sklearn
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import StratifiedKFold
    except ImportError as exc:
        raise PrerequisiteError(
            "fitting the claim detector needs scikit-learn: pip install 'medgate[eval]'"
        ) from exc
    return LogisticRegression, StratifiedKFold, str(sklearn.__version__)


def fit_detector(
    rows: Sequence[LabelledSentence],
    embedder: SentenceEmbedder,
    *,
    data_file: Path = SENTENCES_FILE,
    seed: int = 13,
    regularisation_c: float = 4.0,
    max_false_positive_rate: float = 0.02,
    folds: int = 5,
    command: str = "medgate fit-claims-detector",
) -> DetectorArtifact:
    """Fit on the training rows only; the threshold comes from out-of-fold predictions."""
    logistic_regression, stratified_k_fold, sklearn_version = _sklearn()
    train = [r for r in rows if r.split == "train"]
    if len(train) < folds * 2:
        raise InputError(f"{len(train)} training sentences are too few to fit a detector")
    x = embedder.embed([without_citations(r.text) for r in train]).astype(np.float64)
    labels = _labels(train)
    is_claim = [label != NO_CLAIM for label in labels]

    def model() -> Any:
        return logistic_regression(C=regularisation_c, max_iter=2000, random_state=seed)

    # Folds stratified on claim vs none: several claim types have too few rows to stratify on.
    p_claim = np.zeros(len(train))
    predicted_type: list[str] = [NO_CLAIM] * len(train)
    splitter = stratified_k_fold(n_splits=folds, shuffle=True, random_state=seed)
    for fit_idx, test_idx in splitter.split(x, is_claim):
        fold = model().fit(x[fit_idx], [labels[i] for i in fit_idx])
        proba = fold.predict_proba(x[test_idx])
        classes = list(fold.classes_)
        none = classes.index(NO_CLAIM)
        for row, i in zip(proba, test_idx, strict=True):
            p_claim[i] = 1.0 - row[none]
            masked = row.copy()
            masked[none] = -1.0
            predicted_type[i] = classes[int(masked.argmax())]
    threshold = choose_threshold(list(p_claim), is_claim, max_false_positive_rate)
    fired = p_claim >= threshold
    positives = sum(is_claim)
    negatives = len(train) - positives
    recall = sum(1 for f, y in zip(fired, is_claim, strict=True) if f and y) / positives
    fpr = sum(1 for f, y in zip(fired, is_claim, strict=True) if f and not y) / max(1, negatives)
    type_accuracy = (
        sum(1 for p, y in zip(predicted_type, labels, strict=True) if y != NO_CLAIM and p == y)
        / positives
    )
    final = model().fit(x, labels)
    return DetectorArtifact(
        classes=[str(c) for c in final.classes_],
        coef=[[float(v) for v in row] for row in final.coef_],
        intercept=[float(v) for v in final.intercept_],
        threshold=threshold,
        provenance=DetectorProvenance(
            data_file=data_file.name,
            data_sha256=file_sha256(data_file),
            train_ids=[r.id for r in train],
            seed=seed,
            regularisation_c=regularisation_c,
            max_false_positive_rate=max_false_positive_rate,
            encoder=embedder.name,
            encoder_fingerprint=embedder.fingerprint,
            sklearn_version=sklearn_version,
            created=datetime.now(UTC).strftime("%Y-%m-%d"),
            command=command,
            cv_recall=recall,
            cv_false_positive_rate=fpr,
            cv_type_accuracy=type_accuracy,
        ),
    )


def save_artifact(artifact: DetectorArtifact, path: Path = ARTIFACT_FILE) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(artifact.model_dump(mode="json"), indent=1) + "\n", "utf-8")
    return path
