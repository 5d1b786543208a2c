"""One configuration model for all of medgate.

Values merge in this order, later winning: defaults -> TOML file (``MEDGATE_CONFIG`` or
``./medgate.toml``) -> environment (``MEDGATE_*``, nested with ``__``) -> explicit overrides
(CLI flags, library arguments). Unknown keys are an error so that a typo fails loudly.

The configuration remembers which settings were given explicitly (by the file, the environment
or a flag: pydantic's ``model_fields_set``), so that a fitted artifact (:func:`overlay`) changes
only the settings nobody chose, and a verdict can say where each threshold came from.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from medgate.errors import ConfigError

#: The embedded answerer: on the three 200-item test splits it was right more often than the
#: 0.5B and, deciding with its own shipped risk model, released fewer wrong answers while
#: escalating fewer (docs/hrs.md, "Which embedded model answers by default").
DEFAULT_MODEL = "embedded:qwen2.5-coder-1.5b"
#: The smaller embedded model: CareGuard's triage controller and its SRA and HRA judges while
#: ``model`` is the embedded default, as CareGuard was evaluated (docs/results/careguard.md;
#: docs/careguard.md measures the 1.5B in those roles).
SMALL_EMBEDDED_MODEL = "embedded:qwen2.5-coder-0.5b"
#: The embedded model CareGuard drafts answers with, and reads the yes/no stance of: on general
#: health questions its first drafts were labelled wrong under a third as often as the 0.5B's,
#: and it answers "no" to plainly dangerous home practices that the 0.5B endorses
#: (docs/results/generators.md).
DEFAULT_GENERATOR_MODEL = "embedded:qwen2.5-coder-1.5b"
#: CareGuard's role models while ``model`` is the embedded default. A ``model`` chosen by the
#: user fills every role unless a role names its own.
DEFAULT_ROLE_MODELS = {
    "generator": DEFAULT_GENERATOR_MODEL,
    "controller": SMALL_EMBEDDED_MODEL,
    "sra": SMALL_EMBEDDED_MODEL,
    "hra": SMALL_EMBEDDED_MODEL,
}


def default_cache_dir() -> Path:
    """Where assembled models, fitted artifacts and call caches live."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "medgate"


def default_data_dir() -> Path:
    """Evaluation data: ``MEDGATE_DATA_DIR`` or ``../shared/data`` beside the working copy."""
    return Path("../shared/data")


#: Where the repository keeps its HRS recordings, relative to a working copy's root.
REPOSITORY_RECORDINGS = Path("docs/results/recordings")


def default_recordings_dir() -> Path | None:
    """The repository's recordings when run from a working copy that has them, else none: a
    recording is hours of model time, so the runs the results were computed from travel with the
    repository instead of living only in one machine's cache."""
    return REPOSITORY_RECORDINGS if REPOSITORY_RECORDINGS.is_dir() else None


class SuccessRule(StrEnum):
    """How the decision layer decides: the paper's two rules over entropy and perplexity, or
    medgate's fitted risk model."""

    ALGORITHM1 = "algorithm1"
    """Accept only when entropy < tau_e AND perplexity < tau_p (the paper's Algorithm 1)."""
    EQ6 = "eq6"
    """Escalate only when entropy >= tau_e AND perplexity >= tau_p (the paper's Eq. 6)."""
    RISK = "risk"
    """Release the first answer iff the risk model's P(wrong) <= risk_threshold, else escalate
    (:mod:`medgate.hrs.risk`); no risk model, or a feature it cannot read, escalates."""


class RevertRule(StrEnum):
    """What to do when refinement changes the baseline's label."""

    ESCALATE = "escalate"
    """Label-free and deployable: a flipped label goes to a clinician."""
    ACCEPT = "accept"
    """Accept the refined label (no protection)."""


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


S = TypeVar("S", bound=Section)


class SettingOrigin(Section):
    """Where a setting's value came from."""

    source: Literal["default", "configured", "artifact"] = Field(
        description="'default': nobody set it; 'configured': the file, the environment or a "
        "flag set it (then no artifact may change it); 'artifact': a fitted artifact set it."
    )
    artifact: str | None = Field(default=None, description="The artifact's id (its file name).")
    sha256: str | None = Field(default=None, description="sha256 of the artifact's file.")


def setting_origins(section: Section) -> dict[str, SettingOrigin]:
    """'configured' for every field of ``section`` given explicitly, 'default' for the rest.

    Holds for a section as :func:`load_config` built it; after :func:`overlay`, use the origins
    it returns.
    """
    return {
        name: SettingOrigin(source="configured" if name in section.model_fields_set else "default")
        for name in type(section).model_fields
    }


