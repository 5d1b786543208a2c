"""The features a risk model reads from a recorded trajectory, by name.

A feature is a number computed from the rounds the gate recorded, or ``None`` when the run does
not hold what it needs (a signal that was not computed, a backend that cannot read the opening
token, a case that came without evidence). ``None`` is never replaced by a guess here: the risk
rule escalates an answer whose features are incomplete (:mod:`medgate.hrs.risk`).

The feature sets in :data:`FEATURE_SETS` are these (``+rarity`` adds rarity, and
``+cross_model`` a second model's answer, :data:`PEER_FEATURES`):

* ``baseline`` reads the first answer only: one probe per question, whatever supplies
  knowledge afterwards, so it is deployable with any orchestrator.
* ``rounds`` adds how the answer and each signal moved over the knowledge rounds. Those rounds
  depend on the knowledge source, so a model fitted on rounds with one source says nothing about
  rounds with another; the risk artifact records the source its round features assume.
* ``answer_slot+evidence`` reads only the answer slot's label distribution and the cues of the
  case's evidence: what an answerer gives that reports its answer's probabilities and nothing
  more (a second model's greedy answer, say), so two answerers can be compared on it.
* ``evidence`` adds the negation cues of the case's evidence and of the first reasoning, each
  also crossed with the predicted label ("yes" against evidence that reports no effect is the
  contradiction a logistic model cannot form from the two apart), :mod:`medgate.hrs.evidence`.
  Still one probe per question.

The label distribution is laid out over yes / no / maybe whatever the case's labels are (a
label a case does not allow has probability 0), so that one model reads PubMedQA's three labels
and BioASQ's two.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from medgate.hrs.decision import Iteration, Trajectory
from medgate.hrs.evidence import NO_EFFECT, EvidenceCues, rate

#: The label layout of the distribution features.
LABELS = ("yes", "no", "maybe")

#: The signals whose value and change across rounds are features (rarity is separate: it needs
#: a centroid fitted on the deployment's own questions, see ``RARITY``).
ROUND_SIGNALS = ("entropy", "perplexity", "ambiguity", "token_length")

RARITY = "rarity"
#: Whether a second model answered otherwise (the cross_model signal, with hrs.peer_model).
CROSS_MODEL = "cross_model"
#: The features that read a second model's answer.
PEER_FEATURES = (CROSS_MODEL, "peer_answer_prob")

Feature = Callable[[Trajectory, int], float | None]
"""A feature of a trajectory, reading its baseline and at most the given number of rounds."""


def _base(traj: Trajectory) -> Iteration:
    return traj.iterations[0]


def _rounds(traj: Trajectory, k: int) -> list[Iteration]:
    return traj.iterations[1 : k + 1]


def _signal(name: str) -> Feature:
    return lambda traj, k: _base(traj).value(name)


def _prob(label: str) -> Feature:
    return lambda traj, k: _base(traj).run.distribution.get(label, 0.0)


def _predicted(label: str) -> Feature:
    return lambda traj, k: float(_base(traj).answer == label)


def _opening(label: str) -> Feature:
    def read(traj: Trajectory, k: int) -> float | None:
        dist = _base(traj).run.opening_distribution
        return None if dist is None else dist.get(label, 0.0)

    return read


def top_margin(traj: Trajectory, k: int) -> float | None:
    """Probability of the answer minus that of the runner-up label."""
    probs = sorted(_base(traj).run.distribution.values(), reverse=True)
    if not probs:
        return None
    return probs[0] - (probs[1] if len(probs) > 1 else 0.0)


def three_labels(traj: Trajectory, k: int) -> float:
    """1 when the case allows 'maybe' (the distribution is over three labels)."""
    return float(len(_base(traj).run.distribution) >= 3)


def label_mass(traj: Trajectory, k: int) -> float | None:
    return _base(traj).run.label_mass


def sample_agreement(traj: Trajectory, k: int) -> float | None:
    """Share of the ambiguity samples whose answer is the greedy answer."""
    run = _base(traj).run
    if not run.sample_answers:
        return None
    return sum(a == run.answer for a in run.sample_answers) / len(run.sample_answers)


def sample_answer_prob(traj: Trajectory, k: int) -> float | None:
    """Mean probability the samples gave the greedy answer."""
    run = _base(traj).run
    if not run.sample_distributions:
        return None
    return sum(d.get(run.answer, 0.0) for d in run.sample_distributions) / len(
        run.sample_distributions
    )


def mean_logprob(traj: Trajectory, k: int) -> float | None:
    lps = _base(traj).run.reasoning_logprobs
    return sum(lps) / len(lps) if lps else None


def min_logprob(traj: Trajectory, k: int) -> float | None:
    lps = _base(traj).run.reasoning_logprobs
    return min(lps) if lps else None


def opening_label_mass(traj: Trajectory, k: int) -> float | None:
    return _base(traj).run.opening_label_mass


def opening_agrees(traj: Trajectory, k: int) -> float | None:
    """1 when the label most probable at the first reasoning token is the final answer."""
    base = _base(traj)
    dist = base.run.opening_distribution
    if not dist:
        return None
    return float(max(dist, key=lambda label: dist[label]) == base.answer)


def opening_answer_prob(traj: Trajectory, k: int) -> float | None:
    """Probability the first reasoning token gave the final answer's label."""
    base = _base(traj)
    dist = base.run.opening_distribution
    return None if dist is None else dist.get(base.answer, 0.0)


