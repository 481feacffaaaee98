"""The one dtype rule shared by the parts, the losses and the evaluator: where bf16 would lose
what matters, compute in float32, but never narrow a float64 model."""

from __future__ import annotations

import torch
from torch import Tensor


def at_least_float32(tensor: Tensor) -> Tensor:
    """``tensor`` lifted to float32 if narrower, never narrowed (a float64 model keeps its precision).

    >>> at_least_float32(torch.ones(1, dtype=torch.bfloat16)).dtype, at_least_float32(torch.ones(1, dtype=torch.float64)).dtype
    (torch.float32, torch.float64)
    """
    return tensor.to(torch.promote_types(tensor.dtype, torch.float32))
