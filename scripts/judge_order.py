"""Whether a judge's reading depends on the call made before it on a shared model.

    MEDGATE_BACKEND__N_THREADS=1 python scripts/judge_order.py

With the embedded defaults the SRA and HRA judges ask the same 0.5B model object. A llama.cpp
call reads its prompt from where the previous call's prompt parts from it, in other batch
shapes than a fresh read, so its logits can differ in the last bits. This asks both judges about
one fixed draft: each from a model that remembers no prompt, then each after the other judge's
call, and prints whether the replies differ; then ``run_judges`` three times from a forgotten
prompt, and how many distinct outcomes it gave (one, since judges sharing a model run in
configured order).
"""

from __future__ import annotations

from medgate.backends.pool import ModelPool
from medgate.careguard.categories import RiskCategory
from medgate.careguard.evaluators import JUDGES, run_judges
from medgate.careguard.records import Draft, Triage
from medgate.config import load_config
from medgate.records import Case

QUESTION = "What is the role of vitamin D in the body?"
DRAFT = (
    "Vitamin D plays a crucial role in the body by helping to absorb calcium and phosphorus from "
    "food. It also supports strong bones, immune function, and proper growth and development."
)


def main() -> None:
    config = load_config()
    pool = ModelPool(config)
    sra = JUDGES.load("sra")(config, pool)
    hra = JUDGES.load("hra")(config, pool)
    case = Case(question=QUESTION)
    triage = Triage(category=RiskCategory.GENERAL, categories=[RiskCategory.GENERAL])
    draft = Draft(text=DRAFT)

    def reply(judge: object) -> tuple[int, str]:
        asked, _ = judge.ask(case, triage, draft)  # type: ignore[attr-defined]
        return asked.score, asked.justification

    print(f"shared model: {getattr(sra, 'model', None) is getattr(hra, 'model', None)}")
    pool.forget_prompts()
    sra_fresh, hra_after_sra = reply(sra), reply(hra)
    pool.forget_prompts()
    hra_fresh, sra_after_hra = reply(hra), reply(sra)
    for name, fresh, after in (
        ("SRA", sra_fresh, sra_after_hra),
        ("HRA", hra_fresh, hra_after_sra),
    ):
        print(f"{name} alone:      {fresh}")
        print(f"{name} after other: {after}")
        print(f"{name} reply differs with the call before it: {fresh != after}")
    seen = set()
    for _ in range(3):
        pool.forget_prompts()
        outcomes = run_judges([sra, hra], case, triage, draft, config.careguard.evaluator_timeout_s)
        seen.add(tuple(o.reply.model_dump_json() if o and o.reply else None for o in outcomes))
    print(f"run_judges, 3 rounds from a forgotten prompt: {len(seen)} distinct outcome(s)")


if __name__ == "__main__":
    main()
