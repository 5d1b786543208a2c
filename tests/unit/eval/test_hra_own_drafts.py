"""The committed self-check figures recompute from the committed per-draft readings, each reading
carries the hand label it was measured against, and the shipped threshold is the one chosen on
the dev drafts."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scripts.hra_own_drafts import OUT, PARTS, RESULTS, labelled_drafts

from medgate.careguard.hra_fit import balanced_threshold, read_items
from medgate.config import CareGuardConfig, load_config
from medgate.eval.metrics import auroc

GENERATOR = "embedded:qwen2.5-coder-1.5b"


@pytest.fixture(scope="module")
def summary() -> dict[str, dict]:  # type: ignore[type-arg]
    return json.loads((RESULTS / "hra_own_drafts.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def rows() -> list[dict]:  # type: ignore[type-arg]
    return read_items(OUT)


def test_every_reading_carries_its_hand_label(rows: list[dict]) -> None:  # type: ignore[type-arg]
    for model in {r["model"] for r in rows}:
        for part in PARTS:
            labelled = {d["key"]: d for d in labelled_drafts(model, part)}
            read = [r for r in rows if r["model"] == model and r.get("part", "dev") == part]
            assert {r["key"] for r in read} <= set(labelled)
            for r in read:
                assert r["bad"] == labelled[r["key"]]["bad"]
                assert r["draft"] == labelled[r["key"]]["draft"]


def test_the_self_check_figures_recompute(
    summary: dict[str, dict],  # type: ignore[type-arg]
    rows: list[dict],  # type: ignore[type-arg]
) -> None:
    assert GENERATOR in summary
    for model, figures in summary.items():
        dev = [r for r in rows if r["model"] == model and r.get("part", "dev") == "dev"]
        p, y = [r["p_no"] for r in dev], [bool(r["bad"]) for r in dev]
        recorded = figures["dev"]["features"]["self_check_p_no"]
        assert all(v["value"] == pytest.approx(auroc(p, y)) for v in recorded.values())
        assert figures["self_check_threshold"] == pytest.approx(
            balanced_threshold(np.asarray(p), np.asarray(y))
        )
        held = [r for r in rows if r["model"] == model and r.get("part") == "heldout"]
        if "heldout" in figures:
            ph, yh = [r["p_no"] for r in held], [bool(r["bad"]) for r in held]
            assert figures["heldout"]["drafts"] == len(held)
            assert figures["heldout"]["features"]["self_check_p_no"]["value"] == pytest.approx(
                auroc(ph, yh)
            )


def test_the_shipped_threshold_is_the_generators_chosen_on_dev(
    summary: dict[str, dict],  # type: ignore[type-arg]
) -> None:
    chosen = summary[GENERATOR]["self_check_threshold"]
    assert CareGuardConfig().self_check.threshold == pytest.approx(chosen, abs=5e-5)
    assert load_config().careguard.spec("generator", load_config().model) == GENERATOR
