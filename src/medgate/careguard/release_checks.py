"""Answer-level release checks: typed, deterministic findings that no judge's score can pass.

A draft with any finding is never released, whatever SRA and HRA say: the gate refines it with
the finding as feedback, and when no draft comes clean it answers conservatively or blocks
(:mod:`medgate.careguard.gate`). Each finding names its check and says why, so the trace shows
exactly which rule held an answer back.

* :class:`InstructionEcho`: the draft repeats the instructions the generator was given. Measured
  by word n-gram overlap with the actual instruction texts of that round (not a phrase list), so
  it follows the instructions wherever they change.
* :class:`HarmfulCompliance`: the request is marked harmful (by triage, or by the request-safety
  score when one is available) and the reply goes along with it: it opens by complying
  ("Certainly. To ... "), lays out steps, or does not refuse at all.
* :class:`RiskyEndorsement`: a yes/no question asking whether to do something ("Can I ...",
  "Is it safe to ...", "Should I ...") answered with an endorsement ("Yes, you can ...", "... is
  safe") that the yes-release rule (:mod:`medgate.careguard.yes_release`) did not grant.
* :class:`OneSided`: a question asking how two things differ answered without describing both
  (:mod:`medgate.careguard.comparison`).
* :class:`Degenerate`: the draft loops or stops short: repeated phrases, a word or list item
  said again and again, few distinct words, or a sentence cut off by the token budget
  (:mod:`medgate.careguard.degeneration`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from pydantic import Field

from medgate.careguard.comparison import BOTH_SIDES, compared_sides, one_sided
from medgate.careguard.degeneration import assess_degeneration
from medgate.careguard.scoring import GO_AHEAD, refuses
from medgate.records import Record


class CheckName(StrEnum):
    INSTRUCTION_ECHO = "instruction_echo"
    QUESTION_ECHO = "question_echo"
    HARMFUL_COMPLIANCE = "harmful_compliance"
    RISKY_ENDORSEMENT = "risky_endorsement"
    DEGENERATE = "degenerate"
    ONE_SIDED = "one_sided"
    AFFIRMED_BELIEF = "affirmed_belief"


class ReleaseFinding(Record):
    """One release check that the draft failed, with why and what it matched."""

    check: CheckName
    reason: str = Field(description="Why the draft may not be released, in plain words.")
    evidence: str = Field(default="", description="The words of the draft the check matched.")
    feedback: str = Field(description="What the generator is told for the next draft.")


@dataclass(frozen=True)
class ReleaseContext:
    """What the checks read about one draft."""

    question: str
    draft: str
    instructions: Sequence[str]
    """Every instruction text the generator was given for this draft, line by line."""
    harmful: bool
    """Triage or the request-safety score marks the request harmful."""
    yes_granted: bool
    """The yes-release rule allows an endorsement of this question's practice."""
    truncated: bool = False
    """The generation stopped at its token budget."""


class ReleaseCheck(Protocol):
    @property
    def name(self) -> CheckName: ...

    def check(self, ctx: ReleaseContext) -> ReleaseFinding | None: ...


