"""CSV / TSV / Parquet files and in-memory frames with user-chosen column names."""

import re

import numpy as np
import polars as pl
import pytest

from awrsr.data import DataConfig, load_sequence_data, read_interactions
from awrsr.errors import ConfigError, DataError

# Times deliberately out of file order for user "u1", with a tie (t=5) that must keep file order.
FRAME = pl.DataFrame(
    {
        "who": ["u1", "u1", "u2", "u1", "u2", "u1"],
        "what": [30, 10, 10, 20, 40, 50],
        "when": [9, 5, 1, 5, 2, 1],
        "extra": ["a", "b", "c", "d", "e", "f"],
    }
)
COLS = dict(user_col="who", item_col="what", time_col="when", min_user_interactions=0, min_item_interactions=0)


def sequences(data):
    return [data.item_vocab.decode(row) for row in data.sequences.to_lists()]


@pytest.mark.parametrize("fmt", ["csv", "tsv", "parquet"])
def test_files_with_custom_columns_and_time(tmp_path, fmt):
    path = tmp_path / f"events.{fmt}"
    if fmt == "parquet":
        FRAME.write_parquet(path)
    else:
        FRAME.write_csv(path, separator="," if fmt == "csv" else "\t")
    frame = read_interactions(path, DataConfig(**COLS))  # format picked from the suffix
    assert frame.columns == ["user", "item", "timestamp", "row"]
    assert frame["user"].to_list() == FRAME["who"].to_list()
    assert frame.schema["item"] == pl.Int64 and frame.schema["user"] == pl.String
    assert frame["timestamp"].to_list() == FRAME["when"].to_list()
    data = load_sequence_data(DataConfig(path=str(path), **COLS))
    assert data.user_ids == ["u1", "u2"]
    assert sequences(data) == [[50, 10, 20, 30], [10, 40]]


def test_explicit_format_and_separator(tmp_path):
    path = tmp_path / "events.data"
    FRAME.write_csv(path, separator=";")
    frame = read_interactions(path, DataConfig(format="csv", separator=";", **COLS))
    assert frame["item"].to_list() == FRAME["what"].to_list()


def test_no_time_column_means_file_order(tmp_path):
    frame = read_interactions(FRAME, DataConfig(user_col="who", item_col="what"))
    assert frame["timestamp"].null_count() == FRAME.height
    data = load_sequence_data(
        DataConfig(user_col="who", item_col="what", min_user_interactions=0, min_item_interactions=0), frame=FRAME
    )
    assert sequences(data) == [[30, 10, 20, 50], [10, 40]]


@pytest.mark.parametrize("missing", ["user_col", "item_col", "time_col"])
def test_missing_column_names_it_and_lists_existing(tmp_path, missing):
    path = tmp_path / "events.csv"
    FRAME.write_csv(path)
    config = DataConfig(**{**COLS, missing: "nope"})
    with pytest.raises(DataError) as err:
        read_interactions(path, config)
    message = str(err.value)
    assert "events.csv" in message and "'nope'" in message and f"data.{missing}" in message
    assert all(f"'{c}'" in message for c in FRAME.columns)


def test_null_id_names_column_and_line(tmp_path):
    path = tmp_path / "holes.csv"
    path.write_text("who,what\nu1,1\nu1,\nu2,3\n")
    with pytest.raises(DataError, match=r"holes.csv:3: column 'what' \(data.item_col\) is empty"):
        read_interactions(path, DataConfig(user_col="who", item_col="what"))
    frame = pl.DataFrame({"who": ["a", None], "what": [1, 2]})
    with pytest.raises(DataError, match=r"<frame>: row 1 \(0-based\): column 'who'"):
        read_interactions(frame, DataConfig(user_col="who", item_col="what"))


@pytest.mark.parametrize(("text", "config", "expected"), [
    # polars reads a row short of fields with its last values empty: the message says which it is
    ("who,what,when\nu1,1,5\n\nu1,2\nu2,3,7\n", DataConfig(user_col="who", item_col="what", time_col="when"),
     "short.csv:4: 2 fields, but the first row has 3, so column 'when' (data.time_col) has no value"),
    ("who,when,what\nu1,5,1\nu1,6\n", DataConfig(user_col="who", item_col="what", time_col="when"),
     "short.csv:3: 2 fields, but the first row has 3, so column 'what' (data.item_col) has no value"),
    ("u1,1,5\nu2\n", DataConfig(has_header=False, user_col="column_1", item_col="column_2", time_col="column_3"),
     "short.csv:2: 1 field, but the first row has 3, so column 'column_2' (data.item_col) has no value"),
    # an empty value in a full row is still called empty
    ("who,what,when\nu1,1,5\nu1,2,\n", DataConfig(user_col="who", item_col="what", time_col="when"),
     "short.csv:3: column 'when' (data.time_col) is empty"),
])
def test_a_row_short_of_fields_is_called_short_not_empty(tmp_path, text, config, expected):
    path = tmp_path / "short.csv"
    path.write_text(text)
    with pytest.raises(DataError) as err:
        read_interactions(path, config)
    assert str(err.value).endswith(expected), str(err.value)


