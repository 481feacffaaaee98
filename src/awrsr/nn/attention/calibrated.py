"""Calibrated attention (AC-TSR, Zhou et al. 2023; papers/ac-tsr-attention-calibration.txt,
eqs. 6-17; docs/ac-tsr.md maps each equation to the code below).

Per head, on top of scaled dot-product attention:

- spatial calibrator (eqs. 6-12): the logits get an order term s^(o) and a distance term s^(d)
  predicted from [q_i; k_j], A_s = masked-softmax(Q K^T / sqrt(d_h) + s^(o) + s^(d));
- adversarial calibrator (eqs. 13-17): a perturbation mask M = sigmoid(Q W_Qp (K W_Kp)^T / sqrt(d_h))
  gives the perturbed weights A_p = M * A_s + (1 - M) * mu and the calibrated weights
  A_c = A_s * e^(1 - M) (re-normalised); the layer attends with A = g A_s + (1 - g) A_c,
  g = sigmoid(q_i w_g + b_g) per query and head.

``mode`` picks the weights that multiply V: "calibrated" (A, the model that is served) or
"perturbed" (A_p, only for the adversarial term in training; see ``perturbed``). The training
module (awrsr.train.module) updates W_Qp, W_Kp (``perturbation_parameters``) to maximise the
perturbed model's loss under the penalty ``mask_norm`` and everything else to minimise the sum of
both modes' losses.

Positions i, j are slot indices in the window; only i - j and the order of i and j enter, so
neither the amount of left padding nor the window's width changes the scores.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator, Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from awrsr.nn.attention.base import ATTENTIONS, AttentionWeights
from awrsr.nn.attention.dot import DotProductAttention
from awrsr.nn.dropout import dropout
from awrsr.nn.masks import AttentionMask, masked_softmax
from awrsr.nn.refine.base import Refinement

if TYPE_CHECKING:  # hints only: the config's package imports the parts
    from awrsr.models.config import ModelConfig

Mode = Literal["calibrated", "perturbed"]


def spatial_targets(
    n: int, device: torch.device, dtype: torch.dtype = torch.float32
) -> tuple[Tensor, Tensor]:
    """The order o_ij = 1[i < j] (n, n) bool (eq. 6) and the distance d_ij = ln(1 + |i - j|) (n, n)
    of ``dtype`` (eq. 7)."""
    index = torch.arange(n, device=device)
    order = index[:, None] < index[None, :]
    distance = torch.log1p((index[:, None] - index[None, :]).abs().to(dtype))
    return order, distance


def perturb(weights: Tensor, keep: Tensor, allowed: Tensor) -> Tensor:
    """A_p = M * A + (1 - M) * mu, re-normalised over the allowed keys (eq. 13).

    mu is the uniform distribution over each query's allowed keys (the paper leaves mu undefined).
    Where M varies along a row the mixture does not sum to one, hence the re-normalisation; masked
    keys and padded queries stay exactly 0.

    >>> a = torch.tensor([[0.9, 0.1, 0.0]]); allowed = torch.tensor([[True, True, False]])
    >>> perturb(a, torch.zeros(1, 3), allowed)  # M = 0: pure noise
    tensor([[0.5000, 0.5000, 0.0000]])
    """
    allowed = allowed.to(weights.dtype)
    uniform = allowed / allowed.sum(-1, keepdim=True).clamp(min=1.0)  # (..., n, n)
    mixed = keep * weights + (1.0 - keep) * uniform
    return mixed / mixed.sum(-1, keepdim=True).clamp(min=torch.finfo(mixed.dtype).tiny)


class CalibratedAttention(DotProductAttention):
    """Scaled dot-product attention with AC-TSR's spatial and adversarial calibrators.

    It extends ``DotProductAttention`` and keeps its parameter names (``qkv``, ``output``), so the
    calibrators are the only extra parameters. With ``lite`` the module trains calibrated and, in
    eval mode, runs its parent's plain (and fused) path: a lite model serves as SASRec, with
    SASRec's cost, and its shared weights load into a plain ``dot`` model.
    """

    # A refinement acts on A_comb, a mix of two softmaxes, which has no logits of its own.
    refines_logits = False

    def __init__(
        self, *, hidden_size: int, num_heads: int, attn_dropout: float, refinement: Refinement,
        fused: bool = True, lite: bool = False,
    ) -> None:
        super().__init__(
            hidden_size=hidden_size, num_heads=num_heads, attn_dropout=attn_dropout, refinement=refinement,
            fused=fused,
        )
        h, d_h = num_heads, self.head_size
        self.lite = lite
        # Spatial calibrator (eqs. 8, 9): affine maps of [q_i; k_j], kept as q_i.w_q + k_j.w_k + b so
        # that no (B, h, n, n, 2 d_h) tensor is built. Zero start: o^ = 1/2 (no order preference)
        # and d^ = 0, so training starts from the distance prior -theta^2 ln(1 + |i - j|)^2 / 2.
        self.order_query = nn.Parameter(torch.zeros(h, d_h))
        self.order_key = nn.Parameter(torch.zeros(h, d_h))
        self.order_bias = nn.Parameter(torch.zeros(h))
        self.distance_query = nn.Parameter(torch.zeros(h, d_h))
        self.distance_key = nn.Parameter(torch.zeros(h, d_h))
        self.distance_bias = nn.Parameter(torch.zeros(h))
        # eq. 11's theta: one per layer, started at 1 (at 0 its gradient, prop. to theta, would stay 0).
        self.theta = nn.Parameter(torch.ones(()))
        # Adversarial calibrator (eq. 14): the perturbation network theta^P.
        self.perturb_query = nn.Linear(hidden_size, hidden_size, bias=False)
        self.perturb_key = nn.Linear(hidden_size, hidden_size, bias=False)
        # eq. 17: g = sigmoid(q_i w_g + b_g), one gate per query and head, 1/2 at the start.
        self.gate_weight = nn.Parameter(torch.zeros(h, d_h))
        self.gate_bias = nn.Parameter(torch.zeros(h))
        self.mode: Mode = "calibrated"
        self.mask_sink: list[tuple[Tensor, Tensor]] | None = None  # set by ``perturbed``

    @property
    def reads_fused_attention(self) -> bool:
        """Only a lite model takes the fused path (serving as plain dot-product attention)."""
        return self.lite

    @property
    def encodes_position(self) -> bool:
        """The spatial calibrator encodes positions, so by default the backbone drops its position
        embedding (as the public AC-TSR configs do); a lite model serves without the calibrator and
        keeps it."""
        return not self.lite

    def perturbation_parameters(self) -> list[nn.Parameter]:
        """theta^P of this layer: W_Qp and W_Kp (eq. 14)."""
        return [self.perturb_query.weight, self.perturb_key.weight]

    def spatial_scores(self, q: Tensor, k: Tensor) -> Tensor:
        """s^(o) + s^(d) (B, h, n, n) for queries and keys (B, h, n, d_h) (eqs. 8-11)."""
        n = q.shape[-2]
        # the distance target at least in float32, and in float64 in a float64 model
        order, distance = spatial_targets(n, q.device, torch.promote_types(q.dtype, torch.float32))
        # z_ij = q_i . w_q + k_j . w_k + b  (B, h, n, 1) + (B, h, 1, n) + (h, 1, 1)
        order_logit = (
            torch.einsum("bhnd,hd->bhn", q, self.order_query)[..., :, None]
            + torch.einsum("bhnd,hd->bhn", k, self.order_key)[..., None, :]
            + self.order_bias[:, None, None]
        )
        # eq. 10 with its typo fixed: o ln o^ + (1 - o) ln(1 - o^), o^ = sigmoid(z);
        # ln sigmoid(z) = -softplus(-z), ln(1 - sigmoid(z)) = -softplus(z).
        order_score = -F.softplus(torch.where(order, -order_logit, order_logit))
        distance_hat = (
            torch.einsum("bhnd,hd->bhn", q, self.distance_query)[..., :, None]
            + torch.einsum("bhnd,hd->bhn", k, self.distance_key)[..., None, :]
            + self.distance_bias[:, None, None]
        )
        distance_score = -0.5 * self.theta**2 * (distance - distance_hat) ** 2  # eq. 11
        return order_score + distance_score

    def perturbation_mask(self, x_query: Tensor) -> Tensor:
        """M = sigmoid(Q W_Qp (K W_Kp)^T / sqrt(d_h)) (B, h, n, n) from the concatenated heads'
        queries and keys ``x_query`` (B, n, 2, d) (eq. 14)."""
        B, n, _, d = x_query.shape
        qp = self.perturb_query(x_query[:, :, 0]).view(B, n, self.num_heads, self.head_size).transpose(1, 2)
        kp = self.perturb_key(x_query[:, :, 1]).view(B, n, self.num_heads, self.head_size).transpose(1, 2)
        return torch.sigmoid(qp @ kp.transpose(-2, -1) / math.sqrt(self.head_size))

    def forward(
        self, x: Tensor, mask: AttentionMask, need_weights: bool = False
    ) -> tuple[Tensor, AttentionWeights | None]:
        if self.lite and not self.training:
            return super().forward(x, mask, need_weights)  # serve as plain SASRec attention
        B, n, d = x.shape
        projected = self.qkv(x).view(B, n, 3, d)
        q, k, v = projected.view(B, n, 3, self.num_heads, self.head_size).permute(2, 0, 3, 1, 4)  # (B, h, n, d_h)
        logits = (q / math.sqrt(self.head_size)) @ k.transpose(-2, -1) + self.spatial_scores(q, k)
        spatial = masked_softmax(logits, mask)  # A_s (B, h, n, n), eq. 12
        keep = self.perturbation_mask(projected[:, :, :2])  # M (B, h, n, n)
        if self.mode == "perturbed":
            # the mask itself, not through masked_softmax: padded queries' rows must be empty
            allowed = mask.allowed_to_real_queries
            attend = perturb(spatial, keep, allowed)  # A_p, eq. 13
            if self.mask_sink is not None:
                self.mask_sink.append((keep, allowed))
        else:
            # A_s * e^(1 - M) re-normalised = softmax(logits + 1 - M) (eq. 15), computed stably.
            calibrated = masked_softmax(logits + (1.0 - keep), mask)
            gate = torch.sigmoid(
                torch.einsum("bhnd,hd->bhn", q, self.gate_weight) + self.gate_bias[:, None]
            )[..., None]  # (B, h, n, 1), eq. 17
            attend = gate * spatial + (1.0 - gate) * calibrated  # A_comb, eq. 16
        refined = self.refinement(attend, mask)
        out = dropout(refined, self.attn_dropout, self.training) @ v  # (B, h, n, d_h)
        made_by = self.mode if self.refinement.is_identity else f"{self.mode}, then refined"
        weights = AttentionWeights(base=spatial, refined=refined, made_by=made_by) if need_weights else None
        return self.output(out.transpose(1, 2).reshape(B, n, d)), weights


def calibrated_layers(model: nn.Module) -> list[CalibratedAttention]:
    """Every calibrated attention in ``model``, in block order."""
    return [m for m in model.modules() if isinstance(m, CalibratedAttention)]


def perturbation_parameters(model: nn.Module) -> list[nn.Parameter]:
    """theta^P: the perturbation network (W_Qp, W_Kp) of every calibrated layer of ``model``."""
    return [p for layer in calibrated_layers(model) for p in layer.perturbation_parameters()]


def recommender_parameters(model: nn.Module) -> list[nn.Parameter]:
    """theta: every parameter of ``model`` outside the perturbation network."""
    perturbation = {id(p) for p in perturbation_parameters(model)}
    return [p for p in model.parameters() if id(p) not in perturbation]


@contextmanager
def perturbed(model: nn.Module) -> Iterator[list[tuple[Tensor, Tensor]]]:
    """Run ``model`` with the perturbed weights A_p in every calibrated layer; yields a list that
    collects each layer's (M (B, h, n, n), allowed (B, 1, n, n)) for ``mask_norm``.

    >>> with perturbed(model) as masks:  # doctest: +SKIP
    ...     loss_p = loss_fn(model, model(inputs), targets)
    >>> penalty = mask_norm(masks)  # doctest: +SKIP
    """
    layers = calibrated_layers(model)
    masks: list[tuple[Tensor, Tensor]] = []
    for layer in layers:
        layer.mode, layer.mask_sink = "perturbed", masks
    try:
        yield masks
    finally:
        for layer in layers:
            layer.mode, layer.mask_sink = "calibrated", None


def mask_norm(masks: list[tuple[Tensor, Tensor]]) -> Tensor:
    """L_norm = sum_l ||1 - m^l||_2 (eq. 21) over the masks collected by ``perturbed``.

    For each layer and sequence the L2 (Frobenius) norm of 1 - M over all heads and the allowed
    (real, and causal where the mask is) query/key pairs; averaged over the sequences of the batch,
    so that the penalty does not grow with the batch size; summed over layers.
    """
    total = torch.zeros(())
    for keep, allowed in masks:
        gap = ((1.0 - keep.float()) * allowed).flatten(1)  # (B, h n n)
        total = total.to(gap.device) + torch.linalg.vector_norm(gap, dim=1).mean()
    return total


@ATTENTIONS.register("calibrated")
def build_calibrated_attention(cfg: ModelConfig, block_index: int, refinement: Refinement) -> CalibratedAttention:
    return CalibratedAttention.from_config(cfg, refinement, lite=cfg.ac_lite)
