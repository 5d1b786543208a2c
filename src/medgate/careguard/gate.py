"""CareGuard as a :class:`~medgate.events.Gate`: triage, generate, evaluate, refine or block.

Decision paths, all deterministic given the model replies:

* text addressed to the model in the question or a patient field (:mod:`medgate.injection`)
  -> BLOCKED with the safe refusal before any model reads it, unless the rules find self-harm
  or an emergency, which get their fixed guidance as always;
* self-harm or emergency found -> BLOCKED with fixed crisis or emergency guidance (no model
  writes anything the person sees);
* missing patient context -> NEEDS_CONTEXT carrying multiple-choice screening questions; the
  same case with the answers in ``Case.patient`` resumes from there;
* otherwise draft, check its claims and citations, score (SRA and HRA concurrently) and
  release iff SRA <= 2, HRA <= 2 and the claims layer found no high-severity uncited claim (a
  dose, a medication change, a contraindication, an interaction, an approval, or an assurance
  of safety for a special population); else refine with the evaluators' and the claims
  layer's feedback up to ``max_refinements`` times, then BLOCKED with a safe refusal pointing
  to a clinician. A refinement that removes the claim or qualifies it (hands the decision to a
  clinician) clears it.

Any failure (generator, claims layer, anything unexpected) blocks with the failure in the trace.
Whatever is shown carries the claims layer's disclaimer.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from medgate.careguard.categories import (
    CRISIS_GUIDANCE,
    EMERGENCY_GUIDANCE,
    HARMFUL_REFUSAL,
    REQUEST_REFUSAL,
    SAFE_REFUSAL,
    Evidence,
    RiskCategory,
    match_rules,
)
from medgate.careguard.comparison import BOTH_SIDES
from medgate.careguard.evaluators import Evaluators
from medgate.careguard.first_aid import first_aid_answer, first_aid_topic, while_help_comes
from medgate.careguard.generator import Generator, instruction_texts
from medgate.careguard.mistreatment import MISTREATMENT_SUPPORT, asks_for_help_with_mistreatment
from medgate.careguard.records import (
    Assessment,
    CareGuardReport,
    ClaimsReview,
    Evaluator,
    Outcome,
    RequestSafety,
    Round,
    Triage,
    Trimming,
)
from medgate.careguard.release_checks import (
    CHECKS,
    CHECKS_WITH_BELIEF,
    ReleaseContext,
    asks_permission,
    release_findings,
)
from medgate.careguard.request_safety import ReplyScreen, RequestScreen
from medgate.careguard.safe_answers import (
    DANGEROUS_PRACTICE_GUIDANCE,
    HELD_FOR_REVIEW,
    asks_for_writing,
    conservative_answer,
)
from medgate.careguard.screening import ScreeningQuestion
from medgate.careguard.stance import Lean, StanceReader
from medgate.careguard.triage import Controller, instructions_for, no_triage
from medgate.careguard.trimming import HEADER_ONLY, OPENING_DOUBTED, SentenceTrimmer
from medgate.careguard.yes_release import (
    decide_yes_release,
    marked_harmful,
    request_safety_of,
    review_reason,
    sra_judge_waiver,
)
from medgate.claims import (
    CitationVerifier,
    ClaimFlag,
    ClaimsChecker,
    FlagKind,
    LexicalSupportJudge,
    LocalRecordStore,
    SafetyCheck,
    Severity,
    apply_disclaimer,
)
from medgate.config import CareGuardConfig
from medgate.events import (
    AnswerEvent,
    ClaimsEvent,
    DecisionEvent,
    DraftAnswer,
    ErrorEvent,
    EventSink,
    Failure,
    GateDecision,
    JudgeScores,
    SafetyEvent,
    SignalsEvent,
    TriageEvent,
    discard,
)
from medgate.injection import describe, find_injections
from medgate.records import Case, HeldBackAnswer, SignalValue, Status, Timing, Usage
from medgate.verdict import Trace, Verdict

STAGE = "careguard"
CLAIMS_STAGE = "claims"


class CareGuardGate:
    """The CareGuard pipeline. ``controller=None`` runs without triage (ablation).

    ``claims`` checks every draft; without one, the rules alone check it against an empty
    offline record store, so no citation counts as support. ``screen`` scores every request
    before any answer is drafted (:mod:`medgate.careguard.request_safety`); None: no screen.
    ``reply_screen`` has the same screen read every draft; None: drafts are not screened.
    ``trimmer`` leaves a general answer's doubted later sentences out of the released text
    (:mod:`medgate.careguard.trimming`); None: the draft is released whole.
    """

    def __init__(
        self,
        controller: Controller | None,
        generator: Generator,
        evaluators: Evaluators,
        config: CareGuardConfig,
        claims: ClaimsChecker | None = None,
        stance: StanceReader | None = None,
        screen: RequestScreen | None = None,
        reply_screen: ReplyScreen | None = None,
        trimmer: SentenceTrimmer | None = None,
    ) -> None:
        self.controller = controller
        self.trimmer = trimmer
        self.screen = screen
        self.reply_screen = reply_screen if screen is not None else None
        self.generator = generator
        self.evaluators = evaluators
        self.config = config
        self.stance = stance
        self.claims = claims or ClaimsChecker(
            CitationVerifier(LocalRecordStore(), LexicalSupportJudge()), None
        )

    def check(self, case: Case, events: EventSink = discard) -> Verdict:
        t0 = time.perf_counter()
        report = CareGuardReport(
            outcome=Outcome.ERROR,
            controller=self.controller.name if self.controller else None,
            generator=self.generator.name,
            judges=self.evaluators.models,
        )
        errors: list[str] = []
        try:
            status, answer, reason = self._run(case, report, events)
        except Exception as exc:  # fail closed on anything unexpected
            errors.append(f"{type(exc).__name__}: {exc}")
            events(ErrorEvent(stage=STAGE, data=Failure(error=errors[-1])))
            report.outcome = Outcome.ERROR
            status, answer = Status.BLOCKED, apply_disclaimer(SAFE_REFUSAL)
            reason = "a CareGuard stage failed, so the answer is withheld"
        for rnd in report.rounds:
            for a in rnd.assessments.values():
                if a.error:
                    errors.append(f"{a.evaluator} round {rnd.iteration}: {a.error}")
        verdict = Verdict(
            status=status,
            answer=answer,
            reason=reason,
            case=case,
            signals=self._signals(report),
            held_back=_held_back(report, status),
            trace=self._trace(report, errors, time.perf_counter() - t0),
        )
        events(
            DecisionEvent(
                stage=STAGE,
                iteration=len(report.rounds) - 1 if report.rounds else None,
                data=GateDecision(
                    status=status, answer=answer, reason=reason, outcome=report.outcome.value
                ),
            )
        )
        return verdict

    # -- the pipeline -------------------------------------------------------------------------
    def _run(
        self, case: Case, report: CareGuardReport, events: EventSink
    ) -> tuple[Status, str | None, str]:
        inputs = {"question": case.question} | {f"{k} field": v for k, v in case.patient.items()}
        findings = find_injections(inputs)
        urgent_by_rules = any(e.category.short_circuits for e in match_rules(case.question))
        # Before any model reads the input; a person in crisis still gets the fixed guidance,
        # which the rules alone decide (the controller model is not asked then).
        if findings and not urgent_by_rules:
            report.outcome = Outcome.INJECTION
            return (
                Status.BLOCKED,
                apply_disclaimer(SAFE_REFUSAL),
                f"the input holds text addressed to the model, so no model read it: "
                f"{describe(findings)}",
            )
        # Someone threatened, pressured or mocked uses the words of the harmful requests the
        # screens were fitted on, and the screens refused them; the support text is fixed, so a
        # harmful request worded as such a message gets nothing that helps harm.
        mistreated = (
            asks_for_help_with_mistreatment(case.question)
            if self.config.mistreatment_support and not urgent_by_rules
            else None
        )
        if mistreated is not None:
            report.outcome = Outcome.MISTREATMENT_SUPPORT
            return (
                Status.REFINED,
                apply_disclaimer(MISTREATMENT_SUPPORT),
                f"the message tells of mistreatment ({mistreated!r}) and asks what to do: "
                "CareGuard's fixed support text, no model text (no screen or model was asked)",
            )
        # The request screen runs before any answer is drafted (its encoder may be the model's
        # own reading of the request, never a reply to it), but only when the rules found no
        # crisis: a person in crisis gets the fixed guidance whatever the score.
        safety = None
        if self.screen is not None and not urgent_by_rules:
            safety = self.screen.assess(case.question)
            report.request_safety = safety
            if safety.harmful:
                refused = refused_triage(safety)
                report.triage = refused
                events(TriageEvent(stage=STAGE, data=refused))
                report.outcome = Outcome.REQUEST_REFUSED
                return (
                    Status.BLOCKED,
                    apply_disclaimer(REQUEST_REFUSAL),
                    f"the request-safety classifier scored the request {safety.score:.3f} "
                    f"(threshold {safety.threshold:.3f}): refused before any answer was drafted",
                )
        # A question the first-aid route answers gets its fixed card whatever the controller
        # model says, unless it finds self-harm, an emergency or a harmful request, and on the
        # questions routed to a card it found none of those (docs/careguard.md, "First aid"):
        # so the person is not kept waiting for it. The rules and the request screen still run.
        early_aid = None if urgent_by_rules else first_aid_topic(case.question)
        triage = (
            self.controller.triage(case, ask_model=early_aid is None)
            if self.controller is not None
            else no_triage()
        )
        if safety is not None:
            triage = triage.model_copy(update={"request_safety": safety})
        report.triage = triage if self.controller is not None else None
        events(TriageEvent(stage=STAGE, data=triage))

        urgent = triage.short_circuit
        if urgent is RiskCategory.SELF_HARM:
            report.outcome = Outcome.CRISIS
            return (
                Status.BLOCKED,
                apply_disclaimer(CRISIS_GUIDANCE),
                "self-harm risk: blocked with crisis and emergency guidance, no answer generated",
            )
        if urgent is RiskCategory.EMERGENCY:
            report.outcome = Outcome.EMERGENCY
            steps = while_help_comes(case.question)
            guidance = EMERGENCY_GUIDANCE if steps is None else f"{EMERGENCY_GUIDANCE}\n\n{steps}"
            return (
                Status.BLOCKED,
                apply_disclaimer(guidance),
                "possible emergency: directed to emergency services at once"
                + ("" if steps is None else ", with first-aid steps while help comes"),
            )
        # A request the rules mark harmful is refused at once: drafting a refusal with the model
        # only costs minutes and risks a draft that complies.
        ruled = [
            e
            for e in triage.evidence
            if e.category is RiskCategory.HARMFUL_REQUEST and e.source == "rule"
        ]
        if ruled:
            report.outcome = Outcome.REQUEST_REFUSED
            return (
                Status.BLOCKED,
                apply_disclaimer(HARMFUL_REFUSAL),
                f"the rules mark the request harmful ({ruled[0].rule}: {ruled[0].matched!r}): "
                "refused before any answer was drafted",
            )
        request_safety = request_safety_of(triage)
        harmful = RiskCategory.HARMFUL_REQUEST in triage.categories or marked_harmful(
            request_safety
        )
        # A wrong first-aid step can hurt within minutes, and the steps are settled: a
        # first-aid question gets the fixed card, not a draft no judge can check.
        aid = None if harmful else early_aid
        if aid is not None:
            report.outcome = Outcome.FIRST_AID
            return (
                Status.REFINED,
                apply_disclaimer(first_aid_answer(aid)),
                f"a first-aid question ({aid.name}): CareGuard's fixed first-aid steps, no "
                "model text (the controller model was not asked)",
            )
        permission = asks_permission(case.question)
        stance = None
        if permission and not harmful and self.stance is not None:
            # Before screening: a plainly dangerous practice gets a direct "no", not questions
            # about age and allergies.
            stance = self.stance.read(case.question)
            report.stance = stance
            if stance.lean is Lean.CONFIDENT_NO:
                report.outcome = Outcome.DANGEROUS_PRACTICE
                return (
                    Status.BLOCKED,
                    apply_disclaimer(DANGEROUS_PRACTICE_GUIDANCE),
                    f"the model firmly answers no (p_no {stance.p_no:.2f}) to a question asking "
                    "whether to do something: a fixed, direct no with where to get help",
                )
        if triage.questions:
            report.outcome = Outcome.NEEDS_CONTEXT
            fields = ", ".join(q.field.value for q in triage.questions)
            general = conservative_answer(triage.categories, permission)
            return (
                Status.NEEDS_CONTEXT,
                f"{general}\n\n{render_questions(triage)}",
                f"{triage.category.value}: a general answer, and patient context needed for "
                f"more ({fields})",
            )
        if (
            RiskCategory.CONTROLLED_SUBSTANCE in triage.categories
            and not self.config.draft_controlled_substances
            and not harmful
            and not triage.red_flags
        ):
            # A request to obtain or misuse one reads like a plain question to the request
            # screen and the small judges (one passed a draft on getting oxycodone past an
            # emergency doctor), and no draft about one has been answered with model text in
            # the run logs: CareGuard's own text costs nothing there and cannot help misuse.
            report.outcome = Outcome.CONSERVATIVE
            return (
                Status.REFINED,
                apply_disclaimer(conservative_answer(triage.categories, permission)),
                "a controlled substance: CareGuard's own conservative text, no model draft "
                "(careguard.draft_controlled_substances is off)",
            )

        feedback: list[str] = []
        # What the echo check compares drafts with. The reviewers' corrections are left out:
        # they quote the rejected draft, so a correct sentence kept would read as recited.
        instructions = instruction_texts(triage, [])
        trimmer = self.trimmer if trims(triage, permission) else None
        # Samples for the opening check are drawn only for an answer whose opening is read.
        opening = trimmer is not None and trimmer.opening_threshold is not None
        # The HRA judge is waived only where the opening check reads the draft in its place.
        waive_hra = self.config.waive_hra_judge and opening
        waiver = sra_judge_waiver(
            triage, request_safety, permission, self.config.sra_waiver_below, hra_too=waive_hra
        )
        waived = waived_judges(waiver, waive_hra)
        for iteration in range(self.config.max_refinements + 1):
            draft = self.generator.draft(case, triage, feedback, iteration, opening=opening)
            events(
                AnswerEvent(stage=STAGE, iteration=iteration, data=DraftAnswer(answer=draft.text))
            )
            events(SignalsEvent(stage=STAGE, iteration=iteration, data=dict(draft.signals)))
            if self.screen is not None and self.reply_screen is not None:
                # A harmful request worded as an ordinary task passes the request screen, but
                # the reply says plainly what it helps to do. Read before the judges: a reply
                # that reads as help with harm refuses the request, whatever they would say.
                reading = self.reply_screen.read(self.screen, draft.text)
                if reading.harmful:
                    report.rounds.append(
                        Round(
                            iteration=iteration,
                            draft=draft,
                            assessments={},
                            reply_safety=reading,
                            passed=False,
                        )
                    )
                    report.outcome = Outcome.REPLY_REFUSED
                    return (
                        Status.BLOCKED,
                        apply_disclaimer(REQUEST_REFUSAL),
                        f"the request-safety classifier scored draft {iteration} of the reply "
                        f"{reading.score:.3f} (reply threshold {reading.threshold:.3f}): the "
                        "request was refused and no draft is shown",
                    )
            else:
                reading = None
            claims = self.claims.check(draft.text)
            events(ClaimsEvent(stage=CLAIMS_STAGE, iteration=iteration, data=claims))
            penalty = 1 if claims.high_severity_count or claims.unresolvable_count else 0
            blocking = blocking_claims(claims)
            assessments = self.evaluators.assess(case, triage, draft, penalty)
            yes = (
                decide_yes_release(
                    stance,
                    request_safety,
                    assessments.get(Evaluator.SRA),
                    self.evaluators.threshold(Evaluator.SRA),
                    triage,
                )
                if permission
                else None
            )
            held = release_findings(
                ReleaseContext(
                    question=case.question,
                    draft=draft.text,
                    instructions=instructions,
                    harmful=harmful,
                    yes_granted=yes is not None and yes.granted,
                    truncated=draft.truncated,
                ),
                CHECKS_WITH_BELIEF if self.config.hold_belief_yes else CHECKS,
            )
            passed = (
                all(self._passes(name, a, waived) for name, a in assessments.items())
                and not blocking
                # A claims check that failed to run cannot vouch for the draft: fail closed.
                and not claims.errors
                # No judge's score passes a release check.
                and not held
            )
            trimming = None
            if passed and trimmer is not None:
                # A reading that fails raises, and the gate withholds the answer (fail closed).
                if trimmer.opening_threshold is not None:
                    draft = self.generator.with_opening_samples(
                        case, triage, draft, feedback, iteration
                    )
                trimming = trimmer.trim(case.question, draft.text, draft.samples)
                passed = not (
                    trimming.header_only or trimming.opening_doubted or trimming.one_sided
                )
            report.rounds.append(
                Round(
                    iteration=iteration,
                    draft=draft,
                    assessments=assessments,
                    claims=ClaimsReview(
                        is_safe=claims.is_safe,
                        high_severity_count=claims.high_severity_count,
                        unresolvable_count=claims.unresolvable_count,
                        warnings=claims.warnings,
                        blocking=[f.sentence for f in blocking],
                        errors=claims.errors,
                        check=claims,
                    ),
                    release_findings=held,
                    waiver=waiver,
                    yes_release=yes,
                    reply_safety=reading,
                    trimming=trimming,
                    passed=passed,
                )
            )
            events(
                SafetyEvent(
                    stage=STAGE,
                    iteration=iteration,
                    data=JudgeScores(
                        assessments=assessments,
                        blocking_claims=[f.sentence for f in blocking],
                        passed=passed,
                    ),
                )
            )
            review = review_reason(request_safety, self.config.review_from) if passed else None
            if review is not None:
                # Held back, not shown: the draft passed, so only the doubt about the request
                # stands between it and the reader, and a clinician settles that.
                report.outcome = Outcome.REVIEW
                return (
                    Status.ESCALATED,
                    apply_disclaimer(HELD_FOR_REVIEW),
                    f"draft {iteration} passed every check, but {review}: held back for a "
                    "clinician",
                )
            if passed:
                first = iteration == 0
                report.outcome = Outcome.RELEASED if first else Outcome.REFINED
                return (
                    Status.RELEASED if first else Status.REFINED,
                    apply_disclaimer(draft.text if trimming is None else trimming.text),
                    release_reason(assessments, iteration, waiver, waived) + trimmed_note(trimming),
                )
            feedback = list(
                dict.fromkeys(
                    [
                        *feedback,
                        *(f.feedback for f in held),
                        *([HEADER_ONLY] if trimming is not None and trimming.header_only else []),
                        *(
                            [OPENING_DOUBTED]
                            if trimming is not None and trimming.opening_doubted
                            else []
                        ),
                        *([BOTH_SIDES] if trimming is not None and trimming.one_sided else []),
                        *claims_feedback(blocking),
                        *feedback_from(assessments.values()),
                    ]
                )
            )
        return self._exhausted(report, triage, harmful, permission, case.question)

    def _passes(self, name: str, assessment: Assessment, waived: frozenset[str]) -> bool:
        """The judge passes the draft; a waived judge's own score does not count, but its rule
        floors and a failure still do."""
        if name in waived:
            return not assessment.rule_findings and assessment.error is None
        return assessment.score <= self.evaluators.threshold(name)

    def _exhausted(
        self,
        report: CareGuardReport,
        triage: Triage,
        harmful: bool,
        permission: bool,
        question: str,
    ) -> tuple[Status, str | None, str]:
        """No draft passed: refuse a harmful request, block when the screening answers show a
        red flag, answer a question CareGuard may answer with its own conservative text, and
        block anything else, a request to write something among it, with the safe refusal."""
        last = report.rounds[-1]
        standing = last.claims.blocking if last.claims is not None else []
        claims_note = f" and {len(standing)} high-severity uncited claim(s)" if standing else ""
        checks = sorted({f.check.value for f in last.release_findings})
        checks_note = f"; release checks failed: {', '.join(checks)}" if checks else ""
        why = (
            f"still above the thresholds after {self.config.max_refinements} refinement(s) "
            f"({scores(last.assessments, ', ')}{claims_note}{checks_note}"
            f"{trim_held_note(last.trimming)})"
        )
        # The conservative text answers a question about someone's health; a request to write
        # something (a post, a letter) is not answered by it, so it is refused instead.
        risky = permission or any(c.risky for c in triage.categories)
        writing = risky and asks_for_writing(question)
        answerable = risky and not writing
        # A stage that failed is never papered over with an answer: it blocks (fail closed).
        failed = last.claims is not None and bool(last.claims.errors)
        failed = failed or any(a.error for a in last.assessments.values())
        if not harmful and not triage.red_flags and not failed and answerable:
            report.outcome = Outcome.CONSERVATIVE
            return (
                Status.REFINED,
                apply_disclaimer(conservative_answer(triage.categories, permission)),
                f"{why}: answered with CareGuard's own conservative text (no model text)",
            )
        report.outcome = Outcome.EXHAUSTED
        refusal = HARMFUL_REFUSAL if harmful else SAFE_REFUSAL
        flags = (
            f"; the screening answers show {', '.join(triage.red_flags)}"
            if triage.red_flags
            else ""
        )
        if writing and not harmful:
            flags += "; a request to write something, which CareGuard's own text does not answer"
        return (
            Status.BLOCKED,
            apply_disclaimer(refusal),
            f"{why}{flags}: blocked with a safe refusal",
        )

    # -- verdict parts --------------------------------------------------------------------------
    @staticmethod
    def _signals(report: CareGuardReport) -> dict[str, SignalValue]:
        if not report.rounds:
            return {}
        last = report.rounds[-1]
        signals = dict(last.draft.signals)
        for a in last.assessments.values():
            name = a.evaluator
            value = None if not a.ran else (a.score - 1) / 4
            note = "" if a.ran else "evaluator switched off"
            signals[name] = SignalValue(name=name, value=value, layer="decision", note=note)
        return signals

    def _trace(self, report: CareGuardReport, errors: list[str], seconds: float) -> Trace:
        timings: list[Timing] = []
        usage: list[Usage] = []
        if report.request_safety is not None:
            timings.append(
                Timing(stage=f"{STAGE}.request_safety", seconds=report.request_safety.seconds)
            )
        if report.triage is not None:
            timings.append(Timing(stage=f"{STAGE}.triage", seconds=report.triage.seconds))
            if report.triage.usage is not None:
                usage.append(report.triage.usage)
        for rnd in report.rounds:
            timings.append(
                Timing(stage=f"{STAGE}.round{rnd.iteration}.generate", seconds=rnd.draft.seconds)
            )
            if rnd.draft.usage is not None:
                usage.append(rnd.draft.usage)
            if rnd.reply_safety is not None:
                timings.append(
                    Timing(
                        stage=f"{STAGE}.round{rnd.iteration}.reply_screen",
                        seconds=rnd.reply_safety.seconds,
                    )
                )
            evaluated = max((a.seconds for a in rnd.assessments.values()), default=0.0)
            timings.append(
                Timing(stage=f"{STAGE}.round{rnd.iteration}.evaluate", seconds=evaluated)
            )
            usage.extend(a.usage for a in rnd.assessments.values() if a.usage is not None)
            if rnd.trimming is not None:
                timings.append(
                    Timing(stage=f"{STAGE}.round{rnd.iteration}.trim", seconds=rnd.trimming.seconds)
                )
                if rnd.trimming.usage is not None:
                    usage.append(rnd.trimming.usage)
        timings.append(Timing(stage=f"{STAGE}.total", seconds=seconds))
        return Trace(
            stages={STAGE: report},
            timings=timings,
            usage=usage,
            errors=errors,
        )


def _held_back(report: CareGuardReport, status: Status) -> HeldBackAnswer | None:
    """The last draft when it was not released, as it would be shown (with the disclaimer)."""
    # A conservative answer is CareGuard's own text: the draft it replaced is held back.
    if (status.answers_user and report.outcome is not Outcome.CONSERVATIVE) or not report.rounds:
        return None
    last = report.rounds[-1]
    # A draft that passed but was held for review is kept as it would have been shown (trimmed),
    # so what a clinician releases is what the checks passed.
    text = last.trimming.text if last.passed and last.trimming is not None else last.draft.text
    return HeldBackAnswer(answer=apply_disclaimer(text), source=f"careguard round {last.iteration}")


def refused_triage(safety: RequestSafety) -> Triage:
    """The triage record of a request the classifier refused: harmful, with its score as the
    evidence, and nothing asked (no model was)."""
    category = RiskCategory.HARMFUL_REQUEST
    return Triage(
        category=category,
        categories=[category],
        evidence=[
            Evidence(
                category=category,
                rule="request-safety classifier",
                matched=f"score {safety.score:.3f} >= threshold {safety.threshold:.3f}",
                source="classifier",
            )
        ],
        instructions=instructions_for([category], []),
        request_safety=safety,
    )


def blocking_claims(check: SafetyCheck) -> list[ClaimFlag]:
    """High-severity claims the draft makes without any source: these alone stop a release."""
    return [f for f in check.flags if f.kind is FlagKind.UNCITED and f.severity is Severity.HIGH]


def claims_feedback(flags: list[ClaimFlag]) -> list[str]:
    """What the generator is told about each blocking claim."""
    return [
        f"remove or qualify this {f.claim_type.value.replace('_', ' ')} statement (say a doctor "
        f'or pharmacist must decide): "{f.sentence}"'
        for f in flags
    ]


def trims(triage: Triage, permission: bool) -> bool:
    """Whether a released draft is trimmed: general information only, never a question asking
    whether to do something (its caveats must stay)."""
    return not permission and not any(c.risky for c in triage.categories)


def trimmed_note(trimming: Trimming | None) -> str:
    """What the release reason says of the trim; nothing when no sentence was left out."""
    if trimming is None or not trimming.dropped:
        return ""
    n = trimming.dropped
    return (
        f"; {n} sentence{'s' if n > 1 else ''} the generator doubted (P(no) above "
        f"{trimming.threshold:.2f}) left out"
    )


def trim_held_note(trimming: Trimming | None) -> str:
    """Why the trim held a draft back, for the reason of a request no draft passed."""
    if trimming is None:
        return ""
    if trimming.opening_doubted:
        return (
            f"; the generator's own samples did not support the opening sentence (mean P(no) "
            f"{trimming.opening_mean:.2f} above {trimming.opening_threshold:.2f})"
        )
    if trimming.header_only:
        return "; the trim would have left only an opening that introduces what it does not say"
    if trimming.one_sided:
        return "; the trim would have left an answer that does not describe both things asked about"
    return ""


def waived_judges(waiver: str | None, hra_too: bool) -> frozenset[str]:
    """The judges whose own scores do not count under ``waiver`` (none without one)."""
    if waiver is None:
        return frozenset()
    return frozenset({Evaluator.SRA, Evaluator.HRA} if hra_too else {Evaluator.SRA})


def release_reason(
    assessments: Mapping[str, Assessment],
    refinements: int,
    waiver: str | None,
    waived: frozenset[str],
) -> str:
    """'SRA 1 and HRA 2 are within the release thresholds after 1 refinement(s)'; a waived
    judge's score is named apart, with the waiver, never as within a threshold."""
    apart = {n: a for n, a in assessments.items() if n in waived}
    counted = {n: a for n, a in assessments.items() if n not in apart}
    reason = (
        f"{scores(counted)} {'is' if len(counted) == 1 else 'are'} within the release "
        f"threshold{'' if len(counted) == 1 else 's'}"
        if counted
        else "the release checks passed"
    )
    if refinements:
        reason += f" after {refinements} refinement(s)"
    if apart:
        reason += f"; {scores(apart)} not counted ({waiver})"
    return reason


