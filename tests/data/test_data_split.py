"""Leave-one-out split."""

import numpy as np
import polars as pl

from awrsr.data import DataConfig, leave_one_out, load_sequence_data


def build(rows: list[list[int]]):
    pairs = [(u, i) for u, items in enumerate(rows) for i in items]
    frame = pl.DataFrame({"user_id": [u for u, _ in pairs], "item_id": [i for _, i in pairs]})
    return load_sequence_data(DataConfig(min_user_interactions=0, min_item_interactions=0), frame=frame)


def test_hand_example():
    # item ids chosen so that item index == id (first appearance order 1, 2, 3, ...)
    data = build([[1, 2, 3, 4, 5], [2, 6], [6, 1, 7]])
    split = leave_one_out(data)
    assert split.num_items == 7
    assert split.train.to_lists() == [[1, 2, 3], [2, 6], [6]]
    assert split.valid.users.tolist() == [0, 2]
    assert split.valid.history.to_lists() == [[1, 2, 3], [6]]
    assert split.valid.targets.tolist() == [4, 1]
    assert split.test.users.tolist() == [0, 2]
    assert split.test.history.to_lists() == [[1, 2, 3, 4], [6, 1]]
    assert split.test.targets.tolist() == [5, 7]


def test_no_leakage_invariants_on_synthetic_data():
    data = load_sequence_data(DataConfig())
    split = leave_one_out(data)
    seqs, lengths = data.sequences, data.sequences.lengths
    evaluated = np.flatnonzero(lengths >= 3)
    np.testing.assert_array_equal(split.valid.users, evaluated)
    np.testing.assert_array_equal(split.test.users, evaluated)
    # validation history is exactly the user's training row
    assert split.valid.history == split.train.select(split.valid.users)
    # test history is the training row followed by the validation target
    assert split.test.history.drop_last() == split.valid.history
    np.testing.assert_array_equal(split.test.history.items[split.test.history.offsets[1:] - 1], split.valid.targets)
    # the targets are the last two items; the training rows lose exactly those
    last = seqs.offsets[1:][evaluated] - 1
    np.testing.assert_array_equal(split.test.targets, seqs.items[last])
    np.testing.assert_array_equal(split.valid.targets, seqs.items[last - 1])
    np.testing.assert_array_equal(split.train.lengths[evaluated], lengths[evaluated] - 2)
    assert len(split.train) == data.num_users


def test_short_users_train_only():
    data = build([[1, 2], [3], [1, 2, 3]])
    split = leave_one_out(data)
    assert split.train.to_lists() == [[1, 2], [3], [1]]
    assert split.valid.users.tolist() == [2] and split.test.users.tolist() == [2]
    assert split.valid.targets.tolist() == [2] and split.test.targets.tolist() == [3]
