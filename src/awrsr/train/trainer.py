"""Lightning wiring: early stopping on a validation metric, the best checkpoint, a CSV log."""

from __future__ import annotations

import logging
import pickle
import shutil
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import lightning as L
import polars as pl
import torch
import yaml
from lightning.pytorch.callbacks import Timer
from lightning.pytorch.loggers import CSVLogger
from torch import nn
from torch.utils.data import DataLoader

from awrsr.data import LeaveOneOutSplit
from awrsr.errors import AwrsrError, ConfigError, TrainingDiverged
from awrsr.eval import EvalConfig, build_eval_batches
from awrsr.infer.artifact import check_state_matches
from awrsr.train.batches import training_loader
from awrsr.train.callbacks import (
    EpochLines, EpochProgressBar, EpochTimer, GradientNorm, InterruptNotice, RandomState, RelocatableModelCheckpoint, ResumableEarlyStopping,
)
from awrsr.train.config import TrainConfig
from awrsr.train.process_state import LOGGERS
from awrsr.train.module import SequentialRecommenderModule

LOG_FILE = "metrics.csv"  # Lightning's CSVLogger: train and validation rows apart
HISTORY_FILE = "history.csv"  # one row per epoch, merged from LOG_FILE
CHECKPOINT_DIR = "checkpoints"
LAST_CHECKPOINT = "last.ckpt"  # written at the end of every epoch; what a resumed run continues from
RUN_RECORD = "run.yaml"  # in CHECKPOINT_DIR: the config (and data fingerprint) the checkpoints belong to
EARLIER_LOG = "earlier_metrics.csv"  # in CHECKPOINT_DIR while a resumed run trains


@dataclass
class TrainingOutcome:
    best_epoch: int  # 1-based epoch whose weights were selected
    best_value: float  # its validation monitor value
    epochs_trained: int
    stopped_by: str  # "early stopping", "max_epochs" or "max_time"
    device: torch.device  # where training ran; the final evaluation runs there too
    train_seconds: float
    epoch_seconds: list[float]


def quiet_lightning() -> None:
    """Silence Lightning's hardware banners and tips; our own tables say what matters."""
    for name in LOGGERS:  # the names kept_process_state restores
        logging.getLogger(name).setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", ".*does not have many workers.*")
    warnings.filterwarnings("ignore", ".*LeafSpec.*")
    # Resuming reuses the run directory on purpose; earlier epochs' log rows are kept by train_model.
    warnings.filterwarnings("ignore", ".*directory .* exists and is not empty.*")


def check_accelerator(accelerator: str) -> None:
    """A ConfigError for an accelerator this machine lacks, before any data is read (Lightning
    would fail only when the trainer is built)."""
    cuda, mps = torch.cuda.is_available(), torch.backends.mps.is_available()
    if (accelerator == "cuda" and not cuda) or (accelerator == "mps" and not mps) or (accelerator == "gpu" and not (cuda or mps)):
        raise ConfigError(f"train.accelerator {accelerator!r}: torch finds no such device on this machine; use auto or cpu")


