"""Checks every registered model on an accelerator against a float64 CPU reference.

The test suite runs on CPU only (CI has no GPU); this script is what a session with a GPU runs to
see that the CUDA paths compute the same functions: the fused attention kernel and its dropout,
the narrow windows, the refinements, the chunked cross-entropy and the evaluator's ranking.

    python benchmarks/device_check.py [--device cuda] [--output benchmarks/results/device-check]

For every (backbone, attention, refinement) the registries offer, and again with the refinement
on the attention's logits wherever it can act on them (``model.refine_input: logits``, rows named
``...@logits``), a small model is built with its refinement matrices far from identity (init std
0.5, so that a wrong refinement shows) and:
  - in training mode without dropout, its outputs, its base and refined attention weights and the
    gradient of every parameter (of a fixed function of the outputs), in float32 on the device
    (TF32 off), are compared with float64 on the CPU: relative errors ||device - cpu|| / ||cpu||,
    each parameter on its own (against at least 1e-6 of the whole gradient's norm, so that a
    parameter whose gradient is ~0 does not divide by ~0);
  - eval-mode scores of every item are compared the same way;
  - on the device, the fused kernel on a narrow window (no weights asked) is compared with the
    fused kernel on the full max_len window, and with the explicit (non-fused) path;
  - under bf16 autocast, training-mode outputs and gradients are compared with float64 (bf16
    tolerance; bf16-mixed training takes this path, scoring does not), on a second model of the
    same configuration with its refinement at the default init, where bf16-mixed training starts.
    At init std 0.5 STOSA's refinements on logits are so sensitive (rounding every parameter to
    bf16 moves their exact gradients 13-33%, every other row's at most 1.1%) that a correct row
    (M_simp on logits, 9.6e-2) came within 15% of a planted defect (M_value on logits with its
    attention in bf16, 1.1e-1); at the default init the correct rows are at most 2.3e-2 and that
    defect at least 9.2e-2, either side of the tolerance;
  - with attention dropout alone on, two training passes must differ, eval mode must not.
Then the chunked cross-entropy's loss and gradients, and full-ranking ranks with seen items
excluded, are compared with the CPU. The script prints a table and exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))  # this checkout's code, as the other scripts, whatever is installed

from awrsr.models import ModelConfig, build_model, compatible_combinations  # noqa: E402
from awrsr.version import source_version  # noqa: E402

# Relative errors. Float32 with TF32 off lands near 1e-7 in forward values, and up to ~1e-3 in
# the gradient of a single parameter whose gradient is ~1e-6 of the whole (AC-TSR's gate at
# initialisation); a wrong or missing gradient is ~1 or more. bf16 (8 bits of mantissa) lands
# near 4e-3 in outputs and 1e-2 in all gradients together.
TOLERANCE = {"outputs": 1e-5, "weights": 1e-5, "scores": 1e-5, "narrow vs full": 1e-5, "fused vs explicit": 1e-5,
             "gradients": 1e-3, "bf16 outputs": 2e-2, "bf16 gradients": 5e-2}


def relative_error(value: torch.Tensor, reference: torch.Tensor, scale: float = 0.0) -> float:
    value, reference = value.detach().double().cpu(), reference.detach().double().cpu()
    if not torch.isfinite(value).all():
        return float("inf")
    return float((value - reference).norm() / max(float(reference.norm()), scale, 1e-30))


def gradient_error(grads: dict, reference: dict, per_parameter: bool = True) -> float:
    """The largest per-parameter relative error (see the module docstring), or the error of all
    gradients together (for bf16, whose error on a parameter with a tiny gradient means nothing)."""
    if set(grads) != set(reference):
        return float("inf")  # a parameter got a gradient on one side only
    total = torch.cat([g.flatten() for g in reference.values()])
    if not per_parameter:
        return relative_error(torch.cat([grads[k].flatten().cpu().double() for k in reference]), total)
    return max(relative_error(grads[k], reference[k], 1e-6 * float(total.norm())) for k in reference)


def paired_models(config: dict, num_items: int, device: torch.device) -> tuple[torch.nn.Module, torch.nn.Module]:
    """A float64 CPU reference and a float32 copy of it on ``device``, both in training mode
    without dropout."""
    torch.manual_seed(0)
    reference = build_model(ModelConfig(**config, dropout=0.0), num_items).double().train()
    model = build_model(ModelConfig(**config, dropout=0.0), num_items)
    model.load_state_dict(reference.state_dict())
    return reference, model.float().to(device).train()


def padded_batch(num_items: int, max_len: int, batch: int, generator: torch.Generator) -> torch.Tensor:
    """Left-padded histories of lengths 1..max_len - 3, so that the narrow window is exercised."""
    lengths = torch.randint(1, max_len - 2, (batch,), generator=generator)
    ids = torch.randint(1, num_items + 1, (batch, max_len), generator=generator)
    slots = torch.arange(max_len).expand(batch, -1)
    return torch.where(slots >= max_len - lengths.unsqueeze(1), ids, torch.zeros_like(ids))


def forward_backward(model, ids: torch.Tensor, autocast: bool = False):
    """Outputs and parameter gradients of a fixed function of the outputs."""
    model.zero_grad(set_to_none=True)
    with torch.autocast(ids.device.type, dtype=torch.bfloat16, enabled=autocast):
        out, _ = model.encode(ids)
    out = out.float() if out.dtype == torch.bfloat16 else out
    fixed = torch.linspace(-1, 1, out.numel(), device=out.device, dtype=out.dtype).view_as(out)
    (out * fixed).sum().backward()
    grads = {name: p.grad.detach().clone() for name, p in model.named_parameters() if p.grad is not None}
    return out.detach(), grads


def with_full_history_row(ids: torch.Tensor) -> torch.Tensor:
    """``ids`` plus one row whose history fills the window: the blocks then run on all max_len
    slots without asking for weights (which would turn the fused kernel off)."""
    full = torch.arange(1, ids.shape[1] + 1, device=ids.device).unsqueeze(0)
    return torch.cat([ids, full])


def model_label(name: str, attention: str, refine: str, refine_input: str, options: dict | None = None) -> str:
    """A row's name: backbone/attention/refinement, with "@logits" for a refinement on logits and
    other model options in brackets."""
    extra = f"[{','.join(f'{k}={v}' for k, v in options.items())}]" if options else ""
    return f"{name}/{attention}/{refine}" + ("@logits" if refine_input == "logits" else "") + extra


# Options that change what runs on the device beyond the (backbone, attention, refinement) triple:
# M_stoc with W2 takes a square root after a floor (model.refine_stoc_distance, session 52).
OPTION_ROWS = [(("stosa", "wasserstein", "stoc"), {"refine_stoc_distance": "plain"})]


def check_model(
    name: str, attention: str, refine: str, device: torch.device, refine_input: str = "weights", options: dict | None = None,
) -> dict:
    config = dict(name=name, attention=attention, refine=refine, max_len=24, hidden_size=32, num_heads=2,
                  num_blocks=2, refine_init_std=0.5, refine_input=refine_input, **(options or {}))
    num_items = 50
    generator = torch.Generator().manual_seed(0)
    reference, model = paired_models(config, num_items, device)
    ids = padded_batch(num_items, config["max_len"], 16, generator)
    on_device = ids.to(device)
    errors: dict[str, float] = {}

    with torch.no_grad():
        ref_weights = reference.encode(ids, need_weights=True)[1]
        weights = model.encode(on_device, need_weights=True)[1]
    errors["weights"] = max(
        max(relative_error(w.base, r.base), relative_error(w.refined, r.refined))
        for w, r in zip(weights, ref_weights)
    )
    ref_out, ref_grads = forward_backward(reference, ids)
    out, grads = forward_backward(model, on_device)  # narrow window, fused kernel where it applies
    errors["outputs"] = relative_error(out, ref_out)
    errors["gradients"] = gradient_error(grads, ref_grads)  # narrow window
    full_out, _ = forward_backward(model, with_full_history_row(on_device))
    errors["narrow vs full"] = relative_error(out, full_out[:-1])
    explicit = build_model(ModelConfig(**config, dropout=0.0, fused_attention=False), num_items)
    explicit.load_state_dict(reference.state_dict())
    explicit_out, _ = forward_backward(explicit.float().to(device).train(), on_device)
    errors["fused vs explicit"] = relative_error(out, explicit_out)
    default_init = {key: value for key, value in config.items() if key != "refine_init_std"}
    bf16_reference, bf16_model = paired_models(default_init, num_items, device)
    bf16_ref_out, bf16_ref_grads = forward_backward(bf16_reference, ids)
    bf16_out, bf16_grads = forward_backward(bf16_model, on_device, autocast=True)
    errors["bf16 outputs"] = relative_error(bf16_out, bf16_ref_out)
    errors["bf16 gradients"] = gradient_error(bf16_grads, bf16_ref_grads, per_parameter=False)

    reference.eval(), model.eval()
    with torch.no_grad():
        errors["scores"] = relative_error(model.score_next(on_device), reference.score_next(ids))

    noisy = build_model(ModelConfig(**config, dropout=0.0, attn_dropout=0.3), num_items).to(device).train()
    with torch.no_grad():
        dropout_differs = not torch.equal(noisy(on_device), noisy(on_device))
        noisy.eval()
        eval_same = torch.equal(noisy(on_device), noisy(on_device))
    ok = all(errors[k] < limit for k, limit in TOLERANCE.items()) and dropout_differs and eval_same
    return {"model": model_label(name, attention, refine, refine_input, options), **errors, "attention dropout differs": dropout_differs,
            "eval deterministic": eval_same, "ok": ok}


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
    return {"model": "chunked cross-entropy", **errors, "ok": all(v < 1e-5 for v in errors.values())}


def check_ranking(device: torch.device) -> dict:
    from awrsr.eval.metrics import pessimistic_ranks, pessimistic_ranks_of_shared_scores

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
    # the popularity baseline's sorted search, against the count over the same scores on every row
    shared = scores[0].to(device)
    by_search = pessimistic_ranks_of_shared_scores(
        shared, shared.sort().values, targets.to(device), tuple(t.to(device) for t in excluded)).cpu()
    by_count = pessimistic_ranks(scores[0].expand_as(scores), targets, excluded)
    equal = bool(torch.equal(cpu, gpu)) and bool(torch.equal(by_search, by_count))
    return {"model": "pessimistic ranks", "equal": equal, "ok": equal}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--output", default=None, help="write the rows as JSON to OUTPUT.json")
    args = parser.parse_args()
    version = source_version(ROOT)  # the whole checkout (this script included), before anything runs
    device = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = False  # compare float32 with float32, not TF32
    torch.backends.cudnn.allow_tf32 = False
    rows = []
    # every triple, and again with the refinement on logits where it can be (model.refine_input)
    checks = [(triple, "weights", None) for triple in compatible_combinations()]
    checks += [(triple, "logits", None) for triple in compatible_combinations("logits") if triple[2] != "none"]
    checks += [(triple, refine_input, options) for triple, options in OPTION_ROWS for refine_input in ("weights", "logits")
               if triple in compatible_combinations(refine_input)]
    for triple, refine_input, options in checks:
        try:
            rows.append(check_model(*triple, device, refine_input, options))
        except Exception as err:  # a crash is a failed check, reported with the rest
            rows.append({"model": model_label(*triple, refine_input, options), "error": f"{type(err).__name__}: {err}", "ok": False})
    for check in (check_cross_entropy, check_ranking):
        try:
            rows.append(check(device))
        except Exception as err:
            rows.append({"model": check.__name__, "error": f"{type(err).__name__}: {err}", "ok": False})
    keys = list(TOLERANCE)
    width = max(len(row["model"]) for row in rows)
    print(f"{'model':{width}s} " + " ".join(f"{k[:10]:>10s}" for k in keys) + "  ok")
    for row in rows:
        cells = " ".join(f"{row[k]:10.1e}" if k in row else f"{'':10s}" for k in keys)
        print(f"{row['model']:{width}s} {cells}  {'yes' if row['ok'] else 'NO ' + str(row.get('error', ''))}")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" and torch.cuda.is_available() else str(device)
    print(f"{sum(r['ok'] for r in rows)}/{len(rows)} checks pass on {name} (torch {torch.__version__}, awrsr {version})")
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(f"{args.output}.json").write_text(json.dumps({"device": name, "torch": torch.__version__, "code": version, "rows": rows}, indent=1, default=str))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
