"""Fitting a prompt into the answerer's context window by cutting the context, never the question.

A question with a long context (BioASQ items carry many snippets) can make a prompt longer than
the model's window. Escalating such a case at once would hold back an answer the model could give
from the part of the context that matters, so the context is cut instead: its sentences are
ranked by BM25 relevance to the question and the best ones kept, in their original order, until
the prompt fits. The question, the instructions and any injected knowledge stay whole, and the
cut is recorded (:class:`ContextFit`) so that a reader of the verdict knows the answer was given
from part of the context.

The backend says by how many tokens a prompt overflows (:class:`ContextOverflowError`); the
number of characters to drop is estimated from the prompt's own characters per token and checked
by trying again, a few times at most.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from pydantic import Field

from medgate.backends.base import WhiteBoxModel
from medgate.claims.sentences import split_sentences
from medgate.config import HRSConfig
from medgate.errors import ContextOverflowError
from medgate.hrs.knowledge import Fact
from medgate.hrs.probe import probe
from medgate.hrs.prompts import answerer_messages
from medgate.hrs.retrieval import BM25Index, Document
from medgate.hrs.signals import ModelRun, Need
from medgate.records import Case, Record, Timing

#: Attempts after the first overflow before giving up (the gate then escalates).
MAX_ATTEMPTS = 4
#: Drop this much more than the estimate, so that one retry usually suffices.
MARGIN = 1.1
#: Marks where sentences of the context were left out.
GAP = " [...] "

T = TypeVar("T")


class ContextFit(Record):
    """How the context was cut so that the prompt fits the answerer's window."""

    original_chars: int
    kept_chars: int
    sentences: int = Field(description="Sentences in the original context.")
    kept_sentences: int
    prompt_tokens: int = Field(description="Length of the first, overflowing prompt.")
    limit: int = Field(description="Most prompt tokens the answerer could take.")


def select_sentences(context: str, question: str, budget_chars: int) -> tuple[str, int, int]:
    """The context cut to at most ``budget_chars``: the sentences most relevant to ``question``
    (BM25), in their original order, gaps marked. Returns (text, sentences, kept sentences)."""
    sentences = split_sentences(context)
    if not sentences:
        return "", 0, 0
    index = BM25Index(Document(id=str(s.index), text=s.text) for s in sentences)
    ranked = [int(h.document.id) for h in index.search(question, k=len(sentences))]
    unranked = [s.index for s in sentences if s.index not in set(ranked)]
    kept: list[int] = []
    used = 0
    for i in [*ranked, *unranked]:
        cost = sentences[i].end - sentences[i].start + len(GAP)
        if used + cost <= budget_chars:
            kept.append(i)
            used += cost
    kept.sort()
    parts: list[str] = []
    for pos, i in enumerate(kept):
        s = sentences[i]
        if pos:
            prev = sentences[kept[pos - 1]]
            parts.append(context[prev.end : s.start] if i == prev.index + 1 else GAP)
        parts.append(context[s.start : s.end])
    return "".join(parts).strip(), len(sentences), len(kept)


def within_window(
    case: Case, knowledge: Sequence[Fact], attempt: Callable[[Case], T]
) -> tuple[T, ContextFit | None]:
    """``attempt(case)``, and on overflow again with the context cut until its prompt fits.

    ``attempt`` builds the answerer's prompt from the case and ``knowledge`` and raises
    :class:`ContextOverflowError` when it does not fit. Raises the last overflow when even the
    question without any context does not fit, or the estimate keeps missing.
    """
    try:
        return attempt(case), None
    except ContextOverflowError as overflow:
        first = overflow
    tried, current = case, first
    for _ in range(MAX_ATTEMPTS):
        if not tried.context:
            break
        # The prompt's own characters per token turn the overflow into characters to drop.
        prompt_chars = sum(len(m.content) for m in answerer_messages(tried, knowledge))
        chars_per_token = prompt_chars / max(1, current.prompt_tokens)
        excess = (current.prompt_tokens - current.limit) * chars_per_token * MARGIN
        budget = max(0, int(len(tried.context) - excess))
        context, total, kept = select_sentences(case.context, case.question, budget)
        tried = case.model_copy(update={"context": context})
        try:
            result = attempt(tried)
        except ContextOverflowError as again:
            current = again
            continue
        fit = ContextFit(
            original_chars=len(case.context),
            kept_chars=len(context),
            sentences=total,
            kept_sentences=kept,
            prompt_tokens=first.prompt_tokens,
            limit=first.limit,
        )
        return result, fit
    raise current


def probe_within_window(
    model: WhiteBoxModel,
    case: Case,
    knowledge: Sequence[Fact],
    cfg: HRSConfig,
    needs: frozenset[Need],
    seed_offset: int = 0,
    peer: WhiteBoxModel | None = None,
) -> tuple[ModelRun, list[Timing], ContextFit | None]:
    """:func:`~medgate.hrs.probe.probe`, with the context cut to fit when the prompt overflows."""
    (run, timings), fit = within_window(
        case, knowledge, lambda c: probe(model, c, knowledge, cfg, needs, seed_offset, peer)
    )
    return run, timings, fit
