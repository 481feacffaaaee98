"""The AWRSR paper's figures, drawn from run directories (PNG, matplotlib).

- attention heatmaps of A and the refined B (A alone without refinement) for one user's last positions (paper Figure 3)
- validation NDCG@5 per epoch for several runs (Figure 4)
- the global gradient norm per epoch (Figure 5)
- NDCG@N for N = 1..20 from the stored test ranks (Figure 2)
- for a comparison, NDCG@10 by the users' history length (from its by_length.csv)
- for a tune, every trial's validation NDCG@5 and gradient norm per epoch
- for a run still training, or a comparison's seeds still training, their curves so far (from their logs)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
import torch  # noqa: E402

from awrsr.data import SequenceData  # noqa: E402
from awrsr.errors import ArtifactError, ConfigError  # noqa: E402
from awrsr.eval import per_user_metric  # noqa: E402
from awrsr.files import output_directory, user_path  # noqa: E402
from awrsr.experiments.by_length import held_out_ranks  # noqa: E402  (re-exported)
from awrsr.infer.artifact import (  # noqa: E402
    CONFIG_FILE, METRICS_FILE, collection_error, is_seed_run, missing_artifact_files, runs_inside,
)
from awrsr.nn.attention.base import AttentionWeights  # noqa: E402
from awrsr.experiments.runs import MACHINE_OPTIONS, RESOLVED_SECTIONS, read_run_config  # noqa: E402
from awrsr.train.trainer import CHECKPOINT_DIR, HISTORY_FILE, RUN_RECORD, UNREADABLE_LOG, epoch_history, log_files, read_logs  # noqa: E402


def _history(run_dir: Path) -> pl.DataFrame:
    """A run's metrics per epoch: a finished run's history.csv, an unfinished one's log so far
    (with the rows a resume set aside), as history.csv would hold them."""
    if is_unfinished_run(run_dir):
        try:  # every logged value is a number; text is a row half written, or not Lightning's log
            return epoch_history(read_logs(run_dir)).with_columns(pl.exclude("epoch").cast(pl.Float64))
        except UNREADABLE_LOG as err:
            raise ArtifactError(f"{run_dir}: its epoch log cannot be read now ({str(err).splitlines()[0]}); try again") from None
    path = run_dir / HISTORY_FILE
    if not path.is_file():
        raise ArtifactError(f"{run_dir}: no history.csv (not a finished awrsr run?)")
    return read_result_table(path, ["epoch"])


def is_unfinished_run(run_dir: Path) -> bool:
    """A run that has logged epochs but has no results yet: training, or interrupted."""
    return not (run_dir / METRICS_FILE).is_file() and bool(log_files(run_dir))


def read_result_table(path: Path, columns: list[str], text: Sequence[str] = ()) -> pl.DataFrame:
    """A CSV that awrsr wrote (history.csv, runs.csv, by_length.csv), with ``columns``; an
    ArtifactError naming the file if it is empty, damaged or not ours. ``text`` columns are read
    as written (a variant named 1e-05 or 0.10 is a directory name, not a number)."""
    try:
        table = pl.read_csv(path, schema_overrides={name: pl.Utf8 for name in text}, glob=False)
    except (OSError, pl.exceptions.PolarsError) as err:
        raise ArtifactError(f"{path}: cannot read it as the CSV awrsr writes ({str(err).splitlines()[0]})") from None
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ArtifactError(f"{path}: no column {', '.join(map(repr, missing))}; not a table awrsr wrote, or damaged")
    return table


# Ten colours, then the same ten again with the next line style (bars: hatch), so that no two of
# up to 40 variants share a look (the neighbours' comparison has 17); a variant keeps its look in
# every figure of a comparison.
LINE_STYLES = ("-", "--", "-.", (0, (3, 1, 1, 1, 1, 1)))  # dash-dot-dot: ":" is kept for runs so far
SO_FAR_LINE_STYLE = ":"  # a comparison's seeds still training, in their variant's colour
SELECTED_MARKER = "x"  # on each finished run's curve, the epoch whose weights it kept
HATCHES = ("", "//", "..", "xx")
LEGEND_INSIDE_MAX = 6  # more entries than this go beside the axes, where they hide no data
LEGEND_INSIDE_CHARS = 30  # and so does a longer label (a tune's trials name their settings)


@dataclass(frozen=True)
class VariantStyle:
    color: str
    linestyle: str
    hatch: str


def variant_styles(labels: Sequence[str]) -> dict[str, VariantStyle]:
    """Each label's look by its position in ``labels`` (the comparison's order, base first)."""
    return {
        label: VariantStyle(f"C{i % 10}", LINE_STYLES[i // 10 % len(LINE_STYLES)], HATCHES[i // 10 % len(HATCHES)])
        for i, label in enumerate(dict.fromkeys(labels))
    }


def _with_styles(labels: Sequence[str], styles: dict[str, VariantStyle] | None) -> dict[str, VariantStyle]:
    """``styles`` (one comparison's, shared by its figures) extended to the labels it lacks, after it."""
    known = dict(styles or {})
    return variant_styles([*known, *labels]) | known


def _seed_labels(counts: dict[str, int]) -> tuple[dict[str, str], int | None]:
    """Legend labels, and the seeds per variant when every variant has the same number (the
    legend's title says it once); when the numbers differ, each label says its own."""
    numbers = set(counts.values())
    if len(numbers) == 1:
        return {label: label for label in counts}, numbers.pop()
    return {label: f"{label} ({n} seed{'s' if n != 1 else ''})" for label, n in counts.items()}, None


def _legend(ax: plt.Axes, title: str | None, extra: Sequence[Line2D] = ()) -> None:
    """The axes' labelled artists, then ``extra`` entries that stand for no drawn line (a marker's key)."""
    handles, labels = ax.get_legend_handles_labels()
    handles, labels = [*handles, *extra], [*labels, *(entry.get_label() for entry in extra)]
    wide = max(map(len, labels), default=0) > LEGEND_INSIDE_CHARS
    if len(labels) > LEGEND_INSIDE_MAX or wide:
        legend = ax.legend(handles, labels, fontsize="small", title=title, title_fontsize="small",
                           loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
        legend.set_in_layout(False)  # the axes keep their size; the saved file grows to hold it
    else:
        ax.legend(handles, labels, fontsize="small", title=title, title_fontsize="small")


def _save(fig: plt.Figure, out: Path) -> None:
    fig.tight_layout()
    # "tight" and the legends named: the file grows to hold a legend beside the axes
    # (and the figure's texts, its title: a list given here replaces matplotlib's default one,
    # so an empty or legends-only list cropped the title away)
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    fig.savefig(out, dpi=120, bbox_inches="tight", bbox_extra_artists=[*legends, *fig.texts])


def plot_curves(
    runs: dict[str, list[Path]], column: str, ylabel: str, out: Path, styles: dict[str, VariantStyle] | None = None,
    so_far: dict[str, list[Path]] | None = None, log_if_wide: bool = False,
) -> Path | None:
    """``column`` of each run's history per epoch, one line per seed in its variant's look (early
    stopping ends seeds at different epochs, so they are not averaged); None (no file) if no run
    logged it (runs made before the column existed are left out of the figure). ``so_far``:
    {variant: its seeds still training}, each drawn from its log, dotted in its variant's colour,
    with one legend entry per variant that names them ("simp: seed-44 so far"). A finished run's
    selected epoch (the best by its monitored validation metric, whose weights it kept and tested)
    is marked on its line, so that a curve that peaks elsewhere (NDCG@5 against a monitored
    NDCG@10) is not read as the tested model."""
    styles = _with_styles([*runs, *(so_far or {})], styles)
    logged = _logged(runs, column)
    training = _logged(so_far or {}, column)
    if not logged and not training:
        return None
    labels, seeds_each = _seed_labels({label: len(histories) for label, histories in logged.items()})
    several = any(len(histories) > 1 for histories in logged.values())
    fig, ax = plt.subplots(figsize=(6, 4))
    monitors = []
    for label, histories in logged.items():
        for i, (run, history) in enumerate(histories):
            selection = _selection(run)
            if selection is not None:
                monitors.append(selection[1])
            # one weight for every finished seed: a variant of one seed must not stand out as bolder
            _draw_history(ax, history, column, styles[label].color, styles[label].linestyle, faint=several,
                          label=labels[label] if i == 0 else None, selected=selection[0] if selection else None)
    for label, histories in training.items():
        seeds = ", ".join(run.name for run, _ in histories)
        for i, (_, history) in enumerate(histories):
            # on top of the finished seeds, with a mark where each stands now
            _draw_history(ax, history, column, styles[label].color, SO_FAR_LINE_STYLE, faint=True,
                          label=f"{label}: {seeds} so far" if i == 0 else None, so_far=True)
    if log_if_wide and _spans_decades(ax):  # one variant's large norms would flatten all others
        ax.set_yscale("log")
    ax.set_xlabel("epoch")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(ylabel + (" (log scale)" if ax.get_yscale() == "log" else ""))
    marker_key = [Line2D([], [], color="0.3", marker=SELECTED_MARKER, linestyle="none",
                         label=f"selected epoch (best {' / '.join(dict.fromkeys(monitors))})")] if monitors else []
    _legend(ax, None if not several else f"one line per seed, {seeds_each} each" if seeds_each else "one line per seed",
            marker_key)
    _save(fig, out)
    plt.close(fig)
    return out


def _logged(runs: dict[str, list[Path]], column: str) -> dict[str, list[tuple[Path, pl.DataFrame]]]:
    """{label: [(run, history)]} of the runs whose history has ``column``; labels with none are left out."""
    logged = {label: [(run, h) for run in seeds if column in (h := _history(run)).columns] for label, seeds in runs.items()}
    return {label: histories for label, histories in logged.items() if histories}


def _selection(run: Path) -> tuple[int, str] | None:
    """A finished run's selected epoch and the metric that chose it (metrics.json's "selection"),
    None for a record without them (one made before they were recorded, or not awrsr's)."""
    try:
        selection = json.loads((run / METRICS_FILE).read_text()).get("selection")
    except (OSError, ValueError, AttributeError):  # AttributeError: a record that is no JSON object
        return None
    if not isinstance(selection, dict):
        return None
    epoch, monitor = selection.get("best_epoch"), selection.get("monitor")
    return (epoch, str(monitor)) if isinstance(epoch, int) and not isinstance(epoch, bool) and monitor else None


def _draw_history(
    ax: plt.Axes, history: pl.DataFrame, column: str, color: str, linestyle: str, faint: bool, label: str | None,
    so_far: bool = False, selected: int | None = None,
) -> None:
    data = history.select("epoch", column).drop_nulls()
    epochs = data["epoch"].to_list()
    at = epochs.index(selected) if selected in epochs else None
    # one epoch is a point (no line would show it); a run still training is marked where it stands
    # now, and drawn above the finished seeds' lines, which would hide it; a finished one where
    # its selected epoch is
    marker = "o" if len(data) == 1 or so_far else SELECTED_MARKER if at is not None else None
    every = [len(data) - 1] if so_far and len(data) else [at] if marker == SELECTED_MARKER else None
    ax.plot(data["epoch"], data[column], color=color, linestyle=linestyle,
            alpha=0.7 if faint else 1.0, linewidth=1.0 if faint else 1.5,
            marker=marker, markersize=6 if marker == SELECTED_MARKER else 4,
            markevery=every, zorder=3 if so_far else 2, label=label)


# A gradient norm's range wider than this is drawn on a log scale (one variant's outliers, or
# another backbone's scale, would flatten the rest into a line).
LOG_SCALE_RATIO = 20.0


def _spans_decades(ax: plt.Axes) -> bool:
    values = np.concatenate([np.asarray(line.get_ydata(), dtype=float) for line in ax.get_lines()] or [np.array([])])
    values = values[np.isfinite(values)]
    return bool(values.size) and values.min() > 0 and values.max() / values.min() > LOG_SCALE_RATIO


def learning_curves(
    runs: dict[str, list[Path]], out: Path, styles: dict[str, VariantStyle], so_far: dict[str, list[Path]] | None = None,
) -> list[Path | None]:
    """Validation NDCG@5 (paper Figure 4) and the gradient norm (Figure 5) per epoch, in ``out``;
    ``so_far``: seeds still training, as ``plot_curves`` draws them."""
    return [
        plot_curves(runs, "val/ndcg@5", "validation NDCG@5", out / "valid_ndcg5.png", styles, so_far),
        plot_curves(runs, "train/grad_norm", "gradient norm (epoch mean)", out / "grad_norm.png", styles, so_far, log_if_wide=True),
    ]


def _test_ranks(run_dir: Path, data_path: str | None) -> np.ndarray:
    """The stored test ranks, else computed again on the run's data (``data_path`` if given)."""
    from awrsr.workflows import rank_artifact

    ranks = held_out_ranks(run_dir, recompute=False)
    return ranks if ranks is not None else rank_artifact(run_dir, data_path, split="test").ranks.numpy()


def ndcg_at_n(ranks: np.ndarray, max_n: int = 20) -> np.ndarray:
    """Mean NDCG@N over the users of ``ranks`` (1-based ranks of each user's held-out item), for
    N = 1..max_n."""
    ranks = torch.from_numpy(np.array(ranks, dtype=np.float64))
    return np.array([per_user_metric(ranks, f"ndcg@{n}").mean().item() for n in range(1, max_n + 1)])


def plot_ndcg_at_n(
    runs: dict[str, list[Path]], out: Path, max_n: int = 20, data_path: str | None = None,
    styles: dict[str, VariantStyle] | None = None,
) -> Path:
    """Test NDCG@N of each variant: the mean over its seeds, with their lowest to highest as a band."""
    styles = _with_styles(list(runs), styles)
    labels, seeds_each = _seed_labels({label: len(seeds) for label, seeds in runs.items()})
    fig, ax = plt.subplots(figsize=(6, 4))
    ns = np.arange(1, max_n + 1)
    for label, seeds in runs.items():
        style = styles[label]
        curves = np.stack([ndcg_at_n(_test_ranks(run_dir, data_path), max_n) for run_dir in seeds])
        ax.plot(ns, curves.mean(axis=0), marker=".", color=style.color, linestyle=style.linestyle, label=labels[label])
        if len(seeds) > 1:
            ax.fill_between(ns, curves.min(axis=0), curves.max(axis=0), color=style.color, alpha=0.15, linewidth=0)
    several = any(len(seeds) > 1 for seeds in runs.values())
    if several:
        ax.set_title("band: lowest to highest seed", fontsize="small")
    ax.set_xlabel("N")
    ax.set_xticks([n for n in (1, 5, 10, 15, 20) if n <= max_n])  # the ends and the tables' cut-offs
    ax.set_ylabel("test NDCG@N")
    _legend(ax, None if not several else f"mean of {seeds_each} seeds" if seeds_each else "mean over seeds")
    _save(fig, out)
    plt.close(fig)
    return out


def plot_by_length(table_csv: Path, out: Path, styles: dict[str, VariantStyle] | None = None) -> Path:
    """Grouped bars: each variant's mean (± std over seeds; no error bar for one seed) per bucket of
    history length, from a comparison's by_length.csv."""
    table = read_result_table(table_csv, ["variant", "bucket", "users", "mean", "std", "metric", "runs"], text=["variant"])
    buckets = list(dict.fromkeys(table["bucket"].cast(pl.Utf8).to_list()))
    variants = list(dict.fromkeys(table["variant"].cast(pl.Utf8).to_list()))
    styles = _with_styles(variants, styles)
    users: dict[str, int] = {}  # the first variant's (the base's) count, as by_length.md heads its columns
    for bucket, count in zip(table["bucket"].cast(pl.Utf8), table["users"]):
        users.setdefault(bucket, count)
    width = 0.8 / len(variants)
    # each bucket gets wider with more variants, so that 17 bars stay apart
    fig, ax = plt.subplots(figsize=(max(6.0, len(buckets) * max(1.2, 0.15 * len(variants))), 4))
    for i, variant in enumerate(variants):
        rows = table.filter(pl.col("variant").cast(pl.Utf8) == variant)
        means = dict(zip(rows["bucket"].cast(pl.Utf8), rows["mean"]))
        # one seed has no spread to show; a bar of length 0 would claim there is none
        stds = {b: s if n > 1 else np.nan for b, s, n in zip(rows["bucket"].cast(pl.Utf8), rows["std"], rows["runs"])}
        x = np.arange(len(buckets)) + (i - (len(variants) - 1) / 2) * width
        style = styles[variant]
        ax.bar(x, [means.get(b, np.nan) for b in buckets], width, yerr=[stds.get(b, 0.0) for b in buckets],
               label=variant, color=style.color, hatch=style.hatch, edgecolor="white" if style.hatch else None,
               linewidth=0, error_kw={"elinewidth": 0.8, "ecolor": "0.25", "capsize": 1.5})
    ax.set_xticks(np.arange(len(buckets)), [f"{b}\n({users[b]:,})" for b in buckets])
    ax.set_xlabel("history length (test users)")
    metric = table["metric"][0].upper().replace("HR@", "Recall@")
    ax.set_ylabel(f"test {metric}, mean over seeds")
    numbers = set(table.group_by("variant").agg(pl.col("runs").max())["runs"].to_list())  # seeds per variant
    title = "mean ± std over seeds (counts differ)" if len(numbers) > 1 else (
        "one seed (no error bars)" if numbers == {1} else f"mean ± std of {numbers.pop()} seeds")
    _legend(ax, title)
    _save(fig, out)
    plt.close(fig)
    return out


@dataclass
class AttentionCase:
    """One run's model and the padded history of the test user whose attention is drawn."""

    model: torch.nn.Module
    inputs: torch.Tensor  # (1, max_len)
    positions: int  # how many of the last positions to draw
    title: str


def attention_case(
    run_dir: Path, user: int | None = None, last: int = 15, data_path: str | None = None, seed_label: str | None = None,
    user_id: str | None = None,
) -> AttentionCase:
    """Load ``run_dir``'s model and its data (checked as ``awrsr evaluate`` checks it) and pick
    the test user: ``user`` (0-based test-user index), ``user_id`` (the user's original id, as
    text), or the first with ``last``+ items. ``seed_label`` (a comparison's run, "seed-42") is
    named in the title."""
    from awrsr.data import leave_one_out
    from awrsr.infer import load_artifact
    from awrsr.workflows import load_run_data

    artifact = load_artifact(run_dir)
    dataset = load_run_data(artifact, data_path)
    cases = leave_one_out(dataset).test
    index = (
        _pick_user_id(dataset.user_ids, cases.users, user_id, _removed_users_note(dataset)) if user_id is not None
        else _pick_user(cases.history.lengths, user, last)
    )
    max_len = artifact.model_config.max_len
    inputs = torch.from_numpy(cases.history.select(np.array([index])).to_padded(max_len))
    k = min(last, int(cases.history.lengths[index]), max_len)
    original = dataset.user_ids[int(cases.users[index])]
    title = f"test user {index} (user id {original}), last {k} positions"
    return AttentionCase(artifact.model, inputs, k, f"{seed_label}: {title}" if seed_label else title)


def _pick_user(lengths: np.ndarray, user: int | None, last: int) -> int:
    if user is None:
        long_enough = np.flatnonzero(lengths >= last)
        return int(long_enough[0]) if len(long_enough) else int(lengths.argmax())
    if not 0 <= user < len(lengths):
        raise ConfigError(
            f"--user {user} is out of range: it is a 0-based index into the run's {len(lengths):,} test users "
            f"(users with 3+ interactions), so 0..{len(lengths) - 1}; it is not an original user id "
            "(--user_id takes one)"
        )
    return user


def _removed_users_note(dataset: SequenceData) -> str:
    """Why a user id in the file may be missing from the run's data: the k-core filter's removals."""
    stats = dataset.stats
    if not stats.removed_users:
        return ""
    return (f"; the data's k-core filter ({stats.kcore}) removed {stats.removed_users:,} user(s), "
            "which may include this one (awrsr stats shows the filtering)")


def _pick_user_id(user_ids: list, test_users: np.ndarray, user_id: str, removed_note: str = "") -> int:
    """The test-case index of the user whose original id reads ``user_id``. ``removed_note`` says
    which users preprocessing removed, for the error when none matches."""
    wanted = str(user_id).strip()
    matches = [u for u, original in enumerate(user_ids) if str(original) == wanted]
    if not matches:
        examples = ", ".join(str(x) for x in user_ids[:3])
        raise ConfigError(
            f"--user_id {wanted!r}: no such user in the run's data (its user ids read like {examples}){removed_note}"
        )
    found = np.flatnonzero(test_users == matches[0])
    if not len(found):
        raise ConfigError(
            f"--user_id {wanted!r} has fewer than the 3 interactions leave-one-out needs, so the run has no test case for it"
        )
    return int(found[0])


def attention_panels(weights: Sequence[AttentionWeights]) -> list[list[tuple[str, torch.Tensor]]]:
    """Per layer, the (title, weights) panels to draw: A and B, titled by what made B (a
    refinement, or AC-TSR's calibration), or A alone when B is A in every layer (a B panel
    identical to A would look like a refinement that did nothing)."""
    unrefined = [w.refined is w.base or torch.equal(w.refined, w.base) for w in weights]
    rows = []
    for layer, (w, same) in enumerate(zip(weights, unrefined), 1):
        if all(unrefined):
            rows.append([(f"layer {layer}: A (no refinement)", w.base)])
        else:  # some blocks refined (model.refine_blocks): say which B is only A
            b_name = "B = A (block not refined)" if same else f"B ({w.made_by})"
            rows.append([(f"layer {layer}: A (base)", w.base), (f"layer {layer}: {b_name}", w.refined)])
    return rows


def plot_attention(case: AttentionCase, out: Path) -> Path:
    """A (and B, when refined) of every layer (rows) for one test user's last positions, head 0."""
    with torch.no_grad():
        _, weights = case.model.encode(case.inputs, need_weights=True)
    rows = attention_panels(weights)
    columns, k = len(rows[0]), case.positions
    shown = [[matrix[0, 0, -k:, -k:].float().numpy() for _, matrix in row] for row in rows]
    # One scale for every panel, so that one colour is one weight in A and in B; a weight of
    # exactly 0 is a masked key (a later position, padding), drawn grey, not as a small weight.
    vmax = max(float(panel.max()) for row in shown for panel in row) or 1.0
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="0.85")
    fig, axes = plt.subplots(len(rows), columns, figsize=(4 * columns, 3.6 * len(rows)), squeeze=False)
    for r, row in enumerate(rows):
        for c, (name, _) in enumerate(row):
            ax = axes[r][c]
            image = ax.imshow(np.where(shown[r][c] == 0, np.nan, shown[r][c]), cmap=cmap, vmin=0, vmax=vmax)
            ax.set_title(name)
            ax.set_xlabel("key position")
            ax.set_ylabel("query position")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
            fig.colorbar(image, ax=ax, fraction=0.046)
    heads = weights[0].base.shape[1]
    fig.suptitle(f"{case.title}; head 1 of {heads}" if heads > 1 else case.title)
    fig.text(0.5, 0.0, "grey: masked (weight 0); one colour scale for every panel", ha="center", va="top", fontsize="small")
    _save(fig, out)
    plt.close(fig)
    return out


# The kinds of figure `plot --figures` chooses from; only attention and NDCG@N (for a run without
# stored test ranks) need the run's data, so `[curves]` draws from a run whose data is elsewhere.
FIGURE_KINDS = ("curves", "ndcg_at_n", "attention", "by_length")


def chosen_figures(figures: Sequence[str] | None) -> tuple[str, ...]:
    """``figures`` checked against ``FIGURE_KINDS`` (None: all of them)."""
    if figures is None:
        return FIGURE_KINDS
    if isinstance(figures, (str, bytes)) or not figures:
        raise ConfigError(f"figures: a list of one or more of {', '.join(FIGURE_KINDS)}, e.g. [curves], got {figures!r}")
    unknown = [kind for kind in figures if kind not in FIGURE_KINDS]
    if unknown:
        raise ConfigError(f"figures: unknown kind {unknown[0]!r}; choose from {', '.join(FIGURE_KINDS)}")
    return tuple(dict.fromkeys(figures))


def draw_figures(
    directory: str | Path, output_dir: str | Path | None = None, user: int | None = None,
    data_path: str | None = None, user_id: str | None = None, figures: Sequence[str] | None = None,
) -> list[Path]:
    """All figures for a run directory, or for a ``compare`` directory (variant/seed-*/ runs, in
    the comparison's order, base first): every finished seed of each variant in the curves and
    NDCG@N (their mean, with a band from lowest to highest), and the first finished seed's
    attention, named in the figure's title. Seeds still training (or interrupted) join the
    learning curves as far as their logs go, marked "so far"; NDCG@N and attention wait for them.

    ``user`` is a 0-based index into each run's test users, ``user_id`` an original user id (give
    at most one); ``data_path`` replaces the stored data
    path (needed for a run trained from a data frame). ``figures`` draws only those kinds
    (``FIGURE_KINDS``; default all that the directory holds). Everything is checked before any
    file or directory is written.
    """
    kinds = chosen_figures(figures)
    if user is not None and user_id is not None:
        raise ConfigError("give --user (a test-user index) or --user_id (an original user id), not both")
    directory = user_path(directory)
    out = output_directory(output_dir, needs="the figures need a directory") if output_dir else directory / "figures"
    trials = tune_trials(directory)
    if trials:  # a tune selects on validation: its trials' validation curves, never test metrics per trial
        given = [option for option, value in (("--user", user), ("--user_id", user_id), ("--data_path", data_path)) if value is not None]
        given += [f"--figures {kind}" for kind in kinds if kind != "curves" and figures is not None]
        if given:
            raise ConfigError(
                f"{directory} is a tune's output: its figures are the trials' learning curves, where {' and '.join(given)} "
                f"{'has' if len(given) == 1 else 'have'} no use; give one trial's directory for its attention and NDCG@N, "
                f"e.g. {next(iter(trials.values()))[0]}"
            )
        out.mkdir(parents=True, exist_ok=True)
        return [f for f in learning_curves(trials, out, variant_styles(list(trials))) if f is not None]
    runs = _runs_to_draw(directory, out)
    single = list(runs.values()) == [[directory]]
    so_far = {} if single else _seeds_so_far(directory, out)
    if not runs and not so_far:
        raise ArtifactError(f"{directory}: neither a run directory nor a compare directory with a run that has logged an epoch")
    # A run kept as records only (metrics, history, test ranks: e.g. copied back from a GPU lease
    # or unpacked from benchmarks/results/run-records) has no model to show attention from; its
    # curves and NDCG@N are still drawn.
    cases = {
        label: attention_case(
            seeds[0], user, data_path=data_path, seed_label=None if single else seeds[0].name, user_id=user_id,
        )
        for label, seeds in runs.items() if "attention" in kinds and not missing_artifact_files(seeds[0])
    }
    # NDCG@N needs each seed's test ranks: stored, or computed again from its model; a seed with
    # neither (records copied without them) is left out, and the legend counts the seeds drawn
    from awrsr.workflows import TEST_RANKS_FILE

    ranked = {
        label: kept for label, seeds in runs.items()
        if "ndcg_at_n" in kinds
        and (kept := [s for s in seeds if (s / TEST_RANKS_FILE).is_file() or not missing_artifact_files(s)])
    }
    by_length = not single and "by_length" in kinds and (directory / "by_length.csv").is_file()  # a comparison's table
    if figures is not None and not (cases or ranked or by_length or "curves" in kinds):
        raise ArtifactError(f"{directory}: none of the figures asked for ({', '.join(kinds)}) can be drawn from it")
    out.mkdir(parents=True, exist_ok=True)
    styles = variant_styles([*runs, *so_far])  # a variant looks the same in every figure
    files = [
        *(learning_curves(runs, out, styles, so_far) if "curves" in kinds else []),
        plot_ndcg_at_n(ranked, out / "ndcg_at_n.png", data_path=data_path, styles=styles) if ranked else None,
    ]
    if by_length:
        files.append(plot_by_length(directory / "by_length.csv", out / "ndcg_by_length.png", styles))
    for name, case in cases.items():
        files.append(plot_attention(case, out / f"attention_{name}.png"))
    return [f for f in files if f is not None]


def _runs_to_draw(directory: Path, out: Path) -> dict[str, list[Path]]:
    """{label: run directories}: the run itself (finished, or so far), or a comparison's finished
    seeds per variant (the runs its runs.csv tabulates, in its order; without one, every finished
    seed by number), {} if none has finished; anything else (missing, a run that has logged no
    epoch, a directory of other runs) is an ``ArtifactError``."""
    if not directory.is_dir():
        raise ArtifactError(f"{directory} is a file, not a run or compare directory" if directory.exists()
                            else f"run directory not found: {directory}")
    if (directory / METRICS_FILE).is_file():  # a finished run (metrics.json is written last)
        return {directory.name: [directory]}
    if is_unfinished_run(directory):  # hours into a run, its learning curves so far
        return {f"{directory.name} (so far)": [directory]}
    if (directory / CONFIG_FILE).is_file():
        raise ArtifactError(f"{directory}: the run has not finished (no {METRICS_FILE} yet) and has logged no epoch here")
    # trial-*/ runs (a tune), or runs that are not a comparison's seeds (a folder of projects):
    # nothing to compare, and different models must never be averaged as if they were seeds
    if not all(is_seed_run(run, directory) for run in runs_inside(directory)):
        raise collection_error(directory)
    runs: dict[str, list[Path]] = {}
    if (directory / "runs.csv").is_file():  # the table's runs, no others: figures must agree with it
        table = read_result_table(directory / "runs.csv", ["variant", "seed"], text=["variant", "seed"])
        for variant, seed in zip(table["variant"].to_list(), table["seed"].to_list()):
            run = directory / variant / f"seed-{seed}"
            if (run / METRICS_FILE).is_file():
                runs.setdefault(variant, []).append(run)
    else:
        for variant in _variant_dirs(directory, out):
            seeds = sorted((p for p in variant.iterdir() if (p / METRICS_FILE).is_file()), key=_seed_order)
            if seeds:
                runs[variant.name] = seeds
    return runs


def _seeds_so_far(directory: Path, out: Path) -> dict[str, list[Path]]:
    """{variant: seeds that have logged epochs but not finished} of a compare directory, by seed:
    hours into a comparison, how its runs are going (no table counts them yet)."""
    so_far = {}
    for variant in _variant_dirs(directory, out):
        seeds = sorted((p for p in variant.glob("seed-*") if p.is_dir() and is_unfinished_run(p)), key=_seed_order)
        if seeds:
            so_far[variant.name] = seeds
    return so_far


def tune_trials(directory: Path) -> dict[str, list[Path]]:
    """A tune's trials that have logged epochs, finished or not, by trial name, each labelled with
    the values that set it apart from the others (read from the trials' configs, as the tune
    prints them: "trial-5c58437d7d (model.dropout=0.2, train.lr=0.001)"); {} for anything else."""
    if not directory.is_dir():
        return {}
    trials = sorted(
        path for path in directory.glob("trial-*")
        if path.is_dir() and ((path / METRICS_FILE).is_file() or is_unfinished_run(path))
    )
    if not trials:
        return {}
    settings = {trial: _flat_settings(trial) for trial in trials}
    known = [flat for flat in settings.values() if flat]  # a trial copied without its config is named only
    keys = [key for key in dict.fromkeys(key for flat in known for key in flat) if len({repr(flat.get(key)) for flat in known}) > 1]
    labelled = {}
    for trial in trials:
        values = [f"{key}={settings[trial].get(key)}" for key in keys] if settings[trial] else []
        notes = values + (["so far"] if is_unfinished_run(trial) else [])
        labelled[f"{trial.name} ({', '.join(notes)})" if notes else trial.name] = [trial]
    return labelled


def _flat_settings(trial: Path) -> dict[str, object]:
    """A trial's config as dotted keys, without the machine's options (threads may differ by
    trial): its config.yaml, or while it trains the record its checkpoints were started with."""
    path = trial / CONFIG_FILE if (trial / CONFIG_FILE).is_file() else trial / CHECKPOINT_DIR / RUN_RECORD
    config = read_run_config(path) if path.is_file() else {}
    return {
        f"{section}.{key}": value for section in RESOLVED_SECTIONS if isinstance(config.get(section), dict)
        for key, value in config[section].items() if key not in MACHINE_OPTIONS.get(section, set())
    }


def _variant_dirs(directory: Path, out: Path) -> list[Path]:
    """The variant directories of a compare directory without a runs.csv, by name."""
    return sorted(p for p in directory.iterdir() if p.is_dir() and p != out and not p.name.startswith("."))


def _seed_order(run_dir: Path) -> tuple[int, str]:
    number = run_dir.name.removeprefix("seed-")
    return (int(number), "") if number.isdigit() else (1 << 30, run_dir.name)
