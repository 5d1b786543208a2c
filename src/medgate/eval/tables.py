"""Console and Markdown renderings of experiment results."""

from __future__ import annotations

from typing import Any

import typer

from medgate.eval.report import fmt, md_table, pct

PAPER_TABLE2: dict[str, dict[str, tuple[float, float, float, float]]] = {
    # dataset -> "tau_e/tau_p" -> (safety gain, escalation rate, auto-answer acc., baseline acc.)
    "pubmedqa-l": {
        "0.80/0.40": (0.36, 0.24, 0.71, 0.64),
        "0.95/0.30": (0.14, 0.08, 0.68, 0.64),
        "0.98/0.30": (0.06, 0.03, 0.66, 0.64),
    },
    "pubmedqa-a": {
        "0.80/0.40": (0.38, 0.20, 0.96, 0.94),
        "0.95/0.30": (0.08, 0.03, 0.95, 0.94),
        "0.98/0.30": (0.15, 0.02, 0.95, 0.94),
    },
    "bioasq": {
        "0.80/0.40": (0.32, 0.16, 0.90, 0.84),
        "0.95/0.30": (0.06, 0.04, 0.88, 0.84),
        "0.98/0.30": (0.02, 0.03, 0.86, 0.84),
    },
}


def metric_cells(m: dict[str, Any]) -> list[str]:
    return [
        pct(m["safety_gain"]),
        pct(m["safety_gain_ceiling"]),
        pct(m["escalation_rate"]),
        pct(m["auto_answer_accuracy"]),
        pct(m["baseline_accuracy"]),
        pct(m["degradation_rate"]),
    ]


METRIC_HEADER = [
    "safety gain",
    "ceiling",
    "escalation",
    "auto-answer acc.",
    "baseline acc.",
    "degradation",
]


def print_hrs(result: dict[str, Any]) -> None:
    p, t, m = result["provenance"], result["thresholds"], result["metrics"]
    threads = f", {p['threads']} thread(s)" if p.get("threads") else ""
    typer.echo(
        f"{p['dataset']} {p['split']}: {p['n_items']} items, model {p['model']} "
        f"(sha256 {p['model_sha256'][:16]}...{threads}), orchestrator {p['orchestrator']}"
    )
    typer.echo(
        f"thresholds tau_e={t['tau_e']} tau_p={t['tau_p']} gate={t['gate_e']}/{t['gate_p']} "
        f"rule={t['rule']} revert={t['revert']} K={t['K']}"
    )
    typer.echo("Table 2 metrics (label-free revert: a flipped label escalates):")
    rows = [
        ("safety gain", pct(m["safety_gain"]), f"(ceiling {pct(m['safety_gain_ceiling'])})"),
        ("escalation rate", pct(m["escalation_rate"]), f"({m['n_escalated']}/{m['n']})"),
        ("auto-answer accuracy", pct(m["auto_answer_accuracy"]), ""),
        ("baseline accuracy", pct(m["baseline_accuracy"]), f"({m['n_wrong_baseline']} wrong)"),
        ("degradation rate", pct(m["degradation_rate"]), ""),
        ("improvement rate", pct(m["improvement_rate"]), ""),
    ]
    for name, value, note in rows:
        typer.echo(f"  {name:<22} {value:>7} {note}")
    o = result["oracle_revert_metrics"]
    typer.echo(
        f"  [oracle revert, reads gold; comparison only] safety gain {pct(o['safety_gain'])}, "
        f"escalation {pct(o['escalation_rate'])}, auto-answer {pct(o['auto_answer_accuracy'])}, "
        f"degradation {pct(o['degradation_rate'])}"
    )
    if p["rarity_centroid"] is None:
        typer.echo("  (rarity not computed: no training centroid yet; use --fit-centroid)")
    s = result["selective"]
    au = ", ".join(f"{k} {fmt(v, 2)}" for k, v in s["auroc"].items())
    typer.echo(f"AUROC for a wrong baseline: {au}")
    acc = ", ".join(f"{k} {pct(v)}" for k, v in s["accuracy_at_coverage"].items())
    typer.echo(f"AURC {fmt(s['aurc'])}; accuracy at coverage {acc}")
    u, r = result["usage"], result["run"]
    typer.echo(
        f"cost per orchestrator call ${u['cost_per_call_usd']:.6f}; latency "
        f"{fmt(u['latency_s'], 1)} s/item (as if uncached)"
    )
    typer.echo(
        f"run: {r['recorded_now']} recorded now, {r['reused']} reused; model calls "
        f"{r['cache_misses']} new, {r['cache_hits']} from cache; "
        f"wall {r.get('wall_seconds', r['seconds']):.1f} s"
    )
    if "model_seconds" in r:
        # Wall time against the items' summed model time: how far the workers overlapped.
        typer.echo(
            f"engine {r['engine']}, {r['workers']} worker(s): recording wall "
            f"{r['seconds']:.1f} s, model-seconds of the items recorded now "
            f"{r['model_seconds']:.1f} s"
        )


