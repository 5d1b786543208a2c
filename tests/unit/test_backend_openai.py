"""The OpenAI-compatible backend against a local server that replays OpenAI-shaped replies."""

from __future__ import annotations

import json
import math
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from medgate.backends.base import ChatMessage, ChatReply
from medgate.backends.openai import (
    DEFAULT_API_BASE,
    PRICES,
    OpenAIBackend,
    price_for,
)
from medgate.config import MedgateConfig, ModelPrice
from medgate.errors import ConfigError, ModelError, PrerequisiteError


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


class ReplayServer:
    """Serves scripted replies in order on 127.0.0.1 and records what it was sent."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                server.requests.append(json.loads(self.rfile.read(length)))
                server.paths.append(self.path)
                server.headers.append(dict(self.headers))
                reply = server.replies.popleft() if server.replies else Reply(599, "unscripted")
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                raw = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                data = raw.encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    srv = ReplayServer()
    srv.start()
    yield srv
    srv.stop()


def completion(
    content: str | None = "Yes.",
    *,
    model: str = "gpt-4o-mini-2024-07-18",
    prompt_tokens: int = 1200,
    completion_tokens: int = 300,
    logprobs: Any = None,
    finish_reason: str = "stop",
) -> dict[str, Any]:
    """A /chat/completions body shaped like OpenAI's."""
    return {
        "id": "chatcmpl-AbC123",
        "object": "chat.completion",
        "created": 1732880000,
        "model": model,
        "system_fingerprint": "fp_0ba0d124f1",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "logprobs": logprobs,
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": 0},
        },
    }


def backend(server: ReplayServer, model: str = "gpt-4o-mini", **kwargs: Any) -> OpenAIBackend:
    options: dict[str, Any] = {"timeout_s": 5.0, "max_retries": 2, "backoff_s": 0.01}
    options.update(kwargs)
    return OpenAIBackend(model, api_base=server.url, api_key="sk-test", **options)


QUESTION = [
    ChatMessage(role="system", content="You answer biomedical questions."),
    ChatMessage(role="user", content="Does aspirin reduce colorectal adenoma recurrence?"),
]


def test_chat_returns_text_usage_and_cost(server: ReplayServer) -> None:
    server.replies.append(Reply(body=completion("Yes, modestly.")))
    with backend(server) as model:
        reply = model.chat(QUESTION, max_tokens=64, temperature=0.3, seed=7, role="orchestrator")
    assert isinstance(reply, ChatReply)
    assert reply.text == "Yes, modestly."
    assert reply.usage.role == "orchestrator"
    assert reply.usage.model == "openai:gpt-4o-mini"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (1200, 300)
    # 1200 * 0.15 / 1e6 + 300 * 0.60 / 1e6
    assert reply.usage.cost_usd == pytest.approx(0.00036)
    assert reply.usage.seconds > 0
    sent = server.requests[0]
    assert sent["model"] == "gpt-4o-mini"
    assert sent["max_tokens"] == 64
    assert sent["temperature"] == 0.3
    assert sent["seed"] == 7
    assert sent["messages"][1] == {"role": "user", "content": QUESTION[1].content}
    assert "response_format" not in sent
    assert server.headers[0]["Authorization"] == "Bearer sk-test"


def test_price_table_prefers_longest_family_and_config_overrides() -> None:
    assert price_for("gpt-4o-mini-2024-07-18", PRICES) == PRICES["gpt-4o-mini"]
    assert price_for("gpt-4o-2024-11-20", PRICES) == PRICES["gpt-4o"]
    assert price_for("gpt-4.1", PRICES) == PRICES["gpt-4.1"]
    assert price_for("llama3.1:8b", PRICES) is None
    config = MedgateConfig(
        backend={
            "api_base": "http://127.0.0.1:9/v1",
            "prices": {"gpt-4o": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}},
        }
    )
    model = OpenAIBackend.from_spec("gpt-4o", config)
    assert model.price == ModelPrice(input_per_mtok=1.0, output_per_mtok=2.0)
    model.close()


def test_unknown_model_costs_nothing(server: ReplayServer) -> None:
    server.replies.append(Reply(body=completion("maybe", model="llama3.1:8b")))
    with backend(server, model="llama3.1:8b") as model:
        reply = model.chat(QUESTION)
    assert reply.usage.cost_usd == 0.0
    assert reply.usage.prompt_tokens == 1200


