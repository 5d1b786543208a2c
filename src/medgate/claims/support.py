"""Does the cited source actually say what the sentence claims?

A real PMID can be cited for a finding it does not contain; that is the failure a citation check
alone cannot see. Three judges answer the same question behind one protocol:

- :class:`LexicalSupportJudge`: share of the claim's content words found in the source, with
  numbers (doses, percentages) required to appear verbatim; cheap, offline, and blunt.
- :class:`EmbeddingSupportJudge`: best cosine similarity between the claim and a source sentence,
  with any embedding function (e.g. a white-box model's ``embed``).
- :class:`ModelSupportJudge`: any :class:`~medgate.backends.LanguageModel` as an entailment judge
  with a structured JSON verdict.

Thresholds are set with :func:`calibrate_threshold` on labelled (claim, source, supported) pairs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from pydantic import Field, field_validator

from medgate.backends.base import ChatMessage, LanguageModel
from medgate.backends.structured import chat_json
from medgate.claims.sentences import split_sentences
from medgate.errors import InputError, ModelError
from medgate.records import Record

#: Calibrated on ``data/support_pairs.jsonl`` (see ``medgate eval claims``, claims_support.md).
DEFAULT_LEXICAL_THRESHOLD = 0.65


class SupportJudgement(Record):
    supported: bool
    score: float = Field(ge=0.0, le=1.0, description="Higher means better supported.")
    method: str
    reason: str = ""


@runtime_checkable
class SupportJudge(Protocol):
    """Judges whether ``evidence`` supports ``claim``; raises ModelError if it cannot tell."""

    @property
    def name(self) -> str: ...

    def judge(self, claim: str, evidence: str) -> SupportJudgement: ...


_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "without",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "their",
        "there",
        "which",
        "who",
        "whom",
        "whose",
        "what",
        "when",
        "where",
        "how",
        "than",
        "then",
        "has",
        "have",
        "had",
        "do",
        "does",
        "did",
        "not",
        "no",
        "nor",
        "but",
        "if",
        "so",
        "such",
        "can",
        "could",
        "may",
        "might",
        "will",
        "would",
        "should",
        "shall",
        "must",
        "also",
        "more",
        "most",
        "less",
        "very",
        "into",
        "over",
        "under",
        "about",
        "after",
        "before",
        "between",
        "during",
        "per",
        "both",
        "each",
        "other",
        "some",
        "any",
        "all",
        "only",
        "own",
        "same",
        "our",
        "we",
        "you",
        "they",
        "he",
        "she",
        "his",
        "her",
        "them",
        "i",
        "me",
        "my",
        "study",
        "studies",
        "research",
        "show",
        "shows",
        "showed",
        "shown",
        "suggest",
        "suggests",
        "found",
        "find",
        "evidence",
        "trial",
        "trials",
        "data",
        "patients",
        "patient",
        "including",
        "include",
        "includes",
    ]
)
_WORD = re.compile(r"[a-z][a-z\-]+|\d+(?:\.\d+)?")
_CITATION_NOISE = re.compile(
    r"\[\d[^\]]*\]|\((?:PMID|NCT|DOI|doi)[^)]*\)|\bPMID\s*:?\s*\d+|\bNCT\d{8}\b", re.IGNORECASE
)


def _stem(word: str) -> str:
    for suffix in (
        "ations",
        "ation",
        "ities",
        "ness",
        "ments",
        "ment",
        "ingly",
        "ing",
        "edly",
        "ies",
        "ed",
        "es",
        "ly",
        "s",
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def content_terms(text: str) -> tuple[set[str], set[str]]:
    """(content word stems, numbers) of ``text``, citations removed."""
    cleaned = _CITATION_NOISE.sub(" ", text.lower())
    words: set[str] = set()
    numbers: set[str] = set()
    for token in _WORD.findall(cleaned):
        if token[0].isdigit():
            numbers.add(token.rstrip("0").rstrip(".") if "." in token else token)
        elif len(token) >= 3 and token not in _STOPWORDS:
            words.add(_stem(token))
    return words, numbers


class LexicalSupportJudge:
    """Coverage of the claim's content words by the source; a missing number halves the score."""

    def __init__(self, threshold: float = DEFAULT_LEXICAL_THRESHOLD) -> None:
        self.threshold = threshold

    @property
    def name(self) -> str:
        return "lexical"

    def score(self, claim: str, evidence: str) -> tuple[float, str]:
        claim_words, claim_numbers = content_terms(claim)
        evidence_words, evidence_numbers = content_terms(evidence)
        if not claim_words:
            return 0.0, "the sentence has no content words to check"
        coverage = len(claim_words & evidence_words) / len(claim_words)
        missing_numbers = sorted(claim_numbers - evidence_numbers)
        reason = f"{coverage:.0%} of the sentence's content words occur in the source"
        if missing_numbers:
            coverage *= 0.5
            reason += f"; numbers not in the source: {', '.join(missing_numbers)}"
        return coverage, reason

    def judge(self, claim: str, evidence: str) -> SupportJudgement:
        value, reason = self.score(claim, evidence)
        return SupportJudgement(
            supported=value >= self.threshold, score=value, method=self.name, reason=reason
        )


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    if len(a) != len(b) or not a:
        raise ModelError("embeddings of different or zero length")
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm > 0 else 0.0