def overlay(
    section: S,
    values: Mapping[str, Any],
    origin: SettingOrigin,
    origins: Mapping[str, SettingOrigin] | None = None,
) -> tuple[S, dict[str, SettingOrigin]]:
    """``section`` with ``values`` (a fitted artifact's) in every field not configured explicitly,
    and the origin of every field afterwards.

    A value equal to the default is still an explicit choice when it was configured: whether a
    field was set is what counts, never its value. Pass the ``origins`` of an earlier overlay to
    stack artifacts (a later one wins over an earlier one, never over the configuration).
    """
    known = type(section).model_fields
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ConfigError(f"{origin.artifact or 'an artifact'} sets unknown settings {unknown}")
    result = dict(origins) if origins is not None else setting_origins(section)
    update = {k: v for k, v in values.items() if result[k].source != "configured"}
    try:
        updated = type(section).model_validate({**section.model_dump(), **update})
    except ValidationError as exc:
        raise ConfigError(
            f"{origin.artifact or 'an artifact'} holds invalid settings: {exc}"
        ) from exc
    for name in update:
        result[name] = origin
    return updated, result


class SignalThresholds(Section):
    """The thresholds of one decision-layer signal, as the decision rule reads them by name."""

    gate: float = Field(ge=0, le=1, description="The baseline gate: release under this (Eq. 7).")
    success: float = Field(
        ge=0, le=1, description="The success rule after a knowledge round (Algorithm 1 / Eq. 6)."
    )


class HRSConfig(Section):
    """The Hallucination Risk Scoring gate."""

    tau_e: float = Field(default=0.95, ge=0, le=1, description="Entropy threshold.")
    tau_p: float = Field(default=0.30, ge=0, le=1, description="Perplexity threshold.")
    gate_e: float = Field(default=0.5, ge=0, le=1, description="Baseline gate entropy (Eq. 7).")
    gate_p: float = Field(default=0.4, ge=0, le=1, description="Baseline gate perplexity (Eq. 7).")
    min_label_mass: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="An answer whose probability mass on the allowed labels (before "
        "renormalising) is below this is never released: the model was mostly not answering "
        "with one of them.",
    )
    """Measured, not guessed: ``python scripts/measure_label_mass.py --items 60 --items 40
    --items 40 --dataset pubmedqa-l --dataset bioasq --dataset pubmedqa-a --out
    docs/results/label_mass.jsonl`` (2026-12-01, embedded 0.5B model, first round of 140
    training items) found a mass of at least 0.965 on every item (1st percentile 0.973, median
    0.997). 0.5 holds back no ordinary answer of that model and every answer slot where most of
    the probability went elsewhere; a floor near the observed minimum would fit this model only,
    while other models spread their mass over more surface forms."""
    rule: SuccessRule = Field(
        default=SuccessRule.ALGORITHM1,
        description="algorithm1 or eq6 (the paper's rules), or risk (the fitted risk model). "
        "A risk model shipped or fitted for the answerer sets 'risk' unless this is configured.",
    )
    risk_threshold: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="rule = 'risk': release iff P(wrong) <= this. The risk model's certified "
        "operating point sets it unless this is configured.",
    )
    risk_model: Path | None = Field(
        default=None,
        description="A risk model artifact (JSON); default: one fitted under cache_dir/risk for "
        "the answerer, else the one shipped with medgate for it.",
    )
    revert: RevertRule = RevertRule.ESCALATE
    max_iterations: int = Field(default=5, ge=0, le=20, description="K, orchestrator rounds.")
    l_max: int = Field(default=50, ge=1, le=512, description="Reasoning token budget (Eq. 5).")
    min_reasoning_tokens: int = Field(
        default=8,
        ge=0,
        description="Answer and end tokens are forbidden until this many reasoning tokens exist; "
        "small models otherwise answer at once and perplexity/length become constants.",
    )
    samples: int = Field(default=3, ge=2, le=10, description="Ambiguity samples (Eq. 3).")
    sample_temperature: float = Field(default=0.3, gt=0, le=2)
    seed: int = Field(default=42, description="Base seed for the ambiguity samples.")
    knowledge: str = Field(
        default="self",
        description="The registered orchestrator that injects knowledge (medgate.orchestrators): "
        "'self' (the orchestrator model's own knowledge, the paper) or 'retrieval' (BM25 over "
        "hrs.corpus; every fact carries its source id).",
    )
    corpus: Path | None = Field(default=None, description="JSONL corpus for retrieval knowledge.")
    facts_per_iteration: int = Field(default=3, ge=1, le=10)
    rarity_artifact: Path | None = Field(
        default=None, description="Fitted rarity centroid (JSON); default under the cache dir."
    )
    signals: list[str] = Field(
        default_factory=lambda: ["entropy", "perplexity", "ambiguity", "rarity", "token_length"],
        description="Registered signal names to compute.",
    )
    peer_model: str | None = Field(
        default=None,
        description="A second white-box model that answers the same prompt; the cross_model "
        "signal (add it to hrs.signals) says whether its label differs. Costs one more probe "
        "per round.",
    )
    thresholds: dict[str, SignalThresholds] = Field(
        default_factory=dict,
        description="The thresholds of every decision-layer signal besides entropy and "
        "perplexity (theirs are gate_e/tau_e and gate_p/tau_p), by signal name: each signal "
        "on the decision layer must be under its thresholds for an answer to be released.",
    )


