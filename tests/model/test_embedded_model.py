"""The real embedded model through the llama.cpp backend and the HRS gate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medgate.backends.base import AnswerSlot, DecodeParams
from medgate.backends.embedded import EMBEDDED_MODELS, resolve_embedded, sha256_of
from medgate.backends.llamacpp import LlamaCppModel
from medgate.config import DEFAULT_MODEL, SMALL_EMBEDDED_MODEL, load_config
from medgate.hrs.prompts import REASONING_STOPS, answerer_messages
from medgate.records import Case
from tests.console import medgate_json

pytestmark = pytest.mark.model
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("spec", [DEFAULT_MODEL, SMALL_EMBEDDED_MODEL])
def test_assembled_model_matches_its_pinned_sha256(spec: str) -> None:
    name = spec.removeprefix("embedded:")
    path = resolve_embedded(name, load_config().cache_dir)
    assert sha256_of(path) == EMBEDDED_MODELS[name].sha256


def _params(**kw: object) -> DecodeParams:
    base = DecodeParams(
        max_tokens=50,
        min_tokens=8,
        stop=REASONING_STOPS,
        answer_slot=AnswerSlot(labels=("yes", "no", "maybe")),
    )
    return base.model_copy(update=kw)


def test_completion_reasons_first_and_reads_a_distribution(
    embedded: LlamaCppModel, pubmedqa_case: Case
) -> None:
    out = embedded.complete(answerer_messages(pubmedqa_case), _params())
    assert out.n_tokens >= 8, "reasoning is forced to at least min_tokens"
    assert out.n_tokens <= 50
    assert "Answer" not in out.text
    assert out.label_probs is not None
    assert sum(out.label_probs.values()) == pytest.approx(1.0)
    assert all(lp <= 0.0 for lp in out.token_logprobs)
    assert out.label_mass is not None and 0.0 < out.label_mass <= 1.0


def test_seeded_samples_repeat_and_greedy_is_stable(
    embedded: LlamaCppModel, pubmedqa_case: Case
) -> None:
    msgs = answerer_messages(pubmedqa_case)
    a = embedded.complete(msgs, _params(temperature=0.3, seed=7))
    greedy = embedded.complete(msgs, _params())
    b = embedded.complete(msgs, _params(temperature=0.3, seed=7))
    assert a.text == b.text
    assert a.token_logprobs == pytest.approx(b.token_logprobs, abs=1e-4)
    again = embedded.complete(msgs, _params())
    assert greedy.text == again.text


def test_embedding_is_a_hidden_state_vector(embedded: LlamaCppModel) -> None:
    v = embedded.embed("Does aspirin prevent colorectal adenomas?")
    assert len(v) == 896  # Qwen2.5-0.5B hidden size
    assert any(abs(x) > 0 for x in v)


def test_chat_with_json_schema_returns_json(embedded: LlamaCppModel) -> None:
    from medgate.backends.base import ChatMessage

    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
        "required": ["answer"],
    }
    reply = embedded.chat(
        [ChatMessage(role="user", content="Is water wet? Reply in JSON.")],
        max_tokens=30,
        json_schema=schema,
    )
    assert json.loads(reply.text)["answer"] in {"yes", "no"}
    assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens > 0


def _ask(question: str, context_file: Path) -> dict[str, object]:
    return medgate_json(
        "ask",
        question,
        "--context-file",
        str(context_file),
        "--json",
        "--max-iterations",
        "1",
        "--seed",
        "42",
    )


def test_medgate_ask_on_pubmedqa_gives_signals_in_range_and_repeats(
    pubmedqa_case: Case, tmp_path: Path
) -> None:
    ctx = tmp_path / "abstract.txt"
    ctx.write_text(pubmedqa_case.context)
    first = _ask(pubmedqa_case.question, ctx)
    assert first["status"] in {"released", "refined", "escalated"}
    signals = first["signals"]
    assert isinstance(signals, dict)
    assert set(signals) == {"entropy", "perplexity", "ambiguity", "rarity", "token_length"}
    for name, s in signals.items():
        if s["value"] is None:
            assert name == "rarity" and s["status"] == "not computed"
        else:
            assert 0.0 <= s["value"] <= 1.0
    assert any(k.endswith("answer") for k in first["timings"])  # type: ignore[union-attr]
    second = _ask(pubmedqa_case.question, ctx)
    assert second["status"] == first["status"]
    assert second["answer"] == first["answer"]
    for name, s in signals.items():
        other = second["signals"][name]  # type: ignore[index]
        assert other["value"] == pytest.approx(s["value"], abs=1e-6)


def test_a_fresh_install_decides_with_the_shipped_risk_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    from medgate.hrs.risk import SHIPPED_DIR, artifact_name

    # A cache directory of its own, as a fresh install has: a risk model fitted on this machine
    # (`medgate eval risk` writes one into the cache) would rightly win over the shipped one.
    # Only the assembled model files are shared, so that nothing is assembled again.
    fresh = tmp_path / "cache"
    fresh.mkdir()
    (fresh / "models").symlink_to(load_config().cache_dir / "models", target_is_directory=True)
    monkeypatch.setenv("MEDGATE_CACHE_DIR", str(fresh))
    sha = EMBEDDED_MODELS[DEFAULT_MODEL.removeprefix("embedded:")].sha256
    # The shipped default: of the models that read no knowledge round, the one with the higher
    # calibration AUROC (docs/hrs.md).
    shipped = SHIPPED_DIR / artifact_name(sha, "evidence")
    assert shipped.is_file(), "the embedded model's evidence risk model ships with medgate"
    ctx = tmp_path / "abstract.txt"
    ctx.write_text((ROOT / "examples" / "aspirin_abstract.txt").read_text())
    out = medgate_json(
        "ask",
        "Does aspirin reduce the risk of colorectal adenoma recurrence?",
        "--context-file",
        str(ctx),
        "--json",
        "--no-log",
    )
    decided = out["hrs_decision"]
    assert decided["rule"] == "risk"
    assert decided["risk_model"] == f"shipped/{shipped.name}"
    assert decided["risk"] is not None and 0.0 <= decided["risk"] <= 1.0
    origin = decided["threshold_origin"]
    assert origin["source"] == "artifact" and origin["artifact"] == f"shipped/{shipped.name}"
    assert origin["sha256"] == hashlib.sha256(shipped.read_bytes()).hexdigest()
    released = out["status"] == "released"
    assert released == (decided["risk"] <= decided["risk_threshold"])


def test_continuations_with_the_same_tokens_are_decoded_once_and_agree(
    embedded: LlamaCppModel, pubmedqa_case: Case
) -> None:
    # Two greedy continuations never diverge, so they share every decoded cell (one batch entry);
    # a seeded sample beside that pair repeats what it gives beside a single greedy run.
    msgs = answerer_messages(pubmedqa_case)
    sample = _params(temperature=0.3, seed=7)
    g1, g2, s1 = embedded.complete_batch(msgs, [_params(), _params(), sample])
    assert g1.text == g2.text and g1.token_logprobs == g2.token_logprobs
    assert g1.label_probs == g2.label_probs
    _, s2 = embedded.complete_batch(msgs, [_params(), sample])
    assert s1.text == s2.text
    assert s1.label_probs is not None and s2.label_probs is not None


def test_after_forgetting_a_prompt_reads_as_if_it_came_first(
    embedded: LlamaCppModel, pubmedqa_case: Case
) -> None:
    """What a case decides must not depend on the case before it. The same prompt read after
    another that shares its instructions is decoded from where they part; forgotten, it is read
    from scratch and gives exactly the first reading's numbers."""
    msgs = answerer_messages(pubmedqa_case)
    other = answerer_messages(Case(question="Does regular walking lower blood pressure?"))
    embedded.forget_prompt()
    first = embedded.complete(msgs, _params())
    embedded.complete(other, _params())
    embedded.forget_prompt()
    again = embedded.complete(msgs, _params())
    assert again.text == first.text
    assert again.token_logprobs == first.token_logprobs
    assert again.label_probs == first.label_probs
