"""The contract of an attention-weight refinement, and the registry of refinements.

A refinement receives a layer's attention weights A (B, h, n, n), after the masked softmax and
before attention dropout, and returns the weights that multiply the values. It must keep every
invariant of A: rows non-negative, summing to one over allowed keys, exact zeros elsewhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from torch import Tensor, nn

from awrsr.nn.masks import AttentionMask
from awrsr.registry import Registry

if TYPE_CHECKING:
    from awrsr.models.config import ModelConfig


class Refinement(nn.Module):
    """Base class: subclasses implement ``forward(weights, mask)``."""

    #: True only for the identity; attention may then take its fused path.
    is_identity: bool = False
    #: Whether the refinement may let a query see keys its mask forbids (then only bidirectional
    #: backbones may use it).
    needs_bidirectional: bool = False
    #: Whether it only makes sense on stochastic (Gaussian) attention, like M_stoc.
    needs_stochastic: bool = False
    #: Whether it accepts a window of the last n <= max_len slots and gives there what the full,
    #: left-padded window would: the backbone then drops all-padding slots before the blocks.
    window_invariant: bool = False

    def forward(self, weights: Tensor, mask: AttentionMask) -> Tensor:  # pragma: no cover
        raise NotImplementedError


# A builder receives the model config and the index of the block it serves.
RefinementBuilder = Callable[["ModelConfig", int], Refinement]
REFINEMENTS: Registry[RefinementBuilder] = Registry("refinement")
