"""The user-level jobs, composed from the rooms: fit a model, evaluate a saved one.

Each job prints what a user needs (dataset statistics, protocol switches, a results table) and
returns plain records, so the CLI stays a thin layer and Python users get the same behaviour.
"""

from __future__ import annotations

import platform
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import lightning as L
import numpy as np
import polars as pl
import torch
import yaml
from filelock import Timeout
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from torch import Tensor

from awrsr.config_types import check_flag, checked_console
from awrsr.data import (
    DataConfig, Fingerprint, LeaveOneOutSplit, SequenceData, data_config_from_dict, leave_one_out,
    load_sequence_data, print_stats,
)
from awrsr.data.readers import FRAME, format_read_as, ignored_options
from awrsr.data.tabular import FRAME_SOURCE
from awrsr.errors import ArtifactError, AwrsrError, ConfigError, DataError
from awrsr.eval import EvalConfig, FullRankingEvaluator, per_user_metric, ranking_metrics
from awrsr.files import output_directory, read_text, relative_to_cwd, user_path
from awrsr.infer.artifact import (
    CONFIG_FILE, METRICS_FILE, RECORDED_DATA_FILE, REQUIRED_FILES, LoadedArtifact, load_artifact, recorded_data_file,
    save_artifact, write_metrics,
)
from awrsr.models import ModelConfig, PopularityModel, build_model, check_parts_fit
from awrsr.plugins import plugin_parts
from awrsr.run_directory import (  # noqa: F401  (RUN_LOCK_FILE: where awrsr.workflows always had it)
    RUN_LOCK_FILE, TEST_RANKS_FILE, check_data_outside_run, discard_unwritten_run, first_missing_folder,
    refuse_collection, refuse_foreign_files, refuse_to_replace, run_lock,
)
from awrsr.run_config import config_differences, inert_options
from awrsr.train import TrainConfig, train_model
from awrsr.train.config import MACHINE_FIELDS
from awrsr.train.process_state import SUBNORMALS_MIXED, kept_process_state, subnormal_mode
from awrsr.train.trainer import (
    CHECKPOINT_DIR, HISTORY_FILE, LAST_CHECKPOINT, RUN_RECORD, check_accelerator, check_budget_left, checkpoint_epochs,
)
from awrsr.version import code_version


# What may change when a run is resumed: the stopping budget, the machine, where the data lives.
RESUMABLE_CHANGES = {
    "train": {"max_epochs", "max_time", "patience", "val_every", *MACHINE_FIELDS},
    "data": {"path"},
}


@dataclass
class FitResult:
    """What a fit leaves: its run directory (``Recommender.load(result.run_dir)`` serves it, ``awrsr
    plot`` draws it) and the contents of its metrics.json (``metrics["test"]["ndcg@10"]``, the
    validation scores under ``"valid"``, the popularity baseline's, the selected epoch and timings)."""

    run_dir: Path
    metrics: dict[str, Any]  # what metrics.json holds

    @property
    def history(self) -> pl.DataFrame:
        """One row per epoch: training loss and gradient norm, validation metrics, seconds."""
        return pl.read_csv(self.run_dir / HISTORY_FILE, glob=False)


def metric_names(ks: list[int]) -> list[str]:
    return [f"{m}@{k}" for m in ("hr", "ndcg") for k in ks] + ["mrr"]


def machine_record(device: torch.device) -> dict[str, Any]:
    """Where a run trained, for its metrics.json: timings and GPU-vs-CPU numerics differ between
    machines, so a table that mixes them must be able to tell its runs apart."""
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else device.type
    return {
        "device": name,
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "subnormals": subnormal_mode(),  # train.flush_denormal as it held on every CPU thread
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
    }


def protocol_record(evaluation: EvalConfig, split: LeaveOneOutSplit) -> dict[str, Any]:
    return {
        "split": "leave-one-out (last item test, second-last validation)",
        "ranking": "full (every item)",
        "ties": "pessimistic",
        "filter_seen": evaluation.filter_seen,
        "ks": evaluation.ks,
        "valid_users": int(len(split.valid.targets)),
        "test_users": int(len(split.test.targets)),
    }


