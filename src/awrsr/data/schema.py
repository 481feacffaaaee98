"""The interaction frame every reader returns: one row per (user, item) event.

Columns: ``user`` and ``item`` (original ids, Int64 or String), ``timestamp`` (Int64 or Float64,
all null when the source has no times) and ``row`` (Int64, 0-based position in the source, the
tie-breaker that keeps file order).
"""

from __future__ import annotations

import polars as pl

from awrsr.errors import DataError


def finish(frame: pl.DataFrame, source: str) -> pl.DataFrame:
    """Check a reader's ``user``/``item``/``timestamp`` frame is non-empty and add ``row``.

    >>> finish(pl.DataFrame({"user": [1], "item": [7], "timestamp": [None]}), "x").columns
    ['user', 'item', 'timestamp', 'row']
    """
    if frame.height == 0:
        raise DataError(f"{source}: no interactions")
    if frame.schema["timestamp"] == pl.Null:
        frame = frame.with_columns(pl.col("timestamp").cast(pl.Int64))
    return frame.select(
        "user", "item", "timestamp", pl.int_range(pl.len(), dtype=pl.Int64).alias("row")
    )


def shorten(text: str, width: int = 80) -> str:
    """A line as quoted in error messages: whitespace-trimmed and cut to about ``width`` characters."""
    text = text.strip()
    return text if len(text) <= width else text[: width - 3] + "..."
