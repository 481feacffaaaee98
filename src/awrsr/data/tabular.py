"""Readers for column-oriented sources: CSV/TSV/Parquet files and polars/pandas frames.

The user names the columns (``user_col``, ``item_col``, optional ``time_col``); everything else in
the source is ignored. Ids may be integers or strings; times may be numbers, dates or date strings.
"""

from __future__ import annotations

import codecs
import csv
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from awrsr.data.config import DataConfig
from awrsr.data.schema import finish, shorten
from awrsr.data.vocab import WHOLE_FLOAT_TEXT
from awrsr.errors import DataError


def read_table_file(path: Path, fmt: str, config: DataConfig) -> pl.DataFrame:
    """Read a ``csv``, ``tsv`` or ``parquet`` file into the interaction frame.

    Parquet columns keep their own types. CSV/TSV ids are read as text without surrounding
    whitespace and become integers only when every value is written as one canonically (``7`` or
    ``7.0``, not ``007`` or ``+7``); blank lines are skipped.
    """
    if fmt == "parquet":
        return _from_columns(_read(path, fmt, lambda: pl.read_parquet(path, glob=False)), config, str(path), None)
    sep = config.separator or ("," if fmt == "csv" else "\t")
    _check_line_endings(path)
    frame = _read(path, fmt, lambda: _read_text_table(path, sep, config), lambda: _first_bad_line(path, sep))
    lines = TextLines(path, sep, config.has_header)
    _check_header(frame.columns, config, lines)
    frame = _drop_blank_lines(frame, lines)
    ids = [name for name in (config.user_col, config.item_col) if frame.schema.get(name) == pl.String]
    if not config.has_header:
        _check_no_header_line(frame, ids, lines)
    frame = frame.with_columns(_canonical_ints(_stripped(frame.get_column(name))) for name in ids)
    return _from_columns(frame, config, str(path), lines)