def train_model(
    model: nn.Module, split: LeaveOneOutSplit, train: TrainConfig, evaluation: EvalConfig,
    max_len: int, run_dir: Path, resume: bool = False, run_record: dict | None = None, epoch_lines: bool = False,
) -> TrainingOutcome:
    """Fit ``model`` on ``split.train``, select the epoch with the best validation ``train.monitor``
    and leave those weights in ``model``. The test cases are not touched here.

    With ``resume``, training continues from ``run_dir/checkpoints/last.ckpt`` (weights, optimisers,
    early-stopping and best-checkpoint state, RNG) up to the budget in ``train``; the epoch log keeps
    the earlier epochs up to that checkpoint. A fresh run starts a new checkpoint directory and
    writes ``run_record`` (what the caller wants a resume checked against) into it. With
    ``epoch_lines``, ``train.progress_bar`` prints one line per epoch on a terminal too."""
    quiet_lightning()
    checkpoint_dir = run_dir / CHECKPOINT_DIR
    resume_from = checkpoint_dir / LAST_CHECKPOINT
    if resume:
        keep_earlier_log(run_dir / LOG_FILE, checkpoint_dir / EARLIER_LOG, checkpoint_epochs(resume_from))
    else:
        shutil.rmtree(checkpoint_dir, ignore_errors=True)  # a stale "best" must never be picked up
        for stale in (LOG_FILE, HISTORY_FILE):
            (run_dir / stale).unlink(missing_ok=True)
        checkpoint_dir.mkdir(parents=True)
        if run_record is not None:
            (checkpoint_dir / RUN_RECORD).write_text(yaml.safe_dump(run_record, sort_keys=False))

    monitor = f"val/{train.monitor}"
    checkpoint = RelocatableModelCheckpoint(
        dirpath=checkpoint_dir, filename="best", monitor=monitor, mode="max", save_top_k=1,
        enable_version_counter=False,
    )
    # Saved when an epoch is complete (after its validation), so a resumed run starts a new epoch.
    last = RelocatableModelCheckpoint(
        dirpath=checkpoint_dir, filename=LAST_CHECKPOINT.removesuffix(".ckpt"), save_top_k=1,
        save_on_train_epoch_end=True, enable_version_counter=False,
    )
    timer = EpochTimer()
    early_stopping = ResumableEarlyStopping(monitor=monitor, mode="max", patience=train.patience)
    notice = InterruptNotice(resume_from)
    callbacks = [checkpoint, last, timer, GradientNorm(), early_stopping, RandomState(), notice]
    # The budget is checked when an epoch ends (Lightning's own max_time checks after every batch):
    # a run may overrun it by one epoch but never stops inside one, which it would then count as
    # complete, validate and checkpoint, so that a resumed run skipped the rest of that epoch.
    # Present without a budget too, so that a checkpoint's timer state always has a home (Lightning
    # warns on resume otherwise) and a budget set on resume counts the earlier sessions' time.
    callbacks.append(Timer(duration=train.max_time, interval="epoch"))
    # A bar on a terminal; in a log file (stdout, where Lightning's bar writes, redirected) one
    # line per epoch instead, since a bar's carriage returns and escape codes would fill it.
    show_bar = train.progress_bar and not epoch_lines and sys.stdout.isatty()
    if show_bar:
        callbacks.append(EpochProgressBar())
    elif train.progress_bar:
        callbacks.append(EpochLines(monitor, early_stopping))
    trainer = L.Trainer(
        max_epochs=train.max_epochs,
        accelerator=train.accelerator,
        devices=1,
        # Written through at every log call (once per epoch), so an interrupted run loses no row
        # but one: Lightning saves last.ckpt just before it logs the epoch's training values, and a
        # kill in those milliseconds leaves that epoch's train/loss, grad norm and time empty for good
        # (weights and metrics are unaffected; session 49's probe; docs/design.md, "Resuming").
        logger=CSVLogger(save_dir=run_dir, name="", version="", flush_logs_every_n_steps=1),
        callbacks=callbacks,
        check_val_every_n_epoch=train.val_every,
        num_sanity_val_steps=0,
        enable_progress_bar=show_bar,
        enable_model_summary=False,
        log_every_n_steps=1,
        deterministic="warn",
        precision=train.precision,
        default_root_dir=run_dir,
    )
    # Deterministic mode also fills every new uninitialised tensor with NaN, a debugging aid that
    # costs 2-4% of a CPU step (about 300 fills) and changes no result; the algorithms stay deterministic.
    torch.utils.deterministic.fill_uninitialized_memory = False
    module = SequentialRecommenderModule(
        model, loss=train.loss, num_negatives=train.effective_num_negatives, lr=train.lr,
        weight_decay=train.weight_decay, ks=evaluation.ks, pvn_weight=train.pvn_weight,
        adversarial_alpha=train.adversarial_alpha,
    )
    if resume:
        check_checkpoint_fits(resume_from, module)
    val_batches = build_eval_batches(split.valid, max_len, evaluation.batch_size, evaluation.filter_seen)
    try:
        trainer.fit(
            module,
            train_dataloaders=training_loader(
                split.train, max_len, train.batch_size, train.seed, group_by_length=train.group_by_length
            ),
            # Its own generator: a DataLoader draws a seed for each new iterator, and from the global
            # generator that would shift later epochs' negatives and dropout by validating at all.
            val_dataloaders=DataLoader(val_batches, batch_size=None, generator=torch.Generator()),
            ckpt_path=resume_from if resume else None,
        )
    except FloatingPointError as err:  # raised by validation when the weights have blown up
        raise TrainingDiverged(
            f"training diverged in epoch {trainer.current_epoch + 1} ({err}); start afresh with a lower "
            f"train.lr (now {train.lr}) and --overwrite true (or another output_dir), or check the data"
        ) from None
    except SystemExit:  # Lightning's way out of Ctrl-C (exit 1) and SIGTERM (no code: status 0, as if finished)
        if notice.exit_status is None:
            raise
        raise SystemExit(notice.exit_status) from None
    if resume:  # Lightning's logger started the file afresh
        merge_logs(checkpoint_dir / EARLIER_LOG, run_dir / LOG_FILE)

    if not checkpoint.best_model_path:
        raise AwrsrError(
            f"training stopped after {trainer.current_epoch} epoch(s) before any validation "
            f"(train.val_every={train.val_every}, train.max_time={train.max_time}); no epoch can be selected"
        )
    best = torch.load(checkpoint.best_model_path, map_location="cpu", weights_only=True)
    module.load_state_dict(best["state_dict"])
    # Not trainer.current_epoch: a resumed run whose time budget was spent stops before Lightning
    # moves it past the checkpoint's last epoch, and it would count one epoch too few.
    epochs = trainer.fit_loop.epoch_progress.current.processed
    write_epoch_history(run_dir / LOG_FILE, run_dir / HISTORY_FILE)
    return TrainingOutcome(
        best_epoch=int(best["epoch"]) + 1,
        best_value=float(checkpoint.best_model_score),
        epochs_trained=epochs,
        stopped_by=(
            "early stopping" if early_stopping.stopped_epoch
            else "max_epochs" if epochs >= train.max_epochs else "max_time"
        ),
        train_seconds=timer.elapsed_seconds,
        epoch_seconds=timer.train_seconds,
        device=trainer.strategy.root_device,
    )


