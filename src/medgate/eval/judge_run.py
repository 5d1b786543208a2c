"""Measuring CareGuard's model roles (controller, SRA and HRA judges) on one model or another.

Every call is scored against labels assigned by hand, never against medgate's own rules:

* SRA and HRA judge the **hand-labelled drafts**: the released answers labelled in
  ``docs/results/careguard_labels.jsonl`` (already passed by the judges of their run, so they
  are a selected sample) and the first drafts of the dangerous-practice runs labelled in
  ``docs/results/judge_labels.jsonl`` (drafts no judge had filtered). A label names the exact
  text it judged by its sha256; a draft whose text no longer matches is left out and counted.
  A draft is read from its run log: the text shown (id ``ID``) or round N's draft from the
  case record (id ``ID#draftN``); the judge sees the question and the triage categories the run
  recorded, as it did in the gate.
* The controller classifies the **requests of CareGuard's request sets**, each written with its
  expected category before any run (:class:`~medgate.careguard.datasets.CareItem`).

The roles are the gate's own classes (:class:`~medgate.careguard.evaluators.SafetyJudge`,
:class:`~medgate.careguard.evaluators.HallucinationJudge`,
:class:`~medgate.careguard.triage.Controller`) with the configured token budgets and seed. Each
model's calls go to one run log (:mod:`medgate.eval.runlog`) named after the model, with its
spec beside it: an interrupted run resumes, a run under other settings is refused, and every
figure of the report is recomputed from the committed per-call records.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from medgate.backends.base import LanguageModel, WhiteBoxModel
from medgate.backends.pool import forget_prompts
from medgate.backends.structured import ReplyFormatError
from medgate.careguard.categories import RiskCategory
from medgate.careguard.datasets import CareItem
from medgate.careguard.evaluation import ItemResult, spread
from medgate.careguard.evaluators import (
    HallucinationJudge,
    JudgeOutcome,
    JudgeReply,
    ModelJudge,
    SafetyJudge,
)
from medgate.careguard.records import Draft, Triage
from medgate.careguard.triage import Controller
from medgate.config import MedgateConfig
from medgate.errors import ModelError
from medgate.eval.care_labels import HandLabel, LabelKey, load_labels, shown_sha256
from medgate.eval.care_run import CareRunSpec, care_dataset, read_runs
from medgate.eval.runlog import RunLog, matching_log
from medgate.records import Case, Record

Role = Literal["controller", "sra", "hra"]
ROLES: tuple[Role, ...] = ("controller", "sra", "hra")

#: Where the committed per-call logs live (relative to the working directory, like --out).
DEFAULT_JUDGE_RUNS = Path("docs/results/judges_runs")

#: The label files read by default: released answers, then first drafts.
DEFAULT_LABEL_FILES = (
    Path("docs/results/careguard_labels.jsonl"),
    Path("docs/results/judge_labels.jsonl"),
)

#: The run-log folders whose texts the labels name.
DEFAULT_CARE_RUNS = (
    Path("docs/results/careguard_runs"),
    Path("docs/results/careguard_runs_release"),
)

#: The controller's request sets and how many of each (None: all; else evenly spaced or
#: round-robin over categories, as ``medgate eval care --limit`` takes them).
DEFAULT_REQUESTS: tuple[tuple[str, str | None, int | None], ...] = (
    ("patient-questions", None, 10),
    ("medsafetybench", "all", 6),
)

_DRAFT_ID = re.compile(r"^(?P<id>.+)#draft(?P<round>\d+)$")


class LabelledDraft(Record):
    """One draft a person labelled, with what the judge is shown."""

    key: str = Field(description="'RUN/ID', the label's run and id.")
    question: str
    categories: list[RiskCategory] = Field(description="The triage categories the run recorded.")
    text: str
    harmful: bool
    wrong: bool
    degenerate: bool
    labeller: str
    selected: bool = Field(
        description="True for a released answer (the run's judges had passed it); False for a "
        "first draft no judge had filtered."
    )

    @property
    def flawed(self) -> bool:
        """Wrong or degenerate: what the HRA judge should see."""
        return self.wrong or self.degenerate


class LabelledRequest(Record):
    """One request with the category it was written for."""

    key: str = Field(description="'DATASET/ID'.")
    question: str
    expected: RiskCategory
    kind: str


class DraftSelection(Record):
    """The labelled drafts found, and the labels left out because their text changed or is
    missing."""

    drafts: list[LabelledDraft]
    stale: list[str] = Field(default_factory=list)


def _draft_text(result: ItemResult, draft_round: int | None) -> str | None:
    if draft_round is None:
        return result.shown
    if result.record is None:
        return None
    stage: Any = result.record.model_dump(mode="json")["verdict"]["trace"]["stages"]
    rounds = (stage.get("careguard") or {}).get("rounds") or []
    if draft_round >= len(rounds):
        return None
    text = (rounds[draft_round].get("draft") or {}).get("text")
    return text if isinstance(text, str) else None


def labelled_drafts(
    label_files: Sequence[Path], run_dirs: Sequence[Path], data_dir: Path
) -> DraftSelection:
    """Every hand-labelled draft whose text is still the one its label judged."""
    labels: dict[LabelKey, HandLabel] = {}
    for path in label_files:
        labels.update(load_labels(path))
    runs: dict[str, tuple[CareRunSpec, list[ItemResult]]] = {}
    for folder in run_dirs:
        if folder.is_dir():
            runs.update(read_runs(folder))
    questions: dict[str, dict[str, str]] = {}
    drafts: list[LabelledDraft] = []
    stale: list[str] = []
    seen: set[str] = set()
    for (run, item_id, _), label in labels.items():
        key = f"{run}/{item_id}"
        match = _DRAFT_ID.match(item_id)
        base_id = match.group("id") if match else item_id
        draft_round = int(match.group("round")) if match else None
        found = runs.get(run)
        result = next((r for r in found[1] if r.id == base_id), None) if found else None
        text = _draft_text(result, draft_round) if result is not None else None
        if (
            result is None
            or found is None
            or text is None
            or shown_sha256(text) != label.shown_sha256
        ):
            stale.append(key)
            continue
        if label.shown_sha256 in seen:  # the same text labelled twice is judged once
            continue
        seen.add(label.shown_sha256)
        question = result.question
        if not question:
            spec = found[0]
            if run not in questions:
                items = care_dataset(spec.dataset).load(data_dir, spec.split)
                questions[run] = {i.id: i.question for i in items}
            question = questions[run].get(base_id, "")
        drafts.append(
            LabelledDraft(
                key=key,
                question=question,
                categories=[RiskCategory(c) for c in result.triage_categories]
                or [RiskCategory.GENERAL],
                text=text,
                harmful=label.harmful,
                wrong=label.wrong,
                degenerate=label.degenerate,
                labeller=label.labeller,
                selected=draft_round is None,
            )
        )
    return DraftSelection(drafts=sorted(drafts, key=lambda d: d.key), stale=sorted(stale))


def labelled_requests(
    sets: Sequence[tuple[str, str | None, int | None]], data_dir: Path
) -> list[LabelledRequest]:
    """The requests of each (dataset, split, limit), taken as ``medgate eval care`` takes them,
    the sets interleaved (one request of each in turn) so that every prefix has some of each."""
    per_set: list[list[LabelledRequest]] = []
    for name, split, limit in sets:
        source = care_dataset(name)
        items: list[CareItem] = spread(
            source.load(data_dir, split or source.splits[0]), limit, source.by_category
        )
        per_set.append(
            [
                LabelledRequest(
                    key=f"{name}/{i.id}", question=i.question, expected=i.category, kind=i.kind
                )
                for i in items
            ]
        )
    depth = max((len(s) for s in per_set), default=0)
    return [s[i] for i in range(depth) for s in per_set if i < len(s)]


class RoleCall(Record):
    """One model call in one role, with the hand label it is scored against."""

    item_id: str = Field(description="'ROLE/KEY'.")
    role: Role
    key: str
    model: str
    score: int | None = Field(default=None, description="The judge's own score, 1-5.")
    gate_score: int | None = Field(
        default=None,
        description="SRA as the gate scores it: the judge's score floored by the category "
        "rules (a failed judge counts 5).",
    )
    category: RiskCategory | None = Field(
        default=None, description="The controller model's category (None: not asked or failed)."
    )
    categories: list[RiskCategory] = Field(
        default_factory=list, description="The controller's triage: rules plus model."
    )
    rules_categories: list[RiskCategory] = Field(
        default_factory=list, description="The triage of the rules alone."
    )
    asked: bool = Field(default=True, description="False when the rules decided without it.")
    parse_failed: bool = Field(
        default=False, description="The model's reply did not validate (or no reply came)."
    )
    error: str | None = None
    seconds: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    harmful: bool | None = None
    flawed: bool | None = Field(default=None, description="Labelled wrong or degenerate.")
    selected: bool | None = None
    expected: RiskCategory | None = None
    kind: str | None = None


class JudgeRunSpec(Record):
    """Everything that decides one model's calls, written beside its log."""

    model: str
    name: str
    fingerprint: str | None
    seed: int
    judge_max_tokens: int
    triage_max_tokens: int
    sra_threshold: int
    model_short_circuit: bool


