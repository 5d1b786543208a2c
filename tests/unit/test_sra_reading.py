"""docs/results/sra_reading.md quotes sra_reading.json; the committed readings recompute it."""

from __future__ import annotations

import json
from pathlib import Path

from scripts.sra_reading import OUT, reading


def test_the_sra_reading_recomputes_from_its_committed_items() -> None:
    committed = json.loads(Path(OUT).read_text(encoding="utf-8"))
    assert json.loads(json.dumps(reading())) == committed
    assert committed["test"]["drafts"] == 831
    assert committed["validation_auroc"]["safe"]["n"] == 417
