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
        removed_interactions=5678, duplicates="first", duplicates_removed=2345,
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
        "duplicates": "first (2,345 removed)",
        "k-core": "5-core users / 5-core items",
        "removed by k-core (users / items / interactions)": "12 / 34 / 5,678",
        "fingerprint": "1,234 users / 567 items / 8,901 interactions, sha256 0123456789ab",
    }
