"""STOSA (Fan et al., WWW 2022): items are diagonal Gaussians, attention is the negative
2-Wasserstein distance between them, and items are ranked by their Wasserstein distance to the
sequence's output distribution.

The hidden state of the last layer is turned into z = [mu, sqrt(Sigma)] (B, n, 2d), so that
-W2^2(output, item v) = -||z - z_v||^2: full ranking is one matrix product (plus norms), and the
evaluator, the recommender and the losses treat STOSA like any other model.
"""

from __future__ import annotations

import torch
from torch import Tensor

from awrsr.models.base import SequenceBackbone
from awrsr.models.config import ModelConfig
from awrsr.models.parts import build_attention
from awrsr.models.registry import MODELS
from awrsr.models.sasrec import wants_position_embedding
from awrsr.nn.wasserstein import positive
from awrsr.nn.block import TransformerBlock
from awrsr.nn.embedding import GaussianItemEmbedding
from awrsr.nn.feed_forward import PointWiseFeedForward
from awrsr.nn.init import xavier_init_
from awrsr.nn.streams import StreamwiseFeedForward, StreamwiseLayerNorm
from awrsr.nn.wasserstein import gaussian_vectors, pairwise_squared_distances


class STOSA(SequenceBackbone):
    causal = True

    def __init__(
        self, *, num_items: int, max_len: int, embedding: GaussianItemEmbedding,
        blocks: list[TransformerBlock], final_norm: StreamwiseLayerNorm,
    ) -> None:
        super().__init__(num_items=num_items, max_len=max_len, embedding=embedding, blocks=blocks)
        self.final_norm = final_norm

    def finalize(self, x: Tensor) -> Tensor:
        mean, cov = self.final_norm(x).chunk(2, dim=-1)
        return gaussian_vectors(mean, positive(cov))  # (B, n, 2d)

    def item_vectors(self, items: Tensor | None = None) -> Tensor:
        """z = [mu, sqrt(Sigma)] of the given item indices (..., 2d), or of all items 1..I (I, 2d)."""
        if items is None:
            mean, cov = self.embedding.mean_items.weight[1:], self.embedding.cov_items.weight[1:]
        else:
            mean, cov = self.embedding.mean_items(items), self.embedding.cov_items(items)
        return gaussian_vectors(mean, positive(cov))

    def score_all(self, hidden: Tensor) -> Tensor:
        """-W2^2 between each output distribution (N, 2d) and every item: (N, num_items)."""
        return -pairwise_squared_distances(hidden, self.item_vectors())

    #: The full cross-entropy forms [2z, 1] . [z_v, -||z_v||^2] in float32 even under bf16 autocast,
    #: as pairwise_squared_distances does: bf16 would lose the differences that rank items.
    scores_in_float32 = True

    def linear_scores(self, hidden: Tensor) -> tuple[Tensor, Tensor]:
        """(queries, items) whose product is ``score_all`` up to a constant per row, which softmax
        ignores: -||z - z_v||^2 = [2z, 1] . [z_v, -||z_v||^2] - ||z||^2. The full cross-entropy
        then runs in chunks, as for dot-product models, instead of on every (position, item) logit."""
        items = self.item_vectors()
        queries = torch.cat([2 * hidden, hidden.new_ones(*hidden.shape[:-1], 1)], dim=-1)
        return queries, torch.cat([items, -(items * items).sum(-1, keepdim=True)], dim=-1)

    def score_items(self, hidden: Tensor, items: Tensor) -> Tensor:
        """-W2^2 between outputs (..., 2d) and the given items (..., m): (..., m)."""
        return -((hidden.unsqueeze(-2) - self.item_vectors(items)) ** 2).sum(-1)


@MODELS.register("stosa")
def build_stosa(cfg: ModelConfig, num_items: int) -> STOSA:
    def feed_forward():
        return PointWiseFeedForward(hidden_size=cfg.hidden_size, inner_size=cfg.effective_inner_size, dropout=cfg.dropout)

    blocks = [
        TransformerBlock(
            attention=build_attention(cfg, i, causal=STOSA.causal, stochastic=True),
            feed_forward=StreamwiseFeedForward(mean=feed_forward(), cov=feed_forward()),
            hidden_size=2 * cfg.hidden_size,
            dropout=cfg.dropout,
            attention_norm=StreamwiseLayerNorm(cfg.hidden_size, eps=cfg.norm_eps),
            feed_forward_norm=StreamwiseLayerNorm(cfg.hidden_size, eps=cfg.norm_eps),
        )
        for i in range(cfg.num_blocks)
    ]
    model = STOSA(
        num_items=num_items,
        max_len=cfg.max_len,
        embedding=GaussianItemEmbedding(
            num_items=num_items, max_len=cfg.max_len, hidden_size=cfg.hidden_size, dropout=cfg.dropout,
            norm_eps=cfg.norm_eps, positions=wants_position_embedding(cfg, blocks),
        ),
        blocks=blocks,
        final_norm=StreamwiseLayerNorm(cfg.hidden_size, eps=cfg.norm_eps),
    )
    return xavier_init_(model)
