"""Training configuration."""


from dataclasses import dataclass
from typing import Literal

from awrsr.config_types import check_field_types
from awrsr.errors import ConfigError, FieldValueError

# Options of the machine, not of the model: a resume may change them, and compare and tune reuse a
# finished run whatever they were (all but progress_bar may change the last digits of its numbers).
MACHINE_FIELDS = ("num_threads", "flush_denormal", "accelerator", "progress_bar")

# Negatives per position when train.num_negatives is left unset.
DEFAULT_NEGATIVES = {"bce": 1, "sampled_softmax": 100, "ce": 0, "stosa": 1}


@dataclass
class TrainConfig:
    """How a model is trained and selected.

    Args:
        loss: bce (SASRec paper) | ce (full softmax, "SASRec+") | sampled_softmax | stosa (STOSA's distance loss).
        num_negatives: negatives per position; null (None) means 1 for bce and stosa, 100 for sampled_softmax.
        pvn_weight: weight of STOSA's positive-vs-negative hinge (loss stosa).
        batch_size: users per training batch.
        group_by_length: batch users of similar history lengths (same number of batches, each with
            about the same number of real positions): less padding, so faster training on data with
            long and short histories mixed; it changes which users share a batch.
        lr: Adam learning rate.
        weight_decay: L2 penalty (Adam weight_decay).
        max_epochs: most epochs to train.
        max_time: wall-clock budget DD:HH:MM:SS, checked when an epoch ends (a run may overrun it by one
            epoch, and never stops inside one, so that a resumed run equals an uninterrupted one);
            the best validated epoch is selected.
        patience: validations without improvement of the monitor before stopping.
        monitor: validation metric for early stopping and model selection, e.g. ndcg@10.
        val_every: epochs between validations.
        seed: seed of initialisation, shuffling, negatives and dropout.
        accelerator: Lightning accelerator.
        precision: 32-true or bf16-mixed (bfloat16 training matmuls; evaluation stays float32).
        progress_bar: show Lightning's progress bar on a terminal; where stdout is a file or a pipe, one line per epoch
            (in compare and tune, lines on a terminal too: a record of each of their runs). false: neither.
        num_threads: torch CPU threads; null (None) keeps torch's default.
        flush_denormal: flush subnormal floats (below 1.2e-38) to zero on the CPU, as
            torch.set_flush_denormal(True): a trained refinement's attention products are full of
            them, and the CPU computes them many times slower (docs/design.md). false keeps them.
        adversarial_alpha: model.attention calibrated (AC-TSR): weight alpha of the perturbation-mask
            norm L_norm in the perturbation network's objective -L_P + alpha L_norm (eq. 20; docs/ac-tsr.md).
    """

    loss: str = "ce"  # bce (SASRec paper) | ce (full softmax, "SASRec+") | sampled_softmax | stosa
    num_negatives: int | None = None  # None -> 1 for bce, 100 for sampled_softmax
    pvn_weight: float = 0.0  # loss "stosa": weight of STOSA's positive-vs-negative hinge
    batch_size: int = 128
    group_by_length: bool = False  # batches of similar history lengths: less padding (train/batches.py)
    lr: float = 1e-3
    weight_decay: float = 0.0  # L2 penalty, as Adam's weight_decay
    max_epochs: int = 200
    max_time: str | None = None  # wall-clock budget "DD:HH:MM:SS", checked at each epoch's end; the best epoch so far is selected
    patience: int = 20  # validation checks without improvement before stopping
    monitor: str = "ndcg@10"  # validation metric for early stopping and model selection
    val_every: int = 1  # epochs between validations
    seed: int = 42
    accelerator: Literal["auto", "cpu", "gpu", "cuda", "mps"] = "auto"  # Lightning accelerator
    # bf16-mixed runs the training matmuls in bfloat16 (faster on CPUs with AVX512-BF16 and on
    # GPUs); evaluation always scores in float32, since bf16 scores would tie.
    precision: Literal["32-true", "bf16-mixed"] = "32-true"
    progress_bar: bool = True
    num_threads: int | None = None  # torch CPU threads; None -> torch's default
    flush_denormal: bool = True  # subnormal floats read and written as 0 on the CPU: faster, see docs/design.md
    # AC-TSR
    adversarial_alpha: float = 0.1  # calibrated attention: weight of the mask norm (eq. 20); the paper gives no value

    def __post_init__(self) -> None:
        from awrsr.nn.losses import LOSSES

        check_field_types(self, "train")

        if self.loss not in LOSSES:
            raise LOSSES.unknown(self.loss, where="train.loss: ")
        # Resolved in a property, not written back: a default instance must not carry one loss's
        # default into a config that only changes the loss.
        if self.num_negatives is not None and self.num_negatives < 1:
            raise FieldValueError("train.num_negatives", f"must be >= 1, got {self.num_negatives}")
        if not 0 <= self.seed < 2**32:  # numpy's range; checked now, not after the data is read
            raise FieldValueError("train.seed", f"must be in 0..{2**32 - 1}, got {self.seed}")
        for name in ("batch_size", "max_epochs", "val_every"):
            if getattr(self, name) < 1:
                raise FieldValueError(f"train.{name}", f"must be >= 1, got {getattr(self, name)}")
        if self.max_time is not None:
            parts = self.max_time.split(":")
            if len(parts) != 4 or not all(p.isdigit() for p in parts):
                raise FieldValueError("train.max_time", f"must look like DD:HH:MM:SS (e.g. 00:01:30:00), got {self.max_time!r}")
            if not any(map(int, parts)):  # no epoch could finish: found only after the data is read
                raise FieldValueError("train.max_time", f"must be longer than zero, got {self.max_time!r}")
        if self.val_every > self.max_epochs:
            raise ConfigError(
                f"train.val_every ({self.val_every}) > train.max_epochs ({self.max_epochs}): no epoch would be validated"
            )
        if self.patience < 0:
            raise FieldValueError("train.patience", f"must be >= 0, got {self.patience}")
        if not self.lr > 0:
            raise FieldValueError("train.lr", f"must be > 0, got {self.lr}")
        if self.pvn_weight < 0:
            raise FieldValueError("train.pvn_weight", f"must be >= 0, got {self.pvn_weight}")
        if self.weight_decay < 0:
            raise FieldValueError("train.weight_decay", f"must be >= 0, got {self.weight_decay}")
        if self.num_threads is not None and self.num_threads < 1:
            raise FieldValueError("train.num_threads", f"must be >= 1, got {self.num_threads}")
        if not self.adversarial_alpha >= 0:
            raise FieldValueError("train.adversarial_alpha", f"must be >= 0, got {self.adversarial_alpha}")

    @property
    def effective_num_negatives(self) -> int:
        if self.num_negatives is not None:
            return self.num_negatives
        return DEFAULT_NEGATIVES.get(self.loss, 1)  # a plugin's loss: one, unless train.num_negatives says
