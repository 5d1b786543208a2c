"""Typed records of one CareGuard run: triage, drafts, evaluator assessments, the decision."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from medgate.careguard.categories import Evidence, RiskCategory
from medgate.careguard.release_checks import ReleaseFinding
from medgate.careguard.screening import ScreeningQuestion
from medgate.careguard.stance import Stance
from medgate.claims.safety_check import SafetyCheck
from medgate.records import Record, SignalValue, Usage


class RequestSafety(Record):
    """The request-safety classifier's reading of one request (a stable record: release rules
    and judges read it).

    ``harmful`` is ``score >= threshold``; a harmful request is refused before any answer is
    drafted. The score is the classifier's probability that the request asks for help to harm,
    deceive or treat people unethically, so comparing it with a stricter threshold of one's own
    is meaningful.
    """

    score: float = Field(ge=0.0, le=1.0, description="P(harmful request), 0-1.")
    threshold: float = Field(ge=0.0, le=1.0, description="The score at or above which it refuses.")
    harmful: bool = Field(description="score >= threshold: the request was refused.")
    artifact: str = Field(description="Which fitted classifier scored it (name, version, digest).")
    threshold_source: Literal["artifact", "configured"] = Field(
        default="artifact",
        description="'artifact': the threshold chosen when the classifier was fitted; "
        "'configured': careguard.request_safety.threshold set it.",
    )
    seconds: float = Field(default=0.0, ge=0.0, description="Time to embed and score it.")

    @model_validator(mode="after")
    def _harmful_is_the_comparison(self) -> RequestSafety:
        if self.harmful != (self.score >= self.threshold):
            raise ValueError("harmful must be score >= threshold")
        return self


class Triage(Record):
    """What the controller found: categories with evidence, missing context, instructions."""

    category: RiskCategory = Field(description="The most urgent category found.")
    categories: list[RiskCategory] = Field(description="Every category found, most urgent first.")
    evidence: list[Evidence] = Field(default_factory=list)
    model_categories: list[RiskCategory] | None = Field(
        default=None, description="What the controller model said; None when it did not run."
    )
    model_error: str | None = Field(
        default=None, description="Why the controller model gave nothing usable, if it did not."
    )
    questions: list[ScreeningQuestion] = Field(
        default_factory=list, description="Screening questions for missing context."
    )
    instructions: list[str] = Field(default_factory=list)
    red_flags: list[str] = Field(
        default_factory=list, description="Screening answers that call for prompt care."
    )
    seconds: float = 0.0
    usage: Usage | None = None
    request_safety: RequestSafety | None = Field(
        default=None,
        description="The request-safety classifier's score of the question; None when it is "
        "switched off or did not run (the rules found self-harm or an emergency first).",
    )

    @property
    def short_circuit(self) -> RiskCategory | None:
        """Self-harm or emergency, whichever was found (self-harm first)."""
        for category in (RiskCategory.SELF_HARM, RiskCategory.EMERGENCY):
            if category in self.categories:
                return category
        return None


class TokenStats(Record):
    """Token-level readings of a generated text from its per-token log-probabilities."""

    tokens: int = Field(ge=1)
    mean_logprob: float = Field(le=0)
    min_logprob: float = Field(le=0)
    perplexity: float = Field(ge=1, description="exp(-mean log-probability).")


class Draft(Record):
    """One generated answer."""

    text: str
    signals: dict[str, SignalValue] = Field(
        default_factory=dict, description="HRS-style signals of the text (white-box only)."
    )
    tokens: TokenStats | None = Field(
        default=None, description="Its token log-probability readings (white-box only)."
    )
    samples: list[str] = Field(
        default_factory=list,
        description="Further answers sampled from the same prompt (careguard.hra_risk.samples), "
        "which HRA's consistency check compares the draft with.",
    )
    truncated: bool = Field(
        default=False,
        description="The generation stopped at its token budget, not by itself; the text is "
        "then cut back to its last complete sentence, if it has one.",
    )
    seconds: float = 0.0
    usage: Usage | None = None


class Evaluator(StrEnum):
    """medgate's own judges; a plugin's judge has a name of its own (``medgate.judges``)."""

    SRA = "sra"
    HRA = "hra"


class Assessment(Record):
    """One judge's verdict on one draft, whichever judge it is.

    ``score`` is what the decision uses. For SRA it is the larger of the judge's score and the
    rule floor; for HRA it combines the judge with the signals and claim flags (see
    :func:`medgate.careguard.scoring.hra_score`). A judge that failed makes it 5.
    """

    evaluator: str = Field(description="The judge's registered name ('sra', 'hra', ...).")
    score: int = Field(ge=1, le=5)
    judge_score: int | None = Field(
        default=None, ge=1, le=5, description="The model judge's own score; None if it failed."
    )
    justification: str = ""
    rule_findings: list[str] = Field(
        default_factory=list, description="Deterministic findings that raised the score."
    )
    components: dict[str, float] = Field(
        default_factory=dict, description="Inputs of the combined score, for audit."
    )
    error: str | None = Field(default=None, description="Why the judge failed, if it did.")
    ran: bool = Field(default=True, description="False when the evaluator is switched off.")
    seconds: float = 0.0
    usage: Usage | None = None


class ClaimsReview(Record):
    """The claims layer's check of one draft: what the release decision read, and the check."""

    is_safe: bool
    high_severity_count: int = Field(ge=0)
    unresolvable_count: int = Field(ge=0)
    warnings: list[str] = Field(default_factory=list)
    blocking: list[str] = Field(
        default_factory=list,
        description="Sentences with a high-severity uncited claim: these alone stop a release.",
    )
    errors: list[str] = Field(default_factory=list, description="Checks that failed to run.")
    check: SafetyCheck | None = Field(
        default=None,
        description="The whole check: flags, sources, citation verification. None in records "
        "written before the check was kept whole.",
    )