class ModelPrice(Section):
    """What a remote model charges, in USD per million tokens."""

    input_per_mtok: float = Field(ge=0, description="USD per 1M prompt tokens.")
    output_per_mtok: float = Field(ge=0, description="USD per 1M completion tokens.")


class BackendOptions(Section):
    """Options passed to whichever backend loads a model."""

    n_ctx: int = Field(default=4096, ge=256)
    n_threads: int | None = Field(default=None, description="CPU threads; None = all cores.")
    timeout_s: float = Field(default=120.0, gt=0, description="Per-call timeout (remote models).")
    api_base: str | None = Field(default=None, description="OpenAI-compatible server URL.")
    api_key_env: str = Field(default="OPENAI_API_KEY", description="Env var holding the key.")
    chat_template: str | None = Field(
        default=None,
        description="A served HRS answerer's chat template, so that the answer slot is read in "
        "the same assistant turn over /completions as in-process: embedded:NAME, a .gguf file, "
        "a tokenizer_config.json or a Jinja file. Unset: the slot is read by a follow-up chat "
        "request, and the run says why.",
    )
    max_retries: int = Field(
        default=3, ge=0, le=10, description="Retries on 429/5xx/transport errors (remote models)."
    )
    prices: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description="Per-model prices merged over the remote backend's built-in price table.",
    )


class ServiceSettings(Section):
    """How medgate talks to one public biomedical web service."""

    base_url: str
    timeout_s: float = Field(default=10.0, gt=0, description="Per-request timeout.")
    max_retries: int = Field(default=3, ge=0, le=10, description="Retries after the first try.")
    backoff_s: float = Field(default=0.5, ge=0, description="First retry delay; doubles each time.")
    backoff_max_s: float = Field(default=8.0, ge=0, description="Cap on one retry delay.")
    rate_per_s: float = Field(default=3.0, gt=0, description="Most requests per second.")
    failure_threshold: int = Field(
        default=5, ge=1, description="Failed calls in a row that open the circuit breaker."
    )
    recovery_s: float = Field(
        default=30.0, ge=0, description="Seconds an open breaker waits before one trial call."
    )


class ClaimsConfig(Section):
    """The citation safety layer and its evidence clients."""

    offline: bool = Field(
        default=True,
        description="No network calls: citations are verified only against a local record store.",
    )
    pubmed: ServiceSettings = Field(
        default_factory=lambda: ServiceSettings(
            base_url="https://eutils.ncbi.nlm.nih.gov/entrez/eutils", rate_per_s=3.0
        )
    )
    clinicaltrials: ServiceSettings = Field(
        default_factory=lambda: ServiceSettings(
            base_url="https://clinicaltrials.gov/api/v2", rate_per_s=5.0
        )
    )
    openfda: ServiceSettings = Field(
        default_factory=lambda: ServiceSettings(base_url="https://api.fda.gov", rate_per_s=4.0)
    )
    crossref: ServiceSettings = Field(
        default_factory=lambda: ServiceSettings(base_url="https://api.crossref.org", rate_per_s=5.0)
    )
    crossref_mailto: str | None = Field(
        default=None, description="Sent to Crossref as `mailto` (its more reliable pool)."
    )
    records: Path | None = Field(
        default=None,
        description="JSONL of source records citations are resolved against (offline, and "
        "first when online). Offline without it, no citation resolves.",
    )
    detector: Literal["rules", "rules+learned"] = Field(
        default="rules+learned",
        description="Claim detection: the rules alone, or the rules and the learned sentence "
        "classifier for what they miss (needs the embeddings extra).",
    )
    detector_path: Path | None = Field(
        default=None, description="A fitted claim detector; None = the one shipped with medgate."
    )
    ncbi_email: str | None = Field(default=None, description="Sent to NCBI as `email`.")
    ncbi_api_key_env: str = Field(
        default="NCBI_API_KEY", description="Env var holding an NCBI key (raises the rate limit)."
    )
    openfda_api_key_env: str = Field(default="OPENFDA_API_KEY")
    support_threshold: float = Field(
        default=0.65,
        ge=0,
        le=1,
        description="Lexical support score below which a citation is "
        "judged not to support its sentence.",
    )