def _read_checkpoint(path: Path) -> dict:
    if not path.is_file():
        raise AwrsrError(f"{path}: no checkpoint to resume from (was this run started by awrsr fit?)")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        int(state["epoch"])
        return state
    except Exception as err:  # a truncated or foreign file: say which, not torch's unpickling trace
        # torch's unpickling message advises loading with weights_only=False, which runs the file's code
        detail = "not plain saved tensors" if isinstance(err, pickle.UnpicklingError) else f"{type(err).__name__}: {err}"
        raise AwrsrError(f"{path}: not a readable training checkpoint ({detail})") from None


def checkpoint_epochs(path: Path) -> int:
    """How many epochs the Lightning checkpoint at ``path`` has completed (a clear error if none)."""
    return int(_read_checkpoint(path)["epoch"]) + 1


def check_budget_left(path: Path, train: TrainConfig) -> None:
    """A ConfigError unless ``train`` lets the finished run whose last checkpoint is ``path`` train
    another epoch: Lightning would stop at once, for the limit that stopped it, and write the same
    results again. Each limit is checked as its callback would: epochs, time, patience."""
    state = _read_checkpoint(path)
    run_dir = path.parent.parent
    done = int(state["epoch"]) + 1
    if train.max_epochs <= done:
        raise ConfigError(f"train.max_epochs ({train.max_epochs}) must be above the {done} epochs {run_dir} has trained, to continue it")
    callbacks = state.get("callbacks", {})
    spent = callbacks.get("Timer", {}).get("time_elapsed", {}).get("train", 0.0)  # Lightning's Timer state
    if train.max_time is not None and spent >= max_time_seconds(train.max_time):
        raise ConfigError(
            f"train.max_time ({train.max_time}) is spent: {run_dir} has trained for {spent:.0f} s; "
            "raise it, or set it to null, to continue"
        )
    stopping = next((v for k, v in callbacks.items() if k.startswith("EarlyStopping")), {})
    waited = int(stopping.get("wait_count", 0))
    if stopping.get("stopped_epoch", 0) and waited >= train.patience:  # as ResumableEarlyStopping decides
        raise ConfigError(
            f"train.patience ({train.patience}) is spent: {run_dir} stopped after {waited} validations without "
            "improvement; raise it to continue"
        )


def max_time_seconds(max_time: str) -> float:
    """Seconds in a DD:HH:MM:SS budget (as Lightning's Timer reads it).

    >>> max_time_seconds("01:02:03:04")
    93784.0
    """
    days, hours, minutes, seconds = map(int, max_time.split(":"))
    return float(((days * 24 + hours) * 60 + minutes) * 60 + seconds)


def check_checkpoint_fits(path: Path, module: nn.Module) -> None:
    """An ArtifactError naming ``path`` if its weights do not fit ``module`` (Lightning would fail
    deep inside load_state_dict)."""
    check_state_matches(module, torch.load(path, map_location="cpu", weights_only=True).get("state_dict", {}), path)


def keep_earlier_log(log_path: Path, kept_path: Path, epochs: int) -> None:
    """Set aside the log rows of the first ``epochs`` epochs before Lightning's logger deletes the
    log: those already set aside by an earlier interrupted resume plus the current log's, without
    the rows of epochs after the checkpoint (they will be trained and logged again)."""
    frames = [pl.read_csv(path, glob=False) for path in (kept_path, log_path) if path.is_file()]
    if frames:
        rows = pl.concat(frames, how="diagonal_relaxed").unique(maintain_order=True)
        rows.filter(pl.col("epoch") < epochs).write_csv(kept_path)


