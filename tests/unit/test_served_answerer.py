"""The grey-box answerer's reading of server replies.

The replies in tests/fixtures/served were recorded from llama.cpp's OpenAI-compatible server
(llama-cpp-python 0.3.36) on the embedded Qwen2.5-Coder-0.5B, asked the first PubMedQA-L items
with the HRS answerer prompt; a local server replays them.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from medgate.backends.base import AnswerSlot, ChatMessage, DecodeParams, WhiteBoxModel
from medgate.backends.openai import OpenAIBackend
from medgate.backends.pool import ModelPool
from medgate.backends.served import (
    CUE,
    FOLLOW_UP,
    ServedAnswerer,
    TopToken,
    cue_slot,
    read_labels,
    reasoning_length,
)
from medgate.config import load_config
from medgate.errors import EmbeddingUnavailable, ModelError
from medgate.hrs.prompts import ANSWER_CUE, REASONING_STOPS
from tests.unit.test_backend_openai import ReplayServer, Reply

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "served"
LABELS = ("yes", "no", "maybe")
MESSAGES = [
    ChatMessage(role="system", content="Reason briefly, then write 'Answer:' and one word."),
    ChatMessage(role="user", content="Question: Do mitochondria play a role in PCD?"),
]


def recorded(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return body


def params(**update: Any) -> DecodeParams:
    base = DecodeParams(
        max_tokens=50,
        min_tokens=8,
        stop=REASONING_STOPS,
        answer_slot=AnswerSlot(cue=ANSWER_CUE, labels=LABELS),
    )
    return base.model_copy(update=update)


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    srv = ReplayServer()
    srv.start()
    yield srv
    srv.stop()


def answerer(server: ReplayServer) -> ServedAnswerer:
    backend = OpenAIBackend(
        "qwen2.5-coder-0.5b", api_base=server.url, timeout_s=5.0, max_retries=1, backoff_s=0.01
    )
    return ServedAnswerer(backend)


def first_top(body: dict[str, Any]) -> list[TopToken]:
    entry = body["choices"][0]["logprobs"]["content"][0]
    return [TopToken(token=t["token"], logprob=t["logprob"]) for t in entry["top_logprobs"]]


def test_labels_sum_the_visible_tokens_that_begin_them() -> None:
    top = first_top(recorded("follow_up_reply.json"))
    reading = read_labels(top, LABELS)
    weight = {label: 0.0 for label in LABELS}
    for t in top:
        piece = t.token.strip().lower()
        hits = [label for label in LABELS if piece and label.startswith(piece)]
        if len(hits) == 1:
            weight[hits[0]] += math.exp(t.logprob)
    total = sum(weight.values())
    assert reading.unseen == []
    assert reading.mass == pytest.approx(total)
    assert reading.probs == pytest.approx({k: v / total for k, v in weight.items()})
    assert reading.unseen_mass == pytest.approx(1 - sum(math.exp(t.logprob) for t in top))


def test_a_label_outside_the_top_tokens_is_bounded_and_listed_never_zero() -> None:
    top = first_top(recorded("follow_up_reply.json"))
    reading = read_labels(top, ("yes", "no", "unclear"))
    assert reading.unseen == ["unclear"]
    smallest = min(math.exp(t.logprob) for t in top)
    bound = min(smallest, reading.unseen_mass)
    assert bound > 0
    raw_total = reading.mass + bound
    assert reading.probs["unclear"] == pytest.approx(bound / raw_total)


def test_reasoning_is_cut_before_the_first_stop_word_like_the_engine() -> None:
    tokens = ["no", "\n", "Answer", ":", " no"]
    kept, cut = reasoning_length(tokens, REASONING_STOPS)
    assert (kept, cut) == (2, 3)
    assert cue_slot(tokens, cut, ANSWER_CUE) == 4
    assert cue_slot(["no", "\n", "Answer", " is", " no"], 3, ANSWER_CUE) is None
    assert reasoning_length(["Yes", "."], REASONING_STOPS) == (2, -1)


def test_no_cue_in_the_reply_reads_the_slot_in_a_follow_up_request(server: ReplayServer) -> None:
    main, follow = recorded("main_reply_without_cue.json"), recorded("follow_up_reply.json")
    server.replies.extend([Reply(body=main), Reply(body=follow)])
    out = answerer(server).complete(MESSAGES, params())
    content = main["choices"][0]["logprobs"]["content"]
    assert out.answer_read == FOLLOW_UP
    assert out.text == main["choices"][0]["message"]["content"]
    assert out.token_logprobs == [e["logprob"] for e in content]
    assert out.prompt_tokens == main["usage"]["prompt_tokens"]
    assert out.label_probs == pytest.approx(read_labels(first_top(follow), LABELS).probs)
    assert out.opening_label_probs == pytest.approx(read_labels(first_top(main), LABELS).probs)
    first, second = server.requests
    assert first["logprobs"] is True and first["top_logprobs"] == 20
    assert first["temperature"] == 0.0 and first["max_tokens"] == 50 + 16
    assert first["repeat_penalty"] == 1.0 and first["min_tokens"] == 8
    assert second["messages"][-1] == {"role": "assistant", "content": out.text + ANSWER_CUE}
    assert second["continue_final_message"] is True


def test_an_answer_before_the_minimum_reasoning_is_taken_as_written(server: ReplayServer) -> None:
    # The model ended its turn after "no\n": over HTTP nothing forbids that (min_tokens bans
    # only <|endoftext|> on llama.cpp's server, not Qwen's <|im_end|>).
    main, follow = recorded("main_reply_two_tokens.json"), recorded("follow_up_reply.json")
    server.replies.extend([Reply(body=main), Reply(body=follow)])
    out = answerer(server).complete(MESSAGES, params())
    assert out.text == "no\n" and out.n_tokens == 2
    assert out.answer_read == FOLLOW_UP


def test_reply_without_logprobs_is_a_model_error(server: ReplayServer) -> None:
    body = copy.deepcopy(recorded("main_reply_two_tokens.json"))
    body["choices"][0]["logprobs"] = None
    server.replies.append(Reply(body=body))
    with pytest.raises(ModelError, match="no logprobs"):
        answerer(server).complete(MESSAGES, params())


def test_non_finite_logprob_is_a_model_error(server: ReplayServer) -> None:
    body = copy.deepcopy(recorded("main_reply_two_tokens.json"))
    raw = json.dumps(body).replace(
        json.dumps(body["choices"][0]["logprobs"]["content"][1]["logprob"]), "-Infinity", 1
    )
    server.replies.append(Reply(body=raw))
    with pytest.raises(ModelError, match="finite"):
        answerer(server).complete(MESSAGES, params())


def test_server_failure_is_a_model_error(server: ReplayServer) -> None:
    server.replies.extend([Reply(status=500, body={"error": "boom"})] * 2)
    with pytest.raises(ModelError):
        answerer(server).complete(MESSAGES, params())


def test_refused_sampling_fields_are_dropped_and_remembered(server: ReplayServer) -> None:
    main, follow = recorded("main_reply_two_tokens.json"), recorded("follow_up_reply.json")
    rejected = Reply(status=400, body={"error": {"message": "Unrecognized request argument"}})
    server.replies.extend([rejected, Reply(body=main), Reply(body=follow)])
    answerer_ = answerer(server)
    answerer_.complete(MESSAGES, params())
    assert "repeat_penalty" in server.requests[0]
    assert "repeat_penalty" not in server.requests[1]
    assert "continue_final_message" not in server.requests[2]


def test_samples_fall_back_to_seeded_requests_when_n_is_ignored(server: ReplayServer) -> None:
    main, follow = recorded("main_reply_two_tokens.json"), recorded("follow_up_reply.json")
    # llama.cpp's server returns one choice whatever n says; each needs its follow-up.
    server.replies.extend([Reply(body=main), Reply(body=follow)] * 3)
    samples = [params(temperature=0.3, seed=42 + i) for i in range(3)]
    outs = answerer(server).complete_batch(MESSAGES, samples)
    assert len(outs) == 3
    generating = [r for r in server.requests if "continue_final_message" not in r]
    assert generating[0]["n"] == 3 and generating[0]["seed"] == 42
    assert [r.get("n") for r in generating[1:]] == [None, None]
    assert [r["seed"] for r in generating[1:]] == [43, 44]
    assert all(r["top_p"] == 1.0 and r["temperature"] == 0.3 for r in generating)


def test_embeddings_failure_says_unavailable_once(server: ReplayServer) -> None:
    # llama.cpp's server started without --embedding true, as recorded.
    server.replies.extend([Reply(500, recorded("embeddings_refused_500.json"))] * 2)
    answerer_ = answerer(server)
    with pytest.raises(EmbeddingUnavailable, match="embedding=True"):
        answerer_.embed("aspirin")
    asked = len(server.requests)
    with pytest.raises(EmbeddingUnavailable):
        answerer_.embed("aspirin")
    assert len(server.requests) == asked


def test_pool_serves_openai_answerer_as_grey_box(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEDGATE_BACKEND__API_BASE", "http://127.0.0.1:9/v1")
    pool = ModelPool(load_config())
    model = pool.white_box("openai:qwen2.5-coder-0.5b", role="answerer")
    assert isinstance(model, ServedAnswerer) and isinstance(model, WhiteBoxModel)
    assert model is pool.white_box("openai:qwen2.5-coder-0.5b")
    assert model.fingerprint.startswith("served-")
    assert pool.roles()["answerer"].fingerprint is None
    assert CUE == "cue"


def test_llama_cpp_server_refusing_json_schema_with_500_falls_back_to_json_mode(
    server: ReplayServer,
) -> None:
    refused = recorded("json_schema_refused_500.json")
    reply = recorded("main_reply_two_tokens.json")
    server.replies.extend([Reply(500, refused), Reply(body=reply)])
    answerer_ = answerer(server)
    out = answerer_.chat(MESSAGES, json_schema={"type": "object"}, max_tokens=2)
    assert out.text == reply["choices"][0]["message"]["content"]
    kinds = [r["response_format"]["type"] for r in server.requests]
    assert kinds == ["json_schema", "json_object"]
    # llama-cpp-python compiles the schema in JSON mode into a grammar.
    assert server.requests[1]["response_format"]["schema"] == {"type": "object"}
