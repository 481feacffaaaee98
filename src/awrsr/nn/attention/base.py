"""The contract every attention mechanism keeps, and their registry.

An attention module maps normalised inputs x (B, n, d) and an ``AttentionMask`` to outputs
(B, n, d). It must be able to materialise its weights (``need_weights=True``) so they can be
refined and inspected; it may use a fused kernel when neither is needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Protocol

from torch import Tensor, nn

from awrsr.nn.masks import AttentionMask
from awrsr.registry import Registry

if TYPE_CHECKING:
    from awrsr.models.config import ModelConfig


@dataclass
class AttentionWeights:
    """One layer's weights per head: ``base`` is A (after the masked softmax), ``refined`` is the
    matrix actually multiplied into the values (equal to ``base`` without refinement).
    ``made_by`` names, for titles, what turned A into ``refined`` where they differ: a
    refinement, or AC-TSR's calibration (then ``refined`` is A_comb, even under ``refine: none``)."""

    base: Tensor  # (B, h, n, n)
    refined: Tensor  # (B, h, n, n)
    made_by: str = "refined"


class Attention(Protocol):
    def __call__(
        self, x: Tensor, mask: AttentionMask, need_weights: bool = False
    ) -> tuple[Tensor, AttentionWeights | None]: ...


def head_size(hidden_size: int, num_heads: int) -> int:
    """Width of one head; the heads must split the width evenly."""
    if hidden_size % num_heads:
        raise ValueError(f"hidden_size {hidden_size} is not divisible by num_heads {num_heads}")
    return hidden_size // num_heads


# A builder receives the model config, the block's index and its refinement part.
AttentionBuilder = Callable[["ModelConfig", int, nn.Module], nn.Module]
ATTENTIONS: Registry[AttentionBuilder] = Registry("attention")
