"""The generic Lightning wrapper: one training step, full-ranking validation, the optimiser."""

from __future__ import annotations

import lightning as L
import torch
from torch import Tensor, nn

from awrsr.eval import EvalBatch, rank_batch, ranking_metrics
from awrsr.nn.losses import LOSSES


class SequentialRecommenderModule(L.LightningModule):
    """Trains any backbone with a registered loss; validates by full ranking every epoch."""

    def __init__(
        self, model: nn.Module, *, loss: str, num_negatives: int, lr: float, weight_decay: float,
        ks: list[int], pvn_weight: float = 0.0,
    ) -> None:
        super().__init__()
        self.model = model
        self.loss_fn = LOSSES.get(loss)
        self.num_negatives = num_negatives
        self.pvn_weight = pvn_weight
        self.lr = lr
        self.weight_decay = weight_decay
        self.ks = list(ks)
        self._val_ranks: list[Tensor] = []

    def training_step(self, batch: tuple[Tensor, Tensor], batch_idx: int) -> Tensor:
        inputs, targets = batch  # (B, n), (B, n)
        loss = self.loss_fn(
            self.model, self.model(inputs), targets, num_negatives=self.num_negatives, pvn_weight=self.pvn_weight
        )
        self.log("train/loss", loss, on_step=False, on_epoch=True, prog_bar=True, batch_size=inputs.shape[0])
        return loss

    def validation_step(self, batch: EvalBatch, batch_idx: int) -> None:
        # Score in float32 even under bf16-mixed training: bf16 scores would tie, and ties count
        # against the target.
        with torch.autocast(self.device.type, enabled=False):
            self._val_ranks.append(rank_batch(self.model, batch))

    def on_validation_epoch_end(self) -> None:
        if not self._val_ranks:
            return
        metrics = ranking_metrics(torch.cat(self._val_ranks), self.ks)
        self._val_ranks.clear()
        self.log_dict({f"val/{name}": value for name, value in metrics.items()}, prog_bar=False)

    def transfer_batch_to_device(self, batch, device: torch.device, dataloader_idx: int):
        if isinstance(batch, EvalBatch):
            return batch.to(device)
        return super().transfer_batch_to_device(batch, device, dataloader_idx)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        # betas as in SASRec; weight_decay is the L2 penalty the AWRSR grid searches.
        return torch.optim.Adam(
            self.model.parameters(), lr=self.lr, betas=(0.9, 0.98), weight_decay=self.weight_decay
        )
