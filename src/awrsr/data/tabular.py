"""Readers for column-oriented sources: CSV/TSV/Parquet files and polars/pandas frames.

The user names the columns (``user_col``, ``item_col``, optional ``time_col``); everything else in
the source is ignored. Ids may be integers or strings; times may be numbers, dates or date strings.
"""

from __future__ import annotations

import csv
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from awrsr.data.config import DataConfig
from awrsr.data.schema import finish, shorten
from awrsr.errors import DataError


def read_table_file(path: Path, fmt: str, config: DataConfig) -> pl.DataFrame:
    """Read a ``csv``, ``tsv`` or ``parquet`` file into the interaction frame.

    Parquet columns keep their own types. CSV/TSV ids are read as text and become integers only
    when every value is written as one canonically (``7`` or ``7.0``, not ``007`` or ``+7``).
    """
    if fmt == "parquet":
        return _from_columns(_read(path, fmt, lambda: pl.read_parquet(path)), config, str(path), None)
    sep = config.separator or ("," if fmt == "csv" else "\t")
    frame = _read(path, fmt, lambda: _read_text_table(path, sep, config), lambda: _first_bad_line(path, sep))
    lines = TextLines(path, sep, config.has_header)
    _check_header(frame.columns, config, lines)
    ids = [name for name in (config.user_col, config.item_col) if name in frame.columns]
    frame = frame.with_columns(_canonical_ints(frame.get_column(name)) for name in ids)
    return _from_columns(frame, config, str(path), lines)


def _read(
    path: Path, fmt: str, reader: Callable[[], pl.DataFrame], diagnose: Callable[[], str | None] = lambda: None,
) -> pl.DataFrame:
    try:
        return reader()
    except (pl.exceptions.PolarsError, OSError, ValueError) as err:
        found = diagnose()  # polars' message rarely names the line: look for it ourselves
        if found:
            raise DataError(f"{path}:{found}") from None
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise DataError(f"{path}: cannot read as {fmt}: {first}") from None


def _first_bad_line(path: Path, sep: str) -> str | None:
    """``"<line>: <what>"`` for the first line of a CSV/TSV file that is not valid UTF-8, has more
    fields than the first row or a broken quote, else the first with fewer fields; None if none of
    these (the caller keeps polars' words)."""
    try:
        raw = path.read_bytes()
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as err:
            line = raw.count(b"\n", 0, err.start) + 1
            return f"{line}: not valid UTF-8 text ({err.reason})"
        expected, short = None, None
        for begin, record in TextLines(path, sep, has_header=True).records(strict=True):
            if not record:
                continue
            if expected is None:
                expected = len(record)
            elif len(record) > expected:
                return f"{begin}: {len(record)} fields, but the first row has {expected}"
            elif len(record) < expected and short is None:
                short = f"{begin}: {len(record)} field{'s' * (len(record) != 1)}, but the first row has {expected}"
        # polars reads a short row (its missing fields are null): blame one only if nothing else is wrong
        return short
    except BadRecord as err:
        reason = "a quoted value is never closed" if "unexpected end of data" in err.reason else err.reason
        return f"{err.line}: {reason}"
    except (OSError, csv.Error):
        return None


def _read_text_table(path: Path, sep: str, config: DataConfig) -> pl.DataFrame:
    # Ids as text: inferring integers would turn "007" into 7 and merge it with "7".
    ids = {config.user_col: pl.String, config.item_col: pl.String}
    # Infer types from every row: a string value after the first rows must not fail half-way.
    options = dict(separator=sep, infer_schema_length=None, schema_overrides=ids)
    if config.has_header:
        return pl.read_csv(path, **options)
    # Name columns by position from 1 ourselves: polars' default names differ between versions.
    width = pl.read_csv(path, separator=sep, has_header=False, n_rows=0).width
    names = [f"column_{i}" for i in range(1, width + 1)]
    return pl.read_csv(path, has_header=False, new_columns=names, **options)


def _canonical_ints(series: pl.Series) -> pl.Series:
    """Int64 if every value is an integer written canonically (``str(int(x)) == x``, or ``x.0`` as
    pandas writes an integer column with gaps), else unchanged."""
    text = series.str.replace(r"^(-?(?:0|[1-9][0-9]*))\.0+$", "${1}")
    ints = text.cast(pl.Int64, strict=False)
    same = ((ints.cast(pl.String) == text) | series.is_null()).fill_null(False)
    return ints if same.all() else series


class BadRecord(csv.Error):
    """A record the csv module refuses in strict mode, and the line it starts on."""

    def __init__(self, line: int, reason: str):
        super().__init__(f"{line}: {reason}")
        self.line, self.reason = line, reason


@dataclass(frozen=True)
class TextLines:
    """Where the data rows of a CSV/TSV file sit; worked out only when an error needs a line."""

    path: Path
    separator: str
    has_header: bool

    def line_of(self, row: int) -> int:
        """The 1-based line on which data row ``row`` (0-based, as polars numbers them) starts."""
        try:
            for index, line in enumerate(self._data_starts()):
                if index == row:
                    return line
        except (OSError, csv.Error):
            pass
        return row + 1 + int(self.has_header)  # the csv module disagrees with polars: best guess

    def records(self, strict: bool = False) -> Iterator[tuple[int, list[str]]]:
        """Every record of the file (blank lines as empty ones) with the line it starts on: not
        simply its index + 1, since quoted values may span lines. ``strict``: a quote left open
        (or text after a closing quote) is a ``BadRecord`` naming the line its record starts on."""
        with self.path.open(encoding="utf-8-sig", errors="replace", newline="") as handle:
            reader = csv.reader(handle, delimiter=self.separator, strict=strict)
            start = 1
            while True:
                try:
                    record = next(reader)
                except StopIteration:
                    return
                except csv.Error as err:
                    raise BadRecord(start, str(err)) from None
                begin, start = start, reader.line_num + 1
                yield begin, record

    def _data_starts(self) -> Iterator[int]:
        # polars skips blank lines before a header (blank lines after it are rows of nulls, as the
        # csv module also counts them).
        leading, header = self.has_header, self.has_header
        for begin, record in self.records():
            if leading and not record:
                continue
            leading = False
            if header:
                header = False
                continue
            yield begin


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