def print_results(console: Console, columns: dict[str, dict[str, float]], ks: list[int], title: str) -> None:
    """``title`` on its own line, then a table with one row per metric and one column per result
    (fits an 80-column terminal; a title inside the table would wrap to the table's width)."""
    console.print(title, markup=False, soft_wrap=True)
    table = Table()
    table.add_column("metric")
    for label in columns:
        table.add_column(label, justify="right")
    for name in metric_names(ks):
        table.add_row(name.upper(), *(f"{metrics[name]:.4f}" for metrics in columns.values()))
    console.print(table)


def fit(
    data: DataConfig, model: ModelConfig, train: TrainConfig, evaluation: EvalConfig,
    output_dir: str | Path, frame: Any = None, console: Console | None = None, resume: bool = False,
    overwrite: bool = False, print_test: bool = True, epoch_lines: bool = False,
) -> FitResult:
    """Train ``model`` on ``data``, select by validation, score the test set once, save the artifact.

    The interactions come from ``frame`` (a polars or pandas DataFrame, whose columns ``data``
    names; ``data.path`` must then be unset) when given, else from ``data.path``, else from the
    built-in synthetic data. ``output_dir`` becomes the run directory: the saved model, its
    config.yaml, metrics.json, per-epoch history and test ranks (``load_artifact`` and
    ``Recommender.load`` read it). ``console`` (a rich Console) receives the statistics, progress
    and results; ``Console(quiet=True)`` silences them.

    ``resume`` continues the run in ``output_dir`` from its last checkpoint; the configuration must be
    the one it was started with, except for the fields in ``RESUMABLE_CHANGES``. A directory that
    holds a finished or interrupted run is refused unless ``overwrite``, so that a repeated command
    never deletes a model before its replacement exists. Two processes never train into one
    directory: the second gets a clear error. ``print_test=False`` prints validation metrics only
    (tuning selects on validation; the test scores are still recorded in metrics.json).
    ``epoch_lines=True`` shows progress as one line per epoch on a terminal too, where
    ``train.progress_bar`` would draw a bar (compare and tune: a record of each of their runs). Like
    Lightning's ``seed_everything``, it seeds Python's, numpy's and torch's global generators with
    ``train.seed``; the rest of what training sets in the process (``train.num_threads``,
    ``train.flush_denormal`` on the calling thread, torch's deterministic mode, Lightning's
    environment variables, log levels and warning filters) holds for the fit only
    (``kept_process_state``; torch's CPU threads the fit started, and the caller uses, keep its
    flushing of subnormals, and the calling thread with them)."""
    for name, part, kind in (("data", data, DataConfig), ("model", model, ModelConfig), ("train", train, TrainConfig),
                             ("evaluation", evaluation, EvalConfig)):
        if not isinstance(part, kind):  # fit(ModelConfig(), DataConfig(), ...) would fail in an attribute lookup
            raise ConfigError(f"fit: {name} must be a {kind.__name__}, got {type(part).__name__}")
    # Checked again, as built: a field set after construction (t.lr = np.float64(1e-3) in a grid
    # loop, t.batch_size = 0) skipped the checks, and failed deep inside torch or YAML.
    data, model, train, evaluation = (replace(part) for part in (data, model, train, evaluation))
    data = replace(data, synthetic=replace(data.synthetic))  # a section of its own, which replace(data) keeps as it is
    for name, flag in (("resume", resume), ("overwrite", overwrite), ("print_test", print_test), ("epoch_lines", epoch_lines)):
        check_flag(flag, f"fit: {name}")  # the string "false" is true: overwrite="false" deleted a run
    console = checked_console(console, "fit")
    if resume and overwrite:  # one keeps the run in output_dir, the other deletes it
        raise ConfigError("fit: give resume (continue the run in output_dir) or overwrite (start it afresh), not both")
    if frame is not None and data.path is not None:  # the run's record would name a file it never read
        raise ConfigError(f"fit: give data.path ({data.path}) or a frame, not both")
    unread = ignored_options(data, FRAME)
    if frame is not None and unread:  # recorded in config.yaml, they would read a file given later to evaluate it
        raise ConfigError(f"fit: {', '.join(unread)} set, but a frame has no file format, separator or header line: remove them")
    run_dir = output_directory(output_dir, needs="a run needs a directory")
    check_data_outside_run(data, run_dir)  # even with overwrite: the data must survive the run
    refuse_collection(run_dir)
    if not resume and not overwrite:
        refuse_foreign_files(run_dir)  # before the lock, which would leave its file in the user's folder
    created = first_missing_folder(run_dir)
    lock = run_lock(run_dir)
    try:
        lock.acquire(blocking=False)
    except Timeout:
        raise ArtifactError(
            f"{run_dir}: another process is training into this directory; wait for it or choose another output_dir"
        ) from None
    finished = False
    try:
        if not resume and not overwrite:
            refuse_to_replace(run_dir)
        # train.num_threads, deterministic mode, Lightning's settings: for this fit, not the caller's process after it
        with kept_process_state():
            result = _fit(data, model, train, evaluation, run_dir, frame, console, resume, print_test, epoch_lines)
        finished = True
        return result
    finally:
        lock.release()
        if not finished:
            discard_unwritten_run(run_dir, created)


