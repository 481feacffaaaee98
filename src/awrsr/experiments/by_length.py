"""Where a model gains: test metrics per bucket of history length, for a comparison's runs.

A refinement re-weights attention over a user's history, so whether it helps may depend on how
long that history is. Each finished run stores every test user's rank (test_ranks.npy, users in
split order); the users' history lengths come from the run's dataset, read again once per
comparison and checked against the fingerprint stored with the runs.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Iterable
from pathlib import Path
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Sequence

import numpy as np
import yaml

from awrsr.config_types import is_whole_number
from awrsr.errors import ArtifactError
from awrsr.eval.metrics import per_user_metric
from awrsr.experiments.runs import data_config_key, describe_runs, pairs_across_machines
from awrsr.experiments.stats import summary_against
from awrsr.files import csv_text, write_text_atomic

if TYPE_CHECKING:
    from awrsr.data import DataConfig

DEFAULT_EDGES = (5, 10, 20, 50, 100, 200)  # bucket upper bounds; the last bucket is "> 200"
LENGTH_METRIC = "ndcg@10"


def bucket_labels(edges: Sequence[int]) -> list[str]:
    """Names of the buckets that ``edges`` (increasing upper bounds) cut lengths into.

    >>> bucket_labels([5, 10])
    ['1-5', '6-10', '>10']
    """
    if isinstance(edges, (str, bytes, numbers.Number)) or not isinstance(edges, Iterable):
        raise ValueError(f"length edges must be a list of integers, e.g. [5, 10, 20], got {edges!r:.60}")
    edges = list(edges)
    if not all(is_whole_number(e) for e in edges):
        raise ValueError(f"length edges must be whole numbers of items, got {edges}")
    if not edges or any(b <= a for a, b in zip(edges, edges[1:])) or edges[0] < 1:
        raise ValueError(f"length edges must be positive and increasing, got {edges}")
    lows = [1, *[e + 1 for e in edges[:-1]]]
    return [f"{lo}-{hi}" if lo < hi else str(hi) for lo, hi in zip(lows, edges)] + [f">{edges[-1]}"]


def assign_buckets(lengths: np.ndarray, edges: Sequence[int]) -> np.ndarray:
    """Bucket index of each length: the first edge it does not exceed, or len(edges).

    >>> assign_buckets(np.array([1, 5, 6, 10, 11]), [5, 10]).tolist()
    [0, 0, 1, 1, 2]
    """
    return np.searchsorted(np.asarray(edges), lengths, side="left")


def bucket_means(values: np.ndarray, buckets: np.ndarray, num_buckets: int) -> np.ndarray:
    """Mean of ``values`` in each bucket (nan where a bucket is empty).

    >>> bucket_means(np.array([1.0, 0.0, 0.5]), np.array([0, 0, 2]), 3).tolist()
    [0.5, nan, 0.5]
    """
    sums = np.bincount(buckets, weights=values, minlength=num_buckets)
    counts = np.bincount(buckets, minlength=num_buckets)
    return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def held_out_history_lengths(
    run_dir: Path, cache: dict[str, tuple[str, np.ndarray]] | None = None, data: DataConfig | None = None,
) -> tuple[str, np.ndarray]:
    """(dataset fingerprint, history length of each test user) of a finished run, users in the
    order of its test ranks.

    The dataset is ``data`` (a comparison's data config as given now: the file may have moved
    since the run trained), else the one in the run's config.yaml; where its file is not there
    (a relative path, read from another directory), the file the run recorded at training. It
    must have the fingerprint stored in metrics.json; ``cache`` (by data config) reads each
    dataset once for many runs."""
    from awrsr.data import data_config_from_dict, leave_one_out, load_sequence_data
    from awrsr.files import user_path
    from awrsr.infer.artifact import CONFIG_FILE, METRICS_FILE, recorded_data_file

    try:
        metrics = json.loads((run_dir / METRICS_FILE).read_text())
        if data is None:
            config = yaml.safe_load((run_dir / CONFIG_FILE).read_text()) or {}
            data = data_config_from_dict(config.get("data") or {})
        recorded = recorded_data_file(metrics if isinstance(metrics, dict) else None)
        if data.path is not None and not user_path(data.path).exists() and recorded is not None and recorded.is_file():
            data = replace(data, path=str(recorded))
        key = data_config_key(data)
        cache = {} if cache is None else cache
        if key not in cache:
            dataset = load_sequence_data(data)
            cache[key] = (dataset.fingerprint.sha256, leave_one_out(dataset).test.history.lengths)
        fingerprint, lengths = cache[key]
    except (OSError, json.JSONDecodeError, yaml.YAMLError, TypeError, ValueError, AttributeError) as err:
        raise ArtifactError(f"{run_dir}: cannot read its run records or its data ({err})") from None
    stored = (metrics.get("dataset") or {}).get("sha256") if isinstance(metrics, dict) else None
    if stored is not None and stored != fingerprint:  # (runs from before fingerprints have none)
        raise ArtifactError(
            f"{run_dir}: the data is not the dataset this run was trained on "
            f"(fingerprint {fingerprint[:12]} != stored {stored[:12]})"
        )
    return fingerprint, lengths


def held_out_ranks(run_dir: Path, recompute: bool = True) -> np.ndarray | None:
    """Each test user's rank of the held-out item: stored by ``awrsr fit``, or (for runs made
    before it was stored) computed again from the saved model on its dataset, or None with
    ``recompute=False``."""
    from awrsr.workflows import TEST_RANKS_FILE, rank_artifact

    path = run_dir / TEST_RANKS_FILE
    if path.is_file():
        try:
            return np.load(path)
        except (OSError, ValueError, EOFError):  # numpy's message suggests unpickling: never
            raise ArtifactError(f"{path}: cannot read the test ranks (not a .npy array written by awrsr, or damaged)") from None
    return rank_artifact(run_dir, split="test").ranks.numpy() if recompute else None


@dataclass
class LengthRow:
    """One variant's line of the table: users per bucket on its data, and a cell per bucket."""

    fingerprint: str
    counts: list[int]
    cells: list[dict[str, float]] = field(default_factory=list)
    note: str = ""  # why no improvement is shown (other data, no shared seed)
    paired_seeds: list[int] = field(default_factory=list)  # the seeds compared with the reference's


