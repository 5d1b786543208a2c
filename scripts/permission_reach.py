"""Which questions a change to the permission-question detector moves, over every set we wrote.

    MEDGATE_DATA_DIR=../shared/data python scripts/permission_reach.py --base 0eea3b7 \
        [--medsafetybench] [--skip dangerous_practices_heldout_4]

Reads ``asks_permission`` as it stands and as it was at the git revision ``--base`` (the
detector's patterns are taken from that revision's ``release_checks.py``), over every question
of the request sets in ``src/medgate/careguard/data/`` (the sets written for medgate; outside
data is not read), and prints each question whose reading differs, with its set, id and kind.
A question the detector reads as asking whether to do something loses the SRA and HRA judges'
waivers and gets the endorsement check and the stance reading (docs/careguard.md, step 8), so
the general questions it newly catches are what the change can cost. With
``--medsafetybench`` it also reads the held-out MedSafetyBench rows and prints the ids of those
whose reading changes (never their text).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
from pathlib import Path

from medgate.careguard.datasets import MEDSAFETYBENCH
from medgate.careguard.release_checks import _sentences, asks_permission

DATA = Path(__file__).resolve().parents[1] / "src" / "medgate" / "careguard" / "data"
SOURCE = "src/medgate/careguard/release_checks.py"


def detector_at(revision: str) -> list[re.Pattern[str]]:
    """The question patterns ``asks_permission`` used at ``revision``."""
    source = subprocess.run(
        ["git", "show", f"{revision}:{SOURCE}"], capture_output=True, text=True, check=True
    ).stdout
    patterns = []
    scope: dict[str, object] = {"re": re}
    # One-line fragments the patterns are built from (such as _WORTH_IT), defined first.
    for line in re.findall(r"^_[A-Z_]+ = r\".*\"$", source, flags=re.MULTILINE):
        exec(line, scope)
    for name in ("PERMISSION_QUESTION", "ADVICE_TAG"):
        start = source.find(f"\n{name} = re.compile(")
        if start < 0:
            continue
        end = source.index("\n)\n", start) + 3
        # The patterns are our own committed source, read back at that revision.
        exec(source[start:end], scope)
        patterns.append(scope[name])
    return patterns  # type: ignore[return-value]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="git revision to compare against")
    parser.add_argument("--medsafetybench", action="store_true", help="also the held-out rows")
    parser.add_argument("--skip", nargs="*", default=[], help="set files (stems) to leave out")
    args = parser.parse_args()
    before = detector_at(args.base)

    def moved(question: str) -> bool:
        """The detector at ``--base`` and today's read ``question`` differently."""
        was = any(p.search(s) for p in before for s in _sentences(question))
        return was != asks_permission(question)

    read = changed = 0
    for path in sorted(p for p in DATA.glob("*.jsonl") if p.stem not in args.skip):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            question = row.get("question")
            if not question:
                continue
            read += 1
            if moved(question):
                changed += 1
                # Only two readings exist, so a moved question reads as the opposite of before.
                now = asks_permission(question)
                print(f"{path.stem}\t{row.get('id')}\t{row.get('kind')}\t-> {now}\t{question}")
    print(f"questions read: {read}; reading changed: {changed}")
    if args.medsafetybench:
        rows = MEDSAFETYBENCH.load(Path(os.environ["MEDGATE_DATA_DIR"]), "heldout")
        ids = [row.id for row in rows if moved(row.question)]
        print(f"MedSafetyBench held out: {len(rows)} rows; reading changed: {len(ids)} {ids}")


if __name__ == "__main__":
    main()
