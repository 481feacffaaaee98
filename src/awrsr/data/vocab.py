"""Item vocabulary: original item ids <-> contiguous indices 1..I (0 is padding)."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from awrsr.errors import DataError, UnknownItemError
from awrsr.files import read_text, write_text_atomic


#: A whole number written with a decimal point, ``7.0`` or ``7.00`` (what pandas writes for an
#: integer column with gaps), its integer in group 1: the CSV readers take it for ``7``.
WHOLE_FLOAT_TEXT = r"(-?(?:0|[1-9][0-9]*))\.0+"
_WHOLE_FLOAT = re.compile(WHOLE_FLOAT_TEXT)


def _id_type(ids: list) -> str:
    # bool is an int subclass but never a sensible id; treat it like any other non-int.
    return "int" if all(isinstance(x, int) and not isinstance(x, bool) for x in ids) else "str"


class Vocabulary:
    """Maps original item ids to indices: ``ids[i]`` <-> index ``i + 1``; index 0 is padding.

    Lookups go through ``str(id)``, so ``"1193"`` and ``1193`` find the same item of an int vocabulary.

    >>> vocab = Vocabulary([1193, 661, 914])
    >>> vocab.encode(["661", 914]).tolist(), vocab.decode([1, 3]), len(vocab)
    ([2, 3], [1193, 914], 3)
    """

    def __init__(self, ids: Sequence) -> None:
        ids = [x.item() if isinstance(x, np.generic) else x for x in ids]  # numpy scalars -> Python
        self.id_type = _id_type(ids)
        self._ids = ids if self.id_type == "int" else [str(x) for x in ids]
        self._index = {str(x): i + 1 for i, x in enumerate(self._ids)}
        if len(self._index) != len(self._ids):
            dup = next(k for k, n in Counter(map(str, self._ids)).items() if n > 1)
            raise ValueError(f"duplicate item id {dup!r} in vocabulary")

    @property
    def ids(self) -> list:
        """Original ids in index order (a copy): ``ids[i]`` has index ``i + 1``."""
        return list(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def key(self, item_id: object) -> str:
        """The lookup key of ``item_id``: numpy and 0-d tensor scalars as Python values, and a
        whole float (7.0, what pandas makes of an integer column with gaps), or the text of one
        ("7.0", as a CSV file or ``--history`` writes it), as an int where the ids are ints, as
        the training data's readers take it.

        >>> vocab = Vocabulary([7, 12])
        >>> vocab.key(7.0), vocab.key("12.00"), vocab.key("12.5"), Vocabulary(["7.0"]).key("7.0")
        ('7', '12', '12.5', '7.0')
        """
        if isinstance(item_id, np.generic) or (getattr(item_id, "ndim", None) == 0 and hasattr(item_id, "item")):
            item_id = item_id.item()
        if self.id_type == "int":
            if isinstance(item_id, float) and item_id.is_integer():
                item_id = int(item_id)
            elif isinstance(item_id, str) and (whole := _WHOLE_FLOAT.fullmatch(item_id)):
                return whole.group(1)
        return str(item_id)

    def __contains__(self, item_id: object) -> bool:
        return self.key(item_id) in self._index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and self.id_type == other.id_type and self._ids == other._ids

    def __repr__(self) -> str:
        return f"Vocabulary({len(self)} {self.id_type} ids)"

    def encode(self, ids: Iterable) -> np.ndarray:
        """Indices (int64) of original ids; raises ``UnknownItemError`` listing every unknown id, as given, in order."""
        if isinstance(ids, (str, bytes)):
            raise TypeError("encode() takes a list of ids, not a single string")
        ids = [x.item() if isinstance(x, np.generic) else x for x in ids]
        out = np.fromiter((self._index.get(self.key(x), 0) for x in ids), dtype=np.int64, count=len(ids))
        if (out == 0).any():
            raise UnknownItemError([x for x, i in zip(ids, out.tolist()) if i == 0])
        return out

    def decode(self, indices: Iterable[int] | np.ndarray) -> list:
        """Original ids (flat list) of indices 1..I; 0 (padding) or out of range raises ``ValueError``."""
        idx = np.asarray(list(indices) if not isinstance(indices, np.ndarray) else indices)
        if idx.size == 0:
            return []
        if not np.issubdtype(idx.dtype, np.integer):
            raise ValueError(f"item indices must be integers, got dtype {idx.dtype}")
        bad = (idx < 1) | (idx > len(self._ids))
        if bad.any():
            raise ValueError(f"item index {int(idx[bad][0])} is not in 1..{len(self._ids)} (0 is padding)")
        return [self._ids[i - 1] for i in idx.reshape(-1).tolist()]

    def to_dict(self) -> dict:
        """JSON-ready form: ``{"ids": [...], "id_type": "int" | "str"}``."""
        return {"ids": list(self._ids), "id_type": self.id_type}

    @classmethod
    def from_dict(cls, data: dict) -> Vocabulary:
        """Inverse of ``to_dict``; a malformed mapping raises ``DataError``."""
        if not isinstance(data, dict) or not isinstance(data.get("ids"), list) or data.get("id_type") not in ("int", "str"):
            raise DataError('a vocabulary must be {"ids": [...], "id_type": "int" or "str"}')
        ids, id_type = data["ids"], data["id_type"]
        ok = (lambda x: isinstance(x, int) and not isinstance(x, bool)) if id_type == "int" else (lambda x: isinstance(x, str))
        wrong = next((x for x in ids if not ok(x)), None)
        if wrong is not None:
            raise DataError(f"vocabulary says id_type {id_type!r} but holds {wrong!r}")
        try:
            vocab = cls(ids)
        except ValueError as err:
            raise DataError(str(err)) from None
        vocab.id_type = id_type  # only matters for an empty vocabulary, whose type cannot be inferred
        return vocab

    def save(self, path: str | Path) -> None:
        """Write the vocabulary as JSON (atomically: a reader never sees half a file)."""
        write_text_atomic(path, json.dumps(self.to_dict()))

    @classmethod
    def load(cls, path: str | Path) -> Vocabulary:
        """Read a vocabulary written by ``save``; missing or garbled files raise ``DataError``."""
        try:
            data = json.loads(read_text(path, DataError))
        except FileNotFoundError:
            raise DataError(f"vocabulary file not found: {path}") from None
        except (OSError, json.JSONDecodeError) as err:
            raise DataError(f"{path}: not a readable vocabulary JSON file ({err})") from None
        try:
            return cls.from_dict(data)
        except DataError as err:
            raise DataError(f"{path}: {err}") from None