def test_header_only_file_has_no_interactions(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("user_id,item_id\n")
    with pytest.raises(DataError, match="empty.csv: no interactions"):
        read_interactions(path, DataConfig())


def test_a_row_with_extra_fields_and_invalid_utf8_name_their_line(tmp_path):
    path = tmp_path / "extra.csv"
    path.write_text('user_id,item_id\nu1,i1\n"u,1",i2\nu1,i2,surplus\n')  # a quoted comma is one field
    with pytest.raises(DataError, match=r"extra.csv:4: 3 fields, but the first row has 2"):
        read_interactions(path, DataConfig())
    # polars reads a short row (nulls): the long row it trips on is named, and an unclosed quote
    # comes before a short row too
    path.write_text('user_id,item_id\nu1,i1\nu2\n"u,1",i2\nu1,i2,surplus\n')
    with pytest.raises(DataError, match=r"extra.csv:5: 3 fields, but the first row has 2"):
        read_interactions(path, DataConfig())
    path.write_text('user_id,item_id\nu1,i1\nu2\nu3,"i3\nu4,i4\n')
    with pytest.raises(DataError, match=r"extra.csv:4: a quoted value is never closed"):
        read_interactions(path, DataConfig())
    path = tmp_path / "bytes.tsv"
    path.write_bytes(b"user_id\titem_id\nu1\ti1\nu1\t\xff\xfe\n")
    with pytest.raises(DataError, match=r"bytes.tsv:3: not valid UTF-8 text"):
        read_interactions(path, DataConfig())


@pytest.mark.parametrize("kind", ["gzip", "bzip2", "xz", "zip"])
def test_a_compressed_file_says_so(tmp_path, kind):
    import bz2
    import gzip
    import io
    import lzma
    import zipfile

    text = b"user_id,item_id\n1,2\n"
    if kind == "zip":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("events.csv", text)
        packed = buffer.getvalue()
    else:
        packed = {"gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress}[kind](text)
    path = tmp_path / "events.csv"  # named as the text it holds: only its first bytes tell
    path.write_bytes(packed)
    with pytest.raises(DataError, match=f"events.csv: is {kind}-compressed; decompress it first"):
        read_interactions(path, DataConfig())


@pytest.mark.parametrize(
    "name, text, kind",
    [
        ("events.jsonl", '{"user_id": 1, "item_id": 2}\n{"user_id": 1, "item_id": 3}\n', "JSON lines"),
        ("events", '\ufeff\n  {"user_id": 1,\n "item_id": 2}\n', "JSON lines"),  # after a BOM and blank lines
        ("events.json", '[\n  {"user_id": 1, "item_id": 2}\n]\n', "a JSON array"),
        ("events.csv", '[["u1", 2], ["u1", 3]]', "a JSON array"),
    ],
)
def test_json_is_named_as_such_not_blamed_on_its_fields(tmp_path, name, text, kind):
    # read as whitespace or CSV, its error spoke of fields and header lines, and suggested formats
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    for config in (DataConfig(), DataConfig(time_col="ts"), DataConfig(format="csv")):
        with pytest.raises(DataError, match=rf"{name}: holds {kind}, which awrsr does not read; save it as CSV or Parquet"):
            read_interactions(path, config)


def test_a_line_that_opens_with_a_bracket_or_a_brace_is_not_json(tmp_path):
    path = tmp_path / "events.csv"
    path.write_text("[u1],2\n[u1],3\n")
    config = DataConfig(has_header=False, user_col="column_1", item_col="column_2")
    assert read_interactions(path, config).get_column("user").to_list() == ["[u1]", "[u1]"]
    path.write_text("[u] id,item_id\nx,2\n")
    assert read_interactions(path, DataConfig(user_col="[u] id")).height == 1
    path.write_text("{3F2504E0-4F89-11D3-9A0C-0305E82C3301},5\n{3F2504E0-4F89-11D3-9A0C-0305E82C3301},6\n")  # a GUID
    assert read_interactions(path, config).get_column("item").to_list() == [5, 6]


def test_a_spreadsheet_workbook_says_so_not_zip(tmp_path):
    """An .xlsx or .ods is a zip archive, but unzipping it gives XML, not the table: the error says
    to save the sheet as CSV. Known by its name, or (renamed) by its entries; an Excel 97-2003
    workbook by its OLE2 header. A zip of a CSV stays "zip-compressed"."""
    import io
    import zipfile

    def zipped(*entries: str) -> bytes:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for entry in entries:
                archive.writestr(entry, "<xml/>")
        return buffer.getvalue()

    files = {
        "events.xlsx": zipped("[Content_Types].xml", "_rels/.rels"),  # by its name
        "events.csv": zipped("xl/workbook.xml"),  # renamed: by its entries
        "sheet.ods": zipped("mimetype"),
        "renamed.dat": zipped("mimetype").replace(b"<xml/>", b"application/vnd.oasis.opendocument.spreadsheet", 1),
        "old.xls": b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504),
    }
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(DataError, match=f"{name}: is a spreadsheet workbook \\(Excel or OpenDocument\\); save the sheet as CSV"):
            read_interactions(tmp_path / name, DataConfig())
    (tmp_path / "plain.zip").write_bytes(zipped("events.csv"))
    with pytest.raises(DataError, match="plain.zip: is zip-compressed"):
        read_interactions(tmp_path / "plain.zip", DataConfig())


def test_a_parquet_file_is_known_by_its_first_bytes(tmp_path):
    # without its suffix it was read as text: "not valid UTF-8 text ... save the file as UTF-8"
    frame = pl.DataFrame({"user_id": [1, 1, 2], "item_id": [5, 6, 5]})
    frame.write_parquet(tmp_path / "events")
    assert read_interactions(tmp_path / "events", DataConfig())["item"].to_list() == [5, 6, 5]
    frame.write_parquet(tmp_path / "events.csv")
    with pytest.raises(DataError, match=r"events.csv: is a Parquet file, but its name \(.csv\) says csv; set data.format parquet"):
        read_interactions(tmp_path / "events.csv", DataConfig())
    with pytest.raises(DataError, match=r"events: is a Parquet file, but data.format whitespace; set data.format parquet"):
        read_interactions(tmp_path / "events", DataConfig(format="whitespace"))
    assert read_interactions(tmp_path / "events.csv", DataConfig(format="parquet")).height == 3


def test_unreadable_parquet_is_a_data_error(tmp_path):
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"not parquet at all")
    with pytest.raises(DataError, match="broken.parquet: cannot read as parquet"):
        read_interactions(path, DataConfig())


def test_dates_and_date_strings_order_events(tmp_path):
    path = tmp_path / "dates.csv"
    path.write_text("user_id,item_id,day\n1,1,2024-03-02\n1,2,2024-03-01\n1,3,2024-03-03\n")
    config = DataConfig(path=str(path), time_col="day", min_user_interactions=0, min_item_interactions=0)
    assert sequences(load_sequence_data(config)) == [[2, 1, 3]]
    path.write_text("user_id,item_id,day\n1,1,yesterday\n")
    with pytest.raises(DataError, match="'day'.*not a date"):
        read_interactions(path, config)


def test_times_with_and_without_a_zone_are_refused_by_name_and_offsets_are_compared_in_utc(tmp_path):
    path = tmp_path / "events.csv"
    config = DataConfig(path=str(path), time_col="ts", min_user_interactions=0, min_item_interactions=0)
    path.write_text("user_id,item_id,ts\nu0,a,2024-01-05T10:30:00\nu0,b,2024-01-05T10:00:00Z\nu0,c,2024-01-05T11:00:00\n")
    with pytest.raises(DataError, match=r"events.csv:3: column 'ts' \(data.time_col\) holds '2024-01-05T10:00:00Z', with a "
                                        r"time zone, where others are without one \('2024-01-05T10:30:00'\)"):
        read_interactions(path, config)
    path.write_text("user_id,item_id,ts\nu0,a,2024-01-05T10:30:00+01:00\nu0,b,2024-01-05 09:00\nu0,c,2024-01-05T11:00Z\n")
    with pytest.raises(DataError, match=r"events.csv:3: .*'2024-01-05 09:00', without a time zone, .*give every time its zone, or none"):
        read_interactions(path, config)
    # offsets are compared in UTC (10:30+01:00 is 09:30Z, before 09:45Z)
    path.write_text("user_id,item_id,ts\nu0,a,2024-01-05T10:30:00+01:00\nu0,b,2024-01-05T09:45:00Z\nu0,c,2024-01-05T09:00:00-01:00\n")
    assert sequences(load_sequence_data(config)) == [["a", "b", "c"]]


