"""The contract of an attention-weight refinement, and the registry of refinements.

A refinement receives a layer's A (B, h, n, n), before attention dropout, and returns the weights
that multiply the values. A is the attention weights after the masked softmax (SPEC.md's
default) or, with ``model.refine_input: logits``, the paper's A_kt = Q_k K_t^T / sqrt(d): the
scaled logits before the softmax, masked entries exactly 0. The returned weights must keep every
invariant of attention weights: rows non-negative, summing to one over allowed keys, exact zeros
elsewhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from torch import Tensor, nn

from awrsr.nn.masks import AttentionMask, zero_masked
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
    #: What A is: "weights" (after the masked softmax) or "logits" (before it); set from
    #: model.refine_input when the block is built, for every refinement alike.
    acts_on: str = "weights"

    def forward(self, weights: Tensor, mask: AttentionMask) -> Tensor:  # pragma: no cover
        raise NotImplementedError

    @property
    def reads_logits(self) -> bool:
        """Whether it acts on the logits; the attention then forms the weights only when they
        are asked for."""
        return self.acts_on == "logits" and not self.is_identity

    def refine(self, weights: Tensor | None, logits: Tensor, mask: AttentionMask) -> Tensor:
        """The weights that multiply the values: this refinement of ``weights`` (A after the
        masked softmax; None when it ``reads_logits``) or of ``logits`` (the scaled scores that
        softmax to the weights) with their masked entries zeroed, so that no later or padded
        key's score reaches a row through the refinement's products."""
        if self.reads_logits:
            return self(zero_masked(logits, mask), mask)
        return self(weights, mask)


# A builder receives the model config and the index of the block it serves.
RefinementBuilder = Callable[["ModelConfig", int], Refinement]
REFINEMENTS: Registry[RefinementBuilder] = Registry("refinement")
