"""Item and position embeddings."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from awrsr.nn.dropout import Dropout
from awrsr.nn.wasserstein import positive


class ItemPositionEmbedding(nn.Module):
    """E = item_embedding * sqrt(d) + position_embedding, then dropout (SASRec).

    Item index 0 is padding and embeds to zeros. Positions are counted back from the most recent
    slot (0 = the last item), so a history gets the same embeddings whatever the amount of left
    padding; in a window of exactly max_len this is SASRec's embedding with its rows reversed.
    Padded positions are zeroed by the model after this layer. Without ``positions`` (PARec, whose
    attention encodes positions itself) only the scaled item embeddings remain. ``extra_tokens``
    adds rows after the items (BERT4Rec's [mask] is index num_items + 1).
    """

    def __init__(
        self, *, num_items: int, max_len: int, hidden_size: int, dropout: float, positions: bool = True,
        extra_tokens: int = 0,
    ) -> None:
        super().__init__()
        self.max_len = max_len
        self.items = nn.Embedding(num_items + 1 + extra_tokens, hidden_size, padding_idx=0)
        self.positions = nn.Embedding(max_len, hidden_size) if positions else None
        self.dropout = Dropout(dropout)
        self.scale = math.sqrt(hidden_size)

    def forward(self, input_ids: Tensor) -> Tensor:
        n = input_ids.shape[1]
        if n > self.max_len:
            raise ValueError(f"input window {n} is longer than the model's max_len {self.max_len}")
        x = self.items(input_ids) * self.scale  # (B, n, d)
        if self.positions is not None:
            x = x + self.positions(torch.arange(n - 1, -1, -1, device=input_ids.device))  # distance from the last slot
        return self.dropout(x)


class GaussianItemEmbedding(nn.Module):
    """STOSA's stochastic embeddings: each item is a diagonal Gaussian with a mean embedding and a
    covariance embedding, each with its own position embedding (counted back from the last slot;
    none without ``positions``), LayerNorm and dropout. Returns the two streams side by side,
    [mean | covariance] (B, n, 2d); covariances pass through ELU + 1 so they are positive.
    """

    def __init__(
        self, *, num_items: int, max_len: int, hidden_size: int, dropout: float, norm_eps: float = 1e-8,
        positions: bool = True,
    ) -> None:
        super().__init__()
        self.mean_items = nn.Embedding(num_items + 1, hidden_size, padding_idx=0)
        self.cov_items = nn.Embedding(num_items + 1, hidden_size, padding_idx=0)
        self.mean_positions = nn.Embedding(max_len, hidden_size) if positions else None
        self.cov_positions = nn.Embedding(max_len, hidden_size) if positions else None
        self.mean_norm = nn.LayerNorm(hidden_size, eps=norm_eps)
        self.cov_norm = nn.LayerNorm(hidden_size, eps=norm_eps)
        self.dropout = Dropout(dropout)

    def forward(self, input_ids: Tensor) -> Tensor:
        mean, cov = self.mean_items(input_ids), self.cov_items(input_ids)
        if self.mean_positions is not None:
            positions = torch.arange(input_ids.shape[1] - 1, -1, -1, device=input_ids.device)  # distance from the last slot
            mean, cov = mean + self.mean_positions(positions), cov + self.cov_positions(positions)
        mean = self.mean_norm(mean)
        cov = positive(self.cov_norm(cov))  # ELU + 1
        return self.dropout(torch.cat([mean, cov], dim=-1))  # (B, n, 2d)
