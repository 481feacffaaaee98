"""Running one configured fit per (overrides, seed), resumably."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, fields, is_dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import polars as pl
import yaml
from filelock import Timeout
from rich.console import Console
from rich.markup import escape

from awrsr.errors import ArtifactError, AwrsrError, ConfigError
from awrsr.files import read_text, starts_with
from awrsr.strict_yaml import FIT_SECTIONS, check_unique_keys
from awrsr.infer.artifact import CONFIG_FILE, METRICS_FILE, is_seed_run, runs_inside
from awrsr.run_config import config_differences, load_fit_config
from awrsr.train.config import MACHINE_FIELDS, TrainConfig
from awrsr.train.trainer import CHECKPOINT_DIR, LAST_CHECKPOINT, LOG_FILE, RUN_RECORD, logged_progress

NOT_STARTED = "not started"
TRAINING_NOW = "training now"
RESUMES = "interrupted (it resumes)"
STARTS_AGAIN = "interrupted, with no checkpoint here (it starts again)"


def option_args(options: dict[str, Any]) -> list[str]:
    """``{"model.refine": "simp"}`` -> ``["--model.refine", "simp"]``."""
    args: list[str] = []
    for key, value in options.items():
        args += [f"--{key}", json.dumps(value) if isinstance(value, (list, dict, bool)) or value is None else str(value)]
    return args


_DOTTED_KEY = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"
_ANOTHER_OPTION = re.compile(rf",\s*{_DOTTED_KEY}\s*=")  # "1,train.patience=2": two options in one


def parse_sets(sets: Sequence[str] | None) -> dict[str, str]:
    """``["train.max_epochs=5"]`` -> ``{"train.max_epochs": "5"}``.

    >>> parse_sets(["[model.refine=simp,model.refine_blocks=[0,1]]"])
    {'model.refine': 'simp', 'model.refine_blocks': '[0,1]'}
    """
    out = {}
    for item in [option for given in sets or [] for option in _list_items(given)]:
        key, sep, value = item.partition("=")
        if not sep or not re.fullmatch(_DOTTED_KEY, key.strip()):
            raise ConfigError(f"--set expects key=value with a dotted key (e.g. train.max_epochs=5), got {item!r}")
        if _ANOTHER_OPTION.search(value):
            raise ConfigError(f"--set {item!r} holds more than one option: give each its own --set, or a list "
                              f"--set [{item}]")
        out[key.strip()] = value.strip()
    return out


def _list_items(given: str) -> list[str]:
    """The options of ``--set [k1=v1,k2=[0,1]]``, which the command line leaves one string when a
    value holds brackets (a YAML list's items cannot): split at its top-level commas. Anything
    else is one option."""
    if not (given.startswith("[") and given.endswith("]")):
        return [given]
    items, depth, start = [], 0, 1
    for i, char in enumerate(given[1:-1], start=1):
        depth += (char in "[{") - (char in "]}")
        if depth < 0:
            break
        if char == "," and depth == 0:
            items.append(given[start:i])
            start = i + 1
    if depth:
        raise ConfigError(f"--set {given!r}: its brackets do not pair up")
    return [*items, given[start:-1]]


RESOLVED_SECTIONS = FIT_SECTIONS  # the sections of a fit config that hold a dataclass each
# A finished run is reused whatever machine trained it (threads, subnormals, accelerator, progress
# bar), and, where its data is checked by fingerprint (``DataFingerprints``), wherever its data file lay.
MACHINE_OPTIONS = {"train": set(MACHINE_FIELDS)}
REUSABLE_CHANGES = {**MACHINE_OPTIONS, "data": {"path"}}


def data_config_key(data: Any) -> str:
    """A data config (a ``DataConfig``) as text that is equal exactly when the configs are."""
    return json.dumps(asdict(data), sort_keys=True, default=str)


class DataFingerprints:
    """The sha256 fingerprint of the data a data config reads now, each dataset read once (None
    where it cannot be read here): a finished run is reused only if its data is still the data (a
    file edited since would otherwise pair old runs with new ones in one table)."""

    def __init__(self) -> None:
        self._cache: dict[str, str | None] = {}

    def __call__(self, data: Any) -> str | None:
        from awrsr.data import load_sequence_data

        key = data_config_key(data)
        if key not in self._cache:
            try:
                self._cache[key] = load_sequence_data(data).fingerprint.sha256
            except (AwrsrError, OSError):  # no data here (tabulating elsewhere): runs are judged by config alone
                self._cache[key] = None
        return self._cache[key]


def read_run_config(path: Path) -> dict[str, Any]:
    """A finished run's config.yaml; damaged, it is an ArtifactError that says how to go on."""
    text = read_text(path, ArtifactError)
    try:
        check_unique_keys(text, str(path))  # the file, line and problem in one line
    except ConfigError as err:
        raise ArtifactError(f"{err}; delete that run to train it again") from None
    stored = yaml.safe_load(text)
    if stored is not None and not isinstance(stored, dict):
        raise ArtifactError(f"{path}: not a run's config (a mapping of sections); delete that run to train it again")
    return stored or {}


# What a tune and a comparison write beside their runs, first the table that marks each, with
# the start of its header.
COLLECTION_TABLES = {
    "tune": ("trials.csv", "best.yaml"),
    "comparison": ("runs.csv", "table.csv", "table.md", "by_length.csv", "by_length.md"),
}
MARKER_HEADERS = {"tune": b"trial,", "comparison": b"variant,seed,"}


def check_collection_directory(output_dir: Path, kind: str) -> None:
    """A ConfigError if ``output_dir``, where a ``kind`` ("tune" or "comparison") writes its runs
    and tables, holds what it must not mix with or replace: a run (fit's files at its top, which
    would then pass for a collection), the other kind's tables or any runs not its own (plot
    and the reports would mix them up), or files named like its tables beside none of its runs
    and without its marking table (the user's: it would replace them)."""
    if not output_dir.is_dir():
        return
    own = f"give the {kind} a directory of its own"
    run_files = [name for name in (METRICS_FILE, CONFIG_FILE, CHECKPOINT_DIR) if (output_dir / name).exists()]
    if run_files:
        raise ConfigError(f"{output_dir} holds a run ({', '.join(run_files)}); {own}")
    other = "comparison" if kind == "tune" else "tune"
    marker = COLLECTION_TABLES[other][0]
    if (output_dir / marker).is_file():
        raise ConfigError(f"{output_dir} holds a {other} ({marker}); {own}")
    runs = runs_inside(output_dir)
    if kind == "tune":
        mine = [run for run in runs if run.parent == output_dir and run.name.startswith("trial-")]
    else:
        mine = [run for run in runs if is_seed_run(run, output_dir)]
    others = [run for run in runs if run not in mine]
    if others:
        raise ConfigError(f"{output_dir} holds runs that are not a {kind}'s (e.g. {others[0]}); {own}")
    tables = [name for name in COLLECTION_TABLES[kind] if (output_dir / name).exists()]
    if tables and not mine and not starts_with(output_dir / COLLECTION_TABLES[kind][0], MARKER_HEADERS[kind]):
        raise ConfigError(
            f"{output_dir} holds {', '.join(tables)} but none of a {kind}'s runs: files that awrsr did not "
            f"write, which the {kind} would replace; choose another output_dir, or move them"
        )


def resolved_fit_args(config: str, options: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """The fit arguments of ``config`` with ``options``, in ``run_dir``, as ``awrsr fit`` resolves them."""
    return load_fit_config(["--config", config, *option_args(options), "--output_dir", str(run_dir)])


def finished_run(
    config: str, options: dict[str, Any], run_dir: Path, fingerprints: Callable[[Any], str | None] | None = None,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The resolved fit arguments of ``config`` with ``options`` in ``run_dir``, and the metrics
    of the finished run there (None if it has not finished). A finished run of another
    configuration is an error (its directory cannot hold this one), other than in the machine's
    options; with ``fingerprints``, so is one trained on other data than the data read now, and
    where both fingerprints are known, data.path may differ (the same data moved)."""
    resolved = resolved_fit_args(config, options, run_dir)
    metrics_file = run_dir / METRICS_FILE
    try:
        metrics = json.loads(metrics_file.read_text())
    except (OSError, ValueError):  # absent, or unreadable: not finished (training rewrites it)
        return resolved, None
    problem = record_problem(metrics)
    if problem is not None:  # edited by hand, or not awrsr's: the reports would fail on it deep inside
        raise ArtifactError(f"{metrics_file}: not a finished run's record ({problem}); delete that run to train it again")
    trained_on = (metrics.get("dataset") or {}).get("sha256")
    now = fingerprints(resolved["data"]) if fingerprints is not None and trained_on is not None else None
    if now is not None and trained_on != now:
        raise ArtifactError(
            f"{run_dir} holds a finished run trained on other data (fingerprint {trained_on[:12]}; the data "
            f"read now is {now[:12]}): the data changed since. Delete that run to train it again on "
            "this data, or use another output_dir"
        )
    stored = read_run_config(run_dir / CONFIG_FILE) if (run_dir / CONFIG_FILE).is_file() else {}
    ignore = REUSABLE_CHANGES if now is not None else MACHINE_OPTIONS
    differing = config_differences(stored or {}, {k: resolved[k] for k in RESOLVED_SECTIONS}, ignore=ignore)
    if differing:
        raise ArtifactError(
            f"{run_dir} holds a finished run of another configuration (differs in {', '.join(differing[:6])}); "
            "use another output_dir"
        )
    return resolved, metrics


def record_problem(metrics: Any) -> str | None:
    """What a run's metrics.json lacks of the fields tune's and compare's reports read (scores,
    the selection, the protocol, the epoch time), or None if it has them all."""
    if not isinstance(metrics, dict):
        return f"a JSON {type(metrics).__name__}, not an object"
    for section in ("valid", "test", "selection", "protocol", "time"):
        if not isinstance(metrics.get(section), dict):
            return f"no {section!r} section"
    for section, field in (("selection", "monitor"), ("selection", "best_epoch"), ("selection", "epochs_trained"),
                           ("protocol", "filter_seen"), ("time", "mean_epoch_s")):
        if field not in metrics[section]:
            return f"no {section}.{field}"
    monitor = metrics["selection"]["monitor"]
    if not isinstance(monitor, str) or monitor.removeprefix("valid ") not in metrics["valid"]:
        return f"selection.monitor {monitor!r} is not among the valid scores"
    for section in ("valid", "test"):
        if not metrics[section]:
            return f"no {section} scores"
        for name, value in metrics[section].items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return f"{section}.{name} is not a number"
    dataset = metrics.get("dataset")  # none in records from before fingerprints; the reuse checks read its sha256
    if dataset is not None and not (isinstance(dataset, dict) and isinstance(dataset.get("sha256", ""), str)):
        return "its dataset is no mapping with a text sha256"
    return None


def check_earlier_runs(
    runs: Iterable[tuple[str, dict[str, Any], Path]], fingerprints: Callable[[Any], str | None],
) -> None:
    """Every finished run among ``runs`` (config, options, run directory) checked as
    ``finished_run`` does, and every interrupted one as resuming it would be (its configuration;
    its data when it continues): a stale run is an error before anything trains, not hours later.
    A tune recorded an interrupted trial it could not resume as skipped, and its best.yaml left
    that grid point out."""
    from awrsr.workflows import check_resumable

    for config, options, run_dir in runs:
        if (run_dir / METRICS_FILE).is_file():
            finished_run(config, options, run_dir, fingerprints)
        elif (run_dir / CHECKPOINT_DIR / LAST_CHECKPOINT).is_file():
            resolved = resolved_fit_args(config, options, run_dir)
            check_resumable(run_dir, {section: resolved[section] for section in RESOLVED_SECTIONS})


def run_or_reuse(
    config: str, options: dict[str, Any], run_dir: Path, console: Console, wait: bool = True,
    print_test: bool = True, fingerprints: Callable[[Any], str | None] | None = None,
) -> dict[str, Any] | None:
    """Metrics of the fit of ``config`` with ``options`` in ``run_dir``. A finished run (its
    metrics.json exists) is never trained again, but only if it was made with exactly this
    configuration (see ``finished_run``). An interrupted run (a checkpoint but no metrics)
    continues from its last checkpoint. While another process trains the run, this one waits for
    it and reuses its result, or with ``wait=False`` returns None at once. ``print_test=False``
    prints validation metrics only (tune). A run that fails before writing anything leaves none
    of the folders this call made for it. ``fingerprints`` checks a finished run's data (see
    ``finished_run``)."""
    from awrsr.run_directory import discard_unwritten_run, first_missing_folder, run_lock
    from awrsr.workflows import fit

    resolved, metrics = finished_run(config, options, run_dir, fingerprints)
    if metrics is not None:
        return metrics
    created = first_missing_folder(run_dir)
    lock = run_lock(run_dir)
    try:
        lock.acquire(blocking=False)
    except Timeout:
        if not wait:
            return None
        console.print(f"[dim]{escape(str(run_dir))}: another process is training it; waiting for its result[/dim]")
        lock.acquire()
    try:
        resolved, metrics = finished_run(config, options, run_dir, fingerprints)  # it may have finished meanwhile
        if metrics is not None:
            return metrics
        resume = (run_dir / CHECKPOINT_DIR / LAST_CHECKPOINT).is_file()
        if resume:
            console.print(f"[dim]{escape(str(run_dir))}: continuing the interrupted run from its last checkpoint[/dim]")
        # No readable metrics.json and no checkpoint: whatever is there is a run that never finished.
        # train.progress_bar as configured, as lines on a terminal too: a record of each of many runs that
        # stays on screen (above tune's bar of trials, where rich sends it) and in a log file, where hours
        # of training showed nothing before the run's table
        return fit(**{**resolved, "resume": resume, "overwrite": not resume}, console=console, print_test=print_test,
                   epoch_lines=True).metrics
    finally:
        lock.release()
        discard_unwritten_run(run_dir, created)


def run_status(run_dir: Path) -> str:
    """Where an unfinished run stands: being trained by some process, interrupted, or not begun."""
    from awrsr.run_directory import RUN_LOCK_FILE, run_lock

    if (run_dir / RUN_LOCK_FILE).is_file():
        try:
            with run_lock(run_dir).acquire(blocking=False):
                pass
        except Timeout:
            return TRAINING_NOW
    if (run_dir / CHECKPOINT_DIR / LAST_CHECKPOINT).is_file():
        return RESUMES
    if (run_dir / LOG_FILE).is_file():  # e.g. records copied back from another machine without checkpoints
        return STARTS_AGAIN
    return NOT_STARTED


def unfinished_run_state(run_dir: Path) -> str:
    """Where a run with no model yet stands, for the error of loading it: "it is training now (at
    epoch 13/200, ..., best valid ndcg@10 0.1362 at epoch 13, ...)", or "it was interrupted (at
    epoch 13/200, ...); awrsr fit --resume true continues it", read from its log with the budget
    and patience of its record (checkpoints/run.yaml); what can be told without them otherwise."""
    status = run_status(run_dir)
    progress = ""
    if status in (TRAINING_NOW, RESUMES):
        try:
            stored = read_run_config(run_dir / CHECKPOINT_DIR / RUN_RECORD).get("train")
            keys = ("max_epochs", "patience", "monitor")  # the budget it runs to; a default would mislead
            if isinstance(stored, dict) and all(key in stored for key in keys):
                progress = logged_progress(run_dir, TrainConfig(**{key: stored[key] for key in keys}))
        except (AwrsrError, TypeError, ValueError):  # no record, or a damaged one: the status alone
            pass
    if status == TRAINING_NOW:
        return f"it is training now (at {progress})" if progress else "it is training now"
    if status == RESUMES:
        return f"it was interrupted{f' (at {progress})' if progress else ''}; awrsr fit --resume true continues it"
    return "it is still training, or was interrupted (awrsr fit --resume true continues it)"


def left_out_runs(table: Path, columns: Sequence[str], current: set[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The rows (``columns``, as text) of an earlier results table (a comparison's runs.csv, a
    tune's trials.csv) that ``current`` lacks: results of fewer runs (another --seeds,
    --max_trials) must not replace them. Empty when there is no such table or it cannot be read."""
    if not table.is_file():
        return []
    try:
        earlier = pl.read_csv(table, columns=list(columns), infer_schema=False)
    except (pl.exceptions.PolarsError, OSError):  # damaged: nothing in it to keep
        return []
    return [row for row in earlier.iter_rows() if row not in current]


