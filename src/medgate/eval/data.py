"""Evaluation datasets: loading, the stratified train/test split, and the retrieval corpus.

Only ``id``, ``question``, ``context`` and ``label`` are ever read from a data file. Fields that
reveal the answer (PubMedQA's ``long_answer`` conclusion, its reasoning predictions, BioASQ's
``ideal_answer``) are never copied into an :class:`EvalItem`, so no code path can put them into a
prompt; :meth:`EvalItem.case` hands the gate the question and context only, and the gold label
stays on the evaluation side.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pydantic import Field

from medgate.errors import ConfigError, InputError
from medgate.hrs.retrieval import Document
from medgate.plugins import Registry
from medgate.records import Case, LabelSet, Record

#: Fields a data file may carry that must never reach a model under test.
GOLD_REVEALING_FIELDS = frozenset(
    {
        "long_answer",
        "final_decision",
        "reasoning_free_pred",
        "reasoning_required_pred",
        "ideal_answer",
        "exact_answer",
        "label",
        "answer",
    }
)


class EvalItem(Record):
    """One labelled question. The gold label never enters :meth:`case`."""

    id: str
    question: str
    context: str = ""
    gold: str = Field(description="The gold label; used only to score, never shown to a model.")
    labels: LabelSet

    def case(self) -> Case:
        """The gate's input: question, context and the allowed labels, nothing else."""
        return Case(
            question=self.question, context=self.context, labels=self.labels, case_id=self.id
        )


class Dataset(Protocol):
    """What an entry point in ``medgate.datasets`` resolves to: a labelled set of closed
    questions, with the sizes of its seeded, stratified train/test split."""

    @property
    def name(self) -> str: ...

    @property
    def labels(self) -> LabelSet: ...

    @property
    def train_size(self) -> int: ...

    @property
    def test_size(self) -> int: ...

    @property
    def description(self) -> str: ...

    def load(self, data_dir: Path) -> list[EvalItem]:
        """Every item; the data directory is ``MEDGATE_DATA_DIR`` (``data_dir``)."""
        ...


@dataclass(frozen=True)
class DatasetSpec:
    """A dataset kept as a JSONL file under the data directory (``load_jsonl``'s format)."""

    name: str
    path: str
    """Relative to the data directory."""
    labels: LabelSet
    train_size: int
    test_size: int = 200
    description: str = ""
    task: str = "closed-question"
    """What evaluates it: closed questions (``eval hrs``/``eval gate``); CareGuard's request
    sets say ``care``."""

    def load(self, data_dir: Path) -> list[EvalItem]:
        return load_jsonl(data_dir / self.path, self.labels)


PUBMEDQA_L = DatasetSpec(
    "pubmedqa-l",
    "pubmedqa/pqal.jsonl",
    LabelSet.YES_NO_MAYBE,
    800,
    description="PubMedQA PQA-L, 1000 expert-labelled items (yes/no/maybe)",
)
PUBMEDQA_A = DatasetSpec(
    "pubmedqa-a",
    "pubmedqa/pqaa_subset500.jsonl",
    LabelSet.YES_NO,
    300,
    description="PubMedQA PQA-A, 500-item subset (yes/no)",
)
BIOASQ = DatasetSpec(
    "bioasq",
    "bioasq/bioasq_yesno.jsonl",
    LabelSet.YES_NO,
    800,
    description="BioASQ Task B yes/no, 720 items (so 520 train / 200 test)",
)

DATASETS: Registry[Dataset] = Registry("medgate.datasets", "dataset")
"""The evaluation datasets, by name (entry-point group ``medgate.datasets``)."""


def _context_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    raise InputError(f"context must be a string or a list of strings, not {type(value).__name__}")


def load_jsonl(path: Path, labels: LabelSet) -> list[EvalItem]:
    """Items from a JSONL file with ``id``, ``question``, ``context`` and ``label`` per line."""
    if not path.is_file():
        raise ConfigError(
            f"evaluation data {path} not found; set MEDGATE_DATA_DIR to the data directory"
        )
    items: list[EvalItem] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                gold = str(row["label"]).strip().lower()
                item = EvalItem(
                    id=str(row["id"]),
                    question=str(row["question"]),
                    context=_context_text(row.get("context")),
                    gold=gold,
                    labels=labels,
                )
            except (ValueError, KeyError, TypeError) as exc:
                raise InputError(f"{path}:{lineno}: not an evaluation item: {exc}") from exc
            if gold not in labels.labels:
                raise InputError(f"{path}:{lineno}: label {gold!r} not in {labels.value}")
            items.append(item)
    ids = [i.id for i in items]
    if len(set(ids)) != len(ids):
        raise InputError(f"{path}: duplicate item ids")
    return items