@pytest.mark.parametrize("dates", [("05/01/2024", "04/02/2024", "03/03/2024"), ("05-01-2024", "04-02-2024", "03-03-2024"),
                                   ("05.01.2024", "04.02.2024", "03.03.2024"), ("12/25/2023", "05/01/2024", "06/01/2024")])
def test_dates_that_are_not_year_first_are_refused_as_ambiguous(tmp_path, dates):
    """Day-first or month-first? polars would guess day-first and order a US log wrongly without a
    word (a, b, c below read as 5 Jan, 4 Feb, 3 Mar; as US dates they are c, b, a)."""
    path = tmp_path / "events.csv"
    path.write_text("user_id,item_id,ts\n" + "".join(f"u0,{item},{day}\n" for item, day in zip("abc", dates)))
    config = DataConfig(path=str(path), time_col="ts", min_user_interactions=0, min_item_interactions=0)
    with pytest.raises(DataError, match=rf"events.csv:2: column 'ts' .*'{re.escape(dates[0])}', a date not in ISO 8601 order"):
        read_interactions(path, config)
    path.write_text("user_id,item_id,ts\nu0,a,2024-01-05\nu0,b,2024-02-04 10:00:00\nu0,c,2024-01-05T09:00:00\n")
    assert sequences(load_sequence_data(config)) == [["a", "c", "b"]]  # 5 Jan 00:00, 5 Jan 09:00, 4 Feb


def test_a_header_name_with_spaces_around_it_is_pointed_out(tmp_path):
    path = tmp_path / "events.csv"
    path.write_text(" user_id , item_id \n1,2\n")
    with pytest.raises(DataError, match=r"no column 'user_id' \(data.user_col\); the columns are: ' user_id ', ' item_id ' "
                                        r"\(' user_id ' has spaces around it: name it so, or take them out of the header\)"):
        read_interactions(path, DataConfig())
    assert read_interactions(path, DataConfig(user_col=" user_id ", item_col=" item_id ")).height == 1
    path.write_text("user_id,item_id\n1,2\n")  # the spaces in the option's name, not the header's
    with pytest.raises(DataError, match=r"no column 'user_id ' \(data.user_col\); the columns are: 'user_id', 'item_id' "
                                        r"\(data.user_col 'user_id ' has spaces around it: the header names 'user_id'\)"):
        read_interactions(path, DataConfig(user_col="user_id "))
    path.write_text("visitor,item_id\n1,2\n")  # no near name: no hint
    with pytest.raises(DataError, match=r"the columns are: 'visitor', 'item_id'$"):
        read_interactions(path, DataConfig())


@pytest.mark.parametrize("date", ["2024-1-5", "2024/01/05", "2024.1.15"])
def test_a_year_first_date_not_written_as_iso_is_not_called_ambiguous(tmp_path, date):
    # its year comes first, so no day or month is in doubt: the error asks for ISO's form instead
    path = tmp_path / "events.csv"
    path.write_text(f"user_id,item_id,ts\nu0,a,2024-01-04\nu0,b,{date}\n")
    with pytest.raises(DataError, match=rf"events.csv:3: column 'ts' .*'{re.escape(date)}', a date not written as ISO 8601 "
                                        r"\(a four-digit year, then a two-digit month and day, joined by dashes\)") as err:
        read_interactions(path, DataConfig(time_col="ts"))
    assert "cannot be told" not in str(err.value)


def test_text_ids_in_frames_and_parquet_lose_their_spaces_as_in_a_csv(tmp_path):
    """A CHAR(n) column pads its ids; a CSV's "1, 26" is item 26. A frame or a Parquet file of the
    same data reads the same, and a blank id is missing there too, not an item named ''."""
    padded = pl.DataFrame({"user_id": ["u1 ", " u1", "u2"], "item_id": [" 26", "27 ", "26"]})
    plain = pl.DataFrame({"user_id": ["u1", "u1", "u2"], "item_id": ["26", "27", "26"]})
    padded.write_parquet(tmp_path / "padded.parquet")
    for source in (padded, padded.lazy(), tmp_path / "padded.parquet"):
        read = read_interactions(source, DataConfig())
        assert read.select("user", "item").equals(read_interactions(plain, DataConfig()).select("user", "item"))
    blank = pl.DataFrame({"user_id": ["u1", "u1"], "item_id": ["26", "  "]})
    with pytest.raises(DataError, match=r"<frame>: row 1 \(0-based\): column 'item_id' \(data.item_col\) is empty"):
        read_interactions(blank, DataConfig())
    blank.write_parquet(tmp_path / "blank.parquet")
    with pytest.raises(DataError, match=r"blank.parquet: row 1 \(0-based\): column 'item_id' \(data.item_col\) is empty"):
        read_interactions(tmp_path / "blank.parquet", DataConfig())


def test_a_missing_value_marker_among_whole_number_ids_is_a_hole_not_an_item(tmp_path):
    # "NA" in a column of whole numbers (what R and spreadsheets write) would be item "NA" and
    # make every id text; where the ids are text anyway, it may be a real id and is kept
    path = tmp_path / "na.csv"
    path.write_text("user_id,item_id\n1,10\n1,NA\n2,11\n2,n/a\n")
    with pytest.raises(DataError, match=r"na.csv:3: column 'item_id' \(data.item_col\) is 'NA', which marks a missing "
                                        r"value, and a whole number on every other row; remove the 2 rows without an id"):
        read_interactions(path, DataConfig())
    frame = pl.DataFrame({"user_id": ["null", "7", "8"], "item_id": [1, 2, 3]})
    with pytest.raises(DataError, match=r"<frame>: row 0 \(0-based\): column 'user_id' \(data.user_col\) is 'null'"):
        read_interactions(frame, DataConfig())
    text_ids = read_interactions(pl.DataFrame({"user_id": [1, 1, 2], "item_id": ["NA", "sku-1", "None"]}), DataConfig())
    assert text_ids.get_column("item").to_list() == ["NA", "sku-1", "None"]
    assert read_interactions(pl.DataFrame({"user_id": [1, 1], "item_id": ["NAN", "NONE"]}), DataConfig()).height == 2


def test_float_ids_must_be_whole_numbers():
    frame = pl.DataFrame({"user_id": [1.0, 2.0], "item_id": [3.0, 4.5]})
    with pytest.raises(DataError, match=r"row 1 .*'item_id'.*non-integer"):
        read_interactions(frame, DataConfig())
    ok = read_interactions(pl.DataFrame({"user_id": [1.0], "item_id": [3.0]}), DataConfig())
    assert ok.schema["item"] == pl.Int64 and ok["item"].to_list() == [3]