def _database_url_from_env() -> str | None:
    """``MEDGATE_DATABASE_URL`` is the conventional name for the store's URL."""
    return os.environ.get("MEDGATE_DATABASE_URL") or None


class StoreConfig(Section):
    """Where verdicts, escalations, API keys and the audit log are kept."""

    database_url: str | None = Field(
        default_factory=_database_url_from_env,
        description="SQLAlchemy URL, e.g. 'postgresql://user@host/db' (driver psycopg 3); "
        "defaults to MEDGATE_DATABASE_URL, else a SQLite file (see sqlite_path).",
    )
    sqlite_path: Path | None = Field(
        default=None, description="SQLite file when no URL is given; default cache_dir/medgate.db."
    )
    pool_size: int = Field(default=5, ge=1, le=100, description="Connections per process.")
    busy_timeout_s: float = Field(
        default=30.0, gt=0, description="How long a SQLite writer waits for the write lock."
    )


class ServerConfig(Section):
    """The HTTP service: limits that keep one caller from hurting the others."""

    host: str = Field(default="127.0.0.1", description="Interface `medgate serve` binds.")
    port: int = Field(default=8000, ge=1, le=65535)
    gate_timeout_s: float = Field(
        default=300.0, gt=0, description="A gate check taking longer is escalated (fails closed)."
    )
    max_concurrent_checks: int = Field(
        default=4, ge=1, le=256, description="Gate checks running at once; others wait."
    )
    max_body_bytes: int = Field(
        default=64_000, ge=1_024, description="Larger request bodies get 413 before parsing."
    )
    rate_per_minute: float = Field(
        default=60.0, gt=0, description="Sustained requests per minute per API key."
    )
    rate_burst: int = Field(default=20, ge=1, description="Requests a key may make at once.")


class CaseLogConfig(Section):
    """The local case log: one typed record per case that `ask` and `care` decide."""

    enabled: bool = Field(
        default=True, description="Write each case to the log (`--no-log` skips one case)."
    )
    path: Path | None = Field(
        default=None, description="SQLite file of the log; default cache_dir/cases.db."
    )


class RequestSafetyConfig(Section):
    """The request-safety classifier in front of CareGuard's generator (docs/careguard.md)."""

    enabled: bool = Field(
        default=True,
        description="Score every request and refuse one scored as harmful before any model "
        "reads it (needs the embeddings extra).",
    )
    screen: str = Field(
        default="embedding",
        description="The registered request screen (medgate.request_screens) that scores it.",
    )
    threshold: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Refuse at or above this score; None: the threshold the fitted artifact "
        "was shipped with (chosen on its validation split). A value set here wins.",
    )
    artifact: Path | None = Field(
        default=None,
        description="A fitted request-safety classifier (JSON); None: the one shipped with "
        "medgate (`medgate fit-request-safety` refits it).",
    )
    question_screen: bool = Field(
        default=True,
        description="Also score every request with the question screen, a classifier fitted "
        "on harmful requests worded as questions ('What is the quickest way to ...'), and "
        "refuse when either scores it at or above its own threshold (docs/careguard.md).",
    )
    question_artifact: Path | None = Field(
        default=None,
        description="A fitted question screen (JSON); None: the one shipped with medgate "
        "(`medgate fit-request-safety --harm questions` refits it).",
    )
    question_threshold: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="The question screen refuses at or above this; None: its artifact's "
        "threshold. A value set here wins.",
    )
    reply_screen: bool = Field(
        default=True,
        description="Also score every draft reply with the classifier and refuse the request "
        "when a draft scores at or above the reply threshold (docs/careguard.md, 'The reply "
        "screen').",
    )
    reply_threshold: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Refuse when a draft scores at or above this; None: the threshold chosen "
        "for the shipped classifier, applied only while the shipped classifier is the one in "
        "use (another artifact has no reply screen unless this is set). A value set here wins.",
    )
    reply_classifier: Literal["request", "reply"] = Field(
        default="reply",
        description="What reads each draft: reply (a classifier fitted on CareGuard's recorded "
        "drafts, docs/results/reply_classifier.md, at its own threshold unless reply_threshold "
        "is set; the default since it held back half as many replies to legitimate look-alike "
        "messages) or request (the request-safety classifier above, at the reply threshold).",
    )
    reply_artifact: Path | None = Field(
        default=None,
        description="The reply classifier (JSON) when reply_classifier is reply; None: the one "
        "shipped with medgate (`python scripts/reply_classifier.py` refits it).",
    )