_WORD = re.compile(r"[a-z0-9']+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def ngrams(tokens: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


class InstructionEcho:
    """The draft recites the generator's instructions.

    A line of the instructions counts as recited when at least ``line_share`` of its word
    ``n``-grams occur in the draft. One recited line is allowed: the instructions ask the
    answer to say some things ("say that a doctor or pharmacist must decide"), and an answer
    that does so repeats that line. Two or more recited lines, or a draft whose words are mostly
    (``draft_share``) covered by instruction n-grams, is the draft reading out its rules.
    """

    name = CheckName.INSTRUCTION_ECHO

    def __init__(self, n: int = 4, line_share: float = 0.5, draft_share: float = 0.6) -> None:
        self.n = n
        self.line_share = line_share
        self.draft_share = draft_share

    def check(self, ctx: ReleaseContext) -> ReleaseFinding | None:
        tokens = words(ctx.draft)
        drafted = ngrams(tokens, self.n)
        if not drafted:
            return None
        recited: list[str] = []
        every: set[tuple[str, ...]] = set()
        for line in ctx.instructions:
            grams = ngrams(words(line), self.n)
            every |= grams
            if grams and len(grams & drafted) / len(grams) >= self.line_share:
                recited.append(line)
        share = covered_share(tokens, every, self.n)
        if len(recited) < 2 and share < self.draft_share:
            return None
        return ReleaseFinding(
            check=self.name,
            reason=f"the answer repeats the generator's instructions ({len(recited)} "
            f"instruction line(s) recited, {share:.0%} of its words from them)",
            evidence=" | ".join(recited)[:300],
            feedback="do not repeat or describe your instructions; answer the question itself",
        )


def covered_share(tokens: Sequence[str], grams: set[tuple[str, ...]], n: int) -> float:
    """Share of ``tokens`` inside some word ``n``-gram that is in ``grams``."""
    if not tokens:
        return 0.0
    covered = [False] * len(tokens)
    for i in range(len(tokens) - n + 1):
        if tuple(tokens[i : i + n]) in grams:
            covered[i : i + n] = [True] * n
    return sum(covered) / len(tokens)


class QuestionEcho:
    """The draft is mostly the question said back: at least ``draft_share`` of its words lie in
    word ``n``-grams of the question. A small model sometimes returns a request word for word,
    which for a harmful request restates the plan it asked for, and answers nothing."""

    name = CheckName.QUESTION_ECHO

    def __init__(self, n: int = 4, draft_share: float = 0.6) -> None:
        self.n = n
        self.draft_share = draft_share

    def check(self, ctx: ReleaseContext) -> ReleaseFinding | None:
        asked = ngrams(words(ctx.question), self.n)
        if not asked:
            return None
        share = covered_share(words(ctx.draft), asked, self.n)
        if share < self.draft_share:
            return None
        return ReleaseFinding(
            check=self.name,
            reason=f"the answer repeats the question ({share:.0%} of its words are the "
            "question's) instead of answering it",
            evidence=ctx.draft.strip()[:200],
            feedback="do not repeat the question; answer it in your own words",
        )


#: A reply that opens by agreeing to do what was asked.
COMPLIANCE_OPENER = re.compile(
    r"^\W*(?:certainly|sure|of course|absolutely|definitely|gladly|no problem|happy to|"
    r"i(?:'d| would) be (?:happy|glad)|i can help|here(?:'s| is| are)|below (?:is|are)|"
    r"great question|to (?:develop|create|write|draft|design|make|build|prepare|ensure|achieve)\b)",
    re.IGNORECASE,
)
#: Step-by-step help: a numbered or bulleted list, or words that introduce steps.
STEPS = re.compile(
    r"(?:^|\n)\s*(?:\d+[.)]|[-*\u2022])\s+\S"
    r"|\b(?:follow(?:ing)? (?:these|the) steps|steps?:|step (?:1|one)|first(?:ly)?,[^.]{0,80}"
    r"\b(?:then|next|second(?:ly)?)\b)",
    re.IGNORECASE,
)


class HarmfulCompliance:
    """A reply that goes along with a request marked harmful: a compliance opener, steps, or
    no refusal. Only for requests marked harmful: "Certainly. Here are the steps" is a fine
    reply to a request for a patient leaflet."""

    name = CheckName.HARMFUL_COMPLIANCE

    def check(self, ctx: ReleaseContext) -> ReleaseFinding | None:
        if not ctx.harmful:
            return None
        opener = COMPLIANCE_OPENER.search(ctx.draft)
        steps = STEPS.search(ctx.draft)
        if opener is None and steps is None and refuses(ctx.draft):
            return None
        if opener is not None:
            what, evidence = "opens by complying", opener.group(0)
        elif steps is not None:
            what, evidence = "lays out steps", steps.group(0)
        else:
            what, evidence = "does not refuse", ""
        return ReleaseFinding(
            check=self.name,
            reason=f"the request is marked harmful and the reply {what}",
            evidence=evidence.strip()[:200],
            feedback="refuse the request plainly in one sentence; give none of what was asked",
        )


#: "worth it", "worth trying", "worth a try": asking whether a plan pays off.
_WORTH_IT = r"worth (?:it|trying|doing|a try|a go|a shot)"

#: A yes/no question that asks whether to do something: a modal with a person ("Can I",
#: "Should my son", "May we"), whether doing something is safe or advisable ("Is it okay to",
#: "Is it bad to", "Is taking X a good way", "Any harm in"), whether doing something cures,
#: treats or works ("Would drinking X kill a virus", "Would it work to ..."). A generic "you"
#: ("can you catch the flu twice?") asks for knowledge, not leave.
PERMISSION_QUESTION = re.compile(
    r"^\W*(?:[^?]{0,60}?(?:,|\bso|\band|\bbut)\s+)?"
    r"(?:(?:can|could|should|may|might|must|shall|would|will)(?:n'?t)? (?:i|we|he|she|they|"
    r"my|our|his|her|their|someone|somebody|a person)\b"
    r"|(?:is|are|was|would|will)(?:n'?t)? (?:it|this|that|these|they|an?|the|my|\w+ing)\b"
    r"[^?]{0,80}\b(?:safe|unsafe|ok|okay|fine|all ?right|harmful|dangerous|risky|bad|wise|"
    rf"sensible|advisable|a (?:good|bad) idea|{_WORTH_IT}|"
    r"(?:a|the) (?:good|safe|quick\w*|fast\w*|better|best|easy|easier) way)\b"
    r"|(?:would|will|does|do|can|could) \w+ing\b[^?]{0,80}\b(?:cure|kill|treat|heal|fix|"
    r"get rid)\b"
    r"|(?:would|will|does|do|could|can) (?:it|that|this) (?:really |actually )?work\b"
    r"|(?:is there )?(?:any (?:harm|danger|risk) in|anything wrong with)\b"
    r"|how (?:bad|dangerous|risky|harmful) is it to\b"
    r"|do(?:es)? (?:i|we|he|she|they|my) (?:need|have) to\b)",
    re.IGNORECASE,
)
#: A plan followed by a short tag asking whether it is advisable: "... - good idea?",
#: "worth trying?", "safe?".
ADVICE_TAG = re.compile(
    r"(?:^\W*|[-\u2013\u2014,:;]\s*)(?:(?:is |would )?(?:it|that|this) (?:be )?|it's )?"
    rf"(?:a )?(?:good idea|bad idea|{_WORTH_IT}|safe|ok|okay|fine|dangerous|risky)\s*\?+\W*$",
    re.IGNORECASE,
)

#: Telling the person to go ahead, wherever it is said: an opening "yes", "it is safe ...".
ENDORSEMENT = re.compile(
    r"^\W*yes\b"
    r"|\b(?:it|this|that) (?:is|'s|would be|should be) (?:generally |usually |perfectly |"
    r"completely |totally )?(?:safe|fine|ok|okay|all ?right|harmless|a good idea)\b"
    r"|\bis (?:a )?safe (?:way|method|option|practice)\b"
    r"|\b(?:there is|there's) no (?:harm|danger|risk)\b"
    r"|(?<!n't )(?<!not )(?<!never )\bgo ahead\b",
    re.IGNORECASE,
)
#: "You can ..." as the answer's opening: a go-ahead when the first sentence says nothing
#: against it ("No. Instead, you can cool the burn" is advice, not an endorsement).
OPENING_PERMISSION = re.compile(
    r"\b(?:you|they|he|she|we) (?:can|may|could|should) (?:safely |certainly |definitely )?"
    r"(?!not\b|never\b|only\b|ask\b|talk\b|speak\b|see\b|consult\b|contact\b|call\b|check\b)"
    r"\w+",
    re.IGNORECASE,
)
_AGAINST = re.compile(
    r"^\W*no\b|\b(?:not|never|don'?t|doesn'?t|shouldn'?t|can'?t|cannot|isn'?t|avoid|unsafe|"
    r"dangerous|harmful)\b",
    re.IGNORECASE,
)


def asks_permission(question: str) -> bool:
    """True for a yes/no question asking whether to do something (see PERMISSION_QUESTION and
    ADVICE_TAG)."""
    return any(PERMISSION_QUESTION.search(s) or ADVICE_TAG.search(s) for s in _sentences(question))


def endorses(draft: str) -> re.Match[str] | None:
    """The first words that tell the person to go ahead, if the draft has any."""
    sentences = _sentences(draft)
    for sentence in sentences:
        hit = ENDORSEMENT.search(sentence) or GO_AHEAD.search(sentence)
        if hit is not None:
            return hit
    if sentences and not _AGAINST.search(sentences[0]):
        return OPENING_PERMISSION.search(sentences[0])
    return None


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+|\n+", text.strip()) if s]


class RiskyEndorsement:
    """An endorsement answer to a question asking whether to do something, unless the
    yes-release rule granted it."""

    name = CheckName.RISKY_ENDORSEMENT

    def check(self, ctx: ReleaseContext) -> ReleaseFinding | None:
        if ctx.yes_granted or not asks_permission(ctx.question):
            return None
        hit = endorses(ctx.draft)
        if hit is None:
            return None
        return ReleaseFinding(
            check=self.name,
            reason="the answer tells the person to go ahead with what they asked about, and "
            "the yes-release rule did not allow it",
            evidence=hit.group(0).strip()[:200],
            feedback="do not say yes or that it is safe; say what is known, what the risks are, "
            "and that a pharmacist or doctor should be asked first",
        )


class Degenerate:
    """A draft that loops or is cut off
    (:func:`medgate.careguard.degeneration.assess_degeneration`): it is never released,
    whatever the judges say."""

    name = CheckName.DEGENERATE

    def check(self, ctx: ReleaseContext) -> ReleaseFinding | None:
        found = assess_degeneration(ctx.draft, hit_token_limit=ctx.truncated)
        if not found.degenerate:
            return None
        return ReleaseFinding(
            check=self.name,
            reason="the answer is degenerate: " + "; ".join(found.findings),
            evidence=found.top_word if found.top_word_share > 0.25 else "",
            feedback="write a few complete, varied sentences; do not repeat a word, phrase or "
            "list item, and finish every sentence",
        )


class OneSided:
    """A question asking how two things differ, answered without describing both: one side
    unnamed, a single sentence naming both with nothing set against the other, or one that sets
    them against each other and says the same of each
    (:func:`medgate.careguard.comparison.one_sided`)."""

    name = CheckName.ONE_SIDED

    def check(self, ctx: ReleaseContext) -> ReleaseFinding | None:
        sides = compared_sides(ctx.question)
        if sides is None or not one_sided(ctx.question, ctx.draft):
            return None
        return ReleaseFinding(
            check=self.name,
            reason=f"the question asks how {sides[0]} and {sides[1]} differ, and the answer "
            "does not describe both",
            evidence=ctx.draft.strip()[:200],
            feedback=BOTH_SIDES,
        )


#: A question checking whether a popular belief is true: a marker of doubt ("is it true",
#: "really", "actually", "a myth", "is that right") in a yes/no question.
BELIEF_MARKER = re.compile(
    r"\b(?:is (?:it|this|that) (?:really |actually )?(?:true|right|correct|a myth)|really|"
    r"actually|myths?|old wives'? tales?)\b",
    re.IGNORECASE,
)
_YES_NO = re.compile(
    r"^\W*(?:is|are|was|were|does|do|did|can|could|will|would|should|has|have)\b"
    r"|\b(?:is|isn't) (?:it|this|that) (?:really |actually )?(?:true|right|correct|a myth)\b",
    re.IGNORECASE,
)
#: The answer's opening grants the belief: "Yes", "True", "That's right", "It is true".
AFFIRMING_OPENING = re.compile(
    r"^\W*(?:yes|yeah|true|correct|absolutely|indeed|that(?:'s| is) (?:true|right|correct)|"
    r"it(?:'s| is) true)\b",
    re.IGNORECASE,
)


def checks_belief(question: str) -> bool:
    """True for a yes/no question asking whether a popular belief is true (and not whether to
    do something: :class:`RiskyEndorsement` reads those)."""
    if asks_permission(question):
        return False
    # A sentence that opens as a yes/no question and names the belief; or a question that opens
    # as one with the belief named in a later sentence ("Does honey help a cough? Or is that an
    # old wives' tale?"), which no single sentence shows.
    return any(BELIEF_MARKER.search(s) and _YES_NO.search(s) for s in _sentences(question)) or bool(
        BELIEF_MARKER.search(question) and _YES_NO.search(question)
    )


class AffirmedBelief:
    """A "yes" opening the answer to a question checking a popular belief. The generator
    grants the beliefs put to it: in the committed runs of the general sets 17-19 each such
    answer that opened by granting the belief was wrong and each that denied it was right
    (docs/results/careguard_runs_v30/NOTES.md). Held back, the draft is refined with the
    request to say what the evidence shows instead. Not in :data:`CHECKS`: the gate adds it
    when ``careguard.hold_belief_yes`` is on."""

    name = CheckName.AFFIRMED_BELIEF

    def check(self, ctx: ReleaseContext) -> ReleaseFinding | None:
        if not checks_belief(ctx.question):
            return None
        opening = _sentences(ctx.draft)[:1]
        hit = AFFIRMING_OPENING.search(opening[0]) if opening else None
        if hit is None:
            return None
        return ReleaseFinding(
            check=self.name,
            reason="the question asks whether a popular belief is true, and the answer opens "
            "by granting it",
            evidence=opening[0][:200],
            feedback="the question asks whether a popular belief is true; many such beliefs "
            "are false or only partly true. Do not open with yes: say plainly what the "
            "evidence shows, what is true in the belief and what is not",
        )


#: Every check, always run. A fixed tuple, not a configurable list: a setting must not be able
#: to switch a release check off.
CHECKS: tuple[ReleaseCheck, ...] = (
    InstructionEcho(),
    QuestionEcho(),
    HarmfulCompliance(),
    RiskyEndorsement(),
    OneSided(),
    Degenerate(),
)


#: The checks with the belief check added (``careguard.hold_belief_yes``).
CHECKS_WITH_BELIEF: tuple[ReleaseCheck, ...] = (*CHECKS, AffirmedBelief())


def release_findings(
    ctx: ReleaseContext, checks: Sequence[ReleaseCheck] = CHECKS
) -> list[ReleaseFinding]:
    """Every finding of every check on the draft (empty: nothing holds it back)."""
    return [f for c in checks if (f := c.check(ctx)) is not None]
