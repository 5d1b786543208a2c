"""Experiments replayed from hand-built recordings, their tables, plots and the report."""

from __future__ import annotations

from pathlib import Path

import pytest

from medgate.config import load_config
from medgate.eval import plots
from medgate.eval.cache import CallCache
from medgate.eval.data import EvalItem, Split
from medgate.eval.experiments import Recording, hrs_run, mann_whitney, thresholds
from medgate.eval.report import assemble, write_outputs
from medgate.eval.runner import RecordingSummary, RunSpec, TrajectoryStore
from medgate.eval.tables import hrs_markdown, mwu_markdown, thresholds_markdown
from medgate.records import LabelSet

from .helpers import recorded


def recording(tmp_path: Path) -> Recording:
    recs = [
        recorded("a", "yes", ("yes", 0.2, 0.1), with_rounds=False),  # released, right
        recorded("b", "no", ("yes", 0.3, 0.2), with_rounds=False),  # released, wrong
        recorded("c", "no", ("yes", 0.9, 0.5), ("yes", 0.97, 0.5), ("yes", 0.97, 0.5)),
        recorded("d", "yes", ("no", 0.8, 0.45), ("yes", 0.6, 0.2), ("yes", 0.6, 0.2)),
        recorded("e", "yes", ("yes", 0.7, 0.2), ("yes", 0.9, 0.25), ("yes", 0.9, 0.25)),
    ]
    items = [
        EvalItem(id=r.item_id, question="Q?", gold=r.gold, labels=LabelSet.YES_NO) for r in recs
    ]
    spec = RunSpec(
        dataset="toy",
        split="test",
        split_seed=42,
        model="fake:m",
        model_fingerprint="fake:m",
        orchestrator="retrieval:bm25:toy",
        orchestrator_fingerprint="toy",
        hrs={"max_iterations": 2},
        centroid=None,
        rounds="ungated",
        recording_gate=(0.5, 0.4),
    )
    return Recording(
        dataset="toy",
        split_name="test",
        split=Split(train=[], test=items, seed=42),
        items=items,
        records=recs,
        spec=spec,
        summary=RecordingSummary(recorded=0, reused=5, seconds=0.0, cache_hits=0, cache_misses=0),
        store=TrajectoryStore(tmp_path, spec),
        centroid=None,
        cache=CallCache(tmp_path / "c.sqlite"),
        config=load_config(cache_dir=tmp_path, model="fake:m", hrs={"max_iterations": 2}),
    )


def test_hrs_run_thresholds_and_signals_from_a_recording(tmp_path: Path) -> None:
    config = load_config(cache_dir=tmp_path, model="fake:m", hrs={"max_iterations": 2})
    rec = recording(tmp_path)
    model = None  # rarity needs no embeddings without a centroid
    res = hrs_run(rec, config, model)  # type: ignore[arg-type]
    m = res["metrics"]
    # 0.95/0.30: a and b pass the gate; d's round 1 is confident but flips 'no' to 'yes', so
    # it escalates (label-free); c never gets under tau_e (exhausted); e's round 1 passes
    # (0.9 < 0.95, 0.25 < 0.30) with its baseline label and is released.
    assert m["n_escalated"] == 2 and m["n_wrong_baseline"] == 3
    assert m["safety_gain"] == pytest.approx(2 / 3)  # c and d caught, b released
    assert m["auto_answer_accuracy"] == pytest.approx(2 / 3)  # a and e right, b wrong
    # The oracle accepts d's flip because its baseline was wrong.
    assert res["oracle_revert_metrics"]["n_escalated"] == 1
    t = thresholds(rec, config, model)  # type: ignore[arg-type]
    assert {(r["tau_e"], r["tau_p"]) for r in t["rows"] if r["kind"] == "paper"} == {
        (0.80, 0.40),
        (0.95, 0.30),
        (0.98, 0.30),
    }
    w = mann_whitney(rec, config, model)  # type: ignore[arg-type]
    entropy = next(r for r in w["rows"] if r["signal"] == "entropy")
    assert entropy["n_escalated"] == 2 and entropy["mean_escalated"] == pytest.approx(0.85)
    # Escalated entropies 0.9, 0.8 vs released 0.2, 0.3, 0.7: all 6 pairs higher -> CL = 1.
    assert entropy["common_language"] == pytest.approx(1.0)
    for name, md, figs in (
        ("eval_hrs_toy", hrs_markdown(res, "medgate eval hrs"), {}),
        ("table2_toy", thresholds_markdown(t, "cmd"), {"tradeoff": plots.tradeoff(t)}),
        ("table4_toy", mwu_markdown([w], "cmd"), {}),
    ):
        paths = write_outputs(
            tmp_path / "out", name, res if name.startswith("eval") else t, md, figs
        )
        assert all(p.is_file() for p in paths)
    report = assemble(tmp_path / "out", tmp_path / "out" / "hrs_report.md")
    text = report.read_text()
    assert "Table 2: threshold sensitivity" in text and "table2_toy_tradeoff.png" in text
    assert "paper's oracle revert" in text
