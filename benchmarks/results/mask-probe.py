"""Session 39's probe of the attention mask's cost per ML-1M-sized batch (B = 128, n = 200, one
thread, left-padded rows of random lengths): the explicit path's mask (build, logit_bias,
row_factor) and the fused kernel's (build, fused_bias), best of 3 x 40 calls, in milliseconds.
Give the source tree to time, so that two commits can be alternated in one sitting:

    git worktree add /tmp/old fe0dc2a
    python benchmarks/results/mask-probe.py /tmp/old/src; python benchmarks/results/mask-probe.py src
"""
import sys
import time

import torch

torch.set_num_threads(1)
sys.path.insert(0, sys.argv[1])
from awrsr.nn.masks import AttentionMask  # noqa: E402  (from the tree given)

B, n = 128, 200
lengths = torch.randint(1, n + 1, (B,), generator=torch.Generator().manual_seed(0))
ids = (torch.arange(n)[None, :] >= (n - lengths)[:, None]).long() * 5


def ms(f, reps=40):
    f()
    start = time.perf_counter()
    for _ in range(reps):
        f()
    return (time.perf_counter() - start) / reps * 1e3


def explicit():
    mask = AttentionMask.build(ids, True)
    mask.logit_bias, mask.row_factor


def fused():
    AttentionMask.build(ids, True).fused_bias(torch.float32)


print(sys.argv[1][-12:], "explicit", round(min(ms(explicit) for _ in range(3)), 2),
      "fused", round(min(ms(fused) for _ in range(3)), 2))