def _fit(
    data: DataConfig, model: ModelConfig, train: TrainConfig, evaluation: EvalConfig,
    run_dir: Path, frame: Any, console: Console, resume: bool, print_test: bool = True, epoch_lines: bool = False,
) -> FitResult:
    valid_names = metric_names(evaluation.ks)
    if train.monitor not in valid_names:
        raise ConfigError(
            f"train.monitor {train.monitor!r} is not computed; with evaluation.ks={evaluation.ks} "
            f"it must be one of {', '.join(valid_names)}"
        )
    check_accelerator(train.accelerator)  # before the data is read, not after
    version = code_version()  # now, before hours of training: the code this process runs
    if train.num_threads:
        torch.set_num_threads(train.num_threads)
    # Each thread keeps the mode it started with, so this reaches torch's CPU threads only if they
    # start after it, as they do in a new awrsr process; said otherwise.
    torch.set_flush_denormal(train.flush_denormal)
    if subnormal_mode() == SUBNORMALS_MIXED:
        console.print(
            f"[yellow]note: train.flush_denormal={str(train.flush_denormal).lower()} holds on only some of torch's "
            "CPU threads, started before it was set; for all of them call torch.set_flush_denormal "
            "before torch's first parallel operation[/yellow]"
        )
    parts = {"data": data, "model": model, "train": train, "evaluation": evaluation}
    config = {name: asdict(part) for name, part in parts.items()}
    started_with = check_resumable(run_dir, parts) if resume else None
    # Continuing a finished run needs a larger budget; an unfinished one that trained all its
    # epochs (stopped while being evaluated or saved) goes straight to its evaluation.
    if resume and (run_dir / METRICS_FILE).is_file():
        check_budget_left(run_dir / CHECKPOINT_DIR / LAST_CHECKPOINT, train)
    if started_with is not None:
        _note_machine_changes(started_with, train, console)
    check_parts_fit(model, train)  # before the data is read: parts that do not fit together fail now
    for key, reader in inert_options(model, train).items():
        console.print(f"[yellow]note: {key} has no effect here (only {reader} reads it)[/yellow]")

    dataset = load_sequence_data(data, frame=frame)
    print_stats(dataset.stats, dataset.fingerprint, console=console)
    if started_with is not None:
        _check_fingerprint(started_with.get("dataset"), dataset, run_dir)
    split = leave_one_out(dataset)
    if len(split.valid.targets) == 0:
        raise AwrsrError("no user has the 3 interactions leave-one-out needs; nothing to validate on")
    if not (split.train.lengths >= 2).any():
        raise AwrsrError("no user has 2 training interactions, so there is no next-item example to train on")
    console.print(
        f"protocol: leave-one-out, full ranking over {dataset.num_items} items, "
        f"seen items {'filtered' if evaluation.filter_seen else 'NOT filtered'}, pessimistic ties; "
        f"{len(split.valid.targets)} validation / {len(split.test.targets)} test users"
    )

    if train.loss != "ce" and train.effective_num_negatives > dataset.num_items:
        console.print(
            f"[yellow]train.num_negatives ({train.effective_num_negatives}) is more than the {dataset.num_items} items; "
            "negatives are drawn with replacement, so most repeat and cost time for little (loss ce ranks "
            "against every item once)[/yellow]"
        )
    L.seed_everything(train.seed, workers=True, verbose=False)
    net = build_model(model, dataset.num_items)
    run_dir.mkdir(parents=True, exist_ok=True)
    if not resume:  # from here the directory holds a new run; a finished one there must not survive half
        for name in (METRICS_FILE, *REQUIRED_FILES, TEST_RANKS_FILE):  # the "finished" mark first
            (run_dir / name).unlink(missing_ok=True)
    outcome = train_model(
        net, split, train, evaluation, model.max_len, run_dir, resume=resume,
        run_record={**config, "dataset": dataset.fingerprint.to_dict()}, epoch_lines=epoch_lines,
    )

    started = time.perf_counter()
    evaluators = {
        name: FullRankingEvaluator(cases, model.max_len, evaluation.ks, evaluation.filter_seen, evaluation.batch_size)
        for name, cases in (("valid", split.valid), ("test", split.test))
    }
    net.to(outcome.device)  # Lightning hands the model back on the CPU
    ranks = {name: evaluator.ranks(net, outcome.device) for name, evaluator in evaluators.items()}
    results = {name: ranking_metrics(r, evaluation.ks) for name, r in ranks.items()}
    eval_seconds = (time.perf_counter() - started) / 2
    popularity = PopularityModel(split.train.items, dataset.num_items)
    popularity_results = {name: evaluator.evaluate(popularity) for name, evaluator in evaluators.items()}

    metrics = {
        **results,
        "popularity": popularity_results,
        "selection": {
            "monitor": f"valid {train.monitor}",
            "best_epoch": outcome.best_epoch,
            "best_value": outcome.best_value,
            "epochs_trained": outcome.epochs_trained,
            "stopped_by": outcome.stopped_by,
        },
        "time": {
            "train_s": round(outcome.train_seconds, 2),
            "mean_epoch_s": round(sum(outcome.epoch_seconds) / max(len(outcome.epoch_seconds), 1), 3),
            "evaluation_s": round(eval_seconds, 3),
        },
        "protocol": protocol_record(evaluation, split),
        "dataset": {**dataset.fingerprint.to_dict(), "stats": dataset.stats.to_dict(), **data_location(data)},
        "seed": train.seed,
        "code_version": version,
        "plugins": plugin_parts(model, train),  # {"model.refine": "distribution version"}: parts from other packages
        "machine": machine_record(outcome.device),
    }
    # the weights' copy says whether the data was a frame (its config has no path to read again)
    frame_source = {"source": FRAME_SOURCE} if dataset.stats.source == FRAME_SOURCE else {}
    save_artifact(run_dir, config=config, vocab=dataset.item_vocab, model=net,
                  trained_on={**dataset.fingerprint.to_dict(), **frame_source})
    # Per-user test ranks, for NDCG@N curves and per-user comparisons (users in split order).
    np.save(run_dir / TEST_RANKS_FILE, ranks["test"].numpy().astype(np.int32))
    write_metrics(run_dir, metrics)  # last: other processes take metrics.json as "finished"
    shown = {f"valid (epoch {outcome.best_epoch})": results["valid"]}
    if print_test:
        shown.update({"test": results["test"], "popularity (test)": popularity_results["test"]})
    else:
        shown["popularity (valid)"] = popularity_results["valid"]
    print_results(console, shown, evaluation.ks, title=f"{model.label} on {dataset.stats.source}")
    epochs = outcome.epochs_trained
    console.print(f"saved to {escape(str(run_dir))}  ({epochs} epoch{'s' * (epochs != 1)}, {outcome.train_seconds:.1f} s)")
    return FitResult(run_dir, metrics)