def _check_line_endings(path: Path) -> None:
    """A DataError for a file whose lines end in a lone carriage return (old Mac OS): the CSV
    reader would take the whole file for one line; and for UTF-16 text, whose header would read
    as a garbled column name."""
    with path.open("rb") as handle:
        head = handle.read(1 << 16)
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise DataError(f"{path}: is UTF-16 text; save it as UTF-8")
    if b"\r" in head.rstrip(b"\r") and b"\n" not in head:
        raise DataError(
            f"{path}: its lines end in a lone carriage return (old Mac OS line endings); "
            "convert them to newlines first, e.g. tr '\\r' '\\n' < old > new"
        )


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
    fields than the first row, a broken quote or (in a file that quotes values) a '"' inside an
    unquoted value, else the first with fewer fields; None if none of these (the caller keeps
    polars' words)."""
    try:
        raw = path.read_bytes()
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as err:
            line = raw.count(b"\n", 0, err.start) + 1
            return f"{line}: not valid UTF-8 text ({err.reason})"
        expected, short = None, None
        lines, quoting = TextLines(path, sep, has_header=True), _quotes_values(raw, sep)
        lone = re.search(rb"\r(?!\n)", raw.rstrip(b"\r"))
        if lone and not quoting:  # polars reads on past it, Python's csv module ends the line there
            line = raw.count(b"\n", 0, lone.start()) + 1
            return f"{line}: a lone carriage return (an old Mac OS line end) inside the line; make it a newline"
        for begin, record, text in lines.records(strict=True):
            if lines.is_blank(text):
                continue
            stray = _stray_quote(text, sep) if quoting else None
            if stray is not None:  # polars takes it for the start of a quoted value
                value = shorten(stray, 40)
                fixed = '"' + value.replace('"', '""') + '"'
                return f"{begin}: the value {value!r} holds a '\"' but is not quoted; write it as {fixed}"
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


def _stray_quote(text: str, sep: str) -> str | None:
    """The first unquoted value of a record's raw ``text`` that holds a '"' (``15" monitor``)."""
    if '"' not in text:
        return None
    start, state = 0, "start"  # where the value starts; start | quoted | closed | plain
    for i, char in enumerate(text):
        if state == "quoted":
            state = "closed" if char == '"' else state
        elif char == sep or char in "\r\n":
            start, state = i + 1, "start"
        elif char == '"' and state == "plain":
            return re.split(f"[{re.escape(sep)}\r\n]", text[start:], maxsplit=1)[0]
        elif char == '"':  # opens a value, or doubles a quote inside one ("a""b")
            state = "quoted"
        elif state == "start":
            state = "plain"
    return None


def _read_text_table(path: Path, sep: str, config: DataConfig) -> pl.DataFrame:
    try:
        return _read_csv(path, sep, config, quote_char='"')
    except pl.exceptions.PolarsError:
        if _quotes_values(path.read_bytes(), sep):
            raise
    # No value starts with a quote, so the file quotes nothing and a '"' is a plain character
    # (``15" monitor``), which polars would take for the start of a quoted value.
    return _read_csv(path, sep, config, quote_char=None)


def _quotes_values(raw: bytes, sep: str) -> bool:
    """Whether some value of a file's bytes starts with a '"' (at a line start or after ``sep``)."""
    raw = raw.removeprefix(codecs.BOM_UTF8)
    return re.search(b'(?:^|[\r\n' + re.escape(sep.encode()) + b'])"', raw) is not None


def _read_csv(path: Path, sep: str, config: DataConfig, quote_char: str | None) -> pl.DataFrame:
    # Ids as text: inferring integers would turn "007" into 7 and merge it with "7".
    ids = {config.user_col: pl.String, config.item_col: pl.String}
    # Infer types from every row: a string value after the first rows must not fail half-way.
    # glob=False: a path is one file, and "[v2]" or "*" in it is part of its name, not a pattern
    options = dict(separator=sep, quote_char=quote_char, infer_schema_length=None, schema_overrides=ids, glob=False)
    if config.has_header:
        return pl.read_csv(path, **options)
    # Name columns by position from 1 ourselves: polars' default names differ between versions.
    width = pl.read_csv(path, separator=sep, quote_char=quote_char, has_header=False, n_rows=0, glob=False).width
    names = [f"column_{i}" for i in range(1, width + 1)]
    return pl.read_csv(path, has_header=False, new_columns=names, **options)


def _drop_blank_lines(frame: pl.DataFrame, lines: TextLines) -> pl.DataFrame:
    """Drop the rows polars makes of blank lines (nulls, or whitespace and then nulls), as pandas
    skips them; a line of separators (``,,``) stays a row of empty values, an error later."""
    if frame.is_empty():
        return frame
    first, rest = frame.columns[0], frame.columns[1:]
    empty = pl.col(first).is_null()
    if frame.schema[first] == pl.String:
        empty = empty | (pl.col(first).str.strip_chars() == "")
    if rest:
        empty = empty & pl.all_horizontal(pl.col(rest).is_null())
    if not frame.select(empty.any()).item():
        return frame  # the usual case: no need to read the file again
    blank = pl.int_range(pl.len()).is_in(lines.blank_rows())
    return frame.filter(~(empty & blank))


def _check_no_header_line(frame: pl.DataFrame, ids: list[str], lines: TextLines) -> None:
    """A DataError if the first row of a file read without a header line looks like one: no
    number and no repeated field in it, and an id column (of ``ids``) holding whole numbers in
    every other row. Read as data, it would be an interaction of a user named like the column,
    and make every id text."""
    first_row = [value.strip() for value in frame.row(0) if isinstance(value, str)] if frame.height else []
    if any(map(_is_number, first_row)) or len(set(first_row)) < len(first_row):
        return  # a number, or a repeated field: data, as column names never are
    for name in ids:
        column = _stripped(frame.get_column(name))
        first, rest = column[0], column[1:]
        if first is not None and rest.null_count() < len(rest) and _canonical_ints(rest).dtype == pl.Int64:
            raise DataError(
                f"{lines.path}:{lines.line_of(0)}: {shorten(_first_line(lines) or '')!r} looks like a header line "
                f"({name} is {first!r} here and a whole number on every other line), but data.has_header is "
                "false; set data.has_header to true and name the columns, or remove the line"
            )


def _stripped(series: pl.Series) -> pl.Series:
    """Id text without surrounding whitespace (``1, 10`` is item 10); a blank id is missing."""
    text = series.str.strip_chars()
    return pl.select(pl.when(text != "").then(text)).to_series().alias(series.name)


def _canonical_ints(series: pl.Series) -> pl.Series:
    """Int64 if every value is an integer written canonically (``str(int(x)) == x``, or ``x.0`` as
    pandas writes an integer column with gaps), else unchanged."""
    text = series.str.replace(f"^{WHOLE_FLOAT_TEXT}$", "${1}")
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
        """The 1-based line on which data row ``row`` (0-based, blank lines dropped) starts."""
        try:
            starts = (begin for begin, _, blank in self._data_rows() if not blank)
            for index, line in enumerate(starts):
                if index == row:
                    return line
        except (OSError, csv.Error):
            pass
        return row + 1 + int(self.has_header)  # the csv module disagrees with polars: best guess

    def blank_rows(self) -> list[int]:
        """The 0-based rows (as polars numbers them, blank lines included) read from blank lines."""
        try:
            return [index for index, (_, _, blank) in enumerate(self._data_rows()) if blank]
        except (OSError, csv.Error):
            return []

    def short_row(self, row: int) -> tuple[int, int, int] | None:
        """(line, fields, the first row's fields) when data row ``row`` (as ``line_of`` counts)
        has fewer fields than the file's first row, whose missing ones polars reads as empty."""
        try:
            widths = (len(record) for _, record, text in self.records() if record and not self.is_blank(text))
            expected = next(widths, 0)
            rows = ((begin, record) for begin, record, blank in self._data_rows() if not blank)
            for index, (line, record) in enumerate(rows):
                if index == row:
                    return (line, len(record), expected) if len(record) < expected else None
        except (OSError, csv.Error):
            pass
        return None

    def is_blank(self, text: str) -> bool:
        """Whether a record's raw text is a line pandas skips: only whitespace, no separator."""
        return not text.strip() and self.separator not in text

    def records(self, strict: bool = False) -> Iterator[tuple[int, list[str], str]]:
        """Every record of the file (blank lines as empty ones) with the line it starts on (not
        simply its index + 1, since quoted values may span lines) and its raw text. ``strict``: a
        quote left open (or text after a closing quote) is a ``BadRecord`` naming its first line."""
        with self.path.open(encoding="utf-8-sig", errors="replace", newline="") as handle:
            raw: list[str] = []  # the lines the reader took for the current record

            def tracked() -> Iterator[str]:
                for line in handle:
                    raw.append(line)
                    yield line

            reader = csv.reader(tracked(), delimiter=self.separator, strict=strict)
            start = 1
            while True:
                try:
                    record = next(reader)
                except StopIteration:
                    return
                except csv.Error as err:
                    raise BadRecord(start, str(err)) from None
                begin, start = start, reader.line_num + 1
                text = "".join(raw)
                raw.clear()
                yield begin, record, text

    def _data_rows(self) -> Iterator[tuple[int, list[str], bool]]:
        """(first line, fields, blank?) of every record polars reads as a row."""
        # polars skips empty lines before a header; after it, blank lines are rows of nulls (as
        # the csv module also counts them) that read_table_file drops.
        leading, header = self.has_header, self.has_header
        for begin, record, text in self.records():
            if leading and not record:
                continue
            leading = False
            if header:
                header = False
                continue
            yield begin, record, self.is_blank(text)


FRAME_SOURCE = "<frame>"  # what names a data frame where a file's path would stand (messages, statistics)


def read_frame(frame: Any, config: DataConfig) -> pl.DataFrame:
    """Read an in-memory polars (eager or lazy) or pandas DataFrame into the interaction frame."""
    if isinstance(frame, pl.LazyFrame):
        frame = frame.collect()
    elif not isinstance(frame, pl.DataFrame):
        frame = _from_pandas(frame, config)
    return _from_columns(frame, config, FRAME_SOURCE, None)


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
    labels = _pandas_labels(frame, config)
    return pl.DataFrame([_pandas_series(name, frame[labels[name]]) for name in _wanted(config)])


def _pandas_labels(frame: Any, config: DataConfig) -> dict[str, Any]:
    """The wanted columns' labels by their text: ``pd.read_csv(header=None)`` labels columns
    0, 1, ..., which ``user_col="0"`` names."""
    names = [str(label) for label in frame.columns]
    _check_columns(names, config, FRAME_SOURCE)
    for name in _wanted(config):
        if names.count(name) > 1:  # frame[label] would be a frame, not a column
            raise DataError(f"<frame>: {names.count(name)} columns are named {name!r}; ids need exactly one")
    return {str(label): label for label in frame.columns}


def _pandas_series(name: str, column: Any) -> pl.Series:
    """One pandas column as a polars series named ``name``; missing values become null."""
    values = column.to_numpy()
    if values.dtype.kind in "mM" and np.datetime_data(values.dtype)[0] not in ("ns", "us", "ms"):
        # pandas 2 keeps seconds (datetime64[s]) and polars holds ms, us and ns only: us is exact
        # for whole seconds and days, and spans far more years than ns
        values = values.astype(f"{values.dtype.str[1]}8[us]")
    if values.dtype != object:
        return pl.Series(name, values, nan_to_null=np.issubdtype(values.dtype, np.floating))
    # NaN, None, pd.NA (pd.read_csv's blank string id) become null, not the text "nan" that would
    # merge all such rows into one id: the "is empty" error names the first.
    missing = column.isna().to_numpy()
    items = values.tolist()
    for index in np.flatnonzero(missing):  # only where something is missing: a Python pass costs seconds
        items[index] = None
    try:
        series = pl.Series(name, items, strict=True)
    except (TypeError, pl.exceptions.PolarsError):  # mixed ints and strings: compared as text below
        series = None
    if series is not None and series.dtype == pl.String:
        return series  # text throughout (pandas' usual string ids): no True among them
    # polars reads True as 1 among ints, and as "True" among mixed ids: a silent item either way
    # (a column of booleans alone is refused by its type)
    flag = next((row for row, value in enumerate(items) if isinstance(value, (bool, np.bool_))), None)
    if flag is not None:
        raise DataError(f"{FRAME_SOURCE}: row {flag} (0-based): column {name!r} holds {items[flag]!r}; ids and times are never true or false")
    if series is not None:
        return series
    # 7.0 as "7", as a float column's whole numbers and the vocabulary take it (not item "7.0")
    whole = [int(v) if isinstance(v, float) and v.is_integer() else v for v in items]
    return pl.Series(name, [None if v is None else str(v) for v in whole])


def _wanted(config: DataConfig) -> list[str]:
    return [config.user_col, config.item_col] + ([config.time_col] if config.time_col else [])


def _check_columns(existing: list[str], config: DataConfig, source: str) -> None:
    for field, name in (("data.user_col", config.user_col), ("data.item_col", config.item_col),
                        ("data.time_col", config.time_col)):
        if name is not None and name not in existing:
            near = next((column for column in existing if column.strip() == name.strip()), None)
            hint = "" if near is None else (
                f" ({near!r} has spaces around it: name it so, or take them out of the header)" if near != near.strip()
                else f" ({field} {name!r} has spaces around it: the header names {near!r})"
            )
            raise DataError(
                f"{source}: no column {name!r} ({field}); the columns are: {', '.join(map(repr, existing))}{hint}"
            )
        # polars renames a header's repeated name to name_duplicated_0: which column is meant?
        if name is not None and f"{name}_duplicated_0" in existing:
            raise DataError(f"{source}: the header names the column {name!r} ({field}) more than once; rename the others")


def _check_header(existing: list[str], config: DataConfig, lines: TextLines) -> None:
    """Say a file seems separated by another character, or to lack its header line, when named
    columns are missing."""
    wanted = _wanted(config)
    if all(name in existing for name in wanted):
        return
    first = _first_line(lines)
    other = _other_separator(first, lines.separator) if first is not None and len(existing) == 1 else None
    if other is not None:
        option = f"data.separator {other!r}"
        if config.separator is None:  # the format's own separator was used: the other format is the fix
            formats = {"\t": "data.format tsv (or data.separator '\\t')", ",": "data.format csv (or data.separator ',')"}
            option = formats.get(other, option)
        raise DataError(
            f"{lines.path}: line 1 {shorten(first)!r} holds no {lines.separator!r} but {first.count(other)} "
            f"{other!r}: the file seems separated by {other!r}, not {lines.separator!r}; set {option}"
        )
    if not config.has_header:
        return
    if first is None or any(name in existing for name in wanted) or not _looks_like_data(first, lines.separator):
        return  # a header with other names (some of them wanted, a number among them or not): _check_columns lists them
    missing = next(name for name in wanted if name not in existing)
    fields = zip(("data.user_col", "data.item_col", "data.time_col"), wanted)
    named = ", ".join(f"{field} {name!r}" for field, name in fields)
    raise DataError(
        f"{lines.path}: no column {missing!r}: the first line {shorten(first)!r} looks like data, so the "
        f"file seems to have no header line. Add one naming the columns ({named}), or set "
        "data.has_header to false and name the columns by position (column_1, column_2, ...)"
    )


# Separators a delimited file is commonly written with (a spreadsheet's CSV in many locales uses ';').
COMMON_SEPARATORS = (",", "\t", ";", "|")


def _other_separator(line: str, separator: str) -> str | None:
    """The common separator that ``line`` holds most often, when it holds none of ``separator``."""
    if separator in line:
        return None
    counts = {sep: line.count(sep) for sep in COMMON_SEPARATORS if sep != separator}
    best = max(counts, key=counts.__getitem__)
    return best if counts[best] else None


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


def _is_utf8(value: bytes) -> bool:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _first_null(series: pl.Series) -> int | None:
    nulls = series.is_null()
    if series.dtype.is_float():
        nulls = nulls | series.is_nan()
    return int(nulls.arg_max()) if nulls.any() else None


def _missing(series: pl.Series, field: str, source: str, bad: int, lines: TextLines | None) -> str:
    """The message for the missing value at row ``bad``: a row short of fields (whose missing
    ones polars reads as empty), an empty value, or a float NaN."""
    short = lines.short_row(bad) if lines is not None and series[bad] is None else None
    if short is not None:
        line, fields, expected = short
        return (f"{source}:{line}: {fields} field{'s' * (fields != 1)}, but the first row has {expected}, "
                f"so column {series.name!r} ({field}) has no value")
    what = "is empty" if series[bad] is None else "holds NaN, a missing value"
    return f"{_where(source, bad, lines)}: column {series.name!r} ({field}) {what}"


def _fits_int64(series: pl.Series) -> bool:
    """Whether an integer column (UInt64 and Int128 too) fits Int64."""
    return series.min() >= -(2**63) and series.max() < 2**63


def _ids(series: pl.Series, field: str, source: str, lines: TextLines | None) -> pl.Series:
    """Normalise an id column: integers -> Int64 (as text where they do not fit), text-like ->
    String; nulls are errors."""
    bad = _first_null(series)
    if bad is not None:
        raise DataError(_missing(series, field, source, bad, lines))
    dtype = series.dtype
    if dtype.is_nested() or dtype in (pl.Boolean, pl.Object):
        raise DataError(f"{source}: column {series.name!r} ({field}) has type {dtype}; ids must be integers or strings")
    if dtype == pl.Binary:  # text stored as bytes (some Parquet writers): ids if it is UTF-8
        try:
            return series.cast(pl.String)
        except pl.exceptions.PolarsError:
            bad = next(i for i, value in enumerate(series.to_list()) if not _is_utf8(value))
            raise DataError(
                f"{_where(source, bad, lines)}: column {series.name!r} ({field}) holds bytes that are not UTF-8 "
                f"text ({shorten(repr(series[bad]), 40)}); ids must be integers or strings"
            ) from None
    if dtype.is_integer():  # an id is a label: one beyond Int64 stays exact as text
        return series.cast(pl.Int64) if _fits_int64(series) else series.cast(pl.String)
    if dtype.is_float():
        return _float_ids(series, field, source, lines)
    if dtype.is_decimal():  # a database's NUMBER: whole values are ids as integers are, "28.00" is 28
        return _decimal_ids(series, field, source, lines)
    # Spaces are no part of an id, as in a text file's "1, 26" (a CHAR(n) column pads them), and a
    # blank id is a missing one: a frame or a Parquet file reads as the same data in a CSV would.
    text = _stripped(series.cast(pl.String))
    bad = _first_null(text)
    if bad is not None:
        raise DataError(_missing(text, field, source, bad, lines))
    marked = text.str.to_lowercase().is_in(_MISSING_MARKERS)
    if marked.any() and not marked.all() and _canonical_ints(text.filter(~marked)).dtype == pl.Int64:
        bad, count = int(marked.arg_max()), int(marked.sum())
        raise DataError(
            f"{_where(source, bad, lines)}: column {series.name!r} ({field}) is {text[bad]!r}, which marks a missing "
            f"value, and a whole number on every other row; remove the {count:,} row{'s' * (count != 1)} without an id "
            f"(as an id, {text[bad]!r} would be an item, and every id text)"
        )
    return text


# What spreadsheets, pandas and R write for a missing value. In a column of whole numbers such a
# value is a hole in the data rather than an id; in a column of text ids it may be a real one.
_MISSING_MARKERS = ["na", "n/a", "nan", "null", "none", "nil"]


def _float_ids(series: pl.Series, field: str, source: str, lines: TextLines | None) -> pl.Series:
    # A pandas int column with missing values turns float; whole numbers are still ids, if finite
    # and within Int64 (inf and 1e30 are whole to floor(), and polars' cast would fail on them).
    whole = series == series.floor()
    fits = whole & (series >= -(2.0**63)) & (series < 2.0**63)
    if fits.all():
        return series.cast(pl.Int64)
    bad = int((~fits).arg_max())
    what = "outside the 64-bit integer range" if whole[bad] else "a non-integer number"
    raise DataError(
        f"{_where(source, bad, lines)}: column {series.name!r} ({field}) holds {series[bad]!r}, "
        f"{what}; ids must be integers or strings"
    )


def _decimal_ids(series: pl.Series, field: str, source: str, lines: TextLines | None) -> pl.Series:
    text = series.cast(pl.String).str.replace(r"\.0*$", "")  # the scale's zeros: 28.00 -> 28
    whole = text.str.contains(r"^-?[0-9]+$")
    if not whole.all():
        bad = int((~whole).arg_max())
        raise DataError(
            f"{_where(source, bad, lines)}: column {series.name!r} ({field}) holds {series.cast(pl.String)[bad]}, "
            "a non-integer number; ids must be integers or strings"
        )
    ints = text.cast(pl.Int64, strict=False)
    return ints if ints.null_count() == 0 else text  # beyond Int64, exact as text, as integers are


def _times(series: pl.Series, source: str, lines: TextLines | None) -> pl.Series:
    """Normalise a time column to Int64 (integers, dates, datetimes) or Float64; nulls are errors."""
    bad = _first_null(series)
    if bad is not None:
        raise DataError(_missing(series, "data.time_col", source, bad, lines))
    dtype = series.dtype
    if dtype == pl.String:  # " 1600000000" as a CSV writes it after ", ": the spaces are no part of the time
        series = _time_strings(series.str.strip_chars(), source, lines)
        dtype = series.dtype
    if dtype.is_integer() and not _fits_int64(series):
        outside = (series < -(2**63)) | (series >= 2**63)
        bad = int(outside.arg_max())
        raise DataError(
            f"{_where(source, bad, lines)}: column {series.name!r} (data.time_col) holds {series[bad]}, "
            "outside the 64-bit integer range of timestamps"
        )
    if dtype == pl.Time:  # 23:00 on one day would sort after 08:00 on the next
        raise DataError(
            f"{source}: column {series.name!r} (data.time_col) holds times of day ({series[0]}) without their dates, "
            "which cannot order events across days; give dates and times (datetimes), or numbers"
        )
    if dtype.is_integer() or dtype.is_temporal():
        # Dates and datetimes sort by their physical integer (days / time units since the epoch).
        return series.to_physical().cast(pl.Int64)
    if dtype.is_float():
        infinite = ~series.is_finite()
        if infinite.any():  # an order needs finite times (NaN was refused above as missing)
            bad = int(infinite.arg_max())
            raise DataError(
                f"{_where(source, bad, lines)}: column {series.name!r} (data.time_col) holds {series[bad]!r}; "
                "timestamps must be finite numbers or dates"
            )
        return series.cast(pl.Float64)
    raise DataError(f"{source}: column {series.name!r} (data.time_col) has type {dtype}; expected numbers or dates")


# Dates are read only in ISO 8601 order (year first): polars would infer 05/01/2024 as day-first,
# so a US log whose days are all <= 12 would train on a silently wrong order.
_ISO_DATE = r"^\d{4}-\d{2}-\d{2}"
_OTHER_DATE = r"^\d{1,4}[/.-]\d{1,2}[/.-]\d{1,4}"
_YEAR_FIRST_DATE = r"\d{4}[/.-]\d{1,2}[/.-]\d{1,2}(?!\d)"
_ZONE = r"\d:\d{2}(?::\d{2})?(?:\.\d+)?\s?(?:Z|[+-]\d{2}(?::?\d{2})?)$"  # a time with its offset: 10:30Z, 10:30:00+01:00


def _with_nanoseconds(text: pl.Series, parsed: pl.Series) -> pl.Series:
    """``text`` parsed in nanoseconds where a time gives them (7+ fractional digits) and every time
    lies in their range (1677-2262: beyond it polars' parse wraps around silently); else
    ``parsed``, in microseconds. Cut to microseconds, events apart by less would tie."""
    if not text.str.contains(r"[.,]\d{7}").any():
        return parsed
    limit = (2**63 - 1) // 1000  # nanoseconds' range, in microseconds
    physical = parsed.to_physical()
    if physical.min() <= -limit or physical.max() >= limit:
        return parsed
    return text.str.to_datetime(strict=True, time_unit="ns")


def _time_strings(series: pl.Series, source: str, lines: TextLines | None) -> pl.Series:
    """Parse a text time column as ISO dates, or as numbers written as text; else name the first misfit."""
    iso = series.str.contains(_ISO_DATE).fill_null(False)
    if iso.all():
        try:
            parsed = series.str.to_datetime(strict=True)  # microseconds: 290,000 years either way
        except pl.exceptions.PolarsError:
            pass
        else:
            return _with_nanoseconds(series, parsed)
        zoned = series.str.contains(_ZONE).fill_null(False)
        if zoned.any() and not zoned.all():  # 10:30 local, against 10:30Z: which came first cannot be told
            bad = int((zoned if zoned.sum() < zoned.len() / 2 else ~zoned).arg_max())  # the first of the fewer
            other = series[int((zoned != zoned[bad]).arg_max())]
            raise DataError(
                f"{_where(source, bad, lines)}: column {series.name!r} (data.time_col) holds {series[bad]!r}, "
                f"{'with' if zoned[bad] else 'without'} a time zone, where others are {'without' if zoned[bad] else 'with'} "
                f"one ({other!r}): which came first cannot be told; give every time its zone, or none"
            )
    numbers = series.cast(pl.Float64, strict=False)
    is_number = numbers.is_finite().fill_null(False)
    if is_number.all():
        ints = series.cast(pl.Int64, strict=False)
        return numbers if ints.null_count() else ints
    other_date = ~iso & series.str.contains(_OTHER_DATE).fill_null(False)
    if other_date.any():
        bad = int(other_date.arg_max())
        if re.match(_YEAR_FIRST_DATE, series[bad]):  # 2024-1-5, 2024/01/05: no day or month to confuse
            raise DataError(
                f"{_where(source, bad, lines)}: column {series.name!r} (data.time_col) holds {series[bad]!r}, a date "
                "not written as ISO 8601 (a four-digit year, then a two-digit month and day, joined by dashes); "
                "write dates as 2024-01-05 or 2024-01-05T10:30:00, or use numbers"
            )
        raise DataError(
            f"{_where(source, bad, lines)}: column {series.name!r} (data.time_col) holds {series[bad]!r}, a date "
            "not in ISO 8601 order: whether its first number is the day or the month cannot be told, so the "
            "events' order would be a guess; write dates as 2024-01-05 or 2024-01-05T10:30:00, or use numbers"
        )
    try:  # the date format is inferred from the first value
        is_date = iso & series.str.to_datetime(strict=False).is_not_null()
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