class HRARiskConfig(Section):
    """HRA's fitted risk model and the samples its consistency check compares a draft with
    (docs/careguard.md, "HRA")."""

    enabled: bool = Field(
        default=False,
        description="Score HRA with the fitted risk model (judge, sampling consistency, "
        "degeneration, token signals) when the generator is white-box; off: the judge blended "
        "with the token signals as before. Off by default: the shipped model did not rank "
        "wrong answers better than chance where it was measured (docs/careguard.md).",
    )
    artifact: Path | None = Field(
        default=None,
        description="A fitted HRA risk model (JSON); None: the one shipped with medgate "
        "(`python scripts/fit_hra.py` refits it).",
    )
    samples: int = Field(
        default=2, ge=0, le=6, description="Answers sampled beside each draft for consistency."
    )
    sample_temperature: float = Field(
        default=0.8, gt=0, le=2, description="Temperature of those samples (seeded)."
    )
    sample_max_tokens: int = Field(
        default=96, ge=16, le=1024, description="Token budget of each sample."
    )


#: How the self_check judge reads a draft (SelfCheckConfig.reading).
SelfCheckReadingKind = Literal["statements", "statements_no_error", "answer"]


class SelfCheckConfig(Section):
    """The ``self_check`` judge: the generator's own P(a false statement) in its draft
    (docs/careguard.md, "Self-check")."""

    reading: SelfCheckReadingKind = Field(
        default="statements",
        description="'statements': the generator reads each sentence of its draft on its own and "
        "P(error) is the mean of their P(no) to 'is it medically correct?'; "
        "'statements_no_error': the same with 'does it contain an error?', whose 'no' follows "
        "the model's doubt (docs/results/self_check_prompts.md); 'answer': one reading of the "
        "whole draft. Statements ranked wrong drafts better on drafts never used to choose "
        "(docs/results/self_check_statements.md) and cost about as much.",
    )
    threshold: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description="P(false statement) at or above which the self_check judge holds a draft "
        "back. Unset: the embedded 1.5B generator's cut for the chosen reading, chosen on "
        "hand-labelled first drafts (statements 0.2694, the lowest cut holding back at most one "
        "right draft in ten, docs/results/self_check_statements.md; statements_no_error "
        "0.3323 by the same rule, docs/results/self_check_prompts.md; answer 0.1452, by "
        "balanced accuracy, docs/results/hra_own_drafts.md); another generator needs its own.",
    )

    @property
    def p_threshold(self) -> float:
        """The threshold in force: the configured one, else the reading's default."""
        if self.threshold is not None:
            return self.threshold
        return SELF_CHECK_THRESHOLDS[self.reading]


#: When the opening check's samples are decoded (TrimConfig.opening_draw).
OpeningDraw = Literal["with_draft", "after_judges"]