def length_table(
    records: list[dict], references: dict[str, str], base: str, edges: Sequence[int] = DEFAULT_EDGES,
    metric: str = LENGTH_METRIC, recompute_ranks: bool = False,
) -> tuple[list[str], dict[str, LengthRow], list[tuple[str, int, str]]]:
    """(bucket labels, a row per variant, runs left out as (variant, seed, reason)). A cell holds the mean
    and std over seeds of the bucket's ``metric`` and, against the variant's reference (when both
    ran on the same data), the improvement in % and the paired p-value over the shared seeds,
    like the main table. Runs without stored test ranks are left out unless ``recompute_ranks``
    (which runs the saved model on the data again). A record's ``data``, if any, is the data config
    to read its users from (``held_out_history_lengths``)."""
    labels, cache, left_out = bucket_labels(edges), {}, []
    means: dict[str, dict[int, list[float]]] = {}
    rows: dict[str, LengthRow] = {}
    for r in records:
        run_dir = Path(r["run_dir"])
        fingerprint, lengths = held_out_history_lengths(run_dir, cache, r.get("data"))
        ranks = held_out_ranks(run_dir, recompute=recompute_ranks)
        if ranks is None:
            left_out.append((r["variant"], r["seed"], "no stored test ranks"))
            continue
        if len(ranks) != len(lengths):
            raise ArtifactError(f"{run_dir}: {len(ranks)} test ranks for {len(lengths)} test users")
        buckets = assign_buckets(lengths, edges)
        row = rows.setdefault(r["variant"], LengthRow(fingerprint, np.bincount(buckets, minlength=len(labels)).tolist()))
        if row.fingerprint != fingerprint:
            raise ArtifactError(f"{run_dir}: variant {r['variant']!r} has runs on different data")
        means.setdefault(r["variant"], {})[r["seed"]] = bucket_means(per_user_metric(ranks, metric).numpy(), buckets, len(labels)).tolist()
    for variant, row in rows.items():
        runs = means[variant]
        reference = references.get(variant, base)
        seeds: list[int] = []
        if variant != reference and reference in rows:
            if rows[reference].fingerprint != row.fingerprint:
                row.note = f"other data than {reference}"
            else:
                seeds = sorted(set(runs) & set(means[reference]))
                row.note = "" if seeds else f"no seed shared with {reference}"
        elif variant != reference:
            row.note = f"no seed shared with {reference}"
        for b in range(len(labels)):
            cell = {"mean": math.nan, "std": math.nan, "improvement": math.nan, "p_value": math.nan,
                    "runs": len(runs), "pairs": len(seeds)}
            if row.counts[b]:  # else no test user has a history of this length
                summary = summary_against({s: v[b] for s, v in runs.items()}, {s: means[reference][s][b] for s in seeds})
                cell.update(zip(("mean", "std", "improvement", "p_value"), summary))
            row.cells.append(cell)
        row.paired_seeds = seeds
    return labels, rows, left_out