def load_dataset(name: str, data_dir: Path) -> list[EvalItem]:
    """A named dataset, or a JSONL path (``jsonl:PATH[:yes,no]``) in the same format."""
    if name.startswith("jsonl:"):
        rest = name.removeprefix("jsonl:")
        path_text, _, label_text = rest.partition("::")
        labels = LabelSet.parse(label_text) if label_text else LabelSet.YES_NO_MAYBE
        return load_jsonl(Path(path_text), labels)
    spec = _closed_question_dataset(name)
    if spec is None:
        known = ", ".join(n for n in sorted(DATASETS) if _is_closed_question(DATASETS.load(n)))
        raise ConfigError(f"unknown dataset {name!r}; known: {known}, or jsonl:PATH[::yes,no]")
    return spec.load(data_dir)


def _closed_question_dataset(name: str) -> Dataset | None:
    """The registered closed-question dataset ``name``; a CareGuard request set (``task`` care)
    is refused with the command that evaluates it."""
    spec = DATASETS.get(name)
    if spec is not None and not _is_closed_question(spec):
        raise ConfigError(f"{name!r} is a CareGuard request set: use medgate eval care -d {name}")
    return spec


def _is_closed_question(spec: Dataset) -> bool:
    return getattr(spec, "task", "closed-question") == "closed-question"


class Split(Record):
    train: list[EvalItem]
    test: list[EvalItem]
    seed: int

    def part(self, name: str) -> list[EvalItem]:
        if name == "train":
            return self.train
        if name == "test":
            return self.test
        raise InputError(f"unknown split {name!r}: use train or test")


def stratified_split(
    items: Sequence[EvalItem], test_size: int, train_size: int | None, seed: int = 42
) -> Split:
    """A seeded split that keeps each label's share in both parts.

    Each label gets ``round(test_size * share)`` test items (largest remainders settle the
    rounding), drawn after a seeded shuffle of that label's items sorted by id, so the split
    depends only on the seed and the item ids. The training part takes the rest, capped at
    ``train_size`` by the same stratified rule.
    """
    if test_size >= len(items):
        raise InputError(f"test size {test_size} leaves nothing to train on ({len(items)} items)")
    by_label: dict[str, list[EvalItem]] = defaultdict(list)
    for it in sorted(items, key=lambda i: i.id):
        by_label[it.gold].append(it)
    rng = random.Random(seed)
    for label in sorted(by_label):
        rng.shuffle(by_label[label])
    test_quota = _quota({k: len(v) for k, v in by_label.items()}, test_size)
    test = [it for k in sorted(by_label) for it in by_label[k][: test_quota[k]]]
    rest = {k: v[test_quota[k] :] for k, v in by_label.items()}
    n_rest = sum(len(v) for v in rest.values())
    cap = n_rest if train_size is None else min(train_size, n_rest)
    train_quota = _quota({k: len(v) for k, v in rest.items()}, cap)
    train = [it for k in sorted(rest) for it in rest[k][: train_quota[k]]]
    # Interleave deterministically so that --limit N takes a mix of labels, not one label.
    return Split(train=_mix(train, seed), test=_mix(test, seed + 1), seed=seed)


def _quota(counts: dict[str, int], total: int) -> dict[str, int]:
    n = sum(counts.values())
    exact = {k: total * c / n for k, c in counts.items()}
    quota = {k: int(v) for k, v in exact.items()}
    left = total - sum(quota.values())
    for k in sorted(exact, key=lambda k: (-(exact[k] - quota[k]), k))[:left]:
        quota[k] += 1
    return quota


def _mix(items: list[EvalItem], seed: int) -> list[EvalItem]:
    out = sorted(items, key=lambda i: i.id)
    random.Random(seed).shuffle(out)
    return out


def dataset_split(name: str, data_dir: Path, seed: int = 42) -> Split:
    items = load_dataset(name, data_dir)
    spec = _closed_question_dataset(name) if not name.startswith("jsonl:") else None
    if spec is not None:
        return stratified_split(items, spec.test_size, spec.train_size, seed)
    test = max(1, round(len(items) * 0.2))
    return stratified_split(items, test, None, seed)


def training_corpus(train: Sequence[EvalItem]) -> list[Document]:
    """Retrieval documents from training contexts only: one document per context passage.

    Test items and every gold-revealing field are excluded by construction: only the training
    items' ``context`` is used (the abstract without its conclusion for PubMedQA).
    """
    docs: list[Document] = []
    for it in train:
        for j, passage in enumerate(p for p in it.context.split("\n") if p.strip()):
            docs.append(Document(id=f"train:{it.id}#{j}", text=passage.strip()))
    return docs


def write_corpus(docs: Sequence[Document], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(d.model_dump_json() + "\n" for d in docs), encoding="utf-8")
    tmp.replace(path)


def items_digest(items: Sequence[EvalItem]) -> str:
    """A short hash of item ids, to name what a corpus or centroid was built from."""
    h = hashlib.sha256("\n".join(sorted(i.id for i in items)).encode())
    return h.hexdigest()[:12]
