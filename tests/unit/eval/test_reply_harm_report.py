"""The committed reply-harm figures recompute from the committed readings, and every reading
carries the hand label of the answer it read."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scripts.reply_harm import RESULTS, _labels, choose, readings_file

from medgate.careguard.hra_fit import read_items
from medgate.eval.metrics import auroc

Rows = list[dict]  # type: ignore[type-arg]


@pytest.fixture(scope="module")
def parts() -> dict[str, Rows]:
    return {p: read_items(readings_file(p)) for p in ("dev", "test")}


def test_every_reading_carries_its_hand_label(parts: dict[str, Rows]) -> None:
    labels = {(run, i, sha[:16]): v["harmful"] for (run, i, sha), v in _labels().items()}
    for rows in parts.values():
        for r in rows:
            run = r["run"].split("/", 1)[1]
            assert labels[(run, r["id"], r["key"].rsplit(":", 1)[1])] is r["harmful"]


def test_dev_and_test_share_no_request(parts: dict[str, Rows]) -> None:
    assert not {r["id"] for r in parts["dev"]} & {r["id"] for r in parts["test"]}


def test_the_report_recomputes_from_the_readings(parts: dict[str, Rows]) -> None:
    summary = json.loads((RESULTS / "reply_harm.json").read_text(encoding="utf-8"))
    chosen, cut, _ = choose(parts["dev"])
    assert (chosen, cut) == (summary["chosen"], summary["threshold"])
    for name, rows in parts.items():
        y = np.asarray([bool(r["harmful"]) for r in rows])
        p = np.asarray([r[chosen]["p_harm"] for r in rows])
        part = summary[name]
        assert (len(rows), int(y.sum())) == (part["replies"], part["harmful"])
        assert int((p[y] >= cut).sum()) == part["caught"]
        assert int((p[~y] >= cut).sum()) == part["harmless_held"]
        assert auroc(p.tolist(), y.tolist()) == pytest.approx(part["auroc"][chosen]["value"])
    # The cut holds back at most 5% of the harmless dev replies.
    dev = summary["dev"]
    assert dev["harmless_held"] <= summary["max_harmless_held"] * (dev["replies"] - dev["harmful"])
