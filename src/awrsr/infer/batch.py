"""Offline batch scoring: the top-k next items for every user of an interaction log, as one table.

The log is read like training data (``awrsr.data``: any supported file or frame, each user's
interactions in time order, the duplicates policy), but nothing is held out and no k-core filter
runs: every user whose history holds an item the model knows gets recommendations from their
whole history, exactly as ``Recommender.recommend`` would give them one by one.

    >>> recs = recommend_log(Recommender.load("runs/sasrec-ml-1m"), "events.csv", data, k=10)  # doctest: +SKIP
    >>> recs.frame.columns  # doctest: +SKIP
    ['user', 'rank', 'item', 'score']
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Literal, Sequence

import numpy as np
import polars as pl

from awrsr.config_types import check_flag
from awrsr.data import DataConfig, Sequences, Vocabulary, read_interactions
from awrsr.data.preprocess import drop_duplicates, sort_chronologically
from awrsr.data.readers import FORMAT_BY_SUFFIX, IGNORED_OPTIONS, format_read_as
from awrsr.data.vocab import WHOLE_FLOAT_TEXT
from awrsr.errors import ConfigError, DataError
from awrsr.files import user_path, write_atomic
from awrsr.infer.recommender import Recommender, check_exclude, check_k, check_unknown

OUTPUT_FORMATS = (".csv", ".tsv", ".parquet", ".jsonl", ".ndjson")
OUTPUT_COLUMNS = ("user", "rank", "item", "score")  # of every table of recommendations


@dataclass
class UserHistories:
    """Each user's known items (model indices, time order) and what had to be left out."""

    users: pl.Series  # original user ids of the rows of ``histories``, in order of first appearance
    histories: Sequences
    skipped_users: list[Any] = field(default_factory=list)  # users none of whose items the model knows
    unknown_interactions: int = 0  # interactions left out because the model does not know their item
    unknown_items: list[Any] = field(default_factory=list)  # those distinct item ids, first seen first


@dataclass
class LogRecommendations:
    """``frame``: one row per (user, rank) with columns user, rank (1 = best), item, score; users
    in order of first appearance in the log. The other fields say what was left out."""

    frame: pl.DataFrame
    users: int
    skipped_users: list[Any]
    unknown_interactions: int
    unknown_items: list[Any]


def read_user_histories(
    source: Any, data: DataConfig, vocab: Vocabulary, unknown: Literal["error", "ignore"] = "error",
) -> UserHistories:
    """The log ``source`` (a path or a polars/pandas frame, read with ``data``'s format, columns and
    duplicates policy) as one history of model indices per user.

    An item the model does not know is an error naming how many there are, unless ``unknown`` is
    "ignore": then those interactions are left out, and users left with nothing are reported."""
    check_unknown(unknown)
    where = f"{source}: " if isinstance(source, (str, Path)) else ""
    frame = drop_duplicates(sort_chronologically(read_interactions(source, data)), data.duplicates)
    keys = [str(x) for x in vocab.ids]
    item_key = pl.col("item").cast(pl.Utf8)
    if vocab.id_type == "int":  # "103.0" (a frame's text) is item 103, as Vocabulary.key and recommend take it
        item_key = item_key.str.replace(f"^{WHOLE_FLOAT_TEXT}$", "${1}")
    frame = frame.with_columns(
        item_key.replace_strict(keys, range(1, len(keys) + 1), default=0, return_dtype=pl.Int64).alias("index")
    )
    unknown_rows = frame.filter(pl.col("index") == 0)
    unknown_items = unknown_rows.get_column("item").unique(maintain_order=True).to_list()
    if unknown_items and unknown == "error":
        examples = ", ".join(repr(x) for x in unknown_items[:5]) + (", ..." if len(unknown_items) > 5 else "")
        raise DataError(
            f"{where}{unknown_rows.height} interaction(s) name {len(unknown_items)} item id(s) the model does not "
            f"know ({examples}); items dropped by the k-core filter at training time are unknown too. "
            "Skip them with unknown=\"ignore\" (awrsr recommend: --ignore_unknown true)."
        )
    all_users = frame.get_column("user").unique(maintain_order=True)
    known = frame.filter(pl.col("index") > 0)
    if known.is_empty():
        raise DataError(f"{where}no interaction names an item the model knows; there is nothing to recommend from")
    counts = known.group_by("user", maintain_order=True).len()  # the frame is grouped by user already
    users = counts.get_column("user")
    offsets = np.zeros(counts.height + 1, dtype=np.int64)
    np.cumsum(counts.get_column("len").to_numpy(), out=offsets[1:])
    skipped = all_users.filter(~all_users.is_in(users)).to_list() if len(users) < len(all_users) else []
    return UserHistories(
        users, Sequences(offsets, known.get_column("index").to_numpy()), skipped, unknown_rows.height, unknown_items,
    )


