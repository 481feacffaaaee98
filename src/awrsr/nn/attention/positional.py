"""Positional attention (PARec / FPARec, §3 of papers/parec-fparec-positional-attention.txt):
the weights depend on positions only, softmax(R / sqrt(d)) under the mask, with a learned
n x n matrix R per layer (PARec) or its factorisation R1 R2^T of rank k (FPARec). There are no
queries or keys; the values are V = x W_V.

R is indexed by window slot, counted back from the most recent item: a window of the last n slots
(the backbone drops slots that are padding in every row of a batch) uses R's last n rows and
columns, so the weights do not depend on the padding.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

from awrsr.nn.attention.base import ATTENTIONS, AttentionWeights, head_size
from awrsr.nn.dropout import dropout
from awrsr.nn.masks import AttentionMask, masked_softmax
from awrsr.nn.refine.base import Refinement

if TYPE_CHECKING:  # hints only: the config's package imports the parts
    from awrsr.models.config import ModelConfig


class PositionWeightedValues(nn.Module):
    """What position-only attentions share: per-head weights, the masked softmax of ``logits``,
    refined, dropped out and multiplied into V = x W_V (heads concatenated). Subclasses give the
    logits; they declare ``encodes_position`` so the backbone leaves out its position embedding
    unless asked."""

    encodes_position = True
    window_invariant = True  # subclasses give the weights of the last n slots for a window of n
    refines_logits = True  # a refinement may act on the logits (model.refine_input: logits)

    def __init__(self, *, hidden_size: int, num_heads: int, attn_dropout: float, refinement: Refinement) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_size = head_size(hidden_size, num_heads)
        self.value = nn.Linear(hidden_size, hidden_size)
        self.attn_dropout = attn_dropout
        self.refinement = refinement

    def logits(self, mask: AttentionMask) -> Tensor:  # pragma: no cover - abstract
        """(B or 1, h or 1, n, n) scaled logits of the window ``mask`` covers."""
        raise NotImplementedError

    def normalise(self, logits: Tensor, mask: AttentionMask) -> Tensor:
        """The weights of ``logits``: masked entries 0, rows summing to 1 over allowed keys."""
        return masked_softmax(logits, mask)

    def forward(
        self, x: Tensor, mask: AttentionMask, need_weights: bool = False
    ) -> tuple[Tensor, AttentionWeights | None]:
        B, n, d = x.shape
        v = self.value(x).view(B, n, self.num_heads, self.head_size).transpose(1, 2)  # (B, h, n, d_h)
        logits = self.logits(mask)  # (B or 1, h or 1, n, n): a fixed pattern's one head is normalised once
        base = None  # a refinement on the logits does not read the weights: formed only when asked for
        if need_weights or not self.refinement.reads_logits:
            base = self.normalise(logits, mask).expand(B, self.num_heads, -1, -1)  # (B, h, n, n)
        refined = self.refinement.refine(base, logits.expand(-1, self.num_heads, -1, -1), mask)
        out = dropout(refined, self.attn_dropout, self.training) @ v  # (B, h, n, d_h)
        weights = AttentionWeights(base=base, refined=refined) if need_weights else None
        return out.transpose(1, 2).reshape(B, n, d), weights


class PositionalAttention(PositionWeightedValues):
    """softmax(R / sqrt(d)) with R learned (PARec) or R = R1 R2^T of rank ``rank`` (FPARec); one R
    per head (the paper uses one head, hence one R per layer)."""

    def __init__(self, *, max_len: int, rank: int | None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.max_len = max_len
        self.rank = rank
        self.scale = 1.0 / math.sqrt(self.head_size * self.num_heads)  # the paper's 1/sqrt(d)
        h = self.num_heads
        if rank is None:
            self.relation = nn.Parameter(torch.empty(h, max_len, max_len))
            nn.init.xavier_normal_(self.relation)
        else:
            self.left = nn.Parameter(torch.empty(h, max_len, rank))
            self.right = nn.Parameter(torch.empty(h, max_len, rank))
            nn.init.xavier_normal_(self.left)
            nn.init.xavier_normal_(self.right)

    def position_logits(self, n: int | None = None) -> Tensor:
        """R (h, n, n) before scaling, for the last ``n`` slots (default: all max_len)."""
        n = self.max_len if n is None else n
        if self.rank is None:
            return self.relation[:, -n:, -n:]
        return self.left[:, -n:] @ self.right[:, -n:].transpose(-2, -1)

    def logits(self, mask: AttentionMask) -> Tensor:
        n = mask.allowed.shape[-1]
        if n > self.max_len:
            raise ValueError(f"positional attention got a window of {n} slots, more than max_len={self.max_len}")
        return (self.position_logits(n) * self.scale).unsqueeze(0)  # (1, h, n, n)


@ATTENTIONS.register("positional")
def build_positional_attention(cfg: ModelConfig, block_index: int, refinement: Refinement) -> PositionalAttention:
    return PositionalAttention(
        max_len=cfg.max_len, rank=cfg.positional_rank, hidden_size=cfg.hidden_size, num_heads=cfg.num_heads,
        attn_dropout=cfg.effective_attn_dropout, refinement=refinement,
    )