def progress_sentence(runs: Iterable[tuple[str, Path, str, TrainConfig]]) -> str:
    """Where each unfinished run that will go on stands, from its log (label, run directory, its
    ``run_status``, its train config): "So far: add seed 42 at epoch 39/200, 36.9 s per epoch
    lately, ..., best valid ndcg@10 0.1454 at epoch 38, 1 of patience 20 without a gain." Hours
    into a long run, a report says how far it has come, not only that it trains. A run that
    starts again has nothing that counts."""
    parts = [
        f"{label} at {progress}" for label, run_dir, status, train in runs
        if status not in (NOT_STARTED, STARTS_AGAIN) and (progress := logged_progress(run_dir, train))
    ]
    return f"So far: {'; '.join(parts)}." if parts else ""


def describe_runs(runs: Iterable[tuple[str, int, str]]) -> str:
    """``(variant, seed, status)`` triples as a few words per status, in the order given except
    that runs not started come last: "Training now: add seed 1. Not started: add seeds 2, 3; simp
    seed 1." A long comparison's unfinished runs stay readable instead of one line per run."""
    grouped: dict[str, dict[str, list[int]]] = {}
    for variant, seed, status in runs:
        grouped.setdefault(status, {}).setdefault(variant, []).append(seed)
    return status_sentences({
        status: [f"{variant} seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}" for variant, seeds in variants.items()]
        for status, variants in grouped.items()
    })


