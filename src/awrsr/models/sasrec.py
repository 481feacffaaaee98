"""SASRec (Kang & McAuley 2018): causal self-attention over the item sequence, scores by dot
product with the shared item embeddings."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from awrsr.errors import ConfigError
from awrsr.models.config import ModelConfig
from awrsr.models.registry import MODELS
from awrsr.nn.attention import ATTENTIONS, AttentionWeights
from awrsr.nn.block import TransformerBlock
from awrsr.nn.embedding import ItemPositionEmbedding
from awrsr.nn.feed_forward import PointWiseFeedForward
from awrsr.nn.init import xavier_init_
from awrsr.nn.masks import AttentionMask
from awrsr.nn.refine import REFINEMENTS


class SASRec(nn.Module):
    """embedding -> blocks -> final LayerNorm -> scores against the item embeddings.

    The model fixes only this order; its blocks (and their attention and refinement parts) are
    given to it, so new mechanisms never require edits here.
    """

    causal: bool = True

    def __init__(
        self, *, num_items: int, max_len: int, embedding: ItemPositionEmbedding,
        blocks: list[TransformerBlock], final_norm: nn.LayerNorm,
    ) -> None:
        super().__init__()
        self.num_items = num_items
        self.max_len = max_len
        self.embedding = embedding
        self.blocks = nn.ModuleList(blocks)
        self.final_norm = final_norm

    def encode(
        self, input_ids: Tensor, need_weights: bool = False
    ) -> tuple[Tensor, list[AttentionWeights]]:
        """Hidden states (B, n, d) for left-padded ``input_ids`` (B, n), and per-layer weights
        when ``need_weights``."""
        n = input_ids.shape[1]
        if n > self.max_len:
            raise ValueError(f"input window {n} is longer than the model's max_len {self.max_len}")
        # Always run the full window: refinement matrices are indexed by position.
        input_ids = F.pad(input_ids, (self.max_len - n, 0))
        mask = AttentionMask.build(input_ids, causal=self.causal)
        x = self.embedding(input_ids) * mask.real.unsqueeze(-1)  # (B, n, d)
        weights = []
        for block in self.blocks:
            x, w = block(x, mask, need_weights=need_weights)
            if w is not None:
                weights.append(w)
        return self.final_norm(x)[:, -n:], weights

    def forward(self, input_ids: Tensor) -> Tensor:
        return self.encode(input_ids)[0]

    def item_weights(self) -> Tensor:
        """The output embeddings (num_items, d) of items 1..I, shared with the input (SASRec)."""
        return self.embedding.items.weight[1:]

    def score_all(self, hidden: Tensor) -> Tensor:
        """Scores (..., num_items) of every real item; column j is item index j + 1."""
        return hidden @ self.item_weights().T

    def score_items(self, hidden: Tensor, items: Tensor) -> Tensor:
        """Scores (..., m) of the given item indices (..., m) for hidden states (..., d)."""
        return (self.embedding.items(items) * hidden.unsqueeze(-2)).sum(-1)

    def score_next(self, input_ids: Tensor) -> Tensor:
        """Scores (B, num_items) of the next item after each history in ``input_ids`` (B, n)."""
        return self.score_all(self.forward(input_ids)[:, -1])


def build_refinement(cfg: ModelConfig, block_index: int, causal: bool):
    """The configured refinement for one block, checked against the backbone's direction."""
    refinement = REFINEMENTS.get(cfg.refine)(cfg, block_index)
    if causal and refinement.needs_bidirectional:
        raise ConfigError(
            f"model.refine {cfg.refine!r} with this form lets a position see later items; "
            f"backbone {cfg.name!r} is causal (use refine_value_form: causal)"
        )
    return refinement


@MODELS.register("sasrec")
def build_sasrec(cfg: ModelConfig, num_items: int) -> SASRec:
    blocks = [
        TransformerBlock(
            attention=ATTENTIONS.get(cfg.attention)(cfg, i, build_refinement(cfg, i, SASRec.causal)),
            feed_forward=PointWiseFeedForward(
                hidden_size=cfg.hidden_size, inner_size=cfg.effective_inner_size, dropout=cfg.dropout
            ),
            hidden_size=cfg.hidden_size,
            dropout=cfg.dropout,
            norm_eps=cfg.norm_eps,
        )
        for i in range(cfg.num_blocks)
    ]
    model = SASRec(
        num_items=num_items,
        max_len=cfg.max_len,
        embedding=ItemPositionEmbedding(
            num_items=num_items, max_len=cfg.max_len, hidden_size=cfg.hidden_size, dropout=cfg.dropout
        ),
        blocks=blocks,
        final_norm=nn.LayerNorm(cfg.hidden_size, eps=cfg.norm_eps),
    )
    return xavier_init_(model)
