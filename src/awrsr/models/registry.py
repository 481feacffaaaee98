"""The registry of backbones: name -> builder(config, num_items) -> model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from torch import nn

from awrsr.registry import Registry

if TYPE_CHECKING:
    from awrsr.models.config import ModelConfig

ModelBuilder = Callable[["ModelConfig", int], nn.Module]
MODELS: Registry[ModelBuilder] = Registry("model")


def build_model(cfg: "ModelConfig", num_items: int) -> nn.Module:
    """Build the backbone ``cfg.name`` for a catalogue of ``num_items`` items."""
    import awrsr.models  # noqa: F401  (registers the backbones)

    return MODELS.get(cfg.name)(cfg, num_items)
