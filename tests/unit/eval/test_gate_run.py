"""A gate profile evaluated on a registered dataset: a case record per item in a resumable run
log, and a summary recomputed from it (a scripted profile and dataset, registered as plugins)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from medgate.config import load_config
from medgate.eval.gate_run import GateItem, evaluate_gate, read_run, summarise
from medgate.hrs.decision import HRSReport
from tests.plugins import install_plugin

PLUGIN = """
from medgate.eval.data import EvalItem
from medgate.records import LabelSet

QUESTIONS = [
    ("q1", "Is aspirin an antiplatelet drug?", "yes"),
    ("q2", "Is warfarin an antibiotic?", "no"),
    ("q3", "Does drug X lower mortality?", "no"),
    ("q4", "Is metformin used in diabetes?", "yes"),
    ("q5", "Is insulin a vitamin?", "no"),
]


class Scripted:
    name = "scripted-questions"
    labels = LabelSet.YES_NO
    train_size = 2
    test_size = 3
    description = "questions the scripted answerer is sure of, but one on mortality"

    def load(self, data_dir):
        return [
            EvalItem(id=i, question=q, context="An abstract.", gold=g, labels=LabelSet.YES_NO)
            for i, q, g in QUESTIONS
        ]


SCRIPTED = Scripted()
"""


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "medgate_gaterun_plugin.py").write_text(textwrap.dedent(PLUGIN))
    install_plugin(
        tmp_path,
        "medgate-gaterun-plugin",
        {
            "medgate.datasets": {"scripted-questions": "medgate_gaterun_plugin:SCRIPTED"},
            "medgate.profiles": {"scripted": "tests.unit.server.service_gate:scripted_profile"},
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))


@pytest.mark.usefixtures("plugin")
def test_every_item_gets_a_case_record_in_a_resumable_log(tmp_path: Path) -> None:
    config = load_config(model="fake", profile="scripted", cache_dir=str(tmp_path / "cache"))
    seen: list[GateItem] = []
    items, log = evaluate_gate(config, "scripted-questions", "test", on_item=seen.append)
    assert len(items) == 3 and seen == items
    for item in items:
        record = item.record
        assert record.run.entry == "eval" and record.run.profile == "scripted"
        assert record.case.labels is not None and item.gold not in record.case.question
        assert record.verdict.trace.report(HRSReport) is not None
    summary = summarise(items)
    assert summary.items == 3 and summary.released + summary.statuses["escalated"] == 3
    assert summary.correct == sum(1 for i in items if i.correct)
    # run again: everything is read back from the log, nothing is checked again
    again, same = evaluate_gate(config, "scripted-questions", "test", on_item=seen.append)
    assert same.path == log.path and len(seen) == 3 and again == items
    assert read_run(log.path) == items
    assert summarise(read_run(log.path)) == summary


@pytest.mark.usefixtures("plugin")
def test_a_released_answer_is_scored_against_the_gold_label(tmp_path: Path) -> None:
    config = load_config(model="fake", profile="scripted", cache_dir=str(tmp_path / "cache"))
    items, _ = evaluate_gate(config, "scripted-questions", "train")
    by_id = {i.item_id: i for i in items}
    for item in by_id.values():
        answer = item.record.verdict.answer
        if item.record.status.answers_user:
            assert item.correct is (answer == item.gold)
        else:
            assert item.correct is None
