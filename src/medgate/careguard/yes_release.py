"""When a "yes" may be released to a patient asking whether to do something.

An endorsement ("Yes, you can ...", "... is safe") of what a person asks about is released only
when three independent readings agree that it is safe:

1. the answering model's own stance is a confident yes (:mod:`medgate.careguard.stance`);
2. the request-safety classifier scores the request below its threshold;
3. the SRA judge passes the draft (its own score, not only the rule floor).

and the triage found no risky category (a medicine, pregnancy, a child, an older adult, a
controlled substance, a diagnosis): there only the person's clinician can say yes. A reading
that is missing (no white-box model, no request-safety classifier, a judge that failed) counts
as not agreeing, so without all three no endorsement is ever released.

The request-safety record is read in one place, :func:`request_safety_of`: the classifier puts
a record with ``score``, ``threshold``, ``harmful`` and ``artifact`` on the triage as
``request_safety``, and anything without that shape counts as not available.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from medgate.careguard.records import Assessment, Triage, YesRelease
from medgate.careguard.stance import Lean, Stance


@runtime_checkable
class RequestSafetyView(Protocol):
    """What the yes-release rule reads of the request-safety classifier's record."""

    @property
    def score(self) -> float: ...

    @property
    def threshold(self) -> float: ...

    @property
    def harmful(self) -> bool: ...

    @property
    def artifact(self) -> str: ...


def request_safety_of(triage: object) -> RequestSafetyView | None:
    """The request-safety classifier's record of this request (``triage.request_safety``), or
    None when there is none or it does not have the shape above."""
    value = getattr(triage, "request_safety", None)
    return value if isinstance(value, RequestSafetyView) else None


def marked_harmful(request_safety: RequestSafetyView | None) -> bool:
    """The classifier scores the request harmful (not available: not marked)."""
    return request_safety is not None and (
        request_safety.harmful or request_safety.score >= request_safety.threshold
    )


def decide_yes_release(
    stance: Stance | None,
    request_safety: RequestSafetyView | None,
    sra: Assessment | None,
    sra_threshold: int,
    triage: Triage,
) -> YesRelease:
    """The rule in the module docstring, with every vote and its reason."""
    votes: dict[str, bool] = {}
    reasons: list[str] = []

    if stance is None or stance.lean is Lean.NOT_READ:
        votes["stance"] = False
        why = stance.error if stance is not None and stance.error else "not read"
        reasons.append(f"the model's stance was not read ({why})")
    else:
        votes["stance"] = stance.lean is Lean.CONFIDENT_YES
        reasons.append(
            f"the model's stance is {stance.lean.value} (p_yes {stance.p_yes:.2f}, "
            f"entropy {stance.entropy if stance.entropy is None else round(stance.entropy, 2)})"
        )

    if request_safety is None:
        votes["request_safety"] = False
        reasons.append("no request-safety score is available")
    else:
        votes["request_safety"] = not marked_harmful(request_safety)
        reasons.append(
            f"request-safety score {request_safety.score:.3f} against threshold "
            f"{request_safety.threshold:.3f} ({request_safety.artifact})"
        )

    if sra is None or not sra.ran or sra.judge_score is None or sra.error:
        votes["sra"] = False
        reasons.append("the SRA judge gave no score")
    else:
        votes["sra"] = sra.score <= sra_threshold
        reasons.append(f"SRA {sra.score} (judge {sra.judge_score}) against {sra_threshold}")

    risky = [c.value for c in triage.categories if c.risky]
    votes["no_risky_category"] = not risky
    reasons.append(
        f"risky categories {', '.join(risky)}: only a clinician can say yes"
        if risky
        else "no risky category"
    )
    return YesRelease(granted=all(votes.values()), votes=votes, reasons=reasons)


def sra_judge_waiver(
    triage: Triage,
    request_safety: RequestSafetyView | None,
    asks_permission: bool,
    below: float,
    *,
    hra_too: bool = False,
) -> str | None:
    """Why the SRA model judge's own score (with ``hra_too``, the HRA judge's as well) may not
    hold back this draft, or None.

    For a general question (no risky category, not asking whether to do something) that the
    request-safety classifier scores well below harmful (under ``below``), the 0.5B judge's
    score is noise: the same kind of plain answer gets 1 in one round and 4 in the next
    (docs/results/careguard.md), and its 3s and 4s were what blocked plain general questions.
    There the judge's score alone does not block; its rule floors, a failed judge, HRA, the
    claims layer and the release checks still do. A request scored benign but near the screen's
    threshold keeps the judge: harmful requests worded as innocent questions score there
    (docs/results/careguard_runs_v22/NOTES.md). Without a request-safety score there is no waiver.

    The HRA judge is waived on the same terms only when the caller says so (``hra_too``), which
    the gate does only when the trim reads the draft's opening against the generator's own
    samples: that reading, not the judge, then stands between a wrong answer and the reader.
    """
    if asks_permission or any(c.risky for c in triage.categories):
        return None
    if request_safety is None or marked_harmful(request_safety):
        return None
    if request_safety.score >= below:
        return None
    judges = (
        "the SRA and HRA judges' scores alone do not"
        if hra_too
        else "the SRA judge's score alone does not"
    )
    return (
        f"general question scored benign by request safety ({request_safety.score:.3f} < "
        f"{below:.3f}, threshold {request_safety.threshold:.3f}): {judges} block"
    )


def review_reason(
    request_safety: RequestSafetyView | None, review_from: float | None
) -> str | None:
    """Why a draft that passed every check is held for a clinician instead of shown, or None.

    The request screen refuses at its threshold; a score at or above ``review_from`` and below
    it means the screen is unsure. Harmful requests worded as innocent questions score there,
    and a draft answering their innocent half passes the judges (hq5-24, eye drops in a
    coworker's coffee; docs/results/careguard_runs_v25/NOTES.md), so only a clinician should
    let such an answer through. Without a request-safety score there is nothing to be unsure
    of; a request marked harmful never reaches a draft.
    """
    if review_from is None or request_safety is None or marked_harmful(request_safety):
        return None
    if request_safety.score < review_from:
        return None
    return (
        f"the request screen is unsure of the request ({request_safety.score:.3f}: at or above "
        f"{review_from:.3f}, below its threshold {request_safety.threshold:.3f})"
    )
