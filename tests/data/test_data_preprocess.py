"""Ordering, duplicates policies, iterated k-core and indexing."""

import numpy as np
import polars as pl
import pytest

from awrsr.data import DataConfig, load_sequence_data
from awrsr.data.preprocess import KCoreReport, kcore
from awrsr.errors import DataError


def frame_of(rows: dict) -> pl.DataFrame:
    """{user: [items in file order]} -> a frame as read_interactions returns it (users interleaved)."""
    pairs = [(u, i) for u, items in rows.items() for i in items]
    return pl.DataFrame({"user_id": [u for u, _ in pairs], "item_id": [i for _, i in pairs]})


def load(frame: pl.DataFrame, **options):
    options = {"min_user_interactions": 0, "min_item_interactions": 0, **options}
    return load_sequence_data(DataConfig(**options), frame=frame)


def decoded(data) -> dict:
    return {u: data.item_vocab.decode(row) for u, row in zip(data.user_ids, data.sequences.to_lists())}


@pytest.mark.parametrize(
    ("policy", "expected", "removed"),
    [
        ("keep", {1: [1, 2, 1, 1, 3, 2], 2: [3, 3, 4]}, 0),
        ("first", {1: [1, 2, 3], 2: [3, 4]}, 4),
        ("consecutive", {1: [1, 2, 1, 3, 2], 2: [3, 4]}, 2),
    ],
)
def test_duplicates_policies(policy, expected, removed):
    data = load(frame_of({1: [1, 2, 1, 1, 3, 2], 2: [3, 3, 4]}), duplicates=policy)
    assert decoded(data) == expected
    assert data.stats.duplicates == policy and data.stats.duplicates_removed == removed


def test_consecutive_repeat_across_users_is_not_a_duplicate():
    data = load(frame_of({1: [5, 6], 2: [6, 7]}), duplicates="consecutive")
    assert decoded(data) == {1: [5, 6], 2: [6, 7]}


def test_duplicates_are_judged_in_time_order():
    frame = pl.DataFrame({"user_id": [1, 1, 1], "item_id": [7, 8, 7], "t": [3, 1, 2]})
    data = load(frame, duplicates="consecutive", time_col="t")
    assert decoded(data) == {1: [8, 7]}  # by time: 8 7 7


def test_equal_timestamps_keep_file_order_in_a_large_input():
    # polars' multi-key sort is stable only for a couple of dozen rows: without the row key, ties
    # came out of order in every trial from 50 rows on (30: 9 in 10), at 1, 2 and 8 threads.
    rng = np.random.default_rng(0)
    n = 1_000
    users, times = rng.integers(0, 20, n), rng.integers(0, 3, n)  # ~17 rows per (user, time) tie
    data = load(pl.DataFrame({"user_id": users, "item_id": np.arange(n), "t": times}), time_col="t")
    # item i is row i, so file order within a tie is ascending item ids
    expected = {u: sorted(np.flatnonzero(users == u), key=lambda i: (times[i], i)) for u in data.user_ids}
    assert decoded(data) == expected


# Thresholds: users >= 3, items >= 2. Item 9 is seen once, so round 1 drops it; that leaves user 3
# with 2 interactions, which only round 2 can see. Users 1 and 2 survive untouched.
KCORE_INPUT = {1: [1, 2, 3], 3: [1, 2, 9], 2: [1, 2, 3]}


def test_iterated_kcore_needs_two_rounds():
    data = load(frame_of(KCORE_INPUT), min_user_interactions=3, min_item_interactions=2)
    assert decoded(data) == {1: [1, 2, 3], 2: [1, 2, 3]}
    stats = data.stats
    assert (stats.removed_users, stats.removed_items, stats.removed_interactions) == (1, 1, 3)
    assert "stable after 2 round(s)" in stats.kcore
    assert "3-core users / 2-core items" in stats.kcore


def test_kcore_rounds_count_simultaneous_passes():
    raw = frame_of(KCORE_INPUT).rename({"user_id": "user", "item_id": "item"})
    kept, report = kcore(raw, min_user=3, min_item=2)
    assert report == KCoreReport(3, 2, rounds=2, removed_users=1, removed_items=1, removed_interactions=3)
    assert kept["user"].to_list() == [1, 1, 1, 2, 2, 2]


def test_duplicates_are_dropped_before_the_kcore_counts():
    """User 1's [1, 1, 2] is 2 distinct interactions under duplicates=first: below a 3-core, so
    the user goes (counted before dropping, 3 would keep it)."""
    data = load(frame_of({1: [1, 1, 2], 2: [1, 2, 3]}), duplicates="first", min_user_interactions=3)
    assert decoded(data) == {2: [1, 2, 3]}
    assert data.stats.duplicates_removed == 1 and data.stats.removed_users == 1


def test_kcore_disabled_and_already_satisfied():
    data = load(frame_of(KCORE_INPUT), min_user_interactions=1, min_item_interactions=0)
    assert data.stats.kcore == "no k-core filtering" and data.sequences.lengths.sum() == 9
    data = load(frame_of(KCORE_INPUT), min_user_interactions=3)
    assert data.stats.kcore == "3-core users, iterated, already satisfied (nothing removed)"


def test_kcore_that_removes_everything_is_a_data_error():
    with pytest.raises(DataError, match="k-core thresholds .*removed every interaction"):
        load(frame_of(KCORE_INPUT), min_user_interactions=10, min_item_interactions=2)


def test_indices_follow_first_appearance_in_sorted_data():
    frame = pl.DataFrame(
        {"user_id": ["b", "a", "b", "a"], "item_id": ["x", "y", "z", "x"], "t": [2, 5, 1, 4]}
    )
    data = load(frame, time_col="t")
    # users in order of first appearance in the file; per user by time: b: z x, a: x y
    assert data.user_ids == ["b", "a"]
    assert data.item_vocab.ids == ["z", "x", "y"]
    assert data.sequences.to_lists() == [[1, 2], [2, 3]]
    assert data.item_vocab.id_type == "str"


def test_a_2_core_drops_users_and_items_seen_once():
    # 2 is the smallest threshold that filters: user 3 and item 9 have one interaction each
    data = load(frame_of({1: [1, 2], 2: [1, 2], 3: [9]}), min_user_interactions=2)
    assert decoded(data) == {1: [1, 2], 2: [1, 2]} and data.stats.removed_users == 1
    data = load(frame_of({1: [1, 2, 9], 2: [1, 2]}), min_item_interactions=2)
    assert decoded(data) == {1: [1, 2], 2: [1, 2]} and data.stats.removed_items == 1


def test_kcore_that_removes_in_one_round_says_so():
    # item 9 (seen once) goes in round 1; round 2 removes nothing, so the filter is stable after 1
    data = load(frame_of({1: [1, 2, 9], 2: [1, 2]}), min_item_interactions=2)
    assert data.stats.kcore == "2-core items, iterated, stable after 1 round(s) of removal"


def test_kcore_that_removes_everything_names_both_thresholds():
    # round 1 drops items 3 and 9 (seen once); users 1 and 2 are then below 3 and go in round 2
    with pytest.raises(DataError) as err:
        load(frame_of({1: [1, 2, 3], 2: [1, 2, 9]}), min_user_interactions=3, min_item_interactions=2)
    assert str(err.value) == (
        "the k-core thresholds (data.min_user_interactions=3, data.min_item_interactions=2) removed every "
        "interaction after 2 round(s); lower them"
    )
