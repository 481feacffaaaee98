"""Callbacks that record what a user wants to know about each epoch."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path, PureWindowsPath
from typing import Any

import lightning as L
import torch
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint, TQDMProgressBar
from lightning.pytorch.utilities.exceptions import SIGTERMException

from awrsr.errors import ArtifactError


class EpochTimer(L.Callback):
    """Logs the wall time of each training epoch and of each validation, and keeps the run's total
    training time in its checkpoint state so that a resumed run reports the time of all sessions."""

    def __init__(self) -> None:
        self.train_seconds: list[float] = []
        self._started = 0.0
        self._earlier_sessions_s = 0.0
        self._fit_started = time.perf_counter()

    @property
    def elapsed_seconds(self) -> float:
        """Training wall time so far, earlier sessions of a resumed run included."""
        return self._earlier_sessions_s + time.perf_counter() - self._fit_started

    def on_fit_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._fit_started = time.perf_counter()

    def state_dict(self) -> dict:
        return {"train_seconds": list(self.train_seconds), "elapsed_seconds": self.elapsed_seconds}

    def load_state_dict(self, state_dict: dict) -> None:
        self.train_seconds = list(state_dict["train_seconds"])
        self._earlier_sessions_s = float(state_dict["elapsed_seconds"])

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._started = time.perf_counter()

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if not self._started:  # an epoch end replayed on resume, with no start in this session
            return
        seconds = time.perf_counter() - self._started
        self._started = 0.0
        self.train_seconds.append(seconds)
        pl_module.log("time/train_epoch_s", seconds)

    def on_validation_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._val_started = time.perf_counter()

    def on_validation_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if not trainer.sanity_checking:
            pl_module.log("time/validation_s", time.perf_counter() - self._val_started)


class ResumableEarlyStopping(EarlyStopping):
    """Early stopping that keeps the patience it was configured with when a run resumes (Lightning
    would restore the checkpoint's), so that a run stopped too early can be continued with more."""

    _stopped_before = False  # set on resume: the checkpoint's run had already stopped

    @property
    def state_key(self) -> str:
        # Lightning keys callback state by class name; keep EarlyStopping's so both load each other's.
        return f"EarlyStopping{repr({'monitor': self.monitor, 'mode': self.mode})}"

    def load_state_dict(self, state_dict: dict) -> None:
        patience = self.patience
        super().load_state_dict(state_dict)
        self.patience = patience
        # A run killed after its stopping epoch's checkpoint but before its results were written
        # has already stopped: resuming must not train another epoch, which an uninterrupted run
        # never trained (and which could even become the selected one). With a larger patience it goes on.
        self._stopped_before = self.wait_count >= patience and self.stopped_epoch > 0
        if not self._stopped_before:
            self.stopped_epoch = 0

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self._stopped_before:
            trainer.should_stop = True  # Lightning's fit loop then ends before another epoch


class RelocatableModelCheckpoint(ModelCheckpoint):
    """A checkpoint callback whose run directory may move between sessions (copied from another
    machine, renamed, or resumed in a new place).

    Lightning keeps the best score only when the checkpoint directory is the one it was saved from;
    elsewhere it drops it, so the first epoch after resuming became "best" even when worse, and
    the best path still named the old place. Here the stored paths are moved into this directory
    (the files have the same names there) and the score is kept.
    """

    @property
    def state_key(self) -> str:
        # Lightning keys callback state by class name; keep ModelCheckpoint's so that checkpoints
        # saved by either class load into the other.
        return ModelCheckpoint.state_key.fget(self).replace(type(self).__qualname__, ModelCheckpoint.__qualname__, 1)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        saved_dir = state_dict.get("dirpath")
        if saved_dir is not None and self.dirpath is not None:
            if Path(saved_dir) != Path(self.dirpath):
                def here(path: Any) -> Any:  # PureWindowsPath splits on both separators
                    return str(Path(self.dirpath) / PureWindowsPath(path).name) if path else path

                state_dict = {
                    **state_dict,
                    **{key: here(state_dict.get(key)) for key in ("best_model_path", "kth_best_model_path", "last_model_path")},
                    "best_k_models": {here(path): score for path, score in (state_dict.get("best_k_models") or {}).items()},
                }
            state_dict = {**state_dict, "dirpath": self.dirpath}  # equal paths spelt differently, too
        super().load_state_dict(state_dict)
        if self.best_model_path and not Path(self.best_model_path).is_file():
            raise ArtifactError(
                f"{self.best_model_path}: the best checkpoint so far is missing; a run directory must be "
                "moved or copied whole (checkpoints/best.ckpt and last.ckpt)"
            )


class GradientNorm(L.Callback):
    """Logs the global L2 norm of the gradients before each optimiser step, averaged per epoch
    (the AWRSR paper's Figure 5). With several optimisers (AC-TSR's adversarial training) only
    the recommender's, the last one, is measured, over its own parameters."""

    def on_before_optimizer_step(self, trainer: L.Trainer, pl_module: L.LightningModule, optimizer) -> None:
        if len(trainer.optimizers) > 1 and optimizer is not trainer.optimizers[-1]:
            return
        params = [p for group in optimizer.param_groups for p in group["params"]]
        grads = [p.grad for p in params if p.grad is not None]
        if grads:
            pl_module.log("train/grad_norm", global_norm(grads), on_step=False, on_epoch=True)


def global_norm(tensors: list[torch.Tensor]) -> torch.Tensor:
    """The L2 norm of all the tensors together. On a GPU, torch's multi-tensor kernels take a
    couple of launches where one norm per parameter takes one each (torch >= 2.6)."""
    if hasattr(torch.nn.utils, "get_total_norm"):
        return torch.nn.utils.get_total_norm(tensors)
    return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(t) for t in tensors]))


