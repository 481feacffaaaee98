"""Checks every registered model on an accelerator against a float64 CPU reference.

The test suite runs on CPU only (CI has no GPU); this script is what a session with a GPU runs to
see that the CUDA paths compute the same functions: the fused attention kernel, ``F.dropout``,
the narrow windows, the chunked cross-entropy and the evaluator's ranking on device.

    python benchmarks/device_check.py [--device cuda] [--output results/device-check]

For every (backbone, attention, refinement) the registries offer, a small model is built and:
  - its outputs, its scores of every item and the gradient of every parameter (of a fixed function
    of the outputs, in training mode without dropout) on the device in float32 are compared with
    float64 on the CPU, by the relative error ||device - reference|| / ||reference||;
  - on the device, the narrow-window outputs must equal the full max_len window's;
  - under bf16 autocast the scores must be finite and close to float32's (ranking survives);
  - with dropout on, two training passes must differ and eval mode must be deterministic.
Then the chunked cross-entropy's loss and gradient, and full-ranking ranks with seen-item
filtering, are compared with the CPU. The script prints a table and exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import torch

from awrsr.errors import ConfigError
from awrsr.models import MODELS, ModelConfig, build_model
from awrsr.nn.attention import ATTENTIONS
from awrsr.nn.refine import REFINEMENTS

FLOAT32_TOLERANCE = 1e-4  # relative; float32 arithmetic with TF32 off lands near 1e-6
BF16_TOLERANCE = 5e-2


def combinations() -> list[tuple[str, str, str]]:
    combos = []
    for triple in itertools.product(MODELS.names(), ATTENTIONS.names(), REFINEMENTS.names()):
        try:
            build_model(ModelConfig(name=triple[0], attention=triple[1], refine=triple[2], max_len=4, hidden_size=4), 3)
        except ConfigError:
            continue
        combos.append(triple)
    return combos


def relative_error(value: torch.Tensor, reference: torch.Tensor) -> float:
    value, reference = value.detach().double().cpu(), reference.detach().double().cpu()
    if not torch.isfinite(value).all():
        return float("inf")
    return float((value - reference).norm() / reference.norm().clamp_min(1e-30))


def padded_batch(num_items: int, max_len: int, batch: int, generator: torch.Generator) -> torch.Tensor:
    """Left-padded histories of lengths 1..max_len (the longest shorter than max_len, so the
    narrow window is exercised)."""
    lengths = torch.randint(1, max_len - 2, (batch,), generator=generator)
    ids = torch.randint(1, num_items + 1, (batch, max_len), generator=generator)
    slots = torch.arange(max_len).expand(batch, -1)
    return torch.where(slots >= max_len - lengths.unsqueeze(1), ids, torch.zeros_like(ids))


def outputs_and_gradients(model, ids: torch.Tensor, need_weights: bool = False):
    model.zero_grad(set_to_none=True)
    out, _ = model.encode(ids, need_weights=need_weights)
    weights = torch.linspace(-1, 1, out.numel(), device=out.device, dtype=out.dtype).view_as(out)
    (out * weights).sum().backward()
    grads = {name: p.grad.detach().clone() for name, p in model.named_parameters() if p.grad is not None}
    return out.detach(), grads


def check_model(name: str, attention: str, refine: str, device: torch.device) -> dict:
    config = dict(name=name, attention=attention, refine=refine, max_len=24, hidden_size=32, num_heads=2, num_blocks=2)
    num_items = 50
    generator = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    reference = build_model(ModelConfig(**config, dropout=0.0), num_items).double().train()
    model = build_model(ModelConfig(**config, dropout=0.0), num_items)
    model.load_state_dict(reference.state_dict())
    model = model.float().to(device).train()
    ids = padded_batch(num_items, config["max_len"], 16, generator)

    ref_out, ref_grads = outputs_and_gradients(reference, ids)
    out, grads = outputs_and_gradients(model, ids.to(device))
    full_out, _ = outputs_and_gradients(model, ids.to(device), need_weights=True)
    errors = {"outputs": relative_error(out, ref_out), "narrow vs full": relative_error(out, full_out)}
    missing = sorted(set(ref_grads) ^ set(grads))
    # Over all parameters together: a parameter whose reference gradient is ~0 (AC-TSR's gate
    # before training, say) would make a per-parameter ratio meaningless.
    keys = sorted(set(ref_grads) & set(grads))
    errors["gradients"] = relative_error(torch.cat([grads[k].flatten().cpu().double() for k in keys]),
                                         torch.cat([ref_grads[k].flatten() for k in keys]))

    reference.eval(), model.eval()
    with torch.no_grad():
        ref_scores = reference.score_next(ids)
        scores = model.score_next(ids.to(device))
        errors["scores"] = relative_error(scores, ref_scores)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            bf16_scores = model.score_next(ids.to(device))
        errors["bf16 scores"] = relative_error(bf16_scores.float(), ref_scores)

    noisy = build_model(ModelConfig(**config, dropout=0.3), num_items).to(device).train()
    with torch.no_grad():
        first, second = noisy(ids.to(device)), noisy(ids.to(device))
        dropout_differs = not torch.equal(first, second)
        noisy.eval()
        eval_same = torch.equal(noisy(ids.to(device)), noisy(ids.to(device)))
    ok = (
        all(errors[k] < FLOAT32_TOLERANCE for k in ("outputs", "narrow vs full", "gradients", "scores"))
        and errors["bf16 scores"] < BF16_TOLERANCE and dropout_differs and eval_same and not missing
    )
    return {"model": f"{name}/{attention}/{refine}", **errors, "dropout differs": dropout_differs,
            "eval deterministic": eval_same, "missing gradients": missing, "ok": ok}


def check_cross_entropy(device: torch.device) -> dict:
    from awrsr.nn.chunked_cross_entropy import linear_cross_entropy

    generator = torch.Generator().manual_seed(1)
    hidden = torch.randn(300, 32, generator=generator, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(1001, 32, generator=generator, dtype=torch.float64, requires_grad=True)
    targets = torch.randint(1, 1001, (300,), generator=generator)
    reference = torch.nn.functional.cross_entropy(hidden @ weight.T, targets, reduction="mean")
    reference.backward()
    h = hidden.detach().float().to(device).requires_grad_()
    w = weight.detach().float().to(device).requires_grad_()
    loss = linear_cross_entropy(h, w, targets.to(device), chunk=64)  # several chunks
    loss.backward()
    errors = {"loss": relative_error(loss, reference), "d hidden": relative_error(h.grad, hidden.grad),
              "d weight": relative_error(w.grad, weight.grad)}
    return {"model": "chunked cross-entropy", **errors, "ok": all(v < FLOAT32_TOLERANCE for v in errors.values())}


def check_ranking(device: torch.device) -> dict:
    from awrsr.eval.evaluator import pessimistic_ranks

    generator = torch.Generator().manual_seed(2)
    scores = torch.randint(0, 20, (64, 300), generator=generator).float()  # ties on purpose
    targets = torch.randint(0, 300, (64,), generator=generator)
    rows = torch.randint(0, 64, (500,), generator=generator)
    items = torch.randint(0, 300, (500,), generator=generator)
    pairs = torch.unique(torch.stack([rows, items]), dim=1)
    pairs = pairs[:, pairs[1] != targets[pairs[0]]]  # seen items other than the target
    excluded = (pairs[0], pairs[1])
    cpu = pessimistic_ranks(scores, targets, excluded)
    gpu = pessimistic_ranks(scores.to(device), targets.to(device), tuple(t.to(device) for t in excluded)).cpu()
    return {"model": "pessimistic ranks", "equal": bool(torch.equal(cpu, gpu)), "ok": bool(torch.equal(cpu, gpu))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--output", default=None, help="write the rows as JSON to OUTPUT.json")
    args = parser.parse_args()
    device = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = False  # compare float32 with float32, not TF32
    torch.backends.cudnn.allow_tf32 = False
    rows = []
    for triple in combinations():
        try:
            rows.append(check_model(*triple, device))
        except Exception as err:  # a crash is a failed check, reported with the rest
            rows.append({"model": "/".join(triple), "error": f"{type(err).__name__}: {err}", "ok": False})
    for check in (check_cross_entropy, check_ranking):
        try:
            rows.append(check(device))
        except Exception as err:
            rows.append({"model": check.__name__, "error": f"{type(err).__name__}: {err}", "ok": False})
    keys = ["outputs", "narrow vs full", "gradients", "scores", "bf16 scores"]
    print(f"{'model':40s} " + " ".join(f"{k:>14s}" for k in keys) + "  ok")
    for row in rows:
        cells = " ".join(f"{row[k]:14.2e}" if k in row else f"{'':14s}" for k in keys)
        print(f"{row['model']:40s} {cells}  {'yes' if row['ok'] else 'NO ' + str(row.get('error', ''))}")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else str(device)
    print(f"{sum(r['ok'] for r in rows)}/{len(rows)} checks pass on {name} (torch {torch.__version__})")
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(f"{args.output}.json").write_text(json.dumps({"device": name, "torch": torch.__version__, "rows": rows}, indent=1, default=str))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
