"""Building a block's attention and refinement from the config, with the compatibility checks
that make a config mixing incompatible parts a clear error."""

from __future__ import annotations

from torch import nn

from awrsr.errors import ConfigError
from awrsr.models.config import ModelConfig
from awrsr.nn.attention import ATTENTIONS
from awrsr.nn.refine import REFINEMENTS


def build_attention(cfg: ModelConfig, block_index: int, *, causal: bool, stochastic: bool) -> nn.Module:
    """The configured attention (with its refinement) for one block of a backbone that is
    ``causal`` or not and works on Gaussian (``stochastic``) streams or not."""
    # model.refine_blocks applies to every refinement alike: a block left out gets the identity.
    refined = cfg.refine_blocks is None or block_index in cfg.refine_blocks
    refinement = REFINEMENTS.get(cfg.refine if refined else "none")(cfg, block_index)
    refinement.acts_on = cfg.refine_input  # set here, for every refinement alike (plugins' too)
    if causal and refinement.needs_bidirectional:
        # M_value's literal form is the one built in; a plugin's refinement may be bidirectional too
        part = (f"model.refine_value_form {cfg.refine_value_form!r} (of model.refine 'value')" if cfg.refine == "value"
                else f"model.refine {cfg.refine!r}")
        # BERT4Rec is the bidirectional backbone built in; it takes no Gaussian streams
        ways = ["model.refine_value_form: causal"] if cfg.refine == "value" else []
        ways += [] if stochastic else ["a bidirectional backbone (model.name: bert4rec)"]
        raise ConfigError(
            f"{part} lets a position see later items; backbone {cfg.name!r} is causal: use {', or '.join(ways) or 'another refinement'}"
        )
    attention = ATTENTIONS.get(cfg.attention)(cfg, block_index, refinement)
    if getattr(attention, "needs_causal", False) and not causal:
        raise ConfigError(
            f"model.attention {cfg.attention!r} is defined for causal backbones only; {cfg.name!r} is bidirectional"
        )
    if refinement.acts_on == "logits" and not refinement.is_identity and not getattr(attention, "refines_logits", False):
        raise ConfigError(
            f"model.refine_input 'logits' needs an attention with logits for a refinement to read; "
            f"model.attention {cfg.attention!r} has none (use refine_input: weights)"
        )
    is_stochastic = getattr(attention, "stochastic", False)
    if is_stochastic != stochastic:
        needed = "a stochastic attention (model.attention: wasserstein)" if stochastic else "a deterministic attention (e.g. model.attention: dot)"
        raise ConfigError(f"model.attention {cfg.attention!r} does not fit backbone {cfg.name!r}, which needs {needed}")
    if refinement.needs_stochastic and not is_stochastic:
        raise ConfigError(
            f"model.refine {cfg.refine!r} only exists for stochastic attention (STOSA); "
            f"model.attention {cfg.attention!r} is not stochastic"
        )
    return attention