class RandomState(L.Callback):
    """Keeps torch's random generator state (dropout, negative sampling) in every checkpoint, so a
    resumed run draws what the uninterrupted run would have drawn."""

    def state_dict(self) -> dict:
        state = {"cpu": torch.get_rng_state()}
        if torch.cuda.is_available():
            state["cuda"] = torch.cuda.get_rng_state_all()
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        torch.set_rng_state(state_dict["cpu"])
        if "cuda" in state_dict and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state_dict["cuda"])


class InterruptNotice(L.Callback):
    """Says how to go on when Ctrl-C or SIGTERM (``kill``, a job scheduler, ``docker stop``) stops
    training, and keeps the shell's status for it, 128 + the signal (``exit_status``, which
    ``train_model`` exits with: Lightning's own would be 1 and 0)."""

    def __init__(self, last_checkpoint: Path) -> None:
        self.last_checkpoint = last_checkpoint
        self.exit_status: int | None = None

    def on_exception(self, trainer: L.Trainer, pl_module: L.LightningModule, exception: BaseException) -> None:
        if isinstance(exception, KeyboardInterrupt):
            how, self.exit_status = "interrupted", 128 + signal.SIGINT
        elif isinstance(exception, SIGTERMException):
            how, self.exit_status = "stopped by SIGTERM", 128 + signal.SIGTERM
        else:
            return
        if self.last_checkpoint.is_file():
            hint = (
                f"the last completed epoch is saved in {self.last_checkpoint}; awrsr fit: the same command with "
                "--resume true continues from it; awrsr tune and compare: the same command again"
            )
        else:
            hint = "no epoch was completed, so there is nothing to resume"
        print(f"\nawrsr: {how} in epoch {trainer.current_epoch + 1}; {hint}", file=sys.stderr)


class EpochLines(L.Callback):
    """One line per validated epoch on stdout ("epoch 12/200: valid ndcg@10 0.0235, best 0.0240,
    2 of patience 20 without a gain, 57.0 s"): what a log file gets where a progress bar would
    fill it with carriage returns (stdout is not a terminal). Lightning runs ``early_stopping``
    after it, so it counts the best value and the epochs without a gain itself, starting from
    early stopping's (restored when a run resumes)."""

    def __init__(self, monitor: str, early_stopping: EarlyStopping) -> None:
        self.monitor = monitor  # "val/ndcg@10"
        self.early_stopping = early_stopping
        self._started = time.perf_counter()
        self._best, self._wait = float("-inf"), 0

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._best, self._wait = float(self.early_stopping.best_score), int(self.early_stopping.wait_count)

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._started = time.perf_counter()

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        value = trainer.callback_metrics.get(self.monitor)
        if value is None or trainer.sanity_checking:
            return
        value = float(value)
        if value > self._best:
            self._best, self._wait = value, 0
        else:
            self._wait += 1
        budget = f"/{trainer.max_epochs}" if trainer.max_epochs and trainer.max_epochs > 0 else ""
        print(
            f"epoch {trainer.current_epoch + 1}{budget}: valid {self.monitor.removeprefix('val/')} {value:.4f}, "
            f"best {self._best:.4f}, {self._wait} of patience {self.early_stopping.patience} without a gain, "
            f"{time.perf_counter() - self._started:.1f} s",
            file=sys.stdout, flush=True,
        )


class EpochProgressBar(TQDMProgressBar):
    """Lightning's bar, its epochs counted from 1 and out of the budget ("Epoch 30/30"), as every
    other awrsr output counts them (best epoch, history.csv, interruption notices); Lightning's
    own says "Epoch 29" for the thirtieth."""

    def on_train_epoch_start(self, trainer: L.Trainer, *args: Any) -> None:
        # Lightning's body with our description: calling it first would draw "Epoch 29" once.
        if getattr(self, "_leave", False):
            self.train_progress_bar = self.init_train_tqdm()
        total = self.total_train_batches
        self.train_progress_bar.reset(total=None if total == float("inf") else total)
        self.train_progress_bar.initial = 0
        budget = f"/{trainer.max_epochs}" if trainer.max_epochs and trainer.max_epochs > 0 else ""
        self.train_progress_bar.set_description(f"Epoch {trainer.current_epoch + 1}{budget}")
