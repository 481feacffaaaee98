"""``awrsr tune``: grid search of a base config over a YAML search space, selected on validation.

The search space maps dotted config keys to lists of values, for example the AWRSR paper's grid::

    model.hidden_size: [64, 128]
    model.max_len: [20, 30, 50, 100]
    train.lr: [0.001, 0.0001]
    train.weight_decay: [0.1, 0.01, 0.001]
    model.dropout: [0.3, 0.5, 0.7]
    model.num_heads: [1, 2, 4]
    model.num_blocks: [1, 2, 3, 4]

Each trial runs in ``output_dir/trial-<id>`` where the id is a hash of its values, so a finished
trial is never re-run and an interrupted search resumes. Only validation metrics decide.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import random
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress

from awrsr.config_types import check_flag, checked_console
from awrsr.errors import ConfigError, FieldValueError, TrainingDiverged, UnknownNameError
from awrsr.experiments.runs import (
    DataFingerprints, check_collection_directory, check_earlier_runs, finished_run, known_keys, left_out_runs, option_args,
    progress_sentence, run_or_reuse, run_status, status_sentences,
)
from awrsr.files import csv_text, output_directory, read_text, user_path, write_text_atomic
from awrsr.infer.artifact import CONFIG_FILE, METRICS_FILE
from awrsr.run_config import check_fit_args, load_fit_config, part_specific_options, unread_options
from awrsr.strict_yaml import SEARCH_SPACE, check_unique_keys, refuse_other_kind


def load_search_space(path: str | Path) -> dict[str, list[Any]]:
    path = user_path(path)
    if not path.is_file():
        raise ConfigError(f"search space file not found: {path}")
    text = read_text(path)
    check_unique_keys(text, str(path))  # names the file and line of a YAML error, or of a repeated key
    space = yaml.safe_load(text)
    if not isinstance(space, dict) or not space:
        raise ConfigError(f"{path}: expected a mapping of config keys to lists of values")
    refuse_other_kind(space, path, SEARCH_SPACE)  # a base config or a variants file in its place
    for key, values in space.items():
        if "." not in str(key) or not isinstance(values, list) or not values:
            raise ConfigError(f"{path}: {key!r} must be a dotted config key (e.g. train.lr) with a non-empty list")
        texts = [json.dumps(value, sort_keys=True) for value in values]  # as trial_id sees them
        for value, text in zip(values, texts):
            if texts.count(text) > 1:  # one trial (one id) twice: the count and max_trials would be off
                raise ConfigError(f"{path}: {key}: {value!r} given twice")
    check_known_keys(space, f"{path}: ")
    return space


def check_known_keys(keys: Any, where: str) -> None:
    """A ConfigError, with the closest known key, for the first of ``keys`` no run config has."""
    known = known_keys()
    for key in keys:
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            raise ConfigError(f"{where}{key}: unknown config key" + (f"; did you mean {close[0]}?" if close else ""))


def check_fixed_options(config: str, extra: dict[str, Any]) -> None:
    """What would fail every trial alike fails once, now: a base config that is not YAML, or a
    misspelt key among the options given to every trial."""
    check_unique_keys(read_text(user_path(config)), config)  # not YAML, or a key given twice
    check_known_keys(extra, "--set ")
    # a misspelt key or a bad value in the base config itself, which every trial would skip on
    check_fit_args(["--config", config, *option_args(extra)], f"base config {config}" + (" with --set" if extra else ""))


RANKING_KEYS = ("train.monitor", "evaluation.filter_seen")  # what decides which validation score ranks a trial


def check_grid_values(config: str, space: dict[str, list[Any]], extra: dict[str, Any]) -> None:
    """A ConfigError now for a value of the space that is wrong on its own (a misspelt name, a
    value of the wrong type): its trials would all be skipped, and the search would quietly run
    without it. Values that fail only with the base's other settings (3 heads of a hidden size of
    64) may fit other values of the grid; their trials are skipped one by one. A key both in the
    space and in ``extra`` is refused: one of the two would be ignored."""
    for key in space:
        if key in extra:
            raise ConfigError(f"--set {key}: the search space sets it too; give it in one place only")
        # Trials are ranked by their validation scores: one metric, one protocol, and one dataset
        # (another file, filter or synthetic set has other users and targets to score).
        if key in RANKING_KEYS or key.startswith("data."):
            alike = "on the same data" if key.startswith("data.") else "alike"
            raise ConfigError(
                f"search space {key}: trials are ranked against each other by validation {RANKING_KEYS[0]}, "
                f"so every trial must be scored {alike}; set {key} in the base config or with --set"
            )
    from awrsr.models import build_model

    for key, values in space.items():
        for value in values:
            where = f"search space {key}: {value!r}"
            args = ["--config", config, *option_args({**extra, key: value})]
            check_fit_args(args, where)  # the value's type
            # the base passed its checks, so an unknown name or a field's own range ("model.dropout must be
            # in [0, 1)") is this value's, wrong whatever else is set
            try:
                build_model(load_fit_config(args)["model"], num_items=8)
            except (UnknownNameError, FieldValueError) as err:
                raise ConfigError(f"{where}: {err}") from None
            except ConfigError:
                pass  # a combination (3 heads of a hidden size of 64): judged per trial


def check_grid_is_read(config: str, space: dict[str, list[Any]], trials: list[dict[str, Any]], extra: dict[str, Any]) -> None:
    """A ConfigError for a key of the space that no trial's parts read (``model.refine_init_std``
    with ``refine: none``): its values would train the same model again and again."""
    keys = [key for key in space if key in part_specific_options()]
    if not keys:  # the usual grid (lr, dropout, sizes): every part reads it
        return
    unread = []
    for params in trials:
        try:
            resolved = load_fit_config(["--config", config, *option_args({**extra, **params})])
        except ConfigError:  # a combination of values judged per trial
            continue
        unread.append(unread_options(resolved["model"], resolved["train"]))
    for key in keys:
        if unread and all(key in options for options in unread):
            raise ConfigError(
                f"search space {key}: no trial reads it (only {unread[0][key]} does), so its {len(space[key])} values "
                "would train the same models again; remove it from the space, or search it with what reads it"
            )


def grid(space: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination, in a stable order.

    >>> grid({"a.x": [1, 2], "b.y": ["p"]})
    [{'a.x': 1, 'b.y': 'p'}, {'a.x': 2, 'b.y': 'p'}]
    """
    keys = list(space)
    return [dict(zip(keys, values)) for values in itertools.product(*(space[k] for k in keys))]


