"""Wasserstein self-attention (STOSA, Fan et al. 2022): items are diagonal Gaussians and the
attention logit between two positions is their negative squared 2-Wasserstein distance.

Input and output are the two streams side by side, [mean | covariance] (B, n, 2d).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

from awrsr.nn.attention.base import ATTENTIONS, AttentionWeights, head_size
from awrsr.nn.dropout import dropout
from awrsr.nn.masks import AttentionMask, masked_softmax
from awrsr.nn.precision import at_least_float32
from awrsr.nn.refine.base import Refinement
from awrsr.nn.wasserstein import gaussian_vectors, pairwise_squared_distances, positive

if TYPE_CHECKING:  # hints only: the config's package imports the parts
    from awrsr.models.config import ModelConfig


class WassersteinAttention(nn.Module):
    """A = masked-softmax(-W2^2(q_k, k_t) / sqrt(d_h)); mean out = A V_mu, covariance out = (A*A) V_cov.

    Both streams are updated (the public STOSA code's typo left the mean stream unchanged). A
    refinement acts on A (or on its logits); the mean path uses the refined weights and the
    covariance path their squares.
    """

    stochastic = True
    window_invariant = True  # distances between slots' vectors: nothing indexed by slot
    refines_logits = True  # a refinement may act on -W2^2 / sqrt(d_h) (model.refine_input: logits)

    def __init__(self, *, hidden_size: int, num_heads: int, attn_dropout: float, refinement: Refinement) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_size = head_size(hidden_size, num_heads)
        self.mean_qkv = nn.Linear(hidden_size, 3 * hidden_size)
        self.cov_qkv = nn.Linear(hidden_size, 3 * hidden_size)
        self.mean_output = nn.Linear(hidden_size, hidden_size)
        self.cov_output = nn.Linear(hidden_size, hidden_size)
        self.attn_dropout = attn_dropout
        self.refinement = refinement

    def _heads(self, x: Tensor) -> Tensor:
        B, n, _ = x.shape
        return x.view(B, n, 3, self.num_heads, self.head_size).permute(2, 0, 3, 1, 4)  # 3 x (B, h, n, d_h)

    def forward(
        self, x: Tensor, mask: AttentionMask, need_weights: bool = False
    ) -> tuple[Tensor, AttentionWeights | None]:
        if self.refinement.reads_logits:
            # A refinement's products of these unbounded distances amplify bf16's rounding of the
            # projections: under bf16 autocast the gradients came out 23-26% off float32's at the
            # default init, up to 90% at init std 0.5 (the weights' 3-5%). So this attention runs
            # in float32 at least, autocast or not.
            with torch.autocast(x.device.type, enabled=False):
                return self._attend(at_least_float32(x), mask, need_weights)
        return self._attend(x, mask, need_weights)

    def _attend(self, x: Tensor, mask: AttentionMask, need_weights: bool) -> tuple[Tensor, AttentionWeights | None]:
        B, n, _ = x.shape
        mean_in, cov_in = x.chunk(2, dim=-1)
        q_mu, k_mu, v_mu = self._heads(self.mean_qkv(mean_in))
        q_cov, k_cov, v_cov = (positive(t) for t in self._heads(self.cov_qkv(cov_in)))
        distances = pairwise_squared_distances(gaussian_vectors(q_mu, q_cov), gaussian_vectors(k_mu, k_cov))
        logits = -distances / math.sqrt(self.head_size)
        # a refinement on the logits does not read the weights: formed only when asked for
        base = masked_softmax(logits, mask) if need_weights or not self.refinement.reads_logits else None  # (B, h, n, n)
        refined = self.refinement.refine(base, logits, mask)
        dropped = dropout(refined, self.attn_dropout, self.training)
        mean_out = (dropped @ v_mu).transpose(1, 2).reshape(B, n, -1)  # (B, n, d)
        # dropped * refined = (mask / (1 - p)) * A * A: the same mask, and A*A in expectation
        # (dropped * dropped would be A*A / (1 - p) in expectation).
        cov_out = ((dropped * refined) @ v_cov).transpose(1, 2).reshape(B, n, -1)
        out = torch.cat([self.mean_output(mean_out), self.cov_output(cov_out)], dim=-1)
        weights = AttentionWeights(base=base, refined=refined) if need_weights else None
        return out, weights


@ATTENTIONS.register("wasserstein")
def build_wasserstein_attention(cfg: ModelConfig, block_index: int, refinement: Refinement) -> WassersteinAttention:
    return WassersteinAttention(
        hidden_size=cfg.hidden_size, num_heads=cfg.num_heads, attn_dropout=cfg.effective_attn_dropout,
        refinement=refinement,
    )
