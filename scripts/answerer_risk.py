"""Which embedded model answers better, measured with a risk model fitted for each: 0.5B vs 1.5B.

The 1.5B's first answer to every training and test item of the three datasets is committed
(``docs/results/peer/<dataset>_<split>.jsonl``, written by scripts/peer_agreement.py): the
1.5B read exactly the baseline prompt the 0.5B answered, greedily, and its label distribution at
the answer slot was kept. Its reasoning and sampled answers were not kept, so a risk model for the
1.5B can read only what that distribution gives, plus the cues of the case's evidence (which do
not depend on the model): the feature set ``answer_slot+evidence`` (medgate.hrs.features). The
0.5B's recordings hold the same, so both answerers get a risk model fitted on those features
alone, the same way: on the same 900 training items (the pooled training splits), regularisation
by cross-validation on the fitting part, threshold certified by conformal risk control on the
calibration part (``medgate eval risk`` does the same for the shipped models). Nothing here is
chosen on a test item; the feature set was fixed before any test figure of it was read.

Reported per test split (200 items each): each model's accuracy, the risk model's AUROC for a
wrong answer with its bootstrap interval, and at the certified threshold the share escalated,
the lift and the error among released answers. For scale, the 0.5B's shipped ``evidence`` model
(which also reads the reasoning and the samples) is in docs/results/README.md.

Run (seconds; no model is loaded):
    MEDGATE_RECORDINGS_DIR=docs/results/recordings MEDGATE_BACKEND__N_THREADS=1 \\
        python scripts/answerer_risk.py --out docs/results/answerer_risk.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from medgate.config import load_config
from medgate.eval.risk_eval import ItemLine, item_lines, risk_figures
from medgate.eval.risk_fit import Recorded, fit_risk_model
from medgate.eval.risk_run import DATASETS, ORCHESTRATOR, K, _unsaved, paper_config, recorded_items
from medgate.eval.runner import RecordedItem, cached_model, call_cache
from medgate.hrs.signals import EntropySignal, SignalContext

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_agreement import peer_answers, peer_weights, with_peer

FEATURE_SET = "answer_slot+evidence"
ALPHA, DELTA = 0.3, 0.1
TRAIN_LIMIT, TEST_LIMIT = 300, 200


def as_answerer(
    records: Sequence[RecordedItem], peers: dict[str, dict[str, Any]]
) -> list[RecordedItem]:
    """The records with the second model as the answerer: its label and distribution as the first
    answer, entropy recomputed from that distribution, and nothing the 0.5B wrote (reasoning,
    samples, knowledge rounds). The case's evidence cues are the case's and stay. Records without
    a second-model answer are left out."""
    entropy = EntropySignal()
    out = []
    for rec in with_peer(records, peers):
        first = rec.trajectory.iterations[0]
        run = first.run.model_copy(
            update={
                "answer": first.run.peer_answer,
                "distribution": first.run.peer_distribution,
                "label_mass": None,
                "opening_distribution": None,
                "opening_label_mass": None,
                "reasoning": "",
                "reasoning_logprobs": [],
                "sample_distributions": [],
                "sample_answers": [],
                "peer_answer": None,
                "peer_distribution": None,
            }
        )
        signals = {"entropy": entropy.compute(run, SignalContext(l_max=1))}
        only = first.model_copy(update={"run": run, "signals": signals, "timings": []})
        traj = rec.trajectory.model_copy(update={"iterations": [only]})
        out.append(rec.model_copy(update={"trajectory": traj}))
    return out


def by_score(line: ItemLine, threshold: float) -> ItemLine:
    """The line as the risk rule decides on its score alone: escalated iff the risk is above
    the threshold (or unknown). The gate also escalates an answer whose perplexity was not
    computed, and the 1.5B's reasoning was not kept, so its lines would all be escalated for
    that; both models are read this same way."""
    escalated = line.risk is None or line.risk > threshold
    return line.model_copy(update={"escalated": escalated})


def measure() -> dict[str, Any]:
    config = load_config()
    config = config.model_copy(update={"hrs": config.hrs.model_copy(update={"max_iterations": K})})
    small = cached_model(config.model, config, call_cache(config)).fingerprint
    train_peers = {ds: peer_answers(ds, "train") for ds in DATASETS}
    test_peers = {ds: peer_answers(ds, "test") for ds in DATASETS}
    large_spec, large_sha = peer_weights([*train_peers.values(), *test_peers.values()])
    train = {ds: recorded_items(config, ds, "train", TRAIN_LIMIT, True)[0] for ds in DATASETS}
    test = {ds: recorded_items(config, ds, "test", TEST_LIMIT, True)[0] for ds in DATASETS}
    # The same items for both answerers: those the 1.5B answered.
    parts = {
        config.model: (
            small,
            {ds: [r for r in recs if r.item_id in train_peers[ds]] for ds, recs in train.items()},
            {ds: [r for r in recs if r.item_id in test_peers[ds]] for ds, recs in test.items()},
        ),
        large_spec: (
            large_sha,
            {ds: as_answerer(recs, train_peers[ds]) for ds, recs in train.items()},
            {ds: as_answerer(recs, test_peers[ds]) for ds, recs in test.items()},
        ),
    }
    paper = paper_config(config)
    out: dict[str, Any] = {"feature_set": FEATURE_SET, "alpha": ALPHA, "delta": DELTA, "models": {}}
    for spec, (fingerprint, fit_on, tests) in parts.items():
        recorded = Recorded(spec, fingerprint, ORCHESTRATOR, "", K)
        command = "python scripts/answerer_risk.py"
        model = fit_risk_model(fit_on, recorded, FEATURE_SET, ALPHA, DELTA, command=command)
        loaded = _unsaved(model, FEATURE_SET)
        threshold = model.operating_point.threshold
        per_test: dict[str, Any] = {}
        for ds, recs in tests.items():
            lines = [
                by_score(line, threshold) for line in item_lines(ds, recs, paper, loaded, threshold)
            ]
            figures = risk_figures(lines, ALPHA)
            per_test[ds] = {
                "items": len(lines),
                "accuracy": round(sum(line.correct for line in lines) / len(lines), 3),
                "risk_auroc": figures["risk_auroc"],
                "risk_rule": figures["risk_rule"],
            }
        out["models"][spec] = {
            "sha256": fingerprint,
            "training_items": {ds: len(recs) for ds, recs in fit_on.items()},
            "C": model.regularisation_c,
            "cv_auroc": model.cv_auroc,
            "calibration_auroc": model.calibration_auroc,
            "threshold": threshold,
            "certified": model.operating_point.certified,
            "coefficients": dict(zip(model.features, model.coef, strict=True)),
            "test": per_test,
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args()
    result = measure()
    text = json.dumps(result, indent=1, default=str)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