def write_length_tables(
    records: list[dict], references: dict[str, str], base: str, output_dir: Path,
    edges: Sequence[int] = DEFAULT_EDGES, metric: str = LENGTH_METRIC, missing: Sequence[tuple[str, int, str]] = (),
) -> Path:
    """by_length.md and by_length.csv in ``output_dir``: the comparison's ``metric`` per bucket of
    test history length. Buckets with no user are left out; ``missing`` names the comparison's
    unfinished runs (the table then says it is partial)."""
    labels, rows, left_out = length_table(records, references, base, edges, metric)
    if not rows:
        raise ArtifactError(f"no run has stored test ranks ({', '.join(f'{v} seed {s}' for v, s, _ in left_out)})")
    header = rows.get(base) or next(iter(rows.values()))
    shown = [b for b in range(len(labels)) if any(row.counts[b] for row in rows.values())]
    lines = [["variant", "metric", "bucket", "users", "mean", "std", "improvement_pct", "p_value", "runs", "pairs"]]
    for variant, row in rows.items():
        lines += [[variant, metric, labels[b], row.counts[b],
                   *(row.cells[b][k] for k in ("mean", "std", "improvement", "p_value", "runs", "pairs"))]
                  for b in shown if row.counts[b]]
    write_text_atomic(output_dir / "by_length.csv", csv_text(lines))
    name = metric.upper().replace("HR@", "Recall@")
    md = [
        f"Test {name} by the length of the user's history (items before the test target; the model "
        "sees at most its last max_len), mean over seeds; improvement over the variant's reference "
        "in %, paired t-test p-value over the seeds both have.",
        "",
        "| model | " + " | ".join(f"{labels[b]} ({header.counts[b]:,} user{'s' if header.counts[b] != 1 else ''})"
                                for b in shown) + " | seeds |",
        "|---" * (len(shown) + 2) + "|",
    ]
    for variant, row in rows.items():
        texts = []
        for b in shown:
            c = row.cells[b]
            text = "-" if not row.counts[b] else f"{c['mean']:.4f}"
            if row.counts[b] and c["pairs"]:
                gain = "n/a" if math.isnan(c["improvement"]) else f"{c['improvement']:+.1f}%"  # a base of 0
                p = "n/a" if math.isnan(c["p_value"]) else f"{c['p_value']:.2f}"  # no variance of the differences
                text += f" ({gain}, p={p})" if c["pairs"] > 1 else f" ({gain})"
            texts.append(text)
        runs, pairs = row.cells[0]["runs"], row.cells[0]["pairs"]
        seeds = str(runs) if not pairs or pairs == runs else f"{runs} ({pairs} paired)"
        reference = references.get(variant, base)
        label = f"{variant} (vs {reference})" if reference not in (variant, base) else variant
        if row.note:
            label += f" ({row.note})"
        md.append(f"| {label} | " + " | ".join(texts) + f" | {seeds} |")
    other = [v for v, row in rows.items() if row.fingerprint != header.fingerprint]
    if other:
        md += ["", f"Trained on other data than the base, so with other bucket sizes (see by_length.csv): {', '.join(other)}."]
    crossed = pairs_across_machines(records, references, base, {variant: row.paired_seeds for variant, row in rows.items()})
    if crossed:
        md += ["", crossed]
    if missing or left_out:
        md += ["", f"Partial table, without these runs. {describe_runs([*missing, *left_out])} Improvements and p-values "
               "compare only the seeds a variant shares with its reference (paired), so they may differ "
               "from the ratio of the means shown."]
    path = output_dir / "by_length.md"
    write_text_atomic(path, "\n".join(md) + "\n")
    return path
