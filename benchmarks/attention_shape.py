"""How peaked are a trained model's attention weights? Base A against refined B, per layer.

    python benchmarks/attention_shape.py runs/compare/refine-beauty/simp/seed-42
    python benchmarks/attention_shape.py RUN_DIR [RUN_DIR ...] --min-length 20 --users 256

For the last position of the first ``--users`` test users with at least ``--min-length`` items
(their window: the last ``max_len`` of them), it reports per layer and head-averaged: the mean
largest weight of the row and its mean entropy (nats), for A and for the weights actually
multiplied into the values (B; equal to A without a refinement), next to a uniform row over the
same keys, and how far each layer's refinement matrices moved from the identity (the largest
||W - I|| / ||I|| of the layer). ``--untrained`` measures instead a model of each run's config
as built before training (seed ``--seed``): where a refinement starts. Results go to
benchmarks/results/<output>.json and .md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from awrsr.data import data_config_from_dict, leave_one_out, load_sequence_data  # noqa: E402
from awrsr.infer import load_artifact  # noqa: E402
from awrsr.models import build_model  # noqa: E402


def row_shape(rows: torch.Tensor) -> tuple[float, float]:
    """Mean largest weight and mean entropy (nats) of attention rows (N, n)."""
    entropy = -(rows.clamp_min(1e-12).log() * rows).sum(-1)
    return rows.max(-1).values.mean().item(), entropy.mean().item()


def measure(run_dir: str, min_length: int, users: int, untrained_seed: int | None = None) -> list[dict]:
    artifact = load_artifact(run_dir)
    if untrained_seed is not None:  # the same parts and sizes, at their initialisation
        torch.manual_seed(untrained_seed)
        artifact.model = build_model(artifact.model_config, artifact.model.num_items).eval()
    cases = leave_one_out(load_sequence_data(data_config_from_dict(artifact.config["data"]))).test
    max_len = artifact.model_config.max_len
    chosen = np.flatnonzero(cases.history.lengths >= min_length)[:users]
    if len(chosen) == 0:
        raise SystemExit(f"{run_dir}: no test user has {min_length}+ items")
    # what the model reads to predict the next item (BERT4Rec: with its [mask] in the last slot)
    inputs = artifact.model.next_inputs(torch.from_numpy(cases.history.select(chosen).to_padded(max_len)))
    keys = (inputs > 0).sum(1).numpy()  # allowed keys of the last position: every real slot
    uniform_entropy = float(np.mean(np.log(keys)))
    with torch.no_grad():
        _, layers = artifact.model.encode(inputs, need_weights=True)
    blocks = getattr(artifact.model, "blocks", [])
    rows = []
    for index, weights in enumerate(layers):
        # how far the refinement's n x n matrices moved from their identity start (max over them);
        # a refinement's other parameters (none of the shipped ones has any) are not matrices over positions
        refinement = getattr(blocks[index].attention, "refinement", None) if index < len(blocks) else None
        matrices = [w for w in (refinement.parameters() if refinement is not None else [])
                    if tuple(w.shape[-2:]) == (max_len, max_len)]
        eye = torch.eye(max_len)
        # per matrix: per-head weights are (heads, n, n), one identity each
        moved = max(((m - eye).norm() / eye.norm()).item() for w in matrices for m in w.reshape(-1, max_len, max_len)) \
            if matrices else 0.0
        base_max, base_entropy = row_shape(weights.base[:, :, -1, :].flatten(0, 1))
        used_max, used_entropy = row_shape(weights.refined[:, :, -1, :].flatten(0, 1))
        rows.append({
            "run": run_dir + (" (untrained)" if untrained_seed is not None else ""),
            "refine": artifact.model_config.refine + ("" if artifact.model_config.refine_input == "weights" else " on logits"),
            "layer": index + 1, "users": len(chosen),
            "A_max": round(base_max, 4), "A_entropy": round(base_entropy, 3),
            "B_max": round(used_max, 4), "B_entropy": round(used_entropy, 3),
            "uniform_max": round(float(np.mean(1.0 / keys)), 4), "uniform_entropy": round(uniform_entropy, 3),
            "refinement_moved": round(moved, 2),
        })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="run directories written by awrsr fit / compare")
    parser.add_argument("--min-length", type=int, default=20)
    parser.add_argument("--users", type=int, default=256)
    parser.add_argument("--output", default="attention-shape", help="result file stem under benchmarks/results")
    parser.add_argument("--untrained", action="store_true", help="measure each run's model as built, before training")
    parser.add_argument("--seed", type=int, default=42, help="the initialisation's seed, with --untrained")
    args = parser.parse_args()
    seed = args.seed if args.untrained else None
    rows = [row for run in args.runs for row in measure(run, args.min_length, args.users, seed)]
    md = [
        f"Last position of {rows[0]['users']} test users with {args.min_length}+ items; head-averaged.", "",
        "| run | refine | layer | A: largest weight | A: entropy | B: largest weight | B: entropy | uniform: largest "
        "| uniform: entropy | refinement ||W - I|| / ||I|| |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    md += [
        f"| {r['run']} | {r['refine']} | {r['layer']} | {r['A_max']:.3f} | {r['A_entropy']:.2f} | {r['B_max']:.3f} "
        f"| {r['B_entropy']:.2f} | {r['uniform_max']:.3f} | {r['uniform_entropy']:.2f} | {r['refinement_moved']:.2f} |"
        for r in rows
    ]
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.output}.json").write_text(json.dumps(rows, indent=2) + "\n")
    (out / f"{args.output}.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