def cross_model(traj: Trajectory, k: int) -> float | None:
    """1 when the second model's label differs from the first answer (the cross_model
    signal, read from the run so that it needs no signal configured)."""
    run = _base(traj).run
    return None if run.peer_answer is None else float(run.peer_answer != run.answer)


def peer_answer_prob(traj: Trajectory, k: int) -> float | None:
    """Probability the second model gave the first answer's label."""
    run = _base(traj).run
    return None if run.peer_distribution is None else run.peer_distribution.get(run.answer, 0.0)


def rounds_run(traj: Trajectory, k: int) -> float:
    """Knowledge rounds the trajectory holds (up to k); fewer when the source ran dry."""
    return float(len(_rounds(traj, k)))


def answer_changed_any(traj: Trajectory, k: int) -> float:
    base = _base(traj).answer
    return float(any(it.answer != base for it in _rounds(traj, k)))


def answer_changed_last(traj: Trajectory, k: int) -> float:
    rounds = _rounds(traj, k)
    return float(bool(rounds) and rounds[-1].answer != _base(traj).answer)


def _delta(read: Callable[[Iteration], float | None]) -> Feature:
    """The last round's value minus the baseline's; 0 without rounds (nothing moved)."""

    def delta(traj: Trajectory, k: int) -> float | None:
        rounds = _rounds(traj, k)
        before = read(_base(traj))
        if not rounds:
            return None if before is None else 0.0
        after = read(rounds[-1])
        return None if before is None or after is None else after - before

    return delta


def _reader(signal: str) -> Callable[[Iteration], float | None]:
    return lambda it: it.value(signal)


def _answer_support(base: Iteration) -> Callable[[Iteration], float | None]:
    return lambda it: it.run.distribution.get(base.answer, 0.0)


def answer_support_change(traj: Trajectory, k: int) -> float | None:
    """How much probability the baseline's answer gained (or lost) by the last round."""
    return _delta(_answer_support(_base(traj)))(traj, k)


def _evidence(read: Callable[[EvidenceCues], float]) -> Feature:
    return lambda traj, k: None if traj.evidence is None else read(traj.evidence)


def reasoning_no_effect(traj: Trajectory, k: int) -> float:
    """Phrases stating an absent effect per 100 words of the first reasoning."""
    return rate(NO_EFFECT, _base(traj).run.reasoning)


EVIDENCE_CUES: dict[str, Feature] = {
    "evidence_negation": _evidence(lambda cues: cues.negation),
    "evidence_no_effect": _evidence(lambda cues: cues.no_effect),
    "reasoning_no_effect": reasoning_no_effect,
}


def _against(label: str, cue: Feature) -> Feature:
    """The cue where the first answer is ``label``, else 0."""

    def read(traj: Trajectory, k: int) -> float | None:
        value = cue(traj, k)
        return None if value is None else value * float(_base(traj).answer == label)

    return read