def _note_machine_changes(started_with: dict[str, Any], train: TrainConfig, console: Console) -> None:
    """A resume may change the machine's options, at the price of exactness: floating-point sums
    change with the thread count and the device, tiny values with the flushing of subnormals, so
    the run may end a little apart from an uninterrupted one. Said here, since metrics.json
    records only the last session's machine."""
    before = started_with.get("train") or {}
    changed = [
        f"train.{name} ({before[name]!r} -> {getattr(train, name)!r})"
        for name in MACHINE_FIELDS if name != "progress_bar" and name in before and before[name] != getattr(train, name)
    ]
    if changed:
        console.print(
            f"[yellow]note: {escape(', '.join(changed))} since the run started: it continues, but its numbers "
            "may differ slightly from an uninterrupted run's[/yellow]"
        )


def check_resumable(run_dir: Path, parts: dict[str, Any]) -> dict[str, Any]:
    """The record of the run in ``run_dir`` (its config and data fingerprint), if it may be
    continued with ``parts``: the configuration it was started with, budget aside, and for an
    interrupted run an epoch cap no lower than the epochs it has trained (a finished run's
    budget is check_budget_left's)."""
    stored_path = run_dir / CHECKPOINT_DIR / RUN_RECORD
    if not stored_path.is_file():  # runs started before the record existed
        stored_path = run_dir / CONFIG_FILE
    if not stored_path.is_file():
        raise ArtifactError(f"{run_dir}: no {CHECKPOINT_DIR}/{RUN_RECORD}; not a run that can be resumed")
    try:
        stored = yaml.safe_load(read_text(stored_path, ArtifactError)) or {}
    except yaml.YAMLError as err:
        raise ArtifactError(f"{stored_path}: not valid YAML ({err})") from None
    changed = config_differences(stored, parts, ignore=RESUMABLE_CHANGES)
    if changed:  # the directory's state, not the options, is at odds: not a ConfigError a tune would skip
        raise ArtifactError(
            f"cannot resume {run_dir} with another configuration: {', '.join(changed)}; only "
            + ", ".join(f"{s}.{k}" for s, keys in RESUMABLE_CHANGES.items() for k in sorted(keys))
            + " may change (to train it afresh with these options, delete that directory or use another output_dir)"
        )
    last = run_dir / CHECKPOINT_DIR / LAST_CHECKPOINT
    if not (run_dir / METRICS_FILE).is_file() and last.is_file():  # interrupted (a finished one: check_budget_left)
        done, cap = checkpoint_epochs(last), parts["train"].max_epochs
        if cap < done:  # Lightning would refuse deep inside, or (one below) end at `done` epochs all the same
            raise ArtifactError(
                f"cannot resume {run_dir} with train.max_epochs {cap}: it has trained {done} epochs already; give "
                f"at least {done} ({done} goes straight to its evaluation), or delete that directory or use another "
                "output_dir to train afresh"
            )
    return stored


