"""The call cache, resumable recording, and the replay of recorded trajectories."""

from __future__ import annotations

from pathlib import Path

import pytest

from medgate.backends.base import ChatMessage, DecodeParams
from medgate.backends.fake import FakeModel
from medgate.config import HRSConfig, load_config
from medgate.errors import ConfigError
from medgate.eval.cache import CachedModel, CallCache
from medgate.eval.data import EvalItem, stratified_split
from medgate.eval.metrics import gate_metrics
from medgate.eval.replay import check_coverage, outcomes
from medgate.eval.runner import build_runtime, record_split
from medgate.records import LabelSet

from .helpers import recorded, scripted_answerer


def test_cached_model_replays_without_loading_the_model(tmp_path: Path) -> None:
    cache = CallCache(tmp_path / "calls.sqlite")
    fake = FakeModel("m").script_embedding("q", [1.0, 2.0])
    fake.script_chat("hi", "hello")
    built: list[int] = []

    def factory() -> FakeModel:
        built.append(1)
        return fake

    model = CachedModel(factory, "m", fake.fingerprint, cache)
    msgs = [ChatMessage(role="user", content="hi")]
    assert model.embed("q") == [1.0, 2.0]
    assert model.chat(msgs).text == "hello"
    assert cache.stats.misses == 2 and len(fake.calls) == 2
    # A new wrapper over the same cache answers from it and never builds the model.
    again = CachedModel(factory, "m", fake.fingerprint, CallCache(tmp_path / "calls.sqlite"))
    assert again.embed("q") == [1.0, 2.0]
    assert again.chat(msgs).text == "hello"
    assert not again.loaded and len(built) == 1
    # Different sampling parameters are a different call.
    with pytest.raises(Exception, match="unscripted"):
        again.chat(msgs, temperature=0.5)


def test_cache_refuses_a_model_with_another_fingerprint(tmp_path: Path) -> None:
    model = CachedModel(
        lambda: FakeModel("other"), "x", "fake:expected", CallCache(tmp_path / "c.sqlite")
    )
    with pytest.raises(ConfigError, match="fingerprint"):
        model.complete([ChatMessage(role="user", content="q")], DecodeParams())


def _items() -> list[EvalItem]:
    qs = ["easy one", "hard two", "easy three", "hard four", "hard five", "easy six"]
    return [
        EvalItem(
            id=f"i{k}",
            question=f"Is {q} about treatment?",
            context=f"Treatment context {k}.",
            gold="yes" if k % 2 == 0 else "no",
            labels=LabelSet.YES_NO_MAYBE,
        )
        for k, q in enumerate(qs)
    ]


def test_recording_is_resumable_and_replay_needs_no_calls(tmp_path: Path) -> None:
    config = load_config(
        cache_dir=tmp_path,
        model="fake:answerer",
        hrs={
            "signals": ["entropy", "perplexity", "ambiguity", "token_length"],
            "max_iterations": 2,
            # One passage a round: the toy corpus has a passage per training item, and an
            # item's own passage is never injected into its own rounds.
            "facts_per_iteration": 1,
        },
    )
    items = _items()
    split = stratified_split(items, 2, None, seed=1)
    fake = scripted_answerer()
    cache = CallCache(tmp_path / "calls.sqlite")
    runtime = build_runtime(config, "toy", split, "train", cache=cache)
    runtime.gate.answerer._factory = lambda: fake  # type: ignore[attr-defined]
    runtime.baseline_gate.answerer = runtime.gate.answerer
    _, summary, store = record_split(runtime, split.train[:2], tmp_path)
    assert summary.recorded == 2
    records, summary, _ = record_split(runtime, split.train, tmp_path)
    assert summary.reused == 2 and summary.recorded == len(split.train) - 2
    assert [r.item_id for r in records] == [i.id for i in split.train]
    # Confident items stop at the gate; unsure ones carry K=2 recorded rounds.
    for r, item in zip(records, split.train, strict=True):
        if "easy" in item.question:
            assert not r.rounds_recorded and len(r.trajectory.iterations) == 1
        else:
            assert r.rounds_recorded and len(r.trajectory.iterations) == 3
    calls = len(fake.calls)
    # A sweep replays the recording: no model call at all.
    for tau_e in (0.5, 0.8, 0.95, 0.99):
        cfg = config.hrs.model_copy(update={"tau_e": tau_e})
        check_coverage(records, cfg, 2)
        gate_metrics(outcomes(records, cfg))
    assert len(fake.calls) == calls
    assert store.path.is_file() and store.manifest.is_file()


def test_replay_refuses_settings_the_recording_cannot_answer() -> None:
    # Passed the recording gate (0.5/0.4) with entropy 0.3, so no rounds were recorded.
    recs = [recorded("a", "yes", ("yes", 0.3, 0.1), with_rounds=False)]
    check_coverage(recs, HRSConfig(max_iterations=2), 2)
    with pytest.raises(ConfigError, match="rounds were not recorded"):
        check_coverage(recs, HRSConfig(gate_e=0.2, max_iterations=2), 2)
    with pytest.raises(ConfigError, match="exceeds the recorded K"):
        check_coverage(recs, HRSConfig(max_iterations=5), 2)


def test_label_free_revert_escalates_and_oracle_reverts_only_correct_baselines() -> None:
    cfg = HRSConfig(max_iterations=2)
    recs = [
        # Right baseline 'yes', refinement flips to a confident 'no'.
        recorded("a", "yes", ("yes", 0.9, 0.5), ("no", 0.2, 0.1)),
        # Wrong baseline 'no', refinement flips to the right 'yes'.
        recorded("b", "yes", ("no", 0.9, 0.5), ("yes", 0.2, 0.1)),
        # Confident right baseline.
        recorded("c", "no", ("no", 0.1, 0.1), with_rounds=False),
        # Never confident: exhausted after K=2.
        recorded("d", "no", ("yes", 0.99, 0.6), ("yes", 0.99, 0.6), ("yes", 0.99, 0.6)),
    ]
    free = {o.item_id: o for o in outcomes(recs, cfg)}
    assert free["a"].escalated and free["b"].escalated and free["d"].escalated
    assert not free["c"].escalated and free["c"].final == "no"
    oracle = {o.item_id: o for o in outcomes(recs, cfg, oracle_revert=True)}
    # The oracle keeps the right baseline for a and accepts the flip for b (it read the gold).
    assert oracle["a"].final == "yes" and not oracle["a"].escalated
    assert oracle["b"].final == "yes" and not oracle["b"].escalated
    m = gate_metrics(list(free.values()))
    # Wrong baselines: b and d, both escalated -> safety gain 1; 3 of 4 escalated.
    assert m.safety_gain == 1.0 and m.escalation_rate == 0.75 and m.degradation_rate == 0.0


def test_leaving_out_entropy_rests_the_rule_on_perplexity() -> None:
    cfg = HRSConfig(max_iterations=0)
    recs = [
        recorded("a", "yes", ("yes", 0.9, 0.1), with_rounds=True),
        recorded("b", "yes", ("no", 0.9, 0.9), with_rounds=True),
    ]
    assert [o.escalated for o in outcomes(recs, cfg)] == [True, True]
    assert [o.escalated for o in outcomes(recs, cfg, removed=["entropy"])] == [False, True]
