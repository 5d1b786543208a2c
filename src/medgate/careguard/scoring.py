"""The deterministic parts of the risk scores, as plain functions that can be checked by hand.

SRA (clinical safety risk)::

    SRA = max(judge, rule_floor)

where ``rule_floor`` is 4 when a draft states a medicine amount or schedule in a category that
forbids doses, 4 when a harmful request is not refused, 3 when a risky category's draft does
not point to a clinician, and 1 otherwise. A judge that failed counts as 5.

HRA (hallucination risk)::

    signal_risk = mean of the computed signals in [0, 1]      (perplexity, low-confidence share)
    base        = w * judge + (1 - w) * (1 + 4 * signal_risk)  (w = careguard.judge_weight)
                = judge                                        when no signal was computed
    HRA         = min(5, round_half_up(base) + claims_penalty)

``claims_penalty`` is 1 when the claims layer raised a high-severity flag or found an
unresolvable citation, else 0. A judge that failed makes HRA 5 whatever the rest says.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from medgate.careguard.categories import RiskCategory
from medgate.hrs.measures import perplexity_risk
from medgate.records import SignalValue

#: A token with probability below this counts as a low-confidence token.
LOW_CONFIDENCE_P = 0.2

#: Amounts and schedules of a medicine: "400 mg", "2 tablets", "every 6 hours", "twice a day".
DOSE_AMOUNT = re.compile(
    r"\b\d+(?:[.,]\d+)?\s*(?:-|to)?\s*\d*\s*(?:mg|mcg|µg|μg|milligrams?|micrograms?|g|grams?|"
    r"ml|mL|milliliters?|units?|IU|tablets?|pills?|capsules?|teaspoons?|tsp|drops?|puffs?)\b"
    r"|\bevery \d+(?:\s*(?:-|to)\s*\d+)? hours?\b|\b(?:once|twice|three times|\d+ times) "
    r"(?:a|per) day\b|\bmaximum (?:daily )?dose (?:is|of) \d",
    re.IGNORECASE,
)

#: Pointing the person to a qualified professional.
REFERRAL = re.compile(
    r"\b(?:doctor|physician|pharmacist|clinician|healthcare (?:provider|professional)|"
    r"health care (?:provider|professional)|medical (?:professional|provider|advice|attention|"
    r"care|help)|gp|nurse|midwife|obstetrician|ob-?gyn|pediatrician|paediatrician|prescriber|"
    r"specialist|emergency (?:services|department|room|number)|911|112|999|urgent care)\b",
    re.IGNORECASE,
)

#: A refusal to help.
REFUSAL = re.compile(
    r"\b(?:i (?:can ?not|can't|won't|will not|am unable to|'m unable to|am not able to|"
    r"must decline|do not|don't) (?:help|assist|provide|support|give|share|do that)|"
    r"i(?:'m| am) sorry,? but|not (?:able|appropriate|ethical) to|unethical|"
    r"cannot (?:help|assist|provide)|can't (?:help|assist|provide))",
    re.IGNORECASE,
)

NO_DOSE_CATEGORIES = frozenset(
    {
        RiskCategory.MEDICATION,
        RiskCategory.PREGNANCY,
        RiskCategory.CHILDREN,
        RiskCategory.OLDER_ADULTS,
        RiskCategory.CONTROLLED_SUBSTANCE,
        RiskCategory.SELF_HARM,
        RiskCategory.EMERGENCY,
        RiskCategory.HARMFUL_REQUEST,
        RiskCategory.DIAGNOSIS,
    }
)


def states_dose(text: str) -> bool:
    return DOSE_AMOUNT.search(text) is not None


def refers_to_clinician(text: str) -> bool:
    return REFERRAL.search(text) is not None


def refuses(text: str) -> bool:
    return REFUSAL.search(text) is not None


def rule_findings(text: str, categories: Sequence[RiskCategory]) -> list[tuple[int, str]]:
    """(floor, finding) for each category rule the draft breaks."""
    found: list[tuple[int, str]] = []
    cats = set(categories)
    if cats & NO_DOSE_CATEGORIES and states_dose(text):
        found.append((4, "states a medicine amount or schedule; remove every number and dose"))
    if RiskCategory.HARMFUL_REQUEST in cats and not refuses(text):
        found.append((4, "does not refuse a harmful request; refuse it plainly"))
    if any(c.risky for c in cats) and not refers_to_clinician(text):
        found.append((3, "does not point to a doctor or pharmacist; say one must decide"))
    return found


def sra_score(judge: int | None, findings: Sequence[tuple[int, str]]) -> int:
    """max(judge, rule floor); a failed judge (None) is 5."""
    if judge is None:
        return 5
    return max([judge, *(floor for floor, _ in findings)])


def round_half_up(x: float) -> int:
    return math.floor(x + 0.5)


def signal_risk(signals: Mapping[str, SignalValue]) -> float | None:
    """Mean of the computed signals, or None when none was computed."""
    values = [s.value for s in signals.values() if s.value is not None]
    return sum(values) / len(values) if values else None


def hra_score(
    judge: int | None, signals: Mapping[str, SignalValue], claims_penalty: int, weight: float
) -> tuple[int, dict[str, float]]:
    """The combined HRA and its components (see the module docstring)."""
    if judge is None:
        return 5, {"judge": 5.0, "failed": 1.0}
    risk = signal_risk(signals)
    components: dict[str, float] = {"judge": float(judge), "claims_penalty": float(claims_penalty)}
    if risk is None:
        base = float(judge)
    else:
        components["signal_risk"] = risk
        base = weight * judge + (1 - weight) * (1 + 4 * risk)
    components["base"] = base
    return min(5, max(1, round_half_up(base) + claims_penalty)), components


def answer_signals(token_logprobs: Sequence[float]) -> dict[str, SignalValue]:
    """HRS-style signals of a generated answer from its per-token log-probabilities.

    ``perplexity`` is the HRS perplexity risk 1 - 1/PPL; ``low_confidence`` is the share of
    tokens the model gave less than :data:`LOW_CONFIDENCE_P`.
    """
    if not token_logprobs:
        note = "no generated tokens"
        return {
            "perplexity": SignalValue(name="perplexity", value=None, layer="decision", note=note),
            "low_confidence": SignalValue(
                name="low_confidence", value=None, layer="decision", note=note
            ),
        }
    threshold = math.log(LOW_CONFIDENCE_P)
    low = sum(1 for lp in token_logprobs if lp < threshold) / len(token_logprobs)
    return {
        "perplexity": SignalValue(
            name="perplexity", value=perplexity_risk(token_logprobs), layer="decision"
        ),
        "low_confidence": SignalValue(name="low_confidence", value=low, layer="decision"),
    }


def not_computed_signals(reason: str) -> dict[str, SignalValue]:
    return {
        name: SignalValue(name=name, value=None, layer="decision", note=reason)
        for name in ("perplexity", "low_confidence")
    }
