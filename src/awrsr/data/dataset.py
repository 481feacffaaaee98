"""``load_sequence_data``: config -> indexed sequences, vocabulary, statistics and fingerprint."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from awrsr.data.config import DataConfig
from awrsr.data.preprocess import Preprocessed, preprocess
from awrsr.data.readers import read_interactions, unused_time_columns
from awrsr.data.sequences import Sequences
from awrsr.data.synthetic import make_synthetic_interactions
from awrsr.data.tabular import FRAME_SOURCE, is_frame
from awrsr.data.vocab import Vocabulary
from awrsr.errors import ConfigError, DataError

_HASH_VERSION = b"awrsr-sequence-data-v1\0"  # bump if the hashed layout ever changes


@dataclass(frozen=True)
class Fingerprint:
    """Identity of a processed dataset: sizes plus a sha256 over sequences, item ids and user ids.

    The same file with the same options always gives the same hash; any change to the processed
    data (an item, the order, an id) changes it.
    """

    users: int
    items: int
    interactions: int
    sha256: str

    @property
    def short(self) -> str:
        """First 12 hex digits, for tables."""
        return self.sha256[:12]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Fingerprint:
        """Inverse of ``to_dict``; missing or mistyped fields raise ``DataError``."""
        names = [f.name for f in fields(cls)]
        if not isinstance(data, dict) or any(n not in data for n in names):
            raise DataError(f"a dataset fingerprint needs the fields {', '.join(names)}, got {data!r}")
        try:
            return cls(int(data["users"]), int(data["items"]), int(data["interactions"]), str(data["sha256"]))
        except (TypeError, ValueError):
            raise DataError(f"malformed dataset fingerprint {data!r}") from None

    @classmethod
    def compute(cls, offsets: np.ndarray, items: np.ndarray, item_ids: list, user_ids: list) -> Fingerprint:
        """Hash the processed data (fixed little-endian int64 bytes, ids as JSON)."""
        h = hashlib.sha256(_HASH_VERSION)
        sizes = {"users": len(offsets) - 1, "items": len(item_ids), "interactions": len(items)}
        h.update(json.dumps(sizes, sort_keys=True).encode())
        h.update(np.ascontiguousarray(offsets, dtype="<i8").tobytes())
        h.update(np.ascontiguousarray(items, dtype="<i8").tobytes())
        # JSON keeps 1 and "1" apart, so the id types are part of the identity too.
        h.update(json.dumps({"item_ids": item_ids, "user_ids": user_ids}, separators=(",", ":")).encode())
        return cls(sizes["users"], sizes["items"], sizes["interactions"], h.hexdigest())


@dataclass
class DatasetStats:
    """What was loaded and what preprocessing did to it (one ``print_stats`` table)."""

    source: str
    users: int
    items: int
    interactions: int
    min_length: int
    median_length: float
    mean_length: float
    max_length: int
    density: float  # interactions / (users * items)
    kcore: str  # e.g. "5-core users / 5-core items, iterated, stable after 1 round(s) of removal"
    removed_users: int  # by k-core filtering
    removed_items: int
    removed_interactions: int
    duplicates: str  # the duplicates policy
    duplicates_removed: int  # interactions the duplicates policy dropped (before k-core)
    order: str = "file order"  # how each user's interactions were ordered, e.g. "by time (column 'ts'), ties in file order"
    unused_time_columns: list[str] = field(default_factory=list)  # a table's time-like columns left unread

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(eq=False)
class SequenceData:
    """A loaded dataset: one chronological item-index sequence per user, plus ids and provenance."""

    item_vocab: Vocabulary
    user_ids: list  # original user id of user index u
    sequences: Sequences  # row u = user u's item indices (1..num_items), oldest first
    fingerprint: Fingerprint
    stats: DatasetStats

    @property
    def num_users(self) -> int:
        return len(self.sequences)

    @property
    def num_items(self) -> int:
        """Number of real items; indices run 1..num_items and 0 is padding."""
        return len(self.item_vocab)

    def __repr__(self) -> str:
        return f"SequenceData({self.stats.source!r}, users={self.num_users}, items={self.num_items}, interactions={len(self.sequences.items)})"


def _order(config: DataConfig, timed: bool) -> str:
    """How each user's interactions were ordered, in the words of the stats table."""
    if not timed:
        return "file order"
    by = f"column {config.time_col!r}" if config.time_col is not None else "the file's timestamps"
    return f"by time ({by}), ties in file order"