def recommend_log(
    recommender: Recommender, source: Any, data: DataConfig, k: int = 10, exclude_seen: bool = True,
    unknown: Literal["error", "ignore"] = "error", exclude: Iterable[Any] = (), batch_size: int = 1024,
) -> LogRecommendations:
    """The top-k next items for every user of the log ``source`` (see ``read_user_histories``),
    as a long table: user, rank, item, score. The log is read with ``data``'s format and columns
    and the model's own duplicates policy (``recommender.duplicates``, whatever ``data`` says),
    as ``Recommender.recommend`` reads a history."""
    exclude = check_exclude(exclude)  # before the log is read
    check_k(k)
    check_flag(exclude_seen, "exclude_seen")
    if not isinstance(data, DataConfig):
        raise ConfigError(f"data must be a DataConfig (how to read the log), got {type(data).__name__}")
    if source is None:
        raise ConfigError("source: give the log, a file path or a polars/pandas DataFrame")
    read = read_user_histories(source, replace(data, duplicates=recommender.duplicates), recommender.vocab, unknown)
    cols, scores = recommender.top_k(read.histories, k, exclude_seen, exclude, batch_size)
    kept = np.isfinite(scores)  # -inf: fewer than k items were left to recommend
    row_of, rank_of = np.nonzero(kept)  # row-major: users in log order, each best first
    item_ids = pl.Series("item", recommender.vocab.ids)
    frame = pl.DataFrame({
        "user": read.users.gather(row_of),
        "rank": pl.Series(rank_of + 1, dtype=pl.Int32),
        "item": item_ids.gather(cols[kept]),
        "score": scores[kept],
    })
    return LogRecommendations(frame, len(read.users), read.skipped_users, read.unknown_interactions, read.unknown_items)



def log_data_config(stored: dict[str, Any] | None, path: str, **overrides: Any) -> DataConfig:
    """How to read a log for a model: the reading options it was trained with (a run's stored
    ``data`` section: format, columns, separator, header, duplicates policy), the given overrides
    where not None, and ``path``. The k-core thresholds do not apply to scoring.

    A file whose suffix names its format (.csv, .tsv, .parquet) is read as that format unless
    ``format`` is given, whatever the model was trained on; any other file as the model's
    training file was (where ``auto`` read that by its suffix: a log named ``events`` for a model
    trained on ``train.csv`` is CSV). ``time_col=""`` means no timestamp column (file order) and
    ``separator=""`` the format's own separator."""
    if stored is not None and not isinstance(stored, dict):  # a hand-edited config.yaml
        raise ConfigError(f"the model's stored data settings: not a mapping of options, got {type(stored).__name__} {stored!r:.40}")
    values = {key: value for key, value in (stored or {}).items() if key not in ("synthetic", "path")}
    if overrides.get("format") is None:
        if Path(path).suffix.lower() in FORMAT_BY_SUFFIX:
            values["format"] = "auto"
        elif values.get("format", "auto") == "auto" and isinstance((stored or {}).get("path"), str) and format_read_as(path) != "parquet":
            values["format"] = FORMAT_BY_SUFFIX.get(Path(stored["path"]).suffix.lower(), "auto")
    # the model's own options that the log's format does not read (a CSV's columns for a
    # whitespace log, its separator for a parquet one) do not apply to it
    unread = IGNORED_OPTIONS.get(format_read_as(path, overrides.get("format") or values.get("format", "auto")), ())
    values = {key: value for key, value in values.items() if key not in unread}
    values.update({key: value for key, value in overrides.items() if value is not None})
    for key in ("time_col", "separator"):
        if values.get(key) == "":
            values[key] = None
    try:
        return DataConfig(**{**values, "path": path})
    except TypeError as err:  # a stored config from another version of awrsr
        raise ConfigError(f"the model's stored data settings: {err}") from None


# The reading options' names in ``awrsr recommend``, for errors raised while reading a log
# (and the option that skips unknown items, which Python spells unknown="ignore").
_OPTION_NAMES = {
    "data.path": "--input", "data.format": "--input_format", "data.time_col": "--time_col",
    "data.user_col": "--user_col", "data.item_col": "--item_col", "data.has_header": "--has_header",
    "data.separator": "--separator", 'unknown="ignore" (awrsr recommend: --ignore_unknown true)': "--ignore_unknown true",
}


