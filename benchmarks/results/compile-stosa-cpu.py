# Ad-hoc (session 21): seconds per STOSA training step on Beauty, eager vs torch.compile.
# python benchmarks/results/compile-stosa-cpu.py stosa eager|compile|blocks   (see docs/benchmarks.md)
import sys, time, torch
from awrsr.data import DataConfig, load_sequence_data
from awrsr.data.split import leave_one_out
from awrsr.models import ModelConfig, build_model
from awrsr.nn.losses import LOSSES
from awrsr.train.batches import training_loader
torch.set_num_threads(1)
name = sys.argv[1]; mode = sys.argv[2]
opts = {"stosa": dict(name="stosa", attention="wasserstein", refine="none"), "sasrec": dict(name="sasrec", refine="none")}[name]
loss_name = "stosa" if name == "stosa" else "ce"
ds = load_sequence_data(DataConfig(path=str(__import__("pathlib").Path(__file__).resolve().parents[3] / "shared/data/beauty/Beauty.txt"), format="whitespace"))
split = leave_one_out(ds)
loader = training_loader(split.train, 50, batch_size=128, seed=0)
torch.manual_seed(0)
model = build_model(ModelConfig(max_len=50, hidden_size=64, num_blocks=2, dropout=0.3, **opts), ds.num_items)
loss_fn = LOSSES.get(loss_name)
opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.98))
model.train()
fwd = model
if mode == "blocks":
    for b in model.blocks: b.compile(dynamic=True)
if mode == "compile":
    fwd = torch.compile(model, dynamic=True)
def step(seq):
    opt.zero_grad(set_to_none=True)
    inputs, targets = model.training_example(seq)
    l = loss_fn(model, fwd(inputs), targets, num_negatives=1, pvn_weight=0.005) if name == "stosa" else loss_fn(model, fwd(inputs), targets, num_negatives=0)
    l.backward(); opt.step(); return l
it = iter(loader)
t0 = time.perf_counter()
for _ in range(3): step(next(it)[0])
print("warmup", time.perf_counter() - t0, flush=True)
t0 = time.perf_counter(); n = 20
for _ in range(n): step(next(it)[0])
print(name, mode, "s/step", (time.perf_counter() - t0) / n)
