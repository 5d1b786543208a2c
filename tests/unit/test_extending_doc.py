"""docs/extending.md runs: its example package is built from the page and every component in it
is registered and used the way the page says."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from medgate.backends.base import ChatMessage
from medgate.backends.pool import ModelPool
from medgate.backends.registry import create_model
from medgate.careguard.evaluators import JUDGES, JudgeOutcome
from medgate.careguard.records import Draft
from medgate.careguard.triage import no_triage
from medgate.config import load_config
from medgate.eval.data import DATASETS, dataset_split
from medgate.events import DecisionEvent, Event
from medgate.hrs.signals import ModelRun, SignalContext, build_signals
from medgate.pipeline import PROFILES, build_gate
from medgate.records import Case, LabelSet, Status
from tests.plugins import install_plugin
from tests.unit.server.service_gate import real_gate

DOC = Path(__file__).resolve().parents[2] / "docs" / "extending.md"
BLOCK = re.compile(r"```(python|toml)\n# (\S+)\n(.*?)```", re.DOTALL)


@pytest.fixture
def example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The example package, installed from the page; returns the files it wrote."""
    files: dict[str, str] = {}
    entry_points: dict[str, dict[str, str]] = {}
    for language, name, code in BLOCK.findall(DOC.read_text(encoding="utf-8")):
        if language == "toml":
            entry_points = tomllib.loads(code)["project"]["entry-points"]
            continue
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code, encoding="utf-8")
        files[name] = code
    (tmp_path / "medgate_example" / "__init__.py").write_text("")
    install_plugin(tmp_path, "medgate-example", entry_points)
    monkeypatch.syspath_prepend(str(tmp_path))
    return files


def test_the_page_has_a_recipe_for_each_kind(example: dict[str, str]) -> None:
    assert set(example) == {
        f"medgate_example/{m}.py" for m in ("backend", "signal", "judge", "dataset", "gate")
    }


@pytest.mark.skipif(shutil.which("cat") is None, reason="needs a `cat` program")
@pytest.mark.usefixtures("example")
def test_the_backend_chats_through_a_program() -> None:
    model = create_model(f"cmd:{shutil.which('cat')}", load_config(model="fake"))
    reply = model.chat([ChatMessage(role="user", content="hello")], role="sra")
    assert reply.text == "user: hello" and reply.usage.role == "sra"


@pytest.mark.usefixtures("example")
def test_the_signal_joins_the_hrs_signals() -> None:
    (signal,) = build_signals(["hedging"])
    run = ModelRun(
        answer="yes", distribution={"yes": 1.0}, reasoning="It may possibly help, perhaps."
    )
    value = signal.compute(run, SignalContext())
    assert value.value is not None and 0 < value.value <= 1
    assert signal.compute(run.model_copy(update={"reasoning": ""}), SignalContext()).value is None


@pytest.mark.usefixtures("example")
def test_the_judge_reads_its_settings_and_assesses_drafts() -> None:
    config = load_config(model="fake", extensions={"absolutes": {"threshold": 2}})
    judge = JUDGES.load("absolutes")(config, ModelPool(config))
    assert judge.threshold == 2
    assert judge.ask(Case(question="q?"), no_triage(), Draft(text="t")) is None  # asks no model
    assessment = judge.assess(JudgeOutcome(), no_triage(), Draft(text="It is always fine."), 0)
    assert assessment.score == 4 and "always" in assessment.rule_findings[0]


@pytest.mark.usefixtures("example")
def test_the_dataset_is_split_like_medgates_own(tmp_path: Path) -> None:
    ward = tmp_path / "data" / "ward"
    ward.mkdir(parents=True)
    rows = [
        {"id": f"w{i}", "question": f"Question {i}?", "label": "yes" if i % 3 else "no"}
        for i in range(100)
    ]
    (ward / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert DATASETS.load("ward-questions").labels is LabelSet.YES_NO
    split = dataset_split("ward-questions", tmp_path / "data")
    assert (len(split.train), len(split.test)) == (80, 20)


@pytest.mark.usefixtures("example")
def test_the_gate_is_a_profile_that_holds_watched_medicines() -> None:
    assert "watch_list" in PROFILES.names()
    assert build_gate(load_config(model="fake", profile="watch_list")) is not None
    from medgate_example.gate import WatchListGate  # type: ignore[import-not-found]

    events: list[Event] = []
    gate = WatchListGate(real_gate(), ["warfarin"])
    case = Case(question="Is warfarin an anticoagulant?", labels=LabelSet.YES_NO)
    verdict = gate.check(case, events.append)
    assert verdict.status is Status.ESCALATED and verdict.held_back is not None
    assert verdict.trace.stages["watch_list"].data == {"named": ["warfarin"]}  # type: ignore[union-attr]
    decisions = [e for e in events if isinstance(e, DecisionEvent)]
    assert decisions == [events[-1]] and decisions[0].stage == "watch_list"
    other = gate.check(Case(question="Is aspirin an antiplatelet drug?", labels=LabelSet.YES_NO))
    assert other.status is Status.RELEASED


def test_the_recipes_pass_the_projects_lint(example: dict[str, str], tmp_path: Path) -> None:
    ruff = Path(sys.executable).parent / "ruff"
    if not ruff.exists():
        pytest.skip("ruff is not installed beside the interpreter")
    package = tmp_path / "medgate_example"
    # As a plugin's own project sees it: medgate is a third-party package there.
    rules = ["--isolated", "--line-length", "100", "--select", "E,F,W,I,B,UP,SIM,RUF"]
    done = subprocess.run(
        [str(ruff), "check", "--no-cache", *rules, str(package)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout
