"""The transformer block: it receives its attention and feed-forward parts, and never changes
when a new attention mechanism or refinement is added."""

from __future__ import annotations

from torch import Tensor, nn

from awrsr.nn.attention.base import AttentionWeights
from awrsr.nn.dropout import Dropout
from awrsr.nn.masks import AttentionMask


class TransformerBlock(nn.Module):
    """Pre-norm block: x = x + Dropout(Attn(LN(x))); x = x + Dropout(FFN(LN(x))).

    Outputs at padded positions are set to zero so that they carry nothing to later layers.
    """

    def __init__(
        self, *, attention: nn.Module, feed_forward: nn.Module, hidden_size: int, dropout: float,
        norm_eps: float = 1e-8, attention_norm: nn.Module | None = None,
        feed_forward_norm: nn.Module | None = None,
    ) -> None:
        super().__init__()
        # Norms default to one LayerNorm; two-stream models (STOSA) pass stream-wise ones.
        self.attention_norm = attention_norm or nn.LayerNorm(hidden_size, eps=norm_eps)
        self.attention = attention
        self.feed_forward_norm = feed_forward_norm or nn.LayerNorm(hidden_size, eps=norm_eps)
        self.feed_forward = feed_forward
        self.dropout = Dropout(dropout)

    def forward(
        self, x: Tensor, mask: AttentionMask, need_weights: bool = False
    ) -> tuple[Tensor, AttentionWeights | None]:
        attended, weights = self.attention(self.attention_norm(x), mask, need_weights=need_weights)
        x = x + self.dropout(attended)  # (B, n, d)
        x = x + self.dropout(self.feed_forward(self.feed_forward_norm(x)))
        return x * mask.real.unsqueeze(-1), weights
