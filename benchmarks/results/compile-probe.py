# One-off probe (session 15): eager vs torch.compile of each block, ML-1M, 1 thread. Run from the checkout:
#   python benchmarks/results/compile-probe.py ml-1m simp static   (dataset, model.refine, eager|static|dynamic)
# Session 16 added a device (4th argument, default cpu) and the "graphs" mode (CUDA graphs,
# mode="reduce-overhead"), for a lent GPU, where launches rather than arithmetic bound a step:
#   python3 benchmarks/results/compile-probe.py beauty none graphs cuda
import sys, time, torch
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))
from speed import train_epoch_seconds
from awrsr.data import DataConfig
from awrsr.data import load_sequence_data as load_dataset
from awrsr.data import leave_one_out
from awrsr.train.batches import training_loader
from awrsr.models import ModelConfig, build_model
torch.set_num_threads(1)
name = sys.argv[1]; refine = sys.argv[2]; mode = sys.argv[3]
device = torch.device(sys.argv[4] if len(sys.argv) > 4 else "cpu")
steps_timed = 8 if device.type == "cpu" else 64  # GPU steps take milliseconds
path = {"ml-1m": "../shared/data/ml-1m/ml-1m.txt", "beauty": "../shared/data/beauty/Beauty.txt"}[name]
n = 200 if name == "ml-1m" else 50
ds = load_dataset(DataConfig(path=path))
split = leave_one_out(ds)
loader = training_loader(split.train, n, batch_size=128, seed=0)
torch.manual_seed(0)
model = build_model(ModelConfig(max_len=n, refine=refine, dropout=0.2), ds.num_items).to(device)
if mode != "eager":
    for b in model.blocks:
        if mode == "graphs":
            b.compile(mode="reduce-overhead")
        else:
            b.compile(dynamic=(mode == "dynamic"))
t = time.perf_counter()
s, steps = train_epoch_seconds(model, loader, "32-true", steps_timed, device=device)
print(name, refine, mode, device, f"epoch_s={s:.1f} steps={steps} wall={time.perf_counter()-t:.0f}", flush=True)
s, steps = train_epoch_seconds(model, loader, "32-true", steps_timed, device=device)
print(name, refine, mode, device, f"again epoch_s={s:.1f}", flush=True)
