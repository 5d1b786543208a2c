"""HRA that sees wrong and degenerate answers: degeneration, sampling consistency, the fitted
risk model (applied with numpy, failing closed), the generator's samples and repeat penalty."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from medgate.backends.base import ChatMessage, Completion, DecodeParams
from medgate.backends.fake import FakeModel
from medgate.backends.llamacpp_engine import penalise_repeats
from medgate.careguard import HallucinationJudge
from medgate.careguard.categories import SAFE_REFUSAL
from medgate.careguard.consistency import UnigramModel, measure_consistency
from medgate.careguard.degeneration import assess_degeneration
from medgate.careguard.evaluators import JudgeOutcome, JudgeReply
from medgate.careguard.generator import Generator, token_stats, trim_to_sentence
from medgate.careguard.hra_fit import (
    FeatureAUROC,
    append_item,
    auroc_with_ci,
    fit_risk_model,
    parse_shard,
    read_items,
    split_of,
)
from medgate.careguard.hra_risk import (
    FEATURES,
    HRARiskArtifact,
    HRARiskModel,
    hra_from_probability,
    load_risk_model,
    risk_features,
)
from medgate.careguard.records import Draft, Outcome, TokenStats
from medgate.careguard.release_checks import CheckName, ReleaseContext, release_findings
from medgate.careguard.triage import no_triage
from medgate.errors import ConfigError
from medgate.records import Case, Status
from tests.unit.stage_reports import careguard_report
from tests.unit.test_careguard_gate import Rig, verdict_json

#: The draft `medgate care "How can I tell a cold from hay fever?"` released before the
#: repeat penalty (greedy, 128 tokens).
LOOPING = """To tell a cold from hay fever, you should first identify the symptoms of the cold. \
Hay fever is a common cold that can be caused by various factors, including exposure to hay, \
dust, or other allergens. Symptoms of hay fever include:
- A persistent cough or wheezing
- A feeling of a cold or a cold-like sensation
- A feeling of a sore throat or a sore throat-like sensation
- A feeling of a headache or a headache-like sensation
- A feeling of a sore throat or a sore throat-like sensation
- A feeling of a sore throat or a sore throat-like sensation
- A feeling"""

CLEAN = (
    "A cold is caused by a virus and often brings a sore throat, a blocked nose and sometimes a "
    "mild fever; it usually clears within a week or two. Hay fever is an allergy to pollen: it "
    "causes sneezing, itchy and watery eyes and a runny nose, with no fever, and lasts as long "
    "as the pollen season does. If symptoms return every spring or summer, hay fever is more "
    "likely. A pharmacist can help you choose what may ease the symptoms."
)


# --- degeneration -----------------------------------------------------------------------------


def test_the_looping_list_is_degenerate_for_several_reasons() -> None:
    found = assess_degeneration(LOOPING, hit_token_limit=True)
    assert found.degenerate
    assert found.repeated_items >= 3
    assert found.repeated_ngram_share > 0.2
    assert found.score == 1.0
    assert any("list items repeat" in f for f in found.findings)


def test_a_varied_answer_is_not_degenerate() -> None:
    found = assess_degeneration(CLEAN, hit_token_limit=False)
    assert not found.degenerate
    assert found.findings == []
    assert 0.0 <= found.score < 0.5
    assert found.distinct_ratio > 0.5


def test_one_word_said_over_and_over_is_degenerate() -> None:
    text = "Symptoms: " + ", ".join(["sneezing"] * 16) + " and a sneezing cough with sneezing."
    found = assess_degeneration(text)
    assert found.degenerate
    assert found.top_word == "sneezing"
    assert any('"sneezing"' in f for f in found.findings)


def test_a_stump_counts_only_when_the_budget_ran_out() -> None:
    stump = "Hay fever is an allergy. Its symptoms include sneezing and"
    assert assess_degeneration(stump, hit_token_limit=True).truncated
    assert not assess_degeneration(stump, hit_token_limit=False).degenerate
    # A list cut back to its complete items is not a stump; a bare list opener is.
    assert not assess_degeneration(
        "Signs:\n- sneezing\n- itchy eyes", hit_token_limit=True
    ).truncated
    assert assess_degeneration("Signs include:", hit_token_limit=True).truncated


def test_the_release_check_holds_a_degenerate_draft_back_with_feedback() -> None:
    ctx = ReleaseContext(
        question="How can I tell a cold from hay fever?",
        draft=LOOPING,
        instructions=[],
        harmful=False,
        yes_granted=False,
        truncated=True,
    )
    findings = release_findings(ctx)
    assert [f.check for f in findings] == [CheckName.DEGENERATE]
    assert "repeat" in findings[0].feedback
    clean = ReleaseContext(
        question=ctx.question, draft=CLEAN, instructions=[], harmful=False, yes_granted=False
    )
    assert release_findings(clean) == []


def test_a_truncated_draft_is_cut_back_to_its_last_complete_sentence_or_item() -> None:
    assert trim_to_sentence("It is an allergy. It causes sneez") == "It is an allergy."
    assert trim_to_sentence("Signs:\n- sneezing\n- itchy ey") == "Signs:\n- sneezing"
    # The next item's number ends like a sentence; it is a stump too.
    kept = "Differences:\n\n1. **Cause**: allergy.\n\n2. **Signs**: wheeze."
    assert trim_to_sentence(kept + "\n\n4. **Treat") == kept
    assert trim_to_sentence("no sentence end at all") == "no sentence end at all"


# --- consistency ------------------------------------------------------------------------------

VOCAB = ("cold", "virus", "fever", "pollen", "allergy", "sneezing", "bacteria", "liver")


class WordEmbedder:
    """A stand-in encoder: one dimension per listed word, normalised."""

    name = "word-count test encoder"
    fingerprint = "test-fingerprint"
    dimension = len(VOCAB)

    def embed(self, texts: Sequence[str]) -> np.ndarray:  # type: ignore[type-arg]
        rows = [[t.lower().count(w) + 0.01 for w in VOCAB] for t in texts]
        array = np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dimension)
        return array / np.linalg.norm(array, axis=1, keepdims=True)


SAMPLES = [
    "A cold comes from a virus. Hay fever is an allergy to pollen.",
    "Colds are caused by a virus. Pollen allergy causes hay fever and sneezing.",
]


def test_a_sentence_the_samples_support_scores_lower_than_one_they_do_not() -> None:
    draft = "A cold is caused by a virus. Hay fever is an infection of the liver by bacteria."
    result = measure_consistency(draft, SAMPLES, WordEmbedder())
    assert result.error is None and result.samples == 2
    supported, invented = result.sentences
    assert supported.embedding is not None and invented.embedding is not None
    assert supported.embedding < invented.embedding
    assert supported.ngram_mean < invented.ngram_mean
    assert result.embedding_max == pytest.approx(invented.embedding)
    assert result.embedding_mean == pytest.approx((supported.embedding + invented.embedding) / 2)
    assert result.ngram_max == pytest.approx(max(supported.ngram_max, invented.ngram_max))


def test_the_unigram_model_is_add_one_smoothed_over_samples_and_draft() -> None:
    model = UnigramModel(["a a b", "b c"])
    # counts a2 b2 c1, total 5, vocabulary 3
    assert model.surprise("a") == pytest.approx(-np.log(3 / 8))
    assert model.surprise("zebra") == pytest.approx(-np.log(1 / 8))


def test_without_samples_consistency_is_not_claimed() -> None:
    result = measure_consistency("A cold is a virus.", ["", "  "], WordEmbedder())
    assert result.error is not None and result.ngram_mean is None


# --- the risk model ---------------------------------------------------------------------------


def artifact(threshold: float = 0.5, samples: int = 2) -> HRARiskArtifact:
    n = len(FEATURES)
    coef = [0.0] * n
    coef[FEATURES.index("embedding_max")] = 4.0
    return HRARiskArtifact(
        features=list(FEATURES),
        mean=[0.0] * n,
        scale=[1.0] * n,
        coef=coef,
        intercept=-1.0,
        threshold=threshold,
        samples=samples,
        provenance={"model_sha256": "x"},
    )


def test_the_probability_is_the_logistic_of_the_standardised_features() -> None:
    model = HRARiskModel(artifact(), "digest", "test")
    features = dict.fromkeys(FEATURES, 1.0)
    features["embedding_max"] = 0.5
    assert model.probability(features) == pytest.approx(1 / (1 + np.exp(-(-1.0 + 4.0 * 0.5))))
    with pytest.raises(ValueError, match="not computed"):
        model.probability({k: v for k, v in features.items() if k != "perplexity"})
    with pytest.raises(ValueError, match="finite"):
        model.probability({**features, "judge": float("nan")})


@pytest.mark.parametrize(
    ("p", "score"), [(0.0, 1), (0.19, 1), (0.2, 2), (0.39, 2), (0.4, 3), (0.65, 4), (0.81, 5)]
)
def test_the_draft_passes_exactly_below_the_threshold(p: float, score: int) -> None:
    assert hra_from_probability(p, 0.4) == score


def test_a_broken_artifact_is_a_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "hra.json"
    bad.write_text(json.dumps({**artifact().model_dump(), "coef": [1.0]}))
    with pytest.raises(ConfigError, match="could not be loaded"):
        load_risk_model(bad)
    with pytest.raises(ConfigError):
        load_risk_model(tmp_path / "missing.json")


def test_features_are_oriented_so_that_higher_is_riskier() -> None:
    consistency = measure_consistency("A cold is a virus.", SAMPLES, WordEmbedder())
    stats = TokenStats(tokens=3, mean_logprob=-0.5, min_logprob=-2.0, perplexity=float(np.exp(0.5)))
    f = risk_features(3, consistency, assess_degeneration(CLEAN), stats)
    assert set(f) == set(FEATURES)
    assert f["token_nll_mean"] == 0.5 and f["token_nll_max"] == 2.0
    assert f["perplexity"] == pytest.approx(1 - np.exp(-0.5))
    assert "token_nll_mean" not in risk_features(3, consistency, assess_degeneration(CLEAN), None)


def judged(score: int) -> JudgeOutcome:
    return JudgeOutcome(reply=JudgeReply(justification="ok", score=score))


def draft_with(samples: list[str], text: str = CLEAN) -> Draft:
    return Draft(
        text=text,
        samples=samples,
        tokens=TokenStats(tokens=10, mean_logprob=-0.2, min_logprob=-1.0, perplexity=1.22),
    )


def judge_with(model: HRARiskModel | None, error: str | None = None) -> HallucinationJudge:
    return HallucinationJudge(
        FakeModel("hra"), risk_model=model, embedder=WordEmbedder(), risk_error=error
    )


def test_the_judge_scores_with_the_risk_model_and_keeps_its_inputs() -> None:
    judge = judge_with(HRARiskModel(artifact(threshold=0.9), "d", "test"))
    a = judge.assess(judged(1), no_triage(), draft_with(SAMPLES), 0)
    assert a.error is None
    p = a.components["p_wrong"]
    assert a.score == hra_from_probability(p, 0.9)
    assert a.components["embedding_max"] >= 0 and a.components["risk_threshold"] == 0.9
    # The claims layer's penalty still adds a step.
    assert judge.assess(judged(1), no_triage(), draft_with(SAMPLES), 1).score == a.score + 1


def test_a_failing_judge_stays_a_floor_under_the_risk_model() -> None:
    judge = judge_with(HRARiskModel(artifact(threshold=0.95), "d", "test"))
    a = judge.assess(judged(4), no_triage(), draft_with(SAMPLES), 0)
    assert a.score == 4 and a.components["judge_floor"] == 4.0


@pytest.mark.parametrize(
    "draft",
    [
        draft_with([]),  # no samples beside the draft
        draft_with(SAMPLES[:1]),  # fewer samples than the model was fitted on
        Draft(text=CLEAN, samples=SAMPLES),  # no token signals (a black-box generator)
    ],
)
def test_the_risk_model_fails_closed_when_a_feature_is_missing(draft: Draft) -> None:
    a = judge_with(HRARiskModel(artifact(), "d", "test")).assess(judged(1), no_triage(), draft, 0)
    assert a.score == 5 and a.error is not None and a.error.startswith("HRA risk model")


def test_a_risk_model_that_could_not_be_loaded_fails_every_draft() -> None:
    a = judge_with(None, error="ConfigError: no artifact").assess(
        judged(1), no_triage(), draft_with(SAMPLES), 0
    )
    assert a.score == 5 and a.error is not None and "no artifact" in a.error


def test_without_a_risk_model_the_judge_blends_as_before() -> None:
    a = judge_with(None).assess(judged(2), no_triage(), draft_with(SAMPLES), 0)
    assert a.score == 2 and a.error is None and "p_wrong" not in a.components


# --- the generator ----------------------------------------------------------------------------


def test_the_generator_draws_seeded_samples_with_the_repeat_penalty_in_one_pass() -> None:
    seen: list[list[DecodeParams]] = []

    class Recorder(FakeModel):
        def complete_batch(
            self, messages: Sequence[ChatMessage], params: Sequence[DecodeParams]
        ) -> list[Completion]:
            seen.append(list(params))
            return [
                Completion(text=f"answer {i}.", token_logprobs=[-0.1, -0.3])
                for i in range(len(params))
            ]

    gen = Generator(Recorder(), samples=2, sample_temperature=0.8, repeat_penalty=1.1, seed=7)
    draft = gen.draft(Case(question="How can I tell a cold from hay fever?"), no_triage())
    (params,) = seen
    assert [p.temperature for p in params] == [0.0, 0.8, 0.8]
    assert all(p.repeat_penalty == 1.1 for p in params)
    assert len({p.seed for p in params[1:]}) == 2 and params[0].seed not in gen.sample_seeds(0)
    assert draft.text == "answer 0." and draft.samples == ["answer 1.", "answer 2."]
    assert draft.tokens is not None and draft.tokens.min_logprob == pytest.approx(-0.3)
    # Another round samples with other seeds.
    assert set(gen.sample_seeds(1)).isdisjoint(gen.sample_seeds(0))


def test_a_draft_that_used_its_whole_budget_is_trimmed_and_marked() -> None:
    model = FakeModel("generator").script_completion(
        "Patient question",
        Completion(text="Hay fever is an allergy. It causes sneez", token_logprobs=[-0.1] * 16),
    )
    draft = Generator(model, max_tokens=16).draft(Case(question="cold or hay fever?"), no_triage())
    assert draft.truncated and draft.text == "Hay fever is an allergy."


def test_token_stats_refuse_numbers_that_are_not_finite() -> None:
    assert token_stats([]) is None
    assert token_stats([-0.1, float("nan")]) is None
    stats = token_stats([-0.5, -1.5])
    assert stats is not None and stats.perplexity == pytest.approx(float(np.exp(1.0)))


def test_the_repeat_penalty_lowers_only_recent_tokens_as_llama_cpp_does() -> None:
    logits = np.array([2.0, -1.0, 3.0, 0.5], dtype=np.float32)
    out = penalise_repeats(logits, [0, 1, 0], 2.0, 64)
    assert out.tolist() == [1.0, -2.0, 3.0, 0.5]
    assert penalise_repeats(logits, [0, 1, 2], 2.0, 1).tolist() == [2.0, -1.0, 1.5, 0.5]


# --- fitting ----------------------------------------------------------------------------------


def test_fitting_chooses_on_validation_and_the_artifact_reproduces_the_model() -> None:
    rng = np.random.default_rng(0)
    rows, wrong, splits = [], [], []
    for i in range(120):
        bad = bool(i % 2)
        f = {n: float(rng.normal()) for n in FEATURES}
        f["embedding_max"] = float(rng.normal(1.5 if bad else 0.0, 1.0))
        rows.append(f)
        wrong.append(bad)
        splits.append(("train", "train", "train", "validation", "test")[i % 5])
    art, report = fit_risk_model(rows, wrong, splits, samples=2, provenance={"model_sha256": "m"})
    assert report.items == {"train": 72, "validation": 24, "test": 24}
    assert report.test.value is not None and report.test.value > 0.7
    assert report.test.ci is not None and report.test.ci[0] < report.test.value < report.test.ci[1]
    assert max(report.coefficients, key=lambda k: abs(report.coefficients[k])) == "embedding_max"
    assert art.provenance["model_sha256"] == "m" and art.provenance["c"] == report.c
    model = HRARiskModel(HRARiskArtifact.model_validate_json(art.model_dump_json()), "d", "t")
    test_rows = [r for r, s in zip(rows, splits, strict=True) if s == "test"]
    p = [model.probability(r) for r in test_rows]
    w = [x for x, s in zip(wrong, splits, strict=True) if s == "test"]
    assert auroc_with_ci(p, w).value == pytest.approx(report.test.value)


def test_an_auroc_is_shown_with_its_interval_or_as_undefined() -> None:
    assert auroc_with_ci([0.9, 0.8, 0.1, 0.2], [True, True, False, False]).value == 1.0
    assert FeatureAUROC(value=0.8333, ci=(0.64, 0.97), n=40).shown() == "0.833 [0.64, 0.97]"
    assert FeatureAUROC(value=0.7, ci=None, n=3).shown() == "0.700 [nan, nan]"
    # One class only: AUROC is undefined, and the report says so rather than printing 0.5.
    assert auroc_with_ci([0.1, 0.2], [False, False]).shown() == "n/a"


def test_readings_appended_one_at_a_time_read_back_in_order(tmp_path: Path) -> None:
    path = tmp_path / "readings.jsonl.gz"
    append_item(path, {"key": "a", "p": 0.1})
    append_item(path, {"key": "b", "statements": [["It stores bile.", 0.2]]})
    assert read_items(path) == [
        {"key": "a", "p": 0.1},
        {"key": "b", "statements": [["It stores bile.", 0.2]]},
    ]


def test_a_shard_is_k_of_n_with_k_below_n() -> None:
    assert parse_shard("0/2") == (0, 2)
    assert parse_shard("1/2") == (1, 2)
    for bad in ("2/2", "3/2", "1", "a/2", "-1/2", "1/0", ""):
        with pytest.raises(argparse.ArgumentTypeError, match="K/N"):
            parse_shard(bad)


def test_the_split_depends_on_the_id_alone() -> None:
    parts = [split_of(f"halueval2-biomed-{i}") for i in range(400)]
    assert parts == [split_of(f"halueval2-biomed-{i}") for i in range(400)]
    assert 0.5 < parts.count("train") / 400 < 0.7


# --- the gate ---------------------------------------------------------------------------------


def test_a_degenerate_draft_is_refined_and_the_correction_reaches_the_generator() -> None:
    rig = Rig().drafts(LOOPING, CLEAN).sra(verdict_json(1)).hra(verdict_json(1))
    verdict = rig.gate().check(Case(question="How can I tell a cold from hay fever?"))
    assert verdict.status is Status.REFINED
    assert verdict.answer is not None and verdict.answer.startswith(CLEAN)
    report = careguard_report(verdict)
    assert report.outcome is Outcome.REFINED
    first = report.rounds[0]
    assert first.assessments["hra"].score == 1  # the judges passed it; the check did not
    assert [f.check for f in first.release_findings] == [CheckName.DEGENERATE]
    assert "do not repeat a word, phrase or list item" in rig.generator_prompts[1]


def test_a_draft_that_stays_degenerate_is_never_released() -> None:
    rig = Rig().drafts(LOOPING).sra(verdict_json(1)).hra(verdict_json(1))
    verdict = rig.gate(max_refinements=2).check(
        Case(question="How can I tell a cold from hay fever?")
    )
    assert verdict.status is Status.BLOCKED
    assert verdict.answer is not None and verdict.answer.startswith(SAFE_REFUSAL)
    assert "degenerate" in verdict.reason
    held = verdict.held_back
    assert held is not None and "A feeling of a sore throat" in held.answer


# --- assembly ---------------------------------------------------------------------------------


def hra_judge_of(config_overrides: dict[str, object]) -> tuple[HallucinationJudge, Generator]:
    from medgate.backends.pool import ModelPool
    from medgate.careguard.build import build_careguard
    from medgate.config import load_config

    config = load_config(model="fake", careguard=config_overrides)
    gate = build_careguard(config, ModelPool(config))
    judge = gate.evaluators.judge("hra")
    assert isinstance(judge, HallucinationJudge)
    return judge, gate.generator


def test_a_white_box_generator_gets_samples_and_hra_its_risk_model(tmp_path: Path) -> None:
    from medgate.embeddings import default_embedder

    path = tmp_path / "hra.json"
    art = artifact().model_copy(
        update={"provenance": {"encoder_sha256": default_embedder().fingerprint}}
    )
    path.write_text(art.model_dump_json())
    judge, generator = hra_judge_of({"hra_risk": {"enabled": True, "artifact": str(path)}})
    assert judge.risk_model is not None and judge.risk_error is None
    assert judge.risk_model.source == str(path)
    assert generator.samples == 2 and generator.repeat_penalty == 1.1
    off, plain = hra_judge_of({})
    assert off.risk_model is None and off.risk_error is None and plain.samples == 0


def test_a_risk_model_fitted_on_another_encoder_fails_closed(tmp_path: Path) -> None:
    path = tmp_path / "hra.json"
    art = artifact().model_copy(update={"provenance": {"encoder_sha256": "another"}})
    path.write_text(art.model_dump_json())
    judge, _ = hra_judge_of({"hra_risk": {"enabled": True, "artifact": str(path)}})
    assert judge.risk_model is None and judge.risk_error is not None
    assert "another" in judge.risk_error
    a = judge.assess(judged(1), no_triage(), draft_with(SAMPLES), 0)
    assert a.score == 5


def test_a_risk_model_fitted_on_another_generators_drafts_fails_closed(tmp_path: Path) -> None:
    from medgate.embeddings import default_embedder

    path = tmp_path / "hra.json"
    provenance = {"encoder_sha256": default_embedder().fingerprint, "model_sha256": "other-model"}
    path.write_text(artifact().model_copy(update={"provenance": provenance}).model_dump_json())
    judge, _ = hra_judge_of({"hra_risk": {"enabled": True, "artifact": str(path)}})
    assert judge.risk_model is None and judge.risk_error is not None
    assert "other-model" in judge.risk_error and "fake:fake" in judge.risk_error
    assert judge.assess(judged(1), no_triage(), draft_with(SAMPLES), 0).score == 5


def test_the_shipped_risk_model_records_where_it_came_from() -> None:
    from medgate.backends.embedded import EMBEDDED_MODELS
    from medgate.embeddings import default_embedder

    model = load_risk_model()
    art = model.artifact
    assert art.features == list(FEATURES) and art.samples == 2
    assert 0.0 < art.threshold < 1.0
    p = art.provenance
    assert p["model_sha256"] == EMBEDDED_MODELS["qwen2.5-coder-0.5b"].sha256
    assert p["encoder_sha256"] == default_embedder().fingerprint
    assert p["data"] == "halueval2_biomed/halueval2_biomed.jsonl" and len(p["data_sha256"]) == 64
    assert set(p["ids"]) == {"train", "validation", "test"}
    assert not set(p["ids"]["train"]) & set(p["ids"]["test"])
    # It scores a feature vector without scikit-learn.
    assert 0.0 <= model.probability(dict.fromkeys(FEATURES, 0.5)) <= 1.0
