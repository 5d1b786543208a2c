"""Measuring the claims layer: the labelled sentences (rules, classifier and both, on the
held-out part), HaluEval 2.0 biomedical fact labels, and labelled support pairs.
``medgate eval claims`` runs these and writes ``docs/results/claims_*``; the per-sentence
predictions are a run log (:mod:`medgate.eval.runlog`) from which the figures are recomputed.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import Field

from medgate.claims.citations import find_citations
from medgate.claims.detection import ClaimDetector, ClaimType, classify, detect_claims, severity_of
from medgate.claims.learned import SENTENCES_FILE, LabelledSentence, file_sha256
from medgate.claims.sentences import split_sentences
from medgate.claims.support import (
    Calibration,
    LexicalSupportJudge,
    SupportPair,
    calibrate_threshold,
    content_terms,
)
from medgate.errors import InputError
from medgate.eval.runlog import RunLog, spec_key
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


class SentencePrediction(Record):
    """What one system said about one labelled sentence: kept per item so every figure can be
    recomputed from the committed results."""

    id: str
    split: str
    group: str
    gold_type: ClaimType | None
    gold_severity: str | None
    cited: bool
    rules_types: list[ClaimType]
    learned_type: ClaimType | None = Field(description="The classifier's type, or None.")
    learned_probability: float | None
    combined_type: ClaimType | None = Field(description="Rules first, the classifier for misses.")
    combined_severity: str | None
    citations_found: bool

    @property
    def item_id(self) -> str:
        """The sentence's id, under the name every run log keys its items by."""
        return self.id


class ClaimsRunSpec(Record):
    """What decides the predictions of a labelled-sentence run; its digest names the run."""

    dataset: str = Field(description="The labelled sentences file.")
    data_sha256: str
    detector: str = Field(description="The learned detector's name and artifact provenance.")
    detector_threshold: float | None
    systems: list[str] = Field(description="The systems scored: rules, and learned and both.")

    def key(self) -> str:
        return spec_key(self)


class SystemScores(Record):
    """One detector's figures on one split."""

    n: int
    must_flag: int = Field(description="Uncited claims: what the uncited-claim flag should hit.")
    flag: PRF = Field(description="Uncited-claim flag vs should be flagged.")
    recall_interval: tuple[float, float] | None
    false_flags: int = Field(description="Non-claims and cited claims flagged as uncited.")
    should_not_flag: int
    false_flag_rate: float | None
    false_flag_interval: tuple[float, float] | None
    non_claims_flagged: str = Field(description="Flagged non-claims, 'k of n'.")
    cited_flagged: str = Field(description="Cited claims flagged as uncited, 'k of n'.")
    high_severity: int = Field(description="Claims labelled high severity.")
    high_severity_right: int = Field(description="Of those, reported high (undetected = wrong).")
    high_severity_share: float | None
    type_right: int = Field(description="Claims whose reported type is the labelled type.")
    claims: int
    recall_by_group: dict[str, str] = Field(description="'k of n' uncited claims flagged.")
    missed: list[str] = Field(default_factory=list, description="Uncited claims not flagged.")
    false: list[str] = Field(default_factory=list, description="Sentences flagged wrongly.")


class LabelledResult(Record):
    data_file: str
    data_sha256: str
    detector: str = Field(description="The learned detector's name and artifact provenance.")
    detector_threshold: float | None
    splits: dict[str, dict[str, SystemScores]] = Field(
        description="split -> system (rules, learned, both) -> scores."
    )
    items: list[SentencePrediction]


def _predicted(item: SentencePrediction, system: str) -> tuple[ClaimType | None, str | None]:
    if system == "rules":
        types = item.rules_types
        return (types[0], None) if types else (None, None)
    if system == "learned":
        return item.learned_type, None
    return item.combined_type, item.combined_severity


def score_system(
    items: Sequence[SentencePrediction], system: str, texts: dict[str, str]
) -> SystemScores:
    """Flag, false-flag, severity and type figures of ``system`` over ``items``."""
    tp = fp = fn = 0
    non_claims = [i for i in items if i.gold_type is None]
    cited_claims = [i for i in items if i.gold_type is not None and i.cited]
    non_flagged = cited_flagged = 0
    groups: dict[str, list[int]] = {}
    missed: list[str] = []
    false: list[str] = []
    high = high_right = type_right = claims = 0
    for item in items:
        predicted, severity = _predicted(item, system)
        if system != "both" and predicted is not None:
            severity = severity_of([predicted], texts[item.id]).value
        flagged = predicted is not None and not item.citations_found
        gold = item.gold_type is not None and not item.cited
        tp += flagged and gold
        fp += flagged and not gold
        fn += gold and not flagged
        if flagged and not gold:
            false.append(f"{item.id} ({item.group}): {texts[item.id]}")
            non_flagged += item.gold_type is None
            cited_flagged += item.gold_type is not None
        if gold:
            hits = groups.setdefault(item.group, [0, 0])
            hits[0] += flagged
            hits[1] += 1
            if not flagged:
                missed.append(f"{item.id} ({item.group}): {texts[item.id]}")
        if item.gold_type is not None:
            claims += 1
            type_right += predicted is item.gold_type
            if item.gold_severity == "high":
                high += 1
                high_right += severity == "high"
    should_not = len(items) - (tp + fn)
    return SystemScores(
        n=len(items),
        must_flag=tp + fn,
        flag=PRF.of(tp, fp, fn),
        recall_interval=wilson_interval(tp, tp + fn),
        false_flags=fp,
        should_not_flag=should_not,
        false_flag_rate=fp / should_not if should_not else None,
        false_flag_interval=wilson_interval(fp, should_not),
        non_claims_flagged=f"{non_flagged} of {len(non_claims)}",
        cited_flagged=f"{cited_flagged} of {len(cited_claims)}",
        high_severity=high,
        high_severity_right=high_right,
        high_severity_share=high_right / high if high else None,
        type_right=type_right,
        claims=claims,
        recall_by_group={g: f"{k} of {n}" for g, (k, n) in sorted(groups.items())},
        missed=missed,
        false=false,
    )