def hrs_markdown(result: dict[str, Any], command: str) -> str:
    p, t, m, o = (
        result["provenance"],
        result["thresholds"],
        result["metrics"],
        result["oracle_revert_metrics"],
    )
    lines = [
        f"### HRS on {p['dataset']} {p['split']} ({p['n_items']} items)",
        "",
        f"Command: `{command}`. Model `{p['model']}` sha256 `{p['model_sha256']}`; "
        f"orchestrator `{p['orchestrator']}`; recorded K={p['recorded_k']}; "
        f"recorded {p['recorded_at'][0]} to {p['recorded_at'][1]}.",
        "",
        f"Thresholds tau_e/tau_p {t['tau_e']}/{t['tau_p']}, gate {t['gate_e']}/{t['gate_p']}, "
        f"rule {t['rule']}, K={t['K']}.",
        "",
        md_table(
            ["row", *METRIC_HEADER],
            [
                ["medgate (label-free revert)", *metric_cells(m)],
                ["paper's oracle revert (reads gold; comparison only)", *metric_cells(o)],
            ],
        ),
    ]
    return "\n".join(lines)


def provenance_line(p: dict[str, Any], command: str) -> str:
    return (
        f"Command: `{command}`. {p['dataset']} {p['split']} split, {p['n_items']} items "
        f"(of {p['split_sizes'].get(p['split'], '?')}); model `{p['model']}` sha256 "
        f"`{p['model_sha256']}`; orchestrator `{p['orchestrator']}`; recorded K={p['recorded_k']} "
        f"({p['items_with_rounds']} items needed rounds); recorded {p['recorded_at'][0]} to "
        f"{p['recorded_at'][1]}; model time {p['model_seconds_total'] / 60:.1f} min."
    )


def thresholds_markdown(result: dict[str, Any], command: str) -> str:
    p = result["provenance"]
    paper = PAPER_TABLE2.get(p["dataset"], {})
    rows = []
    for r in result["rows"]:
        if r["kind"] != "paper":
            continue
        key = f"{r['tau_e']:.2f}/{r['tau_p']:.2f}"
        rows.append([key, "medgate (label-free revert)", *metric_cells(r["metrics"])])
        rows.append(
            [
                key,
                "paper's oracle revert (comparison only)",
                *metric_cells(r["oracle_revert_metrics"]),
            ]
        )
        if key in paper:
            sg, er, aa, ba = paper[key]
            rows.append(
                [
                    key,
                    "paper, Table 2 (BioMistral-7B, 200 items)",
                    pct(sg),
                    "",
                    pct(er),
                    pct(aa),
                    pct(ba),
                    "0%",
                ]
            )
    grid_rows = [
        [f"{r['tau_e']:.2f}/{r['tau_p']:.2f}", *metric_cells(r["metrics"])]
        for r in result["rows"]
        if r["kind"] == "grid"
    ]
    return "\n".join(
        [
            f"### Threshold sensitivity, {p['dataset']} ({p['n_items']} test items)",
            "",
            provenance_line(p, command),
            f" Baseline gate {result['gate'][0]}/{result['gate'][1]}, K={result['K']}.",
            "",
            md_table(["tau_e/tau_p", "row", *METRIC_HEADER], rows),
            "",
            "<details><summary>Finer grid</summary>",
            "",
            md_table(["tau_e/tau_p", *METRIC_HEADER], grid_rows),
            "",
            "</details>",
        ]
    )


