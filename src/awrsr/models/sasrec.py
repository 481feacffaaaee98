"""SASRec (Kang & McAuley 2018): causal self-attention over the item sequence, scores by dot
product with the shared item embeddings."""

from __future__ import annotations

from torch import Tensor, nn

from awrsr.models.base import SequenceBackbone
from awrsr.models.config import ModelConfig
from awrsr.models.parts import build_attention
from awrsr.models.registry import MODELS
from awrsr.nn.block import TransformerBlock
from awrsr.nn.embedding import ItemPositionEmbedding
from awrsr.nn.feed_forward import PointWiseFeedForward
from awrsr.nn.init import xavier_init_


class SASRec(SequenceBackbone):
    """embedding -> blocks -> final LayerNorm -> scores against the item embeddings.

    The model fixes only this order; its blocks (and their attention and refinement parts) are
    given to it, so new mechanisms never require edits here.
    """

    causal = True

    def __init__(
        self, *, num_items: int, max_len: int, embedding: ItemPositionEmbedding,
        blocks: list[TransformerBlock], final_norm: nn.LayerNorm,
    ) -> None:
        super().__init__(num_items=num_items, max_len=max_len, embedding=embedding, blocks=blocks)
        self.final_norm = final_norm

    def finalize(self, x: Tensor) -> Tensor:
        return self.final_norm(x)

    def item_weights(self) -> Tensor:
        """The output embeddings (num_items, d) of items 1..I, shared with the input (SASRec)."""
        return self.embedding.items.weight[1 : self.num_items + 1]  # not padding, not extra tokens

    def score_all(self, hidden: Tensor) -> Tensor:
        """Scores (..., num_items) of every real item; column j is item index j + 1."""
        return hidden @ self.item_weights().T

    def linear_scores(self, hidden: Tensor) -> tuple[Tensor, Tensor]:
        """(queries, items) whose product is ``score_all``: the full cross-entropy's chunked form."""
        return hidden, self.item_weights()

    def score_items(self, hidden: Tensor, items: Tensor) -> Tensor:
        """Scores (..., m) of the given item indices (..., m) for hidden states (..., d)."""
        return (self.embedding.items(items) * hidden.unsqueeze(-2)).sum(-1)


def wants_position_embedding(cfg: ModelConfig, blocks: list[TransformerBlock]) -> bool:
    """As configured; by default yes unless the attention encodes positions itself (PARec)."""
    if cfg.position_embedding is not None:
        return cfg.position_embedding
    return not any(getattr(block.attention, "encodes_position", False) for block in blocks)


def transformer_blocks(cfg: ModelConfig, *, causal: bool, activation: str = "relu") -> list[TransformerBlock]:
    """The configured blocks of a single-stream backbone (SASRec, BERT4Rec)."""
    return [
        TransformerBlock(
            attention=build_attention(cfg, i, causal=causal, stochastic=False),
            feed_forward=PointWiseFeedForward(
                hidden_size=cfg.hidden_size, inner_size=cfg.effective_inner_size, dropout=cfg.dropout,
                activation=activation,
            ),
            hidden_size=cfg.hidden_size,
            dropout=cfg.dropout,
            norm_eps=cfg.norm_eps,
        )
        for i in range(cfg.num_blocks)
    ]


@MODELS.register("sasrec")
def build_sasrec(cfg: ModelConfig, num_items: int) -> SASRec:
    blocks = transformer_blocks(cfg, causal=SASRec.causal)
    model = SASRec(
        num_items=num_items,
        max_len=cfg.max_len,
        embedding=ItemPositionEmbedding(
            num_items=num_items, max_len=cfg.max_len, hidden_size=cfg.hidden_size, dropout=cfg.dropout,
            positions=wants_position_embedding(cfg, blocks),
        ),
        blocks=blocks,
        final_norm=nn.LayerNorm(cfg.hidden_size, eps=cfg.norm_eps),
    )
    return xavier_init_(model)
