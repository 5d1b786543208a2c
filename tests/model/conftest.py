from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from medgate.backends.llamacpp import LlamaCppModel
from medgate.backends.pool import ModelPool
from medgate.config import SMALL_EMBEDDED_MODEL, load_config
from medgate.records import Case

DATA = Path(
    os.environ.get("MEDGATE_DATA_DIR")
    or Path(__file__).resolve().parents[2].parent / "shared" / "data"
)


#: The model the tests of machinery run on (backends, recordings, engines, context fitting, the
#: served path): the smaller embedded model, so that they take half the time; what they test
#: does not depend on the model. The default answerer is run end to end by the CLI tests.
MECHANICS_MODEL = SMALL_EMBEDDED_MODEL


@pytest.fixture(scope="session")
def embedded() -> LlamaCppModel:
    """The embedded 0.5B (:data:`MECHANICS_MODEL`), loaded once for all model tests."""
    config = load_config(model=MECHANICS_MODEL)
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