def selective_markdown(result: dict[str, Any], command: str) -> str:
    p, s = result["provenance"], result["selective"]
    au = [[k, fmt(v, 3)] for k, v in s["auroc"].items()]
    acc = [[k, pct(v)] for k, v in s["accuracy_at_coverage"].items()]
    return "\n".join(
        [
            f"### Selective prediction, {p['dataset']} ({s['n']} test items, {s['n_wrong']} wrong "
            "baselines)",
            "",
            provenance_line(p, command),
            "",
            "AUROC of each round-0 signal for predicting a wrong baseline answer (0.5 = chance); "
            "`combined` = max(H_e/gate_e, H_p/gate_p), the baseline gate's own score.",
            "",
            md_table(["signal", "AUROC"], au),
            "",
            f"AURC of the combined score: {fmt(s['aurc'])}.",
            "",
            md_table(["coverage", "accuracy"], acc),
        ]
    )


def mwu_markdown(results: list[dict[str, Any]], command: str) -> str:
    lines = ["### Mann-Whitney U, escalated vs. non-escalated (round-0 signals)", ""]
    lines.append(f"Command: `{command}`. Thresholds 0.95/0.30, label-free revert.")
    for res in results:
        p = res["provenance"]
        lines += ["", provenance_line(p, command), ""]
        rows = [
            [
                r["signal"],
                f"{r['n_escalated']}/{r['n_non_escalated']}",
                fmt(r["mean_escalated"]),
                fmt(r["mean_non_escalated"]),
                fmt(r["U"], 1),
                fmt(r["p"], 4),
                "yes" if r["significant"] else ("no" if r["significant"] is False else "n/a"),
                fmt(r["common_language"]),
                fmt(r["rank_biserial"]),
            ]
            for r in res["rows"]
        ]
        lines.append(
            md_table(
                [
                    "signal",
                    "n esc/non",
                    "esc mean",
                    "non mean",
                    "U",
                    "p",
                    "p<0.05",
                    "CL effect",
                    "rank-biserial",
                ],
                rows,
            )
        )
    return "\n".join(lines)


def _ms(v: tuple[float | None, float | None] | list[Any], digits: int = 3) -> str:
    mean, std = v
    if mean is None:
        return "n/a"
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def seeds_markdown(result: dict[str, Any], command: str) -> str:
    p, a = result["provenance"], result["mean_std"]
    per = [
        [
            r["seed"],
            pct(r["safety_gain"]),
            pct(r["auto_answer_accuracy"]),
            pct(r["baseline_accuracy"]),
            pct(r["escalation_rate"]),
            fmt(r["latency_s"], 1),
        ]
        for r in result["runs"]
    ]
    return "\n".join(
        [
            f"### Multi-seed robustness, {p['dataset']} ({p['n_items']} test items)",
            "",
            provenance_line(p, command),
            "",
            md_table(
                [
                    "safety gain",
                    "auto-acc",
                    "baseline",
                    "esc. rate",
                    "input tok.",
                    "output tok.",
                    "latency (s)",
                ],
                [
                    [
                        _ms(a["safety_gain"]),
                        _ms(a["auto_answer_accuracy"]),
                        _ms(a["baseline_accuracy"]),
                        _ms(a["escalation_rate"]),
                        _ms(a["avg_input_tokens"], 1),
                        _ms(a["avg_output_tokens"], 1),
                        _ms(a["latency_s"], 2),
                    ]
                ],
            ),
            "",
            md_table(
                ["seed", "safety gain", "auto-acc", "baseline", "esc. rate", "latency (s)"], per
            ),
        ]
    )


