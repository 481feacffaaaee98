"""Configuration of where interactions come from and how they are cleaned.

Only simple typed fields with defaults: jsonargparse builds the CLI and YAML configs from these
dataclasses. Impossible values raise ``FieldValueError`` naming the field as it appears in a config
file (``data.min_user_interactions``), because that is where the user has to fix it.
"""

# No `from __future__ import annotations`: jsonargparse reads these annotations at run time.
import os
from dataclasses import dataclass, field
from typing import Literal, get_args

from awrsr.config_types import check_field_types
from awrsr.errors import ConfigError, FieldValueError

Format = Literal["auto", "whitespace", "movielens", "csv", "tsv", "parquet"]
Duplicates = Literal["keep", "first", "consecutive"]


def _check_choice(name: str, value: object, choices: tuple) -> None:
    if value not in choices:
        raise FieldValueError(name, f"must be one of {', '.join(map(repr, choices))}, got {value!r}")


def _check_int(name: str, value: object, minimum: int) -> None:
    # bool is an int subclass, but `min_length: true` in a YAML file is a mistake, not 1.
    if not isinstance(value, int) or isinstance(value, bool):
        raise FieldValueError(name, f"must be an integer, got {value!r}")
    if value < minimum:
        raise FieldValueError(name, f"must be >= {minimum}, got {value}")


@dataclass
class SyntheticConfig:
    """The built-in synthetic dataset with a planted "successor" pattern (see ``synthetic.py``).

    Args:
        num_users: users.
        num_items: items.
        min_length: shortest history.
        max_length: longest history.
        follow_prob: probability that the next item is the planted successor of the previous one.
        seed: seed of the generator.

    >>> SyntheticConfig(num_users=50, num_items=20).max_length
    40
    """

    num_users: int = 1000
    num_items: int = 200
    min_length: int = 10
    max_length: int = 40
    follow_prob: float = 0.8  # probability the next item is the planted successor of the previous one
    seed: int = 0

    def __post_init__(self) -> None:
        check_field_types(self, "data.synthetic")  # numpy integers become int
        p = "data.synthetic."
        _check_int(p + "num_users", self.num_users, 1)
        _check_int(p + "num_items", self.num_items, 2)
        _check_int(p + "min_length", self.min_length, 3)  # leave-one-out needs 3 items to evaluate a user
        # the longest history also needs 2 items to train on (one next-item example) beside those 3
        _check_int(p + "max_length", self.max_length, 4)
        if self.max_length < self.min_length:  # a pair: not one field's own range
            raise ConfigError(f"{p}max_length ({self.max_length}) must be >= {p}min_length ({self.min_length})")
        _check_int(p + "seed", self.seed, 0)
        prob = self.follow_prob
        if isinstance(prob, bool) or not isinstance(prob, (int, float)) or not 0.0 <= prob <= 1.0:
            raise FieldValueError(p + "follow_prob", f"must be a number in [0, 1], got {prob!r}")


@dataclass
class DataConfig:
    """Where the interactions are and how to clean them.

    Args:
        path: data file; null (None) uses the built-in synthetic dataset.
        format: auto | whitespace (user item... per line) | movielens (ratings.dat) | csv | tsv | parquet.
        user_col: user column (csv/tsv/parquet/frames).
        item_col: item column (csv/tsv/parquet/frames).
        time_col: optional timestamp column; null (None) keeps file order.
        separator: override the csv/tsv separator.
        has_header: whether a csv/tsv file's first line names its columns; with false, name the
            columns by position: column_1, column_2, ...
        duplicates: keep all repeats | first (keep the first (user, item)) | consecutive (drop immediate repeats).
        min_user_interactions: iterated k-core threshold for users; 0 or 1 disables it.
        min_item_interactions: iterated k-core threshold for items; 0 or 1 disables it.
        synthetic: the built-in synthetic dataset, used when path is null (None).

    >>> DataConfig(path="ratings.dat", duplicates="first").min_item_interactions
    5
    """

    path: str | None = None  # None -> the built-in synthetic dataset (SyntheticConfig)
    format: Format = "auto"
    user_col: str = "user_id"  # csv/tsv/parquet/frames only
    item_col: str = "item_id"
    time_col: str | None = None  # optional timestamp column (csv/tsv/parquet/frames); None -> file order
    separator: str | None = None  # override the csv/tsv separator
    has_header: bool = True  # csv/tsv; False -> columns are column_1, column_2, ... by position
    duplicates: Duplicates = "keep"  # keep all repeats / keep first (user, item) / drop immediate repeats
    min_user_interactions: int = 5  # iterated k-core thresholds; 0 or 1 disables that side
    min_item_interactions: int = 5
    synthetic: SyntheticConfig = field(default_factory=SyntheticConfig)

    def __post_init__(self) -> None:
        if isinstance(self.path, os.PathLike):  # a pathlib.Path from Python code
            self.path = os.fspath(self.path)
        _check_choice("data.format", self.format, get_args(Format))
        _check_choice("data.duplicates", self.duplicates, get_args(Duplicates))
        check_field_types(self, "data")  # numpy integers become ints before the range checks
        _check_int("data.min_user_interactions", self.min_user_interactions, 0)
        _check_int("data.min_item_interactions", self.min_item_interactions, 0)
        if self.path is not None and (not isinstance(self.path, str) or not self.path.strip()):
            raise FieldValueError("data.path", f"must be a non-empty path or null, got {self.path!r}")
        for name in ("user_col", "item_col"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise FieldValueError(f"data.{name}", f"must be a non-empty column name, got {value!r}")
        if self.time_col is not None and (not isinstance(self.time_col, str) or not self.time_col):
            raise FieldValueError("data.time_col", f"must be a column name or null, got {self.time_col!r}")
        if len({self.user_col, self.item_col, self.time_col} - {None}) < (3 if self.time_col else 2):
            raise ConfigError(
                f"data.user_col, data.item_col and data.time_col must be different columns, got "
                f"{self.user_col!r}, {self.item_col!r}, {self.time_col!r}"
            )
        if not isinstance(self.has_header, bool):
            raise FieldValueError("data.has_header", f"must be true or false, got {self.has_header!r}")
        if self.separator == "\\t":  # a tab as typed on a command line or in single-quoted YAML ('\t')
            self.separator = "\t"
        # polars reads with a one-byte separator; a longer one would fail later with a vaguer message.
        if self.separator is not None and (not isinstance(self.separator, str) or len(self.separator.encode()) != 1):
            raise FieldValueError("data.separator", f"must be a single one-byte character, got {self.separator!r}")
        if self.separator in ('"', "\n", "\r"):  # they quote values and end lines
            raise FieldValueError("data.separator", f"cannot be {self.separator!r}, which CSV reserves for quotes and line ends")
        if isinstance(self.synthetic, dict):  # built by hand from a parsed YAML/JSON mapping
            try:
                self.synthetic = SyntheticConfig(**self.synthetic)
            except TypeError as err:
                raise ConfigError(f"data.synthetic: {err}") from None
        elif not isinstance(self.synthetic, SyntheticConfig):
            raise ConfigError(f"data.synthetic must be a SyntheticConfig, got {type(self.synthetic).__name__}")


def data_config_from_dict(values: dict) -> DataConfig:
    """A ``DataConfig`` from its stored form (a run's config.yaml), nested synthetic section included.

    >>> data_config_from_dict({"path": None, "synthetic": {"num_users": 5}}).synthetic.num_users
    5
    """
    values = dict(values)
    if isinstance(values.get("synthetic"), dict):
        values["synthetic"] = SyntheticConfig(**values["synthetic"])
    return DataConfig(**values)
