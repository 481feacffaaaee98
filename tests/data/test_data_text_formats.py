"""Whitespace ("pairs"/"seq") and GroupLens ratings.dat parsers."""

from pathlib import Path

import polars as pl
import pytest

from awrsr.data import DataConfig, load_sequence_data, read_interactions
from awrsr.errors import ConfigError, DataError


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
        ("1 2\n2\n3 x\n", 2, "user 2 has no item ids"),  # the first bad line, of either kind
        ("1 2\n3 x\n2\n", 2, "'x'"),
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


@pytest.mark.parametrize(("text", "hint"), [
    ("1::13::4::978300000\n", "(GroupLens's '::'-separated ratings? set data.format to movielens)"),
    ("1 2\n2::13::4::978300000\n", "set data.format to movielens)"),
    ("1,10,5\n1,11,6\n", "(comma-separated? set data.format to csv)"),
    ("user,item\n1,2\n", "(comma-separated? set data.format to csv)"),
    ("1 2\n1 x\n", "in '1 x'"),  # no other format in sight: no hint
    ("1 2\n1 10,11\n", "in '1 10,11'"),  # a comma inside one of several ids: not a CSV line
    ("1 2\na b\n", "in 'a b'"),  # no number, but not the first line: no header
])
def test_a_file_in_another_format_gets_that_formats_hint(tmp_path, text, hint):
    path = write(tmp_path, "data.txt", text)
    with pytest.raises(DataError) as err:
        read_interactions(path, DataConfig(format="whitespace"))
    message = str(err.value)
    assert "ids must be integers" in message and message.endswith(hint), message


@pytest.mark.parametrize("token", ["99999999999999999999", "-9223372036854775809", "+00009223372036854775808"])
def test_an_integer_beyond_64_bits_is_named_as_such_not_as_a_non_integer(tmp_path, token):
    path = write(tmp_path, "big.txt", f"1 5\n1 {token}\n")
    with pytest.raises(DataError, match=rf"big.txt:2: id '\{token}' in '1 \{token}' is beyond the 64-bit integer range"
                       if token[0] in "+-" else rf"big.txt:2: id '{token}' in '1 {token}' is beyond the 64-bit integer range"):
        read_interactions(path, DataConfig())
    # the largest that fits is read, leading zeros and all
    assert read_interactions(write(tmp_path, "fits.txt", "1 009223372036854775807\n"), DataConfig())["item"].to_list() == [2**63 - 1]


def test_long_bad_line_is_trimmed(tmp_path):
    path = write(tmp_path, "long.txt", "1 1\n1 " + " ".join(["2"] * 100) + " oops\n")
    with pytest.raises(DataError) as err:
        read_interactions(path, DataConfig())
    message = str(err.value).split("long.txt:2:", 1)[1]
    assert len(message) < 150 and "..." in message and "'oops'" in message


def test_a_quoted_line_is_trimmed_to_at_most_its_width():
    """Error messages quote a line stripped and, past the width, cut to exactly that many
    characters with the cut shown; a line of exactly the width is quoted whole."""
    from awrsr.data.schema import shorten

    assert shorten("  1 2 x \n") == "1 2 x"
    assert shorten("x" * 80) == "x" * 80
    assert shorten("x" * 81) == "x" * 77 + "..."
    assert shorten("y" * 500, 30) == "y" * 27 + "..."


def test_a_reader_frame_without_times_gets_integer_timestamps_and_row_numbers():
    """A frame whose timestamps are all None has polars' Null type, which sorts and joins unlike
    the integer times of every other reader; ``finish`` makes it Int64 and numbers the rows."""
    from awrsr.data.schema import finish

    frame = finish(pl.DataFrame({"user": [1, 1], "item": [7, 8], "timestamp": [None, None]}), "x")
    assert frame.schema["timestamp"] == pl.Int64 and frame.schema["row"] == pl.Int64
    assert frame.get_column("row").to_list() == [0, 1]


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


# --- what counts as an integer id, and tables that look like sequence files -------------------


@pytest.mark.parametrize("token", [
    "7", "+7", "-7", "007", "-0", "1_000", "１２", "٣", "²", "+-1", "0x10", "1e3", "+", "-",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
    "0" * 30 + "7", "1" * 5000,
])
def test_is_int_agrees_with_the_vectorised_cast(token):
    from awrsr.data.text_formats import _is_int

    assert _is_int(token) == (pl.Series([token]).cast(pl.Int64, strict=False)[0] is not None)