def evaluate(
    artifact_dir: str | Path, data_path: str | None = None, split: str = "test",
    filter_seen: bool | None = None, console: Console | None = None, by_length: bool = False,
    frame: Any = None,
) -> dict[str, float]:
    """Re-score a saved model on its dataset (re-read from the stored data config, or ``data_path``,
    or ``frame`` for a run trained from a data frame).

    The dataset must have the fingerprint stored with the model, so that a changed file cannot be
    mistaken for the one the model was selected on. ``by_length`` adds the metrics per bucket of
    the users' history length (printed; ``evaluate_by_length`` returns them as a frame).
    """
    check_flag(by_length, "by_length")
    console = checked_console(console, "evaluate")
    scored = rank_artifact(artifact_dir, data_path, split, filter_seen, frame=frame)
    metrics = ranking_metrics(scored.ranks, scored.evaluation.ks)
    title = (f"{scored.artifact.directory} on {scored.source} (seen items "
             f"{'filtered' if scored.evaluation.filter_seen else 'not filtered'})")
    print_results(console, {split: metrics}, scored.evaluation.ks, title=title)
    if by_length:
        print_length_table(console, scored, f"{split} by history length")
    return metrics


def evaluate_by_length(
    artifact_dir: str | Path, data_path: str | None = None, split: str = "test", filter_seen: bool | None = None,
    frame: Any = None, edges: Sequence[int] | None = None,
) -> pl.DataFrame:
    """``evaluate``'s metrics per bucket of the users' history length (items before the held-out
    one), as a frame: one row per non-empty bucket, its user count, and every metric the run
    records. ``edges`` are the buckets' upper bounds (the last bucket is everything longer)."""
    edges = length_edges(edges)  # checked before the model ranks every user
    return metrics_by_length(rank_artifact(artifact_dir, data_path, split, filter_seen, frame=frame), edges)