def merge_logs(kept_path: Path, log_path: Path) -> None:
    """Put the set-aside rows back in front of the resumed session's log."""
    frames = [pl.read_csv(path, glob=False) for path in (kept_path, log_path) if path.is_file()]
    if frames:
        pl.concat(frames, how="diagonal_relaxed").write_csv(log_path)
    kept_path.unlink(missing_ok=True)


def log_files(run_dir: Path) -> list[Path]:
    """A run's epoch log files as they are now: the rows a resume set aside, then the current log."""
    return [path for path in (run_dir / CHECKPOINT_DIR / EARLIER_LOG, run_dir / LOG_FILE) if path.is_file()]


def read_logs(run_dir: Path) -> pl.DataFrame:
    """An unfinished run's epoch log so far (``log_files`` read as one). Raises what polars or
    the file system raise (none yet, empty, half written)."""
    return pl.concat([pl.read_csv(path, glob=False) for path in log_files(run_dir)], how="diagonal_relaxed")  # none: ValueError


# What reading a log being written, emptied or not ours may raise: a report then leaves the
# progress out, and a figure says the log cannot be read now.
UNREADABLE_LOG = (ValueError, TypeError, OSError, pl.exceptions.PolarsError)


def logged_progress(run_dir: Path, train: TrainConfig) -> str:
    """Where an unfinished run stands by its epoch log, with the rows a resume set aside: "epoch
    39/200, 36.9 s per epoch lately, the epoch cap in at most 1.7 h, best valid ndcg@10 0.1454 at
    epoch 38, 1 of patience 20 without a gain", the budget and patience ``train``'s (those a
    resume would use). Empty when nothing is logged, or when the
    log cannot be read: a report must not fail on a row that is being written."""
    monitor = f"val/{train.monitor}"
    try:
        history = epoch_history(read_logs(run_dir))  # one row per epoch, 1-based
        epochs = int(history["epoch"].max())
        if monitor not in history.columns:  # with train.val_every > 1, no validation yet: no column yet
            history = history.with_columns(pl.lit(None).alias(monitor))
        # cast: a column with no value yet is read as text
        validated = history.select("epoch", pl.col(monitor).cast(pl.Float64)).drop_nulls().filter(pl.col(monitor).is_not_nan())
        pace = recent_pace(history, train.max_epochs - epochs)
    except UNREADABLE_LOG:  # none, empty, half-written, foreign
        return ""
    if validated.is_empty() and any(column.startswith("val/") for column in history.columns if column != monitor):
        return ""  # validated on another metric: not a run of ``train``'s configuration
    text = f"epoch {epochs}/{train.max_epochs}{pace}"
    if validated.is_empty():
        return f"{text}, not validated yet"
    best_epoch, best = validated.row(int(validated[monitor].arg_max()))  # the first best, as the checkpoint keeps
    waited = validated.filter(pl.col("epoch") > best_epoch).height
    return (f"{text}, best valid {train.monitor} {best:.4f} at epoch {best_epoch}, "
            f"{waited} of patience {train.patience} without a gain")


def recent_pace(history: pl.DataFrame, epochs_left: int, last: int = 10) -> str:
    """", 36.9 s per epoch lately, the epoch cap in at most 1.4 h": the median time (training and
    validation) of the ``last`` epochs of ``history`` (``epoch_history``'s rows), which an epoch
    slowed by other work beside it does not move, and what the epochs left would take at that
    pace (early stopping may end the run sooner). Empty when the log has no times."""
    times = [column for column in ("time/train_epoch_s", "time/validation_s") if column in history.columns]
    if "time/train_epoch_s" not in times:
        return ""
    per_epoch = (
        history.select("epoch", pl.sum_horizontal(*(pl.col(c).cast(pl.Float64) for c in times)).alias("s"))
        .sort("epoch").tail(last)["s"].median()
    )
    if not per_epoch:
        return ""
    left = per_epoch * max(epochs_left, 0)
    to_go = f"at most {left / 3600:.1f} h" if left >= 5400 else f"at most {left / 60:.0f} min" if left >= 60 else "under a minute"
    return f", {per_epoch:.1f} s per epoch lately" + (f", the epoch cap in {to_go}" if epochs_left > 0 else "")


def epoch_history(log: pl.DataFrame) -> pl.DataFrame:
    """Lightning's CSV rows (training and validation apart) as one row per epoch, 1-based."""
    return (
        log.drop("step", strict=False)
        .group_by("epoch", maintain_order=True)
        .agg(pl.all().drop_nulls().first())
        .with_columns(pl.col("epoch") + 1)  # 1-based, as printed everywhere else
    )


def write_epoch_history(log_path: Path, history_path: Path) -> None:
    """Merge Lightning's CSV rows into one row per epoch (training loss, times, validation)."""
    epoch_history(pl.read_csv(log_path, glob=False)).write_csv(history_path)  # a run directory may be named runs/[v2]: no pattern
