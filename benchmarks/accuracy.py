"""Accuracy benchmark: train one config over several seeds, report test metrics at the best
validation epoch (full ranking, seen items filtered), mean and std over seeds.

    python benchmarks/accuracy.py configs/sasrec/ml-1m.yaml --seeds 42 43
    python benchmarks/accuracy.py configs/sasrec/beauty.yaml --seeds 42 43 -- --train.precision bf16-mixed

Each seed's run directory is kept under runs/bench/; a seed whose run finished (metrics.json
present) is not trained again, so an interrupted benchmark resumes. Results go to
benchmarks/results/<name>.json and .md.

Finished runs trained elsewhere (by `awrsr compare`, say) are tabulated the same way, without
training; they must share one config apart from the seed and the thread count:

    python benchmarks/accuracy.py --runs runs/compare/refine-beauty/none/seed-4{2,3,4} --name sasrec-beauty-3seeds
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch
import yaml
from rich.console import Console

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from awrsr.data import DataConfig  # noqa: E402
from awrsr.eval import EvalConfig  # noqa: E402
from awrsr.experiments.runs import MACHINE_OPTIONS, RESOLVED_SECTIONS, read_run_config  # noqa: E402
from awrsr.experiments.stats import mean_std  # noqa: E402
from awrsr.infer.artifact import RECORDED_DATA_FILE  # noqa: E402
from awrsr.models import ModelConfig  # noqa: E402
from awrsr.run_config import config_differences, load_fit_config  # noqa: E402
from awrsr.train import TrainConfig  # noqa: E402
from awrsr.workflows import fit  # noqa: E402

METRICS = ["hr@1", "hr@5", "hr@10", "hr@20", "ndcg@1", "ndcg@5", "ndcg@10", "ndcg@20", "mrr"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", nargs="?")
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 43])
    parser.add_argument("--name", help="result name (default: the config's file stem and parent)")
    parser.add_argument(
        "--resume", action="store_true",
        help="continue each seed's run from its last checkpoint (e.g. with a larger budget after --)",
    )
    parser.add_argument("--runs", nargs="+", type=Path, help="tabulate these finished run directories instead of training")
    argv = sys.argv[1:]
    split_at = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split_at])
    args.overrides = argv[split_at + 1:]  # extra `awrsr fit` options after --
    if args.runs:
        if args.config or args.overrides or args.resume:
            parser.error("--runs tabulates finished runs: give no config, --resume or fit options with it")
        if not args.name:
            parser.error("--runs needs --name (the result file's name)")
        record = tabulated_record(args.name, args.runs)
        write_record(record, Console())
        return
    if not args.config:
        parser.error("give a config to train, or --runs")

    config_path = Path(args.config)
    name = args.name or f"{config_path.parent.name}-{config_path.stem}"
    console = Console()
    runs = []
    for seed in args.seeds:
        run_dir = ROOT / "runs" / "bench" / f"{name}-seed{seed}"
        metrics = seed_run(config_path, seed, run_dir, args.overrides, args.resume, console)
        runs.append({"seed": seed, "run_dir": str(run_dir.relative_to(ROOT)), **metrics})

    record = {
        "name": name,
        "config": str(config_path),
        "overrides": args.overrides,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (threads per run: see overrides; torch default {torch.get_num_threads()})",
        "torch": torch.__version__,
        "seeds": args.seeds,
        "test_mean_std": summarise_test_metrics(runs),
        "runs": runs,
    }
    write_record(record, console)


def seed_run(config_path: Path, seed: int, run_dir: Path, overrides: list[str], resume: bool, console: Console) -> dict:
    """The metrics of ``config_path`` with ``overrides`` and ``seed`` trained in ``run_dir``: a
    finished run there is reused only if it is of this configuration (the thread count aside);
    any other would be published under these options."""
    cfg = load_fit_config([
        "--config", str(config_path), "--train.seed", str(seed), "--train.progress_bar", "false",
        "--output_dir", str(run_dir), *overrides,
    ])
    resumable = resume and (run_dir / "checkpoints" / "last.ckpt").is_file()
    if (run_dir / "metrics.json").is_file() and not resumable:
        stored = read_run_config(run_dir / "config.yaml")
        differing = config_differences(stored, {k: cfg[k] for k in RESOLVED_SECTIONS}, ignore=MACHINE_OPTIONS)
        if differing:
            sys.exit(f"{run_dir} holds a finished run of another configuration (differs in {', '.join(differing[:6])}); "
                     "give another --name, or delete it to train again")
        console.print(f"[dim]seed {seed}: reusing {run_dir}[/dim]")
        return json.loads((run_dir / "metrics.json").read_text())
    started = time.perf_counter()
    # without --resume an unfinished run there starts again, as it always did here
    metrics = fit(**{**cfg, "resume": resumable, "overwrite": not resumable}, console=console).metrics
    console.print(f"seed {seed}: {time.perf_counter() - started:.0f} s")
    return metrics


# settings that may differ between runs tabulated together: they do not change what is trained
# (a time budget does: a run it stopped is not a converged one)
_RUN_ONLY_SETTINGS = {"seed", "num_threads", "progress_bar"}
_SECTIONS = {"data": DataConfig, "model": ModelConfig, "train": TrainConfig, "evaluation": EvalConfig}


def comparable_config(stored: dict) -> dict:
    """A run's config.yaml with each section's defaults filled in (a field added to awrsr after
    the run counts as its default, as on resume), less what may differ between seeds."""
    config = {name: {**asdict(cls()), **(stored.get(name) or {})} for name, cls in _SECTIONS.items()}
    config["train"] = {k: v for k, v in config["train"].items() if k not in _RUN_ONLY_SETTINGS}
    # where the data lay may differ; what it holds may not (compared by fingerprint)
    config["data"] = {k: v for k, v in config["data"].items() if k != "path"}
    return config


def tabulated_record(name: str, run_dirs: list[Path]) -> dict:
    """The record of finished runs, refused unless they share one config apart from the seed."""
    runs, configs = [], []
    for run_dir in run_dirs:
        if not (run_dir / "metrics.json").is_file() or not (run_dir / "config.yaml").is_file():
            sys.exit(f"{run_dir}: not a finished run (no metrics.json or config.yaml)")
        configs.append(comparable_config(yaml.safe_load((run_dir / "config.yaml").read_text()) or {}))
        path = run_dir.resolve()
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        metrics = json.loads((run_dir / "metrics.json").read_text())
        metrics.get("dataset", {}).pop(RECORDED_DATA_FILE, None)  # a path on the machine that trained it
        runs.append({"run_dir": str(shown), **metrics})
    for run_dir, config in zip(run_dirs[1:], configs[1:]):
        keys = [f"{name}.{key}" for name in _SECTIONS for key in config[name] if config[name][key] != configs[0][name].get(key)]
        if keys:
            sys.exit(f"{run_dir}: config differs from {run_dirs[0]}'s in {', '.join(keys)}")
    seeds = [r["seed"] for r in runs]
    if len(set(seeds)) < len(seeds):
        sys.exit(f"the runs repeat a seed ({seeds}): a mean over seeds needs each once")
    fingerprints = {r["dataset"]["sha256"] for r in runs}
    if len(fingerprints) > 1:
        sys.exit(f"the runs trained on {len(fingerprints)} different datasets (metrics.json's dataset.sha256)")
    machines = sorted({r["machine"]["device"] if isinstance(r.get("machine"), dict) and "device" in r["machine"]
                       else "not recorded" for r in runs})
    return {
        "name": name,
        "config": str(runs[0]["run_dir"]) + "/config.yaml",
        "overrides": [],
        "machine": "from the runs' records: " + "; ".join(machines),
        "torch": None,  # each run's own machine record has it
        "seeds": seeds,
        "test_mean_std": summarise_test_metrics(runs),
        "runs": runs,
    }


def summarise_test_metrics(runs: list[dict]) -> dict:
    summary = {m: mean_std([r["test"][m] for r in runs]) for m in METRICS}
    return {m: {"mean": mean, "std": std} for m, (mean, std) in summary.items()}


def write_record(record: dict, console: Console) -> None:
    name = record["name"]
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(record, indent=2) + "\n")
    (out / f"{name}.md").write_text(markdown(record))
    console.print(markdown(record))


def markdown(record: dict) -> str:
    runs = record["runs"]
    lines = [
        f"### {record['name']} ({' '.join([record['config'], *record['overrides']])})",
        "",
        "Test metrics at the best validation epoch; full ranking, seen items filtered, pessimistic ties.",
        "",
        "| seed | " + " | ".join(m.upper() for m in METRICS) + " | best epoch | epochs | s/epoch | train s |",
        "|---" * (len(METRICS) + 5) + "|",
    ]
    for r in runs:
        lines.append(
            f"| {r['seed']} | " + " | ".join(f"{r['test'][m]:.4f}" for m in METRICS)
            + f" | {r['selection']['best_epoch']} | {r['selection']['epochs_trained']}"
            + f" | {r['time']['mean_epoch_s']:.1f} | {r['time']['train_s']:.0f} |"
        )
    s = record["test_mean_std"]
    lines.append("| mean ± std | " + " | ".join(f"{s[m]['mean']:.4f} ± {s[m]['std']:.4f}" for m in METRICS) + " | | | | |")
    pop = runs[0]["popularity"]["test"]
    lines.append("| popularity | " + " | ".join(f"{pop[m]:.4f}" for m in METRICS) + " | | | | |")
    ds = runs[0]["dataset"]
    lines += ["", f"Dataset: {ds['users']:,} users, {ds['items']:,} items, {ds['interactions']:,} interactions, sha256 {ds['sha256'][:12]}. Machine: {record['machine']}" + (f", torch {record['torch']}." if record["torch"] else "."), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
