"""The popularity baseline: every user gets the items most frequent in training."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor, nn


class PopularityModel(nn.Module):
    """Scores each item by its training frequency, whatever the history."""

    def __init__(self, train_items: np.ndarray, num_items: int) -> None:
        super().__init__()
        counts = np.bincount(train_items, minlength=num_items + 1)[1:].astype(np.float32)
        self.register_buffer("counts", torch.from_numpy(counts))  # (num_items,)
        self.num_items = num_items

    def score_next(self, input_ids: Tensor) -> Tensor:
        return self.counts.expand(input_ids.shape[0], -1)

    def shared_scores(self) -> Tensor:
        """The scores of every history (num_items,): the evaluator ranks them by a sorted search."""
        return self.counts
