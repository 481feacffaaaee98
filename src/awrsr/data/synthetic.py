"""A synthetic dataset with a planted sequential pattern, for tests and quick experiments.

Items form one random cycle ("successor" of each item). A user starts at a random item; each next
item is the successor of the previous one with probability ``follow_prob``, otherwise a draw from a
Zipf-like popularity distribution. A sequence model that learns the successor relation beats a
popularity baseline by a wide margin, which makes the data a useful end-to-end check.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from awrsr.data.config import SyntheticConfig
from awrsr.data.schema import finish


def successor_cycle(num_items: int, rng: np.random.Generator) -> np.ndarray:
    """A random permutation forming a single cycle: ``succ[i]`` follows item ``i`` (0-based).

    >>> sorted(successor_cycle(5, np.random.default_rng(0)).tolist())
    [0, 1, 2, 3, 4]
    """
    order = rng.permutation(num_items)
    succ = np.empty(num_items, dtype=np.int64)
    succ[order] = np.roll(order, -1)  # order[k] -> order[k + 1], the last back to the first
    return succ


def popularity(num_items: int, rng: np.random.Generator) -> np.ndarray:
    """Zipf-like probabilities (weight 1 / rank) over items, ranks assigned at random."""
    weights = 1.0 / np.arange(1, num_items + 1)
    return (weights / weights.sum())[rng.permutation(num_items)]


def planted_successors(cfg: SyntheticConfig) -> np.ndarray:
    """The planted successor of each item id 1..I, as ``out[id - 1]`` (original ids, 1-based)."""
    return successor_cycle(cfg.num_items, np.random.default_rng(cfg.seed)) + 1


def make_synthetic_interactions(cfg: SyntheticConfig) -> pl.DataFrame:
    """Interactions in the ``read_interactions`` format: users 1..U, items 1..I, no timestamps.

    Deterministic for ``cfg.seed``.

    >>> make_synthetic_interactions(SyntheticConfig(num_users=3, num_items=5, min_length=4, max_length=4)).height
    12
    """
    rng = np.random.default_rng(cfg.seed)
    succ = successor_cycle(cfg.num_items, rng)  # drawn first, so planted_successors() matches
    pop = popularity(cfg.num_items, rng)
    lengths = rng.integers(cfg.min_length, cfg.max_length + 1, size=cfg.num_users)
    walk = np.empty((cfg.num_users, cfg.max_length), dtype=np.int64)
    walk[:, 0] = rng.integers(0, cfg.num_items, size=cfg.num_users)
    for t in range(1, cfg.max_length):  # loop over positions, vectorised over users
        follow = rng.random(cfg.num_users) < cfg.follow_prob
        jump = rng.choice(cfg.num_items, size=cfg.num_users, p=pop)
        walk[:, t] = np.where(follow, succ[walk[:, t - 1]], jump)
    real = np.arange(cfg.max_length) < lengths[:, None]  # row-major: users in order, positions in order
    users = np.repeat(np.arange(1, cfg.num_users + 1, dtype=np.int64), lengths)
    timestamp = pl.repeat(None, len(users), dtype=pl.Int64, eager=True)  # file order is the time order
    frame = pl.DataFrame({"user": users, "item": walk[real] + 1, "timestamp": timestamp})
    return finish(frame, f"synthetic(seed={cfg.seed})")
