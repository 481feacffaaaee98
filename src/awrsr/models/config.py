"""The model's configuration: which backbone, which parts, and their sizes."""


from dataclasses import dataclass
from typing import Literal

from awrsr.config_types import check_field_types
from awrsr.errors import ConfigError, FieldValueError


@dataclass
class ModelConfig:
    """Hyper-parameters of a sequential model; ``name``, ``attention`` and ``refine`` pick
    registered parts by name.

    Args:
        name: backbone: sasrec | stosa | bert4rec.
        max_len: maximum history length n the model reads (the last n items).
        hidden_size: width d (per stream for STOSA).
        num_heads: attention heads; must divide hidden_size.
        num_blocks: transformer blocks.
        inner_size: feed-forward width; null (None) means hidden_size (SASRec).
        dropout: dropout on embeddings, residual branches and the feed-forward network.
        attn_dropout: dropout on attention weights; null (None) means dropout.
        attention: attention mechanism: dot (SASRec, BERT4Rec) | wasserstein (STOSA) | positional
            (PARec; FPARec with positional_rank) | average | linear | exponential (fixed patterns)
            | calibrated (AC-TSR; docs/ac-tsr.md), or a mechanism registered in awrsr.nn.attention.ATTENTIONS
            (by a plugin too: docs/design.md).
        refine: attention-weight refinement: none | simp | value | add | stoc (STOSA only), or one
            registered in awrsr.nn.refine.REFINEMENTS (by a plugin too: docs/design.md).
        fused_attention: use F.scaled_dot_product_attention when weights are neither refined nor requested.
        refine_per_head: one set of n x n refinement matrices per head instead of one per layer.
        refine_scale: refinement logit scale: head = 1/sqrt(d_h) (paper) or length = 1/sqrt(n).
        refine_init_std: refinement matrices start at identity + N(0, refine_init_std).
        refine_blocks: 0-based blocks to refine; null (None) refines every block.
        refine_value_form: M_value form: causal (default) or literal (the paper's eq. 3, bidirectional backbones only).
        refine_stoc_distance: M_stoc's distance between the rows' Gaussians: squared (W2^2, as STOSA's
            attention and the public STOSA code; default) or plain (W2, as the AWRSR paper and SPEC.md write it).
        refine_input: what the refinements act on as A: weights, after the masked softmax (default), or
            logits, the paper's A_kt = Q_k K_t^T / sqrt(d) before it (masked entries 0; STOSA: -W2^2 / sqrt(d_h)).
            Not for calibrated attention, whose A_comb has no logits (docs/refinements.md).
        norm_eps: LayerNorm epsilon.
        position_embedding: add learned position embeddings; null (None) means yes unless the attention
            encodes positions itself (positional and the fixed patterns: PARec has none).
        positional_rank: attention positional: null (None) learns the full n x n matrix (PARec), k factorises
            it as R1 R2^T with R1, R2 of n x k (FPARec).
        pattern_positions: fixed patterns: number the positions j of a_ij along the user's history
            (history, 1 = the oldest item in the max_len window) or by slot of the right-aligned
            max_len window (window, max_len = the newest item); only linear depends on it (docs/neighbours.md).
        mask_prob: bert4rec: probability that Cloze training replaces a real item by [mask].
        ac_lite: attention calibrated: train with AC-TSR's calibrators but serve (eval mode) with plain
            softmax(QK^T/sqrt(d_h)) attention, at SASRec's cost (AC-SASRec-lite).
    """

    name: str = "sasrec"
    max_len: int = 50
    hidden_size: int = 64
    num_heads: int = 1
    num_blocks: int = 2
    inner_size: int | None = None  # FFN width; None -> hidden_size (SASRec)
    dropout: float = 0.2
    attn_dropout: float | None = None  # None -> dropout
    attention: str = "dot"
    refine: str = "none"
    fused_attention: bool = True  # use F.scaled_dot_product_attention when weights are not needed
    # Attention-weight refinement options (AWRSR; see docs/refinements.md)
    refine_per_head: bool = False  # one set of n x n matrices per head instead of one per layer
    refine_scale: Literal["head", "length"] = "head"  # 1/sqrt(d_h) (paper) or 1/sqrt(n)
    refine_init_std: float = 0.02  # matrices start at identity + N(0, std)
    refine_blocks: list[int] | None = None  # 0-based blocks to refine; None -> every block
    refine_value_form: Literal["causal", "literal"] = "causal"  # M_value: causal form or the paper's eq. 3
    refine_stoc_distance: Literal["squared", "plain"] = "squared"  # M_stoc: W2^2 (STOSA's code) or W2 (paper)
    refine_input: Literal["weights", "logits"] = "weights"  # A after the softmax, or the paper's A before it
    norm_eps: float = 1e-8
    position_embedding: bool | None = None  # None -> on unless the attention encodes positions
    positional_rank: int | None = None  # positional attention: None -> full n x n (PARec), k -> FPARec
    pattern_positions: Literal["history", "window"] = "history"  # fixed patterns: how j in a_ij is counted
    mask_prob: float = 0.2  # bert4rec: Cloze masking probability
    # AC-TSR
    ac_lite: bool = False  # calibrated attention: serve without the calibrators (AC-SASRec-lite)

    def __post_init__(self) -> None:
        check_field_types(self, "model")
        for field_name in ("max_len", "hidden_size", "num_heads", "num_blocks"):
            value = getattr(self, field_name)
            if value < 1:
                raise FieldValueError(f"model.{field_name}", f"must be >= 1, got {value}")
        if self.hidden_size % self.num_heads:
            raise ConfigError(
                f"model.hidden_size ({self.hidden_size}) must be divisible by "
                f"model.num_heads ({self.num_heads})"
            )
        for field_name in ("dropout", "attn_dropout"):
            value = getattr(self, field_name)
            if value is not None and not 0.0 <= value < 1.0:
                raise FieldValueError(f"model.{field_name}", f"must be in [0, 1), got {value}")
        if not self.norm_eps > 0:  # layer norm divides by sqrt(var + eps): <= 0 can divide by zero
            raise FieldValueError("model.norm_eps", f"must be > 0, got {self.norm_eps}")
        if self.refine_init_std < 0:
            raise FieldValueError("model.refine_init_std", f"must be >= 0, got {self.refine_init_std}")
        if self.refine_blocks is not None:
            if not self.refine_blocks:  # would build the unrefined model under a refinement's name
                raise FieldValueError("model.refine_blocks", "is empty; list the blocks to refine, or null for every block")
            if len(set(self.refine_blocks)) < len(self.refine_blocks):
                raise FieldValueError("model.refine_blocks", f"{self.refine_blocks} names a block twice")
            bad = [b for b in self.refine_blocks if not 0 <= b < self.num_blocks]
            if bad:
                raise ConfigError(
                    f"model.refine_blocks {bad} out of range: blocks are 0..{self.num_blocks - 1}"
                )
        if self.positional_rank is not None and self.positional_rank < 1:
            raise FieldValueError("model.positional_rank", f"must be >= 1 (or null for PARec's full matrix), got {self.positional_rank}")
        if self.positional_rank is not None and self.attention != "positional":  # a mistyped FPARec would train SASRec
            raise ConfigError(f"model.positional_rank only applies to model.attention: positional (FPARec), not {self.attention!r}")
        from awrsr.nn.attention.fixed import PATTERNS  # imported here, as the registries below

        if self.pattern_positions != "history" and self.attention not in PATTERNS:
            raise ConfigError(
                f"model.pattern_positions only applies to the fixed patterns ({', '.join(PATTERNS)}), "
                f"not model.attention: {self.attention!r}"
            )
        if not 0.0 < self.mask_prob < 1.0:
            raise FieldValueError("model.mask_prob", f"must be in (0, 1), got {self.mask_prob}")
        if self.ac_lite and self.attention != "calibrated":
            raise ConfigError(f"model.ac_lite only applies to model.attention: calibrated, not {self.attention!r}")
        if self.inner_size is not None and self.inner_size < 1:
            raise FieldValueError("model.inner_size", f"must be >= 1, got {self.inner_size}")
        # Imported here: the registries import this module for type hints.
        from awrsr.models.registry import MODELS
        from awrsr.nn.attention import ATTENTIONS
        from awrsr.nn.refine import REFINEMENTS

        for field_name, registry in (("name", MODELS), ("attention", ATTENTIONS), ("refine", REFINEMENTS)):
            value = getattr(self, field_name)
            if value not in registry:
                raise registry.unknown(value, where=f"model.{field_name}: ")

    @property
    def effective_attn_dropout(self) -> float:
        return self.dropout if self.attn_dropout is None else self.attn_dropout

    @property
    def effective_inner_size(self) -> int:
        return self.hidden_size if self.inner_size is None else self.inner_size

    @property
    def label(self) -> str:
        """The model's parts in a few words, for titles: ``sasrec, dot attention, refined by simp``."""
        attention = f"{self.attention} attention" + (" (lite)" if self.ac_lite else "")
        if self.refine == "none":
            refinement = "no refinement"
        else:
            blocks = "" if self.refine_blocks is None else f" in block(s) {', '.join(map(str, self.refine_blocks))}"
            on_logits = " on logits" if self.refine_input == "logits" else ""
            form = " (literal)" if self.refine == "value" and self.refine_value_form == "literal" else ""
            refinement = f"refined by {self.refine}{form}{on_logits}{blocks}"
        return f"{self.name}, {attention}, {refinement}"
