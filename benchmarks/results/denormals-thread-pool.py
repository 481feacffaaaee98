"""Session 56: does flush-to-zero reach torch's intra-op threads? Run with none, before or after:
FTZ never set, set before the thread pool exists, or set after. Best of 3 rounds, 2 threads."""
import sys, time, torch
mode = sys.argv[1]
if mode == "before":
    torch.set_flush_denormal(True)
torch.set_num_threads(2)
a = torch.full((256, 200, 200), 1e-39); b = torch.full((256, 200, 200), 1e-39)
(a * b).sum()  # the intra-op pool exists from here
if mode == "after":
    torch.set_flush_denormal(True)
best = 1e9
for _ in range(3):
    s = time.perf_counter()
    for _ in range(3):
        (a * b).sum(); torch.exp(a - 1.0).sum(); (a + b).sum()
    best = min(best, time.perf_counter() - s)
print(mode, round(best, 3))
