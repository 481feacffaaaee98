"""Training: batches, the Lightning module, callbacks, and the trainer wiring."""

from awrsr.train.config import TrainConfig

__all__ = ["TrainConfig", "TrainingOutcome", "train_model"]


def __getattr__(name: str):
    # Lightning takes seconds to import; commands that never train (awrsr --help, stats, recommend)
    # import this package for TrainConfig only, so the trainer is loaded on first use.
    if name in ("TrainingOutcome", "train_model"):
        from awrsr.train import trainer

        return getattr(trainer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