def run_spec(config: MedgateConfig, spec: str, model: LanguageModel) -> JudgeRunSpec:
    cg = config.careguard
    return JudgeRunSpec(
        model=spec,
        name=model.name,
        fingerprint=model.fingerprint if isinstance(model, WhiteBoxModel) else None,
        seed=cg.seed,
        judge_max_tokens=cg.judge_max_tokens,
        triage_max_tokens=cg.triage_max_tokens,
        sra_threshold=cg.sra_threshold,
        model_short_circuit=cg.model_short_circuit,
    )


def log_path(runs: Path, spec: str) -> Path:
    """The run log of the model ``spec``: its spec with anything but [A-Za-z0-9._-] as '-'."""
    return runs / (re.sub(r"[^A-Za-z0-9._-]+", "-", spec).strip("-") + ".jsonl")


def open_log(runs: Path, spec: JudgeRunSpec) -> RunLog[RoleCall]:
    """The model's log; refuses to resume one recorded under other settings."""
    return matching_log(log_path(runs, spec.model), RoleCall, spec)


def _failure(exc: Exception) -> tuple[bool, str]:
    return isinstance(exc, ReplyFormatError | ModelError), f"{type(exc).__name__}: {exc}"


def judge_call(judge: ModelJudge, role: Role, draft: LabelledDraft) -> RoleCall:
    """One judge's assessment of one labelled draft, timed."""
    case = Case(question=draft.question)
    triage = Triage(category=draft.categories[0], categories=draft.categories)
    shown = Draft(text=draft.text)
    replied: JudgeReply | None = None
    error: str | None = None
    parse_failed = False
    usage = None
    t0 = time.perf_counter()
    try:
        replied, usage = judge.ask(case, triage, shown)
    except Exception as exc:  # scored as the gate scores a failed judge
        parse_failed, error = _failure(exc)
    seconds = time.perf_counter() - t0
    gate_score = None
    if isinstance(judge, SafetyJudge):
        outcome = JudgeOutcome(reply=replied, error=error)
        gate_score = judge.assess(outcome, triage, shown, 0).score
    return RoleCall(
        item_id=f"{role}/{draft.key}",
        role=role,
        key=draft.key,
        model=judge.model.name,
        score=replied.score if replied else None,
        gate_score=gate_score,
        parse_failed=parse_failed,
        error=error,
        seconds=seconds,
        prompt_tokens=usage.prompt_tokens if usage else None,
        completion_tokens=usage.completion_tokens if usage else None,
        harmful=draft.harmful,
        flawed=draft.flawed,
        selected=draft.selected,
    )


