"""Interaction frame -> chronological, de-duplicated, k-core filtered, integer-indexed sequences.

All steps are polars expressions over the whole frame; the only Python loop is over k-core rounds.
``drop_duplicate_ids`` applies the same duplicates policy to one history given to a trained model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import polars as pl

from awrsr.data.config import DataConfig
from awrsr.errors import DataError


def sort_chronologically(frame: pl.DataFrame) -> pl.DataFrame:
    """Group rows by user (users in order of first appearance) and sort each user by (timestamp, row).

    ``row`` breaks timestamp ties, so equal times keep file order; with no timestamps this is
    simply file order within each user.
    """
    # Users are ordered by where they first appear rather than by id value, so string ids do not
    # sort as text ("10" before "2") and files grouped by user keep their order.
    keys = [pl.col("row").min().over("user"), pl.col("timestamp"), pl.col("row")]
    if frame.get_column("timestamp").null_count() == frame.height:
        keys.pop(1)
    return frame.sort(keys)


def drop_duplicates(frame: pl.DataFrame, policy: str) -> pl.DataFrame:
    """Apply the duplicates policy to a chronologically sorted frame.

    ``keep``: every repeat stays; ``first``: only a user's first interaction with an item stays;
    ``consecutive``: an interaction equal to the same user's previous one is dropped
    (``a a b a`` -> ``a b a``).
    """
    if policy == "keep":
        return frame
    if policy == "first":
        return frame.filter(pl.struct("user", "item").is_first_distinct())
    if policy == "consecutive":
        repeat = (pl.col("user") == pl.col("user").shift(1)) & (pl.col("item") == pl.col("item").shift(1))
        return frame.filter(~repeat.fill_null(False))
    raise ValueError(f"unknown duplicates policy {policy!r}")


def drop_duplicate_ids(history: Sequence[Any], policy: str, key: Callable[[Any], str] = str) -> Sequence[Any]:
    """One user's item ids (oldest first) under the duplicates policy, as ``drop_duplicates``
    treats a user's interactions, so that a history given to a model reads as its training data
    did (``keep``: ``history`` itself). Ids compare by ``key``: their text by default, a model's
    ``Vocabulary.key`` for its histories (7, "7" and, where ids are integers, 7.0 are one item).

    >>> drop_duplicate_ids([3, 3, 7, 3], "consecutive"), drop_duplicate_ids([3, 3, 7, 3], "first")
    ([3, 7, 3], [3, 7])
    """
    if policy == "keep":
        return history
    keys = [key(x) for x in history]
    if policy == "first":
        seen: set[str] = set()
        return [x for x, key in zip(history, keys) if not (key in seen or seen.add(key))]
    if policy == "consecutive":
        return [x for i, (x, key) in enumerate(zip(history, keys)) if i == 0 or key != keys[i - 1]]
    raise ValueError(f"unknown duplicates policy {policy!r}")


@dataclass
class KCoreReport:
    """What iterated k-core filtering did. ``rounds`` counts the passes that removed something."""

    min_user: int
    min_item: int
    rounds: int
    removed_users: int
    removed_items: int
    removed_interactions: int

    def describe(self) -> str:
        """One line for the statistics table.

        >>> KCoreReport(5, 5, 2, 3, 1, 40).describe()
        '5-core users / 5-core items, iterated, stable after 2 round(s) of removal'
        """
        sides = [f"{k}-core {name}" for name, k in (("users", self.min_user), ("items", self.min_item)) if k > 1]
        if not sides:
            return "no k-core filtering"
        head = " / ".join(sides) + ", iterated"
        if self.rounds == 0:
            return head + ", already satisfied (nothing removed)"
        return head + f", stable after {self.rounds} round(s) of removal"


def kcore(frame: pl.DataFrame, min_user: int, min_item: int) -> tuple[pl.DataFrame, KCoreReport]:
    """Drop users with < ``min_user`` and items with < ``min_item`` interactions until stable.

    Each round counts users and items on the same frame and drops both sides at once; dropping
    an item can push a user below the threshold, which the next round catches.
    """
    users0, items0, rows0 = frame.get_column("user").n_unique(), frame.get_column("item").n_unique(), frame.height
    rounds = 0
    while min_user > 1 or min_item > 1:
        keep = pl.lit(True)
        if min_item > 1:
            keep = keep & (pl.len().over("item") >= min_item)
        if min_user > 1:
            keep = keep & (pl.len().over("user") >= min_user)
        kept = frame.filter(keep)
        if kept.height == frame.height:
            break
        frame, rounds = kept, rounds + 1
        if frame.height == 0:
            raise DataError(
                f"the k-core thresholds (data.min_user_interactions={min_user}, "
                f"data.min_item_interactions={min_item}) removed every interaction after {rounds} round(s); "
                "lower them"
            )
    report = KCoreReport(
        min_user=min_user,
        min_item=min_item,
        rounds=rounds,
        removed_users=users0 - frame.get_column("user").n_unique(),
        removed_items=items0 - frame.get_column("item").n_unique(),
        removed_interactions=rows0 - frame.height,
    )
    return frame, report


@dataclass
class Preprocessed:
    """Integer-indexed result: row ``u`` of the CSR arrays is user ``u``'s chronological item indices."""

    item_ids: list  # original item id of item index i+1 (index 0 is padding)
    user_ids: list  # original user id of user index u
    offsets: np.ndarray  # (U+1,) int64
    items: np.ndarray  # (N,) int64, values in 1..I
    kcore: KCoreReport
    duplicates_removed: int


def index(frame: pl.DataFrame) -> tuple[list, list, np.ndarray, np.ndarray]:
    """Number items 1..I and users 0..U-1 in order of first appearance in a sorted frame.

    Returns ``(item_ids, user_ids, offsets, items)``; rows of one user must be contiguous.
    """
    indexed = frame.with_row_index("pos").select(
        "pos",
        "user",
        "item",
        # An item's index is the rank of the position where it first appears.
        item_index=pl.col("pos").min().over("item").rank("dense").cast(pl.Int64),
        user_first=pl.col("user").is_first_distinct(),
        item_first=pl.col("item").is_first_distinct(),
    )
    item_ids = indexed.filter("item_first").get_column("item").to_list()
    users = indexed.filter("user_first")
    user_ids = users.get_column("user").to_list()
    # Rows are grouped by user, so the position where each user first appears is that user's offset.
    starts = users.get_column("pos").to_numpy().astype(np.int64)
    offsets = np.append(starts, np.int64(frame.height))
    items = indexed.get_column("item_index").to_numpy().astype(np.int64, copy=False)
    return item_ids, user_ids, offsets, items


def preprocess(frame: pl.DataFrame, config: DataConfig) -> Preprocessed:
    """Sort, de-duplicate, k-core filter and index an interaction frame, as ``config`` says."""
    frame = sort_chronologically(frame)
    before = frame.height
    frame = drop_duplicates(frame, config.duplicates)
    duplicates_removed = before - frame.height
    frame, report = kcore(frame, config.min_user_interactions, config.min_item_interactions)
    item_ids, user_ids, offsets, items = index(frame)
    return Preprocessed(item_ids, user_ids, offsets, items, report, duplicates_removed)
