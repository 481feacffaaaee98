"""The same config and seeds trained on two machines: how far a change of machine moves a run.

    python benchmarks/machine_effect.py RUNS_A VARIANT_A RUNS_B VARIANT_B [--seeds 42 43 44]

RUNS_X/VARIANT_X/seed-<seed>/metrics.json are finished runs of one config (e.g. an archived H100
comparison and the same variant trained again on this CPU). Prints, per seed and metric, both test
values and B against A in %, and over the seeds the mean change with its paired p-value.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from awrsr.experiments.stats import mean_std, paired_p_value, relative_improvement  # noqa: E402

METRICS = ("hr@1", "hr@5", "ndcg@5", "ndcg@10")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs_a", type=Path)
    parser.add_argument("variant_a")
    parser.add_argument("runs_b", type=Path)
    parser.add_argument("variant_b")
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 43, 44])
    args = parser.parse_args()
    records = {
        (side, seed): json.loads((root / variant / f"seed-{seed}" / "metrics.json").read_text())
        for side, root, variant in (("a", args.runs_a, args.variant_a), ("b", args.runs_b, args.variant_b))
        for seed in args.seeds
    }
    device = {side: {records[side, s]["machine"]["device"] for s in args.seeds} for side in ("a", "b")}
    print(f"A: {args.variant_a} on {', '.join(sorted(device['a']))}; B: {args.variant_b} on {', '.join(sorted(device['b']))}\n")
    print("| seed | metric | A | B | B vs A |\n|---|---|---|---|---|")
    for metric in METRICS:
        a = [records["a", s]["test"][metric] for s in args.seeds]
        b = [records["b", s]["test"][metric] for s in args.seeds]
        for seed, x, y in zip(args.seeds, a, b):
            print(f"| {seed} | {metric} | {x:.4f} | {y:.4f} | {relative_improvement(y, x):+.2f}% |")
        change = relative_improvement(mean_std(b)[0], mean_std(a)[0])
        print(f"| mean | {metric} | {mean_std(a)[0]:.4f} | {mean_std(b)[0]:.4f} | {change:+.2f}% (p = {paired_p_value(b, a):.3f}) |")
    for seed in args.seeds:
        a, b = (records[side, seed]["selection"] for side in ("a", "b"))
        print(f"seed {seed}: best epoch {a['best_epoch']} / {b['best_epoch']}, epochs {a['epochs_trained']} / {b['epochs_trained']}")


if __name__ == "__main__":
    main()