def test_decimal_ids_are_ids_as_whole_numbers(tmp_path):
    # Decimal(10, 2) kept "28.00" as a text id, unknown to a history of 28 and to the CSV of the same log
    from decimal import Decimal

    frame = pl.DataFrame({"user_id": [1, 1], "item_id": [Decimal("28.00"), Decimal("-7.00")]},
                         schema={"user_id": pl.Int64, "item_id": pl.Decimal(10, 2)})
    frame.write_parquet(tmp_path / "events.parquet")
    read = read_interactions(tmp_path / "events.parquet", DataConfig())
    assert read.schema["item"] == pl.Int64 and read["item"].to_list() == [28, -7]
    huge = pl.DataFrame({"user_id": [1], "item_id": [Decimal(10**25)]}, schema={"user_id": pl.Int64, "item_id": pl.Decimal(38, 0)})
    assert read_interactions(huge, DataConfig())["item"].to_list() == [str(10**25)]  # exact, as text, as a huge integer is
    frame = frame.with_columns(pl.Series("item_id", [Decimal("28.00"), Decimal("3.50")], dtype=pl.Decimal(10, 2)))
    with pytest.raises(DataError, match=r"row 1 \(0-based\): column 'item_id' \(data.item_col\) holds 3.50, a non-integer number"):
        read_interactions(frame, DataConfig())


def test_polars_frames_eager_and_lazy():
    eager = read_interactions(FRAME, DataConfig(**COLS))
    lazy = read_interactions(FRAME.lazy(), DataConfig(**COLS))
    assert eager.equals(lazy)
    assert eager["row"].to_list() == list(range(FRAME.height))


def test_pandas_frame():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"who": ["u1", "u1", 3], "what": [1, 2, 3], "when": [2, 1, 3]})
    out = read_interactions(frame, DataConfig(**COLS))
    assert out["user"].to_list() == ["u1", "u1", "3"]  # mixed ids compare as text
    assert out["item"].to_list() == [1, 2, 3]


