"""Callbacks that record what a user wants to know about each epoch."""

from __future__ import annotations

import time

import lightning as L
import torch


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


class GradientNorm(L.Callback):
    """Logs the global L2 norm of the gradients before each optimiser step, averaged per epoch
    (the AWRSR paper's Figure 5)."""

    def on_before_optimizer_step(self, trainer: L.Trainer, pl_module: L.LightningModule, optimizer) -> None:
        grads = [p.grad for p in pl_module.parameters() if p.grad is not None]
        if grads:
            norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
            pl_module.log("train/grad_norm", norm, on_step=False, on_epoch=True)
