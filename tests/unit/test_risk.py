"""The risk features, the risk rule, the artifact and where its settings come from."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest

from medgate.backends.fake import FakeModel
from medgate.backends.pool import ModelPool
from medgate.config import HRSConfig, SuccessRule, load_config
from medgate.errors import ConfigError
from medgate.hrs import features, risk
from medgate.hrs.decision import Outcome, StopReason, Trajectory, decide
from medgate.pipeline import build_hrs_gate
from medgate.records import Status

from .risk_helpers import BASE_SIGNALS, entropy_model, iteration, loaded, run, trajectory

RISK = HRSConfig(rule=SuccessRule.RISK, risk_threshold=0.85, max_iterations=2)


# -- features ------------------------------------------------------------------------------------


def test_baseline_features_by_hand() -> None:
    f = features.compute(trajectory(), features.FEATURE_SETS["baseline+rarity"], 2)
    assert f["entropy"] == 0.4 and f["rarity"] == 0.3 and f["token_length"] == 0.5
    assert (f["p_yes"], f["p_no"], f["p_maybe"]) == (0.7, 0.2, 0.1)
    assert f["top_margin"] == pytest.approx(0.5)
    assert (f["pred_yes"], f["pred_no"], f["pred_maybe"]) == (1.0, 0.0, 0.0)
    assert f["three_labels"] == 1.0 and f["label_mass"] == 0.9
    assert f["sample_agreement"] == pytest.approx(2 / 3)
    assert f["sample_answer_prob"] == pytest.approx(2 / 3)  # samples put all mass on their label
    assert f["mean_logprob"] == -1.0 and f["min_logprob"] == -1.5
    # The opening token favoured "no" (0.6) while the final answer is "yes".
    assert (f["open_yes"], f["open_no"], f["open_maybe"]) == (0.3, 0.6, 0.1)
    assert f["opening_agrees"] == 0.0 and f["opening_answer_prob"] == 0.3
    assert f["opening_label_mass"] == 0.8


def test_round_features_by_hand() -> None:
    r1 = iteration(1, run("yes", {"yes": 0.6, "no": 0.4}), entropy=0.5, perplexity=0.3,
                   ambiguity=0.1, token_length=0.5)  # fmt: skip
    r2 = iteration(2, run("no", {"yes": 0.25, "no": 0.75}, mass=0.7), entropy=0.7,
                   perplexity=0.1, ambiguity=0.3, token_length=0.9)  # fmt: skip
    f = features.compute(trajectory(r1, r2), features.ROUNDS, 2)
    assert f["rounds_run"] == 2.0
    assert f["answer_changed_any"] == 1.0 and f["answer_changed_last"] == 1.0
    assert f["d_entropy"] == pytest.approx(0.3) and f["d_perplexity"] == pytest.approx(-0.1)
    assert f["d_ambiguity"] == pytest.approx(0.2) and f["d_token_length"] == pytest.approx(0.4)
    assert f["d_label_mass"] == pytest.approx(-0.2)
    assert f["d_answer_prob"] == pytest.approx(0.25 - 0.7)  # support for the baseline's "yes"
    # Reading only the first round: the answer had not changed yet.
    one = features.compute(trajectory(r1, r2), features.ROUNDS, 1)
    assert one["rounds_run"] == 1.0 and one["answer_changed_any"] == 0.0
    assert one["d_entropy"] == pytest.approx(0.1)


def test_without_rounds_nothing_moved_and_without_an_answer_nothing_is_known() -> None:
    f = features.compute(trajectory(), features.ROUNDS, 2)
    assert f["rounds_run"] == 0.0 and f["d_entropy"] == 0.0 and f["answer_changed_any"] == 0.0
    empty = features.compute(Trajectory(stopped=StopReason.ERROR), features.ROUNDS, 2)
    assert set(empty.values()) == {None}


def test_a_feature_the_run_lacks_is_none_never_a_guess() -> None:
    f = features.compute(trajectory(opening=False), features.BASELINE, 0)
    assert f["opening_agrees"] is None and f["open_yes"] is None
    assert f["entropy"] == 0.4
    assert features.needs_rounds(features.ROUNDS) and not features.needs_rounds(features.BASELINE)
    assert not features.needs_rounds(features.FEATURE_SETS["baseline+rarity"])


# -- the rule -------------------------------------------------------------------------------------


def _entropy_traj(value: float, *rounds: object, **kw: object) -> Trajectory:
    traj = trajectory()
    base = traj.iterations[0]
    sig = dict(base.signals)
    sig["entropy"] = sig["entropy"].model_copy(update={"value": value})
    return traj.model_copy(update={"iterations": [base.model_copy(update={"signals": sig})], **kw})


def test_risk_by_hand_and_the_threshold_decides() -> None:
    scorer = loaded(entropy_model())
    value, missing = scorer.score(_entropy_traj(0.75))
    assert missing == [] and value == pytest.approx(1 / (1 + math.exp(-2.0)))  # 0.8808
    released = decide(_entropy_traj(0.75), RISK.model_copy(update={"risk_threshold": 0.9}), scorer)
    assert released is not None and released.status is Status.RELEASED
    assert released.outcome is Outcome.RISK and released.answer == "yes"
    assert released.rule == "risk" and released.risk_model == "test/risk.json"
    assert released.risk_model_sha256 == "ab" * 32
    assert released.risk == pytest.approx(0.8808, abs=1e-4)
    assert "risk_threshold" in released.decided_by
    held = decide(_entropy_traj(0.75), RISK, scorer)  # threshold 0.85 < 0.8808
    assert held is not None and held.status is Status.ESCALATED and held.answer is None
    assert held.outcome is Outcome.RISK and held.risk == pytest.approx(0.8808, abs=1e-4)
    # At the threshold itself the answer is released (risk <= threshold).
    at = RISK.model_copy(update={"risk_threshold": 0.5})
    assert decide(_entropy_traj(0.5), at, scorer).status is Status.RELEASED  # type: ignore[union-attr]


def test_no_risk_model_or_a_missing_feature_fails_closed() -> None:
    none = decide(_entropy_traj(0.1), RISK, None)
    assert none is not None and none.status is Status.ESCALATED
    assert none.outcome is Outcome.UNRELIABLE and "no risk model" in none.reason
    model = entropy_model().model_copy(update={"features": ["opening_agrees"]})
    unread = decide(trajectory(opening=False), RISK, loaded(model))
    assert unread is not None and unread.status is Status.ESCALATED
    assert unread.outcome is Outcome.UNRELIABLE and "opening_agrees" in unread.reason
    assert unread.risk is None


def test_a_rounds_model_waits_for_its_rounds_and_a_failed_round_escalates() -> None:
    scorer = loaded(entropy_model(rounds=2, knowledge="retrieval"))
    r1 = iteration(1, run("yes", {"yes": 0.7, "no": 0.3}), **BASE_SIGNALS)
    r2 = iteration(2, run("yes", {"yes": 0.7, "no": 0.3}), **BASE_SIGNALS)
    assert decide(trajectory(r1), RISK, scorer) is None  # another round is needed
    failed = decide(trajectory(r1, stopped=StopReason.ERROR), RISK, scorer)
    assert failed is not None and failed.outcome is Outcome.ERROR
    assert failed.status is Status.ESCALATED
    dry = decide(trajectory(r1, stopped=StopReason.ABSTAIN), RISK, scorer)
    assert dry is not None and dry.outcome is Outcome.RISK  # scored on the rounds it has
    full = decide(trajectory(r1, r2), RISK, scorer)
    assert full is not None and full.outcome is Outcome.RISK


def test_an_unreliable_answer_is_held_back_before_any_risk_is_read() -> None:
    traj = trajectory()
    base = traj.iterations[0]
    low = base.model_copy(update={"run": base.run.model_copy(update={"label_mass": 0.1})})
    d = decide(
        traj.model_copy(update={"iterations": [low]}), RISK, loaded(entropy_model(threshold=1.0))
    )
    assert d is not None and d.outcome is Outcome.UNRELIABLE and d.status is Status.ESCALATED


def test_the_paper_rules_ignore_the_risk_model() -> None:
    paper = decide(_entropy_traj(0.1), HRSConfig(), loaded(entropy_model(threshold=0.0)))
    assert paper is not None and paper.outcome is Outcome.GATE and paper.rule == "algorithm1"


# -- the artifact ---------------------------------------------------------------------------------


def test_artifact_round_trip_and_refusals(tmp_path: Path) -> None:
    model = entropy_model("ab" * 32)
    path = tmp_path / "risk" / risk.artifact_name("ab" * 32, "baseline")
    risk.save_risk_model(model, path)
    back = risk.load_risk_model(path, "ab" * 32)
    assert back.model == model
    assert back.origin.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert back.id == f"risk/{path.name}"
    with pytest.raises(ConfigError, match="other weights"):
        risk.load_risk_model(path, "cd" * 32)
    raw = json.loads(path.read_text())
    for change, message in (
        ({"version": 99}, "version"),
        ({"features": ["no_such_feature"]}, "lacks"),
        ({"coef": [1.0, 2.0]}, "do not match"),
        ({"scale": [0.0]}, "scale"),
    ):
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({**raw, **change}))
        with pytest.raises(ConfigError, match=message):
            risk.load_risk_model(bad, "ab" * 32)
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ConfigError, match="unreadable"):
        risk.load_risk_model(tmp_path / "broken.json", "ab" * 32)


def _ship(monkeypatch: pytest.MonkeyPatch, folder: Path, *models: risk.RiskModel) -> None:
    monkeypatch.setattr(risk, "SHIPPED_DIR", folder)
    for m in models:
        risk.save_risk_model(m, folder / risk.artifact_name(m.model_fingerprint, m.feature_set))


def test_resolution_configured_then_fitted_then_shipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fp = "ab" * 32
    _ship(monkeypatch, tmp_path / "shipped", entropy_model(fp, threshold=0.3))
    config = load_config(cache_dir=tmp_path / "cache")
    assert risk.resolve(config, fp).model.operating_point.threshold == 0.3  # type: ignore[union-attr]
    assert risk.resolve(config, "cd" * 32) is None  # nothing for other weights
    fitted = entropy_model(fp, threshold=0.4)
    risk.save_risk_model(fitted, risk.fitted_dir(config) / risk.artifact_name(fp, "baseline"))
    assert risk.resolve(config, fp).model.operating_point.threshold == 0.4  # type: ignore[union-attr]
    own = tmp_path / "own.json"
    risk.save_risk_model(entropy_model(fp, threshold=0.5), own)
    named = load_config(cache_dir=tmp_path / "cache", hrs={"risk_model": str(own)})
    assert risk.resolve(named, fp).model.operating_point.threshold == 0.5  # type: ignore[union-attr]
    missing = load_config(hrs={"risk_model": str(tmp_path / "nope.json")})
    with pytest.raises(ConfigError, match="not a file"):
        risk.resolve(missing, fp)


def test_round_features_apply_only_with_the_knowledge_they_were_recorded_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fp = "ab" * 32
    rounds = entropy_model(fp, threshold=0.6, rounds=2, knowledge="retrieval")
    rounds = rounds.model_copy(update={"calibration_auroc": 0.9})
    _ship(monkeypatch, tmp_path / "shipped", entropy_model(fp, threshold=0.3), rounds)
    own_knowledge = load_config(cache_dir=tmp_path)  # hrs.knowledge = 'self'
    assert risk.resolve(own_knowledge, fp).model.feature_set == "baseline"  # type: ignore[union-attr]
    retrieval = load_config(cache_dir=tmp_path, hrs={"knowledge": "retrieval"})
    assert risk.resolve(retrieval, fp).model.feature_set == "rounds"  # type: ignore[union-attr]
    path = tmp_path / "rounds.json"
    risk.save_risk_model(rounds, path)
    with pytest.raises(ConfigError, match="would not transfer"):
        risk.resolve(load_config(hrs={"risk_model": str(path)}), fp)


def test_operating_point_sets_only_what_nobody_configured() -> None:
    scorer = loaded(entropy_model(threshold=0.3))
    hrs, origins = risk.apply_operating_point(HRSConfig(), scorer)
    assert hrs.rule is SuccessRule.RISK and hrs.risk_threshold == 0.3
    assert (hrs.gate_e, hrs.gate_p, hrs.tau_e, hrs.tau_p) == (0.8, 0.4, 0.8, 0.4)
    assert origins["risk_threshold"] == scorer.origin and origins["rule"] == scorer.origin
    # Configured, even to the default value, wins over the shipped point.
    mine, origins = risk.apply_operating_point(
        HRSConfig(risk_threshold=0.5, rule=SuccessRule.ALGORITHM1), scorer
    )
    assert mine.risk_threshold == 0.5 and origins["risk_threshold"].source == "configured"
    assert mine.rule is SuccessRule.ALGORITHM1 and origins["rule"].source == "configured"
    assert mine.gate_e == 0.8 and origins["gate_e"] == scorer.origin


def test_a_fresh_gate_decides_with_the_shipped_point_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeModel("fake:m")
    monkeypatch.setattr(ModelPool, "get", lambda self, spec, role=None: fake)
    _ship(monkeypatch, tmp_path / "shipped", entropy_model(fake.fingerprint, threshold=0.3))
    gate = build_hrs_gate(load_config(cache_dir=tmp_path / "cache", model="fake:m"))
    assert gate.config.rule is SuccessRule.RISK and gate.risk is not None
    t = gate.thresholds["risk_threshold"]
    assert t.value == 0.3 and t.origin.source == "artifact"
    assert t.origin.artifact == f"shipped/{risk.artifact_name(fake.fingerprint, 'baseline')}"
    mine = load_config(cache_dir=tmp_path / "cache", model="fake:m", hrs={"risk_threshold": 0.7})
    configured = build_hrs_gate(mine)
    assert configured.thresholds["risk_threshold"].value == 0.7
    assert configured.thresholds["risk_threshold"].origin.source == "configured"


def test_a_model_reading_a_second_models_answer_applies_only_with_that_model_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fp, peer_fp = "ab" * 32, "cd" * 32
    peer = entropy_model(fp, threshold=0.6).model_copy(
        update={
            "feature_set": "evidence+cross_model",
            "features": ["entropy", "cross_model"],
            "mean": [0.5, 0.0],
            "scale": [0.25, 1.0],
            "coef": [2.0, 1.0],
            "calibration_auroc": 0.9,
            "peer_model": "fake:peer",
            "peer_fingerprint": peer_fp,
        }
    )
    _ship(monkeypatch, tmp_path / "shipped", entropy_model(fp, threshold=0.3), peer)
    alone = load_config(cache_dir=tmp_path)
    assert risk.resolve(alone, fp).model.feature_set == "baseline"  # type: ignore[union-attr]
    paired = load_config(cache_dir=tmp_path, hrs={"peer_model": "fake:peer"})
    chosen = risk.resolve(paired, fp, peer_fp)
    assert chosen is not None and chosen.model.feature_set == "evidence+cross_model"
    # Another second model agrees with the answerer at another rate: the fit does not transfer.
    other = risk.resolve(paired, fp, "ef" * 32)
    assert other is not None and other.model.feature_set == "baseline"
    path = tmp_path / "peer.json"
    risk.save_risk_model(peer, path)
    named = load_config(cache_dir=tmp_path, hrs={"risk_model": path, "peer_model": "fake:other"})
    with pytest.raises(ConfigError, match="second model"):
        risk.resolve(named, fp, "ef" * 32)
    assert risk.resolve(named, fp, peer_fp) is not None


def test_the_peer_features_read_the_second_models_answer_from_the_run() -> None:
    base = trajectory()
    assert features.compute(base, list(features.PEER_FEATURES), 0) == {
        "cross_model": None,
        "peer_answer_prob": None,
    }
    first = base.iterations[0]
    run_ = first.run.model_copy(
        update={"peer_answer": "no", "peer_distribution": {"yes": 0.25, "no": 0.75}}
    )
    paired = base.model_copy(update={"iterations": [first.model_copy(update={"run": run_})]})
    f = features.compute(paired, list(features.PEER_FEATURES), 0)
    assert f == {"cross_model": 1.0, "peer_answer_prob": 0.25}  # the answer was "yes"
    assert not features.needs_rounds(features.FEATURE_SETS["evidence+cross_model"])
