"""``read_interactions``: any supported source -> the interaction frame (see ``schema.py``)."""

from __future__ import annotations

import codecs
import re
from pathlib import Path
from typing import Any

import polars as pl

from awrsr.data.config import DataConfig
from awrsr.data.tabular import is_frame, read_frame, read_table_file
from awrsr.data.text_formats import read_movielens, read_whitespace
from awrsr.errors import ConfigError, DataError
from awrsr.files import starts_with, user_path, relative_to_cwd

#: The formats a file name's suffix names (any case); ``auto`` takes them from it.
FORMAT_BY_SUFFIX = {".parquet": "parquet", ".csv": "csv", ".tsv": "tsv"}


def detect_format(path: Path) -> str:
    """The format ``auto`` picks: by suffix, else ``parquet`` if the file begins as Parquet files
    do, else ``movielens`` if the first non-blank line has ``::``.

    >>> detect_format(Path("ratings.csv"))
    'csv'
    """
    by_suffix = FORMAT_BY_SUFFIX.get(path.suffix.lower())
    if by_suffix:
        return by_suffix
    if _is_parquet(path):
        return "parquet"
    with path.open("rb") as handle:
        for line in handle:  # only reads up to the first non-blank line
            if line.strip():
                return "movielens" if b"::" in line else "whitespace"
    return "whitespace"  # empty file: the whitespace reader reports "no interactions"