def trial_id(params: dict[str, Any]) -> str:
    return hashlib.sha1(json.dumps(params, sort_keys=True).encode()).hexdigest()[:10]


def trial_name(params: dict[str, Any]) -> str:
    """The trial's folder in the search's output directory."""
    return f"trial-{trial_id(params)}"


def run_tune(
    config: str, space: dict[str, list[Any]], output_dir: str | Path, max_trials: int | None = None,
    sample_seed: int = 0, extra: dict[str, Any] | None = None, console: Console | None = None,
    report_only: bool = False,
) -> dict[str, Any]:
    """Run the grid (or ``max_trials`` of it, sampled with ``sample_seed``) and return the best
    trial's parameters by validation ``train.monitor``. Writes trials.csv and best.yaml.

    ``report_only`` trains nothing: it prints the trials finished so far, best first, and names
    the others (another process may be running the search). trials.csv and best.yaml are then
    written only when no trial is left to train (each finished or skipped), so that a partial
    search never leaves a best.yaml."""
    check_flag(report_only, "report_only")
    console = checked_console(console, "tune")
    extra = extra or {}
    output_dir = output_directory(output_dir, needs="a tune needs a directory")
    check_collection_directory(output_dir, "tune")
    config = str(user_path(config))
    if not Path(config).is_file():  # else every trial would fail on it, one by one
        raise ConfigError(f"base config not found: {config}")
    if max_trials is not None and max_trials < 1:
        raise ConfigError(f"max_trials must be >= 1, got {max_trials}")
    check_fixed_options(config, extra)
    check_grid_values(config, space, extra)
    trials = grid(space)
    if max_trials is not None and max_trials < len(trials):
        trials = random.Random(sample_seed).sample(trials, max_trials)
    check_grid_is_read(config, space, trials, extra)
    fingerprints = DataFingerprints()  # a finished trial is reused only on the data read now
    if report_only:
        return report_trials(config, space, trials, extra, output_dir, fingerprints, console)
    rows, done = [], set()
    check_earlier_runs(
        ((config, {**extra, **params}, output_dir / trial_name(params)) for params in trials), fingerprints,
    )
    left = [
        params for params in trials if not (output_dir / trial_name(params) / METRICS_FILE).is_file()
        and recorded_skip(output_dir / trial_name(params), {**extra, **params}) is None
    ]
    if (output_dir / "best.yaml").is_file() and left:
        # a widened search: until its last trial finishes, best.yaml is the earlier search's choice
        console.print(
            f"note: {output_dir}/best.yaml and trials.csv are an earlier search's results; this search's "
            "replace them when its last trial finishes", style="yellow", markup=False, highlight=False, soft_wrap=True,
        )
    with Progress(console=console, transient=False) as progress:
        task = progress.add_task(f"{len(trials)} trials", total=len(trials))
        # Trials another process is training are left for last, then awaited (see run_or_reuse):
        # several processes may share one search.
        for wait in (False, True):
            for number, params in enumerate(trials, 1):
                run_dir = output_dir / trial_name(params)
                if run_dir.name in done:
                    continue
                # which trial trains now, also in a log file (where the progress bar shows only at the end)
                console.print(f"trial {number} of {len(trials)}, {run_dir.name}: {values_text(params)}", style="bold", markup=False,
                              highlight=False, soft_wrap=True)  # whole, however narrow the console
                options = {**extra, **params}
                reason = recorded_skip(run_dir, options)  # skipped before: the same values fail the same way
                if reason is None:
                    try:
                        # validation only on screen: a tune must not invite a look at the test scores
                        metrics = run_or_reuse(config, options, run_dir, console, wait, print_test=False, fingerprints=fingerprints)
                    except (ConfigError, TrainingDiverged) as err:  # an impossible combination (e.g. 64 not divisible by 3 heads), or a learning rate too high
                        reason = str(err)
                        record_skip(run_dir, options, reason)
                if reason is not None:
                    console.print(f"[yellow]skipped {escape(str(params))}: {escape(reason)}[/yellow]")
                    done.add(run_dir.name)
                    progress.advance(task)
                    continue
                if metrics is None:  # another process holds it: awaited in the second pass
                    console.print("[dim]another process is training it; coming back to it last[/dim]")
                    continue
                rows.append(trial_row(run_dir, params, metrics))
                done.add(run_dir.name)
                progress.advance(task)
    if not rows:
        raise ConfigError("no trial of the search space could run")
    return write_results(rows, space, trials, output_dir, console)


