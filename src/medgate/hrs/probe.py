"""One pass of the answering model that collects what the enabled signals need.

The greedy run gives the answer, its distribution and the reasoning; the ambiguity samples are
continuations of the same prompt at a low temperature with fixed seeds. All of them are asked for
in one batch, so a backend can decode them in parallel from the prompt's cached state; the
embedding is of the question alone.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from medgate.backends.base import AnswerSlot, DecodeParams, WhiteBoxModel
from medgate.config import HRSConfig
from medgate.errors import EmbeddingUnavailable, ModelError
from medgate.hrs.knowledge import Fact
from medgate.hrs.prompts import ANSWER_CUE, REASONING_STOPS, answerer_messages
from medgate.hrs.signals import ModelRun, Need, Signal
from medgate.records import Case, Timing


def needs_of(signals: Sequence[Signal]) -> frozenset[Need]:
    out: frozenset[Need] = frozenset({Need.ANSWER_DISTRIBUTION, Need.REASONING})
    for s in signals:
        out |= s.needs
    return out


def top_label(dist: dict[str, float]) -> str:
    return max(dist, key=lambda k: dist[k])


def greedy_params(case: Case, cfg: HRSConfig) -> DecodeParams:
    """The greedy answer's decoding: brief reasoning, then the label read at the answer slot
    (the answerer's, and the second model's with ``hrs.peer_model``)."""
    return DecodeParams(
        max_tokens=cfg.l_max,
        min_tokens=cfg.min_reasoning_tokens,
        stop=REASONING_STOPS,
        answer_slot=AnswerSlot(cue=ANSWER_CUE, labels=case.answer_labels.labels),
    )


def probe(
    model: WhiteBoxModel,
    case: Case,
    knowledge: Sequence[Fact],
    cfg: HRSConfig,
    needs: frozenset[Need],
    seed_offset: int = 0,
    peer: WhiteBoxModel | None = None,
) -> tuple[ModelRun, list[Timing]]:
    """Run the answerer once (plus samples, embedding and the second model's answer if
    needed) and record the results."""
    messages = answerer_messages(case, knowledge)
    base = greedy_params(case, cfg)
    sample_params = (
        [
            base.model_copy(
                update={"temperature": cfg.sample_temperature, "seed": cfg.seed + seed_offset + i}
            )
            for i in range(cfg.samples)
        ]
        if Need.SAMPLES in needs
        else []
    )
    timings: list[Timing] = []
    t0 = time.perf_counter()
    # The greedy answer and the samples continue one prompt: decoded together, they cost about
    # one continuation, so the "answer" timing includes the samples.
    greedy, *samples = model.complete_batch(messages, [base, *sample_params])
    timings.append(Timing(stage="answer", seconds=time.perf_counter() - t0))
    if not greedy.label_probs:
        raise ModelError("the answerer gave no distribution at the answer slot")
    run = ModelRun(
        answer=top_label(greedy.label_probs),
        distribution=greedy.label_probs,
        label_mass=greedy.label_mass,
        opening_distribution=greedy.opening_label_probs,
        opening_label_mass=greedy.opening_label_mass,
        unseen_labels=greedy.unseen_labels,
        answer_read=greedy.answer_read,
        answer_note=greedy.answer_note,
        reasoning=greedy.text.strip(),
        reasoning_logprobs=greedy.token_logprobs,
        prompt_tokens=greedy.prompt_tokens,
        generated_tokens=greedy.n_tokens,
    )
    for sample in samples:
        if not sample.label_probs:
            raise ModelError("an ambiguity sample gave no distribution at the answer slot")
        run.sample_distributions.append(sample.label_probs)
        run.sample_answers.append(top_label(sample.label_probs))
        run.generated_tokens += sample.n_tokens
    if Need.PEER in needs and peer is not None:
        # The second model reads exactly the answerer's prompt, greedily, and only its label
        # at the answer slot is kept.
        t0 = time.perf_counter()
        (other,) = peer.complete_batch(messages, [base])
        if not other.label_probs:
            raise ModelError("the second model gave no distribution at the answer slot")
        run.peer_answer, run.peer_distribution = top_label(other.label_probs), other.label_probs
        timings.append(Timing(stage="peer", seconds=time.perf_counter() - t0))
    if Need.EMBEDDING in needs:
        t0 = time.perf_counter()
        try:
            run.question_embedding = model.embed(case.question)
        except EmbeddingUnavailable as exc:
            # A server without embeddings: rarity (a guidance signal) says not computed; the
            # answer and the decision signals stand.
            run.embedding_note = str(exc)
        timings.append(Timing(stage="embedding", seconds=time.perf_counter() - t0))
    return run, timings
