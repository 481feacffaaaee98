"""Speed benchmark: seconds per training epoch and per full-ranking evaluation of all users.

    python benchmarks/speed.py                      # ML-1M (n=200) and Beauty (n=50), fp32 and bf16
    python benchmarks/speed.py --datasets ml-1m --precision 32-true --profile
    python benchmarks/speed.py --precision 32-true --threads 1     # what one of two parallel runs gets
    python benchmarks/speed.py --datasets ml-1m --precision 32-true --max-len 50 200 \
        --refinements none simp value add            # the cost of each refinement
    python benchmarks/speed.py --datasets beauty --precision 32-true \
        --variants-file configs/compare/neighbours-beauty.yaml   # every model: parameters, epoch, inference
    python benchmarks/speed.py --device cuda --precision 32-true bf16-mixed   # on a GPU

The training epoch runs the same model and loss code as `awrsr fit` (d=64, 2 blocks, 1 head,
batch 128, dropout 0.2; full softmax CE unless a variant names its loss, STOSA's with the hinge
weight of configs/stosa/<dataset>.yaml) over every batch of the real data once (each model's own
training example: Cloze for BERT4Rec); the evaluation ranks every test user's target against all
items with seen items filtered, and its rate is the inference speed in users per second (AC-TSR's
Table 2 layout). Subnormal floats are flushed on the CPU, as `awrsr fit` does by default
(train.flush_denormal; --keep-subnormals times them kept, as before session 57). Results go to
benchmarks/results/speed.json and speed.md.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import platform
import sys
import time
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from awrsr.data import DataConfig, leave_one_out, load_sequence_data  # noqa: E402
from awrsr.eval import FullRankingEvaluator, rank_batch  # noqa: E402
from awrsr.models import ModelConfig, build_model, served_parameters  # noqa: E402
from awrsr.nn.attention.calibrated import perturbation_parameters, recommender_parameters  # noqa: E402
from awrsr.nn.losses import LOSSES  # noqa: E402
from awrsr.train.module import adversarial_backward  # noqa: E402
from awrsr.train.batches import training_loader  # noqa: E402
from awrsr.train.process_state import subnormal_mode  # noqa: E402
from awrsr.version import source_version  # noqa: E402

DATASETS = {
    "ml-1m": (ROOT.parent / "shared/data/ml-1m/ml-1m.txt", 200),
    "beauty": (ROOT.parent / "shared/data/beauty/Beauty.txt", 50),
}


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work, so that a host clock reads the time it took."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def loss_options(loss: str, dataset: str) -> dict:
    """What the loss is trained with besides its name: STOSA's hinge weight from its shipped config
    of ``dataset`` (configs/stosa/<dataset>.yaml), so that its step is timed as it trains."""
    if loss != "stosa":
        return {}
    train = yaml.safe_load((ROOT / "configs" / "stosa" / f"{dataset}.yaml").read_text())["train"]
    return {"pvn_weight": float(train.get("pvn_weight", 0.0))}


def train_epoch_seconds(
    model, loader, precision: str, max_steps: int | None, loss: str = "ce", device: torch.device = torch.device("cpu"),
    options: dict | None = None,
) -> tuple[float, int]:
    loss_fn = functools.partial(LOSSES.get(loss), **(options or {}))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.98))
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16-mixed")
    model.train()
    # AC-TSR trains adversarially: two objectives, two forward passes (as the Lightning module).
    adversary = perturbation_parameters(model)
    recommender = recommender_parameters(model)

    def step(sequences: torch.Tensor) -> None:
        opt.zero_grad(set_to_none=True)
        inputs, targets = model.training_example(sequences.to(device))
        if adversary:  # its backward passes run between its forward passes, inside autocast as in Lightning
            with autocast:
                loss = lambda i, t: loss_fn(model, model(i), t)  # noqa: E731
                adversarial_backward(model, loss, inputs, targets, 0.1, adversary, recommender)
        else:
            with autocast:
                loss_value = loss_fn(model, model(inputs), targets)
            loss_value.backward()
        opt.step()

    if not len(loader):
        raise SystemExit("no training batches to time")
    # The first steps of a new model pay for allocations: two warm-up steps, then the epoch is timed
    # from its first batch (grouped batches differ in cost, so none may be left out of the timing).
    for _, (sequences,) in zip(range(2), loader):
        step(sequences)
    synchronize(device)
    timed, started = 0, time.perf_counter()
    for (sequences,) in loader:
        step(sequences)
        timed += 1
        if max_steps and timed >= max_steps:
            break
    synchronize(device)
    elapsed = time.perf_counter() - started
    return elapsed * len(loader) / timed, timed  # extrapolated to the whole epoch when max_steps cuts it


def profile_step(model, loader, precision: str, loss: str = "ce", options: dict | None = None) -> str:
    from torch.profiler import ProfilerActivity, profile

    # the variant's own loss (STOSA's distance loss, say), as it trains
    loss_fn = functools.partial(LOSSES.get(loss), **(options or {}))
    model.zero_grad(set_to_none=True)  # the timed steps' last gradients (AC-TSR's step refuses them)
    inputs, targets = model.training_example(next(iter(loader))[0])
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16-mixed")
    model.train()
    adversary = perturbation_parameters(model)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        if adversary:  # AC-TSR: its real step, as train_epoch_seconds times it
            with autocast:
                run = lambda i, t: loss_fn(model, model(i), t)  # noqa: E731
                adversarial_backward(model, run, inputs, targets, 0.1, adversary, recommender_parameters(model))
        else:
            with autocast:
                loss = loss_fn(model, model(inputs), targets)
            loss.backward()
    return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12)


def variant_setup(name: str, options: dict | None) -> tuple[dict, str]:
    """``{"model.attention": "positional", "train.loss": "ce"}`` -> (``{"attention": "positional"}``,
    ``"ce"``): the model options and the loss are what change the timings here."""
    options = dict(options or {})
    options.pop("compare_to", None)  # a table-layout key, not a setting
    loss = options.pop("train.loss", "ce")
    other = [key for key in options if not key.startswith("model.")]
    if other:
        raise SystemExit(f"variant {name!r}: only model.* options and train.loss can be timed, got {other}")
    return {key.removeprefix("model."): value for key, value in options.items()}, loss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--precision", nargs="+", default=["32-true", "bf16-mixed"])
    parser.add_argument("--max-steps", type=int, default=None, help="time only this many steps and extrapolate")
    parser.add_argument("--profile", action="store_true", help="print where one training step spends its time")
    parser.add_argument("--output", help="result file stem under benchmarks/results (default: speed)")
    parser.add_argument("--refinements", nargs="+", default=["none"], help="model.refine values to time")
    parser.add_argument("--max-len", type=int, nargs="+", default=None, help="windows to time (default: the dataset's)")
    parser.add_argument(
        "--variants-file", help="YAML of named model variants (configs/compare/*.yaml); replaces --refinements",
    )
    parser.add_argument(
        "--group-by-length", action="store_true", help="batches of similar history lengths (train.group_by_length)",
    )
    parser.add_argument("--parameters-only", action="store_true", help="count parameters (trained, served); time nothing")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (a GPU: models, batches and evaluation there)")
    parser.add_argument(
        "--threads", type=int, default=None,
        help="torch threads (default: torch's); 1 times what each of two parallel runs gets",
    )
    parser.add_argument(
        "--keep-subnormals", action="store_true", help="do not flush subnormal floats (train.flush_denormal: false)",
    )
    args = parser.parse_args()
    torch.set_flush_denormal(not args.keep_subnormals)  # before torch starts its threads, which keep the mode
    version = source_version(ROOT)  # the whole checkout, benchmarks/ included, as it is now, not after the timings
    device = torch.device(args.device)
    if args.group_by_length and args.max_steps:
        print("note: grouped batches differ in cost, so --max-steps extrapolates from an unrepresentative few;"
              " leave it out to time whole epochs", file=sys.stderr)
    if args.profile and device.type != "cpu":
        raise SystemExit("--profile profiles the CPU step only")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.variants_file:
        from awrsr.experiments.compare import load_variants_file

        variants = {name: variant_setup(name, options) for name, options in load_variants_file(args.variants_file).items()}
    else:
        variants = {refine: ({"refine": refine}, "ce") for refine in args.refinements}

    rows = []
    for name in args.datasets:
        path, default_len = DATASETS[name]
        dataset = load_sequence_data(DataConfig(path=str(path)))
        split = leave_one_out(dataset)
        for max_len in args.max_len or [default_len]:
            loader = training_loader(split.train, max_len, batch_size=128, seed=0, group_by_length=args.group_by_length)
            evaluator = FullRankingEvaluator(split.test, max_len, batch_size=256)
            for precision in args.precision:
                for variant, (options, loss) in variants.items():
                    torch.manual_seed(0)
                    cfg = ModelConfig(**{"max_len": max_len, "hidden_size": 64, "num_blocks": 2, "dropout": 0.2, **options})
                    model = build_model(cfg, dataset.num_items).to(device)
                    row = {
                        "dataset": name, "users": dataset.num_users, "items": dataset.num_items, "max_len": max_len,
                        "model": variant, "loss": loss, "parameters": sum(p.numel() for p in model.parameters()),
                        # what recommending touches: less than the above for AC-TSR-lite (no calibrators)
                        "served_parameters": served_parameters(model, max_len, dataset.num_items),
                        "precision": precision, "batches": len(loader), "group_by_length": args.group_by_length,
                    }
                    if not args.parameters_only:
                        epoch_s, steps = train_epoch_seconds(
                            model, loader, precision, args.max_steps, loss, device, loss_options(loss, name))
                        rank_batch(model.eval(), evaluator.batches[-1].to(device))  # warm-up (the longest histories), not timed
                        synchronize(device)
                        started = time.perf_counter()
                        evaluator.evaluate(model, device)  # ends with the ranks back on the host
                        eval_s = time.perf_counter() - started
                        row.update({
                            "timed_batches": steps, "train_epoch_s": round(epoch_s, 2), "eval_all_users_s": round(eval_s, 2),
                            "inference_users_per_s": round(len(split.test.targets) / eval_s, 1),
                        })
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    if args.profile and not args.parameters_only:
                        print(profile_step(model, loader, precision, loss, loss_options(loss, name)))

    machine = (f"{platform.machine()}, {torch.get_num_threads()} torch threads, subnormals {subnormal_mode()}, "
               f"torch {torch.__version__}, awrsr {version}")
    if device.type == "cuda":
        machine += f", {torch.cuda.get_device_name(device)}"
    md = [
        f"Machine: {machine}. d=64, 2 blocks, 1 head, dropout 0.2, batch 128, each model's own loss "
        f"({', '.join(sorted({r['loss'] for r in rows}))})"
        + (", batches grouped by length (train.group_by_length)" if args.group_by_length else "")
        + (f"; epoch times extrapolated from {args.max_steps} timed steps" if args.max_steps and not args.parameters_only else "")
        + ".", "",
        "| dataset | n | model | parameters (trained) | parameters (served) | precision | batches/epoch "
        "| s / training epoch | s / full-ranking eval (all users) | inference (users/s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    md += [
        f"| {r['dataset']} | {r['max_len']} | {r['model']} | {r['parameters'] / 1e6:.3f}M | {r['served_parameters'] / 1e6:.3f}M "
        f"| {r['precision']} | {r['batches']} | "
        + (" | ".join(["-"] * 3) if args.parameters_only else
           f"{r['train_epoch_s']:.1f} | {r['eval_all_users_s']:.2f} | {r['inference_users_per_s']:,.0f}")
        + " |"
        for r in rows
    ]
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    stem = args.output or "speed"
    (out / f"{stem}.json").write_text(json.dumps({"machine": machine, "code": version, "rows": rows}, indent=2) + "\n")
    (out / f"{stem}.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
