"""M_stoc (AWRSR §2.3, mechanism 4; STOSA only): each row of A becomes a Gaussian,
mu_k = A_k W_mu, Sigma_k = ELU(A_k W_Sigma) + 1, and the refined logits are their negative squared
2-Wasserstein distances / sqrt(d_h), keeping the probabilistic reading of STOSA's weights."""

from __future__ import annotations

from torch import Tensor

from awrsr.nn.masks import AttentionMask, masked_softmax
from awrsr.nn.refine.base import REFINEMENTS
from awrsr.nn.refine.matrices import MatrixRefinement, build_matrix_refinement
from awrsr.nn.wasserstein import gaussian_vectors, pairwise_squared_distances, positive


class StochasticRefinement(MatrixRefinement):
    matrix_names = ("mean", "cov")
    needs_stochastic = True

    def forward(self, weights: Tensor, mask: AttentionMask) -> Tensor:
        mean = self.project(weights, self.mean)  # (B, h, n, n)
        cov = positive(self.project(weights, self.cov))  # ELU + 1
        z = gaussian_vectors(mean, cov)  # (B, h, n, 2n)
        return masked_softmax(-pairwise_squared_distances(z, z) * self.scale, mask)


@REFINEMENTS.register("stoc")
def build_stochastic_refinement(cfg, block_index: int):
    return build_matrix_refinement(StochasticRefinement, cfg, block_index)