@pytest.mark.parametrize(("text", "fragment"), [
    ("1 10\n1 1_000\n", "'1_000'"),  # int() takes it, polars does not
    ("1 10\n1 1１\n", "'1１'"),  # a full-width digit
    ("1 10\n1 2\x1c3\n", r"'2\x1c3'"),  # str.split() cuts at \x1c, polars' tokens do not
])
def test_ids_polars_rejects_are_a_data_error_naming_the_line(tmp_path, text, fragment):
    path = write(tmp_path, "odd.txt", text)
    with pytest.raises(DataError) as err:
        read_interactions(path, DataConfig())
    assert "odd.txt:2:" in str(err.value) and fragment in str(err.value)


def test_a_line_the_integer_check_cannot_fault_is_still_a_data_error(tmp_path, monkeypatch):
    # should _is_int ever accept what polars rejects again, the error must not become StopIteration
    monkeypatch.setattr("awrsr.data.text_formats._is_int", lambda token: True)
    path = write(tmp_path, "odd.txt", "1 10\n1 x\n")
    with pytest.raises(DataError, match=r"odd.txt:2: cannot read '1 x'"):
        read_interactions(path, DataConfig())


UDATA = "196\t242\t3\t881250949\n186\t302\t3\t891717742\n22\t377\t1\t878887116\n196\t51\t2\t880606923\n"


def test_a_table_is_not_read_as_sequences(tmp_path):
    path = write(tmp_path, "u.data", UDATA)  # MovieLens-100K: user item rating timestamp
    with pytest.raises(DataError) as err:
        read_interactions(path, DataConfig())
    message = str(err.value)
    assert message.startswith(f"{path}: ") and "lines 1 (" in message and "and 4 (" in message
    for hint in ("data.format tsv", "data.separator", "data.has_header false", "data.user_col column_1",
                 "data.item_col column_2", "data.time_col column_4"):
        assert hint in message
    # ... and read the way the message says, it is the table it is
    config = DataConfig(format="tsv", has_header=False, user_col="column_1", item_col="column_2", time_col="column_4")
    assert read_interactions(path, config)["item"].to_list() == [242, 302, 377, 51]
    # histories cut into lines of one width look the same: naming the format reads them as sequences
    chunks = write(tmp_path, "chunks.txt", "1 10 11\n1 12 13\n2 10 12\n")
    with pytest.raises(DataError, match="set data.format whitespace"):
        read_interactions(chunks, DataConfig())
    assert read_interactions(chunks, DataConfig(format="whitespace"))["item"].to_list() == [10, 11, 12, 13, 10, 12]


def test_a_table_with_a_header_is_told_to_name_its_columns(tmp_path):
    path = write(tmp_path, "ratings.txt", "user item rating ts\n1 10 4 100\n1 11 3 101\n")
    with pytest.raises(DataError, match=r"lines 2 .* and 3 .*naming its columns \('user', 'item', 'rating', 'ts'\)"):
        read_interactions(path, DataConfig())


@pytest.mark.parametrize(("text", "hint"), [
    ("1\t10\t4\t100\t7\n1\t11\t3\t101\t7\n", ("data.has_header false, data.user_col column_1, data.item_col column_2 and, "
     "for a time column, e.g. data.time_col column_5")),  # by position, the last column
    ("user item rating ts day\n1 10 4 100 7\n1 11 3 101 7\n", ("data.user_col and data.item_col naming its columns "
     "('user', 'item', 'rating', 'ts', ...)")),  # the first four names, and more to come
])
def test_a_wide_table_is_told_how_to_name_its_columns(tmp_path, text, hint):
    path = write(tmp_path, "wide.txt", text)
    with pytest.raises(DataError) as err:
        read_interactions(path, DataConfig())
    assert "every line has 5 values" in str(err.value) and hint in str(err.value), str(err.value)


@pytest.mark.parametrize("text", [
    "1 10 11 12\n2 10 11 12\n3 12 13 14\n",  # sequences of equal length, one line per user
    "1 10\n1 11\n2 12\n",  # pairs: a user on many lines
    "1 10 11\n1 12\n2 13 14\n",  # a user on two lines of different lengths
])
def test_sequence_and_pair_files_are_not_tables(tmp_path, text):
    path = write(tmp_path, "seq.txt", text)
    assert read_interactions(path, DataConfig()).height == sum(len(line.split()) - 1 for line in text.splitlines())


# --- options a format would ignore ---------------------------------------------------------------


@pytest.mark.parametrize("option", [
    {"time_col": "ts"}, {"separator": "\t"}, {"has_header": False}, {"user_col": "u"}, {"item_col": "i"},
])
@pytest.mark.parametrize(("name", "text", "fmt"), [
    ("pairs.txt", "1 10\n1 11\n", "auto"), ("pairs.txt", "1 10\n1 11\n", "whitespace"),
    ("ratings.dat", RATINGS, "auto"), ("ratings.dat", RATINGS, "movielens"),
])
def test_column_options_for_a_format_with_fixed_fields_are_config_errors(tmp_path, option, name, text, fmt):
    path = write(tmp_path, name, text)
    with pytest.raises(ConfigError) as err:
        read_interactions(path, DataConfig(format=fmt, **option))
    read_as = "movielens" if name == "ratings.dat" else "whitespace"
    assert f"data.{next(iter(option))} set" in str(err.value) and f"read as {read_as}" in str(err.value)
    # the message says why it was read so: picked by auto, or named
    how = "data.format auto picked it from the file's name and first line" if fmt == "auto" else f"data.format {fmt}"
    assert f"read as {read_as} ({how})," in str(err.value)