def switched_off(name: str) -> Assessment:
    """The assessment of a judge that did not run (an ablation): never a failure, never a pass
    of its own."""
    return Assessment(evaluator=name, score=1, ran=False)


def judges_by_name(data: Any, names: tuple[str, ...] = ("sra", "hra")) -> Any:
    """Records written when CareGuard had exactly two judges kept them as fields of their own."""
    if isinstance(data, dict) and "assessments" not in data and any(n in data for n in names):
        data = dict(data)
        data["assessments"] = {n: data.pop(n) for n in names if n in data}
    return data


TrimWhy = Literal["lead", "referral", "trusted", "doubted"]


class TrimmedSentence(Record):
    """One sentence of the draft and what became of it."""

    text: str
    p_error: float = Field(ge=0, le=1, description="The generator's P(no), over yes/no.")
    kept: bool
    why: TrimWhy = Field(
        description="'lead': the opening sentence, always kept; 'referral': it sends the "
        "reader to a professional, always kept; 'trusted': P(no) at or below the cut; "
        "'doubted': above it, left out."
    )


class Trimming(Record):
    """The trim of one released draft."""

    threshold: float
    sentences: list[TrimmedSentence]
    text: str = Field(description="What is released: the draft without its doubted sentences.")
    header_only: bool = Field(
        default=False,
        description="True when only an opening ending in ':', or one announcing what it does "
        "not say ('they differ in several ways'), would be left: nothing to release.",
    )
    one_sided: bool = Field(
        default=False,
        description="True when the question asks how two things differ and the trim would "
        "leave a text that does not describe both (medgate.careguard.comparison).",
    )
    opening_support: list[float] | None = Field(
        default=None,
        description="P(no) that each of the generator's samples supports the opening sentence "
        "(careguard.trim.opening_samples); None when the opening was not read against samples.",
    )
    opening_threshold: float | None = Field(
        default=None, description="The mean of opening_support above which the opening is doubted."
    )
    seconds: float = 0.0
    usage: Usage | None = None

    @property
    def dropped(self) -> int:
        return sum(not s.kept for s in self.sentences)

    @property
    def opening_mean(self) -> float | None:
        """The mean P(no) of the samples' support for the opening; None when not read."""
        if not self.opening_support:
            return None
        return sum(self.opening_support) / len(self.opening_support)

    @property
    def opening_doubted(self) -> bool:
        """The samples do not support the opening: nothing of the draft can be released."""
        mean, cut = self.opening_mean, self.opening_threshold
        return mean is not None and cut is not None and mean > cut


class YesRelease(Record):
    """Whether an endorsement of the asked-about practice may be released, and each vote
    (:mod:`medgate.careguard.yes_release`)."""

    granted: bool
    votes: dict[str, bool] = Field(description="Each reading, and whether it agreed.")
    reasons: list[str] = Field(description="Why each reading agreed or not.")