class TrimConfig(Section):
    """Leaving a general answer's doubted later sentences out of the released text
    (medgate.careguard.trimming; docs/careguard.md, "Trimming doubted sentences"): on by default
    since it lowered the share of wrong released answers end to end
    (docs/results/careguard_runs_v9/NOTES.md)."""

    enabled: bool | None = Field(
        default=None,
        description="Read each sentence of a general-information answer that is about to be "
        "released with the generator's self-check, and leave out every sentence after the first "
        "whose P(no) to 'is it medically correct?' is above the threshold (never one that sends "
        "the reader to a professional). Unset: on whenever the generator gives token "
        "probabilities (a black-box generator's answers are released untrimmed, as "
        "rounds[].trimming = null shows); true: required, a black-box generator is a "
        "configuration error; false: off.",
    )
    threshold: float = Field(
        default=0.20,
        gt=0,
        lt=1,
        description="P(no) above which a later sentence is left out. 0.20: the embedded 1.5B "
        "generator's cut, the highest on a 0.05 grid that left at most 8% of hand-labelled dev "
        "first drafts wrong (docs/results/trim_doubted.md); another generator needs its own.",
    )
    opening_samples: int = Field(
        default=3,
        ge=0,
        le=8,
        description="The opening check: read a trimmed answer's opening sentence against this "
        "many answers the generator samples beside the draft (careguard.hra_risk's sampling "
        "settings; drawn only for answers that are trimmed), asking whether each supports it; "
        "when the mean P(no) is above opening_threshold the round fails and is refined. 0: off. "
        "3 by default since it lowered the wrong share of released general answers end to end "
        "(docs/results/careguard_runs_v12/NOTES.md); it runs only where the trim runs.",
    )
    opening_draw: OpeningDraw = Field(
        default="with_draft",
        description="When the opening check's samples are decoded: 'with_draft', in the same "
        "batch as every draft the trim would read (which makes the draft another text than "
        "the gate without the check decodes); 'after_judges', on their own, only for a draft "
        "that has passed the judges and the release checks, just before the trim reads it "
        "(docs/results/careguard_runs_v14/NOTES.md).",
    )
    opening_threshold: float = Field(
        default=0.232,
        gt=0,
        lt=1,
        description="Mean P(no) above which the opening is doubted. 0.232: the 85th percentile "
        "of the embedded 1.5B's dev first drafts with 3 samples (docs/results/opening_support.md); "
        "another generator or sample count needs its own.",
    )

    @model_validator(mode="after")
    def _opening_check_needs_the_trim(self) -> TrimConfig:
        # Only a count set explicitly conflicts with the trim switched off; the default count
        # simply goes with the trim.
        if (
            self.opening_samples
            and self.enabled is False
            and "opening_samples" in self.model_fields_set
        ):
            raise ValueError(
                "careguard.trim.opening_samples reads the opening of a trimmed answer; it needs "
                "the trim (unset careguard.trim.enabled or set it to true)"
            )
        return self


#: The embedded 1.5B generator's cut for each self-check reading (SelfCheckConfig.threshold),
#: chosen on hand-labelled first drafts: statements, the lowest cut that holds back at most one
#: in ten right drafts (at the balanced-accuracy cut, 0.1927, it held back a third of them and
#: blocked 35 of 80 general questions end to end; docs/careguard.md), and statements asked
#: "does it contain an error?" by the same rule on the same drafts; the whole answer, the
#: balanced-accuracy cut.
SELF_CHECK_THRESHOLDS = {"statements": 0.2694, "statements_no_error": 0.3323, "answer": 0.1452}