# The first bytes of the compressed files users most often hand over.
_MAGIC_ZIP = b"PK\x03\x04"
_MAGIC = {b"\x1f\x8b": "gzip", b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz", b"\x28\xb5\x2f\xfd": "zstd", _MAGIC_ZIP: "zip"}


# Spreadsheet workbooks: Excel 97-2003 (an OLE2 file), or a zip archive that is an Excel or
# OpenDocument workbook by its name or by the entry names near its start.
_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_WORKBOOK_SUFFIXES = (".xlsx", ".xlsm", ".xls", ".ods")
_WORKBOOK_ENTRIES = (b"xl/", b"opendocument.spreadsheet")


def _compression(path: Path) -> str | None:
    """What packs the file, as the error names it: a workbook, or a compression format."""
    with path.open("rb") as handle:
        head = handle.read(512)
    if head.startswith(_OLE2) or head.startswith(_MAGIC_ZIP) and (
        path.suffix.lower() in _WORKBOOK_SUFFIXES or any(entry in head for entry in _WORKBOOK_ENTRIES)
    ):
        return "workbook"
    return next((name for magic, name in _MAGIC.items() if head.startswith(magic)), None)


def _json_kind(path: Path) -> str | None:
    """"JSON lines" or "a JSON array" if the file's first non-blank text opens a JSON object or
    array, as no interaction table does (its ids or column names come first), else None."""
    with path.open("rb") as handle:
        head = handle.read(4096).removeprefix(codecs.BOM_UTF8).lstrip()
    if re.match(rb'\{\s*["}]', head):  # {"user": ...}: a brace-wrapped id ({3F2504E0-...}) is none
        return "JSON lines"
    return "a JSON array" if head.startswith(b"[") and head[1:].lstrip()[:1] in (b"{", b"[", b'"', b"]") else None


def _is_parquet(path: Path) -> bool:
    return starts_with(path, b"PAR1")


def read_interactions(source: str | Path | Any, config: DataConfig) -> pl.DataFrame:
    """Read interactions from a file path or a polars/pandas DataFrame.

    Returns columns ``user``, ``item`` (original ids), ``timestamp`` (null when absent) and ``row``
    (0-based source order). User mistakes raise ``DataError`` naming the file and line or column.

    >>> read_interactions(pl.DataFrame({"user_id": [1, 1], "item_id": [5, 6]}), DataConfig()).shape
    (2, 4)
    """
    if not isinstance(config, DataConfig):  # its first attribute lookup would fail, naming no argument
        raise ConfigError(f"read_interactions: config must be a DataConfig, got {type(config).__name__}")
    if is_frame(source):
        return read_frame(source, config)
    if not isinstance(source, (str, Path)):
        raise TypeError(f"source must be a path or a DataFrame, got {type(source).__name__}")
    path = user_path(source)
    if not path.exists():
        relative = relative_to_cwd(path)
        raise DataError(f"data file not found: {source}{f' ({relative}; set data.path)' if relative else ''}")
    if path.is_dir():
        raise DataError(f"{source}: is a directory, expected a data file")
    if not path.is_file():  # its first bytes, read to detect the format, would be gone for the reader
        raise DataError(f"{source}: is not a regular file (a pipe or a device can be read only once); save the data to a file first")
    compressed = _compression(path)
    if compressed == "workbook":  # a zip to look at, but unzipped it is XML, not a table
        raise DataError(f"{source}: is a spreadsheet workbook (Excel or OpenDocument); save the sheet as CSV (or Parquet)")
    if compressed:  # else read as text, it fails on "invalid UTF-8" or worse
        raise DataError(f"{source}: is {compressed}-compressed; decompress it first (or save the data as Parquet)")
    json_kind = _json_kind(path)
    if json_kind:  # read as whitespace or CSV, its error would blame fields or a header line
        reader = "read_json" if json_kind == "a JSON array" else "read_ndjson"
        raise DataError(
            f"{source}: holds {json_kind}, which awrsr does not read; save it as CSV or Parquet first, "
            f"e.g. polars.{reader}(path).write_parquet('events.parquet')"
        )
    fmt = detect_format(path) if config.format == "auto" else config.format
    if fmt != "parquet" and _is_parquet(path):  # else read as text, it fails on "invalid UTF-8"
        how = f"data.format {config.format}" if config.format != "auto" else f"its name ({path.suffix}) says {fmt}"
        raise DataError(f"{source}: is a Parquet file, but {how}; set data.format parquet (or name it .parquet)")
    check_options_apply(config, fmt, source)
    if fmt == "whitespace":
        return read_whitespace(path, refuse_tables=config.format == "auto")
    if fmt == "movielens":
        return read_movielens(path)
    return read_table_file(path, fmt, config)


# Options for files with named columns; whitespace and movielens files have fixed fields, a
# parquet file has typed columns and no text to split, and a data frame (FRAME) has no file.
COLUMN_OPTIONS = ("user_col", "item_col", "time_col", "separator", "has_header")
FRAME = "frame"
IGNORED_OPTIONS = {
    "whitespace": COLUMN_OPTIONS, "movielens": COLUMN_OPTIONS, "parquet": ("separator", "has_header"),
    FRAME: ("format", "separator", "has_header"),
}


def format_read_as(path: str | Path, fmt: str = "auto") -> str:
    """The format a file given with ``data.format`` ``fmt`` is read in: ``fmt`` unless it is
    auto, else what ``detect_format`` finds; "auto" while that cannot be told (no such file, or
    not readable, and no suffix that names a format).

    >>> format_read_as("events.csv"), format_read_as("events.txt", "whitespace"), format_read_as("not-there")
    ('csv', 'whitespace', 'auto')
    """
    if fmt != "auto":
        return fmt
    source = user_path(path)
    try:
        return detect_format(source) if source.is_file() or source.suffix.lower() in FORMAT_BY_SUFFIX else "auto"
    except OSError:
        return "auto"  # the reader names what it cannot read


def ignored_options(config: DataConfig, fmt: str) -> list[str]:
    """The options ``config`` sets (``data.time_col``, ...) that a file read as ``fmt`` ignores."""
    default = DataConfig()
    return [f"data.{name}" for name in IGNORED_OPTIONS.get(fmt, ()) if getattr(config, name) != getattr(default, name)]


def check_options_apply(config: DataConfig, fmt: str, source: str | Path) -> None:
    """A ConfigError if ``config`` sets an option that a file read as ``fmt`` ignores
    (``IGNORED_OPTIONS``): column options for whitespace or movielens, text options for parquet.

    >>> check_options_apply(DataConfig(time_col="ts"), "csv", "events.csv")  # used: fine
    """
    ignored = ignored_options(config, fmt)
    if not ignored:
        return
    if fmt == "parquet":
        raise ConfigError(
            f"{', '.join(ignored)} set, but {source} is read as parquet, which has no separator or header line: remove them"
        )
    how = "data.format auto picked it from the file's name and first line" if config.format == "auto" else f"data.format {fmt}"
    raise ConfigError(
        f"{', '.join(ignored)} set, but {source} is read as {fmt} ({how}), whose fields are fixed and "
        "would ignore them: remove them, or set data.format to csv, tsv or parquet if the file has columns"
    )


# Column names that say "when": a table that has one but names no data.time_col is read in file
# order, which is rarely what its author meant (an export sorted by user or item, say).
_TIME_NAMES = {"ts", "time", "timestamp", "datetime", "date", "epoch", "unixtime", "unix_time", "event_time", "created"}
_TIME_SUFFIXES = ("_ts", "_time", "_timestamp", "_datetime", "_date", "_at")


def _looks_like_time(name: str) -> bool:
    """
    >>> [n for n in ["ts", "Event Time", "created_at", "user_id", "rating", "status"] if _looks_like_time(n)]
    ['ts', 'Event Time', 'created_at']
    """
    normal = name.strip().lower().replace(" ", "_").replace("-", "_")
    return normal in _TIME_NAMES or normal.endswith(_TIME_SUFFIXES)


def unused_time_columns(source: str | Path | Any, config: DataConfig) -> list[str]:
    """The columns of a table (a CSV/TSV file with a header, a Parquet file, a frame) that
    ``config`` does not read and whose name says time, when it names no ``data.time_col``: the
    interactions are then in file order, and the caller says which column it might have meant.
    Reads only the header or schema; a source it cannot read that way has none."""
    if config.time_col is not None:
        return []
    try:
        if is_frame(source):
            columns = source.collect_schema().names() if isinstance(source, pl.LazyFrame) else list(map(str, source.columns))
        else:
            path = user_path(source)
            fmt = detect_format(path) if config.format == "auto" else config.format
            if fmt == "parquet":
                columns = pl.scan_parquet(path, glob=False).collect_schema().names()
            elif fmt in ("csv", "tsv") and config.has_header:
                sep = config.separator or ("," if fmt == "csv" else "\t")
                columns = pl.read_csv(path, n_rows=0, separator=sep, infer_schema=False, glob=False).columns
            else:
                return []
    except (pl.exceptions.PolarsError, OSError, ValueError):
        return []
    return [name for name in columns if name not in (config.user_col, config.item_col) and _looks_like_time(name)]
