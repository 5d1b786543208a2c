"""Choosing the gate's thresholds on the training split.

Two choices over the same family, the baseline gate with the paper's threshold shape:
(a) the paper's grid (its three Table 2 settings used as the gate, as in its Algorithm 1) picked
by the empirical training error; (b) conformal risk control in the Learn-then-Test form: for each
candidate lambda on a path (gate_e, gate_p) = lambda * (0.5, 0.4), test H0 "error among released
answers > alpha" with the exact binomial tail, Bonferroni over the path, and take the candidate
releasing the most training answers among those rejected at level delta. With probability
1 - delta over the training draw, the chosen setting's error among released answers is at most
alpha (exchangeable train and test items). If no candidate is certified, nothing is released.

The guarantee covers answers released at the baseline gate; the artifact sets the refinement
thresholds to the same values, so a refined answer must be at least as confident, but refined
answers are not part of the certified error.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from medgate.hrs.calibration import CalibrationArtifact as CalibrationArtifact
from medgate.hrs.calibration import Choice as Choice
from medgate.hrs.calibration import apply_artifact as apply_artifact
from medgate.hrs.calibration import artifact_origin as artifact_origin
from medgate.hrs.calibration import calibration_path as calibration_path
from medgate.hrs.calibration import load_artifact as load_artifact
from medgate.hrs.calibration import save_artifact as save_artifact
from medgate.records import Record

SHAPE = (0.5, 0.4)
PATH = tuple(round(0.1 * i, 2) for i in range(1, 26))  # lambda = 0.1 .. 2.5


class Scored(Record):
    """One training item's baseline signals and whether its baseline answer was right."""

    entropy: float
    perplexity: float
    correct: bool


def released(s: Scored, gate_e: float, gate_p: float) -> bool:
    return s.entropy < gate_e and s.perplexity < gate_p


def evaluate(scored: Sequence[Scored], gate_e: float, gate_p: float) -> tuple[int, int]:
    """(released, errors among released)."""
    rel = [s for s in scored if released(s, gate_e, gate_p)]
    return len(rel), sum(1 for s in rel if not s.correct)


def binom_p_value(errors: int, n: int, alpha: float) -> float:
    """P(Binomial(n, alpha) <= errors): small when the true error rate is below alpha."""
    from scipy.stats import binom

    if n == 0:
        return 1.0
    return float(binom.cdf(errors, n, alpha))


def gate_at(lam: float) -> tuple[float, float]:
    return min(1.0, lam * SHAPE[0]), min(1.0, lam * SHAPE[1])


def choose_grid(
    scored: Sequence[Scored], alpha: float, grid: Sequence[tuple[float, float]]
) -> Choice:
    """(a) The paper's grid: most releases with empirical error <= alpha, else the strictest."""
    best: Choice | None = None
    for e, p in grid:
        n_rel, err = evaluate(scored, e, p)
        rate = err / n_rel if n_rel else None
        c = Choice(
            method="paper-grid",
            gate_e=e,
            gate_p=p,
            n=len(scored),
            released=n_rel,
            errors=err,
            error_rate=rate,
        )
        if rate is not None and rate <= alpha and (best is None or n_rel > best.released):
            best = c
    if best is None:
        e, p = min(grid, key=lambda g: evaluate(scored, *g)[0])
        n_rel, err = evaluate(scored, e, p)
        best = Choice(
            method="paper-grid (none met alpha: strictest)",
            gate_e=e,
            gate_p=p,
            n=len(scored),
            released=n_rel,
            errors=err,
            error_rate=err / n_rel if n_rel else None,
        )
    return best


def choose_conformal(
    scored: Sequence[Scored], alpha: float, delta: float, path: Sequence[float] = PATH
) -> Choice:
    """(b) Learn-then-Test with Bonferroni over ``path``; nothing released if none certified."""
    level = delta / len(path)
    best: Choice | None = None
    for lam in path:
        e, p = gate_at(lam)
        n_rel, err = evaluate(scored, e, p)
        pv = binom_p_value(err, n_rel, alpha)
        if pv <= level and (best is None or n_rel > best.released):
            best = Choice(
                method="conformal (LTT, Bonferroni)",
                gate_e=e,
                gate_p=p,
                lam=lam,
                n=len(scored),
                released=n_rel,
                errors=err,
                error_rate=err / n_rel if n_rel else None,
                p_value=pv,
            )
    if best is None:
        return Choice(
            method="conformal (none certified: escalate all)",
            gate_e=0.0,
            gate_p=0.0,
            lam=0.0,
            n=len(scored),
            released=0,
            errors=0,
            error_rate=None,
        )
    return best


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
