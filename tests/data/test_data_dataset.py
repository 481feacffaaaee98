"""load_sequence_data: fingerprint, statistics, the stats table and config validation."""

import io

import polars as pl
import pytest
from rich.console import Console

from awrsr.data import DataConfig, DatasetStats, Fingerprint, SyntheticConfig, load_sequence_data, print_stats
from awrsr.errors import ConfigError, DataError

SMALL = DataConfig(synthetic=SyntheticConfig(num_users=100, num_items=30))


def small_frame(**changes) -> pl.DataFrame:
    frame = pl.DataFrame({"user_id": [1, 1, 1, 2, 2, 2], "item_id": [1, 2, 3, 3, 2, 1]})
    return frame.with_columns(**changes) if changes else frame


def loose(**options) -> DataConfig:
    return DataConfig(min_user_interactions=0, min_item_interactions=0, **options)


def test_same_input_same_fingerprint():
    a, b = load_sequence_data(SMALL), load_sequence_data(SMALL)
    assert a.fingerprint == b.fingerprint
    assert len(a.fingerprint.sha256) == 64 and a.fingerprint.short == a.fingerprint.sha256[:12]
    assert (a.fingerprint.users, a.fingerprint.items, a.fingerprint.interactions) == (
        a.num_users, a.num_items, len(a.sequences.items))


def test_any_change_to_the_processed_data_changes_the_fingerprint():
    base = load_sequence_data(loose(), frame=small_frame()).fingerprint.sha256
    variants = [
        small_frame(item_id=pl.Series([1, 2, 3, 3, 1, 2])),  # order within a user
        small_frame(user_id=pl.Series([1, 1, 1, 7, 7, 7])),  # a user id
        small_frame(item_id=pl.Series([1, 2, 4, 4, 2, 1])),  # an item id, same index structure
        small_frame(item_id=pl.Series(["1", "2", "3", "3", "2", "1"])),  # id type
        small_frame(user_id=pl.Series([1, 1, 2, 2, 2, 2])),  # where one user ends: same items, same ids
    ]
    hashes = {load_sequence_data(loose(), frame=f).fingerprint.sha256 for f in variants}
    assert base not in hashes and len(hashes) == len(variants)
    other_seed = DataConfig(synthetic=SyntheticConfig(num_users=100, num_items=30, seed=1))
    assert load_sequence_data(other_seed).fingerprint != load_sequence_data(SMALL).fingerprint


def test_fingerprint_dict_round_trip():
    fp = load_sequence_data(SMALL).fingerprint
    assert Fingerprint.from_dict(fp.to_dict()) == fp
    with pytest.raises(DataError, match="sha256"):
        Fingerprint.from_dict({"users": 1, "items": 2, "interactions": 3})


def test_stats_describe_the_data():
    data = load_sequence_data(loose(duplicates="first"), frame=small_frame())
    stats = data.stats
    assert isinstance(stats, DatasetStats) and stats.source == "<frame>"
    assert (stats.users, stats.items, stats.interactions) == (2, 3, 6)
    assert (stats.min_length, stats.median_length, stats.mean_length, stats.max_length) == (3, 3.0, 3.0, 3)
    assert stats.density == 1.0 and stats.duplicates == "first"
    assert stats.to_dict()["kcore"] == "no k-core filtering"


def test_print_stats_is_one_table_with_the_fingerprint():
    data = load_sequence_data(SMALL)
    out = io.StringIO()
    print_stats(data.stats, data.fingerprint, console=Console(file=out, width=120))
    text = out.getvalue()
    assert data.fingerprint.short in text and "k-core" in text and "density" in text
    assert text.count("┏") == 1  # one table


