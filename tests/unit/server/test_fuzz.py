"""A bounded fuzz run of the OpenAPI schema: no generated request may produce a 5xx.

Uses schemathesis' Hypothesis strategies directly (one strategy per operation) rather than its
pytest plugin, which does not support the pytest version in use.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from service_support import Keys

schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is in the 'dev' extra")

EXAMPLES_PER_OPERATION = 15


def _token_for(path: str, keys: Keys) -> str:
    """The key whose role the operation wants, so that fuzzing reaches past authentication."""
    if path.startswith(("/v1/escalations", "/v1/clinicians")):
        return keys.clinician
    if path.startswith("/v1/admin") or path == "/metrics":
        return keys.admin
    return keys.client


def test_no_server_errors(app: FastAPI, keys: Keys) -> None:
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 18  # every route in the schema
    seen: list[str] = []
    for operation in operations:
        fuzz_operation(operation, _token_for(operation.path, keys), seen)
    assert len(seen) >= len(operations)
    # The fuzzing got past authentication and validation to real work.
    assert any(line.startswith("POST /v1/check 200") for line in seen)
    assert any(line.startswith("POST /v1/ask/stream 200") for line in seen)


def fuzz_operation(operation: Any, token: str, seen: list[str]) -> None:
    """Up to EXAMPLES_PER_OPERATION generated requests against one operation."""

    @given(case=operation.as_strategy())
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    def fuzz(case: Any) -> None:
        response = case.call(headers={"Authorization": f"Bearer {token}"})
        seen.append(f"{case.method} {operation.path} {response.status_code}")
        assert response.status_code < 500, (case.method, case.path, response.text[:500])

    fuzz()