FEATURES: dict[str, Feature] = {
    **{name: _signal(name) for name in ROUND_SIGNALS},
    RARITY: _signal(RARITY),
    CROSS_MODEL: cross_model,
    "peer_answer_prob": peer_answer_prob,
    **{f"p_{label}": _prob(label) for label in LABELS},
    "top_margin": top_margin,
    "label_mass": label_mass,
    **{f"pred_{label}": _predicted(label) for label in LABELS},
    "three_labels": three_labels,
    "sample_agreement": sample_agreement,
    "sample_answer_prob": sample_answer_prob,
    "mean_logprob": mean_logprob,
    "min_logprob": min_logprob,
    **{f"open_{label}": _opening(label) for label in LABELS},
    "opening_label_mass": opening_label_mass,
    "opening_agrees": opening_agrees,
    "opening_answer_prob": opening_answer_prob,
    "rounds_run": rounds_run,
    "answer_changed_any": answer_changed_any,
    "answer_changed_last": answer_changed_last,
    **{f"d_{name}": _delta(_reader(name)) for name in ROUND_SIGNALS},
    "d_label_mass": _delta(lambda it: it.run.label_mass),
    "d_answer_prob": answer_support_change,
    **EVIDENCE_CUES,
    **{
        f"{label}_x_{name}": _against(label, cue)
        for name, cue in EVIDENCE_CUES.items()
        for label in ("yes", "no")
    },
}
"""Every feature by name."""

BASELINE = [
    *ROUND_SIGNALS,
    *(f"p_{label}" for label in LABELS),
    "top_margin",
    "label_mass",
    *(f"pred_{label}" for label in LABELS),
    "three_labels",
    "sample_agreement",
    "sample_answer_prob",
    "mean_logprob",
    "min_logprob",
    *(f"open_{label}" for label in LABELS),
    "opening_label_mass",
    "opening_agrees",
    "opening_answer_prob",
]
ROUNDS = [
    *BASELINE,
    "rounds_run",
    "answer_changed_any",
    "answer_changed_last",
    *(f"d_{name}" for name in ROUND_SIGNALS),
    "d_label_mass",
    "d_answer_prob",
]

EVIDENCE = [
    *EVIDENCE_CUES,
    *(f"{label}_x_{name}" for name in EVIDENCE_CUES for label in ("yes", "no")),
]

ANSWER_SLOT = [
    "entropy",
    *(f"p_{label}" for label in LABELS),
    "top_margin",
    *(f"pred_{label}" for label in LABELS),
    "three_labels",
]
"""What the label distribution at the answer slot alone gives: any answerer that reports its
answer's probabilities has these, without reasoning log-probabilities or samples."""

CASE_EVIDENCE = [
    "evidence_negation",
    "evidence_no_effect",
    *(f"{label}_x_evidence_{cue}" for cue in ("negation", "no_effect") for label in ("yes", "no")),
]
"""The cues of the case's evidence (not of the model's reasoning), crossed with the answer."""

FEATURE_SETS: dict[str, list[str]] = {
    "baseline": BASELINE,
    "answer_slot+evidence": [*ANSWER_SLOT, *CASE_EVIDENCE],
    "evidence": [*BASELINE, *EVIDENCE],
    "baseline+rarity": [*BASELINE, RARITY],
    "rounds": ROUNDS,
    "rounds+rarity": [*ROUNDS, RARITY],
    "baseline+cross_model": [*BASELINE, CROSS_MODEL],
    "evidence+cross_model": [*BASELINE, *EVIDENCE, *PEER_FEATURES],
}
"""The named feature sets a risk model can be fitted on."""


def needs_rounds(names: Sequence[str]) -> bool:
    """Whether any of the features reads the knowledge rounds."""
    first_probe = (*BASELINE, *EVIDENCE, RARITY, *PEER_FEATURES)
    return any(n not in first_probe for n in names)


def reads_peer(names: Sequence[str]) -> bool:
    """Whether any of the features reads a second model's answer (``hrs.peer_model``)."""
    return any(n in PEER_FEATURES for n in names)


def compute(traj: Trajectory, names: Sequence[str], k: int) -> dict[str, float | None]:
    """The named features of ``traj`` reading at most ``k`` rounds; every value ``None`` when
    the trajectory has no answer. An unknown name is a ``KeyError``."""
    if not traj.iterations:
        return dict.fromkeys(names)
    out: dict[str, float | None] = {}
    for name in names:
        value = FEATURES[name](traj, k)
        out[name] = None if value is None or not math.isfinite(value) else float(value)
    return out
