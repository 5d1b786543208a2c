from __future__ import annotations

import pytest

from medgate.claims.evaluation import (
    PRF,
    LabelledSentence,
    evaluate_halueval,
    evaluate_labelled,
    load_labelled,
    wilson_interval,
)


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


def test_labelled_set_has_enough_rows_of_every_kind() -> None:
    rows = load_labelled()
    assert len(rows) >= 60
    kinds = {r.claim_type for r in rows}
    assert None in kinds and len(kinds) >= 8
    assert any(r.cited for r in rows) and any(r.claim_type and not r.cited for r in rows)


def test_evaluate_labelled_counts_by_hand() -> None:
    rows = [
        LabelledSentence(id="a", text="Take 5 mg daily.", claim_type="dose", cited=False),
        LabelledSentence(id="b", text="Insulin is a hormone.", claim_type="dose", cited=False),
        LabelledSentence(
            id="c", text="Side effects include rash [1].", claim_type=None, cited=True
        ),
    ]
    result = evaluate_labelled(rows)
    assert (result.per_type["dose"].tp, result.per_type["dose"].fn) == (1, 1)
    assert result.per_type["side_effects"].fp == 1
    # flags: a is flagged and should be; b should be but is not; c is cited
    assert (result.uncited_flag.tp, result.uncited_flag.fp, result.uncited_flag.fn) == (1, 0, 1)
    assert result.citation_accuracy == 1.0
    assert len(result.errors) == 2


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