def controller_call(
    controller: Controller, rules: Controller, request: LabelledRequest
) -> RoleCall:
    """The controller's triage of one request (rules plus model), timed, beside the rules'."""
    case = Case(question=request.question)
    t0 = time.perf_counter()
    triage = controller.triage(case)
    seconds = time.perf_counter() - t0
    alone = rules.triage(case)
    asked = triage.usage is not None or triage.model_error is not None
    failed = triage.model_categories is None and triage.model_error is not None
    category = triage.model_categories[0] if triage.model_categories else None
    return RoleCall(
        item_id=f"controller/{request.key}",
        role="controller",
        key=request.key,
        model=controller.name,
        category=category,
        categories=triage.categories,
        rules_categories=alone.categories,
        asked=asked,
        parse_failed=failed,
        error=triage.model_error,
        seconds=seconds if asked else 0.0,
        prompt_tokens=triage.usage.prompt_tokens if triage.usage else None,
        completion_tokens=triage.usage.completion_tokens if triage.usage else None,
        expected=request.expected,
        kind=request.kind,
    )


def evaluate_model(
    config: MedgateConfig,
    spec: str,
    model: LanguageModel,
    *,
    roles: Sequence[Role],
    drafts: Sequence[LabelledDraft],
    requests: Sequence[LabelledRequest],
    runs: Path = DEFAULT_JUDGE_RUNS,
    on_call: Callable[[RoleCall, int, int], None] | None = None,
) -> tuple[list[RoleCall], RunLog[RoleCall]]:
    """Every selected call of ``model`` not yet in its log, then every selected call's record.

    Each draft's SRA and HRA run in turn, as the gate asks them of a shared model."""
    cg = config.careguard
    log = open_log(runs, run_spec(config, spec, model))
    done = log.load()
    controller = Controller(
        model,
        max_tokens=cg.triage_max_tokens,
        seed=cg.seed,
        model_short_circuit=cg.model_short_circuit,
    )
    rules = Controller(None)
    judges: dict[Role, ModelJudge] = {
        "sra": SafetyJudge(
            model, threshold=cg.sra_threshold, max_tokens=cg.judge_max_tokens, seed=cg.seed
        ),
        "hra": HallucinationJudge(
            model, threshold=cg.hra_threshold, max_tokens=cg.judge_max_tokens, seed=cg.seed
        ),
    }
    plan: list[tuple[str, Callable[[], RoleCall]]] = []
    # Requests and drafts interleaved, each in its given order (balanced prefixes, see
    # pick_drafts): a run stopped early has measured every role on a balanced part.
    for i in range(max(len(requests), len(drafts))):
        if "controller" in roles and i < len(requests):
            request = requests[i]
            plan.append(
                (
                    f"controller/{request.key}",
                    lambda r=request: controller_call(controller, rules, r),  # type: ignore[misc]
                )
            )
        if i < len(drafts):
            for role in ("sra", "hra"):
                if role in roles:
                    draft, judge = drafts[i], judges[role]
                    plan.append(
                        (
                            f"{role}/{draft.key}",
                            lambda j=judge, r=role, d=draft: judge_call(j, r, d),  # type: ignore[misc]
                        )
                    )
    todo = [(item_id, call) for item_id, call in plan if item_id not in done]
    for k, (item_id, call) in enumerate(todo, 1):
        forget_prompts([model])  # a call reads the same after any other, or a resume
        record = call()
        log.append(record)
        done[item_id] = record
        if on_call is not None:
            on_call(record, k, len(todo))
    return [done[item_id] for item_id, _ in plan if item_id in done], log


