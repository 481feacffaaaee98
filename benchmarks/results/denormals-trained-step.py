# Session 56 ad-hoc timing (kept as run): python benchmarks/results/denormals-trained-step.py simp CKPT [threads]
"""Does a trained M_simp step run slower than a fresh one (subnormal floats)? Times forward+backward
(no optimiser step, so the weights stay put) of the same batches, for the fresh and the trained
weights, with and without flush-to-zero of denormals."""
import os, sys, time
os.environ["AWRSR_SRC"] = "/work/main/src"
sys.path.insert(0, "/tmp/perf")
from common import *
import torch

refine = sys.argv[1]; ckpt = sys.argv[2]; torch.set_num_threads(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
model, loader, split, max_len = setup("ml-1m", refine=refine, hidden_size=128)
fresh = {k: v.clone() for k, v in model.state_dict().items()}
state = torch.load(ckpt, map_location="cpu", weights_only=True)["state_dict"]
trained = {k.removeprefix("model."): v for k, v in state.items()}
bs = batches(loader, 3)
loss_fn = LOSSES.get("ce")
model.train()

def run():
    t = time.perf_counter()
    for s in bs:
        torch.manual_seed(0)
        i, tg = model.training_example(s)
        loss_fn(model, model(i), tg).backward()
        model.zero_grad(set_to_none=True)
    return (time.perf_counter() - t) / len(bs)

for rnd in range(2):
    for name, weights in (("fresh", fresh), ("trained", trained)):
        model.load_state_dict(weights)
        for ftz in (False, True):
            torch.set_flush_denormal(ftz)
            print(rnd, name, "ftz" if ftz else "   ", round(run(), 3), flush=True)
torch.set_flush_denormal(False)
