"""Measuring the claims layer: against HaluEval 2.0 fact labels, a labelled sentence set, and
labelled support pairs. ``scripts/eval_claims.py`` runs these and writes ``docs/results/``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import Field

from medgate.claims.citations import find_citations
from medgate.claims.detection import ClaimType, classify, detect_claims
from medgate.claims.sentences import split_sentences
from medgate.claims.support import (
    Calibration,
    LexicalSupportJudge,
    SupportPair,
    calibrate_threshold,
    content_terms,
)
from medgate.errors import InputError
from medgate.records import Record

#: A fact is attributed to the answer sentence sharing most of its content words, if at least this
#: share: HaluEval's facts are paraphrases of the answer, not quotations.
FACT_MATCH_MIN = 0.3


class PRF(Record):
    tp: int
    fp: int
    fn: int
    precision: float | None = Field(description="None when nothing was predicted.")
    recall: float | None = Field(description="None when there was nothing to find.")
    f1: float | None = None

    @classmethod
    def of(cls, tp: int, fp: int, fn: int) -> PRF:
        p = tp / (tp + fp) if tp + fp else None
        r = tp / (tp + fn) if tp + fn else None
        f1 = 2 * p * r / (p + r) if p is not None and r is not None and p + r > 0 else None
        return cls(tp=tp, fp=fp, fn=fn, precision=p, recall=r, f1=f1)


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """95% Wilson score interval of a proportion; None when n is 0."""
    if n == 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / denom
    return (centre - half, centre + half)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise InputError(f"{path} is not a file (set MEDGATE_DATA_DIR or pass --data)")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


# --- the labelled sentence set ----------------------------------------------------------------


class LabelledSentence(Record):
    id: str
    text: str
    claim_type: ClaimType | None
    cited: bool


class LabelledResult(Record):
    n: int
    per_type: dict[str, PRF]
    any_claim: PRF = Field(description="Claim vs no claim, whatever the type.")
    uncited_flag: PRF = Field(description="Flagged as an uncited claim vs should be.")
    citation_accuracy: float = Field(description="Share of sentences whose cited/uncited is right.")
    errors: list[str] = Field(default_factory=list, description="Sentences got wrong, and how.")


def load_labelled(path: Path | None = None) -> list[LabelledSentence]:
    path = path or Path(__file__).parent / "data" / "labelled_sentences.jsonl"
    return [LabelledSentence.model_validate(row) for row in read_jsonl(path)]


def evaluate_labelled(rows: Sequence[LabelledSentence]) -> LabelledResult:
    per_type: dict[str, PRF] = {}
    predictions = []
    for row in rows:
        types = classify(row.text)
        predicted = types[0] if types else None
        cited = bool(find_citations(row.text))
        predictions.append((row, predicted, cited))
    for kind in ClaimType:
        if kind is ClaimType.OTHER:
            continue
        tp = sum(1 for r, p, _ in predictions if p is kind and r.claim_type is kind)
        fp = sum(1 for r, p, _ in predictions if p is kind and r.claim_type is not kind)
        fn = sum(1 for r, p, _ in predictions if r.claim_type is kind and p is not kind)
        per_type[kind.value] = PRF.of(tp, fp, fn)
    claim_tp = sum(1 for r, p, _ in predictions if p and r.claim_type)
    claim_fp = sum(1 for r, p, _ in predictions if p and not r.claim_type)
    claim_fn = sum(1 for r, p, _ in predictions if not p and r.claim_type)
    gold_flag = [bool(r.claim_type) and not r.cited for r, _, _ in predictions]
    pred_flag = [bool(p) and not c for _, p, c in predictions]
    pairs = list(zip(pred_flag, gold_flag, strict=True))
    errors = []
    for row, predicted, cited in predictions:
        problems = []
        if predicted is not row.claim_type:
            gold = row.claim_type.value if row.claim_type else "none"
            problems.append(f"type {predicted.value if predicted else 'none'} (gold {gold})")
        if cited != row.cited:
            problems.append(f"cited={cited} (gold {row.cited})")
        if problems:
            errors.append(f"{row.id} {'; '.join(problems)}: {row.text}")
    return LabelledResult(
        n=len(rows),
        per_type=per_type,
        any_claim=PRF.of(claim_tp, claim_fp, claim_fn),
        uncited_flag=PRF.of(
            sum(p and g for p, g in pairs),
            sum(p and not g for p, g in pairs),
            sum(g and not p for p, g in pairs),
        ),
        citation_accuracy=sum(c == r.cited for r, _, c in predictions) / len(rows),
        errors=errors,
    )


# --- HaluEval 2.0 biomedical ------------------------------------------------------------------


class HaluEvalResult(Record):
    answers: int
    sentences: int
    facts_labelled: int = Field(description="Facts with a true/false label.")
    facts_unlabelled: int = Field(description="Facts beyond the label list (skipped).")
    facts_unmatched: int = Field(description="Labelled facts no answer sentence matched.")
    sentences_with_facts: int
    false_sentences: int = Field(description="Sentences holding at least one false fact.")
    base_rate: float = Field(description="Share of fact-bearing sentences that hold a false one.")
    flagged_sentences: int = Field(description="Fact-bearing sentences with an uncited claim.")
    precision_interval: tuple[float, float] | None = Field(
        description="95% Wilson interval of the sentence-level precision."
    )
    fact_base_rate: float = Field(description="Share of matched labelled facts that are false.")
    answer_base_rate: float = Field(description="Share of answers labelled hallucinated.")
    sentence_level: PRF = Field(description="Flag vs 'holds a false fact', per sentence.")
    fact_level: PRF = Field(description="Fact's sentence flagged vs fact is false, per fact.")
    answer_level: PRF = Field(description="Any flag vs answer labelled hallucinated.")
    by_type: dict[str, dict[str, int]] = Field(
        description="Per claim type: flagged sentences, and how many hold a false fact."
    )
    flagged_share_all_sentences: float


def _match_fact(fact: str, sentence_terms: Sequence[set[str]]) -> int | None:
    words, _ = content_terms(fact)
    if not words:
        return None
    overlaps = [len(words & s) / len(words) for s in sentence_terms]
    best = max(range(len(overlaps)), key=lambda i: overlaps[i], default=None)
    if best is None or overlaps[best] < FACT_MATCH_MIN:
        return None
    return best


def evaluate_halueval(rows: Iterable[dict[str, Any]]) -> HaluEvalResult:
    answers = sentences_total = labelled = unlabelled = unmatched = 0
    s_tp = s_fp = s_fn = f_tp = f_fp = f_fn = a_tp = a_fp = a_fn = 0
    with_facts = false_sentences = flagged_sentences = flagged_all = 0
    false_facts = hallucinated_answers = 0
    by_type: dict[str, Counter[str]] = {}
    for row in rows:
        answers += 1
        sentences = split_sentences(row["answer"])
        sentences_total += len(sentences)
        claims = {c.sentence.index: c for c in detect_claims(sentences) if not c.cited}
        flagged_all += len(claims)
        terms = [content_terms(s.text)[0] for s in sentences]
        facts, labels = row.get("facts", []), row.get("fact_labels", [])
        unlabelled += max(0, len(facts) - len(labels))
        holds: dict[int, list[bool]] = {}
        for fact, label in zip(facts, labels, strict=False):
            if label not in ("true", "false"):
                unlabelled += 1
                continue
            labelled += 1
            index = _match_fact(fact, terms)
            if index is None:
                unmatched += 1
                continue
            is_false = label == "false"
            false_facts += is_false
            holds.setdefault(index, []).append(is_false)
            flagged = index in claims
            f_tp += flagged and is_false
            f_fp += flagged and not is_false
            f_fn += (not flagged) and is_false
        for index, facts_false in holds.items():
            with_facts += 1
            is_false = any(facts_false)
            false_sentences += is_false
            flagged = index in claims
            flagged_sentences += flagged
            s_tp += flagged and is_false
            s_fp += flagged and not is_false
            s_fn += (not flagged) and is_false
            if flagged:
                counts = by_type.setdefault(claims[index].claim_type.value, Counter())
                counts["flagged"] += 1
                counts["with_false_fact"] += is_false
        hallucinated = row.get("label") == "hallucinated"
        hallucinated_answers += hallucinated
        any_flag = bool(claims)
        a_tp += any_flag and hallucinated
        a_fp += any_flag and not hallucinated
        a_fn += (not any_flag) and hallucinated
    return HaluEvalResult(
        answers=answers,
        sentences=sentences_total,
        facts_labelled=labelled,
        facts_unlabelled=unlabelled,
        facts_unmatched=unmatched,
        sentences_with_facts=with_facts,
        false_sentences=false_sentences,
        base_rate=false_sentences / with_facts if with_facts else 0.0,
        flagged_sentences=flagged_sentences,
        precision_interval=wilson_interval(s_tp, s_tp + s_fp),
        fact_base_rate=false_facts / (labelled - unmatched) if labelled > unmatched else 0.0,
        answer_base_rate=hallucinated_answers / answers if answers else 0.0,
        sentence_level=PRF.of(s_tp, s_fp, s_fn),
        fact_level=PRF.of(f_tp, f_fp, f_fn),
        answer_level=PRF.of(a_tp, a_fp, a_fn),
        by_type={k: dict(v) for k, v in sorted(by_type.items())},
        flagged_share_all_sentences=flagged_all / sentences_total if sentences_total else 0.0,
    )


# --- support pairs ----------------------------------------------------------------------------


class SupportResult(Record):
    n: int
    supported: int
    default_threshold: float
    at_default: PRF
    calibration: Calibration
    leave_one_out_accuracy: float = Field(
        description="Accuracy when each pair is judged with a threshold calibrated on the others."
    )


def evaluate_support(pairs: Sequence[SupportPair]) -> SupportResult:
    judge = LexicalSupportJudge()
    scores = [judge.score(p.claim, p.evidence)[0] for p in pairs]
    labels = [p.supported for p in pairs]
    predicted = [s >= judge.threshold for s in scores]
    correct = 0
    for i in range(len(pairs)):
        rest_scores = scores[:i] + scores[i + 1 :]
        rest_labels = labels[:i] + labels[i + 1 :]
        threshold = calibrate_threshold(rest_scores, rest_labels).threshold
        correct += (scores[i] >= threshold) == labels[i]
    pairs_pl = list(zip(predicted, labels, strict=True))
    return SupportResult(
        n=len(pairs),
        supported=sum(labels),
        default_threshold=judge.threshold,
        at_default=PRF.of(
            sum(p and y for p, y in pairs_pl),
            sum(p and not y for p, y in pairs_pl),
            sum(y and not p for p, y in pairs_pl),
        ),
        calibration=calibrate_threshold(scores, labels),
        leave_one_out_accuracy=correct / len(pairs),
    )
