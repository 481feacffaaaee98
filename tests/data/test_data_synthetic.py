"""The synthetic dataset with a planted successor pattern."""

import numpy as np
import polars as pl
import pytest

from awrsr.data import DataConfig, SyntheticConfig, load_sequence_data, make_synthetic_interactions
from awrsr.data.synthetic import planted_successors, popularity, successor_cycle
from awrsr.errors import ConfigError, FieldValueError


def test_deterministic_for_a_seed_and_different_for_another():
    cfg = SyntheticConfig(num_users=200, num_items=50, seed=3)
    a, b = make_synthetic_interactions(cfg), make_synthetic_interactions(cfg)
    assert a.equals(b)
    other = make_synthetic_interactions(SyntheticConfig(num_users=200, num_items=50, seed=4))
    assert not a.equals(other)


def test_shape_ids_and_lengths():
    cfg = SyntheticConfig(num_users=300, num_items=40, min_length=5, max_length=9)
    frame = make_synthetic_interactions(cfg)
    assert frame.columns == ["user", "item", "timestamp", "row"]
    lengths = frame.group_by("user").len()["len"]
    assert frame["user"].n_unique() == 300 and frame["user"].min() == 1 and frame["user"].max() == 300
    assert frame["item"].min() >= 1 and frame["item"].max() <= 40
    assert lengths.min() >= 5 and lengths.max() <= 9 and lengths.n_unique() > 1


def test_successor_is_one_cycle():
    succ = successor_cycle(30, np.random.default_rng(1))
    item, seen = 0, set()
    for _ in range(30):
        seen.add(item)
        item = int(succ[item])
    assert item == 0 and len(seen) == 30


def test_planted_successor_is_the_most_frequent_next_item():
    cfg = SyntheticConfig(num_users=1000, num_items=100, follow_prob=0.8, seed=7)
    frame = make_synthetic_interactions(cfg)
    pairs = (
        frame.with_columns(nxt=pl.col("item").shift(-1).over("user"))
        .drop_nulls("nxt")
        .group_by("item", "nxt")
        .len()
        .sort(["item", "len", "nxt"], descending=[False, True, False])
        .group_by("item", maintain_order=True)
        .first()
    )
    planted = planted_successors(cfg)
    hits = (pairs["nxt"].to_numpy() == planted[pairs["item"].to_numpy() - 1]).mean()
    assert hits > 0.95


def test_no_pattern_when_follow_prob_is_zero():
    cfg = SyntheticConfig(num_users=300, num_items=30, follow_prob=0.0, seed=2)
    frame = make_synthetic_interactions(cfg).with_columns(nxt=pl.col("item").shift(-1).over("user")).drop_nulls("nxt")
    planted = planted_successors(cfg)
    follows = (frame["nxt"].to_numpy() == planted[frame["item"].to_numpy() - 1]).mean()
    assert follows < 0.15


def test_default_config_loads_through_the_pipeline():
    data = load_sequence_data(DataConfig())
    assert data.num_users == 1000 and data.num_items == 200
    assert data.stats.source.startswith("synthetic(")


@pytest.mark.parametrize(
    ("field", "value"),
    [("num_items", 1), ("num_users", 0), ("min_length", 2), ("max_length", 5), ("follow_prob", 1.5), ("seed", -1)],
)
def test_impossible_synthetic_values(field, value):
    with pytest.raises(ConfigError, match=f"data.synthetic.{field}"):
        SyntheticConfig(**{"min_length": 10, field: value})


def test_a_longest_history_of_3_is_refused_before_any_data_is_made():
    """3 items are leave-one-out's minimum to evaluate a user, but training needs one more (the
    fit used to generate the data and then stop on "no user has 2 training interactions")."""
    with pytest.raises(FieldValueError, match="data.synthetic.max_length must be >= 4, got 3") as caught:
        SyntheticConfig(min_length=3, max_length=3)
    assert caught.value.field == "data.synthetic.max_length"
    assert SyntheticConfig(min_length=3, max_length=4).max_length == 4


def test_popularity_is_one_over_rank_normalised():
    """Weights 1/1, 1/2, 1/3, 1/4 over H_4 = 25/12, in an order drawn from the generator."""
    probabilities = popularity(4, np.random.default_rng(0))
    assert np.allclose(sorted(probabilities, reverse=True), [12 / 25, 6 / 25, 4 / 25, 3 / 25])


def test_jumps_follow_the_popularity_and_first_items_are_any_item():
    cfg = SyntheticConfig(num_users=2000, num_items=10, min_length=10, max_length=10, follow_prob=0.0, seed=5)
    frame = make_synthetic_interactions(cfg)
    rng = np.random.default_rng(cfg.seed)  # the draws make_synthetic_interactions makes first
    successor_cycle(cfg.num_items, rng)
    pop = popularity(cfg.num_items, rng)
    later = frame.filter(pl.int_range(pl.len()).over("user") > 0)["item"].to_numpy()
    shares = np.bincount(later - 1, minlength=10) / len(later)
    assert np.abs(shares - pop).max() < 0.02  # the most popular is drawn 1 / H_10 = 34% of the time, not 10%
    first = frame.group_by("user", maintain_order=True).first()["item"].to_numpy()
    assert sorted(set(first.tolist())) == list(range(1, 11))  # item 1 (index 0) can start a history too


def test_lengths_reach_both_bounds():
    frame = make_synthetic_interactions(SyntheticConfig(num_users=300, num_items=40, min_length=5, max_length=9))
    lengths = frame.group_by("user").len()["len"]
    assert (lengths.min(), lengths.max()) == (5, 9)