def test_json_schema_is_sent_as_response_format(server: ReplayServer) -> None:
    schema = {
        "title": "Orchestrator decision",
        "type": "object",
        "properties": {"action": {"enum": ["CONTINUE", "ABSTAIN"]}},
        "required": ["action"],
    }
    server.replies.append(Reply(body=completion('{"action": "ABSTAIN"}')))
    with backend(server) as model:
        reply = model.chat(QUESTION, json_schema=schema)
    assert json.loads(reply.text) == {"action": "ABSTAIN"}
    fmt = server.requests[0]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Orchestrator_decision"
    assert fmt["json_schema"]["schema"] == schema


def test_json_schema_rejected_falls_back_to_json_mode(server: ReplayServer) -> None:
    schema = {"type": "object", "properties": {"action": {"type": "string"}}}
    rejection = {
        "error": {
            "message": "Invalid parameter: 'response_format' of type 'json_schema' is not "
            "supported with this model.",
            "type": "invalid_request_error",
            "param": "response_format",
            "code": None,
        }
    }
    server.replies.extend(
        [
            Reply(400, rejection),
            Reply(body=completion('{"action": "CONTINUE"}')),
            Reply(body=completion('{"action": "ABSTAIN"}')),
        ]
    )
    with backend(server) as model:
        first = model.chat(QUESTION, json_schema=schema)
        second = model.chat(QUESTION, json_schema=schema)
    assert json.loads(first.text) == {"action": "CONTINUE"}
    assert json.loads(second.text) == {"action": "ABSTAIN"}
    kinds = [r["response_format"]["type"] for r in server.requests]
    # The rejection is remembered: the second call goes straight to JSON mode.
    assert kinds == ["json_schema", "json_object", "json_object"]
    fallback = server.requests[1]["messages"]
    assert fallback[0]["role"] == "system"
    assert "JSON schema" in fallback[0]["content"]
    assert '"action"' in fallback[0]["content"]


def test_unrelated_400_does_not_disable_json_schema(server: ReplayServer) -> None:
    too_long = {"error": {"message": "This model's maximum context length is 128000 tokens."}}
    schema = {"type": "object"}
    server.replies.extend([Reply(400, too_long)] * 3 + [Reply(body=completion("{}"))])
    with backend(server) as model:
        with pytest.raises(ModelError, match="maximum context length"):
            model.chat(QUESTION, json_schema=schema)
        model.chat(QUESTION, json_schema=schema)
    kinds = [r["response_format"]["type"] for r in server.requests]
    # JSON mode is tried with the schema in response_format, then without it.
    assert kinds == ["json_schema", "json_object", "json_object", "json_schema"]
    assert "schema" in server.requests[1]["response_format"]
    assert "schema" not in server.requests[2]["response_format"]


def test_429_then_success_is_retried(server: ReplayServer) -> None:
    limited = {"error": {"message": "Rate limit reached for gpt-4o-mini", "type": "requests"}}
    server.replies.extend(
        [Reply(429, limited, {"Retry-After": "0.05"}), Reply(body=completion("No."))]
    )
    with backend(server) as model:
        started = time.monotonic()
        reply = model.chat(QUESTION)
    assert reply.text == "No."
    assert len(server.requests) == 2
    assert time.monotonic() - started >= 0.05  # Retry-After was honoured


def test_500_exhausting_retries_raises(server: ReplayServer) -> None:
    error = {"error": {"message": "The server had an error while processing your request."}}
    server.replies.extend([Reply(500, error) for _ in range(3)])
    with backend(server, max_retries=2) as model, pytest.raises(ModelError) as info:
        model.chat(QUESTION)
    assert len(server.requests) == 3
    assert "HTTP 500" in str(info.value)
    assert "3 attempts" in str(info.value)


def test_client_error_is_not_retried(server: ReplayServer) -> None:
    server.replies.append(Reply(401, {"error": {"message": "Incorrect API key provided"}}))
    with backend(server) as model, pytest.raises(ModelError, match="Incorrect API key"):
        model.chat(QUESTION)
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "body",
    [
        "<html>502 Bad Gateway</html>",
        {"object": "chat.completion", "choices": []},
        completion(content=None),
        completion("partial", finish_reason="content_filter"),
    ],
    ids=["not-json", "no-choices", "no-content", "filtered"],
)
def test_unusable_reply_raises(server: ReplayServer, body: Any) -> None:
    server.replies.append(Reply(body=body))
    with backend(server) as model, pytest.raises(ModelError):
        model.chat(QUESTION)


