"""Parts that treat a hidden state as two streams side by side: [mean | covariance] (STOSA)."""

from __future__ import annotations

import torch
from torch import Tensor, nn


class StreamwiseLayerNorm(nn.Module):
    """A separate LayerNorm for each half of the last dimension."""

    def __init__(self, stream_size: int, eps: float = 1e-8) -> None:
        super().__init__()
        self.mean = nn.LayerNorm(stream_size, eps=eps)
        self.cov = nn.LayerNorm(stream_size, eps=eps)

    def forward(self, x: Tensor) -> Tensor:
        mean, cov = x.chunk(2, dim=-1)
        return torch.cat([self.mean(mean), self.cov(cov)], dim=-1)


class StreamwiseFeedForward(nn.Module):
    """Separate feed-forward networks for the two streams (STOSA)."""

    def __init__(self, mean: nn.Module, cov: nn.Module) -> None:
        super().__init__()
        self.mean = mean
        self.cov = cov

    def forward(self, x: Tensor) -> Tensor:
        mean, cov = x.chunk(2, dim=-1)
        return torch.cat([self.mean(mean), self.cov(cov)], dim=-1)
