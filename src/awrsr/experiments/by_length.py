"""Where a model gains: test metrics per bucket of history length, for a comparison's runs.

A refinement re-weights attention over a user's history, so whether it helps may depend on how
long that history is. Each finished run stores every test user's rank (test_ranks.npy, users in
split order); the users' history lengths come from the run's dataset, read again once per
comparison and checked against the fingerprint stored with the runs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Sequence

import numpy as np
import yaml

from awrsr.errors import ArtifactError
from awrsr.experiments.stats import mean_std, paired_p_value, relative_improvement
from awrsr.files import csv_text, write_text_atomic

DEFAULT_EDGES = (5, 10, 20, 50, 100, 200)  # bucket upper bounds; the last bucket is "> 200"
LENGTH_METRIC = "ndcg@10"


def bucket_labels(edges: Sequence[int]) -> list[str]:
    """Names of the buckets that ``edges`` (increasing upper bounds) cut lengths into.

    >>> bucket_labels([5, 10])
    ['1-5', '6-10', '>10']
    """
    edges = list(edges)
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


def per_user_metric(ranks: np.ndarray, metric: str) -> np.ndarray:
    """Each user's hr@k, ndcg@k or mrr from the rank of their held-out item (as ranking_metrics).

    >>> per_user_metric(np.array([1, 3, 20]), "ndcg@5").tolist()
    [1.0, 0.5, 0.0]
    """
    ranks = np.asarray(ranks, dtype=np.float64)
    if metric == "mrr":
        return 1.0 / ranks
    name, _, k = metric.partition("@")
    if name not in ("hr", "ndcg") or not k.isdigit():
        raise ValueError(f"metric must be hr@k, ndcg@k or mrr, got {metric!r}")
    hit = ranks <= int(k)
    return hit.astype(np.float64) if name == "hr" else np.where(hit, 1.0 / np.log2(ranks + 1.0), 0.0)


def bucket_means(values: np.ndarray, buckets: np.ndarray, num_buckets: int) -> np.ndarray:
    """Mean of ``values`` in each bucket (nan where a bucket is empty).

    >>> bucket_means(np.array([1.0, 0.0, 0.5]), np.array([0, 0, 2]), 3).tolist()
    [0.5, nan, 0.5]
    """
    sums = np.bincount(buckets, weights=values, minlength=num_buckets)
    counts = np.bincount(buckets, minlength=num_buckets)
    return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def test_history_lengths(run_dir: Path, cache: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """History length of each test user of a finished run, in the order of its test ranks.

    The dataset is read again from the run's config.yaml and must have the fingerprint stored in its
    metrics.json; ``cache`` (by fingerprint) reads each dataset once for many runs."""
    from awrsr.data import data_config_from_dict, leave_one_out, load_sequence_data
    from awrsr.infer.artifact import METRICS_FILE

    metrics = json.loads((run_dir / METRICS_FILE).read_text())
    stored = (metrics.get("dataset") or {}).get("sha256")
    if cache is not None and stored in cache:
        return cache[stored]
    config = yaml.safe_load((run_dir / "config.yaml").read_text()) or {}
    dataset = load_sequence_data(data_config_from_dict(config.get("data") or {}))
    if stored and dataset.fingerprint.sha256 != stored:
        raise ArtifactError(
            f"{run_dir}: the data ({dataset.stats.source}) is not the dataset this run was trained on "
            f"(fingerprint {dataset.fingerprint.sha256[:12]} != stored {stored[:12]})"
        )
    lengths = leave_one_out(dataset).test.history.lengths
    if cache is not None:
        cache[dataset.fingerprint.sha256] = lengths
    return lengths


def held_out_ranks(run_dir: Path) -> np.ndarray:
    """Each test user's rank of the held-out item: stored by ``awrsr fit``, or (for runs made
    before it was stored) computed again from the saved model on its dataset."""
    from awrsr.workflows import TEST_RANKS_FILE, rank_artifact

    path = run_dir / TEST_RANKS_FILE
    if path.is_file():
        return np.load(path)
    return rank_artifact(run_dir, split="test").ranks.numpy()


def length_table(
    records: list[dict], references: dict[str, str], base: str, edges: Sequence[int] = DEFAULT_EDGES,
    metric: str = LENGTH_METRIC,
) -> tuple[list[str], list[int], dict[str, list[dict[str, float]]]]:
    """(bucket labels, users per bucket, per variant a cell per bucket). A cell holds the mean and
    std over seeds of the bucket's ``metric``, and, against the variant's reference, the
    improvement in % and the paired p-value over the shared seeds, like the main table."""
    labels, cache = bucket_labels(edges), {}
    by_variant: dict[str, dict[int, list[float]]] = {}
    counts = None
    for r in records:
        run_dir = Path(r["run_dir"])
        lengths = test_history_lengths(run_dir, cache)
        ranks = held_out_ranks(run_dir)
        if len(ranks) != len(lengths):
            raise ArtifactError(f"{run_dir}: {len(ranks)} test ranks for {len(lengths)} test users")
        buckets = assign_buckets(lengths, edges)
        run_counts = np.bincount(buckets, minlength=len(labels))
        if counts is None:
            counts = run_counts
        elif not np.array_equal(counts, run_counts):
            raise ArtifactError(f"{run_dir}: its test users differ from the other runs' (not one dataset)")
        by_variant.setdefault(r["variant"], {})[r["seed"]] = bucket_means(per_user_metric(ranks, metric), buckets, len(labels)).tolist()
    table: dict[str, list[dict[str, float]]] = {}
    for variant, runs in by_variant.items():
        reference = references.get(variant, base)
        base_runs = by_variant.get(reference, {})
        seeds = sorted(set(runs) & set(base_runs)) if variant != reference else []
        cells = []
        for b in range(len(labels)):
            if not counts[b]:  # no test user has a history of this length
                cells.append({"mean": math.nan, "std": math.nan, "improvement": math.nan, "p_value": math.nan, "runs": 0, "pairs": 0})
                continue
            mean, std = mean_std([runs[s][b] for s in sorted(runs)])
            cell = {"mean": mean, "std": std, "improvement": math.nan, "p_value": math.nan, "runs": len(runs), "pairs": len(seeds)}
            if seeds:
                shared, base_shared = [runs[s][b] for s in seeds], [base_runs[s][b] for s in seeds]
                cell["improvement"] = relative_improvement(mean_std(shared)[0], mean_std(base_shared)[0])
                cell["p_value"] = paired_p_value(shared, base_shared)
            cells.append(cell)
        table[variant] = cells
    return labels, [int(c) for c in counts], table


def write_length_tables(
    records: list[dict], references: dict[str, str], base: str, output_dir: Path,
    edges: Sequence[int] = DEFAULT_EDGES, metric: str = LENGTH_METRIC,
) -> Path:
    """by_length.md and by_length.csv in ``output_dir``: the comparison's ``metric`` per bucket of
    test history length. Buckets with no user are left out."""
    labels, counts, table = length_table(records, references, base, edges, metric)
    shown = [b for b, c in enumerate(counts) if c]
    rows = [["variant", "metric", "bucket", "users", "mean", "std", "improvement_pct", "p_value", "runs", "pairs"]]
    for variant, cells in table.items():
        rows += [[variant, metric, labels[b], counts[b], *(cells[b][k] for k in ("mean", "std", "improvement", "p_value", "runs", "pairs"))]
                 for b in shown]
    write_text_atomic(output_dir / "by_length.csv", csv_text(rows))
    name = metric.upper().replace("HR@", "Recall@")
    lines = [
        f"Test {name} by the length of the user's history (items before the test target; the model "
        "sees at most its last max_len), mean over seeds; improvement over the variant's reference "
        "in %, paired t-test p-value over seeds.",
        "",
        "| model | " + " | ".join(f"{labels[b]} ({counts[b]:,} user{'s' if counts[b] > 1 else ''})" for b in shown) + " | seeds |",
        "|---" * (len(shown) + 2) + "|",
    ]
    for variant, cells in table.items():
        texts = []
        for b in shown:
            c = cells[b]
            text = f"{c['mean']:.4f}"
            if c["pairs"]:
                gain = "n/a" if math.isnan(c["improvement"]) else f"{c['improvement']:+.1f}%"  # a base of 0
                text += f" ({gain}, p={c['p_value']:.2f})" if c["pairs"] > 1 else f" ({gain})"
            texts.append(text)
        runs, pairs = cells[shown[0]]["runs"], cells[shown[0]]["pairs"]
        seeds = str(runs) if not pairs or pairs == runs else f"{runs} ({pairs} paired)"
        reference = references.get(variant, base)
        label = f"{variant} (vs {reference})" if reference not in (variant, base) else variant
        lines.append(f"| {label} | " + " | ".join(texts) + f" | {seeds} |")
    path = output_dir / "by_length.md"
    write_text_atomic(path, "\n".join(lines) + "\n")
    return path