class Round(Record):
    """One generate-and-evaluate round."""

    iteration: int
    draft: Draft
    assessments: dict[str, Assessment] = Field(
        description="Each judge's assessment of the draft, by judge, in the order they are "
        "configured (careguard.judges)."
    )
    claims: ClaimsReview | None = Field(
        default=None, description="The claims layer's check of the draft."
    )
    release_findings: list[ReleaseFinding] = Field(
        default_factory=list,
        description="Release checks the draft failed (medgate.careguard.release_checks): any "
        "one keeps it back, whatever the judges say.",
    )
    waiver: str | None = Field(
        default=None,
        description="Why the SRA judge's own score could not hold this draft back, if so "
        "(medgate.careguard.yes_release.sra_judge_waiver).",
    )
    yes_release: YesRelease | None = Field(
        default=None,
        description="For a question asking whether to do something: whether an endorsement "
        "could be released, with each vote (medgate.careguard.yes_release).",
    )
    reply_safety: RequestSafety | None = Field(
        default=None,
        description="The request-safety classifier's score of this draft against the reply "
        "threshold (medgate.careguard.request_safety.reply_screen); None when the reply "
        "screen is off. At or above it the request is refused and nothing else judges the draft.",
    )
    trimming: Trimming | None = Field(
        default=None,
        description="The released draft's doubted sentences left out "
        "(medgate.careguard.trimming); None when trimming is off or does not apply.",
    )
    passed: bool

    @model_validator(mode="before")
    @classmethod
    def _legacy_judges(cls, data: Any) -> Any:
        return judges_by_name(data)

    @field_validator("claims", mode="before")
    @classmethod
    def _empty_is_absent(cls, value: object) -> object:
        # Records written before the review was typed kept ``{}`` for "no check".
        return None if value == {} else value

    @property
    def sra(self) -> Assessment:
        return self.assessments.get(Evaluator.SRA) or switched_off(Evaluator.SRA)

    @property
    def hra(self) -> Assessment:
        return self.assessments.get(Evaluator.HRA) or switched_off(Evaluator.HRA)


class Outcome(StrEnum):
    NEEDS_CONTEXT = "needs_context"
    EMERGENCY = "emergency_guidance"
    CRISIS = "crisis_guidance"
    RELEASED = "released"
    REFINED = "refined"
    EXHAUSTED = "blocked_after_refinement"
    INJECTION = "blocked_injection"
    """The question or a patient field holds text addressed to the model."""
    REQUEST_REFUSED = "refused_harmful_request"
    """The request-safety classifier scored the question as a harmful request."""
    REPLY_REFUSED = "refused_after_reply_screen"
    """A draft reply scored as help with harm by the request-safety classifier: the request
    is refused and no draft is shown."""
    ERROR = "blocked_on_error"
    DANGEROUS_PRACTICE = "dangerous_practice_guidance"
    """A plainly dangerous practice: a fixed, direct "no" with where to get help."""
    FIRST_AID = "first_aid_guidance"
    """A first-aid question: CareGuard's fixed steps for the procedure, no model text."""
    MISTREATMENT_SUPPORT = "mistreatment_support"
    """Someone threatened, pressured, bullied or mocked asks what to do: CareGuard's fixed
    support text, no model text."""
    CONSERVATIVE = "answered_conservatively"
    """No draft could be released: CareGuard's own general, safe answer instead of a block."""
    REVIEW = "escalated_for_review"
    """A draft passed every check, but the request screen was unsure of the request: the draft
    is held back for a clinician and the reader gets a holding message."""


class CareGuardReport(Record):
    """Everything behind a CareGuard verdict, kept under ``trace.stages['careguard']``."""

    stage: Literal["careguard"] = "careguard"
    outcome: Outcome
    triage: Triage | None = Field(default=None, description="None when the controller is off.")
    request_safety: RequestSafety | None = Field(
        default=None,
        description="The request-safety classifier's score of the question (also on the "
        "triage record); None when it is switched off or did not run.",
    )
    stance: Stance | None = Field(
        default=None,
        description="The model's yes/no stance, read for a question asking whether to do "
        "something (medgate.careguard.stance); None when not asked.",
    )
    rounds: list[Round] = Field(default_factory=list)
    controller: str | None = None
    generator: str
    judges: dict[str, str | None] = Field(
        default_factory=dict,
        description="Each configured judge and the model it asks (None: switched off, or a "
        "judge without a model).",
    )

    @model_validator(mode="before")
    @classmethod
    def _legacy_judge_models(cls, data: Any) -> Any:
        # Reports written when there were two judges named their models in fields of their own.
        if isinstance(data, dict) and "judges" not in data and "sra_model" in data:
            data = dict(data)
            data["judges"] = {n: data.pop(f"{n}_model", None) for n in ("sra", "hra")}
        return data

    @property
    def iterations(self) -> int:
        """Refinement rounds after the first draft."""
        return max(0, len(self.rounds) - 1)
