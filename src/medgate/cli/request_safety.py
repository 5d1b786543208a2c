"""The request-safety classifier's commands: ``fit-request-safety`` and ``eval request-safety``."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated, cast, get_args

import typer

from medgate.cli.failures import fail
from medgate.config import load_config
from medgate.errors import InputError, MedgateError

DEFAULT_OUT = Path("docs/results")


def _command() -> str:
    return "medgate " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def fit_request_safety(
    max_false_refusal_rate: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Budget: each kind of written clinician-style request's share refused on "
            "validation is at most this (default 0.05, the shipped classifier's).",
        ),
    ] = None,
    max_question_false_refusal_rate: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Budget for PubMedQA, BioASQ and patient questions on validation.",
        ),
    ] = 0.0,
    encoder: Annotated[
        str,
        typer.Option(
            help="minilm (all-MiniLM-L6-v2 sentence embeddings) or reply-state (the generator "
            "model's hidden state where it would reply to 'would this harm patients?'; readings "
            "are cached under cache_dir/request_probe), or minilm+reply-state (both side by "
            "side)."
        ),
    ] = "minilm",
    ngram_scale: Annotated[
        list[float] | None,
        typer.Option(
            help="An n-gram block scale to try (repeat the option; 0: no n-gram block). "
            "Default 1 and 2."
        ),
    ] = None,
    held_out_categories: Annotated[
        int,
        typer.Option(
            min=0,
            max=8,
            help="Whole MedSafetyBench categories (a seeded draw) kept out of fitting and "
            "choosing, to measure recall on a kind of harm never seen (default 0: the shipped "
            "classifier learns from all nine; 2 draws categories 4 and 8, as the classifier "
            "shipped before it did).",
        ),
    ] = 0,
    harm: Annotated[
        str,
        typer.Option(
            help="all: learn from MedSafetyBench's and the patient questions' harmful rows "
            "(the shipped classifier); questions: only from harmful requests worded as "
            "questions (the question screen read beside it; MedSafetyBench's rows are scored, "
            "not fitted); both: from all of them (measured, not shipped)."
        ),
    ] = "all",
    out: Annotated[
        Path | None,
        typer.Option(
            help="Where to write the artifact (default: the shipped one for the encoder and "
            "--harm)."
        ),
    ] = None,
) -> None:
    """Fit the request-safety classifier on MedSafetyBench and benign requests.

    The test part of every source (and, with --held-out-categories N, N whole MedSafetyBench
    categories) is never fitted or chosen on; C, the n-gram block's scale and the threshold are
    chosen on the validation part. Writes a JSON artifact with the weights, the n-gram
    vocabulary, the threshold and the training provenance (needs the data directory,
    MEDGATE_DATA_DIR, and scikit-learn).
    """
    from medgate.careguard.request_safety import (
        ARTIFACT_FILE,
        QUESTION_ARTIFACT_FILE,
        STATE_ARTIFACT_FILE,
        HarmExamples,
        request_encoder,
        save_artifact,
    )
    from medgate.careguard.request_safety_fit import (
        MAX_FALSE_REFUSAL_RATE,
        NGRAM_SCALE_GRID,
        build_corpus,
        fit_request_safety,
        heldout_categories,
    )

    try:
        if harm not in get_args(HarmExamples):
            raise InputError(f"--harm must be all, questions or both, not {harm!r}")
        config = load_config()
        corpus = build_corpus(
            config.data_dir,
            held_out=heldout_categories(count=held_out_categories),
            harm=cast(HarmExamples, harm),
        )
        fitted = fit_request_safety(
            corpus,
            request_encoder(config, encoder, cache=True),
            scale_grid=tuple(ngram_scale) if ngram_scale else NGRAM_SCALE_GRID,
            budget=(
                MAX_FALSE_REFUSAL_RATE if max_false_refusal_rate is None else max_false_refusal_rate
            ),
            question_budget=max_question_false_refusal_rate,
            command=_command(),
            encoder_kind=encoder,
        )
        default = (
            STATE_ARTIFACT_FILE
            if encoder != "minilm"
            else QUESTION_ARTIFACT_FILE
            if harm == "questions"
            else ARTIFACT_FILE
        )
        path = save_artifact(fitted.artifact, out or default)
    except MedgateError as exc:
        raise fail(exc) from exc
    a = fitted.artifact
    p = a.provenance
    typer.echo(
        "validation recall by (C, n-gram scale): "
        + ", ".join(f"({c:g}, {k:g}): {r:.3f}" for (c, k), r in fitted.validation_recall.items())
    )
    typer.echo(
        f"C {p.regularisation_c:g}, n-gram scale "
        f"{a.ngrams.scale if a.ngrams is not None else 0:g}, threshold {a.threshold:.4f}; "
        "held-out categories "
        f"{p.heldout_categories}"
    )
    for key, m in p.heldout.items():
        typer.echo(f"  test {key:<40} {m.refused}/{m.n} refused")
    typer.echo(f"wrote {path}")


def register(app: typer.Typer) -> None:
    app.command("fit-request-safety")(fit_request_safety)


def register_eval(ev: typer.Typer) -> None:
    """Add ``request-safety`` to the ``eval`` group."""

    @ev.command("request-safety")
    def eval_request_safety(
        out: Annotated[
            Path, typer.Option("--out", help="Report folder for JSON, Markdown and the items.")
        ] = DEFAULT_OUT,
        latency_requests: Annotated[
            int, typer.Option(min=0, help="Test requests timed one at a time (0: none).")
        ] = 200,
        loco: Annotated[
            bool, typer.Option(help="Also refit with each category left out in turn.")
        ] = True,
    ) -> None:
        """The shipped request-safety classifier on the parts it was not fitted on: recall on
        unseen and seen MedSafetyBench categories, false refusals of each benign kind, and the
        time it adds per request (no language model runs)."""
        from medgate.careguard.request_safety import (
            ARTIFACT_FILE,
            RequestSafetyClassifier,
            read_artifact,
            request_encoder,
        )
        from medgate.careguard.request_safety_fit import build_corpus
        from medgate.careguard.request_safety_report import evaluate_shipped, write_report

        try:
            config = load_config()
            settings = config.careguard.request_safety
            artifact_path = settings.artifact or ARTIFACT_FILE
            provenance = read_artifact(artifact_path).provenance
            kind = provenance.encoder_kind
            embedder = request_encoder(config, kind, cache=True)
            classifier = RequestSafetyClassifier.load(
                embedder, artifact_path, threshold=settings.threshold
            )
            fresh = getattr(embedder, "without_cache", None)
            timed = (
                RequestSafetyClassifier.load(fresh(), artifact_path, threshold=settings.threshold)
                if fresh is not None
                else None
            )
            report, items = evaluate_shipped(
                classifier,
                build_corpus(
                    config.data_dir,
                    held_out=provenance.heldout_categories,
                    harm=provenance.harm,
                ),
                command=_command(),
                latency_requests=latency_requests,
                # The check of the design is the shipped classifier's: a question screen never
                # learned from MedSafetyBench, and the fit of both together was not shipped.
                loco=loco and provenance.harm == "all",
                timed=timed,
            )
        except MedgateError as exc:
            raise fail(exc) from exc
        for key, m in report.heldout.items():
            typer.echo(f"test {key:<40} {m.refused}/{m.n} refused ({m.rate})")
        if report.latency is not None:
            typer.echo(
                f"added time per request: median {report.latency.median_s * 1000:.1f} ms, "
                f"p95 {report.latency.p95_s * 1000:.1f} ms over {report.latency.requests}"
            )
        for path in write_report(report, items, out, artifact_path.stem):
            typer.echo(f"wrote {path}")
