"""Training examples: every real position of each user's training sequence predicts the next item."""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

from awrsr.data import Sequences


def next_item_tensors(train: Sequences, max_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets (U, n), built once: input = seq[:-1], target = seq[1:], both keeping the
    last n positions and left-padded with 0. Users with fewer than two items have no example."""
    keep = np.flatnonzero(train.lengths >= 2)
    rows = train.select(keep)
    inputs = torch.from_numpy(rows.drop_last().to_padded(max_len))
    targets = torch.from_numpy(rows.drop_first().to_padded(max_len))
    return inputs, targets


def training_loader(train: Sequences, max_len: int, batch_size: int, seed: int) -> DataLoader:
    """Shuffled batches of (inputs, targets); the shuffle order depends only on ``seed``."""
    inputs, targets = next_item_tensors(train, max_len)
    generator = torch.Generator().manual_seed(seed)
    return DataLoader(TensorDataset(inputs, targets), batch_size=batch_size, shuffle=True, generator=generator)