def length_edges(edges: Sequence[int] | None) -> list[int]:
    """``edges`` (the default ones for None) as a list of ints, or a ConfigError naming them."""
    from awrsr.experiments.by_length import DEFAULT_EDGES, bucket_labels

    edges = DEFAULT_EDGES if edges is None else edges
    try:
        bucket_labels(edges)
    except ValueError as err:
        raise ConfigError(f"edges: {err}") from None
    return [int(e) for e in edges]


def metrics_by_length(scored: "ScoredArtifact", edges: Sequence[int] | None = None) -> pl.DataFrame:
    """The rows of ``evaluate_by_length`` for ranks already computed."""
    from awrsr.experiments.by_length import assign_buckets, bucket_labels, bucket_means

    edges = length_edges(edges)
    labels = bucket_labels(edges)
    buckets = assign_buckets(scored.lengths, edges)
    counts = np.bincount(buckets, minlength=len(labels))
    names = metric_names(scored.evaluation.ks)
    # ranking_metrics per bucket: the same definitions, averaged over the bucket's users
    per_user = {name: per_user_metric(scored.ranks, name).numpy() for name in names}
    present = np.flatnonzero(counts)
    columns = {"history length": [labels[b] for b in present], "users": counts[present].tolist()}
    for name in names:
        columns[name] = bucket_means(per_user[name], buckets, len(labels))[present].tolist()
    return pl.DataFrame(columns)


def print_length_table(console: Console, scored: "ScoredArtifact", title: str) -> None:
    """HR@k, NDCG@k (k: the largest of ``ks`` up to 10) and MRR per bucket of history length."""
    k = max([k for k in scored.evaluation.ks if k <= 10] or [min(scored.evaluation.ks)])
    names = [f"hr@{k}", f"ndcg@{k}", "mrr"]
    frame = metrics_by_length(scored)
    table = Table(title=title)
    for column in ("history length", "users", *[n.upper() for n in names]):
        table.add_column(column, justify="left" if column == "history length" else "right")
    for row in frame.iter_rows(named=True):
        table.add_row(row["history length"], f"{row['users']:,}", *(f"{row[name]:.4f}" for name in names))
    console.print(table)


@dataclass
class ScoredArtifact:
    artifact: LoadedArtifact
    evaluation: EvalConfig
    source: str  # the data file the ranks were computed on
    ranks: Tensor  # (M,) each evaluated user's rank of the held-out item
    lengths: np.ndarray  # (M,) each evaluated user's history length (items before the held-out one)


def rank_artifact(
    artifact_dir: str | Path, data_path: str | None = None, split: str = "test", filter_seen: bool | None = None,
    frame: Any = None,
) -> ScoredArtifact:
    """Each ``split`` user's full-ranking rank of the held-out item under a saved model, on the
    dataset it was trained on (checked by fingerprint and vocabulary)."""
    if split not in ("valid", "test"):
        raise ConfigError(f"split must be 'valid' or 'test', got {split!r}")
    if filter_seen is not None:
        check_flag(filter_seen, "filter_seen")  # "no" would be true, and the metrics the filtered ones
    artifact = load_artifact(artifact_dir)
    try:
        evaluation = EvalConfig(**artifact.config.get("evaluation", {}))
    except (TypeError, ValueError, AwrsrError) as err:
        raise ArtifactError(f"{artifact.directory}/config.yaml: invalid evaluation section ({err})") from None
    if filter_seen is not None:
        evaluation.filter_seen = filter_seen
    dataset = load_run_data(artifact, data_path, frame)
    cases = getattr(leave_one_out(dataset), split)
    evaluator = FullRankingEvaluator(
        cases, artifact.model_config.max_len, evaluation.ks, evaluation.filter_seen, evaluation.batch_size
    )
    return ScoredArtifact(
        artifact, evaluation, str(dataset.stats.source), evaluator.ranks(artifact.model), cases.history.lengths
    )


