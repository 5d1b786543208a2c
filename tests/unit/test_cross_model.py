"""Cross-model agreement: a second model answers the same prompt, and the signal says whether
it agrees."""

from __future__ import annotations

from pathlib import Path

import pytest

from medgate.backends.fake import FakeModel
from medgate.config import load_config
from medgate.errors import ConfigError
from medgate.eval.data import dataset_split
from medgate.eval.runner import build_runtime
from medgate.hrs import features
from medgate.hrs.gate import HRSGate
from medgate.records import Case

from .hrs_helpers import CONFIDENT, CONFIDENT_NO, answerer, completion, hrs_config
from .test_gate import orchestrator

CASE = Case(question="Does drug X reduce mortality?", context="A trial of drug X.")
SIGNALS = ["entropy", "perplexity", "token_length", "cross_model"]


def _peer(dist: dict[str, float]) -> FakeModel:
    return FakeModel("peer").script_completion("Question:", completion(dist), repeat=True)


@pytest.mark.parametrize(("peer_says", "value"), [(CONFIDENT, 0.0), (CONFIDENT_NO, 1.0)])
def test_the_second_model_reads_the_same_prompt_and_the_signal_says_if_it_agrees(
    peer_says: dict[str, float], value: float
) -> None:
    peer = _peer(peer_says)
    cfg = hrs_config(signals=SIGNALS, peer_model="fake:peer")
    gate = HRSGate(answerer({}, completion(CONFIDENT)), orchestrator(), cfg, peer=peer)
    traj = gate.record(CASE)
    base = traj.iterations[0]
    assert base.signals["cross_model"].value == value
    assert base.run.peer_answer == ("yes" if value == 0.0 else "no")
    assert features.compute(traj, ["cross_model"], 0) == {"cross_model": value}
    verdict = gate.check(CASE)
    assert any(u.role == "peer" for u in verdict.trace.usage)
    # The second model saw exactly the answerer's prompt.
    assert peer.calls and "Does drug X reduce mortality?" in str(peer.calls[0])


def test_a_configured_second_model_answers_even_without_the_signal_for_the_risk_model() -> None:
    peer = _peer(CONFIDENT_NO)
    cfg = hrs_config(signals=["entropy", "perplexity", "token_length"], peer_model="fake:peer")
    gate = HRSGate(answerer({}, completion(CONFIDENT)), orchestrator(), cfg, peer=peer)
    traj = gate.record(CASE)
    assert "cross_model" not in traj.iterations[0].signals
    assert features.compute(traj, list(features.PEER_FEATURES), 0) == {
        "cross_model": 1.0,
        "peer_answer_prob": CONFIDENT_NO["yes"],  # the second model's probability of "yes"
    }


def test_without_a_second_model_the_signal_is_not_computed_and_never_low() -> None:
    gate = HRSGate(answerer({}, completion(CONFIDENT)), orchestrator(), hrs_config(signals=SIGNALS))
    s = gate.record(CASE).iterations[0].signals["cross_model"]
    assert s.value is None and "hrs.peer_model" in s.note
    with pytest.raises(ConfigError, match="no second model"):
        HRSGate(
            answerer({}, completion(CONFIDENT)),
            orchestrator(),
            hrs_config(signals=SIGNALS, peer_model="fake:peer"),
        )


def test_a_recording_names_its_second_model_and_others_keep_their_key(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(
        "".join(
            f'{{"id": "q{i}", "question": "Q{i}?", "context": "", "label": "yes"}}\n'
            for i in range(10)
        )
    )
    name = f"jsonl:{data}::yes,no"
    config = load_config(cache_dir=tmp_path, model="fake", data_dir=tmp_path)
    split = dataset_split(name, tmp_path)
    plain = build_runtime(config, name, split, "test")
    assert "peer_model" not in plain.spec.hrs
    paired = config.model_copy(update={"hrs": config.hrs.model_copy(update={"peer_model": "fake"})})
    with_peer = build_runtime(paired, name, split, "test")
    assert with_peer.spec.hrs["peer_model"] == "fake"
    assert with_peer.spec.key() != plain.spec.key()
