"""Components are found by name through entry points, medgate's own and a plugin's alike."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from medgate.backends.pool import ModelPool
from medgate.backends.registry import BACKENDS
from medgate.config import load_config
from medgate.errors import ConfigError, PrerequisiteError
from medgate.eval.data import DATASETS, dataset_split
from medgate.hrs.build import build_hrs_gate
from medgate.hrs.orchestrator import ORCHESTRATORS, ModelOrchestrator, RetrievalOrchestrator
from medgate.hrs.signals import SIGNALS, build_signals
from medgate.pipeline import PROFILES, build_gate
from medgate.plugins import Registry
from medgate.records import Case, LabelSet
from tests.plugins import install_plugin

PLUGIN = """
from typing import ClassVar, Literal

from medgate.events import DecisionEvent, GateDecision, discard
from medgate.eval.data import EvalItem
from medgate.hrs.orchestrator import Action, OrchestratorStep
from medgate.hrs.signals import Need
from medgate.records import LabelSet, SignalValue, Status
from medgate.verdict import ExtensionReport, Trace, Verdict


class LengthOfAnswer:
    name: ClassVar[str] = "answer_chars"
    needs: ClassVar[frozenset[Need]] = frozenset({Need.REASONING})
    layer: ClassVar[Literal["decision", "guidance"]] = "guidance"
    meaning: ClassVar[str] = "characters of reasoning"

    def compute(self, run, ctx):
        value = min(1.0, len(run.reasoning) / 1000)
        return SignalValue(name=self.name, value=value, layer=self.layer)


class Misnamed(LengthOfAnswer):
    name: ClassVar[str] = "something_else"


class Silent:
    name = "silent"

    def step(self, case, history):
        return OrchestratorStep(action=Action.ABSTAIN, rationale="nothing to add")


def silent(config, pool):
    return Silent()


class Refuser:
    def check(self, case, events=discard):
        decided = GateDecision(status=Status.BLOCKED, reason="no")
        events(DecisionEvent(stage="refuser", data=decided))
        report = ExtensionReport(stage="refuser", data={"why": "always"})
        trace = Trace(stages={"refuser": report})
        return Verdict(status=Status.BLOCKED, reason="no", case=case, trace=trace)


def refuser(config, pool):
    return Refuser()


class Tiny:
    name = "tiny"
    labels = LabelSet.YES_NO
    train_size = 4
    test_size = 2
    description = "six items written for this test"

    def load(self, data_dir):
        return [
            EvalItem(id=f"t{i}", question=f"Is {i} even?", gold="yes" if i % 2 == 0 else "no",
                     labels=LabelSet.YES_NO)
            for i in range(6)
        ]


TINY = Tiny()
"""


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "medgate_testplugin.py").write_text(textwrap.dedent(PLUGIN))
    install_plugin(
        tmp_path,
        "medgate-testplugin",
        {
            "medgate.signals": {
                "answer_chars": "medgate_testplugin:LengthOfAnswer",
                "misnamed": "medgate_testplugin:Misnamed",
            },
            "medgate.orchestrators": {"silent": "medgate_testplugin:silent"},
            "medgate.profiles": {"refuser": "medgate_testplugin:refuser"},
            "medgate.backends": {"broken": "medgate_testplugin_missing:Backend"},
            "medgate.datasets": {"tiny": "medgate_testplugin:TINY"},
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))


def test_medgate_registers_its_own_components_through_entry_points() -> None:
    assert {"route", "hrs", "careguard", "full"} <= set(PROFILES.names())
    assert {"entropy", "perplexity", "ambiguity", "rarity", "token_length"} <= set(SIGNALS.names())
    assert {"self", "retrieval"} <= set(ORCHESTRATORS.names())
    assert {"fake", "llamacpp", "embedded", "hf", "openai"} <= set(BACKENDS.names())
    assert {"pubmedqa-l", "pubmedqa-a", "bioasq"} <= set(DATASETS.names())
    assert DATASETS.load("bioasq").labels is LabelSet.YES_NO
    assert PROFILES.targets()["route"] == "medgate.pipeline:build_routing_gate"


def test_an_unknown_name_is_a_clear_error_listing_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown profile 'nope'; known: careguard, full"):
        build_gate(load_config(model="fake", profile="nope"))
    empty: Registry[object] = Registry("medgate.nothing", "widget")
    with pytest.raises(ConfigError, match="known: none"):
        empty.load("x")


@pytest.mark.usefixtures("plugin")
def test_a_plugins_profile_is_built_like_medgates_own() -> None:
    gate = build_gate(load_config(model="fake", profile="refuser"))
    verdict = gate.check(Case(question="Is it safe?"))
    assert verdict.trace.stages["refuser"].data == {"why": "always"}


@pytest.mark.usefixtures("plugin")
def test_a_plugins_signal_and_orchestrator_join_the_hrs_gate() -> None:
    assert [s.name for s in build_signals(["entropy", "answer_chars"])] == [
        "entropy",
        "answer_chars",
    ]
    config = load_config(model="fake", hrs={"knowledge": "silent"})
    gate = build_hrs_gate(config, ModelPool(config))
    assert gate.orchestrator.name == "silent"
    with pytest.raises(ConfigError, match="calls itself 'something_else'"):
        build_signals(["misnamed"])


@pytest.mark.usefixtures("plugin")
def test_a_plugins_dataset_is_split_like_medgates_own(tmp_path: Path) -> None:
    split = dataset_split("tiny", tmp_path)
    assert len(split.test) == 2 and len(split.train) == 4
    assert {i.gold for i in split.test} == {"yes", "no"}  # stratified


@pytest.mark.usefixtures("plugin")
def test_a_plugin_that_cannot_be_imported_says_what_to_install() -> None:
    with pytest.raises(PrerequisiteError, match=r"pip install 'medgate\[broken\]'"):
        BACKENDS.load("broken")


def test_hrs_knowledge_names_an_orchestrator(tmp_path: Path) -> None:
    config = load_config(model="fake")
    assert isinstance(build_hrs_gate(config).orchestrator, ModelOrchestrator)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "d1", "text": "Aspirin inhibits platelet aggregation."}\n')
    retrieval = load_config(model="fake", hrs={"knowledge": "retrieval", "corpus": str(corpus)})
    assert isinstance(build_hrs_gate(retrieval).orchestrator, RetrievalOrchestrator)
    with pytest.raises(ConfigError, match="needs a corpus"):
        build_hrs_gate(load_config(model="fake", hrs={"knowledge": "retrieval"}))
