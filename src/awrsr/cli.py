"""The ``awrsr`` command. Every subcommand is a typed function; jsonargparse turns the signatures
into options and YAML configs (``--config``), and rejects unknown keys.

    awrsr fit --config configs/sasrec/ml-1m.yaml [--data.path FILE] [--train.max_epochs 50]
    awrsr evaluate runs/sasrec-ml-1m [--split valid]
    awrsr recommend runs/sasrec-ml-1m --history 1193,661,914 --k 10
    awrsr stats --data.path ../shared/data/beauty/Beauty.txt
"""

# No `from __future__ import annotations`: jsonargparse reads these annotations at run time.
import json
import sys
from typing import Literal, Optional

from jsonargparse import CLI

from awrsr.data import DataConfig
from awrsr.errors import AwrsrError
from awrsr.eval import EvalConfig
from awrsr.models import ModelConfig
from awrsr.train import TrainConfig


def fit(
    data: DataConfig = DataConfig(),
    model: ModelConfig = ModelConfig(),
    train: TrainConfig = TrainConfig(),
    evaluation: EvalConfig = EvalConfig(),
    output_dir: str = "runs/latest",
) -> None:
    """Train a model, select it on validation, score the test set once and save the artifact.

    Args:
        data: where the interactions come from and how they are cleaned (no path: built-in synthetic data).
        model: the backbone and its parts.
        train: loss, optimiser, early stopping, seed.
        evaluation: metric cut-offs and the seen-item filter.
        output_dir: the run directory; it becomes the saved artifact.
    """
    from awrsr import workflows

    workflows.fit(data, model, train, evaluation, output_dir)


def evaluate(
    artifact: str,
    data_path: Optional[str] = None,
    split: Literal["test", "valid"] = "test",
    filter_seen: Optional[bool] = None,
) -> None:
    """Score a saved model again by full ranking on its dataset.

    Args:
        artifact: the run directory written by ``awrsr fit``.
        data_path: the data file, if it moved since training (it must be the same data).
        split: which held-out item to rank.
        filter_seen: override the stored seen-item filter.
    """
    from awrsr import workflows

    workflows.evaluate(artifact, data_path=data_path, split=split, filter_seen=filter_seen)


def recommend(
    artifact: str,
    history: str = "",
    k: int = 10,
    include_seen: bool = False,
    ignore_unknown: bool = False,
    json_output: bool = False,
) -> None:
    """Top-k next items for a history of original item ids, oldest first.

    Args:
        artifact: the run directory written by ``awrsr fit``.
        history: comma-separated item ids, e.g. 1193,661,914.
        k: how many items to return.
        include_seen: allow items already in the history.
        ignore_unknown: skip ids the model does not know instead of failing.
        json_output: print JSON instead of a table.
    """
    from rich.console import Console
    from rich.table import Table

    from awrsr.infer import Recommender

    items = [token.strip() for token in history.split(",") if token.strip()]
    if not items:
        raise AwrsrError("--history is empty; give comma-separated item ids, e.g. 1193,661,914")
    recs = Recommender.load(artifact).recommend(
        items, k=k, exclude_seen=not include_seen, unknown="ignore" if ignore_unknown else "error"
    )
    if json_output:
        print(json.dumps([{"item": r.item, "score": r.score} for r in recs]))
        return
    table = Table(title=f"top {len(recs)} after {len(items)} item(s)")
    table.add_column("rank", justify="right")
    table.add_column("item")
    table.add_column("score", justify="right")
    for rank, rec in enumerate(recs, 1):
        table.add_row(str(rank), str(rec.item), f"{rec.score:.4f}")
    Console().print(table)


def stats(data: DataConfig = DataConfig()) -> None:
    """Print a dataset's statistics and fingerprint after cleaning.

    Args:
        data: where the interactions come from and how they are cleaned.
    """
    from awrsr.data import load_sequence_data, print_stats

    dataset = load_sequence_data(data)
    print_stats(dataset.stats, dataset.fingerprint)


def main(argv: Optional[list] = None) -> None:
    try:
        CLI([fit, evaluate, recommend, stats], args=argv, as_positional=True)
    except AwrsrError as err:
        print(f"awrsr: error: {err}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
