"""Session 56's ad-hoc timing (docs/benchmarks.md, "Subnormal floats slow a trained refinement"):
does a trained model's training step run slower than a fresh one's, and does flushing subnormal
floats to zero undo it? Forward and backward (no optimiser step, so the weights stay put) of the
same three ML-1M batches, for the weights as initialised and as trained, without and with
``torch.set_flush_denormal(True)``.

    python benchmarks/results/denormals-trained-step.py simp runs/compare/refine-ml-1m-tuned/simp/seed-42/checkpoints/last.ckpt [threads]
"""
import sys
import time

import torch

from awrsr.data import DataConfig, leave_one_out, load_sequence_data
from awrsr.models import ModelConfig, build_model
from awrsr.nn.losses import LOSSES
from awrsr.train.batches import training_loader

refine, checkpoint = sys.argv[1], sys.argv[2]
torch.set_num_threads(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
dataset = load_sequence_data(DataConfig(path="../shared/data/ml-1m/ml-1m.txt"))
split = leave_one_out(dataset)
torch.manual_seed(0)
model = build_model(ModelConfig(max_len=200, hidden_size=128, num_blocks=2, dropout=0.2, refine=refine), dataset.num_items)
fresh = {k: v.clone() for k, v in model.state_dict().items()}
state = torch.load(checkpoint, map_location="cpu", weights_only=True)["state_dict"]
trained = {k.removeprefix("model."): v for k, v in state.items()}
loader = training_loader(split.train, 200, batch_size=128, seed=0)
batches = [b for b, _ in zip((s for (s,) in loader), range(3))]
loss_fn = LOSSES.get("ce")
model.train()


def seconds_per_step() -> float:
    start = time.perf_counter()
    for sequences in batches:
        torch.manual_seed(0)
        inputs, targets = model.training_example(sequences)
        loss_fn(model, model(inputs), targets).backward()
        model.zero_grad(set_to_none=True)
    return (time.perf_counter() - start) / len(batches)


for round_ in range(2):
    for name, weights in (("initialised", fresh), ("trained", trained)):
        model.load_state_dict(weights)
        for flush in (False, True):
            torch.set_flush_denormal(flush)
            print(round_, name, "flush-to-zero" if flush else "as is", round(seconds_per_step(), 3), flush=True)
torch.set_flush_denormal(False)