def test_time_errors_name_the_bad_row_and_list_ids_are_rejected(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("user_id,item_id,ts\n1,10,2020-01-01\n1,11,2020-13-01\n")
    with pytest.raises(DataError, match=r"t\.csv:3: .*'2020-13-01'"):
        read_interactions(path, DataConfig(path=str(path), time_col="ts"))
    with pytest.raises(DataError, match="List"):
        read_interactions(pl.DataFrame({"user_id": [[1], [2]], "item_id": [1, 2]}), DataConfig())


# --- ids keep their identity in text files -------------------------------------------------------


@pytest.mark.parametrize("sep", [",", "\t"])
def test_text_ids_with_leading_zeros_stay_distinct(tmp_path, sep):
    path = tmp_path / ("skus.csv" if sep == "," else "skus.tsv")
    rows = [("u1", "00007"), ("u1", "7"), ("007", "0123"), ("007", "123")]
    path.write_text(sep.join(["user_id", "item_id"]) + "\n" + "".join(f"{u}{sep}{i}\n" for u, i in rows))
    frame = read_interactions(path, DataConfig())
    assert frame.schema["item"] == pl.String and frame["item"].to_list() == ["00007", "7", "0123", "123"]
    assert frame["user"].to_list() == ["u1", "u1", "007", "007"]
    data = load_sequence_data(DataConfig(path=str(path), min_user_interactions=0, min_item_interactions=0))
    assert data.num_items == 4 and data.item_vocab.encode(["00007", "7"]).tolist() == [1, 2]


@pytest.mark.parametrize(("values", "dtype"), [
    (["7", "-3", "12"], pl.Int64),  # canonical integers: an int vocabulary, as before
    (["7", "+7"], pl.String), (["7", "-0"], pl.String), (["1.5", "2"], pl.String), (["007", "2.0"], pl.String),
    (["1.0", "2", "-3.00"], pl.Int64),  # whole numbers written as floats (pandas' int column with gaps): ids 1, 2, -3
])
def test_text_ids_are_integers_only_when_written_canonically(tmp_path, values, dtype):
    path = tmp_path / "ids.csv"
    path.write_text("user_id,item_id\n" + "".join(f"1,{v}\n" for v in values))
    frame = read_interactions(path, DataConfig())
    assert frame.schema["user"] == pl.Int64 and frame.schema["item"] == dtype
    expected = [str(int(float(v))) for v in values] if dtype == pl.Int64 else values
    assert frame["item"].cast(pl.String).to_list() == expected


def test_parquet_and_frames_keep_their_id_types(tmp_path):
    source = pl.DataFrame({"user_id": ["1", "1"], "item_id": ["7", "8"]})
    source.write_parquet(tmp_path / "s.parquet")
    for frame in (read_interactions(tmp_path / "s.parquet", DataConfig()), read_interactions(source, DataConfig())):
        assert frame.schema["user"] == pl.String and frame["item"].to_list() == ["7", "8"]


def test_whitespace_files_keep_integer_ids(tmp_path):
    path = tmp_path / "pairs.txt"
    path.write_text("1 7\n1 12\n2 7\n")
    frame = read_interactions(path, DataConfig())
    assert frame.schema["user"] == pl.Int64 and frame["item"].to_list() == [7, 12, 7]


# --- per-row errors name the right line ----------------------------------------------------------


def test_bad_timestamp_among_numbers_names_its_line_and_value(tmp_path):
    path = tmp_path / "badts.csv"
    path.write_text("visitor,product,ts\nu1,a,1600000001\nu2,b,1600000002\nu1,c,notatime\nu2,d,1600000004\n")
    config = DataConfig(user_col="visitor", item_col="product", time_col="ts")
    with pytest.raises(DataError, match=r"badts\.csv:4: column 'ts' \(data.time_col\) holds 'notatime', which is not a number"):
        read_interactions(path, config)
    path.write_text("visitor,product,ts\nu1,a,soon\nu2,b,1600000002\nu1,c,1600000003\n")
    with pytest.raises(DataError, match=r"badts\.csv:2: .*'soon'"):
        read_interactions(path, config)


@pytest.mark.parametrize(("text", "line"), [
    ("\n\nuser_id,item_id,ts\n1,1,5\n1,2,x\n", 5),  # blank lines before the header are skipped
    ('user_id,item_id,ts\n1,"a\nb",5\n1,2,x\n', 4),  # a quoted value spanning two lines
    ("user_id,item_id,ts\r\n1,1,5\r\n\r\n,2,7\r\n", 4),  # a blank line is skipped but counted
])
def test_line_numbers_follow_the_file_not_the_row_count(tmp_path, text, line):
    path = tmp_path / "events.csv"
    path.write_bytes(text.encode())
    with pytest.raises(DataError, match=rf"events\.csv:{line}: column '(ts|user_id)'"):
        read_interactions(path, DataConfig(time_col="ts"))


def test_numbers_written_as_text_are_times():
    frame = pl.DataFrame({"user_id": [1, 1], "item_id": [2, 3], "ts": ["20", "10"]})
    assert read_interactions(frame, DataConfig(time_col="ts"))["timestamp"].to_list() == [20, 10]


def test_integer_times_written_as_text_stay_exact():
    # nanosecond times one apart: as float64 (53-bit mantissa) they would tie, and file order would win
    times = ["1600000000000000001", "1600000000000000000", "1600000000000000002"]
    frame = pl.DataFrame({"user_id": [1, 1, 1], "item_id": [2, 3, 4], "ts": times})
    assert read_interactions(frame, DataConfig(time_col="ts"))["timestamp"].to_list() == [int(x) for x in times]
    data = load_sequence_data(DataConfig(time_col="ts", min_user_interactions=1, min_item_interactions=1), frame=frame)
    assert data.item_vocab.decode(data.sequences[0]) == [3, 2, 4]  # in time order


# --- files without a header line -----------------------------------------------------------------


@pytest.mark.parametrize("first", ["1,1", "u1,7", "u1,sku-1,1600000000", "ab,ab"])  # names never repeat
def test_headerless_file_is_named_as_such(tmp_path, first):
    path = tmp_path / "nohdr.csv"
    path.write_text(f"{first}\n1,2\n")
    with pytest.raises(DataError) as err:
        read_interactions(path, DataConfig())
    message = str(err.value)
    assert "nohdr.csv" in message and "no header line" in message and "_duplicated_" not in message
    assert "data.user_col 'user_id'" in message and "data.has_header" in message


def test_header_with_other_names_is_not_called_headerless(tmp_path):
    path = tmp_path / "events.csv"
    path.write_text("visitor,product\nu1,a\n")
    with pytest.raises(DataError, match=r"no column 'user_id' \(data.user_col\); the columns are: 'visitor', 'product'"):
        read_interactions(path, DataConfig())


def test_has_header_false_names_columns_by_position(tmp_path):
    path = tmp_path / "nohdr.tsv"
    path.write_text("u1\t007\t5\nu1\t7\t4\nu2\t007\tlater\n")
    config = DataConfig(has_header=False, user_col="column_1", item_col="column_2", time_col="column_3")
    with pytest.raises(DataError, match=r"nohdr\.tsv:3: column 'column_3' .*'later'"):
        read_interactions(path, config)
    path.write_text("u1\t007\t5\nu1\t7\t4\n")
    frame = read_interactions(path, config)
    assert frame["item"].to_list() == ["007", "7"] and frame["timestamp"].to_list() == [5, 4]
    with pytest.raises(DataError, match="the columns are: 'column_1', 'column_2', 'column_3'"):
        read_interactions(path, DataConfig(has_header=False))


def test_has_header_changes_no_fingerprint(tmp_path):
    rows = "".join(f"{u},{i}\n" for u in range(1, 4) for i in range(1, 5))
    (tmp_path / "with.csv").write_text("user_id,item_id\n" + rows)
    (tmp_path / "without.csv").write_text(rows)
    kw = dict(min_user_interactions=0, min_item_interactions=0)
    with_header = load_sequence_data(DataConfig(path=str(tmp_path / "with.csv"), **kw))
    without = load_sequence_data(
        DataConfig(path=str(tmp_path / "without.csv"), has_header=False, user_col="column_1", item_col="column_2", **kw)
    )
    assert with_header.fingerprint == without.fingerprint and with_header.item_vocab.id_type == "int"


def test_a_header_line_read_as_data_is_refused(tmp_path):
    # it became an interaction of user 'user_id' and item 'item_id', and every id became text
    path = tmp_path / "events.csv"
    path.write_text("\nuser_id,item_id\n1,10\n2,11\n")
    config = DataConfig(has_header=False, user_col="column_1", item_col="column_2")
    with pytest.raises(DataError, match=r"events.csv:2: 'user_id,item_id' looks like a header line \(column_1 is 'user_id' here "
                                        r"and a whole number on every other line\), but data.has_header is false"):
        read_interactions(path, config)
    path.write_text("u1,i10\nu2,i11\n")  # text ids throughout: a first line like any other
    assert read_interactions(path, config)["user"].to_list() == ["u1", "u2"]
    path.write_text("u1,10\n2,11\n")  # a number in the line, as a header never holds
    assert read_interactions(path, config)["item"].to_list() == [10, 11]


def test_has_header_must_be_a_bool():
    assert DataConfig().has_header is True
    with pytest.raises(ConfigError, match="data.has_header"):
        DataConfig(has_header="no")


# --- pandas frames: missing values and numbered columns ----------------------------------------


@pytest.mark.parametrize("missing", ["none", "nan", "na"])
def test_missing_pandas_ids_are_empty_not_the_text_nan(missing):
    pd = pytest.importorskip("pandas")
    np = pytest.importorskip("numpy")
    value = {"none": None, "nan": np.nan, "na": pd.NA}[missing]
    frame = pd.DataFrame({"user_id": pd.Series(["a", value, "b", value], dtype=object), "item_id": [1, 2, 3, 4]})
    with pytest.raises(DataError, match=r"<frame>: row 1 \(0-based\): column 'user_id' \(data.user_col\) is empty"):
        read_interactions(frame, DataConfig())


def test_a_blank_id_read_by_pandas_is_empty():
    pd = pytest.importorskip("pandas")
    import io

    frame = pd.read_csv(io.StringIO('user_id,item_id\nu1,1\n"",2\nu2,3\n'))  # a string column with NaN
    with pytest.raises(DataError, match=r"row 1 \(0-based\): column 'user_id' .* is empty"):
        read_interactions(frame, DataConfig())


def test_pandas_columns_numbered_by_read_csv_are_named_by_their_text():
    pd = pytest.importorskip("pandas")
    import io

    frame = pd.read_csv(io.StringIO("1,10,5\n1,11,4\n"), header=None)  # labels 0, 1, 2 (ints)
    out = read_interactions(frame, DataConfig(user_col="0", item_col="1", time_col="2"))
    assert out["item"].to_list() == [10, 11] and out["timestamp"].to_list() == [5, 4]
    twice = pd.DataFrame([[1, 2, 3]], columns=["user_id", "user_id", "item_id"])
    with pytest.raises(DataError, match="2 columns are named 'user_id'"):
        read_interactions(twice, DataConfig())


# --- float ids Int64 cannot hold ------------------------------------------------------------------


@pytest.mark.parametrize(("value", "shown"), [
    (float("inf"), "inf"), (float("-inf"), "-inf"), (1e30, "1e+30"), (2.0**63, "9.223372036854776e+18"),
])
def test_float_ids_beyond_int64_name_their_row_and_value(tmp_path, value, shown):
    path = tmp_path / "ids.parquet"
    pl.DataFrame({"user_id": [1, 1, 2], "item_id": [3.0, value, 4.0]}).write_parquet(path)
    where = r"ids.parquet: row 1 \(0-based\): column 'item_id'"
    with pytest.raises(DataError, match=rf"{where} .*holds {re.escape(shown)}, outside the 64-bit integer range"):
        read_interactions(path, DataConfig())


def test_the_smallest_int64_is_still_an_id():
    frame = pl.DataFrame({"user_id": [1.0], "item_id": [-(2.0**63)]})
    assert read_interactions(frame, DataConfig())["item"].to_list() == [-(2**63)]


# --- quotes, blank lines and spaces in CSV/TSV files ----------------------------------------------


def test_a_quote_in_a_file_that_quotes_nothing_is_a_plain_character(tmp_path):
    path = tmp_path / "products.csv"
    path.write_text('user_id,item_id,title\n7,3,15" monitor\n' + "7,4,cable\n" * 50 + ",5,x\n")
    with pytest.raises(DataError, match=r"products.csv:53: column 'user_id'"):  # read, lines still right
        read_interactions(path, DataConfig())
    path.write_text('user_id,item_id,title\n7,3,15" monitor\n7,4,cable\n')
    frame = read_interactions(path, DataConfig())
    assert frame["item"].to_list() == [3, 4]


def test_a_quote_inside_an_unquoted_value_of_a_quoting_file_names_its_line(tmp_path):
    path = tmp_path / "products.csv"
    path.write_text('user_id,item_id,title\n7,2,"a ""b"", c"\n7,3,15" monitor\n7,4,cable\n')
    with pytest.raises(DataError) as err:
        read_interactions(path, DataConfig())
    assert str(err.value) == f'{path}:3: the value \'15" monitor\' holds a \'"\' but is not quoted; write it as "15"" monitor"'


@pytest.mark.parametrize("text", [
    "user_id,item_id\n1,10\n\n1,11\n",
    "user_id,item_id\n1,10\n1,11\n\n\n",  # at the end
    "user_id,item_id\r\n1,10\r\n   \r\n1,11\r\n \t \r\n",  # whitespace only, CRLF
])
def test_blank_lines_are_skipped(tmp_path, text):
    path = tmp_path / "blank.csv"
    path.write_bytes(text.encode())
    frame = read_interactions(path, DataConfig())
    assert frame["item"].to_list() == [10, 11] and frame["row"].to_list() == [0, 1]


def test_blank_lines_are_skipped_without_a_header_too(tmp_path):
    path = tmp_path / "blank.tsv"
    config = DataConfig(has_header=False, user_col="column_1", item_col="column_2")
    path.write_text("\n1\t10\n\n1\t11\n")
    assert read_interactions(path, config)["item"].to_list() == [10, 11]
    path.write_text("\n1\t10\n\n1\t11\n\t12\n")  # lines count the blank ones
    with pytest.raises(DataError, match=r"blank.tsv:5: column 'column_1' \(data.user_col\) is empty"):
        read_interactions(path, config)


@pytest.mark.parametrize(("name", "text", "line"), [
    ("seps.csv", "user_id,item_id\n1,10\n\n,\n1,11\n", 4),  # a line of separators is a row of empty values
    ("seps.tsv", "user_id\titem_id\n1\t10\n \t \n1\t11\n", 3),
    ("seps.csv", "user_id,item_id\n1,10\n\n1,11\n,12\n", 5),  # errors after a blank line name the right line
])
def test_a_line_of_separators_is_not_blank(tmp_path, name, text, line):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DataError, match=rf"{name}:{line}: column 'user_id' \(data.user_col\) is empty"):
        read_interactions(path, DataConfig())


