"""Training: batches, the Lightning module, callbacks, and the trainer wiring."""

from awrsr.train.config import TrainConfig
from awrsr.train.trainer import TrainingOutcome, train_model

__all__ = ["TrainConfig", "TrainingOutcome", "train_model"]
