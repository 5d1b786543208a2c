from __future__ import annotations

import json
from pathlib import Path

import pytest

from medgate.claims.evaluation import (
    PRF,
    evaluate_halueval,
    evaluate_labelled,
    recompute_labelled,
    wilson_interval,
    write_labelled_log,
)
from medgate.claims.learned import SENTENCES_FILE, LabelledSentence, load_sentences
from medgate.claims.results import LABELLED_LOG
from tests.unit.test_claims_learned import ScriptedDetector


def test_prf_by_hand() -> None:
    m = PRF.of(tp=3, fp=1, fn=2)
    assert m.precision == pytest.approx(0.75)
    assert m.recall == pytest.approx(0.6)
    assert m.f1 == pytest.approx(2 * 0.75 * 0.6 / 1.35)
    assert PRF.of(0, 0, 2).precision is None


def test_wilson_interval_by_hand() -> None:
    low, high = wilson_interval(5, 10) or (0.0, 0.0)
    # p = 0.5, n = 10: centre 0.5, half-width 1.96*sqrt(0.025+0.0096)/1.384 = 0.2366
    assert low == pytest.approx(0.2366, abs=1e-3) and high == pytest.approx(0.7634, abs=1e-3)
    assert wilson_interval(0, 0) is None


def _row(
    i: str, text: str, kind: str | None, severity: str | None, cited: bool
) -> LabelledSentence:
    return LabelledSentence(
        id=i,
        text=text,
        group="g",
        claim_type=kind,
        severity=severity,
        cited=cited,
        split="heldout",
    )


def _rows() -> list[LabelledSentence]:
    return [
        _row("a", "Take two tablets every four hours.", "dose", "high", False),
        _row(
            "b",
            "Use the insulin only when your sugar is above ten.",
            "medication_change",
            "high",
            False,
        ),
        _row("c", "Doxycycline can cause photosensitivity [9].", "side_effects", "medium", True),
        _row("d", "The clinic opens at eight.", None, None, False),
        _row("e", "Insulin is a hormone.", None, None, False),
    ]


def test_evaluate_labelled_counts_by_hand() -> None:
    rows = _rows()
    learned = ScriptedDetector({rows[1].text: "medication_change", rows[4].text: "efficacy"})
    result = evaluate_labelled(rows, learned, data_file=SENTENCES_FILE)
    rules = result.splits["heldout"]["rules"]
    # Rules: a flagged (right); b missed; c is cited so not flagged; d, e not flagged.
    assert (rules.flag.tp, rules.flag.fp, rules.flag.fn) == (1, 0, 1)
    assert (rules.false_flags, rules.should_not_flag) == (0, 3)
    assert (rules.high_severity_right, rules.high_severity) == (1, 2)
    both = result.splits["heldout"]["both"]
    # Both: the classifier adds b (right) and e (wrong).
    assert (both.flag.tp, both.flag.fp, both.flag.fn) == (2, 1, 0)
    assert both.false_flag_rate == pytest.approx(1 / 3)
    assert both.non_claims_flagged == "1 of 2" and both.cited_flagged == "0 of 1"
    assert (both.high_severity_right, both.high_severity) == (2, 2)
    learned_only = result.splits["heldout"]["learned"]
    assert (learned_only.flag.tp, learned_only.flag.fp, learned_only.flag.fn) == (1, 1, 1)
    assert [i.id for i in result.items] == ["a", "b", "c", "d", "e"]
    assert result.splits["train"]["rules"].n == 0


def test_labelled_run_log_recomputes_the_scores(tmp_path: Path) -> None:
    rows = _rows()
    learned = ScriptedDetector({rows[1].text: "medication_change", rows[4].text: "efficacy"})
    result = evaluate_labelled(rows, learned, data_file=SENTENCES_FILE)
    path = tmp_path / "run.jsonl"
    write_labelled_log(result, path)
    write_labelled_log(result, path)  # a second run replaces the first, never appends to it
    assert len(path.read_text().splitlines()) == len(rows)
    assert recompute_labelled(path, rows) == result.splits
    rules_only = evaluate_labelled(rows, None, data_file=SENTENCES_FILE)
    write_labelled_log(rules_only, path)
    assert list(recompute_labelled(path, rows)["heldout"]) == ["rules"]


def test_committed_claims_figures_recompute_from_their_log() -> None:
    results = Path(__file__).resolve().parents[2] / "docs" / "results"
    committed = json.loads((results / "claims_labelled.json").read_text())
    assert committed["items_log"] == LABELLED_LOG
    recomputed = recompute_labelled(results / LABELLED_LOG, load_sentences())
    assert {
        split: {system: scores.model_dump(mode="json") for system, scores in systems.items()}
        for split, systems in recomputed.items()
    } == committed["splits"]


def test_evaluate_halueval_by_hand() -> None:
    row = {
        "answer": "Studies show that drug X cures cancer. Drug X is a small molecule.",
        "facts": ["Drug X cures cancer.", "Drug X is a small molecule.", "extra"],
        "fact_labels": ["false", "true"],
        "label": "hallucinated",
    }
    result = evaluate_halueval([row])
    assert result.sentences == 2 and result.facts_labelled == 2 and result.facts_unlabelled == 1
    assert (result.sentence_level.tp, result.sentence_level.fp) == (1, 0)
    assert result.sentence_level.fn == 0
    assert result.base_rate == 0.5
    assert result.answer_level.tp == 1
    assert result.by_type == {"study": {"flagged": 1, "with_false_fact": 1}}
