"""Record the served answerer's unit-test replies (tests/fixtures/served) from a real server.

Start llama.cpp's OpenAI-compatible server on the embedded model as docs/backends.md shows
(one thread, ``--flash_attn true``, alias ``qwen2.5-coder-0.5b``), then run

    python scripts/record_served_fixtures.py --api-base http://127.0.0.1:8011/v1

It asks the HRS answerer prompt of the first two PubMedQA-L items greedily, through the served
answerer itself, and writes each reply body as the server sent it:

* ``main_reply_without_cue.json`` -- item 0's reasoning (chat completions; the model ends its
  turn without writing ``Answer:``);
* ``same_turn_reply.json`` -- item 0's answer slot read in the same turn (``/completions``);
* ``follow_up_reply.json`` -- the same slot read by a follow-up chat request (no template);
* ``main_reply_two_tokens.json`` -- item 1's reasoning, where the model ends its turn after
  two tokens;
* ``embeddings_refused_500.json`` and ``json_schema_refused_500.json`` -- the server's 500s for
  ``/embeddings`` (started without ``--embedding true``) and a ``json_schema`` response format;
* ``chat_template.json`` -- the GGUF's chat template and its BOS/EOS token texts, in the shape
  of a ``tokenizer_config.json`` (what ``backend.chat_template`` reads).
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "served"


def main() -> None:
    from medgate.backends.base import AnswerSlot, DecodeParams
    from medgate.backends.llamacpp import load_chat_template
    from medgate.backends.openai import OpenAIBackend
    from medgate.backends.served import FOLLOW_UP, SAME_TURN, ServedAnswerer
    from medgate.config import load_config
    from medgate.hrs.prompts import ANSWER_CUE, REASONING_STOPS, answerer_messages
    from medgate.records import Case

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--api-base", required=True)
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--template", default="embedded:qwen2.5-coder-0.5b")
    parser.add_argument(
        "--data-dir", type=Path, default=Path(os.environ.get("MEDGATE_DATA_DIR", "data"))
    )
    args = parser.parse_args()

    config = load_config()
    template = load_chat_template(args.template, config.cache_dir)
    items = (args.data_dir / "pubmedqa" / "pqal.jsonl").read_text().splitlines()[:2]
    cases = [
        Case(question=i["question"], context="\n".join(i["context"]))
        for i in map(json.loads, items)
    ]
    params = DecodeParams(
        max_tokens=config.hrs.l_max,
        min_tokens=config.hrs.min_reasoning_tokens,
        stop=REASONING_STOPS,
        answer_slot=AnswerSlot(cue=ANSWER_CUE, labels=("yes", "no", "maybe")),
    )

    class Recording(OpenAIBackend):
        """Keeps every reply body, in order, with the path it came from."""

        def __init__(self) -> None:
            super().__init__(args.model, api_base=args.api_base, timeout_s=900.0)
            self.bodies: list[tuple[str, dict[str, Any]]] = []

        def post(
            self, payload: Mapping[str, Any], path: str = "/chat/completions"
        ) -> dict[str, Any]:
            body = super().post(payload, path)
            self.bodies.append((path, body))
            return body

    def replies(case: Case, with_template: bool, expect: str) -> list[dict[str, Any]]:
        backend = Recording()
        out = ServedAnswerer(backend, template if with_template else None).complete(
            answerer_messages(case), params
        )
        assert out.answer_read == expect, out.answer_read
        return [body for _, body in backend.bodies]

    main_0, same_turn = replies(cases[0], True, SAME_TURN)
    _, follow_up = replies(cases[0], False, FOLLOW_UP)
    main_1, _ = replies(cases[1], True, SAME_TURN)
    write("main_reply_without_cue.json", main_0)
    write("same_turn_reply.json", same_turn)
    write("follow_up_reply.json", follow_up)
    write("main_reply_two_tokens.json", main_1)

    refused = httpx.post(
        f"{args.api_base}/embeddings", json={"model": args.model, "input": "aspirin"}
    )
    assert refused.status_code == 500, refused.status_code
    write("embeddings_refused_500.json", refused.json())
    schema = {"type": "json_schema", "json_schema": {"name": "reply", "schema": {}}}
    refused = httpx.post(
        f"{args.api_base}/chat/completions",
        json={
            "model": args.model,
            "messages": [{"role": "user", "content": "Reply in JSON."}],
            "max_tokens": 2,
            "response_format": schema,
        },
    )
    assert refused.status_code == 500, refused.status_code
    write("json_schema_refused_500.json", refused.json())
    write(
        "chat_template.json",
        {
            "chat_template": template.template,
            "bos_token": template.bos_token,
            "eos_token": template.eos_token,
        },
    )


def write(name: str, body: Mapping[str, Any]) -> None:
    (OUT / name).write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {OUT / name}")


if __name__ == "__main__":
    main()
