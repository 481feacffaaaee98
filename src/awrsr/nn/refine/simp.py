"""M_simp (AWRSR eq. 2): attention over attention rows, B = (A W_RQ)(A W_RK)^T / sqrt(d_h)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch import Tensor

from awrsr.nn.masks import AttentionMask, masked_softmax
from awrsr.nn.refine.base import REFINEMENTS, Refinement
from awrsr.nn.refine.matrices import MatrixRefinement, build_matrix_refinement

if TYPE_CHECKING:  # hints only: the config's package imports the parts
    from awrsr.models.config import ModelConfig


class SimpleRefinement(MatrixRefinement):
    """Rows of A become queries and keys of a second attention; its weights replace A."""

    matrix_names = ("query", "key")

    def forward(self, weights: Tensor, mask: AttentionMask) -> Tensor:
        logits = self.bilinear(weights, self.query, self.key)  # B_kt = (A_k W_RQ) . (A_t W_RK), (B, h, n, n)
        return masked_softmax(logits, mask)


@REFINEMENTS.register("simp")
def build_simple_refinement(cfg: ModelConfig, block_index: int) -> Refinement:
    return build_matrix_refinement(SimpleRefinement, cfg, block_index)
