"""The generator: a patient-facing answer held to the triage's instructions and the screening
answers, revised with the evaluators' feedback in later rounds.

A white-box generator is run through ``complete`` so that its per-token log-probabilities give
the HRS-style signals of the answer at no extra cost; any other backend is used through ``chat``
and its signals are marked as not computed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from medgate.backends.base import ChatMessage, DecodeParams, LanguageModel, WhiteBoxModel
from medgate.careguard.quoting import quote_block
from medgate.careguard.records import Draft, Triage
from medgate.careguard.scoring import answer_signals, not_computed_signals
from medgate.careguard.screening import describe_answers
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


class Generator:
    def __init__(
        self,
        model: LanguageModel,
        *,
        max_tokens: int = 128,
        seed: int = 7,
        refine_temperature: float = 0.4,
    ) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self.seed = seed
        self.refine_temperature = refine_temperature

    @property
    def name(self) -> str:
        return self.model.name

    def draft(
        self, case: Case, triage: Triage, feedback: Sequence[str] = (), iteration: int = 0
    ) -> Draft:
        """The first draft is greedy; refinements sample (seeded) so that they can differ."""
        messages = generator_messages(case, triage, feedback)
        temperature = 0.0 if iteration == 0 else self.refine_temperature
        seed = self.seed + iteration
        t0 = time.perf_counter()
        if isinstance(self.model, WhiteBoxModel):
            completion = self.model.complete(
                messages,
                DecodeParams(max_tokens=self.max_tokens, temperature=temperature, seed=seed),
            )
            text = completion.text.strip()
            signals = answer_signals(completion.token_logprobs)
            usage = Usage(
                role="generator",
                model=self.model.name,
                prompt_tokens=completion.prompt_tokens,
                completion_tokens=completion.n_tokens,
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
            signals = not_computed_signals("the generator backend gives no token log-probabilities")
        if not text:
            raise ModelError("the generator returned an empty answer")
        return Draft(text=text, signals=signals, seconds=time.perf_counter() - t0, usage=usage)
