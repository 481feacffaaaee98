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


class LengthGroupedBatches(Sampler[list[int]]):
    """Batches of users with similar history lengths, so that the model, which runs each batch on
    the narrowest window that holds its longest history, pads little.

    Each epoch takes ``sampler``'s permutation (an ``EpochShuffle``, whose epoch Lightning sets),
    cuts it into pools of ``pool`` batches, sorts each pool by length and splits it into as many
    batches as plain batching would give, each with about the same number of real positions
    (so short histories come in larger batches, and every position weighs in the loss about as
    it does under plain batching), then shuffles the order of all the epoch's batches. The
    batches depend only on the seed and the epoch, as plain batching's do."""

    def __init__(self, sampler: EpochShuffle, lengths: np.ndarray, batch_size: int, pool: int = 50) -> None:
        self.sampler, self.lengths, self.batch_size = sampler, np.asarray(lengths, dtype=np.int64), batch_size
        self.pool_size = pool * batch_size

    def __len__(self) -> int:
        full, rest = divmod(len(self.lengths), self.pool_size)
        return full * -(-self.pool_size // self.batch_size) + -(-rest // self.batch_size)

    def __iter__(self) -> Iterator[list[int]]:
        # A generator: the epoch's batches are drawn at the first batch, after Lightning has set the
        # epoch (a resumed run creates its iterator earlier).
        order = np.fromiter(iter(self.sampler), dtype=np.int64, count=len(self.lengths))
        batches: list[np.ndarray] = []
        for start in range(0, len(order), self.pool_size):  # a few pools per epoch, not a loop over users
            pool = order[start:start + self.pool_size]
            pool = pool[np.argsort(-self.lengths[pool], kind="stable")]
            batches += np.split(pool, balanced_cuts(self.lengths[pool], -(-len(pool) // self.batch_size)))
        generator = torch.Generator().manual_seed(self.sampler.seed * 1_000_003 + self.sampler.epoch + 7_919)
        for i in torch.randperm(len(batches), generator=generator).tolist():
            yield batches[i].tolist()


def balanced_cuts(lengths: np.ndarray, parts: int) -> np.ndarray:
    """Where to cut a run of items with these lengths into ``parts`` non-empty consecutive parts of
    about equal total length (``parts`` <= len(lengths)).

    >>> balanced_cuts(np.array([4, 4, 1, 1, 1, 1]), 3).tolist()  # parts of 4, 4 and 4
    [1, 2]
    """
    positions = np.cumsum(lengths)
    cuts = np.searchsorted(positions, positions[-1] * np.arange(1, parts) / parts, side="right")
    # Keep every part non-empty: at least one item before each cut and one after it.
    index = np.arange(1, parts)
    cuts = index + np.maximum.accumulate(np.maximum(cuts - index, 0))
    return np.minimum(cuts, len(lengths) - parts + index)


def training_loader(
    train: Sequences, max_len: int, batch_size: int, seed: int, group_by_length: bool = False,
) -> DataLoader:
    """Shuffled batches of ``training_sequences`` (each batch a one-tensor list); the order
    depends only on ``seed`` and the epoch. With ``group_by_length``, batches hold users of
    similar history lengths (``LengthGroupedBatches``). The loader gets its own generator so that
    creating its iterator never draws from torch's global RNG (a resumed run creates one more)."""
    sequences = training_sequences(train, max_len)
    shuffle = EpochShuffle(len(sequences), seed)
    generator = torch.Generator().manual_seed(seed)
    if group_by_length:
        batches = LengthGroupedBatches(shuffle, (sequences != 0).sum(dim=1).numpy(), batch_size)
        return DataLoader(TensorDataset(sequences), batch_sampler=batches, generator=generator)
    return DataLoader(TensorDataset(sequences), batch_size=batch_size, sampler=shuffle, generator=generator)
