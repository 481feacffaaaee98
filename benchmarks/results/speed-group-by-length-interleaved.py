"""Plain vs grouped batches (train.group_by_length): whole training epochs, alternating, two
rounds per model; writes a .json beside this file (docs/benchmarks.md).

    python benchmarks/results/speed-group-by-length-interleaved.py [beauty]   # pause other jobs first
"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "src")]

import torch  # noqa: E402
from speed import train_epoch_seconds  # noqa: E402

from awrsr.data import DataConfig, leave_one_out, load_sequence_data  # noqa: E402
from awrsr.models import ModelConfig, build_model  # noqa: E402
from awrsr.train.batches import training_loader  # noqa: E402

name = sys.argv[1] if len(sys.argv) > 1 else "ml-1m"
path, max_len, refinements = {
    "ml-1m": ("shared/data/ml-1m/ml-1m.txt", 200, ("none", "simp", "value", "add")),
    "beauty": ("shared/data/beauty/Beauty.txt", 50, ("none", "simp")),
}[name]
dataset = load_sequence_data(DataConfig(path=str(ROOT.parent / path)))
split = leave_one_out(dataset)
loaders = {g: training_loader(split.train, max_len, batch_size=128, seed=0, group_by_length=g) for g in (False, True)}
rows = []
for refine in refinements:
    for round_ in range(2):
        for grouped in (False, True):
            torch.manual_seed(0)
            cfg = ModelConfig(max_len=max_len, hidden_size=64, num_blocks=2, dropout=0.2, refine=refine)
            seconds, steps = train_epoch_seconds(build_model(cfg, dataset.num_items), loaders[grouped], "32-true", None)
            rows.append({"refine": refine, "round": round_, "grouped": grouped, "epoch_s": round(seconds, 2), "steps": steps})
            print(json.dumps(rows[-1]), flush=True)
suffix = "" if name == "ml-1m" else f"-{name}"
Path(__file__).with_name(Path(__file__).stem + suffix + ".json").write_text(json.dumps(rows, indent=1))