def test_path_is_read_and_named_in_stats(tmp_path):
    path = tmp_path / "seq.txt"
    path.write_text("1 1 2 3\n2 3 2 1\n")
    data = load_sequence_data(loose(path=str(path)))
    assert data.stats.source == str(path) and data.num_users == 2
    with pytest.raises(DataError, match="data file not found"):
        load_sequence_data(loose(path=str(tmp_path / "missing.txt")))


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"min_user_interactions": -1}, "data.min_user_interactions must be >= 0, got -1"),
        ({"min_item_interactions": -3}, "data.min_item_interactions"),
        ({"format": "xlsx"}, "data.format"),
        ({"duplicates": "last"}, "data.duplicates"),
        ({"separator": "::"}, "data.separator"),
        ({"user_col": ""}, "data.user_col"),
        ({"user_col": "id", "item_col": "id"}, "different columns"),
        ({"synthetic": {"num_items": 1}}, "data.synthetic.num_items"),
        ({"synthetic": {"bogus": 1}}, "data.synthetic"),
        ({"user_col": "id", "time_col": "id"}, "different columns"),  # the time column is no user column
        ({"item_col": "id", "time_col": "id"}, "different columns"),
        ({"separator": "§"}, "data.separator must be a single one-byte character"),  # one character, two bytes
        ({"separator": ""}, "data.separator must be a single one-byte character"),
        ({"path": ""}, "data.path must be a non-empty path"),
        ({"path": "  "}, "data.path must be a non-empty path"),
        ({"time_col": ""}, "data.time_col must be a column name or null"),
        ({"min_user_interactions": True}, "data.min_user_interactions must be an integer, got True"),
        ({"min_item_interactions": False}, "data.min_item_interactions must be an integer, got False"),
    ],
)
def test_impossible_config_values(options, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        DataConfig(**options)


def test_config_accepts_synthetic_mapping():
    assert DataConfig(synthetic={"num_users": 5}).synthetic == SyntheticConfig(num_users=5)


def test_the_stats_table_puts_each_number_in_its_row():
    stats = DatasetStats(
        source="events.csv", users=1234, items=567, interactions=8901, min_length=3, median_length=6.5, mean_length=7.2134,
        max_length=40, density=0.012718, kcore="5-core users / 5-core items", removed_users=12, removed_items=34,
        removed_interactions=5678, duplicates="first", duplicates_removed=2345, order="file order",
        unused_time_columns=["ts", "[b]"],
    )
    out = io.StringIO()
    print_stats(stats, Fingerprint(users=1234, items=567, interactions=8901, sha256="0123456789abcdef" * 4),
                console=Console(file=out, width=200))
    rows = {cells[0]: cells[1] for cells in (
        [cell.strip() for cell in line.strip("│ ").split("│")] for line in out.getvalue().splitlines() if line.count("│") == 3)}
    assert rows == {
        "source": "events.csv", "users": "1,234", "items": "567", "interactions": "8,901",
        "sequence length min / median / mean / max": "3 / 6.5 / 7.21 / 40",
        "density": "1.2718%",
        "order": "file order — is 'ts', '[b]' the time? then set data.time_col",
        "duplicates": "first (2,345 removed)",
        "k-core": "5-core users / 5-core items",
        "removed by k-core (users / items / interactions)": "12 / 34 / 5,678",
        "fingerprint": "1,234 users / 567 items / 8,901 interactions, sha256 0123456789ab",
    }


def test_defaults_are_a_5_core_that_keeps_repeats():
    # users 1-5 see items 1-5 (user 5 twice item 1); user 6 sees 4 items and item 6 is seen by 4
    # users: the default 5-core drops both, and the default duplicates policy keeps the repeat
    rows = [(u, i) for u in range(1, 6) for i in range(1, 6)] + [(5, 1)]
    rows += [(6, i) for i in range(1, 5)] + [(u, 6) for u in range(1, 5)]
    frame = pl.DataFrame({"user_id": [u for u, _ in rows], "item_id": [i for _, i in rows]})
    data = load_sequence_data(DataConfig(), frame=frame)
    assert data.user_ids == [1, 2, 3, 4, 5] and data.item_vocab.ids == [1, 2, 3, 4, 5]
    assert data.sequences[4].tolist() == [1, 2, 3, 4, 5, 1]
    stats = data.stats
    assert (stats.removed_users, stats.removed_items, stats.removed_interactions) == (1, 1, 8)
    assert stats.kcore.startswith("5-core users / 5-core items") and stats.duplicates == "keep"


def test_stats_of_unequal_lengths():
    # lengths 4, 1, 2 (neither the first nor the last user is the shortest or longest)
    frame = pl.DataFrame({"user_id": [1, 1, 1, 1, 2, 3, 3], "item_id": [1, 2, 3, 4, 1, 2, 3]})
    stats = load_sequence_data(loose(), frame=frame).stats
    assert (stats.min_length, stats.median_length, stats.max_length) == (1, 2.0, 4)
    assert stats.mean_length == pytest.approx(7 / 3) and stats.density == pytest.approx(7 / 12)


def test_stats_count_duplicates_and_kcore_removals_apart():
    # duplicates=first drops user 1's second item 1 (1 row); the 2-core then drops items 4 and 5
    # (seen once) and so user 3: 1 user, 2 items and 2 interactions, the duplicate not among them
    frame = pl.DataFrame({"user_id": [1, 1, 1, 1, 2, 2, 2, 3, 3], "item_id": [1, 2, 3, 1, 1, 2, 3, 4, 5]})
    data = load_sequence_data(DataConfig(duplicates="first", min_user_interactions=2, min_item_interactions=2), frame=frame)
    stats = data.stats
    assert stats.duplicates_removed == 1
    assert (stats.removed_users, stats.removed_items, stats.removed_interactions) == (1, 2, 2)
    assert data.user_ids == [1, 2]


def test_the_fingerprint_of_given_data_never_changes():
    # Runs store this hash and later loads compare with it: a change to the hashed layout (byte
    # widths, the sizes header, the JSON of the ids) would make every saved run's data "differ".
    # Change it only together with _HASH_VERSION.
    fp = load_sequence_data(loose(), frame=small_frame()).fingerprint
    assert fp == Fingerprint(2, 3, 6, "c41e82887350241b5dcf4149c7fd233bb7e62613451973db818a89415a8efdfc")


def test_a_frame_is_read_instead_of_data_path(tmp_path):
    path = tmp_path / "other.txt"
    path.write_text("9 9 8 7\n")
    data = load_sequence_data(loose(path=str(path)), frame=small_frame())
    assert data.stats.source == "<frame>" and data.user_ids == [1, 2]


def test_a_pathlib_path_is_a_path(tmp_path):
    path = tmp_path / "seq.txt"
    path.write_text("1 1 2 3\n")
    config = loose(path=path)
    assert config.path == str(path)
    assert load_sequence_data(config).stats.source == str(path)


@pytest.mark.parametrize("options", [{"format": "csv"}, {"time_col": "ts"}, {"has_header": False}])
def test_reading_options_without_a_file_are_refused(options):
    # they would be ignored, and the synthetic data trained on in place of the user's
    with pytest.raises(ConfigError, match=f"^data.{next(iter(options))} set, but there is no data.path"):
        load_sequence_data(DataConfig(**options))


def test_the_stats_say_how_interactions_were_ordered(tmp_path):
    # a table with a time-like column that the config does not read is in file order, and says
    # which column it might have meant; naming it orders by it
    frame = pl.DataFrame({"visitor": ["a"] * 3 + ["b"] * 3, "sku": [1, 2, 3, 3, 2, 1], "ts": [3, 2, 1, 1, 2, 3],
                          "created_at": [0] * 6, "rating": [5] * 6})
    loose = DataConfig(user_col="visitor", item_col="sku", min_user_interactions=1, min_item_interactions=1)
    csv, parquet = tmp_path / "events.csv", tmp_path / "events.parquet"
    frame.write_csv(csv)
    frame.write_parquet(parquet)
    for source in (csv, parquet):
        stats = load_sequence_data(DataConfig(**{**loose.__dict__, "path": str(source)})).stats
        assert (stats.order, stats.unused_time_columns) == ("file order", ["ts", "created_at"])
    stats = load_sequence_data(loose, frame=frame).stats
    assert (stats.order, stats.unused_time_columns) == ("file order", ["ts", "created_at"])
    timed = load_sequence_data(DataConfig(**{**loose.__dict__, "path": str(csv), "time_col": "ts"}))
    assert (timed.stats.order, timed.stats.unused_time_columns) == ("by time (column 'ts'), ties in file order", [])
    assert timed.item_vocab.decode(timed.sequences[0]) == [3, 2, 1]  # user a, by time
    # fixed-field files: MovieLens has times, whitespace sequences have file order only
    ratings = tmp_path / "ratings.dat"
    ratings.write_text("1::10::5::300\n1::11::5::100\n1::12::5::200\n")
    loose_files = DataConfig(min_user_interactions=1, min_item_interactions=1)
    stats = load_sequence_data(DataConfig(**{**loose_files.__dict__, "path": str(ratings)})).stats
    assert (stats.order, stats.unused_time_columns) == ("by time (the file's timestamps), ties in file order", [])
    sequences = tmp_path / "seqs.txt"
    sequences.write_text("1 10 11 12\n")
    stats = load_sequence_data(DataConfig(**{**loose_files.__dict__, "path": str(sequences)})).stats
    assert (stats.order, stats.unused_time_columns) == ("file order", [])
    # a headerless CSV has no names to go by
    frame.write_csv(csv, include_header=False)
    headerless = DataConfig(path=str(csv), has_header=False, user_col="column_1", item_col="column_2",
                            min_user_interactions=1, min_item_interactions=1)
    assert load_sequence_data(headerless).stats.unused_time_columns == []
