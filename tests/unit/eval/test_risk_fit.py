"""Fitting the risk model, certifying its threshold, the test figures and the whole pipeline."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from medgate.config import HRSConfig, load_config
from medgate.errors import ConfigError
from medgate.eval.data import dataset_split
from medgate.eval.risk_eval import ItemLine, headline, read_items, write_items
from medgate.eval.risk_fit import Recorded, certify, fit_risk_model, is_calibration
from medgate.eval.risk_run import run_risk, write_item_logs
from medgate.eval.runner import (
    RecordedItem,
    TrajectoryStore,
    build_runtime,
    record_split,
    store_dir,
)
from medgate.hrs.decision import Trajectory

from ..risk_helpers import iteration, run

ROOT = Path(__file__).resolve().parents[3]
#: Two strengths are enough to exercise the cross-validated choice.
C_FEW = (0.1, 1.0)


def _item(
    i: int, rng: random.Random, gold: str = "yes", rarity: bool = True, rounds: int = 2
) -> RecordedItem:
    """A trajectory whose first answer is wrong more often the higher its entropy."""
    entropy = rng.random()
    wrong = rng.random() < entropy
    answer = "no" if wrong == (gold == "yes") else "yes"
    p = 1 - entropy / 2
    dist = {answer: p, ("yes" if answer == "no" else "no"): 1 - p}
    values = {"entropy": entropy, "perplexity": rng.random(), "ambiguity": rng.random() / 5,
              "token_length": rng.random(), "rarity": rng.random() if rarity else None}  # fmt: skip
    base = iteration(
        0, run(answer, dist, opening=dict(dist), samples=(answer, answer, "yes")), **values
    )
    later = [iteration(k, run(answer, dist), **values) for k in range(1, rounds + 1)]
    return RecordedItem(
        item_id=f"q{i}",
        gold=gold,
        trajectory=Trajectory(iterations=[base, *later]),
        rounds_recorded=True,
        wall_seconds=1.0,
        model_seconds=1.0,
    )


RECORDED = Recorded(
    model="fake", model_fingerprint="fake", knowledge="retrieval", knowledge_detail="bm25", rounds=2
)


def test_certify_by_hand() -> None:
    risks, wrong = [0.1, 0.2, 0.3, 0.9], [False, False, True, True]
    # 0.25 releases 2 with 0 errors: P(Bin(2, .5) <= 0) = 0.25 <= delta / 2 = 0.5: certified.
    # 1.0 releases 4 with 2 errors: P(Bin(4, .5) <= 2) = 0.6875 > 0.5: not.
    point = certify(risks, wrong, [0.25, 1.0], alpha=0.5, delta=1.0)
    assert point.certified and point.threshold == 0.25
    assert (point.released, point.errors, point.p_value) == (2, 0, pytest.approx(0.25))
    none = certify(risks, wrong, [0.25, 1.0], alpha=0.5, delta=0.2)  # level 0.1 < 0.25
    assert not none.certified and none.released == 0 and none.threshold == 0.0


def test_calibration_part_is_a_stable_third() -> None:
    ids = [f"q{i}" for i in range(3000)]
    share = sum(is_calibration("d", i) for i in ids) / len(ids)
    assert 0.3 < share < 0.37
    assert [is_calibration("d", i) for i in ids] == [is_calibration("d", i) for i in ids]


def test_fit_learns_the_signal_and_keeps_the_calibration_part_apart() -> None:
    rng = random.Random(1)
    recs = {
        "a": [_item(i, rng) for i in range(120)],
        "b": [_item(i, rng, "no") for i in range(120)],
    }
    model = fit_risk_model(
        recs, RECORDED, "baseline", alpha=0.3, delta=0.1, alphas=(0.2, 0.4), c_grid=C_FEW
    )
    assert model.rounds == 0 and model.knowledge is None and model.feature_set == "baseline"
    assert model.cv_auroc is not None and model.cv_auroc > 0.6
    assert model.calibration_auroc is not None and model.calibration_auroc > 0.6
    coef = model.standardised_coefficients()
    assert coef["entropy"] > 0  # more entropy, more risk
    n_cal = sum(d.n_calibration for d in model.per_dataset.values())
    assert n_cal == sum(is_calibration(ds, r.item_id) for ds, rs in recs.items() for r in rs)
    assert model.operating_point.n == n_cal and model.operating_point.alpha == 0.3
    assert [p.alpha for p in model.operating_points] == [0.2, 0.4]
    assert model.grid is not None
    rounds = fit_risk_model(recs, RECORDED, "rounds", alpha=0.3, delta=0.1, c_grid=C_FEW)
    assert rounds.rounds == 2 and rounds.knowledge == "retrieval"


def _line(i: int, correct: bool, risk: float, escalated: bool, paper_escalated: bool) -> ItemLine:
    return ItemLine(
        id=str(i),
        dataset="d",
        gold="yes",
        answer="yes" if correct else "no",
        correct=correct,
        signals={"entropy": risk},
        combined=risk,
        risk=risk,
        status="escalated" if escalated else "released",
        escalated=escalated,
        paper_status="escalated" if paper_escalated else "released",
        paper_escalated=paper_escalated,
        paper_final=None if paper_escalated else ("yes" if correct else "no"),
    )


def test_headline_by_hand() -> None:
    # Four items, two wrong; the risk rule escalates both wrong ones and one right one.
    lines = [
        _line(0, True, 0.1, False, True),
        _line(1, True, 0.6, True, False),
        _line(2, False, 0.7, True, False),
        _line(3, False, 0.9, True, True),
    ]
    h = headline(lines, alpha=0.2)
    assert h["baseline_accuracy"] == 0.5 and h["n_wrong"] == 2
    assert h["risk_auroc"]["value"] == 1.0  # both wrong answers rank above both right ones
    r = h["risk_rule"]
    assert (r["escalation_rate"], r["safety_gain"], r["lift"]) == (0.75, 1.0, pytest.approx(4 / 3))
    assert (r["released"], r["errors"], r["error_rate"]) == (1, 0, 0.0)
    assert r["error_ci"][0] == 0.0 and r["error_ci"][1] == pytest.approx(0.975)  # 1 - 0.025
    assert r["error_within_alpha"] is True
    p = h["paper_rule"]
    assert (p["escalation_rate"], p["safety_gain"], p["lift"]) == (0.5, 0.5, 1.0)
    assert p["auto_answer_accuracy"] == 0.5 and p["degradation_rate"] == 0.0
    assert headline(lines, 0.2) == h  # the bootstrap is seeded


def test_item_log_round_trip_is_byte_stable(tmp_path: Path) -> None:
    lines = [_line(0, True, 0.1, False, True), _line(1, False, 0.9, True, True)]
    a = write_items(lines, tmp_path / "a.jsonl.gz").read_bytes()
    b = write_items(lines, tmp_path / "b.jsonl.gz").read_bytes()
    assert a == b and read_items(tmp_path / "a.jsonl.gz") == lines


def _dataset(tmp_path: Path, name: str, n: int) -> str:
    path = tmp_path / f"{name}.jsonl"
    rows = [
        {
            "id": f"q{i}",
            "question": f"Question {i}?",
            "context": f"Context {i}.",
            "label": "yes" if i % 2 else "no",
        }
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return f"jsonl:{path}::yes,no"


def _record(
    config: object, dataset: str, split: str, seed: int, rarity: bool = True, rounds: int = 2
) -> None:
    cfg = config  # a MedgateConfig
    parts = dataset_split(dataset, cfg.data_dir)  # type: ignore[attr-defined]
    runtime = build_runtime(cfg, dataset, parts, split, "retrieval", None, "all")  # type: ignore[arg-type]
    store = TrajectoryStore(store_dir(cfg), runtime.spec)  # type: ignore[arg-type]
    rng = random.Random(seed)
    for item in parts.part(split):
        rec = _item(0, rng, item.gold, rarity, rounds).model_copy(update={"item_id": item.id})
        store.append(rec)


def _recompute(results: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from scripts.recompute_results import main

    code = main(["--results", str(results)])
    return code, capsys.readouterr().out


def test_the_pipeline_runs_on_recorded_items_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from medgate.eval import risk_eval

    monkeypatch.setattr(risk_eval, "RESAMPLES", 100)  # the tables and the check alike
    config = load_config(cache_dir=tmp_path / "cache", model="fake", data_dir=tmp_path)
    config = config.model_copy(update={"hrs": config.hrs.model_copy(update={"max_iterations": 2})})
    datasets = [_dataset(tmp_path, "a", 250), _dataset(tmp_path, "b", 250)]
    for k, ds in enumerate(datasets):
        _record(config, ds, "train", k)
        _record(config, ds, "test", 10 + k)
    res = run_risk(
        config,
        datasets,
        300,
        200,
        ["baseline", "rounds"],
        alpha=0.35,
        recorded_only=True,
        c_grid=C_FEW,
    )
    assert res["default"].model.feature_set == "baseline"  # 'self' knowledge: no rounds model
    assert {m.model.feature_set for m in res["models"]} == {"baseline", "rounds"}
    for ds in datasets:
        h = res["tests"][ds]["headline"]
        assert h["n"] == 50 and h["risk_auroc"]["value"] > 0.5
    out = tmp_path / "results"
    paths = write_item_logs(res, out)
    assert all(p.is_file() for p in paths)
    from medgate.eval.risk_report import write_report

    readme = out / "README.md"
    from medgate.eval.risk_report import README_BEGIN, README_END

    readme.write_text(f"intro\n{README_BEGIN}\nOLD-BLOCK\n{README_END}\nrest\n")
    write_report(res, out, readme)
    text = readme.read_text()
    assert "OLD-BLOCK" not in text and text.startswith("intro") and text.endswith("rest\n")
    # The recompute script reproduces every headline figure from the item logs.
    code, stdout = _recompute(out, capsys)
    assert code == 0, stdout
    assert "2 tables match" in stdout
    table = out / f"risk_{datasets[0].replace('/', '_')}.json"
    assert table.is_file() or any(out.glob("risk_*.json"))


def test_a_rarity_feature_set_is_left_out_with_its_reason_when_nothing_has_rarity(
    tmp_path: Path,
) -> None:
    from medgate.eval.risk_report import report_markdown

    config = load_config(cache_dir=tmp_path / "cache", model="fake", data_dir=tmp_path)
    config = config.model_copy(update={"hrs": config.hrs.model_copy(update={"max_iterations": 2})})
    ds = _dataset(tmp_path, "a", 250)
    _record(config, ds, "train", 0, rarity=False)
    _record(config, ds, "test", 1, rarity=False)
    res = run_risk(
        config, [ds], 300, 200, ["baseline", "baseline+rarity"], alpha=0.35,
        recorded_only=True, c_grid=C_FEW,
    )  # fmt: skip
    assert [m.model.feature_set for m in res["models"]] == ["baseline"]
    assert set(res["skipped_feature_sets"]) == {"baseline+rarity"}
    assert "Feature set `baseline+rarity`: not fitted: no training item has rarity" in (
        report_markdown(res)
    )


def test_first_probe_recordings_fit_the_feature_sets_that_read_no_round(tmp_path: Path) -> None:
    config = load_config(cache_dir=tmp_path / "cache", model="fake", data_dir=tmp_path)
    config = config.model_copy(update={"hrs": config.hrs.model_copy(update={"max_iterations": 0})})
    ds = _dataset(tmp_path, "a", 250)
    _record(config, ds, "train", 0, rarity=False, rounds=0)
    _record(config, ds, "test", 1, rarity=False, rounds=0)
    with pytest.raises(ConfigError, match="'rounds' reads knowledge rounds"):
        run_risk(config, [ds], 300, 200, ["baseline", "rounds"], recorded_only=True,
                 knowledge_rounds=0)  # fmt: skip
    with pytest.raises(ConfigError, match="unknown feature set 'nope'"):
        run_risk(config, [ds], 300, 200, ["nope"], recorded_only=True, knowledge_rounds=0)
    res = run_risk(
        config, [ds], 300, 200, alpha=0.35, recorded_only=True, c_grid=C_FEW, knowledge_rounds=0
    )
    # The default feature sets less those reading rounds; rarity is skipped for want of it.
    assert [m.model.feature_set for m in res["models"]] == ["baseline", "evidence"]
    assert set(res["skipped_feature_sets"]) == {"baseline+rarity"}
    assert all(m.model.rounds == 0 for m in res["models"]) and res["config"]["K"] == 0
    h = res["tests"][ds]["headline"]
    assert h["n"] == 50 and h["risk_auroc"]["value"] > 0.5
    # The paper's rule replays the baseline round alone: nothing is refined.
    assert all(line.paper_final in (None, line.answer) for line in res["tests"][ds]["lines"])
    # Read as K = 2 (the default), nothing is found: K is part of the recording's key.
    with pytest.raises(ConfigError, match="no training items are recorded"):
        run_risk(config, [ds], 300, 200, ["baseline"], recorded_only=True)


def test_eval_hrs_reads_and_names_the_every_round_recording(tmp_path: Path) -> None:
    config = load_config(cache_dir=tmp_path / "cache", model="fake", data_dir=tmp_path)
    config = config.model_copy(update={"hrs": config.hrs.model_copy(update={"max_iterations": 2})})
    ds = _dataset(tmp_path, "a", 50)
    _record(config, ds, "test", 3)  # every round, as `medgate eval risk` records
    parts = dataset_split(ds, config.data_dir)
    ungated = build_runtime(config, ds, parts, "test", "retrieval", None, "ungated")
    records, summary, store = record_split(ungated, parts.test, store_dir(config))
    assert summary.recorded == 0 and summary.reused == len(parts.test) == len(records)
    assert store.spec.rounds == "all"  # the run names the recording its items came from
    assert all(r.rounds_recorded for r in records)


def test_the_recompute_script_catches_a_changed_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [_line(0, True, 0.1, False, True), _line(1, False, 0.9, True, True)]
    write_items(lines, tmp_path / "items" / "d_test.jsonl.gz")
    table = {"dataset": "d", "items": "items/d_test.jsonl.gz", "headline": headline(lines, 0.2)}
    table["headline"]["risk_rule"]["alpha"] = 0.2
    (tmp_path / "risk_d.json").write_text(json.dumps(table))
    code, stdout = _recompute(tmp_path, capsys)
    assert code == 0, stdout
    # A Table 2 file written from the same recording is checked against the same items.
    table["recording"] = {"test": "d-test-x.jsonl"}
    (tmp_path / "risk_d.json").write_text(json.dumps(table))
    h = table["headline"]
    metrics = {
        "n": 2,
        "baseline_accuracy": h["baseline_accuracy"],
        **{k: h["paper_rule"][k] for k in ("escalation_rate", "safety_gain")},
        **{k: h["paper_rule"][k] for k in ("auto_answer_accuracy", "degradation_rate")},
    }
    aurocs = {name: a["value"] for name, a in h["signal_auroc"].items()}
    eval_hrs = {
        "provenance": {"recording": "d-test-x.jsonl"},
        "metrics": metrics,
        "selective": {"auroc": aurocs},
    }
    (tmp_path / "eval_hrs_d_test_n2.json").write_text(json.dumps(eval_hrs))
    code, stdout = _recompute(tmp_path, capsys)
    assert code == 0, stdout
    eval_hrs["metrics"]["safety_gain"] = 0.25
    (tmp_path / "eval_hrs_d_test_n2.json").write_text(json.dumps(eval_hrs))
    code, stdout = _recompute(tmp_path, capsys)
    assert code == 1 and "eval_hrs_d_test_n2.json:safety_gain" in stdout
    (tmp_path / "eval_hrs_d_test_n2.json").unlink()
    table["headline"]["risk_rule"]["lift"] = 3.0
    (tmp_path / "risk_d.json").write_text(json.dumps(table))
    code, stdout = _recompute(tmp_path, capsys)
    assert code == 1 and "lift" in stdout


def test_the_recompute_script_checks_a_risk_table_in_a_subfolder_against_its_own_items(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Another answerer's `medgate eval risk --write` output, kept in a folder of its own.
    other = tmp_path / "answerer_other"
    lines = [_line(0, True, 0.1, False, True), _line(1, False, 0.9, True, True)]
    write_items(lines, other / "items" / "d_test.jsonl.gz")
    table = {"dataset": "d", "items": "items/d_test.jsonl.gz", "headline": headline(lines, 0.2)}
    (other / "risk_d.json").write_text(json.dumps(table))
    # The top folder's item log of the same dataset is another model's: never the one read.
    write_items([_line(0, False, 0.1, False, True)], tmp_path / "items" / "d_test.jsonl.gz")
    code, stdout = _recompute(tmp_path, capsys)
    assert code == 0, stdout
    assert "answerer_other/risk_d.json: 2 items" in stdout
    table["headline"]["risk_rule"]["lift"] = 3.0
    (other / "risk_d.json").write_text(json.dumps(table))
    code, stdout = _recompute(tmp_path, capsys)
    assert code == 1 and "MISMATCH answerer_other/risk_d.json" in stdout


def test_the_recompute_script_checks_an_eval_hrs_risk_section_in_a_subfolder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [_line(0, True, 0.1, False, True), _line(1, False, 0.9, True, True)]
    other = tmp_path / "answerer_other"
    write_items(lines, other / "items" / "d_test.jsonl.gz")
    risk = {**headline(lines, 0.2), "risk_model": {"id": "shipped/x.json"}}
    table = {"provenance": {"dataset": "d"}, "risk": risk}
    (other / "eval_hrs_d_test_n2.json").write_text(json.dumps(table))
    code, stdout = _recompute(tmp_path, capsys)
    assert code == 0 and "1 tables match" in stdout, stdout
    risk["risk_rule"]["error_rate"] = 0.25
    (other / "eval_hrs_d_test_n2.json").write_text(json.dumps(table))
    code, stdout = _recompute(tmp_path, capsys)
    assert code == 1, stdout
    assert (
        "MISMATCH answerer_other/eval_hrs_d_test_n2.json:risk.risk_rule.error_rate: table 0.25"
        in stdout
    )


def test_committed_results_are_reproduced_by_the_recompute_script(
    capsys: pytest.CaptureFixture[str],
) -> None:
    results = ROOT / "docs" / "results"
    code, stdout = _recompute(results, capsys)
    assert code == 0, stdout
    # Both embedded answerers' tables were checked, the default's and the 0.5B's.
    assert "answerer_0.5b/risk_pubmedqa-l.json: 200 items" in stdout
    assert "\neval_hrs_pubmedqa-l_test_n200.json: 200 items" in stdout
    assert "tables match their item logs" in stdout


def test_hrs_config_default_rule_stays_the_papers() -> None:
    assert HRSConfig().rule.value == "algorithm1"


def test_eval_hrs_reports_the_risk_rule_beside_the_papers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from medgate.cli.risk import risk_beside
    from medgate.hrs import risk

    from ..risk_helpers import entropy_model
    from .test_experiments import recording

    config = load_config(cache_dir=tmp_path, model="fake:m", hrs={"max_iterations": 2})
    rec = recording(tmp_path)
    result: dict[str, object] = {}
    monkeypatch.setattr(risk, "SHIPPED_DIR", tmp_path / "none")
    assert risk_beside(config, "toy", rec, result) is None and "risk" not in result
    monkeypatch.setattr(risk, "SHIPPED_DIR", tmp_path / "shipped")
    model = entropy_model("fake:m", threshold=0.2)
    risk.save_risk_model(model, tmp_path / "shipped" / risk.artifact_name("fake:m", "baseline"))
    lines = risk_beside(config, "toy", rec, result)
    # risk = sigmoid(8 (entropy - 0.5)): entropies 0.2, 0.3, 0.9, 0.8, 0.7 give 0.083, 0.168,
    # 0.961, 0.917, 0.832, so a and b (risk <= 0.2) are released.
    assert [line.risk for line in lines] == pytest.approx(
        [0.0832, 0.1680, 0.9608, 0.9168, 0.8320], abs=1e-4
    )
    assert [line.escalated for line in lines] == [False, False, True, True, True]
    h = result["risk"]
    assert h["risk_rule"]["escalated"] == 3 and h["paper_rule"]["escalated"] == 2  # type: ignore[index]
    assert h["risk_rule"]["errors"] == 1  # b is released and wrong  # type: ignore[index]
    assert h["risk_model"]["threshold"] == 0.2  # type: ignore[index]
    out = capsys.readouterr().out
    assert "risk rule" in out and "paper rule" in out and "AUROC of risk" in out