class EmbeddingSupportJudge:
    """Best cosine similarity between the claim and one sentence of the source (or all of it)."""

    def __init__(self, embed: Callable[[str], Sequence[float]], threshold: float) -> None:
        self._embed = embed
        self.threshold = threshold

    @property
    def name(self) -> str:
        return "embedding"

    def judge(self, claim: str, evidence: str) -> SupportJudgement:
        target = self._embed(_CITATION_NOISE.sub(" ", claim).strip())
        pieces = [s.text for s in split_sentences(evidence)] or [evidence]
        best = max(cosine(target, self._embed(piece)) for piece in pieces)
        value = max(0.0, min(1.0, best))
        return SupportJudgement(
            supported=value >= self.threshold,
            score=value,
            method=self.name,
            reason=f"best sentence similarity {value:.2f} (threshold {self.threshold:.2f})",
        )


_JUDGE_SYSTEM = (
    "You check medical citations. Given a SOURCE text and a CLAIM that cites it, decide whether "
    "the source states or directly implies the claim, including any numbers, doses and "
    "populations. Answer only with JSON: "
    '{"verdict": "supported" | "not_supported" | "contradicted", "reason": "<one sentence>"}.'
)


class SupportVerdict(Record):
    """What the support judge must reply."""

    verdict: Literal["supported", "not_supported", "contradicted"]
    reason: str = ""

    @field_validator("verdict", mode="before")
    @classmethod
    def _normalise(cls, value: object) -> object:
        # "Not supported" and "not_supported" are the same verdict; anything else stays as
        # written and must then be one of the three.
        return value.strip().lower().replace(" ", "_") if isinstance(value, str) else value


class ModelSupportJudge:
    """A language model as an entailment judge; an unreadable reply is an error, not a pass."""

    def __init__(self, model: LanguageModel, max_evidence_chars: int = 4000) -> None:
        self.model = model
        self.max_evidence_chars = max_evidence_chars

    @property
    def name(self) -> str:
        return f"model:{self.model.name}"

    def judge(self, claim: str, evidence: str) -> SupportJudgement:
        prompt = (
            f"SOURCE:\n{evidence[: self.max_evidence_chars]}\n\nCLAIM:\n{claim}\n\n"
            "Does the source support the claim?"
        )
        verdict = chat_json(
            self.model,
            [
                ChatMessage(role="system", content=_JUDGE_SYSTEM),
                ChatMessage(role="user", content=prompt),
            ],
            SupportVerdict,
            max_tokens=120,
            temperature=0.0,
            role="citation_judge",
        ).value
        supported = verdict.verdict == "supported"
        return SupportJudgement(
            supported=supported,
            score=1.0 if supported else 0.0,
            method=self.name,
            reason=f"{verdict.verdict}: {verdict.reason}".strip(": "),
        )


class SupportPair(Record):
    """A labelled example: does ``evidence`` support ``claim``?"""

    claim: str
    evidence: str
    supported: bool


def load_support_pairs(path: Path | None = None) -> list[SupportPair]:
    path = path or Path(__file__).parent / "data" / "support_pairs.jsonl"
    if not path.is_file():
        raise InputError(f"{path} is not a file")
    return [
        SupportPair.model_validate_json(line)
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


class Calibration(Record):
    threshold: float
    f1: float
    precision: float
    recall: float
    n: int


def calibrate_threshold(scores: Sequence[float], labels: Sequence[bool]) -> Calibration:
    """The threshold on ``scores`` that best separates supported pairs (max F1 of 'supported').

    Ties go to the higher threshold: in a safety gate a stricter judge is the safer error.
    """
    if len(scores) != len(labels) or not scores:
        raise InputError("calibration needs as many labels as scores, and at least one")
    best: Calibration | None = None
    for threshold in sorted(set(scores)):
        predicted = [s >= threshold for s in scores]
        tp = sum(p and y for p, y in zip(predicted, labels, strict=True))
        fp = sum(p and not y for p, y in zip(predicted, labels, strict=True))
        fn = sum(not p and y for p, y in zip(predicted, labels, strict=True))
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        if best is None or f1 >= best.f1:
            best = Calibration(
                threshold=threshold, f1=f1, precision=precision, recall=recall, n=len(scores)
            )
    if best is None:  # unreachable: scores is non-empty, so one threshold was tried
        raise InputError("calibration found no threshold")
    return best
