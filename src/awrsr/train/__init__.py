"""Training: batches, the Lightning module, callbacks, and the trainer wiring."""

from typing import TYPE_CHECKING

from awrsr.train.config import TrainConfig

if TYPE_CHECKING:  # for type checkers; at run time they load on first use (below)
    from awrsr.train.trainer import TrainingOutcome, train_model

__all__ = ["TrainConfig", "TrainingOutcome", "train_model"]


def __getattr__(name: str):
    # Lightning takes seconds to import; commands that never train (awrsr --help, stats, recommend)
    # import this package for TrainConfig only, so the trainer is loaded on first use.
    if name in ("TrainingOutcome", "train_model"):
        from awrsr.train import trainer

        return getattr(trainer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), "TrainingOutcome", "train_model"])
