"""Compressed-row (CSR) storage of many variable-length item sequences, and evaluation cases.

Row ``r`` is ``items[offsets[r]:offsets[r + 1]]``. Every operation is a numpy gather over all rows
at once; nothing loops over rows in Python.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np


def _row_of_each(lengths: np.ndarray) -> np.ndarray:
    """For CSR data with these row lengths, the row of every stored element."""
    return np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)


def _gather(offsets: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """New offsets, and the source positions of a CSR made of runs ``[starts[r], starts[r] + lengths[r])``."""
    new_offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    within = np.arange(new_offsets[-1], dtype=np.int64) - np.repeat(new_offsets[:-1], lengths)
    return new_offsets, np.repeat(starts, lengths) + within


@dataclass(eq=False)
class Sequences:
    """Many variable-length item-index sequences (chronological), stored as CSR int64 arrays.

    >>> s = Sequences.from_lists([[1, 2, 3], [], [4]])
    >>> len(s), s[0].tolist(), s.lengths.tolist()
    (3, [1, 2, 3], [3, 0, 1])
    >>> s.to_padded(2).tolist()
    [[2, 3], [0, 0], [0, 4]]
    """

    offsets: np.ndarray  # (M+1,) int64, offsets[0] == 0, non-decreasing
    items: np.ndarray  # (offsets[-1],) int64

    def __post_init__(self) -> None:
        self.offsets = np.ascontiguousarray(self.offsets, dtype=np.int64)
        self.items = np.ascontiguousarray(self.items, dtype=np.int64)
        if self.offsets.ndim != 1 or self.items.ndim != 1 or len(self.offsets) == 0 or self.offsets[0] != 0:
            raise ValueError("offsets must be 1-D and start with 0; items must be 1-D")
        if self.offsets[-1] != len(self.items) or (np.diff(self.offsets) < 0).any():
            raise ValueError(
                f"offsets must be non-decreasing and end at len(items)={len(self.items)}, ends at {self.offsets[-1]}"
            )

    @classmethod
    def from_lists(cls, rows: Iterable[Iterable[int]]) -> Sequences:
        """Build from Python lists (convenient for tests and small inputs)."""
        rows = [np.asarray(list(r), dtype=np.int64) for r in rows]
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([len(r) for r in rows], out=offsets[1:])
        items = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
        return cls(offsets, items)

    def to_lists(self) -> list[list[int]]:
        """Rows as Python lists."""
        return [chunk.tolist() for chunk in np.split(self.items, self.offsets[1:-1])] if len(self) else []

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> np.ndarray:
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"row {i} out of range for {n} sequences")
        i %= n
        return self.items[self.offsets[i] : self.offsets[i + 1]]

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Sequences)
            and np.array_equal(self.offsets, other.offsets)
            and np.array_equal(self.items, other.items)
        )

    def __repr__(self) -> str:
        return f"Sequences(rows={len(self)}, items={len(self.items)})"

    @property
    def lengths(self) -> np.ndarray:
        """(M,) int64 length of every row."""
        return np.diff(self.offsets)

    def to_padded(self, max_len: int) -> np.ndarray:
        """(M, max_len) int64 matrix: the last ``max_len`` items of each row, left-padded with 0."""
        if max_len < 1:
            raise ValueError(f"max_len must be >= 1, got {max_len}")
        keep = np.minimum(self.lengths, max_len)
        _, source = _gather(self.offsets, self.offsets[1:] - keep, keep)
        rows = _row_of_each(keep)
        # Element j of a kept run of length k lands in column max_len - k + j.
        cols = np.arange(len(source), dtype=np.int64) - np.repeat(np.cumsum(keep) - keep, keep) + np.repeat(max_len - keep, keep)
        out = np.zeros((len(self), max_len), dtype=np.int64)
        out[rows, cols] = self.items[source]
        return out

    def trim(self, head: int | np.ndarray = 0, tail: int | np.ndarray = 0) -> Sequences:
        """Each row without its first ``head`` and last ``tail`` items (per row when arrays; never below empty)."""
        head = np.broadcast_to(np.asarray(head, dtype=np.int64), (len(self),))
        tail = np.broadcast_to(np.asarray(tail, dtype=np.int64), (len(self),))
        if (head < 0).any() or (tail < 0).any():
            raise ValueError("head and tail must be >= 0")
        lengths = np.maximum(self.lengths - head - tail, 0)
        new_offsets, source = _gather(self.offsets, self.offsets[:-1] + head, lengths)
        return Sequences(new_offsets, self.items[source])

    def drop_last(self) -> Sequences:
        """Each row without its last item (an empty row stays empty)."""
        return self.trim(tail=1)

    def drop_first(self) -> Sequences:
        """Each row without its first item (an empty row stays empty)."""
        return self.trim(head=1)

    def select(self, rows: np.ndarray) -> Sequences:
        """The given rows (indices, in the given order, repeats allowed) or a boolean row mask."""
        rows = np.asarray(rows)
        if rows.dtype == bool:
            if rows.shape != (len(self),):
                raise ValueError(f"boolean mask has shape {rows.shape}, expected ({len(self)},)")
            rows = np.flatnonzero(rows)
        rows = rows.astype(np.int64, copy=False).reshape(-1)
        new_offsets, source = _gather(self.offsets, self.offsets[rows], self.lengths[rows])
        return Sequences(new_offsets, self.items[source])


@dataclass(eq=False)
class EvalCases:
    """Evaluation inputs: for case ``k``, user ``users[k]`` has seen ``history[k]`` and next picks ``targets[k]``.

    ``history`` is the full input history, not truncated to a model's maximum length.
    """

    users: np.ndarray  # (M,) int64 user indices
    history: Sequences
    targets: np.ndarray  # (M,) int64 item indices

    def __len__(self) -> int:
        return len(self.users)

    def __repr__(self) -> str:
        return f"EvalCases(cases={len(self)})"


@dataclass(eq=False)
class LeaveOneOutSplit:
    """Training sequences for every user, and the validation and test cases of leave-one-out."""

    train: Sequences  # one row per user (user index = row)
    valid: EvalCases
    test: EvalCases
    num_items: int

    def __repr__(self) -> str:
        return f"LeaveOneOutSplit(train={self.train!r}, valid={self.valid!r}, test={self.test!r}, num_items={self.num_items})"