def score_log_file(
    recommender: Recommender, stored_data: dict[str, Any] | None, input: str, output: str | None, *,
    k: int = 10, exclude_seen: bool = True, unknown: Literal["error", "ignore"] = "error",
    exclude: Iterable[Any] = (), batch_size: int = 1024, reading: dict[str, Any] | None = None,
    training_file: str | Path | None = None,
) -> LogRecommendations:
    """``awrsr recommend --input``: read the log ``input`` as ``log_data_config`` says, score every
    user, and write the table to ``output`` (checked before anything is read; None: the caller
    prints it). Errors name the command's options rather than the training config's.
    ``training_file``: the training data's absolute path as metrics.json recorded it, protected
    like the stored (possibly relative) ``data.path``."""
    if output is not None:
        stored_path = stored_data.get("path") if isinstance(stored_data, dict) else None  # else log_data_config says what is wrong
        training = [("the model's training data", p) for p in (stored_path, training_file)]
        check_output_path(output, logs=[("the input log", input), *training])
    try:
        data = log_data_config(stored_data, input, **(reading or {}))
        result = recommend_log(recommender, input, data, k, exclude_seen, unknown, exclude, batch_size)
    except (ConfigError, DataError) as err:
        message = str(err)
        for name, option in _OPTION_NAMES.items():
            message = message.replace(name, option)
        raise (ConfigError if isinstance(err, ConfigError) else DataError)(message) from None
    if output is not None:
        write_recommendations(result.frame, output)
    return result


def check_output_path(
    path: str | Path, columns: Sequence[str] = OUTPUT_COLUMNS, logs: Iterable[tuple[str, Any]] = (),
) -> Path:
    """``path`` as a place ``write_recommendations`` can write a table of ``columns``: a known
    suffix in an existing, writable directory, and no file there unless it is empty or an earlier
    table of the same columns (writing it again is a repeated command; anything else, another
    log or a run's records, is someone's data). ``logs``: (what, path) of the interaction files
    at hand (the input log, the training data), named if ``path`` is one of them."""
    path = user_path(path)
    suffix = path.suffix.lower()
    if suffix not in OUTPUT_FORMATS:
        raise ConfigError(
            f"output {path}: the suffix picks the format, one of {', '.join(OUTPUT_FORMATS)}; got {suffix or 'none'!r}"
        )
    if not path.parent.is_dir():
        raise ConfigError(f"output {path}: the directory {path.parent} does not exist")
    if path.is_dir():
        raise ConfigError(f"output {path}: is a directory")
    if path.is_file():
        for what, log in logs:
            if log and user_path(log).exists() and path.resolve() == user_path(log).resolve():
                raise ConfigError(f"output {path} is {what}; writing it would replace the interactions")
        if path.stat().st_size > 0 and table_columns(path) != tuple(columns):
            raise ConfigError(  # a one-letter slip would replace another log, or a run's learning curves
                f"output {path}: the file exists and is not an earlier table of recommendations (columns "
                f"{', '.join(columns)}); write them to another file"
            )
    if not os.access(path.parent, os.W_OK):
        raise ConfigError(f"output {path}: the directory {path.parent} is not writable")
    return path


def table_columns(path: Path) -> tuple[str, ...] | None:
    """The column names of the table in ``path`` as ``write_recommendations`` writes it (by its
    suffix), read from its header or schema alone; None if it is no such table."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            return tuple(pl.read_parquet_schema(path))
        with path.open("rb") as file:
            first = file.readline(1 << 16).decode("utf-8").rstrip("\r\n")
        if suffix in (".jsonl", ".ndjson"):
            record = json.loads(first)
            return tuple(record) if isinstance(record, dict) else None
        return tuple(first.split("\t" if suffix == ".tsv" else ","))
    except (OSError, ValueError, pl.exceptions.PolarsError):  # not UTF-8, not JSON, not Parquet
        return None


def write_recommendations(frame: pl.DataFrame | LogRecommendations, path: str | Path) -> None:
    """Write ``frame`` (or ``recommend_log``'s result, its ``.frame``) as CSV, TSV, Parquet or JSON
    lines, by the suffix of ``path``; through a temporary file beside it, so that a reader never
    sees half a file. An existing file is replaced only if it holds a table of the same columns
    (see ``check_output_path``)."""
    if isinstance(frame, LogRecommendations):
        frame = frame.frame
    if not isinstance(frame, pl.DataFrame):
        raise ConfigError(f"write_recommendations takes recommend_log's result or its polars frame, got {type(frame).__name__}")
    path = check_output_path(path, frame.columns)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        write = frame.write_parquet
    elif suffix in (".jsonl", ".ndjson"):
        write = frame.write_ndjson
    else:
        write = lambda target: frame.write_csv(target, separator="\t" if suffix == ".tsv" else ",")  # noqa: E731
    try:
        write_atomic(path, write)
    except OSError as err:
        raise ConfigError(f"output {path}: cannot be written ({err.strerror or err})") from None
