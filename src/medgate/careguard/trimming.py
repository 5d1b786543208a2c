"""Releasing only what the writer stands behind: a general answer's later sentences that the
generator doubts are left out of the text released.

A wrong answer to a general health question is usually a right opening sentence followed by a
false detail ("Serotonin is a neurotransmitter ... It is produced in the brain and travels
through the bloodstream"). Holding the whole answer back for one doubted sentence blocks right
answers too, and its refinement often goes wrong elsewhere (docs/results/careguard_runs_v8/
NOTES.md). Here each sentence is read by the generator's self-check
(:func:`medgate.careguard.self_check.read_statement`, P(no) to "is the statement medically
correct?", in the manner of SelfCheckGPT's sentence-level scores), and every sentence after the
first whose P(no) is above the cut is left out. The opening sentence is the answer itself and is
always kept: without it nothing is left to release, and the gate's judges already passed it.
A sentence that sends the reader to a professional is never left out, whatever its reading.

The cut was chosen on hand-labelled first drafts and measured once on other drafts
(``python scripts/trim_doubted.py``, docs/results/trim_doubted.md), then end to end on
questions written for it (docs/results/careguard_runs_v9/NOTES.md). The trim applies only to
answers the triage found to be general information; risky categories get their own fixed or
screened answers, and a permission question's caveats must never be cut.

The opening check (on by default, ``careguard.trim.opening_samples``) reads the opening itself
against answers the generator sampled beside the draft
(:func:`medgate.careguard.self_check.read_support`, SelfCheckGPT's prompt variant); when their
mean P(no) is above its cut the round fails and the refinement is told (:data:`OPENING_DOUBTED`).
Measured on first drafts, then end to end under a rule written first
(docs/results/careguard_runs_v12/NOTES.md); docs/careguard.md, "The opening against the
generator's own samples".
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from medgate.backends.base import WhiteBoxModel
from medgate.careguard.comparison import one_sided
from medgate.careguard.consistency import words
from medgate.careguard.records import TrimmedSentence, Trimming, TrimWhy
from medgate.careguard.scoring import REFERRAL
from medgate.careguard.self_check import read_statement, read_support
from medgate.claims.sentences import bare_marker, split_sentences
from medgate.errors import ModelError
from medgate.records import Usage

NAME = "trim"

#: What the refinement is told when trimming would leave only an opening that introduces a list.
HEADER_ONLY = (
    "Answer in two or three plain sentences, not a list, and leave out anything you are not "
    "sure of."
)
#: What the refinement is told when the generator's own samples do not support the opening.
OPENING_DOUBTED = (
    "Your first sentence may be wrong. Start with the main point only if you are sure of it, "
    "and leave out anything you are not sure of."
)


def decide(position: int, sentence: str, p_error: float, threshold: float) -> TrimWhy:
    """What becomes of the sentence at ``position`` (0: the opening) read at ``p_error``."""
    if position == 0:
        return "lead"
    if REFERRAL.search(sentence):
        return "referral"
    return "trusted" if p_error <= threshold else "doubted"


#: An opening that announces what the answer will say without saying it: "Eczema and psoriasis
#: are both skin conditions, but they differ in several ways." Left alone by the trim, it
#: answers nothing.
_ANNOUNCES = re.compile(
    r"\b(?:differ|vary)\s+in\s+(?:several|many|a\s+few|some|various|a\s+number\s+of)\s+"
    r"(?:ways|respects)\s*\.?\s*$"
    r"|\b(?:several|many|a\s+few|various|a\s+number\s+of|multiple)\s+(?:\w+\s+)?(?:reasons|factors"
    r"|causes|ways|differences|things|functions|roles)\s*\.?\s*$",
    re.IGNORECASE,
)


def header_only(kept: list[str], total: int) -> bool:
    """Whether only an opening that introduces a list, or announces what it does not say, would
    be left of ``total`` sentences."""
    if len(kept) != 1 or total <= 1:
        return False
    opening = kept[0].rstrip()
    return opening.endswith(":") or _ANNOUNCES.search(opening) is not None


def without(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with the ``(start, end)`` spans cut out; lines left holding only a list marker go,
    and the spaces a cut leaves behind are closed up."""
    pieces, pos = [], 0
    for start, end in sorted(spans):
        pieces.append(text[pos:start])
        pos = end
    pieces.append(text[pos:])
    lines = [re.sub(r"[ \t]{2,}", " ", line).rstrip() for line in "".join(pieces).splitlines()]
    kept: list[str] = []
    for line in lines:
        if bare_marker(line):
            continue
        if not line.strip() and (not kept or not kept[-1].strip()):
            continue
        kept.append(line)
    return "\n".join(kept).strip()


class SentenceTrimmer:
    """Reads each sentence of a draft with the generator's self-check and leaves out the doubted
    ones after the first (see the module docstring)."""

    name = NAME

    def __init__(
        self, model: WhiteBoxModel, threshold: float, opening_threshold: float | None = None
    ) -> None:
        self.model = model
        self.threshold = threshold
        self.opening_threshold = opening_threshold

    def trim(self, question: str, answer: str, samples: Sequence[str] = ()) -> Trimming:
        """The trim of ``answer``, with its opening read against ``samples`` when the opening
        check is on; ModelError when a reading gives no distribution or the check has no sample
        to read (the gate then withholds the answer: it fails closed)."""
        t0 = time.perf_counter()
        sentences = [s for s in split_sentences(answer) if words(s.text)]
        out: list[TrimmedSentence] = []
        cut: list[tuple[int, int]] = []
        prompt_tokens = 0
        for n, sentence in enumerate(sentences):
            reading = read_statement(self.model, question, sentence.text)
            prompt_tokens += reading.prompt_tokens
            why = decide(n, sentence.text, reading.p_error, self.threshold)
            out.append(
                TrimmedSentence(
                    text=sentence.text, p_error=reading.p_error, kept=why != "doubted", why=why
                )
            )
            if why == "doubted":
                cut.append((sentence.start, sentence.end))
        text = without(answer, cut) if cut else answer
        support = None
        if self.opening_threshold is not None and out:
            if not samples:
                raise ModelError(
                    "the opening check has no sampled answer to read the opening against"
                )
            readings = [read_support(self.model, s, out[0].text) for s in samples]
            support = [r.p_error for r in readings]
            prompt_tokens += sum(r.prompt_tokens for r in readings)
        seconds = time.perf_counter() - t0
        return Trimming(
            threshold=self.threshold,
            sentences=out,
            text=text,
            header_only=header_only([t.text for t in out if t.kept], len(out)),
            # Only what the cut did: a draft that was one-sided already failed a release check.
            one_sided=bool(cut) and one_sided(question, text),
            opening_support=support,
            opening_threshold=self.opening_threshold if support is not None else None,
            seconds=seconds,
            usage=Usage(
                role=NAME,
                model=self.model.name,
                prompt_tokens=prompt_tokens,
                completion_tokens=len(out) + len(support or []),
                seconds=seconds,
            ),
        )
