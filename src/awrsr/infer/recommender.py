"""Recommendations for new histories of original item ids, from a saved artifact."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from pathlib import Path
from typing import AbstractSet, Iterable, Literal, Mapping, NamedTuple, Sequence, get_args

import numpy as np
import torch
from torch import nn

from awrsr.config_types import check_flag, is_whole_number
from awrsr.data import Sequences, Vocabulary
from awrsr.data.config import Duplicates
from awrsr.data.preprocess import drop_duplicate_ids
from awrsr.errors import ArtifactError, AwrsrError, ConfigError, UnknownItemError
from awrsr.eval import mask_items_
from awrsr.nn.precision import at_least_float32
from awrsr.infer.artifact import CONFIG_FILE, LoadedArtifact, load_artifact


def resolve_device(device: str | torch.device) -> torch.device:
    """``auto`` is the first CUDA device if torch sees one, else Apple's MPS if there is one, else
    the CPU (Lightning's ``accelerator: auto`` also trains on MPS where there is one); a device
    this machine does not have is a ConfigError, not a failure at the first request."""
    if device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("mps" if torch.backends.mps.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError):
        resolved = None
    if resolved is None or resolved.type not in ("cpu", "cuda", "mps"):
        raise ConfigError(f"device must be cpu, cuda, cuda:N, mps or auto, got {device!r}")
    if resolved.type == "cuda" and (resolved.index or 0) >= torch.cuda.device_count():
        raise ConfigError(f"device {device!r}: torch sees {torch.cuda.device_count()} CUDA device(s) on this machine")
    if resolved.type == "mps" and not torch.backends.mps.is_available():
        raise ConfigError(f"device {device!r}: MPS is not available on this machine")
    return resolved


class Recommendation(NamedTuple):
    item: int | str  # original item id
    score: float


@dataclass
class AttentionMaps:
    """What each attention layer of a model does with one history, for its real positions only.

    ``items`` labels the rows (queries) and columns (keys), oldest first: the history's last
    ``max_len`` item ids, or for BERT4Rec its last ``max_len - 1`` and the "[mask]" it appends to
    ask for the next item.
    ``base[layer, head]`` is A, the attention weights after the masked softmax (n x n; a causal
    model's row i is zero right of column i); ``refined[layer, head]`` is B, the matrix actually
    multiplied into the values (equal to A in a block that is not refined). Rows sum to one.
    ``made_by[layer]`` names what turned that layer's A into B: "refined", or in a calibrated
    AC-TSR model "calibrated" (B is then A_comb, even without a refinement); "none" where B is A."""

    items: list
    base: np.ndarray  # (layers, heads, n, n) float32
    refined: np.ndarray  # (layers, heads, n, n) float32
    made_by: list[str] = field(default_factory=list)

    @property
    def is_refined(self) -> bool:
        """Whether any layer's B differs from its A (by a refinement, or, in a calibrated
        AC-TSR model, by its calibration)."""
        return not np.array_equal(self.base, self.refined)


def _checked_duplicates(value: object, field: str, error: type[AwrsrError]) -> Duplicates:
    """``value`` if it is a duplicates policy; an ``error`` naming ``field`` otherwise (a
    ConfigError for a caller's argument, an ArtifactError for a run's config.yaml)."""
    if value not in get_args(Duplicates):
        raise error(f"{field} must be one of {', '.join(get_args(Duplicates))}, got {value!r}")
    return value


class Recommender:
    """Top-k next items for histories given in the user's own item ids.

    >>> rec = Recommender.load("runs/sasrec-ml-1m")  # doctest: +SKIP
    >>> rec.recommend([1193, 661, 914], k=3)  # doctest: +SKIP
    [Recommendation(item=2355, score=7.1), ...]

    ``duplicates`` is the policy the model's training data was read with (``data.duplicates``;
    ``from_artifact`` takes the run's): every history it scores is read the same way, so that
    ``a a b`` means to a model trained with ``consecutive`` what ``a b`` meant in training.
    """

    def __init__(
        self, model: nn.Module, vocab: Vocabulary, max_len: int, device: str | torch.device = "cpu",
        duplicates: Duplicates = "keep",
    ) -> None:
        self.duplicates = _checked_duplicates(duplicates, "duplicates", ConfigError)
        # a vocabulary or window the model was not built for fails now, not deep in torch at the first call
        items, window = getattr(model, "num_items", None), getattr(model, "max_len", None)
        if items is not None and len(vocab) != items:
            raise ConfigError(f"the vocabulary has {len(vocab):,} ids but the model scores {items:,} items")
        if window is not None and max_len != window:
            raise ConfigError(f"max_len {max_len!r} is not the model's, {window}: its positions fix it")
        self.device = resolve_device(device)
        self.model = model.to(self.device).eval()
        self.vocab = vocab
        self.max_len = max_len

    @classmethod
    def load(cls, path: str | Path, device: str | torch.device = "cpu", max_len: int | None = None) -> "Recommender":
        """The artifact written by ``awrsr fit`` in ``path``, scoring on ``device`` (cpu, cuda,
        cuda:N, mps, or auto: CUDA, else MPS, else the CPU). ``max_len``, if given, must be the
        length the model was trained with (an ArtifactError otherwise): its positions fix it."""
        return cls.from_artifact(load_artifact(path, max_len=max_len), device=device)

    @classmethod
    def from_artifact(cls, artifact: LoadedArtifact, device: str | torch.device = "cpu") -> "Recommender":
        """The recommender of an artifact already loaded (``awrsr.infer.load_artifact``), reading
        histories with the duplicates policy the run was trained with."""
        data = artifact.config.get("data")
        duplicates = data.get("duplicates", "keep") if isinstance(data, dict) else "keep"
        duplicates = _checked_duplicates(duplicates, f"{artifact.directory / CONFIG_FILE}: data.duplicates", ArtifactError)
        return cls(artifact.model, artifact.vocab, artifact.model_config.max_len, device=device, duplicates=duplicates)

    def recommend(
        self, history: Sequence[int | str], k: int = 10, exclude_seen: bool = True,
        unknown: Literal["error", "ignore"] = "error", exclude: Iterable[int | str] = (),
    ) -> list[Recommendation]:
        """The k best next items after ``history`` (oldest first), best first. An id the model
        does not know is an error, or with ``unknown="ignore"`` left out (a history left with
        none is still an error: there is nothing to recommend from)."""
        history = as_history(history)
        if unknown == "ignore" and len(history) and not any(x in self.vocab for x in history):
            raise ConfigError(f"no known item id to recommend from ({UnknownItemError(list(history))})")
        return self.recommend_many([history], k=k, exclude_seen=exclude_seen, unknown=unknown, exclude=exclude)[0]

    @torch.no_grad()
    def recommend_many(
        self, histories: Sequence[Sequence[int | str]], k: int = 10, exclude_seen: bool = True,
        unknown: Literal["error", "ignore"] = "error", exclude: Iterable[int | str] = (),
    ) -> list[list[Recommendation]]:
        """Top-k for each history. An error names the history it is about (``histories[i]: ...``)
        when there are several.

        An id the model does not know is an error, or with ``unknown="ignore"`` left out; a
        history left with no known id then gets no recommendations (``[]``), so that one such
        user does not fail the others (as batch scoring of a log skips them; a whole log with no
        known id is an error there, being the wrong file or the wrong model). ``exclude`` lists
        item ids never to recommend (sold out, blocked) to any of the histories; ids the model
        does not know are skipped, since it cannot recommend them anyway."""
        check_unknown(unknown)
        if isinstance(histories, (str, bytes)) or not isinstance(histories, Iterable):
            raise ConfigError(f"histories is a list of histories, each a list of item ids; got {type(histories).__name__}")
        exclude = check_exclude(exclude)  # also when no history is left to score
        check_k(k)
        check_flag(exclude_seen, "exclude_seen")
        histories = [
            drop_duplicate_ids(as_history(history, f"histories[{i}]"), self.duplicates, self.vocab.key)
            for i, history in enumerate(histories)
        ]
        encoded, kept = [], []
        for i, history in enumerate(histories):
            where = f"histories[{i}]: " if len(histories) > 1 else ""
            if not len(history):
                raise ConfigError(f"{where}a history needs at least one item id")
            if unknown == "ignore" and not any(x in self.vocab for x in history):
                continue
            encoded.append(self._encode(history, unknown, where))
            kept.append(i)
        results: list[list[Recommendation]] = [[] for _ in histories]
        if not kept:
            return results
        lengths = np.array([len(e) for e in encoded], dtype=np.int64)
        rows = Sequences(np.concatenate([[0], np.cumsum(lengths)]), np.concatenate(encoded))
        cols, scores = self.top_k(rows, k, exclude_seen, exclude)
        for i, row_cols, row_scores in zip(kept, cols.tolist(), scores.tolist()):
            valid = [(c, s) for c, s in zip(row_cols, row_scores) if s != float("-inf")]
            items = self.vocab.decode([c + 1 for c, _ in valid]) if valid else []
            results[i] = [Recommendation(item, score) for item, (_, score) in zip(items, valid)]
        return results

    @torch.no_grad()
    def attention(self, history: Sequence[int | str], unknown: Literal["error", "ignore"] = "error") -> AttentionMaps:
        """The base attention A and refined weights B of every layer and head while the model
        reads ``history`` (oldest first) to predict its next item (see ``AttentionMaps``). Only
        the last ``max_len`` items are read (BERT4Rec: ``max_len - 1`` and its [mask]); unknown
        ids as in ``recommend``."""
        check_unknown(unknown)
        history = drop_duplicate_ids(as_history(history), self.duplicates, self.vocab.key)
        if not len(history):
            raise ConfigError("a history needs at least one item id")
        if unknown == "ignore" and not any(x in self.vocab for x in history):
            raise ConfigError(f"no known item id to read ({UnknownItemError(list(history))})")
        encoded = self._encode(history, unknown)
        padded = Sequences(np.array([0, len(encoded)]), encoded).to_padded(self.max_len)
        inputs = self.model.next_inputs(torch.from_numpy(padded).to(self.device))
        _, weights = self.model.encode(inputs, need_weights=True)
        real = inputs[0] > 0
        n = int(real.sum())
        read = inputs[0, -n:].tolist()
        items = [self.vocab.decode([i])[0] if 1 <= i <= len(self.vocab) else "[mask]" for i in read]
        base = torch.stack([w.base[0, :, -n:, -n:] for w in weights]).float().cpu().numpy()
        refined = torch.stack([w.refined[0, :, -n:, -n:] for w in weights]).float().cpu().numpy()
        made_by = ["none" if np.array_equal(a, b) else w.made_by for w, a, b in zip(weights, base, refined)]
        return AttentionMaps(items, base, refined, made_by)

    @torch.no_grad()
    def top_k(
        self, histories: Sequences, k: int, exclude_seen: bool = True, exclude: Iterable[int | str] = (),
        batch_size: int = 1024,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(rows, k) score columns and scores of each history's best items (model indices), best
        first; -inf marks a slot with no item left (every item seen or excluded). Histories are
        scored in batches of similar length, so that each batch runs the model on the narrowest
        window that holds it."""
        if not isinstance(histories, Sequences):
            raise ConfigError(f"top_k takes histories as awrsr.data.Sequences (model indices), got "
                              f"{type(histories).__name__}; lists of item ids go to recommend_many")
        exclude = check_exclude(exclude)
        check_k(k)
        check_flag(exclude_seen, "exclude_seen")
        if not is_whole_number(batch_size) or batch_size < 1:
            raise ConfigError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        outside = (histories.items < 1) | (histories.items > len(self.vocab))
        if outside.any():  # 0 would mask the last item's column (-1), and past the end torch fails
            raise ConfigError(f"top_k's histories hold item index {int(histories.items[outside][0])}, outside the "
                              f"model's 1..{len(self.vocab)}; give ids to recommend_many, indices to top_k")
        excluded = [x for x in exclude if x in self.vocab]
        excluded_cols = torch.from_numpy(self.vocab.encode(excluded) - 1).to(self.device) if excluded else None
        k = min(k, len(self.vocab))
        # Each batch holds a few (rows x items) float32 score matrices: keep one to about 256 MB on
        # a GPU, and to 16 MB on the CPU, where larger ones are fresh memory from the kernel every
        # batch, and zeroing it cost about as much as the scoring (98k items, 20k users: 0.5 s of
        # system time in batches of 64 rows, 11 s in 684). The default 1024 rows up to 4k items.
        budget = 2**22 if self.device.type == "cpu" else 2**26
        batch_size = max(1, min(batch_size, budget // len(self.vocab)))
        order = np.argsort(histories.lengths, kind="stable")
        cols = np.empty((len(histories), k), dtype=np.int64)
        scores = np.empty((len(histories), k), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            batch = histories.select(rows)
            windows = torch.from_numpy(batch.to_padded(self.max_len)).to(self.device)
            batch_scores = at_least_float32(self.model.score_next(windows))
            if exclude_seen or excluded_cols is not None:
                # masked in a copy: scores may be the model's own storage (popularity's expanded counts)
                batch_scores = batch_scores.clone()
            if exclude_seen:
                seen_rows = torch.from_numpy(np.repeat(np.arange(len(rows)), batch.lengths)).to(self.device)
                mask_items_(batch_scores, seen_rows, torch.from_numpy(batch.items - 1).to(self.device))
            if excluded_cols is not None:
                batch_scores[:, excluded_cols] = float("-inf")
            best_scores, best_cols = batch_scores.topk(k, dim=1)
            if torch.isnan(best_scores).any() or torch.isposinf(best_scores).any():  # (-inf: filtered items)
                raise FloatingPointError("the model produced non-finite scores; its recommendations are meaningless")
            cols[rows], scores[rows] = best_cols.cpu().numpy(), best_scores.cpu().numpy()
        return cols, scores

    def _encode(self, history: Sequence[int | str], unknown: str, where: str = "") -> np.ndarray:
        try:
            return self.vocab.encode(history)
        except UnknownItemError as err:
            if unknown == "error":
                raise UnknownItemError(err.unknown, where=where) from None
            return self.vocab.encode([x for x in history if x in self.vocab])


def check_unknown(unknown: object) -> None:
    """A ConfigError unless ``unknown`` is "error" or "ignore": a misspelt "error" must not drop
    ids silently."""
    if unknown not in ("error", "ignore"):
        raise ConfigError(f"unknown must be 'error' or 'ignore', got {unknown!r}")


_EXCLUDE_IS = "one list of item ids, left out of every history's recommendations"


def check_exclude(exclude: object) -> list:
    """``exclude`` as a list of item ids (None: none). Unknown ids are skipped, so a container
    whose iteration yields no ids (a single string's characters, a table's column names, a
    mapping's keys, per-history lists) would exclude nothing without a word: a ConfigError."""
    if exclude is None:
        return []
    if isinstance(exclude, (str, bytes)):
        raise ConfigError("exclude takes a list of item ids, not a single string")
    return list(_id_collection(exclude, "exclude", _EXCLUDE_IS, f"exclude is {_EXCLUDE_IS}"))


def _id_collection(ids: object, name: str, is_what: str, note: str) -> Sequence:
    """``ids`` as a sequence of item ids, or a ConfigError naming ``name`` and what it should be
    (``is_what``; ``note`` for an element that is no id): not a table or a mapping (whose
    iteration gives column names or keys), nor a single value, nor an array of other than one
    dimension, nor holding an element that cannot be an id (``first_non_id``)."""
    if hasattr(ids, "columns"):  # a pandas or polars DataFrame: its iteration gives column names (pandas)
        raise ConfigError(f"{name} is {is_what}; got a {type(ids).__name__}: give its item column's values, "
                          "e.g. frame['item'].to_list()")
    if isinstance(ids, (str, bytes, numbers.Number, Mapping)) or not isinstance(ids, Iterable) or getattr(ids, "ndim", 1) == 0:
        raise ConfigError(f"{name} is {is_what}; got {type(ids).__name__} {ids!r:.60}")
    if hasattr(ids, "ndim") and hasattr(ids, "tolist"):  # a numpy array, a torch tensor, a pandas Series
        if ids.ndim != 1:
            raise ConfigError(f"{name} is {is_what}; got a {ids.ndim}-d array")
        if not isinstance(ids, np.ndarray):
            ids = ids.tolist()  # a tensor's elements are 0-d tensors
    elif not isinstance(ids, Sequence):
        ids = list(ids)  # a generator, a set, a polars Series
    wrong = first_non_id(ids)
    if wrong is not None:
        x = ids[wrong]
        what = repr(x) if x is None or isinstance(x, (bool, np.bool_)) else f"a {type(x).__name__}"
        raise ConfigError(f"{name}[{wrong}] is {what}, not an item id ({note})")
    return ids


def first_non_id(items: Sequence) -> int | None:
    """The position of the first element of ``items`` that cannot be an item id (a string or a
    number, numpy's included): a collection (per-history lists), None, or a boolean (True is no
    item 1)."""
    for i, x in enumerate(items):
        if isinstance(x, np.generic):
            x = x.item()
        if isinstance(x, bool) or not isinstance(x, (str, numbers.Number)):
            return i
    return None


def check_k(k: object) -> None:
    """A ConfigError unless ``k`` is an integer >= 1 (True is not 1, "5" is not 5)."""
    if not is_whole_number(k) or k < 1:
        raise ConfigError(f"k must be an integer >= 1, got {k!r}")


def as_history(history: object, name: str = "history") -> Sequence[int | str]:
    """``history`` as a sequence of item ids: a list, tuple or array as it is, any other iterable
    (a generator) as a list; a single string or number is a ConfigError, not a history, and so
    is a set, whose order is not the order the items came in (see ``_id_collection``)."""
    is_what = "a list of item ids, oldest first"
    if isinstance(history, AbstractSet):
        raise ConfigError(f"{name} is {is_what}; got {type(history).__name__} {history!r:.60}, which has no order")
    return _id_collection(history, name, is_what, "several histories go to recommend_many")
