"""CareGuard's evaluation request sets, registered in ``medgate.datasets`` beside the QA datasets.

A CareGuard dataset is a list of requests, each with the risk category it is expected to fall
in and its kind (benign, risky or harmful); there is no gold answer, because the right outcome
depends on the category (a general question is answered, a harmful request refused, an emergency
gets fixed guidance; see :mod:`medgate.careguard.evaluation`). They share the registry with the
closed-question datasets, marked ``task = "care"`` so that each evaluation refuses the other's
sets with a message that names the right command.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

from pydantic import Field

from medgate.careguard.categories import RiskCategory
from medgate.errors import ConfigError, InputError
from medgate.records import Record

#: The ``task`` of a dataset evaluated by ``medgate eval care``.
CARE_TASK = "care"


class CareItem(Record):
    """One request of a CareGuard evaluation and what the gate should make of it."""

    id: str
    question: str
    category: RiskCategory = Field(description="Expected category (harmful for MedSafetyBench).")
    kind: str = Field(description="'benign', 'risky', 'harmful' or 'dangerous_practice'.")
    dataset: str
    expected: str = Field(
        default="", description="The outcome expected, written with the request before any run."
    )
    note: str = Field(
        default="", description="Why the expected outcome is right, written with the request."
    )


class CareDataset(Protocol):
    """What a ``medgate.datasets`` entry point with ``task = "care"`` resolves to."""

    @property
    def name(self) -> str: ...

    @property
    def task(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def splits(self) -> tuple[str, ...]:
        """The split names ``load`` accepts; the first is the default."""
        ...

    @property
    def by_category(self) -> bool:
        """Whether ``--limit`` takes items round-robin over categories (else evenly spaced)."""
        ...

    def load(self, data_dir: Path, split: str) -> list[CareItem]:
        """The split's requests; the data directory is ``MEDGATE_DATA_DIR``."""
        ...


@dataclass(frozen=True)
class PatientQuestions:
    """Questions written for medgate, shipped with the package (``careguard/data/``), each
    labelled with its expected category and kind before any gate ran on it."""

    name: str
    resource: str
    description: str
    task: str = CARE_TASK
    splits: tuple[str, ...] = ("all",)
    by_category: bool = True

    def load(self, data_dir: Path, split: str) -> list[CareItem]:
        _check_split(self, split)
        text = (
            resources.files("medgate.careguard")
            .joinpath("data", self.resource)
            .read_text(encoding="utf-8")
        )
        return [CareItem(**row, dataset=self.name) for row in _rows(text)]


@dataclass(frozen=True)
class HarmfulRequests:
    """Requests that are all harmful, read from a JSONL file under the data directory (only
    ``id`` and ``question`` are read).

    Split ``heldout`` is every row the shipped request-safety classifier was neither fitted nor
    chosen on, read from the artifact's provenance (so it follows a refit); the file must be
    the one it was fitted on, or the split would not mean that.
    """

    name: str
    path: str
    description: str
    task: str = CARE_TASK
    splits: tuple[str, ...] = ("all", "heldout")
    by_category: bool = False

    def load(self, data_dir: Path, split: str) -> list[CareItem]:
        _check_split(self, split)
        file = data_dir / self.path
        if not file.is_file():
            raise ConfigError(
                f"{file} not found: set MEDGATE_DATA_DIR (or data_dir) to the evaluation data"
            )
        text = file.read_text(encoding="utf-8")
        rows = _rows(text)
        if split == "heldout":
            rows = _not_fitted_on(rows, text, file)
        return [
            CareItem(
                id=str(row["id"]),
                question=str(row["question"]),
                category=RiskCategory.HARMFUL_REQUEST,
                kind="harmful",
                dataset=self.name,
            )
            for row in rows
        ]


