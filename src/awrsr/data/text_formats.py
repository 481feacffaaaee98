"""Parsers for the two plain-text formats: whitespace-separated ids and GroupLens ``ratings.dat``.

Lines are split and cast by polars (vectorised); Python only looks at a line again to describe
the first bad one. Both formats require integer ids, so errors name the file and 1-based line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NoReturn

import polars as pl

from awrsr.data.schema import finish, shorten
from awrsr.errors import DataError
from awrsr.files import read_text


def _lines(text: str) -> pl.DataFrame:
    """Non-blank lines with their 1-based numbers (``lineno``) and whitespace-split ``tokens``."""
    # CRLF, a lone CR (old Mac files) and LF each end one line, as editors count them; other
    # Unicode line separators (str.splitlines) would shift the numbers an editor shows.
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return (
        pl.DataFrame({"line": [text]})
        .select(pl.col("line").str.split("\n"))
        .explode("line")
        .with_row_index("lineno", offset=1)
        .with_columns(tokens=pl.col("line").str.extract_all(r"\S+"))
        .filter(pl.col("tokens").list.len() > 0)
    )


# What polars' cast(pl.Int64, strict=False) accepts: ASCII digits with an optional sign (not
# Python's int(), which also takes "1_000" and other scripts' digits). Leading zeros are split off
# so that the range check never converts a huge digit string.
_INT = re.compile(r"([+-]?)(?=[0-9])0*([0-9]{0,19})")


def _is_int(token: str) -> bool:
    """Whether polars' vectorised cast reads ``token`` as a 64-bit integer."""
    match = _INT.fullmatch(token)
    if match is None:
        return False
    sign, digits = match.groups()
    return -(2**63) <= int(sign + (digits or "0")) < 2**63


def read_whitespace(path: Path, refuse_tables: bool = True) -> pl.DataFrame:
    """Read ``user item`` ("pairs") and ``user item1 item2 ...`` ("seq") files: one parser for both.

    Each line is a user id followed by one or more item ids, all integers; lines of the same user
    accumulate in file order. ``1 10 11`` and the two lines ``1 10`` / ``1 11`` read the same.
    A table (``user item rating timestamp`` per line, as MovieLens' ``u.data``) is an error unless
    ``refuse_tables`` is off (the user named the format: a history cut into lines of one width).
    """
    lines = _lines(read_text(path, DataError))
    if refuse_tables:
        _check_not_a_table(path, lines)
    events = (
        lines.select(
            "lineno",
            pl.col("tokens").list.first().alias("user_text"),
            pl.col("tokens").list.slice(1).alias("item_text"),
        )
        .explode("item_text")
        .with_columns(
            user=pl.col("user_text").cast(pl.Int64, strict=False),
            item=pl.col("item_text").cast(pl.Int64, strict=False),
        )
    )
    no_items = lines.filter(pl.col("tokens").list.len() < 2).get_column("lineno")
    bad = events.filter(pl.col("user").is_null() | pl.col("item").is_null()).get_column("lineno")
    if no_items.len() or bad.len():
        lineno = min(no_items.min() or 2**63, bad.min() or 2**63)
        row = lines.filter(pl.col("lineno") == lineno).row(0, named=True)
        _whitespace_error(path, lineno, row["line"], row["tokens"], first_line=lineno == lines.item(0, "lineno"))
    return finish(events.select("user", "item", pl.lit(None, pl.Int64).alias("timestamp")), str(path))


def _whitespace_error(path: Path, lineno: int, text: str, tokens: list[str], first_line: bool) -> NoReturn:
    # ``tokens`` are polars' own: Python's str.split() cuts at more characters (e.g. "\x1c").
    where = f"{path}:{lineno}"
    if len(tokens) == 1 and _is_int(tokens[0]):
        raise DataError(f"{where}: user {tokens[0]} has no item ids (expected 'user item ...'): {shorten(text)!r}")
    token = next((t for t in tokens if not _is_int(t)), None)
    if token is None:  # _is_int and polars disagree: still a one-line error naming the line
        raise DataError(f"{where}: cannot read {shorten(text)!r} as integer ids 'user item ...'")
    if re.fullmatch(r"[+-]?[0-9]+", token):  # an integer, only too large for 64 bits
        raise DataError(
            f"{where}: id {shorten(token, 30)!r} in {shorten(text)!r} is beyond the 64-bit integer range that whitespace "
            "files' ids are read in; renumber the ids, or write the data as CSV, where such ids are read as text"
        )
    hint = _format_hint(text, tokens, first_line)
    raise DataError(f"{where}: ids must be integers, got {shorten(token, 30)!r} in {shorten(text)!r}{hint}")


