"""Readers for column-oriented sources: CSV/TSV/Parquet files and polars/pandas frames.

The user names the columns (``user_col``, ``item_col``, optional ``time_col``); everything else in
the source is ignored. Ids may be integers or strings; times may be numbers, dates or date strings.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from awrsr.data.config import DataConfig
from awrsr.data.schema import finish
from awrsr.errors import DataError


def read_table_file(path: Path, fmt: str, config: DataConfig) -> pl.DataFrame:
    """Read a ``csv``, ``tsv`` or ``parquet`` file into the interaction frame."""
    try:
        if fmt == "parquet":
            frame = pl.read_parquet(path)
        else:
            sep = config.separator or ("," if fmt == "csv" else "\t")
            # Infer types from every row: a string id after the first rows must not fail half-way.
            frame = pl.read_csv(path, separator=sep, infer_schema_length=None)
    except (pl.exceptions.PolarsError, OSError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise DataError(f"{path}: cannot read as {fmt}: {first}") from None
    # In a CSV/TSV file, data row i (0-based) sits on line i + 2, after the header.
    line_offset = 2 if fmt != "parquet" else None
    return _from_columns(frame, config, str(path), line_offset)


def read_frame(frame: Any, config: DataConfig) -> pl.DataFrame:
    """Read an in-memory polars (eager or lazy) or pandas DataFrame into the interaction frame."""
    if isinstance(frame, pl.LazyFrame):
        frame = frame.collect()
    elif not isinstance(frame, pl.DataFrame):
        frame = _from_pandas(frame, config)
    return _from_columns(frame, config, "<frame>", None)


def is_frame(obj: Any) -> bool:
    """Whether ``obj`` is a polars or pandas DataFrame (pandas is never imported for this check)."""
    if isinstance(obj, (pl.DataFrame, pl.LazyFrame)):
        return True
    # If pandas was never imported, nobody can have built a pandas frame.
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(obj, pd.DataFrame)


def _from_pandas(frame: Any, config: DataConfig) -> pl.DataFrame:
    # Convert only the needed columns, column by column through numpy: pl.from_pandas needs
    # pyarrow, which is not a dependency.
    _check_columns(list(map(str, frame.columns)), config, "<frame>")
    columns = {}
    for name in _wanted(config):
        values = frame[name].to_numpy()
        if values.dtype == object:
            try:
                series = pl.Series(name, values.tolist(), strict=True)
            except (TypeError, pl.exceptions.PolarsError):  # mixed ints and strings: compare as text
                series = pl.Series(name, [None if v is None else str(v) for v in values.tolist()])
        else:
            series = pl.Series(name, values, nan_to_null=np.issubdtype(values.dtype, np.floating))
        columns[name] = series
    return pl.DataFrame(columns)


def _wanted(config: DataConfig) -> list[str]:
    return [config.user_col, config.item_col] + ([config.time_col] if config.time_col else [])


def _check_columns(existing: list[str], config: DataConfig, source: str) -> None:
    for field, name in (("data.user_col", config.user_col), ("data.item_col", config.item_col),
                        ("data.time_col", config.time_col)):
        if name is not None and name not in existing:
            raise DataError(
                f"{source}: no column {name!r} ({field}); the columns are: {', '.join(map(repr, existing))}"
            )


def _where(source: str, row: int, line_offset: int | None) -> str:
    if line_offset is None:
        return f"{source}: row {row} (0-based)"
    return f"{source}:{row + line_offset}"


def _first_null(series: pl.Series) -> int | None:
    nulls = series.is_null()
    if series.dtype.is_float():
        nulls = nulls | series.is_nan()
    return int(nulls.arg_max()) if nulls.any() else None


def _ids(series: pl.Series, field: str, source: str, line_offset: int | None) -> pl.Series:
    """Normalise an id column: integers -> Int64, text-like -> String; nulls are errors."""
    bad = _first_null(series)
    if bad is not None:
        raise DataError(f"{_where(source, bad, line_offset)}: column {series.name!r} ({field}) is empty")
    dtype = series.dtype
    if dtype.is_nested() or dtype == pl.Boolean:
        raise DataError(f"{source}: column {series.name!r} ({field}) has type {dtype}; ids must be integers or strings")
    if dtype.is_integer():
        if dtype == pl.UInt64 and series.max() >= 2**63:
            return series.cast(pl.String)
        return series.cast(pl.Int64)
    if dtype.is_float():
        # A pandas int column with missing values turns float; whole numbers are still ids.
        whole = series == series.floor()
        if whole.all():
            return series.cast(pl.Int64)
        bad = int((~whole).arg_max())
        raise DataError(
            f"{_where(source, bad, line_offset)}: column {series.name!r} ({field}) holds a non-integer "
            f"number {series[bad]!r}; ids must be integers or strings"
        )
    return series.cast(pl.String)


def _times(series: pl.Series, source: str, line_offset: int | None) -> pl.Series:
    """Normalise a time column to Int64 (integers, dates, datetimes) or Float64; nulls are errors."""
    bad = _first_null(series)
    if bad is not None:
        raise DataError(f"{_where(source, bad, line_offset)}: column {series.name!r} (data.time_col) is empty")
    dtype = series.dtype
    if dtype == pl.String:
        try:
            parsed = series.str.to_datetime(strict=True)
        except pl.exceptions.PolarsError:
            # Report the first value that does not parse (with the format inferred from the others).
            try:
                bad = _first_null(series.str.to_datetime(strict=False))
            except pl.exceptions.PolarsError:  # no date format fits any value
                bad = 0
            where = _where(source, bad, line_offset) if bad is not None else source
            example = series[bad] if bad is not None else series[0]
            raise DataError(
                f"{where}: column {series.name!r} (data.time_col) holds {example!r}, which is not a "
                "date/time like the other values; use numbers or ISO dates"
            ) from None
        series, dtype = parsed, parsed.dtype
    if dtype.is_integer() or dtype.is_temporal():
        # Dates and datetimes sort by their physical integer (days / time units since the epoch).
        return series.to_physical().cast(pl.Int64)
    if dtype.is_float():
        return series.cast(pl.Float64)
    raise DataError(f"{source}: column {series.name!r} (data.time_col) has type {dtype}; expected numbers or dates")


def _from_columns(frame: pl.DataFrame, config: DataConfig, source: str, line_offset: int | None) -> pl.DataFrame:
    _check_columns(frame.columns, config, source)
    if frame.height == 0:
        raise DataError(f"{source}: no interactions")
    user = _ids(frame.get_column(config.user_col), "data.user_col", source, line_offset)
    item = _ids(frame.get_column(config.item_col), "data.item_col", source, line_offset)
    if config.time_col is None:
        timestamp = pl.repeat(None, frame.height, dtype=pl.Int64, eager=True)
    else:
        timestamp = _times(frame.get_column(config.time_col), source, line_offset)
    return finish(pl.DataFrame([user.alias("user"), item.alias("item"), timestamp.alias("timestamp")]), source)
