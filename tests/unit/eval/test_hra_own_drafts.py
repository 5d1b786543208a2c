"""The committed self-check figures recompute from the committed per-draft readings, each reading
carries the hand label it was measured against, and the shipped threshold is the one chosen on
the dev drafts."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scripts.hra_own_drafts import (
    DEV_PARTS,
    GATE_FALSE_ALARMS,
    HALUEVAL_PART,
    OUT,
    PARTS,
    RESULTS,
    STATEMENT_SCORES,
    TEST_PART,
    labelled_drafts,
    statements_file,
)

from medgate.careguard.hra_fit import balanced_threshold, false_alarm_threshold, read_items
from medgate.config import SELF_CHECK_THRESHOLDS, CareGuardConfig, load_config
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
    assert CareGuardConfig(self_check={"reading": "answer"}).self_check.p_threshold == (
        pytest.approx(chosen, abs=5e-5)
    )
    assert load_config().careguard.spec("generator", load_config().model) == GENERATOR


@pytest.fixture(scope="module")
def statement_rows() -> dict[str, list[dict]]:  # type: ignore[type-arg]
    return {part: read_items(statements_file(part)) for part in (*DEV_PARTS, TEST_PART)}


def test_every_statement_reading_carries_its_hand_label(
    statement_rows: dict[str, list[dict]],  # type: ignore[type-arg]
) -> None:
    for part, rows in statement_rows.items():
        labelled = {d["key"]: d for d in labelled_drafts(GENERATOR, part)}
        assert rows and {r["key"] for r in rows} == set(labelled)
        for r in rows:
            assert r["part"] == part and r["bad"] == labelled[r["key"]]["bad"]
            assert r["draft"] == labelled[r["key"]]["draft"] and r["statements"]


def test_the_statement_figures_recompute_and_the_shipped_cut_is_devs(
    statement_rows: dict[str, list[dict]],  # type: ignore[type-arg]
) -> None:
    summary = json.loads((RESULTS / "self_check_statements.json").read_text(encoding="utf-8"))
    dev = [r for part in DEV_PARTS for r in statement_rows[part]]
    y = [bool(r["bad"]) for r in dev]
    dev_auroc = {n: auroc([f(r) for r in dev], y) for n, f in STATEMENT_SCORES.items()}
    for name, value in dev_auroc.items():
        assert summary["dev"]["auroc"][name]["value"] == pytest.approx(value)
    chosen = max(dev_auroc, key=lambda n: dev_auroc[n] or 0.0)
    assert summary["chosen"] == chosen == "statement_mean"
    cut = balanced_threshold(np.asarray([STATEMENT_SCORES[chosen](r) for r in dev]), np.asarray(y))
    assert summary["threshold"] == pytest.approx(cut)
    # The shipped cut is the gate's: the lowest holding back at most a tenth of right dev drafts.
    p_dev = np.asarray([STATEMENT_SCORES[chosen](r) for r in dev])
    gate_cut = false_alarm_threshold(p_dev, np.asarray(y), GATE_FALSE_ALARMS)
    assert summary["gate_threshold"] == pytest.approx(gate_cut)
    assert SELF_CHECK_THRESHOLDS["statements"] == pytest.approx(gate_cut, abs=5e-5)
    good = p_dev[~np.asarray(y)]
    lower = [c for c in np.round(p_dev, 4) if c < gate_cut]
    assert (good >= gate_cut).mean() <= GATE_FALSE_ALARMS < (good >= max(lower)).mean()
    test = statement_rows[TEST_PART]
    score = [STATEMENT_SCORES[chosen](r) for r in test]
    assert summary["test"]["chosen_auroc"]["value"] == pytest.approx(
        auroc(score, [bool(r["bad"]) for r in test])
    )
    assert summary["test"]["caught"] == sum(
        p >= cut and r["bad"] for p, r in zip(score, test, strict=True)
    )


def test_the_halueval_figures_recompute_from_their_readings() -> None:
    summary = json.loads((RESULTS / "self_check_statements.json").read_text(encoding="utf-8"))
    rows = read_items(statements_file(HALUEVAL_PART))
    y = [bool(r["bad"]) for r in rows]
    assert summary["halueval"]["answers"] == len(rows) and summary["halueval"]["bad"] == sum(y)
    for name, f in STATEMENT_SCORES.items():
        assert summary["halueval"]["auroc"][name]["value"] == pytest.approx(
            auroc([f(r) for r in rows], y)
        )
    held = [STATEMENT_SCORES[summary["chosen"]](r) >= summary["threshold"] for r in rows]
    assert summary["halueval"]["caught"] == sum(h and b for h, b in zip(held, y, strict=True))