def test_timeout_raises(server: ReplayServer) -> None:
    server.replies.append(Reply(body=completion("late"), delay_s=1.0))
    with backend(server, timeout_s=0.2) as model:
        started = time.monotonic()
        with pytest.raises(ModelError, match=r"no reply within 0\.2 s"):
            model.chat(QUESTION)
    # The timeout bounds the whole call, retries included.
    assert time.monotonic() - started < 0.9


def _top(pairs: list[tuple[str, float]]) -> list[dict[str, Any]]:
    return [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in pairs]


def test_label_distribution_from_top_logprobs(server: ReplayServer) -> None:
    top = [
        ("Yes", math.log(0.5)),
        (" yes", math.log(0.1)),
        ("No", math.log(0.2)),
        ("Maybe", math.log(0.05)),
        ("The", math.log(0.1)),
    ]
    logprobs = {
        "content": [
            {
                "token": "Yes",
                "logprob": math.log(0.5),
                "bytes": [89, 101, 115],
                "top_logprobs": _top(top),
            }
        ],
        "refusal": None,
    }
    server.replies.append(Reply(body=completion("Yes", completion_tokens=1, logprobs=logprobs)))
    with backend(server) as model:
        dist = model.label_distribution(QUESTION, ["yes", "no", "maybe"])
    assert dist.mass == pytest.approx(0.85)
    assert dist.probs == pytest.approx({"yes": 0.6 / 0.85, "no": 0.2 / 0.85, "maybe": 0.05 / 0.85})
    assert dist.top_logprobs["The"] == pytest.approx(math.log(0.1))
    sent = server.requests[0]
    assert (sent["logprobs"], sent["top_logprobs"], sent["max_tokens"]) == (True, 20, 1)
    assert dist.usage.completion_tokens == 1


def test_label_distribution_without_labels_in_top_is_uniform(server: ReplayServer) -> None:
    logprobs = {
        "content": [
            {"token": "The", "logprob": -0.1, "top_logprobs": _top([("The", -0.1), ("It", -2.5)])}
        ]
    }
    server.replies.append(Reply(body=completion("The", logprobs=logprobs)))
    with backend(server) as model:
        dist = model.label_distribution(QUESTION, ["yes", "no"])
    assert dist.mass == 0.0
    assert dist.probs == {"yes": 0.5, "no": 0.5}


def test_logprobs_missing_raises(server: ReplayServer) -> None:
    server.replies.append(Reply(body=completion("Yes", logprobs=None)))
    with backend(server) as model, pytest.raises(ModelError, match="no logprobs"):
        model.label_distribution(QUESTION, ["yes", "no"])


def test_chat_with_logprobs_gives_per_token_logprobs(server: ReplayServer) -> None:
    tokens = [("Yes", -0.05), (",", -0.7), (" aspirin", -1.2)]
    logprobs = {"content": [{"token": t, "logprob": lp, "top_logprobs": []} for t, lp in tokens]}
    server.replies.append(Reply(body=completion("Yes, aspirin", logprobs=logprobs)))
    with backend(server) as model:
        reply = model.chat_with_logprobs(QUESTION, max_tokens=3)
    assert reply.text == "Yes, aspirin"
    assert reply.token_logprobs == pytest.approx([-0.05, -0.7, -1.2])
    assert server.requests[0]["logprobs"] is True


def test_missing_key_for_openai_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEDGATE_TEST_KEY", raising=False)
    config = MedgateConfig(backend={"api_key_env": "MEDGATE_TEST_KEY"})
    assert config.backend.api_base is None  # the default base is OpenAI's
    with pytest.raises(PrerequisiteError, match="MEDGATE_TEST_KEY"):
        OpenAIBackend.from_spec("gpt-4o-mini", config)


def test_local_server_needs_no_key(server: ReplayServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = MedgateConfig(backend={"api_base": server.url, "timeout_s": 5})
    server.replies.append(Reply(body=completion("yes", model="qwen2.5:0.5b")))
    model = OpenAIBackend.from_spec("qwen2.5:0.5b", config)
    assert model.name == "openai:qwen2.5:0.5b"
    assert model.chat(QUESTION).text == "yes"
    assert "Authorization" not in server.headers[0]
    model.close()


def test_empty_model_name_is_a_config_error() -> None:
    config = MedgateConfig(backend={"api_base": "http://127.0.0.1:9/v1"})
    with pytest.raises(ConfigError):
        OpenAIBackend.from_spec("", config)
    assert DEFAULT_API_BASE.startswith("https://")
