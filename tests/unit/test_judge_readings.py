"""docs/results/sra_reading.md and hra_reading.md quote their JSON; the committed readings
recompute both."""

from __future__ import annotations

import json
from pathlib import Path

from scripts import hra_reading, sra_reading


def test_the_sra_reading_recomputes_from_its_committed_items() -> None:
    committed = json.loads(Path(sra_reading.OUT).read_text(encoding="utf-8"))
    assert json.loads(json.dumps(sra_reading.reading())) == committed
    assert committed["test"]["drafts"] == 831
    assert committed["validation_auroc"]["safe"]["n"] == 417


def test_the_hra_reading_recomputes_from_its_committed_items() -> None:
    committed = json.loads(Path(hra_reading.OUT).read_text(encoding="utf-8"))
    assert json.loads(json.dumps(hra_reading.reading())) == committed
    assert (committed["test"]["drafts"], committed["test"]["wrong"]) == (158, 35)
