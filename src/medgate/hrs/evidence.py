"""What the evidence and the reasoning say against an answer: negation cues, counted.

A small answering model reads "no significant difference" in an abstract's results and still
answers "yes" often enough that the contradiction is a better sign of a wrong answer than any of
its own uncertainty signals. These cues are counted the way clinical text tools find negated
findings (negation triggers in the manner of NegEx, Chapman et al. 2001): a fixed list of
words and phrases, no model, nothing fitted.

* The evidence is read where studies state their findings: the closing share of its sentences
  (an abstract's results, the last snippets of a BioASQ context).
* Rates are per 100 words, so a long context does not count more.
* A case with no evidence has no cues (``None``): the risk features that read them are then
  missing, and the risk rule escalates rather than guess (:mod:`medgate.hrs.decision`).
"""

from __future__ import annotations

import re

from pydantic import Field

from medgate.records import Record

#: Single-word negation triggers and words that report an absent effect.
NEGATION = re.compile(
    r"\b(no|not|neither|nor|none|without|never|cannot|didn't|don't|doesn't|isn't|aren't|"
    r"wasn't|weren't|fail(?:ed|s)?|lack(?:ed|s|ing)?|unchanged|similar|comparable)\b",
    re.IGNORECASE,
)
#: Phrases that state a finding was absent ("no significant difference", "did not improve").
NO_EFFECT = re.compile(
    r"\b(no (?:significant|statistically significant|difference|association|effect|benefit|"
    r"improvement|correlation|relationship)|not (?:significantly|associated|significant|related|"
    r"correlated|different|improve)|did not|does not|do not|was not|were not|no longer)\b",
    re.IGNORECASE,
)
#: The closing share of the evidence's sentences that is read.
CLOSING_SHARE = 0.35

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class EvidenceCues(Record):
    """Negation cues in the closing part of a case's evidence, per 100 words."""

    negation: float = Field(ge=0, description="Negation triggers per 100 words.")
    no_effect: float = Field(ge=0, description="Phrases stating an absent effect per 100 words.")
    words: int = Field(ge=1, description="Words in the part read.")


def closing_part(text: str, share: float = CLOSING_SHARE) -> str:
    """The last ``share`` of the text's sentences (at least one)."""
    sentences = [s for s in _SENTENCE_END.split(text.strip()) if s]
    keep = max(1, int(len(sentences) * share))
    return " ".join(sentences[-keep:])


def rate(pattern: re.Pattern[str], text: str) -> float:
    """Matches of ``pattern`` per 100 words of ``text`` (0 for empty text)."""
    words = len(text.split())
    return 100.0 * len(pattern.findall(text)) / words if words else 0.0


def read_evidence(context: str) -> EvidenceCues | None:
    """The cues of a case's evidence, or ``None`` when it has none."""
    part = closing_part(context) if context.strip() else ""
    words = len(part.split())
    if not words:
        return None
    return EvidenceCues(negation=rate(NEGATION, part), no_effect=rate(NO_EFFECT, part), words=words)
