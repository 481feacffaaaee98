"""The registry of backbones: name -> builder(config, num_items) -> model."""

from __future__ import annotations

import itertools
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


def compatible_combinations() -> list[tuple[str, str, str]]:
    """Every (backbone, attention, refinement) triple the registries offer that builds; triples
    whose parts are declared incompatible (a ConfigError) are left out. The shared tests and
    benchmarks/device_check.py run over this, so a newly registered part is covered at once."""
    import awrsr.models  # noqa: F401  (registers the backbones)
    from awrsr.errors import ConfigError
    from awrsr.models.config import ModelConfig
    from awrsr.nn.attention import ATTENTIONS
    from awrsr.nn.refine import REFINEMENTS

    combos = []
    for name, attention, refine in itertools.product(MODELS.names(), ATTENTIONS.names(), REFINEMENTS.names()):
        try:
            build_model(ModelConfig(name=name, attention=attention, refine=refine, max_len=4, hidden_size=4), 3)
        except ConfigError:
            continue
        combos.append((name, attention, refine))
    return combos


def refines_logits(name: str, attention: str, refine: str) -> bool:
    """Whether a compatible triple's refinement can act on the attention's logits
    (``model.refine_input: logits``): a refinement other than the identity, on an attention that
    has logits. The shared tests and benchmarks/device_check.py run these a second time so."""
    from awrsr.errors import ConfigError
    from awrsr.models.config import ModelConfig

    if refine == "none":
        return False
    try:
        config = ModelConfig(name=name, attention=attention, refine=refine, refine_input="logits", max_len=4, hidden_size=4)
        build_model(config, 3)
    except ConfigError:
        return False
    return True
