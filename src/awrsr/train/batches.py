"""Training batches: each user's training sequence, as its last max_len + 1 items.

The backbone turns a batch into what it trains on (``training_example``): next-item prediction
splits it into inputs and targets shifted by one, Cloze (BERT4Rec) masks its last max_len items.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import torch
from torch.utils.data import DataLoader, Sampler, TensorDataset

from awrsr.data import Sequences


def training_sequences(train: Sequences, max_len: int) -> torch.Tensor:
    """The last n + 1 items of each training sequence (U, n + 1), left-padded with 0 and built
    once. Users with fewer than two items have nothing to learn from and are left out."""
    keep = np.flatnonzero(train.lengths >= 2)
    return torch.from_numpy(train.select(keep).to_padded(max_len + 1))


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
    """Shuffled batches of ``training_sequences`` (each batch a one-tensor list); the order
    depends only on ``seed`` and the epoch. The loader gets its own generator so that creating
    its iterator never draws from torch's global RNG (a resumed run creates one more)."""
    sequences = training_sequences(train, max_len)
    return DataLoader(
        TensorDataset(sequences), batch_size=batch_size, sampler=EpochShuffle(len(sequences), seed),
        generator=torch.Generator().manual_seed(seed),
    )
