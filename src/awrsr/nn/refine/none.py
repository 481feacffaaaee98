"""The identity refinement: plain attention."""

from __future__ import annotations

from torch import Tensor

from awrsr.nn.masks import AttentionMask
from awrsr.nn.refine.base import REFINEMENTS, Refinement


class NoRefinement(Refinement):
    is_identity = True
    window_invariant = True

    def forward(self, weights: Tensor, mask: AttentionMask) -> Tensor:
        return weights


@REFINEMENTS.register("none")
def build_no_refinement(cfg, block_index: int) -> NoRefinement:
    return NoRefinement()
