"""Parsers for the two plain-text formats: whitespace-separated ids and GroupLens ``ratings.dat``.

Lines are split and cast by polars (vectorised); Python only looks at a line again to describe
the first bad one. Both formats require integer ids, so errors name the file and 1-based line.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import polars as pl

from awrsr.data.schema import finish, shorten
from awrsr.errors import DataError


def read_text(path: Path) -> str:
    """The file's text; invalid UTF-8 is reported with the line it occurs on."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise DataError(f"{path}:{line}: not valid UTF-8 text ({err.reason})") from None


def _lines(text: str) -> pl.DataFrame:
    """Non-blank lines with their 1-based numbers (``lineno``) and whitespace-split ``tokens``."""
    # Split on "\n" only (not str.splitlines) so line numbers match what editors show; a trailing
    # "\r" is whitespace and disappears with the tokenisation.
    return (
        pl.DataFrame({"line": [text]})
        .select(pl.col("line").str.split("\n"))
        .explode("line")
        .with_row_index("lineno", offset=1)
        .with_columns(tokens=pl.col("line").str.extract_all(r"\S+"))
        .filter(pl.col("tokens").list.len() > 0)
    )


def _is_int(token: str) -> bool:
    """Whether ``token`` parses as a 64-bit integer (what the vectorised cast accepts)."""
    try:
        value = int(token)
    except ValueError:
        return False
    return -(2**63) <= value < 2**63


def read_whitespace(path: Path) -> pl.DataFrame:
    """Read ``user item`` ("pairs") and ``user item1 item2 ...`` ("seq") files: one parser for both.

    Each line is a user id followed by one or more item ids, all integers; lines of the same user
    accumulate in file order. ``1 10 11`` and the two lines ``1 10`` / ``1 11`` read the same.
    """
    lines = _lines(read_text(path))
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
        text = lines.filter(pl.col("lineno") == lineno).item(0, "line")
        _whitespace_error(path, lineno, text, first_line=lineno == lines.item(0, "lineno"))
    return finish(events.select("user", "item", pl.lit(None, pl.Int64).alias("timestamp")), str(path))


def _whitespace_error(path: Path, lineno: int, text: str, first_line: bool) -> NoReturn:
    tokens = text.split()
    where = f"{path}:{lineno}"
    if len(tokens) == 1 and _is_int(tokens[0]):
        raise DataError(f"{where}: user {tokens[0]} has no item ids (expected 'user item ...'): {shorten(text)!r}")
    token = next(t for t in tokens if not _is_int(t))
    header = first_line and not any(map(_is_int, tokens))
    hint = " (a header line? set data.format to csv or tsv for files with named columns)" if header else ""
    raise DataError(f"{where}: ids must be integers, got {shorten(token, 30)!r} in {shorten(text)!r}{hint}")


def read_movielens(path: Path) -> pl.DataFrame:
    """Read GroupLens ``ratings.dat``: ``UserID::MovieID::Rating::Timestamp`` per line.

    Every rating counts as one implicit interaction; the rating value itself is not used.
    """
    lines = _lines(read_text(path)).with_columns(fields=pl.col("line").str.strip_chars().str.split("::"))
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