def loso_markdown(result: dict[str, Any], command: str) -> str:
    p = result["provenance"]
    one = len(result["rows"][0]["seeds"]) == 1 if result["rows"] else False

    def cell(v: Any) -> str:
        # With one seed there is no spread to report.
        return pct(v[0]) if one else _ms(v)

    rows = [
        [
            r["configuration"],
            cell(r["safety_gain"]),
            cell(r["auto_answer_accuracy"]),
            cell(r["escalation_rate"]),
        ]
        for r in result["rows"]
    ]
    seeds = result["rows"][0]["seeds"] if result["rows"] else []
    return "\n".join(
        [
            f"### Leave-one-signal-out, {p['dataset']} ({p['n_items']} test items, seeds {seeds})",
            "",
            provenance_line(p, command),
            "",
            md_table(["configuration", "safety gain", "auto-acc", "esc. rate"], rows),
        ]
    )


def orchestrators_markdown(result: dict[str, Any], command: str) -> str:
    p = result["provenance"]
    rows = [
        [
            r["orchestrator"],
            pct(r["safety_gain"]),
            pct(r["escalation_rate"]),
            pct(r["auto_answer_accuracy"]),
            fmt(r["avg_input_tokens"], 0),
            fmt(r["avg_output_tokens"], 0),
            f"${r['cost_per_call_usd']:.6f}",
            fmt(r["latency_s"], 1) + " s",
            r["orchestrator_calls"],
            r["abstained"],
            r["errors"],
        ]
        for r in result["rows"]
    ]
    return "\n".join(
        [
            f"### Orchestrator comparison, {p['dataset']} ({p['n_items']} test items)",
            "",
            provenance_line(p, command),
            "",
            md_table(
                [
                    "orchestrator",
                    "safety gain",
                    "esc. rate",
                    "auto acc.",
                    "avg input",
                    "avg output",
                    "cost/call",
                    "latency",
                    "calls",
                    "abstained",
                    "errors",
                ],
                rows,
            ),
        ]
    )


def classifiers_markdown(results: list[dict[str, Any]], command: str) -> str:
    lines = [
        "### Six classifiers on the answering model's question embeddings",
        "",
        f"Command: `{command}`. Trained on the training split's question embeddings (mean-pooled "
        "last hidden state of the answering model), scored on the 200-item test split; "
        "`escalated acc.` is the accuracy on the test items the gate escalated at 0.95/0.30 "
        "among those recorded.",
    ]
    for res in results:
        lines += [
            "",
            f"**{res['dataset']}**: {res['n_train']} train / {res['n_test']} test items, "
            f"{res['n_escalated']} escalated items recorded; majority-class accuracy "
            f"{pct(res['majority_class_accuracy'])}; model sha256 `{res['model_sha256']}`.",
            "",
        ]
        rows = [
            [
                r["classifier"],
                fmt(r["accuracy"]),
                fmt(r["precision"]),
                fmt(r["recall"]),
                fmt(r["f1"]),
                pct(r["escalated_accuracy"]),
            ]
            for r in res["rows"]
        ]
        a = res["average"]
        rows.append(
            [
                "average",
                fmt(a["accuracy"]),
                fmt(a["precision"]),
                fmt(a["recall"]),
                fmt(a["f1"]),
                pct(res["average_escalated_accuracy"]),
            ]
        )
        lines.append(
            md_table(
                ["classifier", "accuracy", "precision", "recall", "F1", "escalated acc."], rows
            )
        )
    return "\n".join(lines)


