"""CareGuard's judges are a list of registered judges, each returning an Assessment; a plugin's
judge, with its own settings section, joins the list like medgate's own."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from medgate.backends.pool import ModelPool
from medgate.careguard import HallucinationJudge, SafetyJudge
from medgate.careguard.evaluators import JUDGES, Evaluators
from medgate.careguard.gate import CareGuardGate
from medgate.careguard.generator import Generator
from medgate.careguard.records import CareGuardReport, Round
from medgate.careguard.triage import Controller
from medgate.config import CareGuardConfig, load_config
from medgate.errors import ConfigError
from medgate.events import EVENTS, JudgeScores, SafetyEvent
from medgate.records import Status
from tests.plugins import install_plugin
from tests.unit.test_careguard_gate import SAFE_TEXT, Rig, resumed, verdict_json

PLUGIN = '''
from medgate.careguard.evaluators import JudgeOutcome
from medgate.careguard.records import Assessment
from medgate.config import Section


class AbsolutesSettings(Section):
    threshold: int = 1


class Absolutes:
    """Flags drafts that speak in absolutes; asks no model."""

    name = "absolutes"
    model_name = None

    def __init__(self, threshold):
        self.threshold = threshold

    def ask(self, case, triage, draft):
        return None  # this judge asks no model

    def assess(self, outcome, triage, draft, claims_penalty):
        found = [w for w in ("always", "never", "completely safe") if w in draft.text.lower()]
        return Assessment(evaluator=self.name, score=4 if found else 1, rule_findings=found)


def absolutes(config, pool):
    settings = config.extension("absolutes", AbsolutesSettings)
    return Absolutes(settings.threshold)
'''


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "medgate_judgeplugin.py").write_text(textwrap.dedent(PLUGIN))
    install_plugin(
        tmp_path,
        "medgate-judgeplugin",
        {"medgate.judges": {"absolutes": "medgate_judgeplugin:absolutes"}},
    )
    monkeypatch.syspath_prepend(str(tmp_path))


def gate_with(rig: Rig, *extra: object) -> CareGuardGate:
    judges = [SafetyJudge(rig.sra_model), HallucinationJudge(rig.hra_model), *extra]
    return CareGuardGate(
        Controller(rig.controller_model),
        Generator(rig.generator_model),
        Evaluators(judges),  # type: ignore[arg-type]
        CareGuardConfig(max_refinements=1),
    )


def test_medgate_registers_its_own_judges() -> None:
    assert {"sra", "hra"} <= set(JUDGES.names())
    config = load_config(model="fake")
    assert config.careguard.judges == ["sra", "hra"]
    judge = JUDGES.load("hra")(config, ModelPool(config))
    assert isinstance(judge, HallucinationJudge) and judge.threshold == 2


@pytest.mark.usefixtures("plugin")
def test_a_plugin_judge_with_its_own_settings_joins_the_list() -> None:
    config = load_config(model="fake", extensions={"absolutes": {"threshold": 3}})
    judge = JUDGES.load("absolutes")(config, ModelPool(config))
    assert judge.threshold == 3
    rig = Rig().drafts(f"It is always fine. {SAFE_TEXT}", SAFE_TEXT)
    rig.sra(verdict_json(1)).hra(verdict_json(1))
    strict = JUDGES.load("absolutes")(load_config(model="fake"), ModelPool(config))
    verdict = gate_with(rig, strict).check(resumed())
    assert verdict.status is Status.REFINED  # the first draft failed the plugin judge alone
    report = verdict.trace.report(CareGuardReport)
    assert report is not None and report.judges == {"sra": "sra", "hra": "hra", "absolutes": None}
    first, second = report.rounds
    assert list(first.assessments) == ["sra", "hra", "absolutes"]
    assert first.assessments["absolutes"].score == 4 and not first.passed
    assert second.assessments["absolutes"].score == 1 and second.passed
    assert "always" in rig.generator_prompts[1]  # its findings are fed back like the others'
    assert verdict.signals["absolutes"].value == 0.0
    assert "SRA 1, HRA 1 and ABSOLUTES 1 are within the release thresholds" in verdict.reason


@pytest.mark.usefixtures("plugin")
def test_a_typo_in_a_plugins_settings_section_names_the_key() -> None:
    config = load_config(model="fake", extensions={"absolutes": {"treshold": 3}})
    with pytest.raises(ConfigError, match=r"extensions\.absolutes\.treshold"):
        JUDGES.load("absolutes")(config, ModelPool(config))


def test_an_invalid_setting_from_any_source_is_a_config_error_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ConfigError, match=r"invalid setting server\.port: .*greater than"):
        load_config(model="fake", server={"port": -1})
    monkeypatch.setenv("MEDGATE_BACKEND__N_THREADS", "many")
    with pytest.raises(ConfigError, match=r"invalid setting backend\.n_threads: .*integer"):
        load_config()


def test_the_careguard_profile_builds_the_configured_judges() -> None:
    config = load_config(model="fake", careguard={"judges": ["hra"]})
    from medgate.pipeline import build_gate

    gate = build_gate(config.model_copy(update={"profile": "careguard"}))
    assert isinstance(gate, CareGuardGate) and gate.evaluators.models == {"hra": "fake"}
    off = load_config(model="fake", profile="careguard", careguard={"use_sra": False})
    assert build_gate(off).evaluators.models == {"sra": None, "hra": "fake"}  # type: ignore[attr-defined]


def test_records_of_the_two_judge_shape_still_read() -> None:
    one = {"evaluator": "sra", "score": 2}
    two = {"evaluator": "hra", "score": 1}
    old = {
        "iteration": 0,
        "draft": {"text": "t"},
        "sra": one,
        "hra": two,
        "claims": {},
        "passed": True,
    }
    round_ = Round.model_validate(old)
    assert list(round_.assessments) == ["sra", "hra"] and round_.sra.score == 2
    event = {"kind": "safety", "stage": "careguard", "data": {"sra": one, "hra": two, "passed": 1}}
    (read,) = EVENTS.validate_python([event])
    assert isinstance(read, SafetyEvent) and isinstance(read.data, JudgeScores)
    assert read.data.assessments["hra"].score == 1
    report = CareGuardReport.model_validate(
        {"outcome": "released", "generator": "g", "sra_model": "m", "hra_model": None}
    )
    assert report.judges == {"sra": "m", "hra": None}


def test_the_safety_judge_sees_the_request_screens_score_and_the_other_judge_does_not() -> None:
    from medgate.careguard.categories import RiskCategory
    from medgate.careguard.evaluators import judge_messages
    from medgate.careguard.records import Draft, Evaluator, RequestSafety, Triage
    from medgate.records import Case

    safety = RequestSafety(score=0.41, threshold=0.7, harmful=False, artifact="rs v2")
    triage = Triage(
        category=RiskCategory.GENERAL,
        categories=[RiskCategory.GENERAL],
        request_safety=safety,
    )
    case, draft = Case(question="Write a note for a patient."), Draft(text="Here it is.")
    sra = judge_messages(Evaluator.SRA, "rubric", case, triage, draft)[1].content
    assert "0.41" in sra and "refuses at 0.70" in sra
    hra = judge_messages(Evaluator.HRA, "rubric", case, triage, draft)[1].content
    assert "0.41" not in hra
    unscreened = triage.model_copy(update={"request_safety": None})
    assert "screen" not in judge_messages(Evaluator.SRA, "r", case, unscreened, draft)[1].content
