"""The AWRSR paper's figures, drawn from run directories (PNG, matplotlib).

- attention heatmaps of A and the refined B for one user's last positions (paper Figure 3)
- validation NDCG@5 per epoch for several runs (Figure 4)
- the global gradient norm per epoch (Figure 5)
- NDCG@N for N = 1..20 from the stored test ranks (Figure 2)
- for a comparison, NDCG@10 by the users' history length (from its by_length.csv)
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
import torch  # noqa: E402

from awrsr.errors import ArtifactError  # noqa: E402
from awrsr.experiments.by_length import held_out_ranks  # noqa: E402  (re-exported)
from awrsr.infer.artifact import METRICS_FILE  # noqa: E402


def _history(run_dir: Path) -> pl.DataFrame:
    path = run_dir / "history.csv"
    if not path.is_file():
        raise ArtifactError(f"{run_dir}: no history.csv (not a finished awrsr run?)")
    return pl.read_csv(path)


def plot_curves(runs: dict[str, Path], column: str, ylabel: str, out: Path) -> Path | None:
    """``column`` of each run's history per epoch; None (no file) if no run logged it (runs made
    before the column existed are left out of the figure)."""
    fig, ax = plt.subplots(figsize=(6, 4))
    drawn = 0
    for label, run_dir in runs.items():
        history = _history(run_dir)
        if column in history.columns:
            data = history.select("epoch", column).drop_nulls()
            ax.plot(data["epoch"], data[column], label=label)
            drawn += 1
    if drawn:
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(ylabel)
        ax.legend()
        fig.tight_layout()
        fig.savefig(out, dpi=120)
    plt.close(fig)
    return out if drawn else None


def plot_ndcg_at_n(runs: dict[str, Path], out: Path, max_n: int = 20) -> Path:
    fig, ax = plt.subplots(figsize=(6, 4))
    ns = np.arange(1, max_n + 1)
    for label, run_dir in runs.items():
        ranks = held_out_ranks(run_dir).astype(np.float64)
        gains = 1.0 / np.log2(ranks + 1.0)
        ax.plot(ns, [(gains * (ranks <= n)).mean() for n in ns], marker=".", label=label)
    ax.set_xlabel("N")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("test NDCG@N")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def plot_by_length(table_csv: Path, out: Path) -> Path:
    """Grouped bars: each variant's mean (± std over seeds) per bucket of history length, from a
    comparison's by_length.csv."""
    table = pl.read_csv(table_csv)
    buckets = list(dict.fromkeys(table["bucket"].cast(pl.Utf8).to_list()))
    variants = list(dict.fromkeys(table["variant"].cast(pl.Utf8).to_list()))
    users = dict(zip(table["bucket"].cast(pl.Utf8), table["users"]))
    width = 0.8 / len(variants)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(buckets)), 4))
    for i, variant in enumerate(variants):
        rows = table.filter(pl.col("variant").cast(pl.Utf8) == variant)
        means = dict(zip(rows["bucket"].cast(pl.Utf8), rows["mean"]))
        stds = dict(zip(rows["bucket"].cast(pl.Utf8), rows["std"]))
        x = np.arange(len(buckets)) + (i - (len(variants) - 1) / 2) * width
        ax.bar(x, [means.get(b, np.nan) for b in buckets], width, yerr=[stds.get(b, 0.0) for b in buckets],
               label=variant, capsize=2)
    ax.set_xticks(np.arange(len(buckets)), [f"{b}\n({users[b]:,})" for b in buckets])
    ax.set_xlabel("history length (test users)")
    metric = table["metric"][0].upper().replace("HR@", "Recall@")
    ax.set_ylabel(f"test {metric}, mean over seeds")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def plot_attention(run_dir: Path, out: Path, user: int | None = None, last: int = 15) -> Path:
    """A and B of every layer (rows) for one test user's last ``last`` positions, head 0."""
    from awrsr.data import data_config_from_dict, leave_one_out, load_sequence_data
    from awrsr.infer import load_artifact

    artifact = load_artifact(run_dir)
    cases = leave_one_out(load_sequence_data(data_config_from_dict(artifact.config["data"]))).test
    lengths = cases.history.lengths
    if user is None:
        user = int(np.flatnonzero(lengths >= last)[0]) if (lengths >= last).any() else int(lengths.argmax())
    inputs = torch.from_numpy(cases.history.select(np.array([user])).to_padded(artifact.model_config.max_len))
    with torch.no_grad():
        _, weights = artifact.model.encode(inputs, need_weights=True)
    k = min(last, int(lengths[user]), inputs.shape[1])
    fig, axes = plt.subplots(len(weights), 2, figsize=(8, 3.6 * len(weights)), squeeze=False)
    for layer, w in enumerate(weights):
        for col, (name, matrix) in enumerate((("A (base)", w.base), ("B (refined)", w.refined))):
            ax = axes[layer][col]
            image = ax.imshow(matrix[0, 0, -k:, -k:].numpy(), cmap="viridis", vmin=0)
            ax.set_title(f"layer {layer + 1}: {name}")
            ax.set_xlabel("key position")
            ax.set_ylabel("query position")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
            fig.colorbar(image, ax=ax, fraction=0.046)
    fig.suptitle(f"user index {user}, last {k} positions")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def draw_figures(directory: str | Path, output_dir: str | Path | None = None, user: int | None = None) -> list[Path]:
    """All figures for a run directory, or for a ``compare`` directory (variant/seed-*/ runs: the
    first finished seed of each variant is drawn, in the comparison's order, base first)."""
    directory = Path(directory)
    out = Path(output_dir) if output_dir else directory / "figures"
    out.mkdir(parents=True, exist_ok=True)
    if (directory / METRICS_FILE).is_file():  # a finished run (metrics.json is written last)
        runs = {directory.name: directory}
        attention_runs = [directory]
    else:
        runs = {}
        for variant in _variant_dirs(directory, out):
            seeds = sorted((p for p in variant.iterdir() if (p / METRICS_FILE).is_file()), key=_seed_order)
            if seeds:
                runs[variant.name] = seeds[0]
        if not runs:
            raise ArtifactError(f"{directory}: neither a finished run directory nor a compare directory with a finished run")
        attention_runs = list(runs.values())
    files = [
        plot_curves(runs, "val/ndcg@5", "validation NDCG@5", out / "valid_ndcg5.png"),
        plot_curves(runs, "train/grad_norm", "gradient norm (epoch mean)", out / "grad_norm.png"),
        plot_ndcg_at_n(runs, out / "ndcg_at_n.png"),
    ]
    if attention_runs != [directory] and (directory / "by_length.csv").is_file():  # a comparison's table
        files.append(plot_by_length(directory / "by_length.csv", out / "ndcg_by_length.png"))
    for run_dir in attention_runs:
        name = run_dir.parent.name if run_dir != directory else run_dir.name
        files.append(plot_attention(run_dir, out / f"attention_{name}.png", user=user))
    return [f for f in files if f is not None]


def _variant_dirs(directory: Path, out: Path) -> list[Path]:
    """The variant directories of a compare directory, in the order of its runs.csv (base first)
    when it has one, else by name."""
    found = sorted(p for p in directory.iterdir() if p.is_dir() and p != out and not p.name.startswith("."))
    order: list[str] = []
    if (directory / "runs.csv").is_file():
        order = list(dict.fromkeys(pl.read_csv(directory / "runs.csv")["variant"].cast(pl.Utf8).to_list()))
    return sorted(found, key=lambda p: (order.index(p.name) if p.name in order else len(order), p.name))


def _seed_order(run_dir: Path) -> tuple[int, str]:
    number = run_dir.name.removeprefix("seed-")
    return (int(number), "") if number.isdigit() else (1 << 30, run_dir.name)