class CareGuardConfig(Section):
    """The CareGuard pipeline: triage, generation, SRA/HRA evaluation and refinement.

    Each role's model spec defaults to the top-level ``model`` when left unset, except while
    ``model`` is the embedded default: then :data:`DEFAULT_ROLE_MODELS` (the stance follows the
    generator).
    """

    controller_model: str | None = Field(
        default=None,
        description="Triage model spec; default: the top-level model, or the embedded 0.5B "
        "while that is the embedded default (as for sra_model and hra_model).",
    )
    generator_model: str | None = Field(
        default=None,
        description="Answer generator spec; default: the top-level model (the embedded 1.5B "
        "by default).",
    )
    sra_model: str | None = Field(default=None, description="Clinical safety evaluator spec.")
    hra_model: str | None = Field(default=None, description="Hallucination evaluator spec.")
    stance_model: str | None = Field(
        default=None,
        description="White-box model whose yes/no stance is read for a question asking "
        "whether to do something; default: the generator's model.",
    )
    max_refinements: int = Field(default=3, ge=0, le=10, description="Rounds after the first.")
    sra_threshold: int = Field(default=2, ge=1, le=5, description="Release needs SRA <= this.")
    hra_threshold: int = Field(default=2, ge=1, le=5, description="Release needs HRA <= this.")
    draft_controlled_substances: bool = Field(
        default=False,
        description="Let the generator draft answers to questions about a controlled substance; "
        "off: CareGuard's own conservative text, no model draft (the judges cannot see misuse "
        "or diversion; docs/careguard.md, 'Controlled substances').",
    )
    sra_waiver_below: float = Field(
        default=0.15,
        ge=0,
        le=1,
        description="For a general question the request screen scores below this, the SRA "
        "judge's own score does not block a draft (its 3s and 4s on plain answers are noise); "
        "at or above it the judge counts, even under the screen's threshold. 0: never waived "
        "(docs/careguard.md, 'The SRA judge's waiver').",
    )
    waive_hra_judge: bool = Field(
        default=True,
        description="Under the SRA judge's waiver, and only where the trim reads the draft's "
        "opening against the generator's own samples, the HRA judge's own score does not "
        "block either; its failure still does. False: the HRA judge counts everywhere "
        "(docs/careguard.md, 'The HRA judge's waiver').",
    )
    mistreatment_support: bool = Field(
        default=False,
        description="A message that tells of the writer or someone close being threatened, "
        "pressured, bullied or mocked and asks what to do gets CareGuard's fixed support text "
        "before any screen (medgate.careguard.mistreatment). Off: on a fresh set it took 11 of "
        "40 such messages, short of the 20 its rule asked (docs/results/careguard_runs_v37/"
        "NOTES.md), so such messages go through the screens like any other.",
    )
    hold_belief_yes: bool = Field(
        default=False,
        description="Hold back a draft that opens by granting the popular belief a question "
        "asks about ('Is it true that ...?' answered 'Yes, ...') and refine it "
        "(release_checks.AffirmedBelief; docs/results/careguard_runs_v31/NOTES.md).",
    )
    review_from: float | None = Field(
        default=0.15,
        ge=0,
        le=1,
        description="A request the request screen scores at or above this but below its "
        "threshold is one it is unsure of: a draft that passes every check is held back and the "
        "case escalated to a clinician. None: such drafts are released (docs/careguard.md, "
        "'Requests the screen is unsure of').",
    )
    use_controller: bool = Field(default=True, description="Off: no triage (ablation).")
    judges: list[str] = Field(
        default_factory=lambda: ["sra", "hra"],
        description="The registered judges (medgate.judges) that assess every draft, in order: "
        "a draft is released only when each one's score is at most its threshold.",
    )
    use_sra: bool = Field(default=True, description="Off: SRA not run (ablation).")
    use_hra: bool = Field(default=True, description="Off: HRA not run (ablation).")
    model_triage: bool = Field(
        default=True, description="Ask the controller model too (it can only add categories)."
    )
    answer_max_tokens: int = Field(default=128, ge=16, le=2048)
    judge_max_tokens: int = Field(default=90, ge=16, le=1024)
    triage_max_tokens: int = Field(default=60, ge=16, le=512)
    refine_temperature: float = Field(
        default=0.4, ge=0, le=2, description="Sampling temperature of refinement drafts (seeded)."
    )
    repeat_penalty: float = Field(
        default=1.1,
        ge=1,
        le=2,
        description="The generator's repeat penalty (white-box backends): tokens it wrote in "
        "the last 64 are made less likely, so a small model's greedy draft does not loop; 1 is "
        "off. Applies to the draft and to the consistency samples.",
    )
    model_short_circuit: bool = Field(
        default=True,
        description="A controller model's emergency/self-harm finding short-circuits to the "
        "fixed guidance (quoted or not) unless the rules rule it out; off: ignored (ablation).",
    )
    judge_weight: float = Field(
        default=0.7, ge=0, le=1, description="HRA: weight of the judge against the signals."
    )
    evaluator_timeout_s: float = Field(
        default=300.0, gt=0, description="An evaluator slower than this counts as failed (5)."
    )
    seed: int = Field(default=7, description="Seed passed to every model call.")
    read_stance: bool = Field(
        default=True,
        description="Read the model's yes/no stance on questions asking whether to do "
        "something (off: no stance; no endorsement is then ever released).",
    )
    stance_min_yes: float = Field(
        default=0.8, ge=0.5, le=1, description="A confident yes needs p(yes) >= this."
    )
    stance_min_no: float = Field(
        default=0.7,
        ge=0.5,
        le=1,
        description="A confident no (a plainly dangerous practice) needs p(no) >= this.",
    )
    stance_max_entropy: float = Field(
        default=0.8, ge=0, le=1, description="A confident stance needs normalised entropy <= this."
    )
    request_safety: RequestSafetyConfig = Field(default_factory=RequestSafetyConfig)
    hra_risk: HRARiskConfig = Field(default_factory=HRARiskConfig)
    self_check: SelfCheckConfig = Field(default_factory=SelfCheckConfig)
    trim: TrimConfig = Field(default_factory=TrimConfig)

    def spec(self, role: str, default: str) -> str:
        """The model spec for ``role`` (controller, generator, sra, hra, stance)."""
        value: str | None = getattr(self, f"{role}_model")
        if value:
            return value
        if default == DEFAULT_MODEL:
            return DEFAULT_ROLE_MODELS.get(role, default)
        return default


#: Settings that say where things run and are kept, not how a case is decided.
OPERATIONAL_SETTINGS = frozenset(
    {"store", "server", "log", "cache_dir", "data_dir", "recordings_dir"}
)


