"""Dropout with a cheaper mask on CPU.

PyTorch's CPU dropout draws its mask with ``bernoulli_``, about 12 ns per element on one core;
a uniform draw compared with p costs about a fifth of that and is the same distribution
(P(u >= p) = 1 - p for u ~ U[0, 1), drawn in float32). With dropout on the embeddings, the
attention weights and every block's two outputs, the masks took 15% of a single-threaded SASRec
step on Beauty (docs/benchmarks.md). CUDA's fused dropout kernel is already fast and is used as
it is.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def check_probability(p: float) -> float:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability must be in [0, 1], got {p}")
    return p


def dropout(x: Tensor, p: float, training: bool = True) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by 1 / (1 - p), like
    ``F.dropout``; the identity when not training or ``p == 0``.

    >>> dropout(torch.ones(10_000), 0.25).unique()
    tensor([0.0000, 1.3333])
    """
    if check_probability(p) == 0.0 or not training:
        return x
    if x.device.type != "cpu" or p == 1.0:
        return F.dropout(x, p, training)
    # Drawn in float32 whatever x's dtype: bf16 uniforms are too coarse (steps of 1/256) to keep
    # exactly a fraction 1 - p. Kept as 0 or 1 / (1 - p) in x's dtype: multiplying by a bool mask
    # would convert it element by element on every use, which costs more than the draw.
    scaled_keep = torch.rand(x.shape, device=x.device).ge_(p).mul_(1.0 / (1.0 - p)).to(x.dtype)
    return x * scaled_keep


class Dropout(nn.Module):
    """``nn.Dropout`` with the mask of :func:`dropout`."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        self.p = check_probability(p)

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
