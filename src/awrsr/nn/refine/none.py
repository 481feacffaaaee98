"""The identity refinement: plain attention."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch import Tensor

from awrsr.nn.masks import AttentionMask
from awrsr.nn.refine.base import REFINEMENTS, Refinement

if TYPE_CHECKING:  # hints only: the config's package imports the parts
    from awrsr.models.config import ModelConfig


class NoRefinement(Refinement):
    is_identity = True
    window_invariant = True

    def forward(self, weights: Tensor, mask: AttentionMask) -> Tensor:
        return weights


@REFINEMENTS.register("none")
def build_no_refinement(cfg: ModelConfig, block_index: int) -> NoRefinement:
    return NoRefinement()