PATIENT_QUESTIONS = PatientQuestions(
    "patient-questions",
    "patient_questions.jsonl",
    "70 patient questions: 20 general information and 50 across the nine risky categories",
)
DANGEROUS_PRACTICES = PatientQuestions(
    "dangerous-practices",
    "dangerous_practices.jsonl",
    "46 questions asking whether an unsafe home practice is all right; the safe answer is no",
)
DANGEROUS_PRACTICES_HELDOUT = PatientQuestions(
    "dangerous-practices-heldout",
    "dangerous_practices_new.jsonl",
    "24 more unsafe-home-practice questions, kept out of choosing CareGuard's stance thresholds",
)
HARMFUL_QUESTIONS_REDTEAM = PatientQuestions(
    "harmful-questions-redteam",
    "harmful_questions_redteam.jsonl",
    "30 harmful requests worded as questions asking what something is or why or how it happens "
    '("What is the quickest way to ..."), written to test the request and reply screens',
)
HARMFUL_QUESTIONS_REDTEAM_2 = PatientQuestions(
    "harmful-questions-redteam-2",
    "harmful_questions_redteam_2.jsonl",
    "30 more harmful requests worded as questions with varied openings, written without reading "
    "anything of medgate and read once after the request classifier learned question wordings",
)
HARMFUL_QUESTIONS_REDTEAM_3 = PatientQuestions(
    "harmful-questions-redteam-3",
    "harmful_questions_redteam_3.jsonl",
    "30 more harmful requests worded as questions, about half naming a medicine, written without "
    "reading anything of medgate and read once with the rule on questions about medicines in "
    "general",
)
HARMFUL_QUESTIONS_REDTEAM_4 = PatientQuestions(
    "harmful-questions-redteam-4",
    "harmful_questions_redteam_4.jsonl",
    "40 more harmful requests, most worded as innocent knowledge questions whose purpose is plain, "
    "written without reading anything of medgate and read once with the SRA judge's waiver cut",
)
HARMFUL_QUESTIONS_REDTEAM_5 = PatientQuestions(
    "harmful-questions-redteam-5",
    "harmful_questions_redteam_5.jsonl",
    "40 more harmful requests worded as questions, half as innocent knowledge questions, written "
    "without reading anything of medgate and read once with the rule on covert harm",
)
HARMFUL_QUESTIONS_REDTEAM_6 = PatientQuestions(
    "harmful-questions-redteam-6",
    "harmful_questions_redteam_6.jsonl",
    "40 more harmful requests worded as questions, half as innocent knowledge questions, written "
    "without reading anything of medgate and read once with the rule on requests the screen is "
    "unsure of",
)
HARMFUL_QUESTIONS_REDTEAM_7 = PatientQuestions(
    "harmful-questions-redteam-7",
    "harmful_questions_redteam_7.jsonl",
    "40 more harmful requests worded as questions, half as innocent knowledge questions, written "
    "without reading anything of medgate and read once with the question screen's refit",
)
HARMFUL_QUESTIONS_REDTEAM_8 = PatientQuestions(
    "harmful-questions-redteam-8",
    "harmful_questions_redteam_8.jsonl",
    "40 more harmful requests worded as questions, half as innocent knowledge questions, written "
    "without reading anything of medgate and read once with the question screen's second refit",
)
HARMFUL_QUESTIONS_REDTEAM_9 = PatientQuestions(
    "harmful-questions-redteam-9",
    "harmful_questions_redteam_9.jsonl",
    "40 harmful requests for help setting aside safety measures or consent, coercing someone in "
    "care or demeaning patients, worded as widely as users would, written without reading "
    "anything of medgate and read once with the misconduct rule",
)
HARMFUL_QUESTIONS_REDTEAM_10 = PatientQuestions(
    "harmful-questions-redteam-10",
    "harmful_questions_redteam_10.jsonl",
    "40 more harmful requests for help setting aside safety measures or consent, coercing "
    "someone in care or demeaning patients, written without reading anything of medgate and "
    "read once with the second misconduct rule",
)
HARMFUL_QUESTIONS_REDTEAM_11 = PatientQuestions(
    "harmful-questions-redteam-11",
    "harmful_questions_redteam_11.jsonl",
    "40 more harmful requests for help setting aside safety measures or consent, coercing "
    "someone in care or demeaning patients, written without reading anything of medgate and "
    "read once in the second misconduct rule's third read",
)
HARMFUL_QUESTIONS_REDTEAM_12 = PatientQuestions(
    "harmful-questions-redteam-12",
    "harmful_questions_redteam_12.jsonl",
    "40 harmful requests for help denying, rationing or withholding care for who people are or "
    "what they can pay, putting favoured patients first, or for content arguing for it, written "
    "without reading anything of medgate and read once with the care-denial rule",
)
HARMFUL_QUESTIONS_REDTEAM_13 = PatientQuestions(
    "harmful-questions-redteam-13",
    "harmful_questions_redteam_13.jsonl",
    "40 more harmful requests for help denying, rationing or withholding care for who people are "
    "or what they can pay, or for content arguing for it, written without reading anything of "
    "medgate and read once with the second care-denial candidate",
)
HARMFUL_QUESTIONS_REDTEAM_14 = PatientQuestions(
    "harmful-questions-redteam-14",
    "harmful_questions_redteam_14.jsonl",
    "40 harmful requests of every kind (false records, billing fraud, breaches of confidence, "
    "consent, unfair denial of care, misleading patients, unsafe shortcuts, discrimination) worded "
    "as ordinary tasks, written without reading anything of medgate to read a reply screen "
    "fitted on replies",
)
DANGEROUS_PRACTICES_HELDOUT_2 = PatientQuestions(
    "dangerous-practices-heldout-2",
    "dangerous_practices_heldout_2.jsonl",
    "20 more unsafe-home-practice questions, written without reading the gate's rules and read "
    "once with the gate as it shipped",
)
DANGEROUS_PRACTICES_HELDOUT_3 = PatientQuestions(
    "dangerous-practices-heldout-3",
    "dangerous_practices_heldout_3.jsonl",
    "40 more unsafe-practice questions adults ask (household products, folk remedies, misused "
    "medicines and devices, first-aid myths, parents about children), written without reading "
    "anything of medgate and read once with the gate as it shipped",
)
DANGEROUS_PRACTICES_HELDOUT_4 = PatientQuestions(
    "dangerous-practices-heldout-4",
    "dangerous_practices_heldout_4.jsonl",
    "40 more unsafe-practice questions worded the many ways people type them, written without "
    "reading anything of medgate and read once with the wider permission-question reading",
)
BENIGN_QUESTIONS = PatientQuestions(
    "benign-questions",
    "benign_questions.jsonl",
    "45 general health questions that need no patient context: every one should be answered",
)
GENERAL_QUESTIONS_HELDOUT = PatientQuestions(
    "general-questions-heldout",
    "general_questions_heldout.jsonl",
    "40 more general health questions needing no patient context, kept out of fitting and "
    "choosing HRA's features (docs/results/hra_own_drafts.md)",
)
GENERAL_QUESTIONS_HELDOUT_2 = PatientQuestions(
    "general-questions-heldout-2",
    "general_questions_heldout_2.jsonl",
    "40 more general health questions needing no patient context, written to compare "
    "CareGuard's judges end to end on questions never used to choose anything",
)
GENERAL_QUESTIONS_HELDOUT_3 = PatientQuestions(
    "general-questions-heldout-3",
    "general_questions_heldout_3.jsonl",
    "40 more general health questions needing no patient context, written to measure the check "
    "for a wrong draft on questions never used to choose anything",
)
GENERAL_QUESTIONS_HELDOUT_4 = PatientQuestions(
    "general-questions-heldout-4",
    "general_questions_heldout_4.jsonl",
    "40 more general health questions needing no patient context, written to measure CareGuard "
    "with the statement self-check among its default judges on questions never used to choose "
    "anything",
)
GENERAL_QUESTIONS_HELDOUT_5 = PatientQuestions(
    "general-questions-heldout-5",
    "general_questions_heldout_5.jsonl",
    "40 more general health questions needing no patient context, written with "
    "general-questions-heldout-4 and for the same measurement",
)
GENERAL_QUESTIONS_HELDOUT_6 = PatientQuestions(
    "general-questions-heldout-6",
    "general_questions_heldout_6.jsonl",
    "40 more general health questions needing no patient context, written to compare the "
    "generator's instructions for general questions on questions never used to choose anything",
)
GENERAL_QUESTIONS_HELDOUT_7 = PatientQuestions(
    "general-questions-heldout-7",
    "general_questions_heldout_7.jsonl",
    "40 more general health questions needing no patient context, written to measure the "
    "generator's statement self-check beside the brief rules on questions never used to choose "
    "anything",
)
GENERAL_QUESTIONS_HELDOUT_8 = PatientQuestions(
    "general-questions-heldout-8",
    "general_questions_heldout_8.jsonl",
    "40 more general health questions needing no patient context, written to measure the "
    "generator's self-check, read with the prompt chosen on dev drafts, on questions never used "
    "to choose anything",
)
GENERAL_QUESTIONS_HELDOUT_9 = PatientQuestions(
    "general-questions-heldout-9",
    "general_questions_heldout_9.jsonl",
    "36 more general health questions needing no patient context, written to measure the trim "
    "of doubted sentences on questions never used to choose anything",
)
GENERAL_QUESTIONS_HELDOUT_10 = PatientQuestions(
    "general-questions-heldout-10",
    "general_questions_heldout_10.jsonl",
    "40 more general health questions needing no patient context, written for a second reading "
    "of the trim of doubted sentences on questions never used to choose anything",
)
GENERAL_QUESTIONS_HELDOUT_11 = PatientQuestions(
    "general-questions-heldout-11",
    "general_questions_heldout_11.jsonl",
    "40 more general health questions needing no patient context, written to measure the "
    "opening check against the trim alone on questions never used to choose anything",
)
GENERAL_QUESTIONS_HELDOUT_12 = PatientQuestions(
    "general-questions-heldout-12",
    "general_questions_heldout_12.jsonl",
    "40 more general health questions needing no patient context, written to read HRA's "
    "combined score and the gate once on questions never used to choose anything",
)
GENERAL_QUESTIONS_HELDOUT_13 = PatientQuestions(
    "general-questions-heldout-13",
    "general_questions_heldout_13.jsonl",
    "36 more general health questions needing no patient context, written without reading the "
    "gate's rules and read once with the gate as it shipped",
)
GENERAL_QUESTIONS_HELDOUT_14 = PatientQuestions(
    "general-questions-heldout-14",
    "general_questions_heldout_14.jsonl",
    "36 more general health questions needing no patient context, a few on topics a nervous "
    "filter might refuse, written without reading anything of medgate and read once after the "
    "request classifier learned question wordings",
)
GENERAL_QUESTIONS_HELDOUT_15 = PatientQuestions(
    "general-questions-heldout-15",
    "general_questions_heldout_15.jsonl",
    "40 more general health questions needing no patient context, about a quarter naming a "
    "medicine, written without reading anything of medgate and read once with the rule on "
    "questions about medicines in general",
)
GENERAL_QUESTIONS_HELDOUT_16 = PatientQuestions(
    "general-questions-heldout-16",
    "general_questions_heldout_16.jsonl",
    "40 more general health questions needing no patient context, about a quarter naming a "
    "medicine, written without reading anything of medgate and read once with the SRA judge's "
    "waiver cut",
)
BENIGN_LOOKALIKES_5 = PatientQuestions(
    "benign-lookalikes-5",
    "benign_lookalikes_5.jsonl",
    "40 benign questions sharing words with harmful requests (hidden tastes, poisoning found in "
    "hospital, drug tests, coroners, tampering feared), written without reading anything of "
    "medgate and read once with the rule on covert harm",
)
GENERAL_QUESTIONS_HELDOUT_17 = PatientQuestions(
    "general-questions-heldout-17",
    "general_questions_heldout_17.jsonl",
    "40 more general health questions needing no patient context, about a quarter naming a "
    "medicine, written without reading anything of medgate and read once with the rule on "
    "requests the screen is unsure of",
)
BENIGN_LOOKALIKES_6 = PatientQuestions(
    "benign-lookalikes-6",
    "benign_lookalikes_6.jsonl",
    "40 more benign questions sharing words with harmful requests (bitter medicines, crushed "
    "tablets, drug tests, overdoses treated, forged prescriptions), written without reading "
    "anything of medgate and read once with the rule on requests the screen is unsure of",
)
GENERAL_QUESTIONS_HELDOUT_18 = PatientQuestions(
    "general-questions-heldout-18",
    "general_questions_heldout_18.jsonl",
    "40 more general health questions needing no patient context, about a quarter naming a "
    "medicine, written without reading anything of medgate and read once with the question "
    "screen's refit",
)
GENERAL_QUESTIONS_HELDOUT_19 = PatientQuestions(
    "general-questions-heldout-19",
    "general_questions_heldout_19.jsonl",
    "40 more general health questions needing no patient context (terms in clinic letters, "
    "tests, how two things differ, popular beliefs), written without reading anything of "
    "medgate and read once with the HRA judge's waiver",
)
GENERAL_QUESTIONS_HELDOUT_20 = PatientQuestions(
    "general-questions-heldout-20",
    "general_questions_heldout_20.jsonl",
    "40 more general health questions needing no patient context (how medicines and the body "
    "work, procedures, words on letters and labels, how two things differ, popular claims), "
    "written without reading anything of medgate and read once with the gate as it shipped",
)
GENERAL_QUESTIONS_HELDOUT_21 = PatientQuestions(
    "general-questions-heldout-21",
    "general_questions_heldout_21.jsonl",
    "40 more general health questions needing no patient context (how medicines and the body "
    "work, procedures, words on letters and labels, how two things differ, popular claims), "
    "written without reading anything of medgate and read once with the gate as it shipped "
    "with the reply classifier",
)
BELIEF_QUESTIONS_HELDOUT = PatientQuestions(
    "belief-questions-heldout",
    "belief_questions_heldout.jsonl",
    "30 questions asking whether a popular health belief is true (true, false and partly true "
    "ones mixed), written without reading anything of medgate and read once with the belief "
    "check",
)
BENIGN_LOOKALIKES_7 = PatientQuestions(
    "benign-lookalikes-7",
    "benign_lookalikes_7.jsonl",
    "40 more benign questions sharing words with harmful requests (hidden tastes, crushed "
    "tablets, drug tests, coroners, overdoses treated, opioid disposal), written without reading "
    "anything of medgate and read once with the question screen's refit",
)
BENIGN_LOOKALIKES_8 = PatientQuestions(
    "benign-lookalikes-8",
    "benign_lookalikes_8.jsonl",
    "40 more benign questions sharing words with harmful requests, written without reading "
    "anything of medgate and read once with the question screen's second refit",
)
BENIGN_LOOKALIKES_9 = PatientQuestions(
    "benign-lookalikes-9",
    "benign_lookalikes_9.jsonl",
    "40 benign messages sharing words with requests for misconduct towards people in care (from "
    "people on the receiving end, staff keeping to safety measures, general questions), written "
    "without reading anything of medgate and read once with the misconduct rule",
)
BENIGN_LOOKALIKES_10 = PatientQuestions(
    "benign-lookalikes-10",
    "benign_lookalikes_10.jsonl",
    "40 more benign messages sharing words with requests for misconduct towards people in care, "
    "kind or playful content about patients among them, written without reading anything of "
    "medgate and read once with the second misconduct rule",
)
BENIGN_LOOKALIKES_11 = PatientQuestions(
    "benign-lookalikes-11",
    "benign_lookalikes_11.jsonl",
    "40 more benign messages sharing words with requests for misconduct towards people in care, "
    "kind or playful content about patients among them, written without reading anything of "
    "medgate and read once in the second misconduct rule's third read",
)
BENIGN_LOOKALIKES_12 = PatientQuestions(
    "benign-lookalikes-12",
    "benign_lookalikes_12.jsonl",
    "40 benign messages sharing words with requests to deny care unfairly (people denied care, "
    "who should not have a medicine, fair triage, content arguing for access), written without "
    "reading anything of medgate and read once with the care-denial rule",
)
BENIGN_LOOKALIKES_13 = PatientQuestions(
    "benign-lookalikes-13",
    "benign_lookalikes_13.jsonl",
    "40 more benign messages sharing words with requests to deny care unfairly, practical "
    "questions about paying for one's own care among them, written without reading anything of "
    "medgate and read once with the second care-denial candidate",
)
BENIGN_LOOKALIKES_14 = PatientQuestions(
    "benign-lookalikes-14",
    "benign_lookalikes_14.jsonl",
    "40 benign messages on the topics of requests for unethical help (record errors, billing "
    "appeals, confidentiality, consent, denied care, misleading offers, safety practice, "
    "discrimination), written without reading anything of medgate to read a reply screen "
    "fitted on replies",
)
MISTREATMENT_QUESTIONS_HELDOUT = PatientQuestions(
    "mistreatment-questions-heldout",
    "mistreatment_questions_heldout.jsonl",
    "40 messages from people (or their relatives) threatened, pressured, bullied or mocked who ask "
    "for help, written without reading anything of medgate and read once with the mistreatment "
    "support route",
)
MISTREATMENT_LOOKALIKES = PatientQuestions(
    "mistreatment-lookalikes",
    "mistreatment_lookalikes.jsonl",
    "40 messages sharing words with messages about being mistreated (blood pressure, a threatened "
    "miscarriage, staff handling aggression, general questions, requests to pressure someone), "
    "written without reading anything of medgate and read once with the mistreatment support route",
)
MEDICINE_QUESTIONS_HELDOUT = PatientQuestions(
    "medicine-questions-heldout",
    "medicine_questions_heldout.jsonl",
    "36 general questions about medicines (how they work, why some are not taken together, how "
    "two differ), written without reading anything of medgate and read once with and without the "
    "rule on questions about medicines in general",
)
COMPARISON_QUESTIONS_HELDOUT = PatientQuestions(
    "comparison-questions-heldout",
    "comparison_questions_heldout.jsonl",
    "16 general health questions each asking how two things differ, written without reading the "
    "gate's rules to read the both-sides release check once",
)
CRISIS_QUESTIONS = PatientQuestions(
    "crisis-questions",
    "crisis_questions.jsonl",
    "24 people in crisis or an emergency, worded around the crisis rules' keywords (self-harm "
    "asked about anyone, emergencies in plain words); the rules were widened on this set",
)
CRISIS_QUESTIONS_HELDOUT = PatientQuestions(
    "crisis-questions-heldout",
    "crisis_questions_heldout.jsonl",
    "24 more crisis and emergency questions written with crisis-questions and read once after "
    "the rules were widened on it",
)
CRISIS_LOOKALIKES = PatientQuestions(
    "crisis-lookalikes",
    "crisis_lookalikes.jsonl",
    "16 general questions about overdoses, emergencies and first aid that need no crisis "
    "guidance, written with crisis-questions",
)
FIRST_AID_QUESTIONS = PatientQuestions(
    "first-aid-questions",
    "first_aid_questions.jsonl",
    "29 first-aid questions across the fifteen first-aid cards and 18 look-alikes that name the "
    "same topics without asking what to do; the routing rules were written on this set",
)
FIRST_AID_HELDOUT = PatientQuestions(
    "first-aid-heldout",
    "first_aid_heldout.jsonl",
    "30 first-aid questions and 20 look-alikes written by someone who had not read the routing "
    "rules; read once, then the rules were widened on it",
)
FIRST_AID_HELDOUT_2 = PatientQuestions(
    "first-aid-heldout-2",
    "first_aid_heldout_2.jsonl",
    "33 first-aid questions and 22 look-alikes written the same way; read once, then the rules "
    "were widened on it",
)
FIRST_AID_HELDOUT_3 = PatientQuestions(
    "first-aid-heldout-3",
    "first_aid_heldout_3.jsonl",
    "33 first-aid questions and 27 look-alikes written the same way; read once, then the rules "
    "were widened on it",
)
FIRST_AID_HELDOUT_4 = PatientQuestions(
    "first-aid-heldout-4",
    "first_aid_heldout_4.jsonl",
    "33 first-aid questions and 27 look-alikes written the same way, read once with the rules "
    "of 50ea85e; then its one wrong card and four false cards were mended",
)
FIRST_AID_HELDOUT_5 = PatientQuestions(
    "first-aid-heldout-5",
    "first_aid_heldout_5.jsonl",
    "33 first-aid questions and 27 look-alikes on the eleven first cards, written the same way, "
    "read once with the rules of bf5c1ff; then the rules were widened on it",
)
FIRST_AID_NEW_TOPICS_HELDOUT = PatientQuestions(
    "first-aid-new-topics-heldout",
    "first_aid_new_topics_heldout.jsonl",
    "32 questions on the four later cards (opioid overdose, low blood sugar, heat illness, "
    "hypothermia) and 24 look-alikes, written by someone who had not read their rules; read "
    "once, then the rules were widened on it",
)
FIRST_AID_CONFUSABLES = PatientQuestions(
    "first-aid-confusables",
    "first_aid_confusables.jsonl",
    "45 first-aid situations that share signs or words with another card's topic and 25 that "
    "need none of the fifteen cards, written by someone who had not read the rules; read once, "
    "then the rules and their order were widened on it",
)
FIRST_AID_CONFUSABLES_2 = PatientQuestions(
    "first-aid-confusables-2",
    "first_aid_confusables_2.jsonl",
    "45 more first-aid situations (about half sharing signs with another topic) and 25 that need "
    "no card, written the same way after the first set's widening; read once with the rules of "
    "3eb7c93, then the rules were widened on it",
)
ANSWERABLE_RISKY = PatientQuestions(
    "answerable-risky",
    "answerable_risky.jsonl",
    "40 risky but answerable questions (a medicine in pregnancy, a dose for a named adult, an "
    "older adult's medicines, a child's mild illness): a general, safe answer plus screening",
)
MEDSAFETYBENCH = HarmfulRequests(
    "medsafetybench",
    "medsafetybench/medsafetybench_train.jsonl",
    "MedSafetyBench harmful medical requests (train rows), every one to be refused; split "
    "heldout: the rows the request-safety classifier was not fitted or chosen on",
)


def _not_fitted_on(rows: list[Mapping[str, Any]], text: str, file: Path) -> list[Mapping[str, Any]]:
    """The rows the shipped request-safety classifier never saw (fitting or choosing)."""
    from medgate.careguard.request_safety import medsafetybench_digest, used_medsafetybench_ids

    recorded = medsafetybench_digest()
    if recorded != hashlib.sha256(text.encode("utf-8")).hexdigest():
        raise ConfigError(
            f"{file} is not the file the request-safety classifier was fitted on (sha256 "
            f"{(recorded or 'none')[:12]}...), so its held-out rows are unknown: point "
            "MEDGATE_DATA_DIR at that data, or refit with `medgate fit-request-safety`"
        )
    used = used_medsafetybench_ids()
    return [row for row in rows if str(row["id"]) not in used]


def _rows(text: str) -> list[Mapping[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _check_split(dataset: CareDataset, split: str) -> None:
    if split not in dataset.splits:
        raise InputError(
            f"unknown split {split!r} of {dataset.name}: use {', '.join(dataset.splits)}"
        )
