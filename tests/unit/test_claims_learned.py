"""The learned claim detector: its data, its artifact, and how it sits beside the rules."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from medgate.claims import ClaimType, LearnedVerdict, Severity, check_report, detect_claims
from medgate.claims.learned import (
    ARTIFACT_FILE,
    SENTENCES_FILE,
    DetectorArtifact,
    LabelledSentence,
    LearnedClaimDetector,
    choose_threshold,
    file_sha256,
    fit_detector,
    load_sentences,
    split_of,
)
from medgate.errors import InputError

WORDS = ("take", "stop", "safe", "study", "the", "weather")


class WordEmbedder:
    """A stand-in encoder for unit tests: one dimension per listed word, normalised."""

    name = "word-count test encoder"
    fingerprint = "test-fingerprint"
    dimension = len(WORDS)

    def embed(self, texts: Sequence[str]) -> np.ndarray:  # type: ignore[type-arg]
        rows = [[t.lower().split().count(w) + 0.01 for w in WORDS] for t in texts]
        array = np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dimension)
        return array / np.linalg.norm(array, axis=1, keepdims=True)


class ScriptedDetector:
    """Answers from a table; records what it was asked."""

    name = "scripted"

    def __init__(self, answers: dict[str, ClaimType]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def predict(self, sentences: Sequence[str]) -> list[LearnedVerdict]:
        self.asked.extend(sentences)
        return [
            LearnedVerdict(
                claim_type=self.answers.get(s), probability=0.9 if s in self.answers else 0.1
            )
            for s in sentences
        ]


def test_shipped_sentences_are_enough_and_split_by_the_seeded_hash() -> None:
    rows = load_sentences()
    assert len(rows) >= 300
    assert all(r.split == split_of(r.id) for r in rows)
    heldout = [r for r in rows if r.split == "heldout"]
    assert 0.2 < len(heldout) / len(rows) < 0.4
    groups = {r.group for r in rows}
    for needed in (
        "dose_words",
        "med_change",
        "interaction",
        "contraindication",
        "population",
        "safety",
        "stat_words",
        "cited_numeric",
        "cited_author_year",
        "cited_doi",
        "cited_pmid",
        "non_claim",
    ):
        assert needed in groups


def test_a_row_with_a_forged_split_is_refused(tmp_path: Path) -> None:
    row = load_sentences()[0]
    forged = row.model_copy(update={"split": "train" if row.split == "heldout" else "heldout"})
    path = tmp_path / "rows.jsonl"
    path.write_text(forged.model_dump_json() + "\n")
    with pytest.raises(InputError, match="not the seeded split"):
        load_sentences(path)


def test_shipped_artifact_records_its_training() -> None:
    artifact = DetectorArtifact.model_validate_json(ARTIFACT_FILE.read_text())
    p = artifact.provenance
    assert p.data_sha256 == file_sha256(SENTENCES_FILE)
    train_ids = {r.id for r in load_sentences() if r.split == "train"}
    assert set(p.train_ids) == train_ids  # the held-out part was not trained on
    assert "none" in artifact.classes and len(artifact.coef) == len(artifact.classes)
    assert 0.0 < artifact.threshold < 1.0


def test_choose_threshold_by_hand() -> None:
    scores = [0.9, 0.8, 0.7, 0.6, 0.3, 0.2]
    claims = [True, False, True, True, False, False]
    # 3 negatives; 0% allowed -> just above the top negative (0.8): only 0.9 fires.
    assert choose_threshold(scores, claims, 0.0) == pytest.approx(0.8, abs=1e-9)
    assert choose_threshold(scores, claims, 0.0) > 0.8
    # 34% of 3 negatives -> 1 allowed -> just above the second negative (0.3).
    assert 0.3 < choose_threshold(scores, claims, 0.34) < 0.31


def _rows() -> list[LabelledSentence]:
    texts = [
        ("take the pills", ClaimType.DOSE),
        ("take take the", ClaimType.DOSE),
        ("stop the pills", ClaimType.MEDICATION_CHANGE),
        ("stop stop now", ClaimType.MEDICATION_CHANGE),
        ("it is safe", ClaimType.SAFETY),
        ("safe safe safe", ClaimType.SAFETY),
        ("the weather today", None),
        ("weather weather", None),
        ("the the weather", None),
        ("nice weather", None),
    ]
    rows = []
    for i, (text, kind) in enumerate(texts * 3):
        rows.append(
            LabelledSentence(
                id=f"t-{i}",
                text=text,
                group="test",
                claim_type=kind,
                severity="high" if kind else None,
                cited=False,
                split="train",
            )
        )
    return rows


def test_fit_and_predict_on_a_toy_encoder(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(r.model_dump_json() + "\n" for r in _rows()))
    artifact = fit_detector(_rows(), WordEmbedder(), data_file=data, folds=3)
    assert artifact.provenance.data_sha256 == file_sha256(data)
    detector = LearnedClaimDetector(artifact, WordEmbedder())
    stop, weather = detector.predict(["stop stop", "weather weather weather"])
    assert stop.claim_type is ClaimType.MEDICATION_CHANGE and stop.probability > 0.5
    assert weather.claim_type is None


def test_an_artifact_from_another_encoder_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(r.model_dump_json() + "\n" for r in _rows()))
    artifact = fit_detector(_rows(), WordEmbedder(), data_file=data, folds=3)
    other = WordEmbedder()
    other.fingerprint = "another"  # type: ignore[misc]
    with pytest.raises(InputError, match="another sentence encoder"):
        LearnedClaimDetector(artifact, other)


def test_detector_is_asked_only_about_what_the_rules_missed() -> None:
    missed = "Use the insulin only when your sugar is above ten."
    dose = "Take two hundred milligrams of ibuprofen every four hours."
    detector = ScriptedDetector({missed: ClaimType.MEDICATION_CHANGE, dose: ClaimType.EFFICACY})
    claims = detect_claims(f"{dose} {missed}", detector)
    assert detector.asked == [missed]
    first, second = claims
    assert (first.claim_type, first.detected_by) == (ClaimType.DOSE, "rules")
    assert (second.claim_type, second.detected_by) == (ClaimType.MEDICATION_CHANGE, "scripted")
    assert second.severity is Severity.HIGH and second.probability == pytest.approx(0.9)


def test_a_failing_detector_fails_closed() -> None:
    class Broken:
        name = "broken"

        def predict(self, sentences: Sequence[str]) -> list[LearnedVerdict]:
            raise RuntimeError("encoder crashed")

    result = check_report("Zinc shortens colds. The weather is nice.", detector=Broken())
    assert not result.is_safe
    assert any("claim detection failed" in e for e in result.errors)
    assert result.claims_count == 1  # the rules still ran


@pytest.mark.parametrize(
    "sentence",
    [
        "Adults usually need 7-9 hours of sleep per night.",
        "Wash your hands with soap and water for at least 20 seconds.",
        "You can also add more water to your meals to dilute the salt content.",
    ],
)
def test_a_learned_dose_needs_something_taken_or_given(sentence: str) -> None:
    detector = ScriptedDetector({sentence: ClaimType.DOSE})
    assert detect_claims(sentence, detector) == []


@pytest.mark.parametrize(
    "sentence",
    [
        "Paracetamol can help. Have one every morning with water, then another after lunch.",
        "Take one every morning.",
        "Spray once into each nostril at bedtime.",
    ],
)
def test_a_learned_dose_of_something_taken_stands(sentence: str) -> None:
    last = sentence.split(". ")[-1]
    detector = ScriptedDetector({last: ClaimType.DOSE})
    (claim,) = detect_claims(sentence, detector)
    assert claim.claim_type is ClaimType.DOSE and claim.severity is Severity.HIGH