def load_run_data(artifact: LoadedArtifact, data_path: str | None = None, frame: Any = None) -> SequenceData:
    """The dataset ``artifact`` was trained on, re-read from its stored data config, from
    ``data_path`` (the file moved) or from ``frame``; refused unless its fingerprint and item
    vocabulary are the stored ones, so that other data cannot pass for it."""
    if data_path is not None and frame is not None:
        raise ConfigError("give data_path or frame, not both")
    try:
        data_config = data_config_from_dict(artifact.config.get("data", {}))
    except (TypeError, ValueError, AwrsrError) as err:
        raise ArtifactError(f"{artifact.directory}/config.yaml: invalid data section ({err})") from None
    if data_path is None and frame is None and _trained_from_frame(artifact):
        # its stored config has no path, and the synthetic data it would fall back to is not the data
        raise ConfigError(
            f"{artifact.directory}: this run was trained from a data frame; "
            "pass --data_path (or, from Python, evaluate(..., frame=...)); "
            "plot --figures [curves] draws the learning curves without it"
        )
    if data_path is not None:
        data_config.path = data_path
        _check_moved_file_format(artifact, data_config)
    if data_path is not None or frame is not None or data_config.path is None:
        dataset = load_sequence_data(data_config, frame=frame)
        _check_same_data(artifact, dataset)
        return dataset
    # The stored path: the file recorded at training (absolute) first, then data.path as stored,
    # which is relative to the directory fit ran in when relative. The first that holds the
    # training data (same fingerprint and items) is it.
    candidates = _stored_data_candidates(artifact, data_config.path)
    if not candidates:
        relative = relative_to_cwd(data_config.path)
        where = f" ({relative})" if relative else ""
        recorded = recorded_data_file(artifact.metrics)
        if recorded is not None and recorded != user_path(data_config.path).resolve():
            where += f", nor at {recorded}, where fit read it"
        raise DataError(
            f"{artifact.directory}: its training data {data_config.path} is not there{where}; "
            "if the data moved, give its new path (awrsr evaluate/plot --data_path); "
            "plot --figures [curves] draws the learning curves without it"
        )
    first_error: AwrsrError | None = None
    for candidate in candidates:
        data_config.path = candidate
        try:
            dataset = load_sequence_data(data_config)
            _check_same_data(artifact, dataset)
            return dataset
        except (ArtifactError, DataError) as err:
            first_error = first_error or err
    raise first_error


def _check_moved_file_format(artifact: LoadedArtifact, data: DataConfig) -> None:
    """A DataError if the file given for a run's moved data reads in a format whose fields the
    run's stored options do not fit: check_options_apply would tell to change options that
    evaluate and plot take from the run, not from the command line."""
    fmt = format_read_as(data.path, data.format)
    unread = ignored_options(data, fmt)
    if unread:
        raise DataError(
            f"{data.path}: reads as {fmt}, which has no place for the run's {', '.join(unread)} "
            f"({artifact.directory}/config.yaml); give --data_path (data_path) the file the run trained on, in its format"
        )


def _stored_data_candidates(artifact: LoadedArtifact, stored: str) -> list[str]:
    """Existing files that may hold a run's training data: its recorded absolute path, then its
    stored ``data.path`` (read against the current directory when relative)."""
    resolved = recorded_data_file(artifact.metrics)
    candidates = [str(resolved)] if resolved is not None and resolved.is_file() else []
    here = user_path(stored)
    if here.exists() and not (candidates and here.resolve() == resolved):
        candidates.append(stored)
    return candidates


