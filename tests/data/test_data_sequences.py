"""CSR sequences: padding, trimming and selecting rows."""

import numpy as np
import pytest

from awrsr.data import Sequences

ROWS = [[1, 2, 3, 4, 5], [], [6], [7, 8]]


@pytest.fixture
def seqs():
    return Sequences.from_lists(ROWS)


def test_basic_access(seqs):
    assert len(seqs) == 4
    assert seqs.offsets.tolist() == [0, 5, 5, 6, 8]
    assert seqs.lengths.tolist() == [5, 0, 1, 2]
    assert seqs[0].tolist() == [1, 2, 3, 4, 5] and seqs[1].tolist() == [] and seqs[-1].tolist() == [7, 8]
    assert seqs.to_lists() == ROWS
    assert seqs[-4].tolist() == [1, 2, 3, 4, 5]  # negative rows as in a list, down to -len
    for out_of_range in (4, -5):
        with pytest.raises(IndexError, match=f"row {out_of_range} out of range for 4 sequences"):
            seqs[out_of_range]


def test_to_padded_left_pads_and_keeps_the_last_items(seqs):
    expected = np.array([[3, 4, 5], [0, 0, 0], [0, 0, 6], [0, 7, 8]])
    padded = seqs.to_padded(3)
    assert padded.dtype == np.int64
    np.testing.assert_array_equal(padded, expected)
    np.testing.assert_array_equal(seqs.to_padded(6)[0], [0, 1, 2, 3, 4, 5])
    with pytest.raises(ValueError, match="max_len must be >= 1, got 0"):
        seqs.to_padded(0)


def test_drop_last_and_drop_first(seqs):
    assert seqs.drop_last().to_lists() == [[1, 2, 3, 4], [], [], [7]]
    assert seqs.drop_first().to_lists() == [[2, 3, 4, 5], [], [], [8]]
    assert seqs.trim(head=1, tail=np.array([1, 0, 0, 1])).to_lists() == [[2, 3, 4], [], [], []]


def test_select_rows_in_order_with_repeats_and_masks(seqs):
    assert seqs.select(np.array([3, 0, 3])).to_lists() == [[7, 8], [1, 2, 3, 4, 5], [7, 8]]
    assert seqs.select(np.array([], dtype=np.int64)).to_lists() == []
    assert seqs.select(np.array([True, False, True, False])).to_lists() == [[1, 2, 3, 4, 5], [6]]


def test_operations_return_new_containers(seqs):
    before = seqs.items.copy()
    seqs.drop_last().items[:] = 0
    seqs.select(np.array([0])).items[:] = 0
    np.testing.assert_array_equal(seqs.items, before)


def test_invalid_offsets_are_rejected():
    with pytest.raises(ValueError, match="start with 0"):
        Sequences(np.array([1, 2]), np.array([5]))
    with pytest.raises(ValueError, match="non-decreasing and end at len"):
        Sequences(np.array([0, 3]), np.array([5]))
    with pytest.raises(ValueError, match="non-decreasing and end at len"):
        Sequences(np.array([0, 2, 1, 2]), np.array([5, 6]))


def test_equality():
    assert Sequences.from_lists(ROWS) == Sequences.from_lists(ROWS)
    assert Sequences.from_lists(ROWS) != Sequences.from_lists([[1]])
    same_lengths = [[9 if x == 5 else x for x in row] for row in ROWS]  # same offsets, one item differs
    assert same_lengths != ROWS and Sequences.from_lists(same_lengths) != Sequences.from_lists(ROWS)


def test_no_rows_at_all():
    empty = Sequences.from_lists([])
    assert len(empty) == 0 and empty.to_lists() == [] and empty.to_padded(2).shape == (0, 2)


def test_a_mask_of_the_wrong_length_is_refused(seqs):
    # np.flatnonzero would take a short mask's True rows silently
    with pytest.raises(ValueError, match=r"boolean mask has shape \(3,\), expected \(4,\)"):
        seqs.select(np.array([True, False, True]))


@pytest.mark.parametrize("cut", [{"head": -1}, {"tail": -1}, {"tail": np.array([0, 0, 0, -1])}])
def test_negative_trims_are_refused(seqs, cut):
    # a negative tail would reach into the next row's items
    with pytest.raises(ValueError, match="head and tail must be >= 0"):
        seqs.trim(**cut)
