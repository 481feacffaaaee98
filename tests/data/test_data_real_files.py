"""The staged benchmark files (skipped when ../shared/data is absent)."""

import time
from pathlib import Path

import numpy as np
import pytest

from awrsr.data import DataConfig, leave_one_out, load_sequence_data, read_interactions

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
ML1M = SHARED / "ml-1m" / "ml-1m.txt"
BEAUTY = SHARED / "beauty" / "Beauty.txt"


def need(path: Path) -> str:
    if not path.exists():
        pytest.skip(f"benchmark file not staged: {path}")
    return str(path)


@pytest.fixture(scope="module")
def ml1m():
    start = time.perf_counter()
    data = load_sequence_data(DataConfig(path=need(ML1M)))
    return data, time.perf_counter() - start


def test_ml1m_counts_match_the_published_ones(ml1m):
    data, seconds = ml1m
    assert (data.num_users, data.num_items, len(data.sequences.items)) == (6040, 3416, 999_611)
    assert data.stats.min_length == 18
    assert seconds < 5.0, f"loading ML-1M took {seconds:.1f} s"


def test_ml1m_item_index_equals_original_id(ml1m):
    data, _ = ml1m
    assert data.item_vocab.ids == list(range(1, 3417))
    assert data.user_ids == list(range(1, 6041))
    assert data.sequences[0][:3].tolist() == [1, 2, 3]  # the file starts "1 1", "1 2", "1 3"


def test_ml1m_sequences_reproduce_the_file_in_order(ml1m):
    data, _ = ml1m
    pairs = np.array(ML1M.read_text().split(), dtype=np.int64).reshape(-1, 2)  # "user item" lines
    np.testing.assert_array_equal(data.sequences.items, pairs[:, 1])
    starts = np.flatnonzero(np.r_[True, pairs[1:, 0] != pairs[:-1, 0]])
    np.testing.assert_array_equal(data.sequences.offsets[:-1], starts)


def test_ml1m_fingerprint_is_stable(ml1m):
    data, _ = ml1m
    again = load_sequence_data(DataConfig(path=need(ML1M)))
    assert again.fingerprint == data.fingerprint


def test_ml1m_split_sizes(ml1m):
    data, _ = ml1m
    split = leave_one_out(data)
    assert len(split.valid) == len(split.test) == 6040
    assert split.train.lengths.sum() == 999_611 - 2 * 6040
    assert np.all(split.test.targets >= 1) and np.all(split.test.targets <= 3416)


def test_beauty_counts_match_the_published_ones():
    data = load_sequence_data(DataConfig(path=need(BEAUTY)))
    assert (data.num_users, data.num_items, len(data.sequences.items)) == (22_363, 12_101, 198_502)
    assert "already satisfied" in data.stats.kcore
    assert load_sequence_data(DataConfig(path=need(BEAUTY))).fingerprint == data.fingerprint


@pytest.mark.parametrize(("relative", "users", "items", "interactions"), [
    ("ml-1m/ml-1m_iclrec.txt", 6_039, 3_416, 999_572),  # seq
    ("beauty/beauty_bert4rec.txt", 40_226, 54_542, 353_962),  # pairs
    ("sports/Sports_and_Outdoors.txt", 35_598, 18_357, 296_337),
    ("toys/Toys_and_Games.txt", 19_412, 11_924, 167_597),
    ("yelp/Yelp.txt", 30_431, 20_033, 316_354),
])
def test_every_staged_sequence_file_reads_as_sequences(relative, users, items, interactions):
    frame = read_interactions(need(SHARED / relative), DataConfig())  # none is taken for a table
    assert (frame["user"].n_unique(), frame["item"].n_unique(), frame.height) == (users, items, interactions)
