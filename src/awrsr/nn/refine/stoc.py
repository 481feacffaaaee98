"""M_stoc (AWRSR §2.3, mechanism 4; STOSA only): each row of A becomes a Gaussian,
mu_k = A_k W_mu, Sigma_k = ELU(A_k W_Sigma) + 1, and the refined logits are their negative
2-Wasserstein distances / sqrt(d_h), keeping the probabilistic reading of STOSA's weights.

``distance`` chooses the distance: ``squared`` (W2^2, as STOSA's own attention and the public
STOSA code use; the default) or ``plain`` (W2, as the AWRSR paper and SPEC.md write it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch import Tensor

from awrsr.errors import FieldValueError
from awrsr.nn.masks import AttentionMask, masked_softmax
from awrsr.nn.refine.base import REFINEMENTS, Refinement
from awrsr.nn.refine.matrices import MatrixRefinement, build_matrix_refinement
from awrsr.nn.wasserstein import gaussian_vectors, pairwise_distances, pairwise_squared_distances, positive

if TYPE_CHECKING:  # hints only: the config's package imports the parts
    from awrsr.models.config import ModelConfig


class StochasticRefinement(MatrixRefinement):
    matrix_names = ("mean", "cov")
    needs_stochastic = True

    def __init__(self, *, distance: str = "squared", **kwargs) -> None:
        super().__init__(**kwargs)
        if distance not in ("squared", "plain"):
            raise FieldValueError("model.refine_stoc_distance", f"must be 'squared' or 'plain', got {distance!r}")
        self.distance = distance

    def forward(self, weights: Tensor, mask: AttentionMask) -> Tensor:
        mean = self.project(weights, self.mean)  # (B, h, n, n)
        cov = positive(self.project(weights, self.cov))  # ELU + 1
        z = gaussian_vectors(mean, cov)  # (B, h, n, 2n)
        distances = pairwise_distances(z, z) if self.distance == "plain" else pairwise_squared_distances(z, z)
        return masked_softmax(-distances * self.scale, mask)


@REFINEMENTS.register("stoc")
def build_stochastic_refinement(cfg: ModelConfig, block_index: int) -> Refinement:
    return build_matrix_refinement(StochasticRefinement, cfg, block_index, distance=cfg.refine_stoc_distance)