def _check_same_data(artifact: LoadedArtifact, dataset: SequenceData) -> None:
    """An ArtifactError unless ``dataset`` is the one the run trained on (fingerprint, then items)."""
    try:
        # both records: the weights' copy (an artifact of config, vocabulary and weights has no
        # metrics.json) and metrics.json's, whose numbers are the ones a table would pair with it
        for stored in (artifact.trained_on, (artifact.metrics or {}).get("dataset")):
            _check_fingerprint(stored, dataset, artifact.directory)
    except ArtifactError as err:
        ids = dataset.item_vocab.ids
        # the hint fits only ids that could have been integers once: digits, some with a leading 0
        if (artifact.vocab.id_type == "int" and dataset.item_vocab.id_type == "str"
                and all(i.isdigit() for i in ids) and any(len(i) > 1 and i.startswith("0") for i in ids)):
            raise ArtifactError(
                f"{err}; its item ids are read as text now but were integers at training: since awrsr 0.1.0's "
                "session-12 change, CSV/TSV ids written with leading zeros (007) stay text, so 007 and 7 are two items"
            ) from None
        if artifact.vocab.id_type != dataset.item_vocab.id_type:  # the counts alone would not say what differs
            now, then = (("text", "integers") if dataset.item_vocab.id_type == "str" else ("integers", "text"))
            raise ArtifactError(
                f"{err}; its item ids are {now} here but were {then} at training (a frame read with "
                "dtype=str, say): give the id columns the types they had"
            ) from None
        if ids != artifact.vocab.ids and sorted(map(str, ids)) == sorted(map(str, artifact.vocab.ids)):
            raise ArtifactError(  # items are numbered as they first appear: the same items, met in another order
                f"{err}; it holds the model's items, but its rows come in another order than at training "
                "(a query without ORDER BY, say): items are numbered as they first appear, and rows of equal "
                "times (all of them, without data.time_col) keep their order; give the rows in the order they had"
            ) from None
        raise
    if dataset.item_vocab.to_dict() != artifact.vocab.to_dict():
        raise ArtifactError(f"{artifact.directory}: the dataset's item vocabulary differs from the model's")


def data_location(data: DataConfig) -> dict[str, str]:
    """The training file's absolute path, for metrics.json: a relative ``data.path`` is read
    against the current directory, so evaluating from another directory can still find it."""
    return {} if data.path is None else {RECORDED_DATA_FILE: str(user_path(data.path).resolve())}


def _trained_from_frame(artifact: LoadedArtifact) -> bool:
    """Whether the run's records name a data frame as its data's source: metrics.json's dataset
    statistics, or the weights' copy of the fingerprint (a model kept without metrics.json)."""
    dataset = (artifact.metrics or {}).get("dataset")
    stats = dataset.get("stats") if isinstance(dataset, dict) else None
    in_metrics = isinstance(stats, dict) and stats.get("source") == FRAME_SOURCE
    return in_metrics or (artifact.trained_on or {}).get("source") == FRAME_SOURCE


def _check_fingerprint(stored: dict[str, Any] | None, dataset: SequenceData, directory: Path) -> None:
    """An ArtifactError unless ``dataset`` has the ``stored`` fingerprint (none stored: no check)."""
    if not stored:
        return
    try:
        expected = Fingerprint.from_dict(stored)
    except DataError as err:  # the run's record is at fault, not the data
        raise ArtifactError(f"{directory}: its stored dataset fingerprint is damaged ({err})") from None
    if expected != dataset.fingerprint:
        raise ArtifactError(
            f"{directory}: the data ({dataset.stats.source}) is not the dataset this model was trained on "
            f"(now {_described(dataset.fingerprint)}; trained on {_described(expected)})"
        )


def _described(fingerprint: Fingerprint) -> str:
    """The counts first: they often say what changed (a filter, an appended month)."""
    return (f"{fingerprint.users:,} users, {fingerprint.items:,} items, {fingerprint.interactions:,} interactions, "
            f"fingerprint {fingerprint.sha256[:12]}")
