"""Whitespace ("pairs"/"seq") and GroupLens ratings.dat parsers."""

from pathlib import Path

import polars as pl
import pytest

from awrsr.data import DataConfig, load_sequence_data, read_interactions
from awrsr.errors import DataError


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_pairs_and_seq_files_give_the_same_frame(tmp_path):
    pairs = write(tmp_path, "pairs.txt", "1 10\n1 11\n1 12\n2 11\n2 13\n")
    seq = write(tmp_path, "seq.txt", "1 10 11 12\n\n2 11 13\n")
    a = read_interactions(pairs, DataConfig())
    b = read_interactions(seq, DataConfig())
    assert a.equals(b)
    assert a.columns == ["user", "item", "timestamp", "row"]
    assert a.schema["user"] == pl.Int64 and a.schema["item"] == pl.Int64
    assert a["user"].to_list() == [1, 1, 1, 2, 2]
    assert a["item"].to_list() == [10, 11, 12, 11, 13]
    assert a["row"].to_list() == [0, 1, 2, 3, 4]
    assert a["timestamp"].null_count() == 5


def test_lines_of_one_user_accumulate_and_tabs_crlf_are_whitespace(tmp_path):
    path = write(tmp_path, "mixed.txt", "7 1\t2\r\n8 5\r\n7   3\r\n")
    frame = read_interactions(path, DataConfig(format="whitespace"))
    assert frame["user"].to_list() == [7, 7, 8, 7]
    data = load_sequence_data(DataConfig(path=str(path), min_user_interactions=0, min_item_interactions=0))
    assert data.user_ids == [7, 8]
    assert [data.item_vocab.decode(r) for r in data.sequences.to_lists()] == [[1, 2, 3], [5]]


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("1 2 3\n2 4 x5\n", 2, "'x5'"),
        ("1 2\n\n3 4.5\n", 3, "'4.5'"),  # line numbers count blank lines
        ("1 2\n2\n", 2, "user 2 has no item ids"),
        ("a 2\n", 1, "'a'"),
    ],
)
def test_bad_whitespace_line_names_file_and_line(tmp_path, text, line, fragment):
    path = write(tmp_path, "bad.txt", text)
    with pytest.raises(DataError) as err:
        read_interactions(path, DataConfig())
    message = str(err.value)
    assert f"bad.txt:{line}:" in message
    assert fragment in message


def test_header_line_gets_a_hint(tmp_path):
    path = write(tmp_path, "head.txt", "user item\n1 2\n")
    with pytest.raises(DataError, match=r"head.txt:1: .*data.format"):
        read_interactions(path, DataConfig())


def test_long_bad_line_is_trimmed(tmp_path):
    path = write(tmp_path, "long.txt", "1 1\n1 " + " ".join(["2"] * 100) + " oops\n")
    with pytest.raises(DataError) as err:
        read_interactions(path, DataConfig())
    message = str(err.value).split("long.txt:2:", 1)[1]
    assert len(message) < 150 and "..." in message and "'oops'" in message


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_empty_file_has_no_interactions(tmp_path, text):
    path = write(tmp_path, "empty.txt", text)
    with pytest.raises(DataError, match=r"empty.txt: no interactions"):
        read_interactions(path, DataConfig())


def test_missing_file_and_directory(tmp_path, monkeypatch):
    with pytest.raises(DataError, match="data file not found: .*nope.txt$"):
        read_interactions(tmp_path / "nope.txt", DataConfig())
    monkeypatch.chdir(tmp_path)  # a relative path: the error says where it was looked for
    with pytest.raises(DataError, match=f"data file not found: data/nope.txt \\(relative to the current directory {tmp_path}"):
        read_interactions("data/nope.txt", DataConfig())
    with pytest.raises(DataError, match="directory"):
        read_interactions(tmp_path, DataConfig())


def test_invalid_utf8_names_the_line(tmp_path):
    path = tmp_path / "latin.txt"
    path.write_bytes(b"1 2\n1 3\n\xff 4\n")
    with pytest.raises(DataError, match=r"latin.txt:3: not valid UTF-8"):
        read_interactions(path, DataConfig())


RATINGS = """\
1::1193::5::978300760
1::661::3::978302109
1::914::3::978301968
1::3408::4::978300275
2::1357::5::978298709
2::3068::4::978299000
2::1537::4::978299000
2::647::3::978299000
"""


def test_movielens_reads_ids_and_timestamps(tmp_path):
    path = write(tmp_path, "ratings.dat", RATINGS)
    frame = read_interactions(path, DataConfig())  # auto-detected by the '::'
    assert frame.schema["timestamp"] == pl.Int64
    assert frame["item"].to_list() == [1193, 661, 914, 3408, 1357, 3068, 1537, 647]
    assert frame["timestamp"][0] == 978300760
    assert frame.equals(read_interactions(path, DataConfig(format="movielens")))


def test_movielens_sorts_by_time_and_keeps_file_order_on_ties(tmp_path):
    path = write(tmp_path, "ratings.dat", RATINGS)
    data = load_sequence_data(DataConfig(path=str(path), min_user_interactions=0, min_item_interactions=0))
    decoded = [data.item_vocab.decode(row) for row in data.sequences.to_lists()]
    # user 1 by time; user 2: 1357 earliest, then three ties at 978299000 in file order
    assert decoded == [[3408, 1193, 914, 661], [1357, 3068, 1537, 647]]
    assert data.item_vocab.ids == [3408, 1193, 914, 661, 1357, 3068, 1537, 647]


@pytest.mark.parametrize(
    ("line", "fragment"),
    [("3::10::4", "expected 4"), ("3::10::4::5::6", "got 5"), ("3::abc::4::978300760", "must be integers"),
     ("3::10::4::", "must be integers")],
)
def test_movielens_bad_line(tmp_path, line, fragment):
    path = write(tmp_path, "ratings.dat", RATINGS + "\n" + line + "\n")
    with pytest.raises(DataError) as err:
        read_interactions(path, DataConfig())
    assert "ratings.dat:10:" in str(err.value) and fragment in str(err.value)