def _check_header(existing: list[str], config: DataConfig, lines: TextLines) -> None:
    """Say a file seems to lack its header line when named columns are missing and line 1 looks like data."""
    wanted = _wanted(config)
    if not config.has_header or all(name in existing for name in wanted):
        return
    first = _first_line(lines)
    if first is None or not _looks_like_data(first, lines.separator):
        return  # a header with other names: _check_columns lists them
    missing = next(name for name in wanted if name not in existing)
    fields = zip(("data.user_col", "data.item_col", "data.time_col"), wanted)
    named = ", ".join(f"{field} {name!r}" for field, name in fields)
    raise DataError(
        f"{lines.path}: no column {missing!r}: the first line {shorten(first)!r} looks like data, so the "
        f"file seems to have no header line. Add one naming the columns ({named}), or set "
        "data.has_header to false and name the columns by position (column_1, column_2, ...)"
    )


def _first_line(lines: TextLines) -> str | None:
    """The first non-blank line of the file (the line polars took as the header)."""
    try:
        with lines.path.open(encoding="utf-8-sig", errors="replace", newline="") as handle:
            return next((line for line in handle if line.strip()), None)
    except OSError:
        return None


def _looks_like_data(line: str, separator: str) -> bool:
    """Column names are neither numbers nor repeated; values often are."""
    fields = [f.strip() for f in next(csv.reader([line], delimiter=separator), [])]
    return any(map(_is_number, fields)) or len(set(fields)) < len(fields)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _where(source: str, row: int, lines: TextLines | None) -> str:
    if lines is None:
        return f"{source}: row {row} (0-based)"
    return f"{source}:{lines.line_of(row)}"


def _first_null(series: pl.Series) -> int | None:
    nulls = series.is_null()
    if series.dtype.is_float():
        nulls = nulls | series.is_nan()
    return int(nulls.arg_max()) if nulls.any() else None


def _ids(series: pl.Series, field: str, source: str, lines: TextLines | None) -> pl.Series:
    """Normalise an id column: integers -> Int64, text-like -> String; nulls are errors."""
    bad = _first_null(series)
    if bad is not None:
        raise DataError(f"{_where(source, bad, lines)}: column {series.name!r} ({field}) is empty")
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
            f"{_where(source, bad, lines)}: column {series.name!r} ({field}) holds a non-integer "
            f"number {series[bad]!r}; ids must be integers or strings"
        )
    return series.cast(pl.String)


def _times(series: pl.Series, source: str, lines: TextLines | None) -> pl.Series:
    """Normalise a time column to Int64 (integers, dates, datetimes) or Float64; nulls are errors."""
    bad = _first_null(series)
    if bad is not None:
        raise DataError(f"{_where(source, bad, lines)}: column {series.name!r} (data.time_col) is empty")
    dtype = series.dtype
    if dtype == pl.String:
        series = _time_strings(series, source, lines)
        dtype = series.dtype
    if dtype.is_integer() or dtype.is_temporal():
        # Dates and datetimes sort by their physical integer (days / time units since the epoch).
        return series.to_physical().cast(pl.Int64)
    if dtype.is_float():
        return series.cast(pl.Float64)
    raise DataError(f"{source}: column {series.name!r} (data.time_col) has type {dtype}; expected numbers or dates")


def _time_strings(series: pl.Series, source: str, lines: TextLines | None) -> pl.Series:
    """Parse a text time column as dates, or as numbers written as text; else name the first misfit."""
    try:
        return series.str.to_datetime(strict=True)
    except pl.exceptions.PolarsError:
        pass
    numbers = series.cast(pl.Float64, strict=False)
    is_number = numbers.is_finite().fill_null(False)
    if is_number.all():
        ints = series.cast(pl.Int64, strict=False)
        return numbers if ints.null_count() else ints
    try:  # the date format is inferred from the first value
        is_date = series.str.to_datetime(strict=False).is_not_null()
    except pl.exceptions.PolarsError:  # no date format fits the first value
        is_date = pl.Series([False] * series.len())
    # Judge each value against what most values are, so the message quotes the misfit.
    kind, fits = ("number", is_number) if is_number.sum() > is_date.sum() else ("date/time", is_date)
    bad = int((~fits).arg_max())
    raise DataError(
        f"{_where(source, bad, lines)}: column {series.name!r} (data.time_col) holds {series[bad]!r}, "
        f"which is not a {kind} like the other values; use numbers or ISO dates throughout"
    )


def _from_columns(frame: pl.DataFrame, config: DataConfig, source: str, lines: TextLines | None) -> pl.DataFrame:
    _check_columns(frame.columns, config, source)
    if frame.height == 0:
        raise DataError(f"{source}: no interactions")
    user = _ids(frame.get_column(config.user_col), "data.user_col", source, lines)
    item = _ids(frame.get_column(config.item_col), "data.item_col", source, lines)
    if config.time_col is None:
        timestamp = pl.repeat(None, frame.height, dtype=pl.Int64, eager=True)
    else:
        timestamp = _times(frame.get_column(config.time_col), source, lines)
    return finish(pl.DataFrame([user.alias("user"), item.alias("item"), timestamp.alias("timestamp")]), source)
