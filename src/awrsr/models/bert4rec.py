"""BERT4Rec (Sun et al. 2019; papers/self-attention-primer.txt): the same blocks and attention parts
as SASRec, attending in both directions, trained by Cloze (predict randomly masked items from both
sides) and asked for the next item by appending [mask] after the history.

Our block is SASRec's pre-norm block with a GELU feed-forward network (the original uses post-norm);
items are scored against the shared item embeddings, as in SASRec.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from awrsr.errors import ConfigError
from awrsr.models.config import ModelConfig
from awrsr.models.registry import MODELS
from awrsr.models.sasrec import SASRec, transformer_blocks, wants_position_embedding
from awrsr.nn.embedding import ItemPositionEmbedding
from awrsr.nn.init import xavier_init_


class BERT4Rec(SASRec):
    causal = False

    def __init__(self, *, mask_prob: float, **kwargs) -> None:
        super().__init__(**kwargs)
        self.mask_prob = mask_prob
        self.mask_id = self.num_items + 1  # the embedding's one extra row

    def training_example(self, sequences: Tensor) -> tuple[Tensor, Tensor]:
        """Cloze on the last n items of each training sequence (``sequences`` holds n + 1): each
        real item is replaced by [mask] with probability ``mask_prob`` and becomes a target; the
        others (and padding) have target 0. A row with no masked item gets its last item masked,
        which is the question inference asks."""
        sequence = sequences[:, 1:]
        real = sequence > 0
        masked = real & (torch.rand(sequence.shape, device=sequence.device) < self.mask_prob)
        masked[:, -1] |= ~masked.any(dim=1) & real[:, -1]
        return sequence.masked_fill(masked, self.mask_id), sequence * masked

    def next_inputs(self, input_ids: Tensor) -> Tensor:
        """Each history with a [mask] appended, whose output scores the next item; a full window
        drops its oldest item."""
        mask = torch.full_like(input_ids[:, :1], self.mask_id)
        history = input_ids[:, 1:] if input_ids.shape[1] == self.max_len else input_ids
        return torch.cat([history, mask], dim=1)


@MODELS.register("bert4rec")
def build_bert4rec(cfg: ModelConfig, num_items: int) -> BERT4Rec:
    if cfg.max_len < 2:
        raise ConfigError(f"model.max_len must be >= 2 for bert4rec: one slot holds the appended [mask], got {cfg.max_len}")
    blocks = transformer_blocks(cfg, causal=BERT4Rec.causal, activation="gelu")
    model = BERT4Rec(
        num_items=num_items,
        max_len=cfg.max_len,
        embedding=ItemPositionEmbedding(
            num_items=num_items, max_len=cfg.max_len, hidden_size=cfg.hidden_size, dropout=cfg.dropout,
            positions=wants_position_embedding(cfg, blocks), extra_tokens=1,
        ),
        blocks=blocks,
        final_norm=nn.LayerNorm(cfg.hidden_size, eps=cfg.norm_eps),
        mask_prob=cfg.mask_prob,
    )
    return xavier_init_(model)