def test_a_line_past_what_the_csv_module_reads_is_still_counted_after_the_header(tmp_path):
    # A value over the csv module's field limit stops it; the line is then worked out from the
    # row number, which must still count the header line.
    path = tmp_path / "huge.csv"
    path.write_text("user_id,item_id\n1,10\n1," + "x" * 200_000 + "\n,12\n")
    with pytest.raises(DataError, match=r"huge.csv:4: column 'user_id' \(data.user_col\) is empty"):
        read_interactions(path, DataConfig())


@pytest.mark.parametrize("sep", [",", "\t"])
def test_spaces_around_ids_are_not_part_of_them(tmp_path, sep):
    path = tmp_path / ("events.csv" if sep == "," else "events.tsv")
    path.write_text(f"user_id{sep}item_id\n1{sep} 10\n1{sep}10\n u2 {sep}sku \nu2{sep}sku\n")
    frame = read_interactions(path, DataConfig())
    assert frame["user"].to_list() == ["1", "1", "u2", "u2"] and frame["item"].to_list() == ["10", "10", "sku", "sku"]
    path.write_text(f"user_id{sep}item_id\n1{sep} 10\n1{sep}10\n")
    frame = read_interactions(path, DataConfig())
    assert frame.schema["item"] == pl.Int64 and frame["item"].to_list() == [10, 10]
    path.write_text(f'user_id{sep}item_id\n1{sep}10\n1{sep}"  "\n')
    with pytest.raises(DataError, match=r":3: column 'item_id' \(data.item_col\) is empty"):
        read_interactions(path, DataConfig())


def test_spaces_around_times_are_not_part_of_them(tmp_path):
    path = tmp_path / "events.csv"
    path.write_text("user_id,item_id,ts\n1,10, 1600000002\n1,11, 1600000001\n2,12, 2020-01-02\n")
    with pytest.raises(DataError, match=r":4: .*'2020-01-02'"):  # spaces stripped: the misfit is the date itself
        read_interactions(path, DataConfig(time_col="ts"))
    path.write_text("user_id,item_id,ts\n1,10, 1600000002\n1,11, 1600000001\n")
    assert read_interactions(path, DataConfig(time_col="ts"))["timestamp"].to_list() == [1600000002, 1600000001]


def test_lone_carriage_returns_are_named_not_read_as_one_line(tmp_path):
    path = tmp_path / "events.csv"
    path.write_bytes(b"user_id,item_id\r1,10\r1,11\r")
    with pytest.raises(DataError, match=r"events\.csv: its lines end in a lone carriage return"):
        read_interactions(path, DataConfig())
    path.write_bytes(b"user_id,item_id\r\n1,10\r\n1,11\r\n")  # CRLF is fine
    assert read_interactions(path, DataConfig())["item"].to_list() == [10, 11]


