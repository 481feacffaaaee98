"""Ranking the popularity baseline over a large catalogue: the sorted search the evaluator uses
for scores shared by every user, against the (users x items) count it uses for a model.

    python benchmarks/popularity_ranking.py                       # 20k users, 779k items
    python benchmarks/popularity_ranking.py --items 100000 --users 50000

Synthetic Zipf(1.3) training counts, histories of 3-119 items and targets; one torch thread.
Both paths must give the same ranks (the script checks). Results go to
benchmarks/results/<output>.json and .md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from awrsr.data.sequences import EvalCases, Sequences  # noqa: E402
from awrsr.eval import FullRankingEvaluator  # noqa: E402
from awrsr.models import PopularityModel  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=779_000)
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument("--output", default="popularity-ranking", help="result file stem under benchmarks/results")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)

    def draw(size: int) -> np.ndarray:  # item indices 1..items, Zipf-popular
        return rng.zipf(1.3, size=size) % args.items + 1

    popularity = PopularityModel(draw(5_000_000), args.items)
    histories = [list(draw(int(rng.integers(3, 120)))) for _ in range(args.users)]
    cases = EvalCases(users=np.arange(args.users), history=Sequences.from_lists(histories), targets=draw(args.users))
    evaluator = FullRankingEvaluator(cases, max_len=50)
    timed = {}
    # without shared_scores, the same scores are ranked like any model's
    counted = SimpleNamespace(score_next=popularity.score_next)
    for name, model in (("sorted search (shared_scores)", popularity), ("count over users x items", counted)):
        started = time.perf_counter()
        timed[name] = (evaluator.ranks(model), time.perf_counter() - started)
    (fast, fast_s), (brute, brute_s) = timed.values()
    if not torch.equal(fast, brute):
        raise SystemExit("the two paths ranked differently")
    rows = [{"path": name, "users": args.users, "items": args.items, "seconds": round(s, 3)} for name, (_, s) in timed.items()]
    lines = ["| path | users | items | seconds |", "|---|---|---|---|"]
    lines += [f"| {r['path']} | {r['users']:,} | {r['items']:,} | {r['seconds']:.3f} |" for r in rows]
    lines += ["", f"Same ranks on both paths; {brute_s / fast_s:.0f}x faster."]
    print("\n".join(lines))
    out = ROOT / "benchmarks" / "results"
    (out / f"{args.output}.json").write_text(json.dumps(rows, indent=2) + "\n")
    (out / f"{args.output}.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
