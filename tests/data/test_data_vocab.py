"""Item vocabulary: encoding, decoding and JSON persistence."""

import json

import numpy as np
import pytest

from awrsr.data import Vocabulary
from awrsr.errors import DataError, UnknownItemError


def test_encode_decode_round_trip():
    vocab = Vocabulary([1193, 661, 914])
    assert len(vocab) == 3
    idx = vocab.encode([914, 1193, 661, 914])
    assert idx.dtype == np.int64 and idx.tolist() == [3, 1, 2, 3]
    back = vocab.decode(idx)
    assert back == [914, 1193, 661, 914] and all(type(x) is int for x in back)


def test_string_and_int_lookups_agree():
    vocab = Vocabulary([1193, 661])
    assert vocab.encode(["1193", 661, np.int64(1193)]).tolist() == [1, 2, 1]
    svocab = Vocabulary(["B00X", "7"])
    assert svocab.id_type == "str"
    assert svocab.encode([7, "B00X"]).tolist() == [2, 1]
    assert svocab.decode([2]) == ["7"]


def test_whole_numbers_written_with_a_decimal_point_find_int_ids_as_the_csv_readers_take_them():
    # pandas writes an integer column with gaps as 7.0; the CSV readers read it as item 7, so
    # "7.0" in a history or an exclude list must find item 7 too, not be an unknown id
    vocab = Vocabulary([7, 12, -3, 0])
    assert vocab.encode(["7.0", 12.0, "12.00", "-3.0", "0.0"]).tolist() == [1, 2, 2, 3, 4]
    for other in ("7.5", "07.0", "+7.0", "7.", "7.0\n", " 7.0", "1e1"):  # not what the readers call 7
        assert other not in vocab, other
    assert "7.0" not in Vocabulary(["7"]) and "7.0" in Vocabulary(["7.0", "a"])  # text ids stay as written


def test_unknown_ids_are_all_listed_in_order():
    vocab = Vocabulary([1, 2, 3])
    with pytest.raises(UnknownItemError) as err:
        vocab.encode([4, 1, "x", 9])
    assert err.value.unknown == [4, "x", 9]
    assert "4, 'x', 9" in str(err.value)


def test_a_message_shows_the_first_ten_unknown_ids_and_counts_the_rest():
    """A whole log of unknown ids must not fill the screen; ten and no more are named, and exactly
    ten say nothing of "more". ``unknown`` keeps them all."""
    vocab = Vocabulary([1])
    with pytest.raises(UnknownItemError) as err:
        vocab.encode(list(range(100, 112)))
    assert str(err.value) == "unknown item id(s): " + ", ".join(map(str, range(100, 110))) + " (and 2 more)"
    assert err.value.unknown == list(range(100, 112))
    with pytest.raises(UnknownItemError) as err:
        vocab.encode(list(range(100, 110)))
    assert str(err.value) == "unknown item id(s): " + ", ".join(map(str, range(100, 110)))


@pytest.mark.parametrize("bad", [[0], [4], [-1], [1, 5]])
def test_decode_rejects_padding_and_out_of_range(bad):
    with pytest.raises(ValueError, match=f"item index {bad[-1]} is not in 1..3"):
        Vocabulary([1, 2, 3]).decode(bad)


def test_duplicate_ids_are_rejected():
    with pytest.raises(ValueError, match="duplicate item id '2'"):
        Vocabulary([1, 2, 2])


@pytest.mark.parametrize("ids", [[10, 3, 7], ["10", "3", "a"], ["1", "2"], []])
def test_save_load_round_trip_keeps_ids_and_types(tmp_path, ids):
    vocab = Vocabulary(ids)
    path = tmp_path / "vocab.json"
    vocab.save(path)
    loaded = Vocabulary.load(path)
    assert loaded == vocab
    assert loaded.ids == ids and [type(x) for x in loaded.ids] == [type(x) for x in ids]
    assert json.loads(path.read_text())["id_type"] == vocab.id_type
    assert Vocabulary.from_dict(vocab.to_dict()) == vocab


@pytest.mark.parametrize(
    "content",
    ['{"ids": [1, 2', '{"ids": [1, 2]}', '{"ids": [1, "2"], "id_type": "int"}', '{"ids": [1, 1], "id_type": "int"}', "[]"],
)
def test_corrupt_file_is_a_data_error_naming_it(tmp_path, content):
    path = tmp_path / "vocab.json"
    path.write_text(content)
    with pytest.raises(DataError, match="vocab.json"):
        Vocabulary.load(path)


def test_a_save_that_fails_midway_leaves_the_old_vocabulary_whole(tmp_path, monkeypatch):
    """vocab.json is written atomically, as the config and weights beside it are: a crash (a full
    disk) while a run's vocabulary is saved again never leaves half a file."""
    import awrsr.files

    path = tmp_path / "vocab.json"
    Vocabulary([1, 2]).save(path)

    def crash(source, target):
        raise OSError("disk full")

    monkeypatch.setattr(awrsr.files.os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        Vocabulary([3, 4, 5]).save(path)
    assert Vocabulary.load(path).ids == [1, 2] and [p.name for p in tmp_path.iterdir()] == ["vocab.json"]


def test_missing_file_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="vocabulary file not found: .*gone.json"):
        Vocabulary.load(tmp_path / "gone.json")


def test_vocabularies_are_equal_only_with_the_same_ids_in_the_same_order_and_type():
    assert Vocabulary([10, 3]) == Vocabulary([10, 3])
    assert Vocabulary([10, 3]) != Vocabulary([3, 10])  # the same ids would name other items' weights
    assert Vocabulary([10, 3]) != Vocabulary(["10", "3"])
    assert Vocabulary([10, 3]) != Vocabulary([10, 4])


def test_booleans_are_text_ids_and_an_empty_vocabulary_keeps_its_stored_type(tmp_path):
    vocab = Vocabulary([True, 2])  # bool is an int subclass, but never an integer id
    assert vocab.id_type == "str" and vocab.ids == ["True", "2"]
    vocab.save(tmp_path / "vocab.json")
    assert Vocabulary.load(tmp_path / "vocab.json") == vocab
    assert Vocabulary.from_dict({"ids": [], "id_type": "str"}).id_type == "str"
