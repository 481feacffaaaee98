"""The registry of backbones: name -> builder(config, num_items) -> model."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Callable

from torch import nn

from awrsr.errors import ConfigError
from awrsr.registry import Registry

if TYPE_CHECKING:
    from awrsr.models.config import ModelConfig
    from awrsr.train.config import TrainConfig

ModelBuilder = Callable[["ModelConfig", int], nn.Module]
MODELS: Registry[ModelBuilder] = Registry("model")


def build_model(cfg: "ModelConfig", num_items: int) -> nn.Module:
    """Build the backbone ``cfg.name`` for a catalogue of ``num_items`` items."""
    import awrsr.models  # noqa: F401  (registers the backbones)

    return MODELS.get(cfg.name)(cfg, num_items)


def check_parts_fit(model: "ModelConfig", train: "TrainConfig") -> None:
    """A ConfigError if the model's parts, or the model and the loss, do not fit together, found
    by building the model over a one-item catalogue (the shapes that depend on the data aside).
    ``fit`` checks this before reading data, ``compare`` for every variant before any trains."""
    probe = build_model(model, num_items=1)
    if train.loss == "stosa" and not hasattr(probe, "item_vectors"):
        from awrsr.nn.losses import LOSSES

        others = ", ".join(name for name in LOSSES.names() if name != "stosa")
        raise ConfigError(
            f"train.loss 'stosa' ranks by Wasserstein distance; model.name {model.name!r} is not stochastic "
            f"(use model.name: stosa with model.attention: wasserstein, or another train.loss: {others})"
        )


def compatible_combinations(refine_input: str = "weights") -> list[tuple[str, str, str]]:
    """Every (backbone, attention, refinement) triple the registries offer that builds, with the
    refinement on ``refine_input`` (``model.refine_input``: weights, or logits where the attention
    has logits a refinement can read); triples whose parts are declared incompatible (a
    ConfigError) are left out. The shared tests and benchmarks/device_check.py run over this, so
    a newly registered part is covered at once."""
    import awrsr.models  # noqa: F401  (registers the backbones)
    from awrsr.errors import ConfigError
    from awrsr.models.config import ModelConfig
    from awrsr.nn.attention import ATTENTIONS
    from awrsr.nn.refine import REFINEMENTS

    combos = []
    for name, attention, refine in itertools.product(MODELS.names(), ATTENTIONS.names(), REFINEMENTS.names()):
        try:
            build_model(ModelConfig(
                name=name, attention=attention, refine=refine, refine_input=refine_input, max_len=4, hidden_size=4,
            ), 3)
        except ConfigError:
            continue
        combos.append((name, attention, refine))
    return combos
