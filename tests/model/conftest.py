from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from medgate.backends.llamacpp import LlamaCppModel
from medgate.backends.pool import ModelPool
from medgate.config import load_config
from medgate.records import Case

DATA = Path(
    os.environ.get("MEDGATE_DATA_DIR")
    or Path(__file__).resolve().parents[2].parent / "shared" / "data"
)


@pytest.fixture(scope="session")
def embedded() -> LlamaCppModel:
    """The embedded default model, loaded once for all model tests."""
    config = load_config()
    model = ModelPool(config).white_box(config.model)
    assert isinstance(model, LlamaCppModel)
    return model


@pytest.fixture(scope="session")
def pubmedqa_case() -> Case:
    """A real PubMedQA-L item (question and abstract, never its conclusion)."""
    path = DATA / "pubmedqa" / "pqal.jsonl"
    if not path.is_file():
        pytest.skip(f"evaluation data not found at {path}")
    item = json.loads(path.read_text().splitlines()[0])
    return Case(question=item["question"], context="\n".join(item["context"]))