def read_logs(runs: Path) -> dict[str, tuple[JudgeRunSpec, list[RoleCall]]]:
    """Every model's log in ``runs``, by model spec."""
    out: dict[str, tuple[JudgeRunSpec, list[RoleCall]]] = {}
    for path in sorted(runs.glob("*.jsonl")):
        manifest = path.with_suffix(".json")
        if not manifest.is_file():
            continue
        spec = JudgeRunSpec.model_validate_json(manifest.read_text(encoding="utf-8"))
        out[spec.model] = (spec, list(RunLog(path, RoleCall, spec).load().values()))
    return out


def pick_drafts(drafts: Sequence[LabelledDraft], limit: int | None) -> list[LabelledDraft]:
    """The drafts in a deterministic order, round-robin over the label groups (harmful, wrong
    or degenerate, released or first draft) and evenly spaced within each group, cut at
    ``limit``: every prefix represents each kind of draft."""
    groups: dict[tuple[bool, bool, bool], list[LabelledDraft]] = {}
    for draft in drafts:
        groups.setdefault((draft.harmful, draft.flawed, draft.selected), []).append(draft)
    spaced = [_evenly(g) for _, g in sorted(groups.items())]
    order: list[LabelledDraft] = []
    for i in range(max(len(g) for g in spaced)):
        order.extend(g[i] for g in spaced if i < len(g))
    return order[:limit]


def _evenly(items: Sequence[LabelledDraft]) -> list[LabelledDraft]:
    """``items`` reordered so that every prefix is spread evenly over the list (bit reversal
    of the positions): taking the first k gives k items evenly spaced."""
    n = len(items)
    bits = max(1, (n - 1).bit_length())
    order = sorted(range(n), key=lambda i: int(format(i, f"0{bits}b")[::-1], 2))
    return [items[i] for i in order]
