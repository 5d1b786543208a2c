"""The rarity centroid: the mean question embedding of a training split, saved as an artifact.

Rarity is only meaningful against the same model's embeddings, so the artifact records the
model fingerprint and is refused for any other model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from pydantic import Field

from medgate.backends.base import WhiteBoxModel
from medgate.config import MedgateConfig
from medgate.errors import ConfigError
from medgate.records import Record


class RarityCentroid(Record):
    model_fingerprint: str
    dimension: int
    n_questions: int
    source: str = Field(description="What the centroid was fitted on (dataset and split).")
    fitted_at: str
    centroid: list[float]


def fit_centroid(
    model: WhiteBoxModel,
    questions: Iterable[str],
    source: str,
    progress: Callable[[int], None] | None = None,
) -> RarityCentroid:
    vectors = []
    for i, q in enumerate(questions, 1):
        vectors.append(np.asarray(model.embed(q), dtype=np.float64))
        if progress:
            progress(i)
    if not vectors:
        raise ConfigError("no questions to fit a rarity centroid on")
    mean = np.mean(np.stack(vectors), axis=0)
    return RarityCentroid(
        model_fingerprint=model.fingerprint,
        dimension=int(mean.shape[0]),
        n_questions=len(vectors),
        source=source,
        fitted_at=datetime.now(UTC).isoformat(timespec="seconds"),
        centroid=[float(x) for x in mean],
    )


def save_centroid(centroid: RarityCentroid, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(centroid.model_dump_json())
    tmp.replace(path)


def load_centroid(path: Path, model: WhiteBoxModel) -> RarityCentroid | None:
    """The centroid at ``path`` if it exists and belongs to ``model``; None if absent."""
    if not path.is_file():
        return None
    try:
        centroid = RarityCentroid.model_validate(json.loads(path.read_text()))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"rarity artifact {path} is unreadable: {exc}") from exc
    if centroid.model_fingerprint != model.fingerprint:
        raise ConfigError(
            f"rarity artifact {path} was fitted for another model "
            f"({centroid.model_fingerprint[:16]}...); refit it with `medgate fit-rarity`"
        )
    return centroid


def rarity_artifact_path(config: MedgateConfig, model: WhiteBoxModel) -> Path:
    """Where the rarity centroid for ``model`` is kept unless ``hrs.rarity_artifact`` says."""
    if config.hrs.rarity_artifact is not None:
        return config.hrs.rarity_artifact
    return config.cache_dir / "rarity" / f"{model.fingerprint[:16]}.json"