def predict_labelled(
    rows: Sequence[LabelledSentence], detector: ClaimDetector | None
) -> list[SentencePrediction]:
    """Every system's reading of every sentence (the classifier on all of them, so that it can
    be scored alone; the combination asks it only where the rules found nothing)."""
    learned = detector.predict([r.text for r in rows]) if detector is not None else []
    items = []
    for i, row in enumerate(rows):
        rules = classify(row.text)
        verdict = learned[i] if learned else None
        combined = rules or ([verdict.claim_type] if verdict and verdict.claim_type else [])
        items.append(
            SentencePrediction(
                id=row.id,
                split=row.split,
                group=row.group,
                gold_type=row.claim_type,
                gold_severity=row.severity,
                cited=row.cited,
                rules_types=rules,
                learned_type=verdict.claim_type if verdict else None,
                learned_probability=verdict.probability if verdict else None,
                combined_type=combined[0] if combined else None,
                combined_severity=severity_of(combined, row.text).value if combined else None,
                citations_found=bool(find_citations(row.text)),
            )
        )
    return items


def score_labelled(
    items: Sequence[SentencePrediction], texts: dict[str, str], systems: Sequence[str]
) -> dict[str, dict[str, SystemScores]]:
    """split -> system -> scores, from per-sentence predictions alone (and the sentences' text,
    which only names the misses)."""
    return {
        split: {
            system: score_system([i for i in items if i.split == split], system, texts)
            for system in systems
        }
        for split in ("heldout", "train")
    }


def evaluate_labelled(
    rows: Sequence[LabelledSentence],
    detector: ClaimDetector | None,
    *,
    data_file: Path = SENTENCES_FILE,
    detector_info: str = "",
    detector_threshold: float | None = None,
) -> LabelledResult:
    """Rules, classifier and both, scored separately on the training and held-out parts."""
    items = predict_labelled(rows, detector)
    return LabelledResult(
        data_file=data_file.name,
        data_sha256=file_sha256(data_file),
        detector=detector_info,
        detector_threshold=detector_threshold,
        splits=score_labelled(items, {r.id: r.text for r in rows}, systems_of(detector)),
        items=items,
    )


def systems_of(detector: ClaimDetector | None) -> list[str]:
    return ["rules", "learned", "both"] if detector is not None else ["rules"]


def write_labelled_log(result: LabelledResult, path: Path) -> RunLog[SentencePrediction]:
    """The result's per-sentence predictions as a run log at ``path``, replacing an earlier run
    there (a labelled-sentence run is deterministic and takes seconds, so it is never resumed)."""
    spec = ClaimsRunSpec(
        dataset=result.data_file,
        data_sha256=result.data_sha256,
        detector=result.detector,
        detector_threshold=result.detector_threshold,
        systems=list(result.splits["heldout"]),
    )
    path.unlink(missing_ok=True)
    path.with_suffix(".json").unlink(missing_ok=True)
    log = RunLog(path, SentencePrediction, spec)
    for item in result.items:
        log.append(item)
    return log


def recompute_labelled(
    path: Path, rows: Sequence[LabelledSentence]
) -> dict[str, dict[str, SystemScores]]:
    """The scores of a committed labelled-sentence run, from its log alone."""
    spec = ClaimsRunSpec.model_validate_json(path.with_suffix(".json").read_text(encoding="utf-8"))
    items = list(RunLog(path, SentencePrediction, spec).load().values())
    return score_labelled(items, {r.id: r.text for r in rows}, spec.systems)


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


def evaluate_halueval(
    rows: Iterable[dict[str, Any]], detector: ClaimDetector | None = None
) -> HaluEvalResult:
    answers = sentences_total = labelled = unlabelled = unmatched = 0
    s_tp = s_fp = s_fn = f_tp = f_fp = f_fn = a_tp = a_fp = a_fn = 0
    with_facts = false_sentences = flagged_sentences = flagged_all = 0
    false_facts = hallucinated_answers = 0
    by_type: dict[str, Counter[str]] = {}
    for row in rows:
        answers += 1
        sentences = split_sentences(row["answer"])
        sentences_total += len(sentences)
        claims = {c.sentence.index: c for c in detect_claims(sentences, detector) if not c.cited}
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
