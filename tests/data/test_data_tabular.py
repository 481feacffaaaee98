"""CSV / TSV / Parquet files and in-memory frames with user-chosen column names."""

import polars as pl
import pytest

from awrsr.data import DataConfig, load_sequence_data, read_interactions
from awrsr.errors import DataError

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


def test_header_only_file_has_no_interactions(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("user_id,item_id\n")
    with pytest.raises(DataError, match="empty.csv: no interactions"):
        read_interactions(path, DataConfig())


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


def test_float_ids_must_be_whole_numbers():
    frame = pl.DataFrame({"user_id": [1.0, 2.0], "item_id": [3.0, 4.5]})
    with pytest.raises(DataError, match=r"row 1 .*'item_id'.*non-integer"):
        read_interactions(frame, DataConfig())
    ok = read_interactions(pl.DataFrame({"user_id": [1.0], "item_id": [3.0]}), DataConfig())
    assert ok.schema["item"] == pl.Int64 and ok["item"].to_list() == [3]


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
