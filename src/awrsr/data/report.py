"""``print_stats``: the dataset statistics and fingerprint as one rich table."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from awrsr.data.dataset import DatasetStats, Fingerprint


def stats_table(stats: DatasetStats, fingerprint: Fingerprint) -> Table:
    """The table ``print_stats`` prints (separate so callers can embed or test it)."""
    table = Table(title="Dataset", show_header=True, header_style="bold")
    table.add_column("statistic")
    table.add_column("value", overflow="fold")
    rows = [
        ("source", escape(stats.source)),  # a path like runs/[v2]/x.csv is no markup
        ("users", f"{stats.users:,}"),
        ("items", f"{stats.items:,}"),
        ("interactions", f"{stats.interactions:,}"),
        ("sequence length min / median / mean / max",
         f"{stats.min_length} / {stats.median_length:g} / {stats.mean_length:.2f} / {stats.max_length}"),
        ("density", f"{stats.density:.4%}"),
        ("order", stats.order + _time_hint(stats.unused_time_columns)),
        ("duplicates", f"{stats.duplicates} ({stats.duplicates_removed:,} removed)"),
        ("k-core", stats.kcore),
        ("removed by k-core (users / items / interactions)",
         f"{stats.removed_users:,} / {stats.removed_items:,} / {stats.removed_interactions:,}"),
        ("fingerprint", f"{fingerprint.users:,} users / {fingerprint.items:,} items / "
                        f"{fingerprint.interactions:,} interactions, sha256 {fingerprint.short}"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


def _time_hint(columns: list[str]) -> str:
    if not columns:
        return ""
    names = escape(", ".join(map(repr, columns)))  # a column named "[b]" is no markup
    return f" [yellow]— is {names} the time? then set data.time_col[/yellow]"


def print_stats(stats: DatasetStats, fingerprint: Fingerprint, console: Console | None = None) -> None:
    """Print the statistics and fingerprint of a loaded dataset as one table."""
    (console or Console()).print(stats_table(stats, fingerprint))