SKIP_RECORD = "skipped.json"  # why a tune skipped a trial: a later tune does not try it again, a report does not wait for it


def record_skip(run_dir: Path, options: dict[str, Any], reason: str) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(run_dir / SKIP_RECORD, json.dumps({"options": options, "reason": reason}, sort_keys=True, default=str))


def recorded_skip(run_dir: Path, options: dict[str, Any]) -> str | None:
    """Why a tune skipped this trial with exactly these options, or None (never skipped, or with
    other options: then it is tried again)."""
    try:
        record = json.loads((run_dir / SKIP_RECORD).read_text())
    except (OSError, ValueError):
        return None
    same = isinstance(record, dict) and record.get("options") == json.loads(json.dumps(options, sort_keys=True, default=str))
    return str(record.get("reason")) if same else None


def values_text(params: dict[str, Any]) -> str:
    """A trial's values as ``key=value, ...``."""
    return ", ".join(f"{key}={value}" for key, value in params.items())


def trial_row(run_dir: Path, params: dict[str, Any], metrics: dict[str, Any]) -> dict[str, Any]:
    """A finished trial's row of trials.csv: its values and its validation score."""
    monitor = metrics["selection"]["monitor"].removeprefix("valid ")
    return {"trial": run_dir.name, **params, "monitor": monitor, "valid": metrics["valid"][monitor],
            "best_epoch": metrics["selection"]["best_epoch"], "filter_seen": metrics["protocol"]["filter_seen"]}


