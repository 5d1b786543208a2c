"""A context longer than the real model's window is cut to fit instead of escalating at once."""

from __future__ import annotations

import pytest

from medgate.config import load_config
from medgate.hrs.gate import HRSGate
from medgate.hrs.orchestrator import RetrievalOrchestrator
from medgate.hrs.retrieval import BM25Index
from medgate.pipeline import ModelPool
from medgate.records import Case
from tests.model.conftest import MECHANICS_MODEL
from tests.unit.stage_reports import hrs_report

pytestmark = pytest.mark.model


def test_a_long_context_is_fitted_into_a_small_window(pubmedqa_case: Case) -> None:
    # A small window, so that the overflow needs a context of a few hundred tokens only; the
    # overflow itself is found before any decoding.
    config = load_config(
        model=MECHANICS_MODEL,
        backend={"n_ctx": 1024},
        hrs={"max_iterations": 0, "signals": ["entropy", "perplexity"]},
    )
    model = ModelPool(config).white_box(config.model)
    long = Case(question=pubmedqa_case.question, context="\n\n".join([pubmedqa_case.context] * 4))
    gate = HRSGate(model, RetrievalOrchestrator(BM25Index([])), config.hrs)
    verdict = gate.check(long)
    assert verdict.trace.errors == []
    first = hrs_report(verdict).trajectory.iterations[0]
    fit = first.context_fit
    assert fit is not None and fit.prompt_tokens > fit.limit
    assert 0 < fit.kept_chars < fit.original_chars == len(long.context)
    assert first.signals["entropy"].value is not None