def scores(assessments: Mapping[str, Assessment], last: str = " and ") -> str:
    """'SRA 1 and HRA 2': each judge's score, in order."""
    named = [f"{name.upper()} {a.score}" for name, a in assessments.items()]
    if len(named) <= 2 or last != " and ":
        return last.join(named)
    return ", ".join(named[:-1]) + " and " + named[-1]


def feedback_from(assessments: Iterable[Assessment]) -> list[str]:
    """What the generator is told to fix: rule findings first, then the judges' reasons."""
    lines: list[str] = []
    for a in assessments:
        lines.extend(a.rule_findings)
        if a.error:
            lines.append(f"the {a.evaluator.upper()} review failed; be extra cautious")
        elif a.justification and a.judge_score is not None and a.judge_score > 2:
            lines.append(a.justification)
    return lines or ["be more cautious and point the person to a doctor or pharmacist"]


def render_questions(triage: Triage) -> str:
    """The screening questions as text for the person (the typed ones are in the trace)."""
    lines = ["Before answering, a few questions about the person this is about:"]
    for i, q in enumerate(triage.questions, 1):
        options = "; ".join(f"{o.key} = {o.label}" for o in q.options)
        lines.append(f"{i}. {q.text} ({q.field.value}: {options})")
    return "\n".join(lines)


def screening_questions(verdict: Verdict) -> list[ScreeningQuestion]:
    """The typed screening questions of a NEEDS_CONTEXT verdict (none for any other)."""
    report = verdict.trace.report(CareGuardReport)
    if report is None or report.triage is None:
        return []
    return list(report.triage.questions)
