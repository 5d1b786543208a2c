"""Every model reply that must be JSON is read by one function, chat_json: no module asks a model
for JSON any other way."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "medgate"

#: Where a JSON schema may be handed to a model directly: the backends themselves, the one
#: structured-reply layer, and the call cache that passes calls through unchanged.
ALLOWED = {"backends", "eval/cache.py"}


def test_only_chat_json_asks_a_model_for_json() -> None:
    offenders = []
    for path in SRC.rglob("*.py"):
        where = path.relative_to(SRC).as_posix()
        if where.split("/")[0] in ALLOWED or where in ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "chat"
                and any(k.arg == "json_schema" for k in node.keywords)
            ):
                offenders.append(f"{where}:{node.lineno}")
    assert offenders == [], f"ask through medgate.backends.structured.chat_json: {offenders}"