def best_first(rows: list[dict[str, Any]], trials: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows by validation score, ties in the search's order: the same best whichever process, or
    report, finished the search, and in whatever order the trials finished."""
    position = {trial_name(params): number for number, params in enumerate(trials)}
    return sorted(rows, key=lambda row: (-row["valid"], position[row["trial"]]))


def write_results(
    rows: list[dict[str, Any]], space: dict[str, list[Any]], trials: list[dict[str, Any]], output_dir: Path, console: Console,
) -> dict[str, Any]:
    """trials.csv (best first) and best.yaml (the best trial's config) of a search whose trials
    have all finished or been skipped; returns the best row."""
    rows = best_first(rows, trials)
    best = rows[0]
    console.print(f"best trial {best['trial']}: valid {best['monitor']} = {best['valid']:.4f} with "
                  + ", ".join(f"{k}={best[k]}" for k in space), markup=False)
    ranked = {row["trial"] for row in rows}
    skipped = [name for name in map(trial_name, trials) if name not in ranked]
    if skipped:  # said at the end too: each skip's own line lies far up a long search's log
        console.print(
            f"{len(rows)} of {len(trials)} trials ran; {len(skipped)} skipped, not in trials.csv (values that cannot go "
            f"together, or a training that diverged, as said above): "
            f"{', '.join(skipped[:3])}{', ...' if len(skipped) > 3 else ''}",
            style="yellow", markup=False, highlight=False, soft_wrap=True,
        )
    left_out = left_out_runs(output_dir / "trials.csv", ("trial",), {(row["trial"],) for row in rows})
    if left_out:  # a sample of the search (--max_trials) must not replace the whole search's choice
        console.print(
            f"printed, not written: {output_dir}/trials.csv holds trials this search leaves out "
            f"({', '.join(row[0] for row in left_out[:3])}{', ...' if len(left_out) > 3 else ''}), and best.yaml "
            "its choice among them; run the search they were made of to write them again, or use another output_dir",
            style="yellow", markup=False, highlight=False, soft_wrap=True,
        )
        return best
    output_dir.mkdir(parents=True, exist_ok=True)
    # Atomic writes: processes sharing the search may finish (and write these) at the same time.
    write_text_atomic(output_dir / "trials.csv", csv_text([list(rows[0]), *[list(r.values()) for r in rows]]))
    write_text_atomic(output_dir / "best.yaml", (output_dir / best["trial"] / CONFIG_FILE).read_text())
    return best


SKIPPED = "skipped: "  # an unfinished trial's status when a tune skips it (then the reason): none to wait for


class UnfinishedTrial(NamedTuple):
    name: str
    params: dict[str, Any]
    status: str  # run_status's words, or SKIPPED and why


def report_trials(
    config: str, space: dict[str, list[Any]], trials: list[dict[str, Any]], extra: dict[str, Any], output_dir: Path,
    fingerprints: DataFingerprints, console: Console,
) -> dict[str, Any]:
    """``run_tune(report_only=True)``: the finished trials as a table, best first, and where the
    others stand (with how far each that will go on has come, from its log); the search's results
    are written only when nothing is left to train."""
    rows, unfinished, train_configs = [], [], {}
    for params in trials:
        run_dir = output_dir / trial_name(params)
        options = {**extra, **params}
        reason = recorded_skip(run_dir, options)
        if reason is not None:
            unfinished.append(UnfinishedTrial(run_dir.name, params, SKIPPED + reason))
            continue
        try:  # a stale trial (other data or configuration) is an ArtifactError, as in a tune
            resolved, metrics = finished_run(config, options, run_dir, fingerprints)
            train_configs[run_dir.name] = resolved["train"]
        except ConfigError as err:  # values that cannot go together, found when a tune reaches the trial
            metrics, reason = None, str(err)
        if metrics is not None:
            rows.append(trial_row(run_dir, params, metrics))
        else:
            unfinished.append(UnfinishedTrial(run_dir.name, params, SKIPPED + reason if reason else run_status(run_dir)))
    waiting = [trial for trial in unfinished if not trial.status.startswith(SKIPPED)]
    if not rows and not waiting:
        raise ConfigError(f"no trial of the search space could run. {describe_trials(unfinished)}")
    so_far = progress_sentence(
        (trial.name, output_dir / trial.name, trial.status, train_configs[trial.name]) for trial in waiting
    )
    if not rows:
        raise ConfigError(f"{output_dir}: no finished trial of this search yet. {describe_trials(unfinished)} {so_far}".rstrip())
    rows = best_first(rows, trials)
    console.print(trials_table(rows, space), markup=False, highlight=False, soft_wrap=True)
    if not waiting:
        if unfinished:  # skipped, each with why (a tune interrupted before a trial left no record of it)
            console.print(describe_trials(unfinished), markup=False, highlight=False, soft_wrap=True)
        return write_results(rows, space, trials, output_dir, console)
    console.print(
        f"Partial: {len(rows)} of {len(trials)} trials finished; trials.csv and best.yaml are written when no "
        f"trial is left to train. {describe_trials(unfinished)} {so_far}".rstrip(), markup=False, highlight=False, soft_wrap=True,
    )
    return rows[0]


def trials_table(rows: list[dict[str, Any]], space: dict[str, list[Any]]) -> str:
    """Finished trials as a Markdown table: values, validation score, best epoch."""
    header = ["trial", *space, f"valid {rows[0]['monitor']}", "best epoch"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [row["trial"], *(str(row[key]) for key in space), f"{row['valid']:.4f}", str(row["best_epoch"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def describe_trials(unfinished: list[UnfinishedTrial], most: int = 5) -> str:
    """Unfinished trials by status, each named with its values ("Training now: trial-ab12
    (train.lr=0.001)."); a status of more than ``most`` trials is counted instead."""
    grouped: dict[str, list[str]] = {}
    for trial in unfinished:
        grouped.setdefault(trial.status, []).append(f"{trial.name} ({values_text(trial.params)})")
    return status_sentences({status: names if len(names) <= most else [f"{len(names)} trials"] for status, names in grouped.items()})