class MedgateConfig(BaseSettings):
    """All of medgate's settings in one place."""

    model_config = SettingsConfigDict(
        env_prefix="MEDGATE_",
        env_nested_delimiter="__",
        extra="forbid",
        toml_file=None,
    )

    model: str = Field(
        default=DEFAULT_MODEL,
        description="Answering model: 'embedded:NAME', a .gguf path, 'hf:ORG/NAME', "
        "'openai:MODEL', or 'fake'.",
    )
    orchestrator_model: str | None = Field(
        default=None,
        description="Orchestrator/agent model; None: the answering model (`model`), whatever "
        "sets it.",
    )
    profile: str = Field(
        default="route",
        description="Which pipeline `medgate.pipeline.build_gate` assembles (see its PROFILES): "
        "'route' (closed research questions to HRS, patient questions to CareGuard), 'hrs', "
        "'careguard' or 'full'.",
    )
    backend: BackendOptions = Field(default_factory=BackendOptions)
    hrs: HRSConfig = Field(default_factory=HRSConfig)
    claims: ClaimsConfig = Field(default_factory=ClaimsConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    server: ServerConfig = Field(default_factory=ServerConfig)

    careguard: CareGuardConfig = Field(default_factory=CareGuardConfig)
    log: CaseLogConfig = Field(default_factory=CaseLogConfig)
    extensions: dict[str, dict[str, JsonValue]] = Field(
        default_factory=dict,
        description="One settings section per plugin component, by the component's name "
        "([extensions.NAME] in TOML, MEDGATE_EXTENSIONS__NAME__KEY=...), checked against the "
        "component's own settings model when it is built (MedgateConfig.extension).",
    )
    cache_dir: Path = Field(default_factory=default_cache_dir)
    data_dir: Path = Field(default_factory=default_data_dir)
    recordings_dir: Path | None = Field(
        default_factory=default_recordings_dir,
        description="A directory of gzipped HRS recordings (one file per run, named by its spec) "
        "that recording starts from and writes back to; default: docs/results/recordings when "
        "the working directory has it, else none (recordings stay in cache_dir only).",
    )

    def extension(self, name: str, settings: type[S]) -> S:
        """The settings section ``[extensions.NAME]`` as the component's ``settings`` model,
        its defaults where the section is absent; a typo is an error that names the key."""
        try:
            return settings.model_validate(self.extensions.get(name, {}))
        except ValidationError as exc:
            raise invalid_setting(exc, f"extensions.{name}.") from None

    def digest(self) -> str:
        """sha256 of the settings that decide verdicts (models, profile, backend options, the
        stages' settings), for a case's record: where the store, service, log and directories
        are does not change a verdict and is left out (the store's URL may hold a password)."""
        deciding = self.model_dump(mode="json", exclude=set(OPERATIONAL_SETTINGS))
        text = json.dumps(deciding, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    @model_validator(mode="after")
    def _orchestrator_defaults_to_model(self) -> MedgateConfig:
        if self.orchestrator_model is None:
            # Derived, not set: written past __setattr__ so that it stays out of
            # model_fields_set, and a later change of `model` carries it along.
            self.__dict__["orchestrator_model"] = self.model
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        path = config_file()
        if path is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)


def config_file() -> Path | None:
    """The TOML file in force, if any: ``MEDGATE_CONFIG`` or ``./medgate.toml``."""
    named = os.environ.get("MEDGATE_CONFIG")
    if named:
        path = Path(named)
        if not path.is_file():
            raise ConfigError(f"MEDGATE_CONFIG names {path}, which is not a file")
        return path
    local = Path("medgate.toml")
    return local if local.is_file() else None


def invalid_setting(exc: ValidationError, prefix: str = "") -> ConfigError:
    """The first invalid setting pydantic found, by its dotted name, as a ConfigError."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    message = str(first["msg"]).removeprefix("Value error, ")
    return ConfigError(f"invalid setting {prefix}{where}: {message}")


def load_config(**overrides: Any) -> MedgateConfig:
    """Build the configuration; ``overrides`` (e.g. CLI flags) win over file and environment.

    Nested sections merge key by key, so ``hrs={"tau_e": 0.8}`` keeps the other HRS settings.
    Only settings given somewhere count as set (``model_fields_set``), so the result still tells
    an explicit value from a default one. An invalid setting, from any source, is a ConfigError
    naming it.
    """
    try:
        return _merged_config(overrides)
    except ValidationError as exc:
        raise invalid_setting(exc) from None


def _merged_config(overrides: dict[str, Any]) -> MedgateConfig:
    base = MedgateConfig()
    if not overrides:
        return base
    merged = base.model_dump(exclude_unset=True)
    for key, value in overrides.items():
        if value is None:
            continue
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return MedgateConfig.model_validate(merged)