def calibration_markdown(res: dict[str, Any], command: str) -> str:
    rows = []
    for r in res["alphas"]:
        for method in ("conformal", "paper-grid"):
            tr, te = r[method]["train"], r[method]["test"]
            rows.append(
                [
                    fmt(r["alpha"], 2),
                    method,
                    f"{tr['gate_e']:.3f}/{tr['gate_p']:.3f}",
                    f"{tr['released']}/{tr['n']}",
                    pct(tr["error_rate"]),
                    f"{te['released']}/{te['n']}",
                    pct(te["error_rate"]),
                ]
            )
    return "\n".join(
        [
            f"### Calibration on {res['dataset']} (delta {res['delta']})",
            "",
            f"Command: `{command}`. Model `{res['model']}` sha256 `{res['model_sha256']}`. "
            f"Thresholds fitted on {res['n_train']} training baselines; achieved error measured on "
            f"{res['n_test']} test items. The saved artifact ({res['method']}, alpha "
            f"{res['alpha']}) is what `medgate ask` applies.",
            "",
            "Error = wrong answers among those the baseline gate releases (K=0 gate).",
            "",
            md_table(
                [
                    "alpha",
                    "method",
                    "gate_e/gate_p",
                    "train released",
                    "train error",
                    "test released",
                    "test error",
                ],
                rows,
            ),
        ]
    )


def escalated_markdown(results: list[dict[str, Any]], command: str) -> str:
    names = [r["dataset"] for r in results]
    rows = []
    for i, clf in enumerate(r["classifier"] for r in results[0]["rows"]):
        rows.append([clf, *[pct(res["rows"][i]["escalated_accuracy"]) for res in results]])
    rows.append(["average", *[pct(res["average_escalated_accuracy"]) for res in results]])
    counts = ", ".join(f"{r['dataset']}: {r['n_escalated']} escalated" for r in results)
    return "\n".join(
        [
            "### Classifier accuracy on the escalated test items",
            "",
            f"Command: `{command}`. Escalated at 0.95/0.30 (label-free revert) among the recorded "
            f"test items ({counts}); classifiers as in Table 7.",
            "",
            md_table(["classifier", *names], rows),
        ]
    )


def _auroc_ci(a: dict[str, Any]) -> str:
    if a["value"] is None:
        return "n/a"
    ci = a["ci"]
    return f"{a['value']:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"{a['value']:.2f}"


def print_risk(h: dict[str, Any], model: Any) -> None:
    """The risk rule beside the paper's rule, from :func:`medgate.eval.risk_eval.headline`."""
    op = model.model.operating_point
    used = h.get("risk_model", {})
    if used.get("threshold_origin") == "configured":
        where = f"threshold {used['threshold']:.4f} (configured)"
    elif not op.certified:
        where = (
            f"no threshold certified for alpha {op.alpha} (delta {op.delta}) on {op.n} held-out "
            "training items: nothing is released"
        )
    else:
        where = (
            f"threshold {op.threshold:.4f} certified for alpha {op.alpha} (delta {op.delta}) "
            f"on {op.n} held-out training items"
        )
    typer.echo(
        f"risk rule: {model.id} (sha256 {str(model.origin.sha256)[:16]}...), feature set "
        f"{model.model.feature_set}, {where}"
    )
    typer.echo(f"  AUROC of risk for a wrong baseline: {_auroc_ci(h['risk_auroc'])}")
    sig = ", ".join(f"{k} {_auroc_ci(v)}" for k, v in h["signal_auroc"].items())
    typer.echo(f"  single signals: {sig}")
    for label, key in (("risk rule", "risk_rule"), ("paper rule", "paper_rule")):
        r = h[key]
        typer.echo(
            f"  {label:<10} escalated {pct(r['escalation_rate'])} ({r['escalated']}/{r['n']}), "
            f"safety gain {pct(r['safety_gain'])}, lift {fmt(r['lift'], 2)}, auto-answer "
            f"accuracy {pct(r['auto_answer_accuracy'])}"
        )
    r = h["risk_rule"]
    if r["error_rate"] is None:
        typer.echo("  released: none")
    else:
        lo, hi = r["error_ci"]
        verdict = "within" if r["error_within_alpha"] else "ABOVE"
        typer.echo(
            f"  error of released answers {pct(r['error_rate'])} [{pct(lo)}, {pct(hi)}] "
            f"({r['errors']}/{r['released']}): {verdict} alpha {r['alpha']}"
        )
