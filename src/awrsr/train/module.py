"""The generic Lightning wrapper: one training step, full-ranking validation, the optimiser.

A model with calibrated attention (AC-TSR) trains adversarially instead, with two optimisers
(``adversarial_step``); every other model keeps Lightning's automatic optimisation.
"""

from __future__ import annotations

from typing import Callable

import lightning as L
import torch
from torch import Tensor, nn

from awrsr.eval import EvalBatch, rank_batch, ranking_metrics
from awrsr.nn.attention.calibrated import mask_norm, perturbation_parameters, perturbed, recommender_parameters
from awrsr.nn.losses import LOSSES


def adversarial_backward(
    model: nn.Module, loss: Callable[[Tensor, Tensor], Tensor], inputs: Tensor, targets: Tensor, alpha: float,
    perturbation_params: list[nn.Parameter], recommender_params: list[nn.Parameter],
    backward: Callable[..., None] = Tensor.backward,
) -> dict[str, Tensor]:
    """AC-TSR's two objectives for one batch (eqs. 18-22), as gradients: the perturbation network
    theta^P gets those of -L_P + alpha L_norm, the recommender theta those of L_P + L_C, where L_P
    and L_C are the configured loss with the perturbed and the calibrated weights. ``loss(inputs,
    targets)`` runs the model and the configured loss; ``backward(tensor, inputs=..., retain_graph=...)``
    is ``Tensor.backward`` or Lightning's ``manual_backward``. Gradients accumulate into ``.grad``,
    so zero them first. Returns the detached parts for logging.

    L_P's gradient serves both networks, so its graph is traversed once (with a sign flip for
    theta^P) instead of once per objective, and it is freed before the calibrated forward pass,
    so the two passes' graphs are never held at once.
    """
    if any(p.grad is not None and p.grad.any() for p in perturbation_params):
        raise ValueError("adversarial_backward flips theta^P's gradients: zero them first")
    with perturbed(model) as masks:
        loss_p = loss(inputs, targets)
    penalty = mask_norm(masks)
    backward(-alpha * penalty, inputs=perturbation_params, retain_graph=True)  # theta^P: -alpha dL_norm
    backward(loss_p, inputs=perturbation_params + recommender_params)  # theta^P: dL_P - alpha dL_norm; theta: dL_P
    for p in perturbation_params:  # theta^P: alpha dL_norm - dL_P
        if p.grad is not None:
            p.grad.neg_()
    loss_c = loss(inputs, targets)
    backward(loss_c, inputs=recommender_params)  # theta: dL_P + dL_C
    return {"loss_perturbed": loss_p.detach(), "loss_calibrated": loss_c.detach(), "mask_norm": penalty.detach()}


class SequentialRecommenderModule(L.LightningModule):
    """Trains any backbone with a registered loss; validates by full ranking every epoch."""

    def __init__(
        self, model: nn.Module, *, loss: str, num_negatives: int, lr: float, weight_decay: float,
        ks: list[int], pvn_weight: float = 0.0, adversarial_alpha: float = 0.1,
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
        # AC-TSR: theta^P (the perturbation network) and theta (everything else) train apart.
        self.adversarial_alpha = adversarial_alpha
        self._perturbation_params = perturbation_parameters(model)
        self._recommender_params = recommender_parameters(model)
        if self._perturbation_params:
            self.automatic_optimization = False
        self._epoch_sums: dict[str, Tensor] = {}  # the training losses' epoch means, see _accumulate
        self._epoch_weight: Tensor | int = 0

    def _loss(self, inputs: Tensor, targets: Tensor) -> Tensor:
        return self.loss_fn(
            self.model, self.model(inputs), targets, num_negatives=self.num_negatives, pvn_weight=self.pvn_weight
        )

    def training_step(self, batch: list[Tensor], batch_idx: int) -> Tensor:
        inputs, targets = self.model.training_example(*batch)  # windows (B, n + 1) -> (B, n), (B, n)
        if not self.automatic_optimization:
            return self.adversarial_step(inputs, targets)
        loss = self._loss(inputs, targets)
        self._accumulate({"loss": loss}, targets)
        return loss

    def _accumulate(self, values: dict[str, Tensor], targets: Tensor) -> None:
        """Adds a batch to the epoch's mean training losses, weighted by the positions its loss
        averages over (targets > 0), so that the mean is per position whatever the batches' sizes
        (``train.group_by_length`` puts many short histories in one batch). The sums stay on the
        training device: reading the weight on the host each step would make the CPU wait for the
        GPU's forward pass before it could queue the backward."""
        weight = (targets > 0).sum().clamp_min(1)
        for name, value in values.items():
            self._epoch_sums[name] = self._epoch_sums.get(name, 0) + value.detach().float() * weight
        self._epoch_weight = self._epoch_weight + weight

    def on_train_epoch_start(self) -> None:
        self._epoch_sums, self._epoch_weight = {}, 0

    def on_train_epoch_end(self) -> None:
        for name, total in self._epoch_sums.items():
            self.log(f"train/{name}", total / self._epoch_weight, prog_bar=name == "loss")

    def on_train_start(self) -> None:
        if not self.automatic_optimization:  # a resumed run restores its groups' settings: none for theta^P
            for group in self.optimizers()[0].optimizer.param_groups:
                group["weight_decay"] = 0.0

    def adversarial_step(self, inputs: Tensor, targets: Tensor) -> Tensor:
        """AC-TSR's min-max step (eqs. 18-22; docs/ac-tsr.md): the perturbation network theta^P
        minimises -L_P + alpha L_norm, the recommender theta minimises L_P + L_C, where L_P and L_C
        are the configured loss with the perturbed and the calibrated weights. Both gradients are
        taken before either optimiser steps."""
        perturbation_opt, recommender_opt = self.optimizers()
        perturbation_opt.zero_grad()
        recommender_opt.zero_grad()
        parts = adversarial_backward(
            self.model, self._loss, inputs, targets, self.adversarial_alpha,
            self._perturbation_params, self._recommender_params, backward=self.manual_backward,
        )
        perturbation_opt.step()
        recommender_opt.step()
        recommender_loss = parts["loss_perturbed"] + parts["loss_calibrated"]
        self._accumulate({"loss": recommender_loss, **parts}, targets)
        return recommender_loss

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

    def configure_optimizers(self) -> torch.optim.Optimizer | list[torch.optim.Optimizer]:
        # betas as in SASRec; weight_decay is the L2 penalty the AWRSR grid searches.
        adam = dict(lr=self.lr, betas=(0.9, 0.98), weight_decay=self.weight_decay)
        if self.automatic_optimization:
            return torch.optim.Adam(self.model.parameters(), **adam)
        # AC-TSR: [perturbation network theta^P, recommender theta], as adversarial_step unpacks them.
        # No L2 penalty on theta^P: shrinking W_Qp, W_Kp pulls M towards 1/2, a stronger perturbation
        # that eq. 20's objective does not ask for.
        return [
            torch.optim.Adam(self._perturbation_params, **{**adam, "weight_decay": 0.0}),
            torch.optim.Adam(self._recommender_params, **adam),
        ]
