"""Session 56: a trained model's validation on the six batches of longest ML-1M histories, with and
without flushing subnormal floats; times and whether the ranks change.

    python benchmarks/results/denormals-trained-validation.py simp runs/compare/refine-ml-1m-tuned/simp/seed-42/checkpoints/last.ckpt
"""
import sys, time, torch
from awrsr.data import DataConfig, leave_one_out, load_sequence_data
from awrsr.eval import FullRankingEvaluator, rank_batch
from awrsr.models import ModelConfig, build_model
torch.set_num_threads(1)
refine, ckpt = sys.argv[1], sys.argv[2]
ds = load_sequence_data(DataConfig(path="../shared/data/ml-1m/ml-1m.txt")); split = leave_one_out(ds)
model = build_model(ModelConfig(max_len=200, hidden_size=128, num_blocks=2, dropout=0.2, refine=refine), ds.num_items)
state = torch.load(ckpt, map_location="cpu", weights_only=True)["state_dict"]
model.load_state_dict({k.removeprefix("model."): v for k, v in state.items()}); model.eval()
ev = FullRankingEvaluator(split.valid, 200, batch_size=256)
batches = ev.batches[-6:]
got = {}
for rnd in range(2):
    for flush in (False, True):
        torch.set_flush_denormal(flush)
        t = time.perf_counter(); ranks = torch.cat([rank_batch(model, b) for b in batches])
        got[flush] = ranks
        print(rnd, "flush" if flush else "as is", round(time.perf_counter() - t, 2), "s;", len(ranks), "users", flush=True)
print("ranks equal with and without flushing:", torch.equal(got[False], got[True]), "; differing users:", int((got[False] != got[True]).sum()))