# --- values at the edges of the number types ------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [
    # polars reads these as Int128; casting them to Int64 failed inside polars
    ("99999999999999999999", r"times\.csv:3: column 'ts' \(data.time_col\) holds 99999999999999999999, outside the 64-bit"),
    ("inf", r"times\.csv:3: column 'ts' \(data.time_col\) holds inf; timestamps must be finite"),
    ("-1e400", r"times\.csv:3: .*holds -inf; timestamps must be finite"),
    ("NaN", r"times\.csv:3: column 'ts' \(data.time_col\) holds NaN, a missing value"),
])
def test_a_timestamp_no_order_can_use_names_its_line(tmp_path, value, expected):
    path = tmp_path / "times.csv"
    path.write_text(f"user_id,item_id,ts\n1,2,4\n1,3,{value}\n1,5,6\n")
    with pytest.raises(DataError, match=expected):
        read_interactions(path, DataConfig(time_col="ts"))


def test_integer_ids_beyond_int64_stay_exact_as_text(tmp_path):
    path = tmp_path / "big.parquet"
    big = 2**64 + 5
    pl.DataFrame({"user_id": [1, 1, 1], "item_id": pl.Series([big, 3, big], dtype=pl.Int128)}).write_parquet(path)
    frame = read_interactions(path, DataConfig())
    assert frame["item"].to_list() == [str(big), "3", str(big)]


@pytest.mark.parametrize(("header", "name", "field"), [
    ("user_id,item_id,item_id,ts", "item_id", "item_col"),
    ("user_id,user_id,item_id,ts", "user_id", "user_col"),
    ("user_id,item_id,ts,ts", "ts", "time_col"),
])
def test_a_header_naming_a_column_twice_is_refused(tmp_path, header, name, field):
    # polars keeps the first and renames the second item_id_duplicated_0: a silent choice
    path = tmp_path / "dup.csv"
    path.write_text(f"{header}\n1,2,30,5\n1,3,40,6\n")
    with pytest.raises(DataError, match=rf"dup\.csv: the header names the column '{name}' \(data.{field}\) more than once"):
        read_interactions(path, DataConfig(time_col="ts"))


@pytest.mark.parametrize("separator", ['"', "\n", "\r"])
def test_quotes_and_line_ends_cannot_separate_fields(separator):
    with pytest.raises(ConfigError, match="data.separator cannot be"):
        DataConfig(separator=separator)


@pytest.mark.parametrize(
    ("text", "has_header", "named", "advice"),
    [
        ("user_id;item_id;ts\n1;10;5\n", True, "2 ';'", "set data.separator ';'"),
        ("1;10;5\n1;11;6\n", False, "2 ';'", "set data.separator ';'"),  # named by position: column_2 missing
        ("user_id\titem_id\n1\t10\n", True, "1 '\\t'", "set data.format tsv"),
        ("user_id|item_id|ts|x\n1|10|5|0\n", True, "3 '|'", "set data.separator '|'"),
    ],
)
def test_a_file_with_another_separator_is_named_as_such(tmp_path, text, has_header, named, advice):
    path = tmp_path / "events.csv"
    path.write_text(text)
    columns = {} if has_header else {"user_col": "column_1", "item_col": "column_2"}
    with pytest.raises(DataError) as err:
        read_interactions(path, DataConfig(has_header=has_header, **columns))
    message = str(err.value)
    assert "events.csv: line 1 " in message and f"holds no ',' but {named}" in message and advice in message, message


def test_a_comma_file_read_as_tsv_is_told_to_read_it_as_csv(tmp_path):
    path = tmp_path / "events.tsv"
    path.write_text("user_id,item_id\n1,10\n")
    with pytest.raises(DataError, match=r"holds no '\\t' but 1 ',': .* set data.format csv \(or data.separator ','\)"):
        read_interactions(path, DataConfig())
    path = tmp_path / "events.csv"  # a separator set by hand is the one to change
    path.write_text("user_id,item_id\n1,10\n")
    with pytest.raises(DataError, match=r"; set data.separator ','$"):
        read_interactions(path, DataConfig(separator=";"))


def test_one_column_without_another_separator_gets_the_usual_message(tmp_path):
    path = tmp_path / "events.csv"
    path.write_text("visitor product\nu1 a\n")  # spaces are not guessed: a name may hold one
    with pytest.raises(DataError, match=r"no column 'user_id' \(data.user_col\); the columns are: 'visitor product'"):
        read_interactions(path, DataConfig())


def test_integer_ids_at_the_ends_of_int64():
    # the smallest Int64 is an id like any other; 2**63 (a UInt64) is not one, and stays exact as text
    frame = pl.DataFrame({"user_id": [1, 1], "item_id": pl.Series([-(2**63), 5], dtype=pl.Int64)})
    out = read_interactions(frame, DataConfig())
    assert out.schema["item"] == pl.Int64 and out["item"].to_list() == [-(2**63), 5]
    frame = pl.DataFrame({"user_id": [1, 1], "item_id": pl.Series([2**63, 5], dtype=pl.UInt64)})
    assert read_interactions(frame, DataConfig())["item"].to_list() == ["9223372036854775808", "5"]


def test_boolean_ids_are_refused():
    frame = pl.DataFrame({"user_id": [1, 1], "item_id": [True, False]})
    with pytest.raises(DataError, match=r"<frame>: column 'item_id' \(data.item_col\) has type Boolean; ids must be"):
        read_interactions(frame, DataConfig())


def test_text_times_keep_their_nanoseconds_as_a_frame_does(tmp_path):
    # cut to microseconds both would tie, and file order would put the later event first
    path = tmp_path / "events.csv"
    path.write_text("user_id,item_id,ts\n1,a,2024-01-05 10:30:00.000000002\n1,b,2024-01-05T10:30:00.000000001\n")
    read = read_interactions(path, DataConfig(time_col="ts")).sort("timestamp", "row")
    assert read["item"].to_list() == ["b", "a"]
    # beyond nanoseconds' years (1677-2262) their parse wraps around without a word: microseconds
    path.write_text("user_id,item_id,ts\n1,a,2024-01-05 10:30:00.0000000\n1,b,9999-12-31 23:59:59.9999999\n"
                    "1,c,2024-01-06 08:00:00.0000000\n1,d,1500-01-05 10:30:00.1234567\n")
    assert read_interactions(path, DataConfig(time_col="ts")).sort("timestamp")["item"].to_list() == ["d", "a", "c", "b"]


def test_times_of_day_without_dates_are_refused():
    import datetime as dt

    # 23:00 on day 1 and 08:00 on day 2 would sort as 08:00, 23:00
    frame = pl.DataFrame({"user_id": [1, 1], "item_id": [5, 6], "ts": [dt.time(23), dt.time(8)]})
    with pytest.raises(DataError, match=r"<frame>: column 'ts' \(data.time_col\) holds times of day \(23:00:00\) without"):
        read_interactions(frame, DataConfig(time_col="ts"))
    durations = pl.DataFrame({"user_id": [1, 1], "item_id": [5, 6], "ts": [dt.timedelta(days=2), dt.timedelta(hours=1)]})
    assert read_interactions(durations, DataConfig(time_col="ts")).sort("timestamp")["item"].to_list() == [6, 5]


