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
    batches as plain batching would give (``even_cuts``): batches of about equal real positions,
    over which the loss averages, so that every position weighs about as it does in plain
    batching and short histories come in larger batches; but never a batch whose padded size
    (rows x its longest history) exceeds what a plain batch can have. Then the order of all the
    epoch's batches is shuffled. The batches depend only on the seed and the epoch, as plain
    batching's do."""

    def __init__(self, sampler: EpochShuffle, lengths: np.ndarray, batch_size: int, pool: int = 50) -> None:
        self.sampler, self.lengths, self.batch_size = sampler, np.asarray(lengths, dtype=np.int64), batch_size
        self.pool_size = pool * batch_size  # a multiple of batch_size: pools add up to plain batching's count

    def __len__(self) -> int:
        return -(-len(self.lengths) // self.batch_size)

    def __iter__(self) -> Iterator[list[int]]:
        # A generator: the epoch's batches are drawn at the first batch, after Lightning has set the
        # epoch (a resumed run creates its iterator earlier).
        order = np.fromiter(iter(self.sampler), dtype=np.int64, count=len(self.lengths))
        batches: list[np.ndarray] = []
        for start in range(0, len(order), self.pool_size):  # a few pools per epoch, not a loop over users
            pool = order[start:start + self.pool_size]
            pool = pool[np.argsort(-self.lengths[pool], kind="stable")]
            batches += np.split(pool, even_cuts(self.lengths[pool], -(-len(pool) // self.batch_size)))
        generator = torch.Generator().manual_seed(self.sampler.seed * 1_000_003 + self.sampler.epoch + 7_919)
        for i in torch.randperm(len(batches), generator=generator).tolist():
            yield batches[i].tolist()


def even_cuts(lengths: np.ndarray, parts: int) -> np.ndarray:
    """Where to cut a run of histories, longest first, into ``parts`` non-empty consecutive
    batches (``parts`` <= len(lengths)).

    Batches of equal real positions (``position_cuts``) where that keeps every batch's padded size,
    rows x its first (longest) length, within that of a plain batch of equal rows. Where lengths
    jump (a long history would share a batch with hundreds of short ones) it would not, and the
    cuts that make the largest padded size as small as it can be (``padded_cuts``) are taken.

    >>> even_cuts(np.array([4, 4, 1, 1, 1, 1]), 3).tolist()  # 4 positions each
    [1, 2]
    >>> even_cuts(np.array([9, 2, 2, 2, 2, 2, 2]), 2).tolist()  # 9 x 4 slots would not fit: 9 alone
    [1]
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    plain_largest = int(lengths[0]) * -(-len(lengths) // parts)  # the first of plain batches of equal rows
    cuts = position_cuts(lengths, parts)
    starts = np.concatenate([[0], cuts])
    sizes = np.diff(np.concatenate([starts, [len(lengths)]])) * lengths[starts]
    return cuts if sizes.max() <= plain_largest else padded_cuts(lengths, parts)


def position_cuts(lengths: np.ndarray, parts: int) -> np.ndarray:
    """Cuts of a run into ``parts`` non-empty consecutive parts of about equal total length.

    >>> position_cuts(np.array([4, 4, 1, 1, 1, 1]), 3).tolist()
    [1, 2]
    """
    positions = np.cumsum(lengths)
    cuts = np.searchsorted(positions, positions[-1] * np.arange(1, parts) / parts, side="right")
    index = np.arange(1, parts)  # keep every part non-empty: one item at least before each cut and after it
    cuts = index + np.maximum.accumulate(np.maximum(cuts - index, 0))
    return np.minimum(cuts, len(lengths) - parts + index)


def padded_cuts(lengths: np.ndarray, parts: int) -> np.ndarray:
    """Cuts of a run of lengths, longest first, into ``parts`` non-empty consecutive batches that
    make the largest rows x first length as small as it can be.

    The smallest feasible size is found by bisection; for a candidate size, batches are filled
    greedily (one loop step per batch, not per history). Where the fill needs fewer batches than
    ``parts``, the batches with the most rows are halved, which only shrinks sizes.

    >>> padded_cuts(np.array([9, 2, 2, 2, 2, 2, 2]), 3).tolist()  # sizes 9, 4 x 2 and 2 x 2
    [1, 5]
    """
    lengths = np.asarray(lengths, dtype=np.int64)

    def fill(size: int) -> list[int] | None:
        """Batch starts when each batch holds at most ``size`` padded slots; None if more than ``parts``."""
        starts, i = [], 0
        while i < len(lengths):
            if len(starts) == parts:
                return None
            starts.append(i)
            i += max(1, size // int(lengths[i]))
        return starts

    low = max(int(lengths[0]), -(-int(lengths.sum()) // parts))  # no batch can be smaller than this
    high = int(lengths[0]) * -(-len(lengths) // parts)  # plain batches of equal rows always fit
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if fill(middle) is not None else (middle + 1, high)
    bounds = fill(low) + [len(lengths)]
    while len(bounds) - 1 < parts:  # halve the batch with the most rows
        widest = int(np.argmax(np.diff(bounds)))
        bounds.insert(widest + 1, (bounds[widest] + bounds[widest + 1]) // 2)
    return np.asarray(bounds[1:-1], dtype=np.int64)


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
