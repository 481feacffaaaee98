"""Accuracy benchmark: train one config over several seeds, report test metrics at the best
validation epoch (full ranking, seen items filtered), mean and std over seeds.

    python benchmarks/accuracy.py configs/sasrec/ml-1m.yaml --seeds 42 43
    python benchmarks/accuracy.py configs/sasrec/beauty.yaml --seeds 42 43 -- --train.precision bf16-mixed

Each seed's run directory is kept under runs/bench/; a seed whose run finished (metrics.json
present) is not trained again, so an interrupted benchmark resumes. Results go to
benchmarks/results/<name>.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
from rich.console import Console

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from awrsr.run_config import load_fit_config  # noqa: E402
from awrsr.workflows import fit  # noqa: E402

METRICS = ["hr@1", "hr@5", "hr@10", "hr@20", "ndcg@1", "ndcg@5", "ndcg@10", "ndcg@20", "mrr"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config")
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 43])
    parser.add_argument("--name", help="result name (default: the config's file stem and parent)")
    parser.add_argument(
        "--resume", action="store_true",
        help="continue each seed's run from its last checkpoint (e.g. with a larger budget after --)",
    )
    argv = sys.argv[1:]
    split_at = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split_at])
    args.overrides = argv[split_at + 1:]  # extra `awrsr fit` options after --

    config_path = Path(args.config)
    name = args.name or f"{config_path.parent.name}-{config_path.stem}"
    console = Console()
    runs = []
    for seed in args.seeds:
        run_dir = ROOT / "runs" / "bench" / f"{name}-seed{seed}"
        metrics_file = run_dir / "metrics.json"
        resumable = args.resume and (run_dir / "checkpoints" / "last.ckpt").is_file()
        if metrics_file.is_file() and not resumable:
            console.print(f"[dim]seed {seed}: reusing {run_dir}[/dim]")
            metrics = json.loads(metrics_file.read_text())
        else:
            cfg = load_fit_config([
                "--config", str(config_path), "--train.seed", str(seed), "--train.progress_bar", "false",
                "--output_dir", str(run_dir), *args.overrides,
            ])
            started = time.perf_counter()
            # without --resume an unfinished run there starts again, as it always did here
            metrics = fit(**{**cfg, "resume": resumable, "overwrite": not resumable}, console=console).metrics
            console.print(f"seed {seed}: {time.perf_counter() - started:.0f} s")
        runs.append({"seed": seed, "run_dir": str(run_dir.relative_to(ROOT)), **metrics})

    summary = {
        m: {"mean": statistics.mean(r["test"][m] for r in runs),
            "std": statistics.stdev(r["test"][m] for r in runs) if len(runs) > 1 else 0.0}
        for m in METRICS
    }
    record = {
        "name": name,
        "config": str(config_path),
        "overrides": args.overrides,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (threads per run: see overrides; torch default {torch.get_num_threads()})",
        "torch": torch.__version__,
        "seeds": args.seeds,
        "test_mean_std": summary,
        "runs": runs,
    }
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(record, indent=2) + "\n")
    (out / f"{name}.md").write_text(markdown(record))
    console.print(markdown(record))


def markdown(record: dict) -> str:
    runs = record["runs"]
    lines = [
        f"### {record['name']} ({record['config']} {' '.join(record['overrides'])})".rstrip(),
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
    lines += ["", f"Dataset: {ds['users']:,} users, {ds['items']:,} items, {ds['interactions']:,} interactions, sha256 {ds['sha256'][:12]}. Machine: {record['machine']}, torch {record['torch']}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
