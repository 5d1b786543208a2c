"""Fitting and measuring the request-safety classifier (scikit-learn at fit time only).

Data, and how each part is used:

* harmful: MedSafetyBench's train rows (``medsafetybench/medsafetybench_train.jsonl`` under the
  data directory), each violating one of nine AMA ethics principles, split by a seeded hash of
  their id, 60% train, 20% validation, 20% test. Recall on a kind of harm the classifier has
  not seen is measured two ways: ``eval request-safety`` leaves each category out of fitting in
  turn (:func:`leave_one_category_out`), and a fit with ``held_out_categories`` N > 0 keeps N
  whole categories (a seeded draw) out of fitting and choosing, all their rows in its test
  part. The shipped classifier holds none out: a deployed gate should learn from every kind of
  harm it has examples of, and its hyperparameters are chosen on validation as before. (The
  classifier shipped before it, sha256 a5512fb3e85e, held categories 4 and 8 out: 0.868 of
  their rows refused, against 0.876 mean leave-one-category-out recall; docs/careguard.md.)
  Also harmful requests written for medgate in new wordings across the nine categories
  (``careguard/data/harmful_requests_written.jsonl``, each labelled with its category when
  written): test only, a second and independent measure of recall in wordings MedSafetyBench's
  generators did not write. Fitting on them was measured and lost on leave-one-category-out
  recall (docs/careguard.md).
* benign: requests written for medgate in the imperative shapes the harmful ones use
  (``careguard/data/benign_requests.jsonl``, 80% train, 20% validation by the same hash) and a
  second set written apart from it, never fitted or chosen on
  (``careguard/data/benign_requests_heldout.jsonl``, test only); benign look-alikes of the
  harmful requests, written with them (``careguard/data/benign_requests_lookalike.jsonl``:
  justifications, prior authorisations, declining unneeded care, errors disclosed, consent
  sought; 60/20/20 by the hash, and counted with the first set as one kind for the budget);
  PubMedQA and BioASQ questions
  (the train part of medgate's seeded HRS split for fitting and validation, its test part for
  test); medgate's patient questions (60/20/20 by the hash; the harmful-request ones are
  harmful, the self-harm and emergency ones are left out because the rules answer them first).
* written blind by writers who had read nothing of medgate, each set read once as a test set
  first (:data:`BLIND_FITTED`): harmful questions (the red-team sets) and benign questions
  sharing words with harmful ones; the question screen fits and chooses on them, for the shipped
  classifier they are test only. The newest such sets are test only for both.
* measured only: the dangerous-practice questions (which deserve a direct "no", not a refusal),
  the general health questions and the answerable risky questions written for CareGuard's own
  evaluation; files added to this list after a fit are scored without a refit.

Features: the sentence embedding and the TF-IDF of word unigrams and bigrams
(:class:`medgate.careguard.request_safety.NgramBlock`), the n-gram block scaled beside the unit
embedding. The regularisation C, the block's scale and the threshold are chosen on the
validation part: the threshold is the lowest score at which every benign kind's validation share
refused is within its budget (written clinician-style requests one budget, questions another),
and C and the scale are the grid values whose validation recall at that threshold is highest.
The test part is scored once, with the chosen model.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import Field

from medgate.careguard.categories import RiskCategory
from medgate.careguard.request_safety import (
    TOKEN_PATTERN,
    DataFile,
    HarmExamples,
    NgramBlock,
    Provenance,
    RequestSafetyArtifact,
    SplitMetrics,
    ngrams,
)
from medgate.claims.learned import choose_threshold
from medgate.embeddings import SentenceEmbedder
from medgate.errors import ConfigError, InputError, PrerequisiteError
from medgate.records import Record

SPLIT_SEED = "medgate-request-safety-2026"
#: Whole categories the shipped fit keeps out (see the module docstring for why none).
HELD_OUT_CATEGORIES = 0
CATEGORIES = tuple(range(1, 10))
C_GRID = (1.0, 3.0, 10.0, 30.0)
NGRAM_SCALE_GRID = (1.0, 2.0)
NGRAM_LONGEST = 2
NGRAM_MIN_DF = 2
MAX_FALSE_REFUSAL_RATE = 0.05
MAX_QUESTION_FALSE_REFUSAL_RATE = 0.0
#: Benign sources that are questions rather than written requests: their budget is the
#: question budget.
QUESTION_SOURCES = frozenset({"pubmedqa-l", "pubmedqa-a", "bioasq", "patient-questions"})
MEDSAFETYBENCH_FILE = "medsafetybench/medsafetybench_train.jsonl"
WRITTEN_HARMFUL = "harmful_requests_written.jsonl"
#: Harmful requests worded as questions ("What is the quickest way to ...", "How could I ..."),
#: each labelled with its AMA category when written; fitted like MedSafetyBench's rows.
HARMFUL_QUESTIONS = "harmful_questions_written.jsonl"
#: Sets written blind (by writers who had read nothing of medgate) after the harmful questions,
#: each read once as a test set first: the question screen ("questions", "both") fits and chooses
#: on them (60/20/20 by the hash) since its refit of 2026-12-07
#: (docs/results/question_screen_refit/NOTES.md); for the shipped classifier they are test only.
#: (file, source, harmful)
BLIND_FITTED = (
    ("harmful_questions_redteam.jsonl", "harmful-questions-redteam", True),
    *(
        (f"harmful_questions_redteam_{n}.jsonl", f"harmful-questions-redteam-{n}", True)
        for n in range(2, 8)
    ),
    # Written to be fitted on, never read as a test set (docs/results/question_screen_refit_2/).
    ("harmful_questions_train_2.jsonl", "harmful-questions-2", True),
    ("benign_lookalikes_5.jsonl", "benign-lookalikes", False),
    ("benign_lookalikes_6.jsonl", "benign-lookalikes", False),
    ("benign_lookalikes_7.jsonl", "benign-lookalikes", False),
    ("benign_lookalikes_train.jsonl", "benign-lookalikes", False),
)
#: Harmful requests worded as questions, written blind and never fitted or chosen on: recall on
#: question wordings no fit has seen.
MEASURED_HARMFUL = (("harmful_questions_redteam_8.jsonl", "harmful-questions-redteam-8"),)

Part = Literal["train", "validation", "test"]

#: Request sets scored on their own: none is harmful, and none deserves a refusal (a dangerous
#: practice deserves a direct "no"). Each counts as a source of its own in the report.
MEASURED_ONLY = (
    ("dangerous_practices.jsonl", "dangerous-practices"),
    ("dangerous_practices_new.jsonl", "dangerous-practices-heldout"),
    ("dangerous_practices_heldout_2.jsonl", "dangerous-practices-heldout-2"),
    ("benign_questions.jsonl", "benign-questions"),
    ("answerable_risky.jsonl", "answerable-risky"),
    *(
        (f"general_questions_heldout{suffix}.jsonl", "general-questions-heldout")
        for suffix in ("", *(f"_{n}" for n in range(2, 18)))
    ),
    ("general_questions_heldout_18.jsonl", "general-questions-heldout-18"),
    ("benign_lookalikes_8.jsonl", "benign-lookalikes-8"),
)


class LabelledRequest(Record):
    """One request with its label and the part of the data it belongs to."""

    id: str
    text: str
    harmful: bool
    source: str = Field(description="medsafetybench, clinician-requests, pubmedqa-l, ...")
    part: Part
    category: int | None = Field(default=None, description="MedSafetyBench's AMA category.")
    shipped: bool = Field(
        default=False, description="Written for medgate: its text may be copied into results."
    )


def hashed(request_id: str, seed: str = SPLIT_SEED) -> int:
    """0-99 from a seeded hash of the id: the split depends on the seed and the id alone."""
    return int(hashlib.sha256(f"{seed}:{request_id}".encode()).hexdigest()[:8], 16) % 100


def part_of(request_id: str, train: int, validation: int, seed: str = SPLIT_SEED) -> Part:
    """train below ``train``, validation below ``train + validation``, else test."""
    value = hashed(request_id, seed)
    return "train" if value < train else "validation" if value < train + validation else "test"


def heldout_categories(seed: str = SPLIT_SEED, count: int = HELD_OUT_CATEGORIES) -> list[int]:
    """The MedSafetyBench categories kept out of fitting: a seeded draw, not a choice."""
    return sorted(random.Random(seed).sample(list(CATEGORIES), count))


def _jsonl(text: str, where: str) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError as exc:
            raise InputError(f"{where}:{number}: not JSON ({exc})") from exc
    return rows


def _shipped(name: str) -> str:
    return resources.files("medgate.careguard").joinpath("data", name).read_text(encoding="utf-8")


@dataclass
class Corpus:
    """Every labelled request and the files they came from."""

    requests: list[LabelledRequest]
    files: list[DataFile]
    heldout_categories: list[int]
    seed: str = SPLIT_SEED
    harm: HarmExamples = "all"

    def where(self, **match: object) -> list[LabelledRequest]:
        return [r for r in self.requests if all(getattr(r, k) == v for k, v in match.items())]


def _file(name: str, text: str, rows: int, role: str) -> DataFile:
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return DataFile(name=name, sha256=digest, rows=rows, role=role)


def medsafetybench_rows(data_dir: Path) -> tuple[list[dict[str, Any]], str]:
    """MedSafetyBench's train rows and the file's text (for its digest)."""
    path = data_dir / MEDSAFETYBENCH_FILE
    if not path.is_file():
        raise ConfigError(f"{path} not found: set MEDGATE_DATA_DIR (or data_dir) to the data")
    text = path.read_text(encoding="utf-8")
    rows = _jsonl(text, str(path))
    for row in rows:
        if row.get("ama_principle_category") not in CATEGORIES:
            raise InputError(f"{path}: row {row.get('id')!r} has no AMA category 1-9")
    return rows, text


def _written(
    name: str,
    source: str,
    role: str,
    *,
    harmful: bool,
    seed: str,
    train: int = 0,
    validation: int = 0,
) -> tuple[DataFile, list[LabelledRequest]]:
    """A shipped file of requests written for medgate, all ``harmful`` or all not, each in the
    part its hash gives for the ``train`` / ``validation`` shares (both 0: all test)."""
    text = _shipped(name)
    rows = _jsonl(text, name)
    requests = [
        LabelledRequest(
            id=str(r["id"]),
            text=str(r["question"]),
            harmful=harmful,
            source=source,
            part=part_of(str(r["id"]), train, validation, seed),
            shipped=True,
        )
        for r in rows
    ]
    return _file(f"medgate:careguard/data/{name}", text, len(rows), role), requests


def _categorised(
    name: str, source: str, role: str, part: Callable[[str, int], Part]
) -> tuple[DataFile, list[LabelledRequest]]:
    """A shipped file of harmful requests, each labelled with its AMA category when written;
    ``part`` gives each its part from its id and category."""
    text = _shipped(name)
    rows = _jsonl(text, name)
    requests = []
    for row in rows:
        category = int(row["category"])
        if category not in CATEGORIES:
            raise InputError(f"{name}: row {row.get('id')!r} has no AMA category 1-9")
        requests.append(
            LabelledRequest(
                id=str(row["id"]),
                text=str(row["question"]),
                harmful=True,
                source=source,
                part=part(str(row["id"]), category),
                category=category,
                shipped=True,
            )
        )
    return _file(f"medgate:careguard/data/{name}", text, len(rows), role), requests


def build_corpus(
    data_dir: Path,
    seed: str = SPLIT_SEED,
    held_out: Sequence[int] | None = None,
    harm: HarmExamples = "all",
) -> Corpus:
    """The labelled requests, each in its part (see the module docstring). ``held_out``: the
    whole categories kept out of fitting and choosing (default: the shipped fit's draw; pass a
    fitted artifact's own list to rebuild its parts). ``harm``: "all", the shipped classifier's
    corpus (the harmful questions and their benign look-alikes test only); "questions", the
    question screen's, whose only harmful examples to fit and choose on are the harmful
    questions (MedSafetyBench's and the patient questions' harmful rows of the train and
    validation parts are left out; their test rows are still scored); "both", everything
    fitted together (measured, not shipped: docs/careguard.md)."""
    from medgate.eval.data import BIOASQ, PUBMEDQA_A, PUBMEDQA_L, dataset_split

    held = heldout_categories(seed) if held_out is None else sorted(held_out)
    if any(c not in CATEGORIES for c in held):
        raise InputError(f"held-out categories must be among {list(CATEGORIES)}, not {held}")
    requests: list[LabelledRequest] = []
    files: list[DataFile] = []

    rows, text = medsafetybench_rows(data_dir)
    files.append(_file(MEDSAFETYBENCH_FILE, text, len(rows), "harmful"))
    for row in rows:
        category = int(row["ama_principle_category"])
        part: Part = "test" if category in held else part_of(str(row["id"]), 60, 20, seed)
        if harm == "questions" and part != "test":
            continue
        requests.append(
            LabelledRequest(
                id=str(row["id"]),
                text=str(row["question"]),
                harmful=True,
                source="medsafetybench",
                part=part,
                category=category,
            )
        )

    file, written_harm = _categorised(
        WRITTEN_HARMFUL, "written-harmful", "harmful, measured only", lambda _id, _c: "test"
    )
    files.append(file)
    requests.extend(written_harm)

    # The shipped classifier ("all") was fitted before the question sets were written: for it
    # they are test only, so that its fit is reproduced as shipped and they measure it.
    fits_questions = harm in ("questions", "both")
    question_parts = (60, 20) if fits_questions else (0, 0)
    file, questions = _categorised(
        HARMFUL_QUESTIONS,
        "harmful-questions",
        "harmful",
        lambda i, c: part_of(i, 60, 20, seed) if fits_questions and c not in held else "test",
    )
    files.append(file)
    requests.extend(questions)
    for name, source, harmful in BLIND_FITTED:
        file, blind = _written(
            name,
            source,
            ("harmful" if harmful else "benign") if fits_questions else "measured",
            harmful=harmful,
            seed=seed,
            train=question_parts[0],
            validation=question_parts[1],
        )
        files.append(file)
        requests.extend(blind)
    for name, source in MEASURED_HARMFUL:
        file, measured = _written(name, source, "harmful, measured only", harmful=True, seed=seed)
        files.append(file)
        requests.extend(measured)

    for name, source, train, validation in (
        ("benign_requests.jsonl", "clinician-requests", 80, 20),
        ("benign_requests_lookalike.jsonl", "clinician-requests-lookalike", 60, 20),
        ("benign_questions_lookalike.jsonl", "question-lookalikes", *question_parts),
        ("unsafe_practice_questions.jsonl", "practice-questions", *question_parts),
        ("benign_requests_heldout.jsonl", "clinician-requests-heldout", 0, 0),
    ):
        file, written = _written(
            name, source, "benign", harmful=False, seed=seed, train=train, validation=validation
        )
        files.append(file)
        requests.extend(written)

    text = _shipped("patient_questions.jsonl")
    patients = _jsonl(text, "patient_questions.jsonl")
    files.append(
        _file("medgate:careguard/data/patient_questions.jsonl", text, len(patients), "benign")
    )
    for r in patients:
        risk = RiskCategory(r["category"])
        if risk.short_circuits:
            continue  # the rules give these fixed guidance before the classifier runs
        harmful = risk is RiskCategory.HARMFUL_REQUEST
        part = part_of(str(r["id"]), 60, 20, seed)
        if harm == "questions" and harmful and part != "test":
            continue
        requests.append(
            LabelledRequest(
                id=str(r["id"]),
                text=str(r["question"]),
                harmful=harmful,
                source="patient-questions-harmful" if harmful else "patient-questions",
                part=part,
                shipped=True,
            )
        )

    # Measured only, never fitted or chosen on: sets written for CareGuard's own evaluation.
    for name, source in MEASURED_ONLY:
        file, measured = _written(name, source, "measured", harmful=False, seed=seed)
        files.append(file)
        requests.extend(measured)

    for spec in (PUBMEDQA_L, PUBMEDQA_A, BIOASQ):
        name, path = spec.name, data_dir / spec.path
        split = dataset_split(name, data_dir)
        files.append(
            _file(
                spec.path,
                path.read_text(encoding="utf-8"),
                len(split.train) + len(split.test),
                "benign",
            )
        )
        for item, in_test in [(i, False) for i in split.train] + [(i, True) for i in split.test]:
            requests.append(
                LabelledRequest(
                    id=item.id,
                    text=item.question,
                    harmful=False,
                    source=name,
                    part="test" if in_test else part_of(item.id, 80, 20, seed),
                )
            )
    ids = [(r.source, r.id) for r in requests]
    if len(set(ids)) != len(ids):
        raise InputError("duplicate request ids within a source")
    return Corpus(requests, files, held, seed, harm)


# --- fitting ----------------------------------------------------------------------------------

Matrix = npt.NDArray[np.float64]


def _sklearn() -> tuple[Any, Any, str]:
    try:
        import sklearn
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
    except ImportError as exc:
        raise PrerequisiteError(
            "fitting the request-safety classifier needs scikit-learn: pip install 'medgate[eval]'"
        ) from exc
    return LogisticRegression, TfidfVectorizer, str(sklearn.__version__)


@dataclass
class Vocabulary:
    """The n-gram terms of a training set and their IDF (scikit-learn's, smoothed)."""

    terms: list[str]
    idf: list[float]

    def block(self, scale: float, coef: Sequence[float]) -> NgramBlock:
        return NgramBlock(
            longest=NGRAM_LONGEST,
            token_pattern=TOKEN_PATTERN,
            min_df=NGRAM_MIN_DF,
            scale=scale,
            vocabulary=self.terms,
            idf=self.idf,
            coef=list(coef),
        )


def fit_vocabulary(texts: Sequence[str]) -> Vocabulary:
    """Terms in at least ``NGRAM_MIN_DF`` of ``texts``, through :func:`ngrams` itself."""
    _, tfidf_vectorizer, _ = _sklearn()
    vectoriser = tfidf_vectorizer(
        analyzer=lambda t: ngrams(t, NGRAM_LONGEST), min_df=NGRAM_MIN_DF, sublinear_tf=True
    )
    vectoriser.fit(list(texts))
    terms = [str(t) for t in vectoriser.get_feature_names_out()]
    return Vocabulary(terms, [float(v) for v in vectoriser.idf_])


def ngram_matrix(texts: Sequence[str], vocabulary: Vocabulary, scale: float) -> Matrix:
    """The n-gram block of each text, as the apply path computes it."""
    block = vocabulary.block(scale, [0.0] * len(vocabulary.terms))
    index = {t: i for i, t in enumerate(vocabulary.terms)}
    if not texts:
        return np.zeros((0, len(vocabulary.terms)))
    return np.vstack([block.vector(t, index) for t in texts])


def features(embedded: Matrix, texts: Sequence[str], vocabulary: Vocabulary, scale: float) -> Any:
    """Embedding and n-gram blocks side by side (sparse: the vocabulary is thousands wide);
    ``scale`` 0: the embedding alone."""
    from scipy import sparse

    if scale == 0.0:
        return sparse.csr_matrix(embedded)
    return sparse.hstack(
        [sparse.csr_matrix(embedded), sparse.csr_matrix(ngram_matrix(texts, vocabulary, scale))]
    ).tocsr()


def fit_weights(x: Any, y: Sequence[bool], c: float) -> tuple[list[float], float]:
    """Logistic regression weights, classes balanced (the benign rows outnumber the harmful)."""
    logistic_regression, _, _ = _sklearn()
    model = logistic_regression(C=c, max_iter=5000, class_weight="balanced")
    model.fit(x, np.asarray(y, dtype=int))
    return [float(v) for v in model.coef_[0]], float(model.intercept_[0])


def probabilities(x: Any, coef: Sequence[float], intercept: float) -> npt.NDArray[np.float64]:
    logits = np.asarray(x @ np.asarray(coef, dtype=np.float64)).ravel() + intercept
    result: npt.NDArray[np.float64] = 1.0 / (1.0 + np.exp(-logits))
    return result


THRESHOLD_MARGIN = 1e-6

#: Sources whose budget is shared with another's: one kind of request written in two files.
BUDGET_KIND = {"clinician-requests-lookalike": "clinician-requests"}


def benign_groups(requests: Sequence[LabelledRequest]) -> dict[str, list[int]]:
    """Indices of the benign requests by kind (source, or :data:`BUDGET_KIND`'s): each kind
    gets the false-refusal budget."""
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(requests):
        if not r.harmful:
            groups.setdefault(BUDGET_KIND.get(r.source, r.source), []).append(i)
    return groups


def threshold_within_budget(
    scores: Sequence[float],
    requests: Sequence[LabelledRequest],
    budget: float,
    question_budget: float | None = None,
) -> float:
    """The lowest threshold at which every benign kind's share refused is within its budget:
    ``question_budget`` for the question sources (:data:`QUESTION_SOURCES`), ``budget`` for the
    rest (``question_budget`` None: ``budget`` for all)."""
    groups = benign_groups(requests)
    if not groups:
        raise InputError("no benign validation requests to choose a threshold on")
    questions = budget if question_budget is None else question_budget
    # A margin above the highest score let through, so that the apply path's arithmetic (same
    # sums, another order) cannot put that request on the other side.
    highest = max(
        choose_threshold(
            [scores[i] for i in idx],
            [False] * len(idx),
            questions if source in QUESTION_SOURCES else budget,
        )
        for source, idx in groups.items()
    )
    return min(1.0, highest + THRESHOLD_MARGIN)


def refusal(scores: Sequence[float], threshold: float) -> SplitMetrics:
    refused = sum(1 for s in scores if s >= threshold)
    n = len(scores)
    return SplitMetrics(n=n, refused=refused, rate=round(refused / n, 4) if n else None)


def part_metrics(
    requests: Sequence[LabelledRequest],
    scores: Sequence[float],
    threshold: float,
    unseen: Sequence[int],
) -> dict[str, SplitMetrics]:
    """Refusal counts by source; MedSafetyBench by seen and unseen categories, and each unseen
    category on its own; the written harmful requests of unseen categories apart."""
    by: dict[str, list[float]] = {}
    for r, s in zip(requests, scores, strict=True):
        key = r.source
        if r.source == "medsafetybench":
            new = r.category in unseen
            key = "medsafetybench-unseen-categories" if new else "medsafetybench-seen-categories"
            if new:
                by.setdefault(f"medsafetybench-category-{r.category}", []).append(s)
        elif r.source == "written-harmful" and r.category in unseen:
            key = "written-harmful-unseen-categories"
        by.setdefault(key, []).append(s)
    return {k: refusal(v, threshold) for k, v in sorted(by.items())}


@dataclass
class Fitted:
    artifact: RequestSafetyArtifact
    validation_recall: dict[tuple[float, float], float]


def fit_request_safety(
    corpus: Corpus,
    embedder: SentenceEmbedder,
    *,
    c_grid: Sequence[float] = C_GRID,
    scale_grid: Sequence[float] = NGRAM_SCALE_GRID,
    budget: float = MAX_FALSE_REFUSAL_RATE,
    question_budget: float = MAX_QUESTION_FALSE_REFUSAL_RATE,
    seed: str = SPLIT_SEED,
    command: str = "medgate fit-request-safety",
    encoder_kind: str = "minilm",
) -> Fitted:
    """Fit on the train part, choose C, the n-gram scale and the threshold on validation, score
    test once."""
    _, _, sklearn_version = _sklearn()
    train = corpus.where(part="train")
    validation = corpus.where(part="validation")
    test = corpus.where(part="test")
    if not any(r.harmful for r in train) or all(r.harmful for r in train):
        raise InputError("the training part needs harmful and benign requests")
    if not any(r.harmful for r in validation):
        raise InputError("the validation part has no harmful requests to choose C on")
    texts = {part: [r.text for r in rows] for part, rows in (("train", train), ("val", validation))}
    e_train = embedder.embed(texts["train"]).astype(np.float64)
    e_val = embedder.embed(texts["val"]).astype(np.float64)
    vocabulary = fit_vocabulary(texts["train"])
    y_train = [r.harmful for r in train]
    harmful_val = [i for i, r in enumerate(validation) if r.harmful]

    best: tuple[float, float, float, list[float], float, float] | None = None
    recalls: dict[tuple[float, float], float] = {}
    for scale in sorted(scale_grid):
        x_train = features(e_train, texts["train"], vocabulary, scale)
        x_val = features(e_val, texts["val"], vocabulary, scale)
        for c in sorted(c_grid):
            coef, intercept = fit_weights(x_train, y_train, c)
            p_val = probabilities(x_val, coef, intercept)
            threshold = threshold_within_budget(list(p_val), validation, budget, question_budget)
            recall = float(np.mean([p_val[i] >= threshold for i in harmful_val]))
            recalls[(c, scale)] = recall
            # Ties keep the smaller scale and C (the stronger prior).
            if best is None or recall > best[0]:
                best = (recall, c, scale, coef, intercept, threshold)
    assert best is not None
    _, c, scale, coef, intercept, threshold = best

    dimension = e_train.shape[1]
    block = vocabulary.block(scale, coef[dimension:]) if scale > 0.0 else None
    p_val = probabilities(features(e_val, texts["val"], vocabulary, scale), coef, intercept)
    test_texts = [r.text for r in test]
    x_test = features(embedder.embed(test_texts).astype(np.float64), test_texts, vocabulary, scale)
    p_test = probabilities(x_test, coef, intercept)
    counts: dict[str, int] = {}
    for r in train:
        counts[r.source] = counts.get(r.source, 0) + 1
    provenance = Provenance(
        created=datetime.now(UTC).strftime("%Y-%m-%d"),
        command=command,
        seed=seed,
        data=corpus.files,
        heldout_categories=corpus.heldout_categories,
        harm=corpus.harm,
        medsafetybench_train_ids=[r.id for r in train if r.source == "medsafetybench"],
        medsafetybench_validation_ids=[r.id for r in validation if r.source == "medsafetybench"],
        regularisation_c=c,
        c_grid=sorted(c_grid),
        ngram_scale_grid=sorted(scale_grid),
        max_false_refusal_rate=budget,
        max_question_false_refusal_rate=question_budget,
        threshold_rule=(
            "lowest threshold at which each benign source's validation share refused is at "
            f"most {budget} (questions: {question_budget}); C and n-gram scale with the highest "
            "validation recall at their threshold"
        ),
        encoder=embedder.name,
        encoder_fingerprint=embedder.fingerprint,
        encoder_kind=encoder_kind,
        sklearn_version=sklearn_version,
        train_counts=dict(sorted(counts.items())),
        validation=part_metrics(validation, list(p_val), threshold, corpus.heldout_categories),
        heldout=part_metrics(test, list(p_test), threshold, corpus.heldout_categories),
    )
    artifact = RequestSafetyArtifact(
        coef=coef[:dimension],
        ngrams=block,
        intercept=intercept,
        threshold=float(threshold),
        provenance=provenance,
    )
    return Fitted(artifact, recalls)


class CategoryRecall(Record):
    """Recall on one MedSafetyBench category with that category left out of fitting."""

    category: int
    n: int
    recall: float
    threshold: float


def leave_one_category_out(
    corpus: Corpus,
    embedder: SentenceEmbedder,
    c: float,
    budget: float,
    *,
    scale: float | None,
    question_budget: float | None = None,
) -> list[CategoryRecall]:
    """Each category's recall when the fit never saw it: a check of the design, not of the
    shipped model.

    Each fold fits on the benign train part, on every other category's MedSafetyBench rows whose
    hash puts them in the train part (the hash does not depend on the category, so the shipped
    held-out categories contribute the same 60% share) and on the written harmful requests and
    harmful questions of the train part (those of the category left out dropped too), with the
    n-gram vocabulary of the fold's own training rows (``scale`` None: the embedding alone),
    chooses its threshold on the benign validation part as the shipped fit does, and scores every
    MedSafetyBench row of the category left out.
    """
    benign = [r for r in corpus.where(part="train") if not r.harmful]
    harmful = [
        r
        for r in corpus.requests
        if (r.source == "medsafetybench" and part_of(r.id, 60, 20, corpus.seed) == "train")
        or (r.source in ("written-harmful", "harmful-questions") and r.part == "train")
    ]
    validation = [r for r in corpus.where(part="validation") if not r.harmful]
    e_benign = embedder.embed([r.text for r in benign]).astype(np.float64)
    e_harmful = embedder.embed([r.text for r in harmful]).astype(np.float64)
    e_val = embedder.embed([r.text for r in validation]).astype(np.float64)
    out = []
    for category in CATEGORIES:
        keep = [i for i, r in enumerate(harmful) if r.category != category]
        fold = benign + [harmful[i] for i in keep]
        rows = [
            r for r in corpus.requests if r.category == category and r.source == "medsafetybench"
        ]
        e_fold = np.concatenate([e_benign, e_harmful[keep]])
        e_rows = embedder.embed([r.text for r in rows]).astype(np.float64)
        if scale is None:
            x, x_val, x_rows = e_fold, e_val, e_rows
        else:
            vocabulary = fit_vocabulary([r.text for r in fold])
            x = features(e_fold, [r.text for r in fold], vocabulary, scale)
            x_val = features(e_val, [r.text for r in validation], vocabulary, scale)
            x_rows = features(e_rows, [r.text for r in rows], vocabulary, scale)
        coef, intercept = fit_weights(x, [r.harmful for r in fold], c)
        threshold = threshold_within_budget(
            list(probabilities(x_val, coef, intercept)), validation, budget, question_budget
        )
        p = probabilities(x_rows, coef, intercept)
        out.append(
            CategoryRecall(
                category=category,
                n=len(rows),
                recall=round(float(np.mean(p >= threshold)), 4),
                threshold=round(threshold, 6),
            )
        )
    return out
