"""Callbacks that record what a user wants to know about each epoch."""

from __future__ import annotations

import time

import lightning as L


class EpochTimer(L.Callback):
    """Logs the wall time of each training epoch and of each validation."""

    def __init__(self) -> None:
        self.train_seconds: list[float] = []
        self._started = 0.0

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._started = time.perf_counter()

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        seconds = time.perf_counter() - self._started
        self.train_seconds.append(seconds)
        pl_module.log("time/train_epoch_s", seconds)

    def on_validation_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._val_started = time.perf_counter()

    def on_validation_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if not trainer.sanity_checking:
            pl_module.log("time/validation_s", time.perf_counter() - self._val_started)