def _stats(source: str, pre: Preprocessed, config: DataConfig, timed: bool, unused_times: list[str]) -> DatasetStats:
    lengths = np.diff(pre.offsets)
    users, items, n = len(pre.user_ids), len(pre.item_ids), len(pre.items)
    return DatasetStats(
        source=source,
        users=users,
        items=items,
        interactions=n,
        min_length=int(lengths.min()),
        median_length=float(np.median(lengths)),
        mean_length=float(lengths.mean()),
        max_length=int(lengths.max()),
        density=n / (users * items),
        kcore=pre.kcore.describe(),
        removed_users=pre.kcore.removed_users,
        removed_items=pre.kcore.removed_items,
        removed_interactions=pre.kcore.removed_interactions,
        duplicates=config.duplicates,
        duplicates_removed=pre.duplicates_removed,
        order=_order(config, timed),
        unused_time_columns=unused_times,
    )


_READING_OPTIONS = ("format", "user_col", "item_col", "time_col", "separator", "has_header")


def check_reading_options_unused(config: DataConfig) -> None:
    """A ConfigError if ``config`` sets how to read a file or frame but names neither: forgetting
    ``path`` (or a frame) must not train on the synthetic data in their place."""
    default = DataConfig()
    set_options = [f"data.{name}" for name in _READING_OPTIONS if getattr(config, name) != getattr(default, name)]
    if set_options:
        raise ConfigError(
            f"{', '.join(set_options)} set, but there is no data.path and no frame to read: give the file "
            "(data.path) or, from Python, the frame (frame=...); without either awrsr uses its synthetic data"
        )


def load_sequence_data(config: DataConfig, frame: Any = None) -> SequenceData:
    """Read, clean and index interactions as ``config`` says.

    The source is ``frame`` (a polars/pandas DataFrame) when given, else ``config.path``, else the
    built-in synthetic dataset ``config.synthetic``.

    >>> from awrsr.data.config import SyntheticConfig
    >>> data = load_sequence_data(DataConfig(synthetic=SyntheticConfig(num_users=20, num_items=10)))
    >>> data.num_users, data.num_items
    (20, 10)
    """
    if not isinstance(config, DataConfig):  # its first attribute lookup would fail, naming no argument
        raise ConfigError(f"load_sequence_data: config must be a DataConfig, got {type(config).__name__}")
    unused_times: list[str] = []
    if frame is not None and not is_frame(frame):  # a path given as frame would be recorded as a frame
        raise ConfigError(
            f"frame takes a polars or pandas DataFrame, got {type(frame).__name__}"
            + ("; a file goes to data.path (--data.path, DataConfig(path=...))" if isinstance(frame, (str, Path)) else "")
        )
    if frame is not None:
        source, interactions = FRAME_SOURCE, read_interactions(frame, config)
        unused_times = unused_time_columns(frame, config)
    elif config.path is not None:
        source, interactions = config.path, read_interactions(config.path, config)
        unused_times = unused_time_columns(config.path, config)
    else:
        check_reading_options_unused(config)
        syn = config.synthetic
        source = "synthetic(" + ", ".join(f"{k}={v}" for k, v in asdict(syn).items()) + ")"
        interactions = make_synthetic_interactions(syn)
    timed = interactions.get_column("timestamp").null_count() < interactions.height
    pre = preprocess(interactions, config)
    return SequenceData(
        item_vocab=Vocabulary(pre.item_ids),
        user_ids=pre.user_ids,
        sequences=Sequences(pre.offsets, pre.items),
        fingerprint=Fingerprint.compute(pre.offsets, pre.items, pre.item_ids, pre.user_ids),
        stats=_stats(source, pre, config, timed, unused_times),
    )
