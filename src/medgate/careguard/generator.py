"""The generator: a patient-facing answer held to the triage's instructions and the screening
answers, revised with the evaluators' feedback in later rounds.

A white-box generator is run through ``complete`` so that its per-token log-probabilities give
the HRS-style signals of the answer at no extra cost; any other backend is used through ``chat``
and its signals are marked as not computed.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence

from medgate.backends.base import ChatMessage, DecodeParams, LanguageModel, WhiteBoxModel
from medgate.careguard.quoting import quote_block
from medgate.careguard.records import Draft, TokenStats, Triage
from medgate.careguard.scoring import answer_signals, not_computed_signals
from medgate.careguard.screening import describe_answers
from medgate.config import OpeningDraw
from medgate.errors import ModelError
from medgate.records import Case, Usage

PREAMBLE = "You answer patients' health questions carefully. Follow every safety rule below."


def instruction_texts(triage: Triage, feedback: Sequence[str]) -> list[str]:
    """Every instruction line the generator is given, as it is given (the release checks look
    for them in the draft)."""
    rules = [*triage.instructions, *(f"Reviewers' correction: {f}" for f in feedback)]
    return [PREAMBLE, *rules]


def generator_messages(case: Case, triage: Triage, feedback: Sequence[str]) -> list[ChatMessage]:
    """The generator's prompt. Feedback from rejected drafts becomes further rules.

    The rejected draft itself is not shown: small models given their own text back copy it
    verbatim, so the reviewers' findings are stated as rules instead.
    """
    preamble, *rules = instruction_texts(triage, feedback)
    system = f"{preamble}\nSafety rules:\n" + "\n".join(f"- {line}" for line in rules)
    parts = [f"Patient question:\n{quote_block(case.question)}"]
    answers = describe_answers(case.patient)
    if answers:
        parts.append("What the patient told us:\n" + "\n".join(f"- {a}" for a in answers))
    parts.append("Write the answer only.")
    return [
        ChatMessage(role="system", content=system),
        ChatMessage(role="user", content="\n\n".join(parts)),
    ]


#: The end of a sentence or of a list item's sentence.
_SENTENCE_END = re.compile(r"[.!?](?:[\"')\u201d\]]*)(?=\s|$)")
#: A last line holding only a list marker (a number, a bullet), with nothing after it.
_BARE_MARKER = re.compile(r"\n\s*(?:\d+[.)]|[-*\u2022])\s*$")


def trim_to_sentence(text: str) -> str:
    """``text`` cut back to the end of its last complete sentence or line (the last line is
    the one the budget cut); unchanged when it has neither.

    A draft that ran out of tokens stops mid-sentence, often mid-list; its complete sentences
    and list items are still an answer, the stump is not.
    """
    ends = [m.end() for m in _SENTENCE_END.finditer(text)]
    lines = text.rstrip().rfind("\n")
    if lines > 0:
        ends.append(lines)
    trimmed = text[: max(ends)].rstrip() if ends else text
    # "4." after the last complete item ends like a sentence but is the next item's number.
    while (bare := _BARE_MARKER.search(trimmed)) is not None and bare.start() > 0:
        trimmed = trimmed[: bare.start()].rstrip()
    return trimmed


def token_stats(token_logprobs: Sequence[float]) -> TokenStats | None:
    """Mean and least log-probability of the tokens and the perplexity; None without tokens
    or with a number that is not finite."""
    if not token_logprobs or not all(math.isfinite(lp) for lp in token_logprobs):
        return None
    mean = sum(token_logprobs) / len(token_logprobs)
    return TokenStats(
        tokens=len(token_logprobs),
        mean_logprob=min(0.0, mean),
        min_logprob=min(0.0, min(token_logprobs)),
        perplexity=math.exp(-min(0.0, mean)),
    )


class Generator:
    """Drafts answers. With ``samples`` > 0 each draft comes with that many more answers to the
    same prompt, sampled at ``sample_temperature`` (seeded) within ``sample_max_tokens``, for
    HRA's consistency check (:mod:`medgate.careguard.consistency`); a white-box model decodes
    them in the same parallel pass as the draft. ``opening_samples`` are drawn only for a draft
    whose opening will be read against them (``draft(..., opening=True)``): drawing them changes
    the batch, and so the draft's greedy text, and costs time an answer that is not trimmed
    would spend for nothing. With ``opening_draw = "after_judges"`` they are not decoded with
    the draft at all but by :meth:`with_opening_samples`, for a draft the judges passed."""

    def __init__(
        self,
        model: LanguageModel,
        *,
        max_tokens: int = 128,
        seed: int = 7,
        refine_temperature: float = 0.4,
        samples: int = 0,
        opening_samples: int = 0,
        opening_draw: OpeningDraw = "with_draft",
        sample_temperature: float = 1.0,
        sample_max_tokens: int = 96,
        repeat_penalty: float = 1.0,
    ) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self.seed = seed
        self.refine_temperature = refine_temperature
        self.samples = samples
        self.opening_samples = opening_samples
        self.opening_draw = opening_draw
        self.sample_temperature = sample_temperature
        self.sample_max_tokens = sample_max_tokens
        self.repeat_penalty = repeat_penalty

    @property
    def name(self) -> str:
        return self.model.name

    def sample_count(self, opening: bool = False) -> int:
        """How many answers are sampled beside a draft (the opening check's only when asked,
        and only when they are drawn with the draft)."""
        with_draft = opening and self.opening_draw == "with_draft"
        return max(self.samples, self.opening_samples if with_draft else 0)

    def sample_seeds(
        self, iteration: int, opening: bool = False, count: int | None = None
    ) -> list[int]:
        """The seeds of the consistency samples of round ``iteration`` (never the draft's):
        ``count`` of them, or as many as are drawn beside the draft."""
        n = self.sample_count(opening) if count is None else count
        return [self.seed + 1000 + 100 * iteration + k for k in range(n)]

    def sample_params(
        self, iteration: int, opening: bool = False, count: int | None = None
    ) -> list[DecodeParams]:
        """How the consistency samples of round ``iteration`` are decoded (white-box)."""
        return [
            DecodeParams(
                max_tokens=self.sample_max_tokens,
                temperature=self.sample_temperature,
                seed=s,
                repeat_penalty=self.repeat_penalty,
            )
            for s in self.sample_seeds(iteration, opening, count)
        ]

    def with_opening_samples(
        self,
        case: Case,
        triage: Triage,
        draft: Draft,
        feedback: Sequence[str] = (),
        iteration: int = 0,
    ) -> Draft:
        """``draft`` with the opening check's samples, decoded now from the prompt that gave it
        (the same seeds as beside a draft) when it does not carry enough of them; their time and
        tokens are added to the draft's. ModelError for a black-box generator: it has no
        probabilities for the check to read anyway."""
        if len(draft.samples) >= self.opening_samples:
            return draft
        if not isinstance(self.model, WhiteBoxModel):
            raise ModelError("the opening check needs a white-box generator")
        messages = generator_messages(case, triage, feedback)
        t0 = time.perf_counter()
        sampled = self.model.complete_batch(
            messages, self.sample_params(iteration, count=self.opening_samples)
        )
        seconds = time.perf_counter() - t0
        usage = draft.usage
        if usage is not None:
            usage = usage.model_copy(
                update={
                    "prompt_tokens": usage.prompt_tokens + sampled[0].prompt_tokens,
                    "completion_tokens": usage.completion_tokens + sum(c.n_tokens for c in sampled),
                    "seconds": usage.seconds + seconds,
                }
            )
        return draft.model_copy(
            update={
                "samples": [c.text.strip() for c in sampled],
                "seconds": draft.seconds + seconds,
                "usage": usage,
            }
        )

    def draft(
        self,
        case: Case,
        triage: Triage,
        feedback: Sequence[str] = (),
        iteration: int = 0,
        *,
        opening: bool = False,
    ) -> Draft:
        """The first draft is greedy; refinements sample (seeded) so that they can differ.
        ``opening``: the draft's opening will be read against samples (the opening check)."""
        messages = generator_messages(case, triage, feedback)
        temperature = 0.0 if iteration == 0 else self.refine_temperature
        seed = self.seed + iteration
        t0 = time.perf_counter()
        samples: list[str] = []
        tokens = None
        if isinstance(self.model, WhiteBoxModel):
            params = [
                DecodeParams(
                    max_tokens=self.max_tokens,
                    temperature=temperature,
                    seed=seed,
                    repeat_penalty=self.repeat_penalty,
                ),
                *self.sample_params(iteration, opening),
            ]
            completion, *sampled = self.model.complete_batch(messages, params)
            text = completion.text.strip()
            samples = [c.text.strip() for c in sampled]
            signals = answer_signals(completion.token_logprobs)
            tokens = token_stats(completion.token_logprobs)
            truncated = completion.n_tokens >= self.max_tokens
            if truncated:
                text = trim_to_sentence(text)
            usage = Usage(
                role="generator",
                model=self.model.name,
                prompt_tokens=completion.prompt_tokens,
                completion_tokens=completion.n_tokens + sum(c.n_tokens for c in sampled),
                seconds=completion.seconds,
            )
        else:
            reply = self.model.chat(
                messages,
                max_tokens=self.max_tokens,
                temperature=temperature,
                seed=seed,
                role="generator",
            )
            text, usage = reply.text.strip(), reply.usage
            truncated = usage.completion_tokens >= self.max_tokens
            if truncated:
                text = trim_to_sentence(text)
            for s in self.sample_seeds(iteration, opening):
                sampled_reply = self.model.chat(
                    messages,
                    max_tokens=self.sample_max_tokens,
                    temperature=self.sample_temperature,
                    seed=s,
                    role="generator",
                )
                samples.append(sampled_reply.text.strip())
            signals = not_computed_signals("the generator backend gives no token log-probabilities")
        if not text:
            raise ModelError("the generator returned an empty answer")
        return Draft(
            text=text,
            signals=signals,
            tokens=tokens,
            samples=samples,
            truncated=truncated,
            seconds=time.perf_counter() - t0,
            usage=usage,
        )