@pytest.mark.parametrize("option", [{"separator": ";"}, {"has_header": False}])
def test_text_options_for_a_parquet_file_are_config_errors(tmp_path, option):
    import polars as pl

    path = tmp_path / "events.parquet"
    pl.DataFrame({"user_id": [1, 1], "item_id": [10, 11]}).write_parquet(path)
    with pytest.raises(ConfigError, match=f"data.{next(iter(option))} set, but .*events.parquet is read as parquet"):
        read_interactions(path, DataConfig(**option))
    assert read_interactions(path, DataConfig(user_col="user_id")).height == 2


def test_default_options_written_out_are_fine(tmp_path):
    path = write(tmp_path, "pairs.txt", "1 10\n1 11\n")
    config = DataConfig(user_col="user_id", item_col="item_id", time_col=None, separator=None, has_header=True)
    assert read_interactions(path, config).height == 2


# --- byte-order marks and line endings -----------------------------------------------------------


@pytest.mark.parametrize(("name", "text"), [("pairs.txt", "1 10\n1 11\n"), ("ratings.dat", RATINGS)])
def test_a_utf8_byte_order_mark_is_ignored(tmp_path, name, text):
    plain, marked = tmp_path / name, tmp_path / f"bom-{name}"
    plain.write_bytes(text.encode())
    marked.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert read_interactions(marked, DataConfig()).equals(read_interactions(plain, DataConfig()))


@pytest.mark.parametrize(("raw", "line"), [
    (b"\xef\xbb\xbf1 2\n1 3\n\xff 4\n", 3),  # the mark's bytes are no line
    (b"1 2\r1 3\r\r\xff 4\r", 4),  # old-Mac line endings
    (b"1 2\r\n1 3\r\n\r\n\xff 4\r\n", 4),
])
def test_invalid_utf8_line_counts_marks_and_line_endings(tmp_path, raw, line):
    path = tmp_path / "bytes.txt"
    path.write_bytes(raw)
    with pytest.raises(DataError, match=rf"bytes.txt:{line}: not valid UTF-8"):
        read_interactions(path, DataConfig())


def test_a_lone_carriage_return_ends_a_line(tmp_path):
    path = tmp_path / "mac.txt"
    path.write_bytes(b"1 10\r1 11\r2 12\r")
    frame = read_interactions(path, DataConfig())
    assert frame["user"].to_list() == [1, 1, 2] and frame["item"].to_list() == [10, 11, 12]
    path.write_bytes(b"3::10::4::5\r3::11::4::6\r")
    assert read_interactions(path, DataConfig(format="movielens"))["timestamp"].to_list() == [5, 6]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_line_numbers_are_an_editors_for_every_line_ending(tmp_path, newline):
    path = tmp_path / "lines.txt"
    path.write_bytes(newline.join(["1 10", "", "1 11", "1 x", ""]).encode())
    with pytest.raises(DataError, match=r"lines.txt:4: .*'x'"):
        read_interactions(path, DataConfig())


def test_auto_format_by_suffix_in_any_case_else_by_the_first_non_blank_line(tmp_path):
    from awrsr.data.readers import detect_format

    assert detect_format(Path("RATINGS.CSV")) == "csv" and detect_format(Path("a.Tsv")) == "tsv"
    assert detect_format(Path("x.PARQUET")) == "parquet"
    assert detect_format(write(tmp_path, "ratings.dat", "\n  \n1::10::5::978300760\n")) == "movielens"
    assert detect_format(write(tmp_path, "pairs.txt", "\n1 10\n1 11\n")) == "whitespace"
    assert detect_format(write(tmp_path, "odd.dat", "1:10 11\n")) == "whitespace"  # one ':' is no GroupLens line


def test_lines_of_varying_width_are_sequences_even_when_a_user_repeats(tmp_path):
    # A table has one width on every line; a user's history cut into lines of 4 and 3 ids is not one.
    path = write(tmp_path, "seq.txt", "1 10 11 12\n2 5 6\n1 13 14\n")
    frame = read_interactions(path, DataConfig())
    assert frame["user"].to_list() == [1, 1, 1, 2, 2, 1, 1]
    assert frame["item"].to_list() == [10, 11, 12, 5, 6, 13, 14]
