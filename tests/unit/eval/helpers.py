"""Hand-built trajectories and a scripted answerer for evaluation tests."""

from __future__ import annotations

import json
import math
from pathlib import Path

from medgate.backends.base import Completion
from medgate.backends.fake import FakeModel
from medgate.eval.runner import RecordedItem
from medgate.hrs.decision import Iteration, Trajectory
from medgate.hrs.signals import ModelRun, SignalValue


def iteration(index: int, answer: str, entropy: float, perplexity: float) -> Iteration:
    dist = {"yes": 0.0, "no": 0.0, "maybe": 0.0}
    dist[answer] = 1.0
    return Iteration(
        index=index,
        run=ModelRun(answer=answer, distribution=dist),
        signals={
            "entropy": SignalValue(name="entropy", value=entropy, layer="decision"),
            "perplexity": SignalValue(name="perplexity", value=perplexity, layer="decision"),
        },
    )


def recorded(
    item_id: str, gold: str, *rounds: tuple[str, float, float], with_rounds: bool = True
) -> RecordedItem:
    its = [iteration(i, a, e, p) for i, (a, e, p) in enumerate(rounds)]
    return RecordedItem(
        item_id=item_id,
        gold=gold,
        trajectory=Trajectory(iterations=its),
        rounds_recorded=with_rounds,
        wall_seconds=1.0,
        model_seconds=2.0,
    )


SURE = [math.log(0.95)] * 10
UNSURE = [math.log(0.5)] * 10


def completion(dist: dict[str, float], logprobs: list[float]) -> Completion:
    return Completion(text="Because.", token_logprobs=logprobs, label_probs=dist, label_mass=0.9)


def write_dataset(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def scripted_answerer() -> FakeModel:
    """Confident 'yes' for questions mentioning 'easy', an unsure answer otherwise."""
    model = FakeModel("answerer")
    model.script_completion(
        "easy", completion({"yes": 0.97, "no": 0.02, "maybe": 0.01}, SURE), repeat=True
    )
    model.script_completion(
        "Question:", completion({"yes": 0.4, "no": 0.35, "maybe": 0.25}, UNSURE), repeat=True
    )
    return model
