"""Training examples: every real position of each user's training sequence predicts the next item."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import torch
from torch.utils.data import DataLoader, Sampler, TensorDataset

from awrsr.data import Sequences


def next_item_tensors(train: Sequences, max_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets (U, n), built once: input = seq[:-1], target = seq[1:], both keeping the
    last n positions and left-padded with 0. Users with fewer than two items have no example."""
    keep = np.flatnonzero(train.lengths >= 2)
    rows = train.select(keep)
    inputs = torch.from_numpy(rows.drop_last().to_padded(max_len))
    targets = torch.from_numpy(rows.drop_first().to_padded(max_len))
    return inputs, targets


class EpochShuffle(Sampler[int]):
    """A permutation that depends only on (seed, epoch), so that a run resumed from a checkpoint
    sees the same order of examples as one that was never interrupted. Lightning calls
    ``set_epoch`` before every training epoch."""

    def __init__(self, size: int, seed: int) -> None:
        self.size, self.seed, self.epoch = size, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[int]:
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        return iter(torch.randperm(self.size, generator=generator).tolist())


def training_loader(train: Sequences, max_len: int, batch_size: int, seed: int) -> DataLoader:
    """Shuffled batches of (inputs, targets); the order depends only on ``seed`` and the epoch."""
    inputs, targets = next_item_tensors(train, max_len)
    return DataLoader(
        TensorDataset(inputs, targets), batch_size=batch_size, sampler=EpochShuffle(len(inputs), seed)
    )