def test_whole_floats_among_a_pandas_columns_mixed_ids_are_one_item_with_their_ints():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"user_id": [1, 1, 1, 1], "item_id": pd.Series([7, 7.0, "7", 7.5], dtype=object)})
    assert read_interactions(frame, DataConfig())["item"].to_list() == ["7", "7", "7", "7.5"]


@pytest.mark.parametrize("flag, other", [(True, 2), (np.False_, 2), (True, "b")])
def test_a_boolean_among_a_pandas_columns_ids_is_refused_not_read_as_item_1(flag, other):
    # among ints polars reads True as 1; among text, as the id "True"
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"user_id": [1, 1, 1], "item_id": pd.Series([1, other, flag], dtype=object)})
    with pytest.raises(DataError, match=rf"<frame>: row 2 \(0-based\): column 'item_id' holds {flag!r}; ids and times are never"):
        read_interactions(frame, DataConfig())


def test_fractional_times_written_as_text_keep_their_fraction():
    # 2.5 comes after 2.25: cut to integers both would be 2, and file order would put 2.5 first
    frame = pl.DataFrame({"user_id": [1, 1, 1], "item_id": [7, 8, 9], "ts": ["2.5", "2.25", "3"]})
    assert read_interactions(frame, DataConfig(time_col="ts"))["timestamp"].to_list() == [2.5, 2.25, 3.0]
    data = load_sequence_data(DataConfig(time_col="ts", min_user_interactions=0, min_item_interactions=0), frame=frame)
    assert sequences(data) == [[8, 7, 9]]


def test_a_headerless_file_names_the_column_that_is_missing(tmp_path):
    # the first line holds a number, so it looks like data
    path = tmp_path / "events.csv"
    path.write_text("1,7\n1,8\n")
    with pytest.raises(DataError, match=r"events\.csv: no column 'user_id': the first line '1,7' looks like data"):
        read_interactions(path, DataConfig())


@pytest.mark.parametrize(
    "header, expected",
    [
        ("user_id,item_id,item_id", "the header names the column 'item_id' (data.item_col) more than once"),
        ("user_id,item_id,2024", "no column 'ts'"),
        ("user_id,7", "no column 'item_id'"),
    ],
)
def test_a_header_that_names_a_wanted_column_is_a_header_whatever_else_it_holds(tmp_path, header, expected):
    # a repeated or numeric name made it "look like data", and the error said to drop the header
    path = tmp_path / "events.csv"
    path.write_text(header + "\n" + ",".join(["1"] * (header.count(",") + 1)) + "\n")
    with pytest.raises(DataError, match=re.escape(expected)) as err:
        read_interactions(path, DataConfig(time_col="ts"))
    assert "looks like data" not in str(err.value) and "has_header" not in str(err.value)


# --- found by the data review of session 34 ----------------------------------------------------


def test_a_pipe_is_refused_not_read_in_part(tmp_path):
    # the format and compression checks read its first bytes, which the reader then never saw
    import os
    import threading

    fifo = tmp_path / "events.txt"
    os.mkfifo(fifo)

    done = threading.Event()

    def feed() -> None:  # a writer for each of a reader's opens, so that a reader gets data and an end, never hangs
        for _ in range(8):
            if done.is_set():
                return
            try:
                with open(fifo, "wb") as pipe:
                    pipe.write(b"1 10 11 12\n" * 20000)
            except OSError:  # the reader closed before reading it all
                pass

    threading.Thread(target=feed, daemon=True).start()
    try:
        with pytest.raises(DataError, match=r"events\.txt: is not a regular file \(a pipe or a device can be read only once\)"):
            read_interactions(fifo, DataConfig())
    finally:
        done.set()
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))  # lets the writer's waiting open return


def test_parquet_ids_stored_as_bytes_are_text_if_utf8(tmp_path):
    path = tmp_path / "events.parquet"
    pl.DataFrame({"user_id": [b"u1"] * 3, "item_id": [b"a", b"\xc3\xa9t\xc3\xa9", b"c"]}).write_parquet(path)
    assert read_interactions(path, DataConfig())["item"].to_list() == ["a", "été", "c"]
    pl.DataFrame({"user_id": [b"u1"] * 3, "item_id": [b"a", b"\xe9t\xe9", b"c"]}).write_parquet(path)
    with pytest.raises(DataError, match=r"events\.parquet: row 1 \(0-based\): column 'item_id' \(data.item_col\) holds bytes that are not UTF-8"):
        read_interactions(path, DataConfig())
    frame = pl.DataFrame({"user_id": [1, 1], "item_id": pl.Series([object(), object()], dtype=pl.Object)})
    with pytest.raises(DataError, match=r"column 'item_id' \(data.item_col\) has type Object; ids must be"):
        read_interactions(frame, DataConfig())


def test_pandas_times_in_seconds_or_days_keep_their_order():
    pd = pytest.importorskip("pandas")
    import numpy as np

    times = np.array(["2020-01-03T10:00:00", "2020-01-03T09:00:00", "2020-01-02T00:00:00"], dtype="datetime64[s]")
    for unit in ("s", "D"):
        frame = pd.DataFrame({"user_id": [1, 1, 1], "item_id": [10, 11, 12], "ts": pd.Series(times.astype(f"datetime64[{unit}]"))})
        assert read_interactions(frame, DataConfig(time_col="ts")).sort("row")["timestamp"].is_not_null().all()
        data = load_sequence_data(DataConfig(time_col="ts", min_user_interactions=0, min_item_interactions=0), frame=frame)
        expected = [12, 11, 10] if unit == "s" else [12, 10, 11]  # by day, 10 and 11 tie and keep file order
        assert sequences(data) == [expected]


def test_a_tab_separator_may_be_written_as_backslash_t(tmp_path):
    path = tmp_path / "events.csv"
    path.write_text("user_id\titem_id\n1\t10\n1\t11\n")
    with pytest.raises(DataError, match=r"set data.format tsv \(or data.separator '\\t'\)"):
        read_interactions(path, DataConfig())
    assert DataConfig(separator="\\t").separator == "\t"  # the hint, as typed: --data.separator '\t'
    assert read_interactions(path, DataConfig(separator="\\t"))["item"].to_list() == [10, 11]


def test_utf16_tables_and_lone_carriage_returns_inside_a_file_are_named(tmp_path):
    path = tmp_path / "events.csv"
    path.write_bytes("user_id,item_id\n1,10\n".encode("utf-16"))
    with pytest.raises(DataError, match=r"events\.csv: is UTF-16 text; save it as UTF-8"):
        read_interactions(path, DataConfig())
    path.write_bytes(b"user_id,item_id\n1,10\r1,11\n2,20\n")
    with pytest.raises(DataError, match=r"events\.csv:2: a lone carriage return"):
        read_interactions(path, DataConfig())
