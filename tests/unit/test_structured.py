"""The structured-reply layer: schema from the reply model, one tolerant extractor, strict types."""

from __future__ import annotations

import json

import pytest

from medgate.backends.base import ChatMessage
from medgate.backends.fake import FakeModel
from medgate.backends.structured import (
    ReplyFormatError,
    chat_json,
    extract_object,
    parse_reply,
    reply_schema,
)
from medgate.careguard.evaluators import JudgeReply
from medgate.careguard.triage import TriageReply
from medgate.errors import ModelError
from medgate.hrs.orchestrator import ModelOrchestrator, OrchestratorReply
from medgate.records import Case

ASK = [ChatMessage(role="user", content="Rate it.")]


def test_the_schema_is_derived_from_the_reply_model() -> None:
    schema = reply_schema(OrchestratorReply)
    assert schema == {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["CONTINUE", "ABSTAIN"]},
            "facts": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": 200},
                "maxItems": 3,
            },
            "rationale": {"type": "string", "maxLength": 160},
        },
        "required": ["action", "facts", "rationale"],
        "additionalProperties": False,
    }
    judge = reply_schema(JudgeReply)
    assert judge["properties"]["score"]["enum"] == [1, 2, 3, 4, 5]
    assert judge["properties"]["justification"]["maxLength"] == 160
    # The categories in the order the prompt lists them (general first), not the enum's.
    assert reply_schema(TriageReply)["properties"]["category"]["enum"][0] == "general_information"
    # A copy each time: a caller cannot change what the next one gets.
    judge["properties"].clear()
    assert reply_schema(JudgeReply)["properties"]


@pytest.mark.parametrize(
    "text",
    [
        '{"justification": "fine", "score": 2}',
        'Sure! Here it is: {"justification": "fine", "score": 2} Hope that helps.',
        '```json\n{"justification": "fine", "score": 2}\n```',
        '{"justification": "fine\nreally", "score": 2}',  # a raw line break in a string
    ],
)
def test_the_extractor_tolerates_fences_prose_and_raw_line_breaks(text: str) -> None:
    assert parse_reply(text, JudgeReply).score == 2


@pytest.mark.parametrize(
    ("score", "problem"),
    [
        ("true", "valid integer"),
        ('"1"', "valid integer"),
        ("1.0", "valid integer"),
        ("6", "less than or equal to 5"),
        ("NaN", "not a JSON number"),
        ("Infinity", "not a JSON number"),
    ],
)
def test_a_score_is_an_integer_from_1_to_5_and_nothing_else(score: str, problem: str) -> None:
    with pytest.raises(ReplyFormatError, match=problem):
        parse_reply('{"justification": "x", "score": ' + score + "}", JudgeReply)


@pytest.mark.parametrize(
    "text",
    [
        '{"justification": "x", "score": 5, "score": 1}',
        '{"justification": "x", "score": 2, "extra": {"a": 1, "a": 2}}',
    ],
)
def test_a_duplicated_key_is_an_error_not_the_last_value(text: str) -> None:
    with pytest.raises(ReplyFormatError, match="appears twice"):
        extract_object(text)


def test_only_the_first_object_is_read() -> None:
    # A later "{" inside a broken object must not be read as the reply.
    with pytest.raises(ReplyFormatError, match="malformed"):
        parse_reply('{"justification": "see {"score": 1}", "score": 5', JudgeReply)
    with pytest.raises(ReplyFormatError, match="no JSON object"):
        parse_reply("score: 1", JudgeReply)


def test_chat_json_hands_the_schema_to_the_backend_and_returns_usage() -> None:
    seen: list[object] = []

    class Recording(FakeModel):
        def chat(self, messages, **kw):  # type: ignore[no-untyped-def, override]
            seen.append(kw.get("json_schema"))
            return super().chat(messages, **kw)

    model = Recording("judge").script_chat("Rate", '{"justification": "ok", "score": 1}')
    reply = chat_json(model, ASK, JudgeReply, role="sra")
    assert reply.value == JudgeReply(justification="ok", score=1)
    assert reply.usage.role == "sra" and reply.text.startswith("{")
    assert seen == [reply_schema(JudgeReply)]


def test_one_error_type_and_it_is_a_model_error() -> None:
    model = FakeModel().script_chat("Rate", "I would say two.")
    with pytest.raises(ReplyFormatError) as caught:
        chat_json(model, ASK, JudgeReply)
    assert isinstance(caught.value, ModelError) and caught.value.text == "I would say two."


def test_the_orchestrator_accepts_a_raw_line_break_inside_a_string() -> None:
    reply = '{"action": "CONTINUE", "facts": ["Aspirin inhibits\nCOX-1."], "rationale": "r"}'
    model = FakeModel().script_chat("Question:", reply)
    step = ModelOrchestrator(model).step(Case(question="Does aspirin work?"), [])
    assert [f.text for f in step.facts] == ["Aspirin inhibits\nCOX-1."]


def test_an_unusable_orchestrator_reply_is_a_model_error() -> None:
    bad = json.dumps({"action": "CONTINUE", "facts": "not a list", "rationale": ""})
    model = FakeModel().script_chat("Question:", bad)
    with pytest.raises(ModelError, match="unusable orchestrator reply"):
        ModelOrchestrator(model).step(Case(question="Does aspirin work?"), [])
