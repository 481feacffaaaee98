# Ad-hoc (session 21): where five eager STOSA training steps on Beauty spend their time (one thread).
import torch
from torch.profiler import profile, ProfilerActivity
from awrsr.data import DataConfig, load_sequence_data
from awrsr.data.split import leave_one_out
from awrsr.models import ModelConfig, build_model
from awrsr.nn.losses import LOSSES
from awrsr.train.batches import training_loader
torch.set_num_threads(1)
ds = load_sequence_data(DataConfig(path=str(__import__("pathlib").Path(__file__).resolve().parents[3] / "shared/data/beauty/Beauty.txt"), format="whitespace"))
split = leave_one_out(ds)
loader = training_loader(split.train, 50, batch_size=128, seed=0)
torch.manual_seed(0)
model = build_model(ModelConfig(max_len=50, hidden_size=64, num_blocks=2, dropout=0.3, name="stosa", attention="wasserstein", refine="none"), ds.num_items)
loss_fn = LOSSES.get("stosa")
opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.98))
model.train()
it = iter(loader)
def step(seq):
    opt.zero_grad(set_to_none=True)
    i, t = model.training_example(seq)
    l = loss_fn(model, model(i), t, num_negatives=1, pvn_weight=0.005); l.backward(); opt.step()
for _ in range(3): step(next(it)[0])
with profile(activities=[ProfilerActivity.CPU]) as prof:
    for _ in range(5): step(next(it)[0])
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30))
