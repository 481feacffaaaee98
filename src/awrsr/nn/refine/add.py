"""M_add (AWRSR eq. 4): B = ((A W_RK)(A W_RQ)^T / sqrt(d_h) + A) / 2, balancing refined and
original weights."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch import Tensor

from awrsr.nn.masks import AttentionMask, masked_softmax
from awrsr.nn.refine.base import REFINEMENTS, Refinement
from awrsr.nn.refine.matrices import MatrixRefinement, build_matrix_refinement

if TYPE_CHECKING:  # hints only: the config's package imports the parts
    from awrsr.models.config import ModelConfig


class AdditiveRefinement(MatrixRefinement):
    matrix_names = ("query", "key")

    def forward(self, weights: Tensor, mask: AttentionMask) -> Tensor:
        # eq. 4's order: (A_k W_RK) . (A_t W_RQ), keys' matrix on the query side
        logits = (self.bilinear(weights, self.key, self.query) + weights) / 2  # (B, h, n, n)
        return masked_softmax(logits, mask)


@REFINEMENTS.register("add")
def build_additive_refinement(cfg: ModelConfig, block_index: int) -> Refinement:
    return build_matrix_refinement(AdditiveRefinement, cfg, block_index)
