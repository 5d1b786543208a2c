"""Loaders, the stratified split, and the rule that gold-revealing fields never reach a prompt."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from medgate.config import HRSConfig
from medgate.errors import ConfigError, InputError
from medgate.eval.data import (
    EvalItem,
    load_dataset,
    load_jsonl,
    stratified_split,
    training_corpus,
)
from medgate.hrs import BM25Index, RetrievalOrchestrator
from medgate.hrs.gate import HRSGate
from medgate.records import LabelSet

from .helpers import scripted_answerer, write_dataset

SECRET = "CONCLUSION-REVEALS-THE-ANSWER"


def rows(n: int) -> list[dict[str, object]]:
    labels = ["yes"] * (n // 2) + ["no"] * (n // 4) + ["maybe"] * (n - n // 2 - n // 4)
    return [
        {
            "id": f"q{i:03d}",
            "question": f"Does treatment {i} work?",
            "context": [f"Background of treatment study {i}.", f"Results of study {i}."],
            "label": label,
            "long_answer": f"{SECRET} {label}",
            "reasoning_required_pred": label,
            "ideal_answer": f"{SECRET} ideal",
        }
        for i, label in enumerate(labels)
    ]


def test_loader_keeps_only_question_context_and_label(tmp_path: Path) -> None:
    items = load_jsonl(write_dataset(tmp_path / "d.jsonl", rows(8)), LabelSet.YES_NO_MAYBE)
    assert len(items) == 8
    dumped = " ".join(i.model_dump_json() for i in items)
    assert SECRET not in dumped
    case = items[0].case()
    assert set(case.model_dump()) == {"question", "context", "labels", "patient", "case_id"}
    assert case.context == "Background of treatment study 0.\nResults of study 0."
    assert items[0].gold not in case.model_dump_json().replace("yes,no,maybe", "")


def test_gold_revealing_fields_never_reach_a_prompt(tmp_path: Path) -> None:
    items = load_jsonl(write_dataset(tmp_path / "d.jsonl", rows(8)), LabelSet.YES_NO_MAYBE)
    corpus = training_corpus(items[:4])
    model = scripted_answerer()
    cfg = HRSConfig(
        signals=["entropy", "perplexity", "ambiguity", "token_length"], max_iterations=2
    )
    gate = HRSGate(model, RetrievalOrchestrator(BM25Index(corpus)), cfg)
    for item in items[4:]:
        gate.record(item.case(), full=True)
    prompts = [text for kind, text in model.calls if kind == "complete"]
    assert prompts, "the answerer was called"
    assert all(SECRET not in p for p in prompts)
    # Rounds did inject retrieved knowledge, and only from training contexts.
    assert any("Additional clinical knowledge" in p for p in prompts)
    assert all(d.id.startswith("train:") for d in corpus)
    assert {d.id.split("#")[0] for d in corpus} == {f"train:{i.id}" for i in items[:4]}


def test_label_outside_the_label_set_is_refused(tmp_path: Path) -> None:
    path = write_dataset(tmp_path / "d.jsonl", [{"id": "a", "question": "Q?", "label": "maybe"}])
    with pytest.raises(InputError, match="not in yes,no"):
        load_jsonl(path, LabelSet.YES_NO)


def test_an_unknown_dataset_names_the_closed_question_ones(tmp_path: Path) -> None:
    # The list of known names must not trip over the CareGuard request sets it leaves out.
    with pytest.raises(ConfigError, match=r"unknown dataset 'nope'; known: bioasq, pubmedqa-a"):
        load_dataset("nope", tmp_path)


def test_a_careguard_request_set_points_to_eval_care(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="use medgate eval care -d patient-questions"):
        load_dataset("patient-questions", tmp_path)


def test_stratified_split_is_seeded_disjoint_and_keeps_label_shares() -> None:
    items = [
        EvalItem(id=f"i{k}", question="Q?", gold=g, labels=LabelSet.YES_NO_MAYBE)
        for k, g in enumerate(["yes"] * 552 + ["no"] * 338 + ["maybe"] * 110)
    ]
    split = stratified_split(items, 200, 800, seed=42)
    assert len(split.test) == 200 and len(split.train) == 800
    assert not {i.id for i in split.test} & {i.id for i in split.train}
    # 552/1000 * 200 = 110.4 -> 110; 338 -> 67.6 -> 68; 110 -> 22.
    assert Counter(i.gold for i in split.test) == {"yes": 110, "no": 68, "maybe": 22}
    again = stratified_split(list(reversed(items)), 200, 800, seed=42)
    assert [i.id for i in again.test] == [i.id for i in split.test]
    other = stratified_split(items, 200, 800, seed=7)
    assert {i.id for i in other.test} != {i.id for i in split.test}


def test_small_dataset_caps_training_part() -> None:
    items = [
        EvalItem(id=f"i{k}", question="Q?", gold=g, labels=LabelSet.YES_NO)
        for k, g in enumerate(["yes"] * 463 + ["no"] * 37)
    ]
    split = stratified_split(items, 200, 300, seed=42)
    assert len(split.test) == 200 and len(split.train) == 300
    # 37/500 * 200 = 14.8 -> 15 "no" in test.
    assert Counter(i.gold for i in split.test)["no"] == 15


def test_retrieval_never_injects_a_passage_of_the_cases_own_context(tmp_path: Path) -> None:
    train = load_jsonl(write_dataset(tmp_path / "d.jsonl", rows(8)), LabelSet.YES_NO_MAYBE)
    corpus = training_corpus(train)
    orchestrator = RetrievalOrchestrator(BM25Index(corpus), facts_per_iteration=10)
    # A training item asks about its own study: BM25 ranks its own passages first, yet none of
    # them is injected, since the prompt already holds them.
    item = train[3]
    step = orchestrator.step(item.case(), [])
    own = {d.id for d in corpus if d.id.startswith(f"train:{item.id}#")}
    assert len(own) == 2 and step.facts
    assert not own & {f.source for f in step.facts}
    # Without the context, the same passages are new knowledge and are injected.
    bare = item.case().model_copy(update={"context": ""})
    assert own <= {f.source for f in orchestrator.step(bare, []).facts}