def run_device(metrics: dict) -> str | None:
    """The device a run's metrics.json says it trained on; None for runs made before the record."""
    return metrics.get("machine", {}).get("device") or None


def run_subnormals(metrics: dict) -> str | None:
    """How a run's CPU threads treated subnormal floats (flushed, kept, flushed on some threads
    only), as its metrics.json says; None for runs made before the record (session 57)."""
    return metrics.get("machine", {}).get("subnormals") or None


def pairs_across_machines(
    records: Sequence[dict], references: dict[str, str], base: str, paired_seeds: dict[str, Sequence[int]] | None = None,
) -> str:
    """A sentence naming, per variant, the seeds whose run and its reference's run (``references``,
    else ``base``) trained on different devices, or "" when none did. A CPU run paired with a GPU
    run of the same seed is not the same run on both (floating point differs), so such a paired
    test compares the machines too. Pairs with a run that recorded no device are counted apart.
    ``paired_seeds``: the seeds a table compares each variant on, where it pairs fewer than every
    seed both ran (by_length.md leaves out runs without stored ranks, and variants trained on
    other data than their reference)."""
    device = {(r["variant"], r["seed"]): run_device(r["metrics"]) for r in records}
    notes = []
    for variant in dict.fromkeys(r["variant"] for r in records):
        reference = references.get(variant, base)
        seeds = sorted(s for v, s in device if v == variant and (reference, s) in device
                       and (paired_seeds is None or s in paired_seeds.get(variant, ())))
        known = [s for s in seeds if device[variant, s] and device[reference, s]]
        crossed = [s for s in known if device[variant, s] != device[reference, s]]
        if variant != reference and crossed:
            unknown = f"; {len(seeds) - len(known)} more without a recorded device" if len(known) < len(seeds) else ""
            notes.append(f"{variant} against {reference}, {len(crossed)} of {len(known)} pairs "
                         f"(seed{'s' if len(crossed) > 1 else ''} {', '.join(map(str, crossed))}{unknown})")
    return ("Pairs trained on different machines (their improvement and p-value compare the machines as well "
            "as the models): " + "; ".join(notes) + ".") if notes else ""


def status_sentences(grouped: dict[str, list[str]]) -> str:
    """One sentence per status, its entries joined ("Training now: a; b. Not started: c."), in the
    order given except that what has not started comes last: what is under way matters more."""
    order = [status for status in grouped if status != NOT_STARTED] + [NOT_STARTED] * (NOT_STARTED in grouped)
    return " ".join(f"{status[:1].upper()}{status[1:]}: {'; '.join(grouped[status])}." for status in order)


def known_keys() -> set[str]:
    """Every dotted option of a run config, e.g. ``train.lr`` and ``data.synthetic.num_users``."""
    defaults = load_fit_config([])

    def walk(prefix: str, obj: Any) -> set[str]:
        keys = set()
        for f in fields(obj):
            value = getattr(obj, f.name)
            keys.add(prefix + f.name)
            if is_dataclass(value):
                keys |= walk(f"{prefix}{f.name}.", value)
        return keys

    return set().union(*(walk(f"{section}.", defaults[section]) for section in RESOLVED_SECTIONS))