def _format_hint(text: str, tokens: list[str], first_line: bool) -> str:
    """Which other format a line that is no ``user item ...`` line seems to be written in."""
    if "::" in text:
        return " (GroupLens's '::'-separated ratings? set data.format to movielens)"
    if len(tokens) == 1 and "," in text:
        return " (comma-separated? set data.format to csv)"
    if first_line and not any(map(_is_int, tokens)):
        return " (a header line? set data.format to csv or tsv for files with named columns)"
    return ""


def _check_not_a_table(path: Path, lines: pl.DataFrame) -> None:
    """A DataError for a table read as sequences (``u.data``: ``user item rating timestamp``), where
    ratings and times would silently become items. Every line has the same k >= 3 values and a user
    starts several lines; sequence files have one line per user, of varying lengths."""
    if lines.is_empty():
        return
    counts = lines.get_column("tokens").list.len()
    width = counts.min()
    if width < 3 or counts.max() != width:
        return
    users = lines.select("lineno", "line", pl.col("tokens").list.first().alias("user"))
    repeats = users.filter(~pl.col("user").is_first_distinct())
    if repeats.is_empty():
        return
    second = repeats.row(0, named=True)
    first = users.filter(pl.col("user") == second["user"]).row(0, named=True)
    raise DataError(
        f"{path}: every line has {width} values and lines {first['lineno']} ({shorten(first['line'], 40)!r}) and "
        f"{second['lineno']} ({shorten(second['line'], 40)!r}) both start with user {second['user']}: this looks "
        "like a table, not 'user item1 item2 ...' sequences (its other columns would be read as items). "
        f"Read it as a table: data.format tsv (or csv with data.separator), {_table_columns(lines, width)}. "
        "If it is sequences cut into lines of one width, set data.format whitespace"
    )


def _table_columns(lines: pl.DataFrame, width: int) -> str:
    """How to name a table's columns: by its header line if the first line is one, else by position."""
    names = lines.item(0, "tokens")
    if not any(map(_is_int, names)):
        shown = ", ".join(map(repr, names[:4])) + (", ..." if width > 4 else "")
        return f"data.user_col and data.item_col naming its columns ({shown}) and, for a time column, data.time_col"
    return ("data.has_header false, data.user_col column_1, data.item_col column_2 and, for a time column, "
            f"e.g. data.time_col column_{width}")


def read_movielens(path: Path) -> pl.DataFrame:
    """Read GroupLens ``ratings.dat``: ``UserID::MovieID::Rating::Timestamp`` per line.

    Every rating counts as one implicit interaction; the rating value itself is not used.
    """
    lines = _lines(read_text(path, DataError)).with_columns(fields=pl.col("line").str.strip_chars().str.split("::"))
    fields = lines.with_columns(
        n=pl.col("fields").list.len(),
        user=pl.col("fields").list.get(0, null_on_oob=True).str.strip_chars().cast(pl.Int64, strict=False),
        item=pl.col("fields").list.get(1, null_on_oob=True).str.strip_chars().cast(pl.Int64, strict=False),
        timestamp=pl.col("fields").list.get(3, null_on_oob=True).str.strip_chars().cast(pl.Int64, strict=False),
    )
    bad = fields.filter(
        (pl.col("n") != 4) | pl.col("user").is_null() | pl.col("item").is_null() | pl.col("timestamp").is_null()
    )
    if bad.height:
        row = bad.row(0, named=True)
        where = f"{path}:{row['lineno']}"
        if row["n"] != 4:
            raise DataError(
                f"{where}: expected 4 '::'-separated fields UserID::MovieID::Rating::Timestamp, "
                f"got {row['n']}: {shorten(row['line'])!r}"
            )
        raise DataError(f"{where}: UserID, MovieID and Timestamp must be integers: {shorten(row['line'])!r}")
    return finish(fields.select("user", "item", "timestamp"), str(path))
